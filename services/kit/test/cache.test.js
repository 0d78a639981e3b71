// The cache on a real Redis and in memory: hits, single flight, versions against stale writes,
// fail-open, replayed invalidations; and read-after-write through real processes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { createCache, createMetrics, loadConfig } from '@suite/kit'
import { startRedis, startService, metric } from '@suite/kit/testing'
import { redisUrl } from '@suite/kit/testing/env'
import { entry, itemsDatabase } from './fixture/items.js'

// The text a read serves, through wrapEntry as reply.sendCached calls it (a hit's is bytes).
const textOf = (entry) => entry.value === null || typeof entry.value === 'string' ? entry.value : entry.value.toString()
const cached = async (cache, key, load) => textOf(await cache.wrapEntry(key, load))
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

  test(`${kind}: an answer above CACHE_MAX_ENTRY_BYTES (UTF-8) is served but not cached`, async (t) => {
    const { cache } = await make(t, { CACHE_MAX_ENTRY_BYTES: '1000' })
    let loads = 0
    const read = async (key, text) => {
      const v = await cached(cache, key, async () => { loads++; return text })
      await sleep(20)
      return v
    }
    const small = `"${'a'.repeat(990)}"`
    const large = `"${'a'.repeat(1000)}"`
    const wide = `"${'é'.repeat(500)}"` // 502 characters, 1002 bytes
    for (const [key, text, cached] of [
      ['t:size:1', small, true], ['t:size:2', large, false], ['t:size:3', wide, false]
    ]) {
      loads = 0
      assert.equal(await read(key, text), text)
      assert.equal(await read(key, text), text)
      assert.equal(loads, cached ? 1 : 2, `${key}: ${text.length} characters ${cached ? '' : 'not '}cached`)
    }
  })

  test(`${kind}: CACHE_ENABLED=false always loads`, async (t) => {
    const { cache } = await make(t, { CACHE_ENABLED: 'false' })
    let loads = 0
    for (let i = 0; i < 3; i++) await cached(cache, 't:off:1', async () => { loads++; return '1' })
    assert.equal(loads, 3)
  })
}

test('memory: the in-process cache holds at most CACHE_MEMORY_MAX_BYTES, the oldest entries go first', async (t) => {
  const { cache } = await cacheOn(t, undefined, { CACHE_MEMORY_MAX_BYTES: '100000' })
  const text = `"${'x'.repeat(20_000)}"` // counted at its bytes: ~20 KB an entry, 4 fit
  for (let i = 0; i < 100; i++) await cached(cache, `t:many:${i}`, async () => text)
  const kept = async (i) => {
    let loaded = false
    await cached(cache, `t:many:${i}`, async () => { loaded = true; return text })
    return !loaded
  }
  assert.equal(await kept(99), true, 'the newest is kept')
  assert.equal(await kept(0), false, 'the oldest went')
  let more = 0
  for (let i = 50; i < 99; i++) more += await kept(i) ? 1 : 0
  assert.ok(more <= 4, `${more} more entries of 20 KB kept within 100 KB`)
})

test('memory: an entry lives at most CACHE_MEMORY_TTL_MS from when its data was read, ' +
  'whatever CACHE_TTL_SECONDS', async (t) => {
  const { cache } = await cacheOn(t, undefined, { CACHE_MEMORY_TTL_MS: '400', CACHE_TTL_SECONDS: '300' })
  let loads = 0
  const load = async () => { loads++; await sleep(200); return '"v"' } // the data is 200 ms old once stored
  await cached(cache, 't:ttl:1', load)
  await cached(cache, 't:ttl:1', load)
  assert.equal(loads, 1, 'a hit meanwhile')
  await sleep(250) // 450 ms after the load began
  await cached(cache, 't:ttl:1', load)
  assert.equal(loads, 2, 'expired 400 ms after the read of its data, not after it was stored')
})

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

