// Black-box HTTP tests of the profile API against a real PostgreSQL and Redis.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { conforms, checkErrorContract } from '@suite/kit/testing'
import { redisUrl } from '@suite/kit/testing/env'
import * as schemas from '../src/schemas.js'
import { profileDatabase, startProfile, send, body, TRICKY_NAME } from './fixtures.js'

let service

const call = (schema, ...args) => send(service.url, ...args).then((res) => conforms(schema, res))
const strip = ({ id, created_at: c, updated_at: u, ...fields }) => fields

before(async () => {
  service = await startProfile({ DATABASE_URL: await profileDatabase(50), REDIS_URL: `${redisUrl}/14` })
})
after(() => service?.stop())

test('create, read, replace, patch, delete: shapes, Location, ETag', async () => {
  const created = await call(schemas.createRestaurant, 'POST', '/restaurants', body())
  assert.equal(created.status, 201)
  const { id } = created.body
  assert.ok(id > 50, 'a fresh id past the loaded ones')
  assert.equal(created.headers.get('location'), `/restaurants/${id}`)
  assert.equal(created.headers.get('etag'), '"1"')
  assert.deepEqual(strip(created.body), body())
  assert.ok(!('version' in created.body))

  const read = await call(schemas.getRestaurant, 'GET', `/restaurants/${id}`)
  assert.equal(read.status, 200)
  assert.deepEqual(read.body, created.body)
  assert.equal(read.headers.get('etag'), '"1"')
  const hit = await call(schemas.getRestaurant, 'GET', `/restaurants/${id}`) // from the cache, same ETag
  assert.equal(hit.headers.get('etag'), '"1"')
  assert.deepEqual(hit.body, created.body)

  const compat = await call(schemas.getProfile, 'GET', `/restaurants/${id}/profile`)
  const b = body()
  assert.deepEqual(compat.body, [{
    id,
    name: b.name,
    address: b.address,
    number: b.phone,
    picture: b.picture,
    stars: b.stars,
    quality: b.quality,
    delivery: b.delivery,
    accuracy: b.accuracy
  }])

  const replaced = await call(schemas.replaceRestaurant, 'PUT', `/restaurants/${id}`,
    body({ name: 'Replaced', stars: 0, price_range: 4 }))
  assert.equal(replaced.status, 200)
  assert.equal(replaced.headers.get('etag'), '"2"')
  assert.deepEqual(strip(replaced.body), body({ name: 'Replaced', stars: 0, price_range: 4 }))
  assert.equal(replaced.body.created_at, created.body.created_at)

  const patched = await call(schemas.patchRestaurant, 'PATCH', `/restaurants/${id}`, { quality: 1 })
  assert.equal(patched.headers.get('etag'), '"3"')
  assert.deepEqual(strip(patched.body), body({ name: 'Replaced', stars: 0, price_range: 4, quality: 1 }))
  assert.deepEqual((await call(schemas.getRestaurant, 'GET', `/restaurants/${id}`)).body, patched.body)

  const deleted = await send(service.url, 'DELETE', `/restaurants/${id}`)
  assert.equal(deleted.status, 204)
  assert.equal((await call(schemas.getRestaurant, 'GET', `/restaurants/${id}`)).status, 404)
  assert.deepEqual((await call(schemas.getProfile, 'GET', `/restaurants/${id}/profile`)).body, [])
  assert.equal((await call(schemas.deleteRestaurant, 'DELETE', `/restaurants/${id}`)).status, 404)
})

test('loaded restaurants are served', async () => {
  const res = await call(schemas.getRestaurant, 'GET', '/restaurants/1')
  assert.equal(res.status, 200)
  assert.equal(res.body.id, 1)
  assert.equal((await call(schemas.getRestaurant, 'GET', '/restaurants/7')).status, 404,
    'the planted bad row was rejected')
})

test('unknown ids: 404 on GET/PUT/PATCH/DELETE, [] on the compat route', async () => {
  const id = 2147483647
  assert.equal((await call(schemas.getRestaurant, 'GET', `/restaurants/${id}`)).status, 404)
  assert.equal((await call(schemas.replaceRestaurant, 'PUT', `/restaurants/${id}`, body())).status, 404)
  assert.equal((await call(schemas.patchRestaurant, 'PATCH', `/restaurants/${id}`, { name: 'x' })).status, 404)
  assert.equal((await call(schemas.deleteRestaurant, 'DELETE', `/restaurants/${id}`)).status, 404)
  assert.equal((await call(schemas.deleteRestaurant, 'DELETE', `/restaurants/${id}`, undefined,
    { 'if-match': '"1"' })).status, 404)
  const compat = await call(schemas.getProfile, 'GET', `/restaurants/${id}/profile`)
  assert.equal(compat.status, 200)
  assert.deepEqual(compat.body, [])
})

