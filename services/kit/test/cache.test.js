// The cache on a real Redis and in memory: hits, single flight, versions against stale writes,
// fail-open, replayed invalidations; and read-after-write through real processes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { Redis } from 'ioredis'
import { createCache, createMetrics, loadConfig, migrate } from '@suite/kit'
import { startRedis, startService, metric } from '@suite/kit/testing'
import { createDatabase, redisUrl } from '@suite/kit/testing/env'
import fixture from './fixture/service.js'

// The text a read serves, through wrapEntry as reply.sendCached calls it.
const cached = async (cache, key, load) => (await cache.wrapEntry(key, load)).value
const quiet = { debug () {}, info () {}, warn () {}, error () {} }
let db = 0
// A cache closed after the test `t`, connected before it is returned.
async function cacheOn (t, url, env = {}) {
  const config = loadConfig({}, { DATABASE_URL: 'postgres://x', ...(url && { REDIS_URL: url }), ...env })
  const metrics = createMetrics()
  const cache = createCache({ config, metrics, log: quiet })
  t.after(() => cache.close())
  assert.ok(await cache.connected())
  const count = async (result) => metric(await metrics.registry.metrics(), 'cache_requests_total', { result })
  return { cache, metrics, count }
}
// Each test on its own Redis database (the shared server has 16), so keys never meet.
const redisDb = () => `${redisUrl}/${4 + (db++ % 10)}`
const kinds = { redis: (t, env) => cacheOn(t, redisDb(), env), memory: (t, env) => cacheOn(t, undefined, env) }

for (const [kind, make] of Object.entries(kinds)) {
  test(`${kind}: second read is a hit; not found is cached too`, async (t) => {
    const { cache, count } = await make(t)
    let loads = 0
    const load = async () => { loads++; return '{"a":1}' }
    assert.equal(await cached(cache, 't:k:1', load), '{"a":1}')
    await sleep(20) // the write is not awaited by the reader
    assert.equal(await cached(cache, 't:k:1', load), '{"a":1}')
    assert.equal(loads, 1)
    assert.equal(await count('hit'), 1)
    const none = async () => { loads++; return null }
    assert.equal(await cached(cache, 't:k:2', none), null)
    await sleep(20)
    assert.equal(await cached(cache, 't:k:2', none), null)
    assert.equal(loads, 2)
  })

  test(`${kind}: a stampede on a cold key makes one load`, async (t) => {
    const { cache } = await make(t)
    let loads = 0
    const load = async () => { loads++; await sleep(50); return '"v"' }
    const all = await Promise.all(Array.from({ length: 100 }, () => cached(cache, 't:stampede:1', load)))
    assert.ok(all.every((v) => v === '"v"'))
    assert.equal(loads, 1)
  })

  test(`${kind}: a load that read an old version cannot overwrite a newer write`, async (t) => {
    const { cache } = await make(t)
    let version = 1
    const load = async () => {
      const v = version // the row as read now…
      await sleep(100) // …stored later, after a write committed meanwhile
      return { value: `"v${v}"`, version: v }
    }
    const slow = cached(cache, 't:item:1', load)
    await sleep(20)
    version = 2
    await cache.invalidate('t:item:1', 2)
    // A reader after the write does not join the old load: it loads version 2.
    assert.equal(await cached(cache, 't:item:1', load), '"v2"')
    assert.equal(await slow, '"v1"') // that reader started before the write: old is fine for it
    await sleep(20)
    assert.equal(await cached(cache, 't:item:1', async () => assert.fail('should be a hit')), '"v2"')
  })

  test(`${kind}: CACHE_ENABLED=false always loads`, async (t) => {
    const { cache } = await make(t, { CACHE_ENABLED: 'false' })
    let loads = 0
    for (let i = 0; i < 3; i++) await cached(cache, 't:off:1', async () => { loads++; return '1' })
    assert.equal(loads, 3)
  })
}

test('redis down: reads fail open to the loader and count errors', async (t) => {
  const redis = await startRedis()
  t.after(() => redis.stop())
  const { cache, count } = await cacheOn(t, redis.url)
  await redis.kill()
  let loads = 0
  assert.equal(await cached(cache, 't:x:1', async () => { loads++; return '"db"' }), '"db"')
  assert.equal(loads, 1)
  assert.ok(await count('error') >= 1)
})

test('redis stalled: reads time out to the loader; an invalidation it missed is written once it answers', async (t) => {
  const redis = await startRedis()
  t.after(async () => { redis.resume(); await redis.stop() })
  const { cache, count } = await cacheOn(t, redis.url)
  await cached(cache, 't:x:1', async () => ({ value: '"old"', version: 1 }))
  await sleep(50)
  redis.pause() // connections stay open, nothing answers: a partition, or a server stuck
  let loads = 0
  const t0 = Date.now()
  assert.equal(await cached(cache, 't:x:1', async () => { loads++; return { value: '"db"', version: 1 } }), '"db"')
  assert.ok(Date.now() - t0 < 2000, 'a stalled cache costs at most CACHE_TIMEOUT_MS')
  assert.equal(loads, 1)
  assert.ok(await count('error') >= 1)
  await cache.invalidate('t:x:1', 2) // fails: Redis does not answer, and still holds version 1
  redis.resume()
  const raw = new Redis(redis.url)
  t.after(() => raw.disconnect())
  let value
  for (let i = 0; i < 50 && value !== '2'; i++) {
    await sleep(100)
    value = await raw.get('t:x:1')
  }
  assert.equal(value, '2', 'the missed invalidation reached Redis: the old version can no longer be served')
})

// Read-after-write through real processes: a PUT acknowledged on one worker or replica is never
// followed by the old value on another.
const entry = fileURLToPath(new URL('./fixture/cli.js', import.meta.url))
async function itemsDatabase () {
  const url = await createDatabase('items')
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await migrate(client, fixture)
  await client.end()
  return url
}
async function readAfterWrite (writers, readers, rounds = 60) {
  for (let i = 1; i <= rounds; i++) {
    const id = 1 + (i % 3)
    const put = await fetch(`${writers[i % writers.length]}/items/${id}`, {
      method: 'PUT', headers: { 'content-type': 'application/json', connection: 'close' }, body: JSON.stringify({ value: `v${i}` })
    })
    assert.equal(put.status, 200)
    const reads = await Promise.all(readers.map((base) => fetch(`${base}/items/${id}`, { headers: { connection: 'close' } }).then((r) => r.json())))
    for (const r of reads) assert.equal(r.value, `v${i}`, `round ${i}: stale read`)
  }
}

test('memory cache, 2 workers: a read after a write never returns the old value', async () => {
  const svc = await startService({ entry, env: { DATABASE_URL: await itemsDatabase(), WORKERS: '2' } })
  try {
    // Several reads per round on fresh connections reach both workers.
    await readAfterWrite([svc.url], [svc.url, svc.url, svc.url, svc.url])
  } finally {
    await svc.stop()
  }
})

test('redis cache, 2 replicas × 2 workers: a read after a write never returns the old value', async () => {
  const env = { DATABASE_URL: await itemsDatabase(), REDIS_URL: redisDb(), WORKERS: '2' }
  const [a, b] = await Promise.all([startService({ entry, env }), startService({ entry, env })])
  try {
    await readAfterWrite([a.url, b.url], [a.url, b.url, a.url, b.url])
  } finally {
    await Promise.all([a.stop(), b.stop()])
  }
})