test('redis frozen: after CACHE_BREAKER_FAILURES timeouts Redis is bypassed at once, ' +
  'probed, and used again once it answers', async (t) => {
  const redis = await startRedis()
  t.after(async () => { redis.resume(); await redis.stop() })
  const { cache, count } = await cacheOn(t, redis.url, { CACHE_BREAKER_FAILURES: '3', CACHE_BREAKER_OPEN_MS: '500' })
  const load = async () => '"db"'
  await cached(cache, 't:b:1', load)
  await sleep(20)
  assert.equal(cache.state(), 'ok')
  redis.pause()
  for (let i = 0; i < 3; i++) await cached(cache, `t:b:${i}`, load) // three timeouts in a row
  assert.equal(await count('error'), 3)
  assert.equal(cache.state(), 'bypassed')
  const t0 = performance.now()
  for (let i = 0; i < 50; i++) assert.equal(await cached(cache, 't:b:1', load), '"db"')
  const ms = performance.now() - t0
  assert.ok(ms < 250, `50 reads bypassing a frozen Redis in ${Math.round(ms)} ms, not 50 × CACHE_TIMEOUT_MS`)
  assert.equal(await count('bypass'), 50)
  assert.equal(await count('error'), 3, 'no more calls to the frozen Redis (the probe is not a request)')
  await sleep(1500) // probes meanwhile: still frozen, still bypassed
  assert.equal(cache.state(), 'bypassed')

  redis.resume()
  let hits = 0
  for (let i = 0; i < 100 && hits === 0; i++) {
    await sleep(50)
    await cached(cache, 't:b:1', load)
    hits = await count('hit')
  }
  assert.equal(cache.state(), 'ok')
  assert.ok(hits >= 1, 'hits again once Redis answers')
})

test('redis frozen, 2 replicas: an invalidation Redis missed during the outage ' +
  'is never lost to a read after it', async (t) => {
  const redis = await startRedis()
  t.after(async () => { redis.resume(); await redis.stop() })
  // The writer probes less often: its replay comes well after the reader finds Redis back (still
  // within the reader's settling time, CACHE_BREAKER_OPEN_MS + 1 s).
  const writer = await cacheOn(t, redis.url, { CACHE_BREAKER_FAILURES: '3', CACHE_BREAKER_OPEN_MS: '900' })
  const reader = await cacheOn(t, redis.url, { CACHE_BREAKER_FAILURES: '3', CACHE_BREAKER_OPEN_MS: '300' })
  let version = 1 // the row in "PostgreSQL"
  const load = async () => ({ value: `"v${version}"`, version })
  const trip = (c) => Promise.all([2, 3, 4].map((i) => cached(c.cache, `t:r:${i}`, load))) // three timeouts at once
  assert.equal(await cached(reader.cache, 't:r:1', load), '"v1"')
  await sleep(20) // cached in Redis at version 1
  redis.pause()
  await trip(reader)
  await trip(writer)
  assert.deepEqual([reader.cache.state(), writer.cache.state()], ['bypassed', 'bypassed'])
  version = 2
  // Committed and acknowledged. The writer's breaker is open: the tombstone is not even sent (a
  // partition would lose it the same way); the writer replays it once its own probe finds Redis back.
  await writer.cache.invalidate('t:r:1', 2)
  assert.equal(await cached(reader.cache, 't:r:1', load), '"v2"', 'bypassing: read from the database')
  await sleep(500)
  redis.resume()
  // Redis holds version 1 until the writer replays; no read may return it meanwhile.
  for (let i = 0; i < 60; i++) {
    assert.equal(await cached(reader.cache, 't:r:1', load), '"v2"', `read ${i} after Redis came back`)
    await sleep(25)
  }
  assert.equal(reader.cache.state(), 'ok')
})

