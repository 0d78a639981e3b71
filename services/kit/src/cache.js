// Cache-aside for finished JSON documents (strings), in Redis or, without REDIS_URL, in process memory.
//   - single flight: concurrent misses of one key in a worker share one database load;
//   - TTL with jitter, so keys written together do not expire together;
//   - fail-open: when Redis is down or slow the request is answered from the loader (PostgreSQL),
//     the failure is counted, and ioredis reconnects by itself in the background;
//   - no stale read after a write: a document may carry a version (a counter its table bumps on
//     every write). After committing, a writer calls invalidate(key, newVersion), which leaves a
//     tombstone holding that version; a load that read an older row can no longer store it, and a
//     reader that saw the tombstone never joins a load started before it.
//
// Stored value: "<version>\n<json>", "<version>\n" for "not found" (cached too, so unknown ids do not
// reach the database every time), or "<version>" alone for a tombstone (a miss).
import { once } from 'node:events'
import { Redis } from 'ioredis'

/**
 * @param {{ config: object, metrics: object, log: object, broadcast?: Function }} deps
 *   broadcast(key, version): in memory mode, resolves once every other worker thread of this process
 *   has applied the invalidation (worker.js relays it through the main thread).
 */
export function createCache ({ config, metrics, log, broadcast = async () => {} }) {
  const store = config.REDIS_URL ? redisStore(config, log) : memoryStore()
  const inflight = new Map() // key -> { version seen when the load started, promise }
  const ttlFor = (ttl) => Math.round(ttl * (1 + config.CACHE_TTL_JITTER * Math.random()))
  // The metrics label: the key's first two segments (product:page:3:5 → product:page), a bounded set.
  // (indexOf, not split and join: this runs on every request.)
  const keyspaceOf = (key) => {
    const end = key.indexOf(':', key.indexOf(':') + 1)
    return end === -1 ? key : key.slice(0, end)
  }

  /**
   * Resolves to `{ value, version }`: the cached text of `key` (value null: "not found") and its
   * version (0 unless versioned), or calls `load()` and stores its result. `load()` returns the text
   * (or null), or `{ value, version }` for a versioned document.
   * Keys are `<service>:<kind>:…`; the metrics keyspace is `<service>:<kind>` (e.g. product:styles).
   */
  async function wrapEntry (key, load, ttl = config.CACHE_TTL_SECONDS) {
    if (!config.CACHE_ENABLED) return entryOf(await load())
    const keyspace = keyspaceOf(key)
    let raw = null
    let storeOk = true
    try {
      raw = await store.get(key)
    } catch (err) {
      storeOk = false
      metrics.cacheRequests.inc({ keyspace, result: 'error' })
      log.debug({ err: err.message, key }, 'cache read failed, reading through')
    }
    const entry = raw === null ? { version: 0 } : parse(raw)
    if (entry.value !== undefined) {
      metrics.cacheRequests.inc({ keyspace, result: 'hit' })
      return entry
    }
    if (storeOk) metrics.cacheRequests.inc({ keyspace, result: 'miss' })

    let pending = inflight.get(key)
    if (!pending || pending.version < entry.version) {
      const filled = fill(key, keyspace, load, ttl, storeOk)
      pending = { version: entry.version, promise: filled.then((f) => f.entry) }
      inflight.set(key, pending)
      // Readers keep joining this load until its value is in the store, not just loaded: one that
      // came between the two would miss again and load again.
      filled.then((f) => f.stored).finally(() => { if (inflight.get(key) === pending) inflight.delete(key) }).catch(() => {})
    }
    return pending.promise
  }

  async function fill (key, keyspace, load, ttl, storeOk) {
    metrics.cacheLoads.inc({ keyspace })
    const entry = entryOf(await load())
    const stored = storeOk && store.setIfNotOlder(key, entry.version, `${entry.version}\n${entry.value ?? ''}`, ttlFor(ttl)).catch((err) => {
      metrics.cacheRequests.inc({ keyspace, result: 'error' })
      log.debug({ err: err.message, key }, 'cache write failed')
    })
    return { entry, stored }
  }

  /**
   * Call after committing a write of `key`'s document at `version` (and before answering): readers
   * from then on, on any worker or replica, get `version` or newer.
   */
  async function invalidate (key, version) {
    inflight.delete(key)
    try {
      await store.tombstone(key, version, ttlFor(config.CACHE_TTL_SECONDS))
    } catch (err) {
      metrics.cacheRequests.inc({ keyspace: keyspaceOf(key), result: 'error' })
      log.warn({ err: err.message, key }, 'cache invalidation failed; retried when the cache is back')
    }
    if (store.kind === 'memory') await broadcast(key, version)
  }

  /** Applies an invalidation made by another worker thread of this process (memory mode). */
  function applyInvalidation (key, version) {
    inflight.delete(key)
    return store.tombstone(key, version, ttlFor(config.CACHE_TTL_SECONDS))
  }

  return {
    kind: store.kind,
    wrapEntry,
    invalidate,
    applyInvalidation,
    deleteByPrefix: store.deleteByPrefix,
    ping: store.ping,
    connected: store.connected,
    close: store.close
  }
}

