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
//     Redis's client-side caching invalidates them, so a hit costs no round trip (nearCache below);
//   - no stale read after a write: a document may carry a version (a counter its table bumps on
//     every write). After committing, a writer calls invalidate(key, newVersion), which leaves a
//     tombstone holding that version; a load that read an older row can no longer store it, and a
//     reader that saw the tombstone never joins a load started before it.
//
// Stored value: "<version>\n<json>", "<version>\n" for "not found" (cached too, so unknown ids do not
// reach the database every time), or "<version>" alone for a tombstone (a miss). Both stores hand it
// back as bytes (a Buffer), and a hit is sent as those bytes: no UTF-8 decoding of Redis's answer
// into a string, and no re-encoding of it into the response. Measured side by side against strings
// (npm run bench:compare): 1.01–1.05× on documents of 0.4–2.4 KB, 0.94–0.97× on those of 25–330 bytes
// (a Buffer view and a two-part write cost more there than decoding a short text), a few MB less RSS.
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'

/**
 * @param {{ config: object, metrics: object, log: object, broadcast?: Function }} deps
 *   broadcast(key, version): in memory mode, resolves once every other worker thread of this process
 *   has applied the invalidation (worker.js relays it through the main thread).
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
      filled.then((f) => f.stored).finally(() => { if (inflight.get(key) === pending) inflight.delete(key) }).catch(() => {})
    }
    return pending.promise
  }

  async function fill (key, keyspace, load, ttl, storeOk) {
    metrics.cacheLoads.inc({ keyspace })
    const started = Date.now() // the memory store counts an entry's age from here: it is the data's age
    const entry = entryOf(await load())
    const stored = storeOk && fits(entry.value) && store.setIfNotOlder(key, entry.version, `${entry.version}\n${entry.value ?? ''}`, ttlFor(ttl), started).catch((err) => {
      if (err !== BYPASSED) metrics.cacheLookup(keyspace, 'error')
      log.debug({ err: err.message, key }, 'cache write failed')
    })
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
    connected: store.connected,
    close: store.close
  }
}

/** What a store operation rejects with while the circuit breaker keeps Redis out of the way. */
const BYPASSED = Object.assign(new Error('Redis bypassed by the circuit breaker'), { code: 'CACHE_BYPASSED' })

// What load() returned, as an entry: text or null is unversioned (version 0).
const entryOf = (loaded) => (loaded !== null && typeof loaded === 'object' ? loaded : { value: loaded, version: 0 })

/** Bytes "<version>\n<json>" → { version, value } (value null: not found; else a view of those bytes); "<version>" → { version } (tombstone). */
function parse (raw) {
  const nl = raw.indexOf(NEWLINE)
  if (nl === -1) return { version: Number(raw.toString('latin1')) }
  return { version: Number(raw.toString('latin1', 0, nl)), value: nl + 1 === raw.length ? null : raw.subarray(nl + 1) }
}
const NEWLINE = 10

/**
 * A copy of `text` or of a Buffer's bytes in memory of its own: a small Buffer made the usual way is a
 * view of a shared 8 KB slab (and Redis's answers, of its socket's read), and one kept for long would
 * keep all of that alive.
 */
function ownBytes (data) {
  const bytes = Buffer.allocUnsafeSlow(typeof data === 'string' ? Buffer.byteLength(data) : data.length)
  if (typeof data === 'string') bytes.write(data)
  else data.copy(bytes)
  return bytes
}