test('bad input is a 400 naming the field, never a 5xx', async () => {
  const bad = {
    name: [5, '', null],
    address: [1, null],
    phone: [true],
    picture: [
      'not a url', 3, 'javascript:alert(1)', 'data:text/html,<b>x</b>', 'file:///etc/passwd', 'ftp://x.example/a.jpg',
      '//x.example/a.jpg'
    ],
    cuisine: [{}],
    price_range: [0, 5, 2.5, '$$'],
    stars: [-0.1, 5.1, 'four'],
    quality: [-1, 101, 'x'],
    delivery: [101, 1.5],
    accuracy: [-5, null]
  }
  for (const [field, values] of Object.entries(bad)) {
    for (const v of values) {
      for (const [method, path, payload] of [
        ['POST', '/restaurants', body({ [field]: v })],
        ['PUT', '/restaurants/1', body({ [field]: v })],
        ['PATCH', '/restaurants/1', { [field]: v }]
      ]) {
        const res = await call(schemas.createRestaurant, method, path, payload)
        assert.equal(res.status, 400, `${method} ${field}=${JSON.stringify(v)}`)
        assert.match(res.body.message, new RegExp(field), `${method} ${field}: ${res.body.message}`)
      }
    }
  }
  const missing = body()
  delete missing.cuisine
  for (const method of ['POST', 'PUT']) {
    const res = await send(service.url, method, method === 'POST' ? '/restaurants' : '/restaurants/1', missing)
    assert.equal(res.status, 400)
    assert.match(res.body.message, /cuisine/)
  }
  const unknown = await send(service.url, 'PATCH', '/restaurants/1', { name: 'x', owner: 'me' })
  assert.equal(unknown.status, 400)
  assert.match(unknown.body.message, /^body\/owner is not allowed$/)
  const empty = await send(service.url, 'PATCH', '/restaurants/1', {})
  assert.equal(empty.status, 400)
  assert.match(empty.body.message, /body/)
  for (const id of ['0', '-1', 'abc', '1.5', '2147483648', '99999999999999999999']) {
    for (const [method, path] of [
      ['GET', `/restaurants/${id}`],
      ['GET', `/restaurants/${id}/profile`],
      ['DELETE', `/restaurants/${id}`],
      ['PATCH', `/restaurants/${id}`]
    ]) {
      const res = await send(service.url, method, path, method === 'PATCH' ? { name: 'x' } : undefined)
      assert.equal(res.status, 400, `${method} ${path}`)
      assert.match(res.body.message, /params\/id/)
    }
  }
  const notJson = await fetch(`${service.url}/restaurants`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":'
  })
  assert.equal(notJson.status, 400)
})

test('NUL and unpaired surrogates in any text field are a 400 naming it, never a 500', async () => {
  const { body: { id } } = await send(service.url, 'POST', '/restaurants', body())
  for (const field of ['name', 'address', 'phone', 'cuisine']) {
    for (const bad of ['nul\u0000byte', 'high\ud800', 'low\udc00 alone', '\udfff\ud800']) {
      for (const [method, path, payload] of [
        ['POST', '/restaurants', body({ [field]: bad })],
        ['PUT', `/restaurants/${id}`, body({ [field]: bad })],
        ['PATCH', `/restaurants/${id}`, { [field]: bad }]
      ]) {
        const res = await send(service.url, method, path, payload)
        assert.equal(res.status, 400, `${method} ${field}=${JSON.stringify(bad)}: ${JSON.stringify(res.body)}`)
        assert.match(res.body.message, new RegExp(`^body/${field} must not contain NUL`))
      }
    }
  }
  // A pair is one character (🍜), not an unpaired surrogate.
  assert.equal((await send(service.url, 'PATCH', `/restaurants/${id}`, { name: '\ud83c\udf5c' })).status, 200)
})

