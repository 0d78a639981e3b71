// Faults on real servers: Redis killed and back, PostgreSQL restarted, SIGTERM under load.
// Each test starts the servers it breaks, so other test files never see the fault.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { startRedis, startPostgres, keepAliveLoad, get, metric } from '@suite/kit/testing'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { catalogueDatabase, startProduct, service } from './fixtures.js'

const scrape = async (svc) => (await get(svc.url, '/metrics')).body

test('Redis killed: every request still 200 from PostgreSQL; Redis back: hits again', async () => {
  const redis = await startRedis()
  const svc = await startProduct({ DATABASE_URL: await catalogueDatabase(), REDIS_URL: redis.url, WORKERS: '2' })
  try {
    assert.equal((await get(svc.url, '/products/1/styles')).status, 200)
    await redis.kill()
    const during = await Promise.all(
      Array.from({ length: 40 }, (_, i) => get(svc.url, `/products/${1 + (i % 20)}/styles`))
    )
    assert.deepEqual(during.map((r) => r.status).filter((s) => s !== 200 && s !== 404), [])
    assert.deepEqual(during[0].body.product_id, '1')
    // Concurrent requests for one key share a lookup, so at least one failed or bypassed lookup per
    // distinct key: errors until the circuit breaker opens, then bypasses.
    const text = await scrape(svc)
    const errors = metric(text, 'cache_requests_total', { result: 'error' })
    const bypassed = metric(text, 'cache_requests_total', { result: 'bypass' })
    assert.ok(errors >= 1 && errors + bypassed >= 20, `cache errors ${errors}, bypassed ${bypassed}`)
    assert.equal((await get(svc.url, '/readyz')).status, 200, 'a cache outage does not take the pod out of service')

    await redis.start()
    // ioredis reconnects by itself; wait until reads hit the cache again.
    let hits = 0
    for (let i = 0; i < 100 && hits === 0; i++) {
      await sleep(100)
      const before = metric(await scrape(svc), 'cache_requests_total', { result: 'hit' })
      await get(svc.url, '/products/2/related')
      await get(svc.url, '/products/2/related')
      hits = metric(await scrape(svc), 'cache_requests_total', { result: 'hit' }) - before
    }
    assert.ok(hits >= 1, 'cache hits resume after Redis is back')
  } finally {
    await svc.stop()
    await redis.stop()
  }
})

test('PostgreSQL restarted: 503 with Retry-After while down, 200 again after, cache keeps serving hits', async () => {
  const server = await startPostgres()
  const redis = await startRedis()
  const url = await server.createDatabase('restart')
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await migrate(client, service)
  await client.query(`INSERT INTO products (id, seq, name, slogan, description, category, default_price)
    SELECT i, i, 'P' || i, 's', 'd', 'c', 1 FROM generate_series(1, 10) i`)
  await client.end()
  const svc = await startProduct({ DATABASE_URL: url, REDIS_URL: redis.url, PG_CONNECT_TIMEOUT_MS: '300' })
  try {
    assert.equal((await get(svc.url, '/products/1')).status, 200) // now cached
    await server.stop({ keepData: true })
    const down = await get(svc.url, '/products/2')
    assert.equal(down.status, 503)
    assert.equal(down.headers.get('retry-after'), '1')
    assert.deepEqual(down.body,
      { statusCode: 503, error: 'Service Unavailable', message: 'database unavailable, retry shortly' })
    assert.equal((await get(svc.url, '/products/1')).status, 200, 'cached answers survive the outage')
    let ready
    for (let i = 0; i < 30 && ready?.body.postgres !== 'down'; i++) { // the probe checks every second
      await sleep(100)
      ready = await get(svc.url, '/readyz')
    }
    assert.deepEqual([ready.status, ready.body.postgres], [200, 'down'],
      'still ready: it serves cached answers and fast 503s')
    await server.start()
    let status
    for (let i = 0; i < 50 && status !== 200; i++) {
      await sleep(100)
      status = (await get(svc.url, '/products/3')).status
    }
    assert.equal(status, 200, 'recovers without a restart')
  } finally {
    await svc.stop()
    await redis.stop()
    await server.stop()
  }
})

test('SIGTERM under keep-alive load, default SHUTDOWN_DELAY_MS (0): every request sent gets its answer, ' +
  'none is reset, exit 0', async () => {
  const svc = await startProduct({ DATABASE_URL: await catalogueDatabase(), WORKERS: '2' })
  const paths = Array.from({ length: 50 }, (_, i) => `/products/${1 + i}/styles`)
  let stopping = false
  const load = keepAliveLoad({ url: svc.url, paths, clients: 32, until: () => stopping })
  await sleep(500)
  const exit = svc.stop('SIGTERM')
  setTimeout(() => { stopping = true }, 3000)
  const result = await load
  stopping = true
  assert.deepEqual(result.errors, {}, 'no connection reset or refused')
  assert.deepEqual(Object.keys(result.statuses).sort(), ['200', '404'])
  assert.ok(result.sent > 100, `load ran: ${result.sent} requests`)
  assert.deepEqual(await exit, { code: 0, signal: null })
})