// Read-after-write through real processes: a PUT acknowledged on one worker or replica is never
// followed by the old value on another.
async function readAfterWrite (writers, readers, rounds = 60) {
  for (let i = 1; i <= rounds; i++) {
    const id = 1 + (i % 3)
    const put = await fetch(`${writers[i % writers.length]}/items/${id}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ value: `v${i}` })
    })
    assert.equal(put.status, 200)
    const reads = await Promise.all(readers.map((base) =>
      fetch(`${base}/items/${id}`, { headers: { connection: 'close' } }).then((r) => r.json())))
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

test('redis: the reads of one turn of the event loop reach Redis as one MGET, each with its own answer', async (t) => {
  const redis = await startRedis() // its own: commandstats count what the server takes
  t.after(() => redis.stop())
  const stats = new Redis(redis.url)
  t.after(() => stats.disconnect())
  const calls = async (command) =>
    Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await stats.info('commandstats'))?.[1] ?? 0)
  const { cache, count } = await cacheOn(t, redis.url)
  const keys = Array.from({ length: 10 }, (_, i) => `t:batch:${i}`)
  for (const key of keys) await cached(cache, key, async () => `"${key}"`)
  await sleep(20) // stored
  const [mget, get] = [await calls('mget'), await calls('get')]
  // 30 reads at once, each key three times: one MGET of the 10 keys, every read its own key's answer.
  const answers = await Promise.all([...keys, ...keys, ...keys].map((key) =>
    cached(cache, key, async () => assert.fail(`${key} loaded`))))
  assert.deepEqual(answers, [...keys, ...keys, ...keys].map((key) => `"${key}"`))
  assert.deepEqual([await calls('mget') - mget, await calls('get') - get], [1, 0], 'one MGET, no GET')
  assert.equal(await count('hit'), 30)
})

test('redis: the stores of one turn\'s misses reach Redis in one write', async (t) => {
  const redis = await startRedis() // its own: its stats count what it reads
  t.after(() => redis.stop())
  const stats = new Redis(redis.url)
  t.after(() => stats.disconnect())
  const info = async (field) => Number(new RegExp(`${field}(\\d+)`).exec(await stats.info('all'))?.[1] ?? 0)
  const { cache } = await cacheOn(t, redis.url)
  await cached(cache, 't:store:first', async () => '"first"') // the script loaded: no NOSCRIPT round below
  await sleep(20)
  const [reads, stores] = [await info('total_reads_processed:'), await info('cmdstat_evalsha:calls=')]
  // 50 misses at once: one MGET, then 50 loads that end in the same turn, so 50 stores at once.
  const keys = Array.from({ length: 50 }, (_, i) => `t:store:${i}`)
  await Promise.all(keys.map((key) => cached(cache, key, async () => `"${key}"`)))
  await sleep(20) // stored
  assert.equal(await info('cmdstat_evalsha:calls=') - stores, 50, 'each miss stored')
  // What Redis read meanwhile: the MGET, the stores, the two INFOs, maybe a health PING; a write per
  // store would be 50 more.
  const read = await info('total_reads_processed:') - reads
  assert.ok(read <= 8, `Redis read ${read} times for one MGET and 50 stores`)
  assert.deepEqual(
    await Promise.all(keys.map((key) => cached(cache, key, async () => assert.fail(`${key} loaded again`)))),
    keys.map((key) => `"${key}"`)
  )
})

test('redis near cache: a hit costs no round trip to Redis; ' +
  'a write on another replica reaches it within milliseconds', async (t) => {
  const redis = await startRedis() // its own: commandstats count every read (GET, MGET) the server takes
  t.after(() => redis.stop())
  const url = redis.url
  const stats = new Redis(url)
  t.after(() => stats.disconnect())
  const gets = async () => {
    const info = await stats.info('commandstats')
    return ['get', 'mget'].reduce((n, c) => n + Number(new RegExp(`cmdstat_${c}:calls=(\\d+)`).exec(info)?.[1] ?? 0), 0)
  }
  for (const near of [true, false]) {
    const env = { CACHE_NEAR_MAX_BYTES: near ? '33554432' : '0' }
    const { cache: a } = await cacheOn(t, url, env)
    const { cache: b } = await cacheOn(t, url, env)
    const key = `t:near:${near}`
    let version = 1
    let loads = 0
    const load = async () => { loads++; return { value: `{"v":${version}}`, version } }
    const read = async () => textOf(await a.wrapEntry(key, load))
    assert.equal(await read(), '{"v":1}')
    await sleep(20) // stored in Redis
    assert.equal(await read(), '{"v":1}') // from Redis, and now near
    await sleep(1000) // well past the 300 ms health bound: kept usable by its answered PINGs
    const before = await gets()
    for (let i = 0; i < 50; i++) assert.equal(await read(), '{"v":1}')
    const sent = await gets() - before
    if (near) assert.equal(sent, 0, 'near hits send no read')
    else assert.equal(sent, 50, 'without the near cache every read goes to Redis')
    version = 2
    await b.invalidate(key, 2) // the other replica's write
    assert.equal(await read(), '{"v":2}', `near ${near}: the write on the other replica is seen`)
    assert.equal(loads, 2)
  }
})

test('redis near cache: a key is held (and tracked by Redis) from its second read on; ' +
  'keys read once cost Redis no tracking', async (t) => {
  const redis = await startRedis()
  t.after(() => redis.stop())
  const stats = new Redis(redis.url)
  t.after(() => stats.disconnect())
  const info = async (pattern) => Number(pattern.exec(await stats.info())?.[1] ?? 0)
  const tracked = () => info(/tracking_total_keys:(\d+)/)
  const reads = () => info(/cmdstat_mget:calls=(\d+)/)
  const { cache } = await cacheOn(t, redis.url, { CACHE_NEAR_MAX_BYTES: '33554432' })
  await sleep(500)
  const keys = Array.from({ length: 50 }, (_, i) => `t:near:seen:${i}`)
  const read = (key) => cache.wrapEntry(key, async () => `"${key}"`).then(textOf)
  for (const key of keys) await read(key) // asked once: a miss, loaded, stored
  await sleep(20)
  assert.equal(await tracked(), 0, 'keys read once are not tracked')
  for (const key of keys) assert.equal(await read(key), `"${key}"`) // twice: from Redis, tracked, held
  assert.equal(await tracked(), 50)
  const before = await reads()
  for (const key of keys) assert.equal(await read(key), `"${key}"`)
  assert.equal(await reads() - before, 0, 'the third read of each is a near hit')
})

/**
 * Three replicas on one Redis, each with its CACHE_NEAR_MAX_BYTES; `rounds` writes rotating over them,
 * every replica holding the document near before each, and read on all three in the same turn as the
 * acknowledgement: never the old value.
 */
async function neverStaleAcrossReplicas (t, key, nearBytes, rounds) {
  const url = redisDb()
  const replicas = await Promise.all(nearBytes.map((bytes) => cacheOn(t, url, { CACHE_NEAR_MAX_BYTES: bytes })))
  await sleep(500) // past the health bound: the near caches hold entries by their PINGs, not their start
  let version = 1
  const load = async () => ({ value: `{"v":${version}}`, version })
  const read = (r) => replicas[r].cache.wrapEntry(key, load).then(textOf)
  for (let round = 1; round <= rounds; round++) {
    // Every replica holds the document near: read twice, the second a hit without Redis.
    for (const r of [0, 1, 2]) { await read(r); await sleep(5); await read(r) }
    version = round + 1
    await replicas[round % 3].cache.invalidate(key, version) // committed, then acknowledged
    // In the same turn as the acknowledgement: no time for a late invalidation to land.
    const after = await Promise.all([0, 1, 2].map(read))
    assert.deepEqual(
      after,
      [0, 1, 2].map(() => `{"v":${version}}`),
      `round ${round}: stale read after a write on replica ${round % 3}`
    )
  }
}

test('redis near cache, 3 replicas: ' +
  'a read right after a write acknowledged on another replica is never the old value', (t) =>
  neverStaleAcrossReplicas(t, 't:near:raw', ['33554432', '33554432', '33554432'], 40))

test('redis near cache, replicas with it on and off (a rollout that turns it on): ' +
  'a read right after a write on any of them is never the old value', (t) =>
  neverStaleAcrossReplicas(t, 't:near:mixed', ['33554432', '0', '33554432'], 30))

test('redis near cache: a read in flight when its own worker writes the key is not kept ' +
  '(the writer waits for no acknowledgement of its own)', async (t) => {
  const url = redisDb()
  const { cache } = await cacheOn(t, url, { CACHE_NEAR_MAX_BYTES: '33554432' })
  await sleep(500)
  for (let round = 1; round <= 30; round++) {
    const key = `t:near:own:${round}`
    let version = 1
    const load = async () => ({ value: `{"v":${version}}`, version })
    await cache.wrapEntry(key, load)
    await sleep(5) // in Redis, not yet near
    const inFlight = cache.wrapEntry(key, load) // its MGET leaves at the end of this turn
    await new Promise(setImmediate)
    version = 2
    await cache.invalidate(key, 2) // sent behind that MGET, on the same connection
    assert.equal(textOf(await inFlight), '{"v":1}')
    assert.equal(
      textOf(await cache.wrapEntry(key, load)),
      '{"v":2}',
      `round ${round}: the read in flight before the write was kept`
    )
  }
})

test('CACHE_NEAR_MAX_BYTES by default: a sixteenth of the container memory limit split among the workers; ' +
  'off without a limit', async (t) => {
  const env = { DATABASE_URL: await itemsDatabase(), REDIS_URL: redisDb() }
  const nearBytes = async (extra, memoryLimitMb) => {
    const svc = await startService({ entry, env: { ...env, LOG_LEVEL: 'info', ...extra }, memoryLimitMb })
    await svc.stop()
    return { limited: svc.memoryLimited, bytes: /"nearCacheBytes":(\d+)/.exec(svc.logs())?.[1] }
  }
  assert.equal((await nearBytes({ WORKERS: '1' })).bytes, '0')
  const limited = await nearBytes({ WORKERS: '2' }, 384)
  if (!limited.limited) return t.skip('no memory cgroup can be made on this machine')
  assert.equal(limited.bytes, String(384 * 2 ** 20 / 16 / 2))
  assert.equal((await nearBytes({ WORKERS: '1', CACHE_NEAR_MAX_BYTES: '0' }, 384)).bytes, '0')
})

test('redis near cache: the writes of one turn share one sync, acknowledged once by each near cache; ' +
  'each is seen by the others before it is acknowledged', async (t) => {
  const redis = await startRedis() // its own: commandstats count every PUBLISH the server takes
  t.after(() => redis.stop())
  const stats = new Redis(redis.url)
  t.after(() => stats.disconnect())
  const publishes = async () => Number(/cmdstat_publish:calls=(\d+)/.exec(await stats.info('commandstats'))?.[1] ?? 0)
  const env = { CACHE_NEAR_MAX_BYTES: '33554432' }
  const replicas = await Promise.all([0, 1, 2].map(() => cacheOn(t, redis.url, env)))
  await sleep(500)
  const keys = Array.from({ length: 20 }, (_, i) => `t:near:turn:${i}`)
  const versions = new Map(keys.map((k) => [k, 1]))
  const read = (r, key) => replicas[r].cache.wrapEntry(key, async () => ({
    value: `{"v":${versions.get(key)}}`,
    version: versions.get(key)
  })).then(textOf)
  // Near everywhere: a key is held from its second read on.
  for (const key of keys) for (const r of [0, 1, 2]) { await read(r, key); await sleep(2); await read(r, key) }
  const before = await publishes()
  for (const key of keys) versions.set(key, 2)
  // 20 writes on replica 0 in one turn: each acknowledged only once the other near caches dropped its key.
  await Promise.all(keys.map(async (key) => {
    await replicas[0].cache.invalidate(key, 2)
    assert.deepEqual(
      await Promise.all([1, 2].map((r) => read(r, key))),
      ['{"v":2}', '{"v":2}'],
      `${key}: stale on another replica after its write`
    )
  }))
  // One sync for the turn (the tombstones' writes may take more than one turn to return), and one
  // acknowledgement from each of the three near caches per sync.
  const sent = await publishes() - before
  assert.ok(sent <= 2 * 4, `${sent} PUBLISHes for 20 writes (one sync and three acknowledgements a turn)`)
})

test('redis near cache: a replica whose worker is stalled does not hold the writer past the bound, ' +
  'and never serves the old value after it', async () => {
  const env = {
    DATABASE_URL: await itemsDatabase(),
    REDIS_URL: redisDb(),
    WORKERS: '1',
    CACHE_NEAR_MAX_BYTES: '33554432'
  }
  const [a, b] = await Promise.all([startService({ entry, env }), startService({ entry, env })])
  const put = (base, value) => fetch(`${base}/items/1`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ value })
  })
  const value = async (base) => (await (await fetch(`${base}/items/1`)).json()).value
  try {
    assert.equal((await put(a.url, 'old')).status, 200)
    for (let i = 0; i < 3; i++) assert.equal(await value(b.url), 'old') // near on b
    const stall = fetch(`${b.url}/busy?ms=1500`) // b's only worker stops reading its sockets
    await sleep(100)
    const started = performance.now()
    assert.equal((await put(a.url, 'new')).status, 200)
    const waited = performance.now() - started
    assert.ok(waited < 1000, `the write waited ${Math.round(waited)} ms for a stalled near cache (bound: 300 ms)`)
    assert.equal(await value(b.url), 'new', 'the stalled replica, once it runs again, does not serve the old value')
    await stall
  } finally {
    await Promise.all([a.stop(), b.stop()])
  }
})

test('redis near cache: emptied and unused once Redis stops answering PINGs (frozen), ' +
  'so the breaker and its replay apply', async (t) => {
  const redis = await startRedis()
  t.after(() => redis.stop())
  const { cache } = await cacheOn(t, redis.url, { CACHE_TIMEOUT_MS: '100', CACHE_NEAR_MAX_BYTES: '33554432' })
  let loads = 0
  const load = async () => { loads++; return '"x"' }
  await cached(cache, 't:frozen:1', load)
  await sleep(20)
  await cached(cache, 't:frozen:1', load) // near now
  assert.equal(loads, 1)
  redis.pause()
  try {
    await sleep(500) // past the near cache's health bound
    assert.equal(await cached(cache, 't:frozen:1', load), '"x"')
    assert.equal(loads, 2, 'read through to the loader, not from the near cache')
  } finally {
    redis.resume()
  }
})
