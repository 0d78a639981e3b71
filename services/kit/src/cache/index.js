// Cache-aside for finished JSON documents (strings), in Redis or, without REDIS_URL, in process memory.
//   - single flight: concurrent misses of one key in a worker share one database load;
//   - TTL with jitter, so keys written together do not expire together;
//   - fail-open: when Redis is down or slow the request is answered from the loader (PostgreSQL),
//     the failure is counted, and ioredis reconnects by itself in the background;
//   - circuit breaker: after CACHE_BREAKER_FAILURES failures in a row, Redis is not asked at all (a
//     frozen Redis would otherwise cost every request CACHE_TIMEOUT_MS) until a PING every
//     CACHE_BREAKER_OPEN_MS finds it back;
//   - bounded: an answer above CACHE_MAX_ENTRY_BYTES is not cached; the in-process cache holds at
//     most CACHE_MEMORY_MAX_BYTES per worker, each entry at most CACHE_MEMORY_TTL_MS;
//   - near cache: with Redis, its answers are also kept in the worker (CACHE_NEAR_MAX_BYTES) and
//     Redis's client-side caching invalidates them, so a hit costs no round trip (near-cache.js);
//   - no stale read after a write: a document may carry a version (a counter its table bumps on
//     every write). After committing, a writer calls invalidate(key, newVersion), which leaves a
//     tombstone holding that version; a load that read an older row can no longer store it, and a
//     reader that saw the tombstone never joins a load started before it.
//
// Stored value: "<version>\n<json>", "<version>\n" for "not found" (cached too, so unknown ids do not
// reach the database every time), or "<version>" alone for a tombstone (a miss). Both stores hand it
// back as bytes (a Buffer), and a hit is sent as those bytes: no UTF-8 decoding of Redis's answer
// into a string, and no re-encoding of it into the response (docs/decisions: hits sent as bytes).
//
// The stores: redis-store.js (with near-cache.js inside it when CACHE_NEAR_MAX_BYTES is set) and
// memory-store.js; entries.js holds what they share.
import { redisStore } from './redis-store.js'
import { memoryStore } from './memory-store.js'
import { BYPASSED, parse } from './entries.js'

/**
 * @param {{ config: object, metrics: object, log: object, broadcast?: Function }} deps
 *   broadcast(key, version): in memory mode, resolves once every other worker thread of this process
 *   has applied the invalidation (process/workers.js relays it through the main thread).
 */
export function createCache ({ config, metrics, log, broadcast = async () => {} }) {
  const store = config.REDIS_URL ? redisStore(config, log) : memoryStore(config)
  const inflight = new Map() // key -> { version seen when the load started, promise }
  const ttlFor = (ttl) => Math.round(ttl * (1 + config.CACHE_TTL_JITTER * Math.random()))
  // The metrics label: the key's first two segments (product:page:3:5 → product:page), a bounded set.
  // (indexOf, not split and join: this runs on every request.)
  const keyspaceOf = (key) => {
    const end = key.indexOf(':', key.indexOf(':') + 1)
    return end === -1 ? key : key.slice(0, end)
  }

  /**
   * Resolves to `{ value, version }`: the cached document of `key` (value null: "not found"; a hit's
   * is a Buffer, a load's the text it returned) and its version (0 unless versioned), or calls
   * `load()` and stores its result. `load()` returns the text (or null), or `{ value, version }` for
   * a versioned document.
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
      metrics.cacheLookup(keyspace, err === BYPASSED ? 'bypass' : 'error')
      if (err !== BYPASSED) log.debug({ err: err.message, key }, 'cache read failed, reading through')
    }
    const entry = raw === null ? { version: 0 } : parse(raw)
    if (entry.value !== undefined) {
      metrics.cacheLookup(keyspace, 'hit')
      return entry
    }
    if (storeOk) metrics.cacheLookup(keyspace, 'miss')

    let pending = inflight.get(key)
    if (!pending || pending.version < entry.version) {
      const filled = fill(key, keyspace, load, ttl, storeOk)
      pending = { version: entry.version, promise: filled.then((f) => f.entry) }
      inflight.set(key, pending)
      // Readers keep joining this load until its value is in the store, not just loaded: one that
      // came between the two would miss again and load again.
      const done = () => { if (inflight.get(key) === pending) inflight.delete(key) }
      filled.then((f) => f.stored).finally(done).catch(() => {})
    }
    return pending.promise
  }

  async function fill (key, keyspace, load, ttl, storeOk) {
    metrics.cacheLoads.inc({ keyspace })
    const started = Date.now() // the memory store counts an entry's age from here: it is the data's age
    const entry = entryOf(await load())
    const failed = (err) => {
      if (err !== BYPASSED) metrics.cacheLookup(keyspace, 'error')
      log.debug({ err: err.message, key }, 'cache write failed')
    }
    const stored = storeOk && fits(entry.value) && store
      .setIfNotOlder(key, entry.version, `${entry.version}\n${entry.value ?? ''}`, ttlFor(ttl), started)
      .catch(failed)
    return { entry, stored }
  }

  // An answer above CACHE_MAX_ENTRY_BYTES (UTF-8) is served but not cached: a few large documents
  // would otherwise take the room of thousands of common ones. (No UTF-16 unit is more than 3 bytes.)
  const fits = (value) => value == null || value.length * 3 <= config.CACHE_MAX_ENTRY_BYTES ||
    Buffer.byteLength(value) <= config.CACHE_MAX_ENTRY_BYTES

  /**
   * Call after committing a write of `key`'s document at `version` (and before answering): readers
   * from then on, on any worker or replica, get `version` or newer.
   */
  async function invalidate (key, version) {
    inflight.delete(key)
    try {
      await store.tombstone(key, version, ttlFor(config.CACHE_TTL_SECONDS))
    } catch (err) {
      if (err !== BYPASSED) metrics.cacheLookup(keyspaceOf(key), 'error')
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
    /** 'memory', or Redis: 'ok', 'down' (not connected), 'bypassed' (the breaker is open). From memory, no call. */
    state: store.state,
    /** The near cache: 'off', 'setting up' or 'on' (near-cache.js); and how many of its set-ups failed. */
    nearState: store.nearState,
    nearSetupFailures: store.nearSetupFailures,
    connected: store.connected,
    close: store.close
  }
}

// What load() returned, as an entry: text or null is unversioned (version 0).
const entryOf = (loaded) => (loaded !== null && typeof loaded === 'object' ? loaded : { value: loaded, version: 0 })
