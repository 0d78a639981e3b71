// Black-box HTTP tests of the product API against a real PostgreSQL and Redis.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import pg from 'pg'
import { conforms, checkErrorContract } from '@suite/kit/testing'
import { redisUrl } from '@suite/kit/testing/env'
import * as schemas from '../src/schemas.js'
import { catalogueDatabase, startProduct, get, metric, PRODUCT_COUNT, TRICKY_NAME } from './fixtures.js'

let service, dbUrl, db

before(async () => {
  dbUrl = await catalogueDatabase()
  db = new pg.Client({ connectionString: dbUrl })
  await db.connect()
  // A Redis database of its own, so keys do not meet those of other test files.
  service = await startProduct({ DATABASE_URL: dbUrl, REDIS_URL: `${redisUrl}/3` })
})
after(async () => {
  await service?.stop()
  await db?.end()
})

test('GET /products/:id is the Atelier product with its features', async () => {
  const res = conforms(schemas.getProduct, await get(service.url, '/products/1'))
  assert.equal(res.status, 200)
  assert.deepEqual(res.body, {
    id: 1,
    campus: 'hr-rfe',
    name: TRICKY_NAME,
    slogan: 'Slogan 1',
    description: 'Description of 1,\nwith a comma and a newline',
    category: 'Category 1',
    default_price: '140.00',
    created_at: '2021-08-13T14:38:44.509Z',
    updated_at: '2021-08-13T14:38:44.509Z',
    features: [{ feature: 'Fabric', value: 'Canvas' }, { feature: 'Buttons', value: null }]
  })
  const bare = conforms(schemas.getProduct, await get(service.url, '/products/2'))
  assert.deepEqual(bare.body.features, [])
})

test('GET /products/:id/styles keeps every Atelier quirk', async () => {
  const res = conforms(schemas.getStyles, await get(service.url, '/products/1/styles'))
  assert.equal(res.status, 200)
  assert.deepEqual(res.body, {
    product_id: '1',
    results: [
      {
        style_id: 1,
        name: 'Forest Green & Black',
        original_price: '140.00',
        sale_price: null,
        'default?': true,
        photos: [
          { thumbnail_url: 'https://images.example/1t.jpg', url: 'https://images.example/1.jpg' },
          { thumbnail_url: 'https://images.example/2t.jpg', url: 'https://images.example/2.jpg' }
        ],
        skus: { 1: { quantity: 8, size: 'XS' }, 2: { quantity: 16, size: '7.5' }, 3: { quantity: 0, size: 'One Size' } }
      },
      {
        style_id: 2,
        name: 'Desert Brown & Tan',
        original_price: '140.00',
        sale_price: '100.00',
        'default?': false,
        photos: [{ thumbnail_url: null, url: null }],
        skus: { null: { quantity: null, size: null } }
      }
    ]
  })
  const none = conforms(schemas.getStyles, await get(service.url, '/products/2/styles'))
  assert.deepEqual(none.body, { product_id: '2', results: [] })
  const three = conforms(schemas.getStyles, await get(service.url, '/products/3/styles'))
  assert.equal(three.body.results[0].original_price, '40.50')
})

test('GET /products/:id/related is an array of ids', async () => {
  assert.deepEqual(conforms(schemas.getRelated, await get(service.url, '/products/1/related')).body, [2, 3, 8])
  assert.deepEqual(conforms(schemas.getRelated, await get(service.url, '/products/2/related')).body, [])
})

test('GET /products lists in id order with the Atelier defaults', async () => {
  const res = conforms(schemas.listProducts, await get(service.url, '/products'))
  assert.equal(res.status, 200)
  assert.deepEqual(res.body.map((p) => p.id), [1, 2, 3, 4, 5])
  assert.deepEqual(res.body[1], {
    id: 2,
    name: 'Product 2',
    slogan: 'Slogan 2',
    description: 'Description of 2,\nwith a comma and a newline',
    category: 'Category 2',
    default_price: '12.00'
  })
})

test('every page equals ORDER BY id LIMIT count OFFSET (page-1)*count, across the gaps', async () => {
  const pages = [[1, 1], [1, 100], [2, 7], [3, 5], [86, 7], [60, 10], [7, 100], [601, 1], [602, 1], [121, 5], [1000, 5]]
  for (let i = 0; i < 25; i++) {
    const count = 1 + Math.floor(Math.random() * 100)
    pages.push([1 + Math.floor(Math.random() * Math.ceil(PRODUCT_COUNT / count + 1)), count])
  }
  for (const [page, count] of pages) {
    const { rows } = await db.query('SELECT id FROM products ORDER BY id LIMIT $1 OFFSET $2',
      [count, (page - 1) * count])
    const res = conforms(schemas.listProducts, await get(service.url, `/products?page=${page}&count=${count}`))
    assert.deepEqual(res.body.map((p) => p.id), rows.map((r) => r.id), `page=${page}&count=${count}`)
  }
})

test('the keyset cursor walks the whole catalogue once, in order', async () => {
  const seen = []
  let after = 0
  for (;;) {
    const res = conforms(schemas.listProducts, await get(service.url, `/products?after=${after}&count=100`))
    if (!res.body.length) break
    seen.push(...res.body.map((p) => p.id))
    after = seen.at(-1)
  }
  const { rows } = await db.query('SELECT id FROM products ORDER BY id')
  assert.deepEqual(seen, rows.map((r) => r.id))
  assert.equal(seen.length, PRODUCT_COUNT)
})

