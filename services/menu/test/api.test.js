// Black-box HTTP tests of the menu API against a real PostgreSQL and Redis.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { conforms, checkErrorContract, send } from '@suite/kit/testing'
import { redisUrl } from '@suite/kit/testing/env'
import * as schemas from '../src/schemas.js'
import { menuDatabase, startMenu, get, put, DISHES } from './fixtures.js'

let service

before(async () => {
  service = await startMenu({ DATABASE_URL: await menuDatabase(), REDIS_URL: `${redisUrl}/6` })
})
after(async () => { await service?.stop() })

test('a dish menu on both GET routes, the same document', async () => {
  for (const path of ['/restaurants/1/menu', '/menu/1']) {
    const res = conforms(schemas.getMenu, await get(service.url, path))
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, { id: 1, dishes: DISHES, link: null })
  }
})

test('a link menu has dishes [] and its link', async () => {
  for (const path of ['/restaurants/3/menu', '/menu/3']) {
    const res = conforms(schemas.getMenu, await get(service.url, path))
    assert.deepEqual(res.body, { id: 3, dishes: [], link: 'https://menus.example/r/3' })
  }
})

test('unknown id is a 404 JSON, twice (cached), and the process survives', async () => {
  for (const path of ['/restaurants/999/menu', '/menu/999', '/menu/999', '/menu/2147483647']) {
    const res = conforms(schemas.getMenu, await get(service.url, path))
    assert.equal(res.status, 404)
    assert.match(res.body.message, /not found/)
  }
  assert.equal((await get(service.url, '/menu/1')).status, 200)
  assert.equal(service.child.exitCode, null)
})

test('bad ids are a 400 naming the field', async () => {
  for (const id of [
    'abc', '0', '-1', '1.5', '2147483648', '99999999999999999999', '0x1', '1e0', '%2B1', '01', '%201'
  ]) {
    for (const path of [`/restaurants/${id}/menu`, `/menu/${id}`]) {
      const res = conforms(schemas.getMenu, await get(service.url, path))
      assert.equal(res.status, 400, path)
      assert.match(res.body.message, /params\/id/, path)
    }
  }
})

test('PUT validation: each dish field, both/neither dishes and link → 400 naming the field', async () => {
  const good = DISHES[1]
  const cases = [
    [{ dishes: [good, good, good, { ...good, price: 'cheap' }] }, /body\/dishes\/3\/price/],
    [{ dishes: [{ ...good, price: -1 }] }, /body\/dishes\/0\/price/],
    [{ dishes: [{ ...good, dishType: 7 }] }, /body\/dishes\/0\/dishType/],
    [{ dishes: [{ ...good, subType: null }] }, /body\/dishes\/0\/subType/],
    [{ dishes: [{ ...good, dish: '' }] }, /body\/dishes\/0\/dish/],
    [{ dishes: [{ ...good, ingredients: ['a'] }] }, /body\/dishes\/0\/ingredients/],
    [{ dishes: [{ dishType: 'a', subType: 'b', dish: 'c', price: 1 }] }, /body\/dishes\/0\/ingredients/],
    [{ dishes: [{ ...good, extra: 1 }] }, /body\/dishes\/0\/extra is not allowed/],
    [{ dishes: [] }, /body\/dishes/],
    [{ dishes: 'none' }, /body\/dishes/],
    [{ link: 'not a url' }, /body\/link/],
    [{ link: 'ftp://x.example/menu' }, /body\/link/],
    [{ link: 'javascript:alert(1)' }, /body\/link/],
    [{ dishes: [{ ...good, dish: 'nul\u0000' }] }, /^body\/dishes\/0\/dish must not contain NUL/],
    [{ dishes: [good, { ...good, ingredients: 'lone \ud800' }] }, /^body\/dishes\/1\/ingredients must not contain NUL/],
    [{ dishes: [{ ...good, dishType: '\udc00' }] }, /^body\/dishes\/0\/dishType must not contain NUL/],
    [{ dishes: [good], link: 'https://x.example/' }, /body\/link/],
    [{}, /either dishes or link/]
  ]
  for (const [body, message] of cases) {
    const res = conforms(schemas.putMenu, await put(service.url, '/restaurants/1/menu', body))
    assert.equal(res.status, 400, JSON.stringify(body))
    assert.match(res.body.message, message, JSON.stringify(body))
  }
  const badId = conforms(schemas.putMenu, await put(service.url, '/restaurants/x/menu', { link: 'https://x.example/' }))
  assert.equal(badId.status, 400)
  assert.match(badId.body.message, /params\/id/)
  // Nothing was changed by the rejected requests.
  assert.deepEqual((await get(service.url, '/menu/1')).body.dishes, DISHES)
})