test('only plain decimal digits name a restaurant: 0x7d0, 1e1, +10, 010, " 10" are a 400 and ' +
  'touch nothing', async () => {
  const before = await send(service.url, 'GET', '/restaurants/10')
  assert.equal(before.status, 200)
  for (const bad of ['0xa', '1e1', '%2B10', '010', '%2010', '10%20', '10.0']) {
    for (const [method, path] of [
      ['DELETE', `/restaurants/${bad}`],
      ['PATCH', `/restaurants/${bad}`],
      ['GET', `/restaurants/${bad}`],
      ['GET', `/restaurants/${bad}/profile`]
    ]) {
      const res = await send(service.url, method, path, method === 'PATCH' ? { name: 'renamed' } : undefined)
      assert.equal(res.status, 400, `${method} ${path}`)
      assert.match(res.body.message, /^params\/id must be integer/, `${method} ${path}`)
    }
  }
  assert.deepEqual((await send(service.url, 'GET', '/restaurants/10')).body, before.body, 'restaurant 10 is untouched')
})

test('If-Match (RFC 9110): 412 unless the current ETag is listed, compared strongly; * and no header ' +
  'go through', async () => {
  const { body: { id } } = await send(service.url, 'POST', '/restaurants', body())
  // W/"1" names the current version, but If-Match compares strongly: a weak tag never matches.
  for (const stale of ['"2"', '"abc"', 'W/"1"', '"2", "3"', 'W/"1", "0"']) {
    const res = await call(schemas.patchRestaurant, 'PATCH', `/restaurants/${id}`, { name: 'x' }, { 'if-match': stale })
    assert.equal(res.status, 412, stale)
    assert.match(res.body.message, /If-Match/)
  }
  // Not a list of entity-tags: it names no ETag, so it matches none.
  for (const malformed of ['nonsense', '1', '"1', '"1",', 'W/1']) {
    assert.equal((await call(schemas.patchRestaurant, 'PATCH', `/restaurants/${id}`, { name: 'x' },
      { 'if-match': malformed })).status, 412, malformed)
  }
  assert.equal((await call(schemas.replaceRestaurant, 'PUT', `/restaurants/${id}`, body(),
    { 'if-match': '"5"' })).status, 412)
  assert.equal((await call(schemas.deleteRestaurant, 'DELETE', `/restaurants/${id}`, undefined,
    { 'if-match': '"5"' })).status, 412)
  const ok = await call(schemas.patchRestaurant, 'PATCH', `/restaurants/${id}`, { name: 'v2' }, { 'if-match': '"1"' })
  assert.equal(ok.status, 200)
  assert.equal(ok.headers.get('etag'), '"2"')
  // A list matches when any of its tags does.
  const listed = await call(schemas.replaceRestaurant, 'PUT', `/restaurants/${id}`, body({ name: 'v3' }),
    { 'if-match': 'W/"2", "7", "2"' })
  assert.equal(listed.headers.get('etag'), '"3"')
  assert.equal((await call(schemas.patchRestaurant, 'PATCH', `/restaurants/${id}`, { name: 'v4' },
    { 'if-match': '*' })).status, 200)
  assert.equal((await call(schemas.patchRestaurant, 'PATCH', `/restaurants/${id}`, { name: 'v5' }))
    .headers.get('etag'), '"5"')
  // If-None-Match on a write: `*` or the current ETag (weakly) refuses it; another version lets it through.
  for (const current of ['*', '"5"', 'W/"5"', '"1", W/"5"']) {
    const res = await call(schemas.patchRestaurant, 'PATCH', `/restaurants/${id}`, { name: 'x' },
      { 'if-none-match': current })
    assert.equal(res.status, 412, `If-None-Match: ${current}`)
  }
  assert.equal((await call(schemas.patchRestaurant, 'PATCH', `/restaurants/${id}`, { name: 'v6' },
    { 'if-none-match': '"4"' })).headers.get('etag'), '"6"')
  const get = await send(service.url, 'GET', `/restaurants/${id}`)
  assert.equal(get.headers.get('etag'), '"6"')
  assert.equal(get.body.name, 'v6')
  // An unknown id is a 404 whatever the preconditions (RFC 9110 §13.2.1: they apply to a 2xx only).
  assert.equal((await call(schemas.patchRestaurant, 'PATCH', '/restaurants/2147483000', { name: 'x' },
    { 'if-match': '*' })).status, 404)
  assert.equal((await call(schemas.deleteRestaurant, 'DELETE', '/restaurants/2147483000', undefined,
    { 'if-none-match': '*' })).status, 404)
  assert.equal((await send(service.url, 'DELETE', `/restaurants/${id}`, undefined,
    { 'if-match': `"9", ${get.headers.get('etag')}` })).status, 204)
})

