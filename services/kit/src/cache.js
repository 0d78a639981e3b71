// Cache-aside for finished JSON documents (strings), in Redis or, without REDIS_URL, in process memory.
//   - single-flight: concurrent misses of one key in a worker share one database load;
//   - TTL with jitter, so keys written together do not expire together;
//   - fail-open: when Redis is down or slow the request is answered from the loader (PostgreSQL),
//     the failure is counted, and ioredis reconnects by itself in the background.
// `null` from a loader means "not found" and is cached too, as an empty string, so unknown ids do not
// reach the database on every request.
import { Redis } from 'ioredis'

const NOT_FOUND = ''

/**
 * @param {{ config: object, metrics: object, log: object }} deps
 * @returns {{ wrap: Function, deleteByPrefix: Function, ping: Function, close: Function, kind: string }}
 */
export function createCache ({ config, metrics, log }) {
  const store = config.REDIS_URL ? redisStore(config, log) : memoryStore()
  const inflight = new Map()
  const ttlFor = (ttl) => Math.round(ttl * (1 + config.CACHE_TTL_JITTER * Math.random()))

  /**
   * Returns the cached string of `key`, or calls `load()` (string or null), stores and returns that.
   * The metrics keyspace is the key up to its last ':' (e.g. product:styles).
   */
  function wrap (key, load, ttl = config.CACHE_TTL_SECONDS) {
    if (!config.CACHE_ENABLED) return load()
    let pending = inflight.get(key)
    if (!pending) {
      pending = lookup(key, load, ttl).finally(() => inflight.delete(key))
      inflight.set(key, pending)
    }
    return pending
  }

  async function lookup (key, load, ttl) {
    const keyspace = key.slice(0, key.lastIndexOf(':'))
    let cached = null
    let storeOk = true
    try {
      cached = await store.get(key)
    } catch (err) {
      storeOk = false
      metrics.cacheRequests.inc({ keyspace, result: 'error' })
      log.debug({ err: err.message, key }, 'cache read failed, reading through')
    }
    if (cached !== null) {
      metrics.cacheRequests.inc({ keyspace, result: 'hit' })
      return cached === NOT_FOUND ? null : cached
    }
    if (storeOk) metrics.cacheRequests.inc({ keyspace, result: 'miss' })
    metrics.cacheLoads.inc({ keyspace })
    const value = await load()
    if (storeOk) {
      store.set(key, value ?? NOT_FOUND, ttlFor(ttl)).catch((err) => {
        metrics.cacheRequests.inc({ keyspace, result: 'error' })
        log.debug({ err: err.message, key }, 'cache write failed')
      })
    }
    return value
  }

  return { kind: store.kind, wrap, deleteByPrefix: store.deleteByPrefix, ping: store.ping, close: store.close }
}

function redisStore (config, log) {
  const redis = new Redis(config.REDIS_URL, {
    // Fail fast instead of queueing while disconnected: the request goes to PostgreSQL at once.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: config.CACHE_TIMEOUT_MS,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(times * 100, 2000) // reconnect forever, at most every 2 s
  })
  let up = null
  redis.on('ready', () => { if (up !== true) log.info('redis connected'); up = true })
  redis.on('error', (err) => { if (up !== false) log.warn({ err: err.message }, 'redis unavailable, serving from PostgreSQL'); up = false })
  return {
    kind: 'redis',
    get: (key) => redis.get(key),
    set: (key, value, ttl) => redis.set(key, value, 'EX', ttl),
    async ping () { return (await redis.ping()) === 'PONG' },
    async deleteByPrefix (prefix) {
      let deleted = 0
      for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 })) {
        if (keys.length) deleted += await redis.unlink(...keys)
      }
      return deleted
    },
    async close () { await redis.quit().catch(() => redis.disconnect()) }
  }
}

// Per-worker memory cache for the embedded default: a Map in insertion order, oldest evicted first.
function memoryStore (maxEntries = 50_000) {
  const entries = new Map()
  return {
    kind: 'memory',
    async get (key) {
      const e = entries.get(key)
      if (!e) return null
      if (e.expires < Date.now()) { entries.delete(key); return null }
      return e.value
    },
    async set (key, value, ttl) {
      entries.delete(key)
      entries.set(key, { value, expires: Date.now() + ttl * 1000 })
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value)
    },
    async ping () { return true },
    async deleteByPrefix (prefix) {
      let deleted = 0
      for (const key of entries.keys()) if (key.startsWith(prefix)) { entries.delete(key); deleted++ }
      return deleted
    },
    async close () { entries.clear() }
  }
}