test('PUT replaces a menu (dishes ↔ link), 201 creates one, GETs follow at once', async () => {
  const before = await get(service.url, '/menu/2')
  assert.equal(before.headers.get('etag'), '"1"')
  assert.equal((await fetch(`${service.url}/menu/2`, { headers: { 'if-none-match': '"1"' } })).status, 304)
  const link = conforms(schemas.putMenu,
    await put(service.url, '/restaurants/2/menu', { link: 'https://new.example/menu' }))
  assert.equal(link.status, 200)
  assert.equal(link.headers.get('etag'), '"2"')
  const changed = await fetch(`${service.url}/menu/2`, { headers: { 'if-none-match': '"1"' } })
  assert.equal(changed.status, 200, 'the old ETag no longer matches')
  assert.equal(changed.headers.get('etag'), '"2"')
  assert.deepEqual(link.body, { id: 2, dishes: [], link: 'https://new.example/menu' })
  assert.deepEqual((await get(service.url, '/menu/2')).body, link.body)
  assert.deepEqual((await get(service.url, '/restaurants/2/menu')).body, link.body)

  const dishes = conforms(schemas.putMenu, await put(service.url, '/restaurants/2/menu', { dishes: [DISHES[0]] }))
  assert.deepEqual(dishes.body, { id: 2, dishes: [DISHES[0]], link: null })
  assert.deepEqual((await get(service.url, '/menu/2')).body, dishes.body)

  // 5000 was a cached 404 before: creating it must show at once.
  assert.equal((await get(service.url, '/menu/5000')).status, 404)
  const created = conforms(schemas.putMenu, await put(service.url, '/restaurants/5000/menu', { dishes: DISHES }))
  assert.equal(created.status, 201)
  assert.deepEqual((await get(service.url, '/menu/5000')).body, { id: 5000, dishes: DISHES, link: null })
})

test('PUT honours If-Match and If-None-Match (RFC 9110): 412 and nothing changed when they do not hold', async () => {
  const put = (id, body, headers) => send(service.url, 'PUT', `/restaurants/${id}/menu`, body, headers)
    .then((r) => conforms(schemas.putMenu, r))
  const link = (n) => ({ link: `https://menus.example/v${n}` })
  const v1 = (await get(service.url, '/menu/4')).headers.get('etag')
  assert.equal(v1, '"1"')
  for (const stale of ['"2"', 'W/"1"', '"7", "8"']) {
    const res = await put(4, link(0), { 'if-match': stale })
    assert.equal(res.status, 412, stale)
    assert.match(res.body.message, /ETag "1"/)
  }
  assert.deepEqual((await get(service.url, '/menu/4')).body.dishes, DISHES, 'unchanged by the refused writes')
  const ok = await put(4, link(2), { 'if-match': '"9", "1"' })
  assert.equal(ok.status, 200)
  assert.equal(ok.headers.get('etag'), '"2"')
  assert.equal((await put(4, link(3), { 'if-match': '*' })).headers.get('etag'), '"3"')
  // If-None-Match: * creates only; the current ETag (weakly) refuses.
  for (const current of ['*', 'W/"3"']) {
    assert.equal((await put(4, link(0), { 'if-none-match': current })).status, 412, current)
  }
  assert.equal((await get(service.url, '/menu/4')).body.link, 'https://menus.example/v3')
  // No menu yet: If-Match (any form) never creates one; If-None-Match: * does, once.
  for (const any of ['*', '"1"']) {
    const res = await put(7000, link(1), { 'if-match': any })
    assert.equal(res.status, 412, any)
    assert.match(res.body.message, /it has none/)
  }
  assert.equal((await get(service.url, '/menu/7000')).status, 404)
  const created = await Promise.all([1, 2, 3].map((n) => put(7001, link(n), { 'if-none-match': '*' })))
  assert.deepEqual(created.map((r) => r.status).sort(), [201, 412, 412], 'exactly one of three racing creates wins')
  assert.equal((await put(7001, link(9), { 'if-match': '2' })).status, 412, 'not an entity-tag: matches none')
})

test('every route answers bad requests with the one error body, a status its OpenAPI declares', async () => {
  assert.ok(await checkErrorContract(service.url) > 50)
})