test('If-None-Match: 304 while the ETag is current (cached or not), the new document after a write', async () => {
  const { body: { id } } = await send(service.url, 'POST', '/restaurants', body())
  for (const [path, schema] of [
    [`/restaurants/${id}`, schemas.getRestaurant],
    [`/restaurants/${id}/profile`, schemas.getProfile]
  ]) {
    const first = await send(service.url, 'GET', path, undefined, { 'if-none-match': '"1"' })
    assert.equal(first.status, 304, path) // the first read loads from PostgreSQL
    assert.equal(first.body, '')
    assert.equal(first.headers.get('etag'), '"1"')
    // The second read is a hit.
    assert.equal((await send(service.url, 'GET', path, undefined, { 'if-none-match': '"1"' })).status, 304, path)
    assert.equal((await call(schema, 'GET', path, undefined, { 'if-none-match': '"0"' })).status, 200, path)
    // Lists, weak tags (If-None-Match compares weakly) and * (it exists).
    for (const matching of ['W/"1"', '"7", "1"', '"7",W/"1"', '*', ' "1" ']) {
      assert.equal((await send(service.url, 'GET', path, undefined, { 'if-none-match': matching })).status, 304,
        `${path} ${matching}`)
    }
    assert.equal((await call(schema, 'GET', path, undefined, { 'if-none-match': '"7", W/"8"' })).status, 200, path)
    assert.equal((await call(schema, 'GET', path, undefined, { 'if-none-match': '1' })).status, 200,
      `${path}: not an entity-tag, matches none`)
  }
  await send(service.url, 'PATCH', `/restaurants/${id}`, { name: 'changed' })
  const after = await call(schemas.getRestaurant, 'GET', `/restaurants/${id}`, undefined, { 'if-none-match': '"1"' })
  assert.equal(after.status, 200)
  assert.equal(after.body.name, 'changed')
  assert.equal(after.headers.get('etag'), '"2"')
})

test('concurrent PATCHes with the same If-Match: exactly one wins per version', async () => {
  const { body: { id } } = await send(service.url, 'POST', '/restaurants', body())
  for (let version = 1; version <= 5; version++) {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) =>
      send(service.url, 'PATCH', `/restaurants/${id}`, { name: `v${version}-${i}` }, { 'if-match': `"${version}"` })))
    const won = results.filter((r) => r.status === 200)
    assert.equal(won.length, 1, `version ${version}: ${results.map((r) => r.status)}`)
    assert.ok(results.every((r) => r.status === 200 || r.status === 412))
    const now = await send(service.url, 'GET', `/restaurants/${id}`)
    assert.equal(now.body.name, won[0].body.name)
    assert.equal(now.headers.get('etag'), `"${version + 1}"`)
  }
})

test('names with apostrophes, quotes and unicode round-trip unchanged', async () => {
  const created = await send(service.url, 'POST', '/restaurants', body({
    name: TRICKY_NAME, address: 'Rue de l\'Église 3, Zürich', cuisine: '"Fusion"; DROP TABLE restaurants; --'
  }))
  assert.equal(created.status, 201)
  const { id } = created.body
  for (let i = 0; i < 2; i++) { // miss, then hit
    const res = await send(service.url, 'GET', `/restaurants/${id}`)
    assert.equal(res.body.name, TRICKY_NAME)
    assert.equal(res.body.address, 'Rue de l\'Église 3, Zürich')
    assert.equal(res.body.cuisine, '"Fusion"; DROP TABLE restaurants; --')
    assert.equal((await send(service.url, 'GET', `/restaurants/${id}/profile`)).body[0].name, TRICKY_NAME)
  }
  const patched = await send(service.url, 'PATCH', `/restaurants/${id}`, { name: `${TRICKY_NAME}²` })
  assert.equal(patched.body.name, `${TRICKY_NAME}²`)
  assert.equal((await send(service.url, 'GET', `/restaurants/${id}`)).body.name, `${TRICKY_NAME}²`)
})

test('every route answers bad requests with the one error body, a status its OpenAPI declares', async () => {
  assert.ok(await checkErrorContract(service.url) > 50)
})

test('the OpenAPI document lists every route; health and metrics come from the kit', async () => {
  const doc = await send(service.url, 'GET', '/docs/json')
  assert.equal(doc.status, 200)
  for (const path of ['/restaurants', '/restaurants/{id}', '/restaurants/{id}/profile']) {
    assert.ok(doc.body.paths[path], path)
  }
  assert.ok(doc.body.paths['/restaurants/{id}'].patch.responses['412'])
  assert.equal((await send(service.url, 'GET', '/healthz')).status, 200)
  const metrics = await fetch(`${service.url}/metrics`).then((r) => r.text())
  assert.match(metrics, /cache_requests_total\{keyspace="profile:restaurant"/)
})