// What load() returned, as an entry: text or null is unversioned (version 0).
const entryOf = (loaded) => (loaded !== null && typeof loaded === 'object' ? loaded : { value: loaded, version: 0 })

/** "<version>\n<json>" → { version, value } (value null: not found); "<version>" → { version } (tombstone). */
function parse (raw) {
  const nl = raw.indexOf('\n')
  if (nl === -1) return { version: Number(raw) }
  const text = raw.slice(nl + 1)
  return { version: Number(raw.slice(0, nl)), value: text === '' ? null : text }
}

// Atomic "store unless a newer version is there": compares the leading version of the current value.
const SET_IF_NOT_OLDER = `
local cur = redis.call('GET', KEYS[1])
if cur then
  local nl = string.find(cur, '\\n', 1, true)
  local v = tonumber(nl and string.sub(cur, 1, nl - 1) or cur)
  if v and v > tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 1`

function redisStore (config, log) {
  const redis = new Redis(config.REDIS_URL, {
    ...(config.REDIS_PASSWORD !== undefined && { password: config.REDIS_PASSWORD }),
    // Fail fast instead of queueing while disconnected: the request goes to PostgreSQL at once.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: config.CACHE_TIMEOUT_MS,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(times * 100, 2000) // reconnect forever, at most every 2 s
  })
  redis.defineCommand('setIfNotOlder', { numberOfKeys: 1, lua: SET_IF_NOT_OLDER })
  // Invalidations that could not reach Redis, replayed once it answers again: on reconnect, and every
  // second meanwhile (a stalled server or a partition may never drop the connection).
  const missed = new Map()
  const tombstone = (key, version, ttl) => redis.setIfNotOlder(key, version, String(version), ttl)
  const replay = async () => {
    for (const [key, [version, ttl]] of missed) {
      await tombstone(key, version, ttl).then(() => missed.delete(key), () => {})
    }
  }
  const retry = setInterval(() => { if (missed.size) replay() }, 1000)
  retry.unref()
  let up = null
  redis.on('ready', () => {
    if (up !== true) log.info('redis connected')
    up = true
    replay()
  })
  redis.on('error', (err) => { if (up !== false) log.warn({ err: err.message }, 'redis unavailable, serving from PostgreSQL'); up = false })
  return {
    kind: 'redis',
    get: (key) => redis.get(key),
    setIfNotOlder: (key, version, value, ttl) => redis.setIfNotOlder(key, version, value, ttl),
    async tombstone (key, version, ttl) {
      try {
        await tombstone(key, version, ttl)
      } catch (err) {
        missed.set(key, [version, ttl])
        throw err
      }
    },
    async ping () { return (await redis.ping()) === 'PONG' },
    /** Resolves to true once connected, or false after `timeoutMs` (commands fail fast until then). */
    async connected (timeoutMs = 5000) {
      if (redis.status === 'ready') return true
      const timer = AbortSignal.timeout(timeoutMs)
      return once(redis, 'ready', { signal: timer }).then(() => true, () => false)
    },
    async deleteByPrefix (prefix) {
      let deleted = 0
      for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 })) {
        if (keys.length) deleted += await redis.unlink(...keys)
      }
      return deleted
    },
    async close () {
      clearInterval(retry)
      await redis.quit().catch(() => redis.disconnect())
    }
  }
}

// Per-worker memory cache for the embedded default: a Map in insertion order, oldest evicted first.
function memoryStore (maxEntries = 50_000) {
  const entries = new Map()
  const get = (key) => {
    const e = entries.get(key)
    if (!e) return null
    if (e.expires < Date.now()) { entries.delete(key); return null }
    return e.value
  }
  const setIfNotOlder = (key, version, value, ttl) => {
    const cur = get(key)
    if (cur !== null && parse(cur).version > version) return
    entries.delete(key)
    entries.set(key, { value, expires: Date.now() + ttl * 1000 })
    if (entries.size > maxEntries) entries.delete(entries.keys().next().value)
  }
  return {
    kind: 'memory',
    get: async (key) => get(key),
    setIfNotOlder: async (key, version, value, ttl) => setIfNotOlder(key, version, value, ttl),
    tombstone: async (key, version, ttl) => setIfNotOlder(key, version, String(version), ttl),
    async ping () { return true },
    async connected () { return true },
    async deleteByPrefix (prefix) {
      let deleted = 0
      for (const key of entries.keys()) if (key.startsWith(prefix)) { entries.delete(key); deleted++ }
      return deleted
    },
    async close () { entries.clear() }
  }
}