const REPLAY_MS = 1000

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
  const options = {
    ...(config.REDIS_PASSWORD !== undefined && { password: config.REDIS_PASSWORD }),
    // Fail fast instead of queueing while disconnected: the request goes to PostgreSQL at once.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: config.CACHE_TIMEOUT_MS,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(times * 100, 2000) // reconnect forever, at most every 2 s
  }
  const redis = new Redis(config.REDIS_URL, options)
  redis.defineCommand('setIfNotOlder', { numberOfKeys: 1, lua: SET_IF_NOT_OLDER })

  // The circuit breaker. closed: every call goes to Redis. open: none does (BYPASSED at once), and a
  // PING every CACHE_BREAKER_OPEN_MS checks whether Redis answers again. Then, for SETTLE_MS, reads
  // still bypass it while invalidations go through: every replica's writer needs that long (its own
  // PING, or its replay timer) to write the invalidations Redis missed meanwhile, and a read before
  // that could find a document older than a write acknowledged during the outage.
  const SETTLE_MS = config.CACHE_BREAKER_OPEN_MS + REPLAY_MS
  let failures = 0
  let open = false
  let closed = false
  let settleUntil = 0 // > now: reads bypass Redis
  const guard = (call) => {
    if (open) return Promise.reject(BYPASSED)
    return call().then((v) => { failures = 0; return v }, (err) => {
      if (++failures >= config.CACHE_BREAKER_FAILURES && !open) {
        log.warn({ err: err.message }, `redis failed ${failures} times in a row: bypassed, probed every ${config.CACHE_BREAKER_OPEN_MS} ms`)
        trip()
      }
      throw err
    })
  }
  function trip () {
    open = true
    near?.clear()
    if (!closed) setTimeout(probe, config.CACHE_BREAKER_OPEN_MS).unref()
  }
  async function probe () {
    if (!await redis.ping().then(() => true, () => false)) return trip()
    failures = 0
    open = false
    settleUntil = Date.now() + SETTLE_MS
    log.info('redis answers again: cache back in use')
    replay()
  }

  // Invalidations that could not reach Redis, replayed once it answers again: on reconnect, when the
  // breaker closes, and every REPLAY_MS meanwhile (a stalled server or a partition may never drop the
  // connection).
  const missed = new Map()
  const tombstone = (key, version, ttl) => guard(() => redis.setIfNotOlder(key, version, String(version), ttl))
  const replay = () => Promise.all([...missed].map(([key, [version, ttl]]) =>
    tombstone(key, version, ttl).then(() => { if (missed.get(key)?.[0] === version) missed.delete(key) }, () => {})))
  const retry = setInterval(() => { if (missed.size && !open) replay() }, REPLAY_MS)
  retry.unref()
  let up = null
  redis.on('ready', () => {
    if (up !== true) log.info('redis connected')
    up = true
    replay()
  })
  redis.on('error', (err) => { if (up !== false) log.warn({ err: err.message }, 'redis unavailable, serving from PostgreSQL'); up = false })
  const near = config.CACHE_NEAR_MAX_BYTES > 0 ? nearCache(config, redis, options, log) : null
  // The reads of one turn of the event loop go out as one MGET: one write, one reply and one timer
  // for every request that came in together (a key asked twice, once), instead of a write, a read and a
  // Redis wake-up each; on a busy worker those system calls were most of a cached read's CPU. A batch
  // leaves as soon as the turn ends, beside any still in flight: no read waits for another's answer,
  // so CACHE_TIMEOUT_MS still bounds each.
  let batch = null // key -> the read of it this turn (one per key, whoever asked)
  const batched = (key) => {
    if (!batch) {
      batch = new Map()
      setImmediate(flush)
    }
    let read = batch.get(key)
    if (!read) batch.set(key, read = Promise.withResolvers())
    return read.promise
  }
  function flush () {
    const reads = [...batch]
    batch = null
    redis.mgetBuffer(reads.map(([key]) => key)).then(
      (values) => reads.forEach(([, read], i) => read.resolve(values[i])),
      (err) => reads.forEach(([, read]) => read.reject(err)))
  }
  const read = (key) => guard(() => batched(key))
  return {
    kind: 'redis',
    get: (key) => settleUntil > Date.now() || open ? Promise.reject(BYPASSED) : near ? near.get(key, read) : read(key),
    setIfNotOlder: (key, version, value, ttl) => guard(() => redis.setIfNotOlder(key, version, value, ttl)),
    async tombstone (key, version, ttl) {
      near?.delete(key) // this worker's own write: at once (Redis's invalidation follows for the others)
      try {
        await tombstone(key, version, ttl)
      } catch (err) {
        missed.set(key, [version, ttl])
        throw err
      }
      await near?.sync() // every other near cache has dropped the key, or no longer serves hits
    },
    state: () => open ? 'bypassed' : redis.status === 'ready' ? 'ok' : 'down',
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
      await near?.sync()
      return deleted
    },
    async close () {
      closed = true
      clearInterval(retry)
      near?.close()
      await redis.quit().catch(() => redis.disconnect())
    }
  }
}