test('an unknown product is a 404 JSON error on every route', async () => {
  for (const path of ['/products/7', '/products/7/styles', '/products/7/related', '/products/999999']) {
    const res = await get(service.url, path)
    assert.equal(res.status, 404, path)
    assert.deepEqual(res.body,
      { statusCode: 404, error: 'Not Found', message: `product ${path.split('/')[2]} not found` })
  }
})

test('bad input is a 400 naming the field, never a 5xx', async () => {
  const cases = {
    '/products/abc': 'params/id',
    '/products/0': 'params/id',
    '/products/-5': 'params/id',
    '/products/1.5': 'params/id',
    '/products/2147483648': 'params/id',
    '/products/99999999999999999999999': 'params/id',
    "/products/1'%20OR%20'1'='1": 'params/id',
    '/products/1;DROP%20TABLE%20products/styles': 'params/id',
    '/products/NaN/related': 'params/id',
    '/products?count=0': 'querystring/count',
    '/products?count=101': 'querystring/count',
    '/products?count=x': 'querystring/count',
    '/products?page=0': 'querystring/page',
    '/products?page=-1': 'querystring/page',
    '/products?page=1e99': 'querystring/page',
    '/products?after=-1': 'querystring/after',
    // Only plain decimal digits name a product: not hex, exponents, signs, leading zeros or spaces.
    '/products/0x1': 'params/id',
    '/products/1e0/styles': 'params/id',
    '/products/%2B1': 'params/id',
    '/products/01/related': 'params/id',
    '/products/%201': 'params/id',
    '/products?count=0x5': 'querystring/count',
    '/products?page=02': 'querystring/page',
    '/products?after=1e2': 'querystring/after'
  }
  for (const [path, field] of Object.entries(cases)) {
    const res = await get(service.url, path)
    assert.equal(res.status, 400, `${path}: ${JSON.stringify(res.body)}`)
    assert.equal(res.body.error, 'Bad Request')
    assert.ok(res.body.message.startsWith(field), `${path}: ${res.body.message}`)
  }
  for (const path of ['/nope', '/products/1/nope', '/products/1/styles/2']) {
    const res = await get(service.url, path)
    assert.equal(res.status, 404, path)
    assert.equal(res.body.error, 'Not Found')
  }
  // A known path with a method it does not have: 405 naming the ones it has.
  const post = await fetch(service.url + '/products', { method: 'POST' })
  assert.equal(post.status, 405)
  assert.equal(post.headers.get('allow'), 'GET, HEAD, OPTIONS')
})

test('a page past the end is an empty array', async () => {
  assert.deepEqual((await get(service.url, '/products?page=2147483647&count=100')).body, [])
  assert.deepEqual((await get(service.url, '/products?after=2147483647')).body, [])
})

test('the second read of a route is a cache hit and does not query PostgreSQL', async () => {
  const scrape = async () => (await get(service.url, '/metrics')).body
  const before = await scrape()
  const first = await get(service.url, '/products/5/styles')
  const second = await get(service.url, '/products/5/styles')
  assert.deepEqual(second.body, first.body)
  const now = await scrape()
  const delta = (name, labels) => metric(now, name, labels) - metric(before, name, labels)
  assert.equal(delta('cache_requests_total', { keyspace: 'product:styles', result: 'miss' }), 1)
  assert.equal(delta('cache_requests_total', { keyspace: 'product:styles', result: 'hit' }), 1)
  assert.equal(delta('cache_loads_total', { keyspace: 'product:styles' }), 1)

  // Pages are cached per page and count, but counted under one label: the series stay few.
  // (Pages past the random ones an earlier test reads with count 3, ≤ 202: none is cached before.)
  for (const page of [301, 302, 301]) await get(service.url, `/products?page=${page}&count=3`)
  const paged = await scrape()
  assert.equal(
    metric(paged, 'cache_requests_total', { keyspace: 'product:page', result: 'hit' }) -
    metric(now, 'cache_requests_total', { keyspace: 'product:page', result: 'hit' }),
    1
  )
  assert.doesNotMatch(paged, /keyspace="product:page:/)
})

test('a stampede on one cold key makes one database load', async () => {
  const scrape = async () => (await get(service.url, '/metrics')).body
  const before = await scrape()
  const results = await Promise.all(Array.from({ length: 50 }, () => get(service.url, '/products/11/related')))
  assert.ok(results.every((r) => r.status === 200))
  const now = await scrape()
  assert.equal(
    metric(now, 'cache_loads_total', { keyspace: 'product:related' }) -
    metric(before, 'cache_loads_total', { keyspace: 'product:related' }),
    1
  )
})

test('every route answers bad requests with the one error body, a status its OpenAPI declares', async () => {
  assert.ok(await checkErrorContract(service.url) > 50)
})

test('the OpenAPI document describes every route', async () => {
  const doc = (await get(service.url, '/docs/json')).body
  for (const path of [
    '/products', '/products/{id}', '/products/{id}/styles', '/products/{id}/related', '/healthz', '/readyz', '/metrics'
  ]) {
    assert.ok(doc.paths[path]?.get, path)
  }
  assert.ok(doc.paths['/products/{id}/styles'].get.responses['200'])
})