/**
 * The near cache: Redis's answers kept in this worker's memory, with Redis's client-side caching
 * (CLIENT TRACKING) telling it when a key it holds changes, so a hit costs no round trip. Redis
 * queues the invalidation of a key the moment a write changes it (a tombstone, a new value, its
 * expiry, FLUSHALL, UNLINK), on a second connection (RESP2, where invalidations are Pub/Sub
 * messages that ioredis passes on). Never stale after an acknowledged write, on any replica:
 *   - a writer answers only once every near cache has applied its invalidation (sync below): it
 *     publishes a sync message after its write, each near cache's listener receives it behind the
 *     invalidations queued before it (one connection, in order) and acknowledges it; or once
 *     NEAR_HEALTH_MS have passed since Redis took the write;
 *   - a near cache serves hits only while its last PING on the listening connection was sent less
 *     than NEAR_HEALTH_MS ago and answered: the answer comes behind every invalidation Redis queued
 *     before it, so a near cache that has not applied a write's invalidation has sent no answered
 *     PING since Redis took that write, and stops serving hits before the writer's wait ends. A
 *     frozen or unreachable Redis so empties and bypasses it; the breaker and its replay then apply
 *     as without it;
 *   - tracking is on for the connection the reads go through, redirected to the listening one, and
 *     both are connected: any close, reconnect or error empties the near cache and turns it off
 *     until tracking is set up again (reads then go to Redis);
 *   - a read whose key is invalidated while its GET is in flight (the invalidation and the answer
 *     come on two sockets, in either order) is not kept.
 * A write so costs a PUBLISH and one acknowledgement from each near cache (at most NEAR_HEALTH_MS
 * when one of them is stalled). Every replica must run with the same CACHE_NEAR_MAX_BYTES on or off:
 * a writer without a near cache does not wait for the others'.
 * Bounded in bytes (CACHE_NEAR_MAX_BYTES per worker, the oldest out first).
 */
const NEAR_PING_MS = 100
const NEAR_HEALTH_MS = 300
const INVALIDATIONS = '__redis__:invalidate'
const SYNCS = 'suite:near:sync' // "<listener client id> <token>": acknowledge on ACKS + id
const ACKS = 'suite:near:ack:'
function nearCache (config, redis, options, log) {
  const entries = boundedEntries(config.CACHE_NEAR_MAX_BYTES)
  // key -> { gets: GETs in flight, invalidated: `invalidations` at the key's last one }: a GET keeps its
  // answer only if no invalidation of its key came after it was sent (a count alone would let a GET
  // sent before one be kept once a later GET of the same key made the count look clean again)
  const inflight = new Map()
  let invalidations = 0
  let tracking = false // CLIENT TRACKING on for `redis`, redirected to `listener`'s current connection
  let epoch = 0 // bumped whenever tracking goes off: a GET sent in an older epoch is not kept
  let synced = 0 // when the last answered PING on the listener was sent: every invalidation queued before it is applied
  const listener = new Redis(config.REDIS_URL, { ...options, protocol: 2, autoResubscribe: false })
  let listenerId = null // CLIENT ID of the listening connection, once it is subscribed
  const syncs = new Map() // token -> { acks, needed, done }: this worker's writes waiting for the near caches
  let syncSeq = 0

  const invalidate = (flight) => { flight.invalidated = ++invalidations }
  const clear = () => { entries.clear(); for (const flight of inflight.values()) invalidate(flight) }
  const off = () => { tracking = false; epoch++; clear() }
  const usable = () => tracking && performance.now() - synced < NEAR_HEALTH_MS

  async function track () {
    off()
    if (redis.status !== 'ready' || listenerId === null) return
    const mine = epoch
    try {
      await redis.client('TRACKING', 'ON', 'REDIRECT', listenerId)
      // Nothing is held (off() emptied it), and whatever is read from now on is tracked.
      if (epoch === mine) { tracking = true; synced = performance.now() }
    } catch (err) {
      log.debug({ err: err.message }, 'near cache: tracking not set up, reading from Redis')
    }
  }
  listener.on('ready', async () => {
    listenerId = null
    off()
    try {
      const id = await listener.client('ID')
      await listener.subscribe(INVALIDATIONS, SYNCS, `${ACKS}${id}`)
      listenerId = id
      track()
    } catch (err) {
      log.debug({ err: err.message }, 'near cache: invalidations not subscribed, reading from Redis')
    }
  })
  listener.on('close', () => { listenerId = null })
  redis.on('ready', track)
  const acknowledged = (token) => {
    const sync = syncs.get(token)
    if (sync && ++sync.acks >= sync.needed) sync.done.resolve()
  }
  listener.on('messageBuffer', (channelBuffer, message) => {
    const channel = channelBuffer.toString()
    if (channel === INVALIDATIONS) {
      if (!Array.isArray(message)) return clear() // FLUSHALL / FLUSHDB: everything
      for (const k of message) {
        const key = k.toString()
        entries.delete(key)
        const flight = inflight.get(key)
        if (flight) invalidate(flight)
      }
    } else if (channel === SYNCS) {
      // Every invalidation queued before this sync has just been applied (above, in order).
      const [writer, token] = message.toString().split(' ')
      redis.publish(`${ACKS}${writer}`, token).catch(() => {}) // unacknowledged, the writer waits its bound
    } else {
      acknowledged(message.toString())
    }
  })
  for (const conn of [redis, listener]) {
    conn.on('close', off)
    conn.on('error', off)
  }
  const pinger = setInterval(() => {
    if (!tracking) return
    const sent = performance.now()
    listener.ping().then(() => { if (sent > synced) synced = sent }, () => {})
    if (performance.now() - synced >= NEAR_HEALTH_MS) clear()
  }, NEAR_PING_MS)
  pinger.unref()

  return {
    async get (key, read) {
      if (!usable()) return read(key)
      const e = entries.get(key)
      if (e) return e.value
      const sentIn = epoch
      const sentAt = invalidations
      let flight = inflight.get(key)
      if (!flight) inflight.set(key, flight = { gets: 0, invalidated: 0 })
      flight.gets++
      let value
      try {
        value = await read(key)
      } finally {
        if (--flight.gets === 0) inflight.delete(key)
        if (flight.invalidated <= sentAt && value != null && sentIn === epoch && usable()) entries.set(key, { value: ownBytes(value) })
      }
      return value
    },
    /**
     * After a write Redis has taken: resolves once every near cache (this one's listener included)
     * has applied the invalidations queued before, or NEAR_HEALTH_MS from now, whichever comes first.
     */
    async sync () {
      const bound = sleep(NEAR_HEALTH_MS)
      if (listenerId === null) return bound
      const token = String(++syncSeq)
      const sync = { acks: 0, needed: Infinity, done: Promise.withResolvers() }
      syncs.set(token, sync)
      try {
        sync.needed = await redis.publish(SYNCS, `${listenerId} ${token}`)
        if (sync.acks >= sync.needed) return
        await Promise.race([sync.done.promise, bound])
      } catch {
        await bound
      } finally {
        syncs.delete(token)
      }
    },
    delete: (key) => entries.delete(key),
    clear,
    close () { clearInterval(pinger); off(); listener.disconnect() }
  }
}

// Per-worker memory cache, without Redis: a Map in insertion order, the oldest evicted first once the
// entries take more than CACHE_MEMORY_MAX_BYTES. Another process (a second replica) cannot invalidate
// it, so an entry lives at most CACHE_MEMORY_TTL_MS from the moment its data was read: that is how
// stale a read can be after a write on another replica. (Writes on this process invalidate at once.)
function memoryStore (config) {
  const entries = boundedEntries(config.CACHE_MEMORY_MAX_BYTES)
  const get = (key) => {
    const e = entries.get(key)
    if (!e) return null
    if (e.expires < Date.now()) { entries.delete(key); return null }
    return e.value
  }
  const setIfNotOlder = (key, version, value, ttl, since = Date.now()) => {
    const cur = get(key)
    if (cur !== null && parse(cur).version > version) return
    entries.set(key, { value: ownBytes(value), expires: since + Math.min(ttl * 1000, config.CACHE_MEMORY_TTL_MS) })
  }
  return {
    kind: 'memory',
    get: async (key) => get(key),
    setIfNotOlder: async (key, version, value, ttl, since) => setIfNotOlder(key, version, value, ttl, since),
    tombstone: async (key, version, ttl) => setIfNotOlder(key, version, String(version), ttl),
    state: () => 'memory',
    async connected () { return true },
    async deleteByPrefix (prefix) {
      let deleted = 0
      for (const key of [...entries.keys()]) if (key.startsWith(prefix)) { entries.delete(key); deleted++ }
      return deleted
    },
    /** Bytes held (the bound's own count), for tests. */
    bytes: entries.bytes,
    async close () { entries.clear() }
  }
}

/**
 * A Map of `{ value, … }` entries (value: a Buffer with memory of its own, see ownBytes) within
 * `maxBytes`, in insertion order, the oldest evicted first; an entry larger than the bound is not
 * kept. An entry's size is an upper bound of what it holds: its bytes, the key (V8 keeps a string in 1
 * or 2 bytes a character), the Buffer's objects and the Map entry and its record. The near cache and
 * the memory store each hold one.
 */
function boundedEntries (maxBytes) {
  const entries = new Map() // key -> { entry, size }
  let bytes = 0
  const remove = (key) => {
    const e = entries.get(key)
    if (!e) return
    bytes -= e.size
    entries.delete(key)
  }
  return {
    get: (key) => entries.get(key)?.entry,
    set (key, entry) {
      remove(key)
      const size = 2 * key.length + entry.value.length + 200
      if (size > maxBytes) return
      entries.set(key, { entry, size })
      bytes += size
      while (bytes > maxBytes) remove(entries.keys().next().value)
    },
    delete: remove,
    clear () { entries.clear(); bytes = 0 },
    keys: () => entries.keys(),
    bytes: () => bytes
  }
}
