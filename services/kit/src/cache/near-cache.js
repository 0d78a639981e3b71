// The near cache: Redis's answers kept in this worker's memory, with Redis's client-side caching
// (CLIENT TRACKING) telling it when a key it holds changes, so a hit costs no round trip. Redis
// queues the invalidation of a key the moment a write changes it (a tombstone, a new value, its
// expiry, FLUSHALL, UNLINK), on a second connection (RESP2, where invalidations are Pub/Sub
// messages that ioredis passes on). Never stale after an acknowledged write, on any replica:
//   - a writer answers only once every near cache has applied its invalidation (sync below): it
//     publishes a sync message after its write, each near cache's listener receives it behind the
//     invalidations queued before it (one connection, in order) and acknowledges it; or once
//     NEAR_HEALTH_MS have passed since Redis took the write;
//   - a near cache serves hits only while its last PING on the listening connection was sent less
//     than NEAR_HEALTH_MS ago and answered: the answer comes behind every invalidation Redis queued
//     before it, so a near cache that has not applied a write's invalidation has sent no answered
//     PING since Redis took that write, and stops serving hits before the writer's wait ends. A
//     frozen or unreachable Redis so empties and bypasses it; the breaker and its replay then apply
//     as without it;
//   - tracking is on for the connection the reads go through, redirected to the listening one, and
//     both are connected: any close, reconnect or error empties the near cache and turns it off
//     until tracking is set up again (reads then go to Redis);
//   - a read whose key is invalidated while its GET is in flight (the invalidation and the answer
//     come on two sockets, in either order) is not kept.
// The writes of one event-loop turn share one sync message, and a listener acknowledges every sync
// it received in a turn to each writer in one message: a turn of writes so costs a PUBLISH and one
// acknowledgement from each other near cache (at most NEAR_HEALTH_MS when one of them is stalled).
// A writer's own near cache needs none: the write drops the key there when it is sent and again once
// Redis has taken it, and a read of the key in flight at either moment is not kept (reads and writes
// share one connection: a read answered after the write was taken was sent after it, and reads the
// new value).
// Every worker with Redis runs the sync, with its near cache on (CACHE_NEAR_MAX_BYTES > 0) or off:
// PUBLISH answers how many near caches listen on the sync channel, and a writer waits for those (none:
// not at all). Replicas whose settings differ, during the rollout that changes it or by mistake, so
// keep the guarantee (docs/decisions: the near cache is on in pods).
// Bounded in bytes (CACHE_NEAR_MAX_BYTES per worker, the least recently used out first).
// Set-up: the listener's CLIENT ID and SUBSCRIBE, then CLIENT TRACKING for the reads' connection. A
// step that fails (a command past CACHE_TIMEOUT_MS while a starting pod's CPU is busy, say) is tried
// again after SETUP_RETRY_MS, doubling up to SETUP_RETRY_MAX_MS, for as long as both connections are
// up; each connection that comes back starts it again. Until it is done the worker serves as one
// without a near cache, and state() says 'setting up'.
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { boundedEntries, ownBytes, redisAttributes } from './entries.js'
import { childSpan } from '../telemetry/tracing.js'

const NEAR_PING_MS = 100
const NEAR_HEALTH_MS = 300
const SETUP_RETRY_MS = 100
const SETUP_RETRY_MAX_MS = 2000
const NO_LISTENER = '-' // a sync's writer whose own listener is not subscribed: nobody to acknowledge to
const SEEN_KEYS = 8192 // the keys asked for once kept in mind, at most: then forgotten all at once
const INVALIDATIONS = '__redis__:invalidate'
const SYNCS = 'suite:near:sync:' // + Redis database; "<listener client id> <token>": acknowledge on ACKS + id
const ACKS = 'suite:near:ack:' // "<token> <token>…": the syncs a listener received in one turn
export function nearCache (config, redis, options, log) {
  const holds = config.CACHE_NEAR_MAX_BYTES > 0 // else: only the writers' side of the sync
  const syncs = `${SYNCS}${redis.options.db ?? 0}` // the near caches of the keys this worker writes
  // Keys asked for once lately: a key is held from its second read on (Redis tracks it from then),
  // so reads spread over far more keys than fit (menus uniform over millions) cost neither a copy and
  // an eviction each nor a key in Redis's tracking table, which past its bound (tracking-table-max-keys)
  // evicts keys with an invalidation each.
  const seen = new Set()
  const entries = holds ? boundedEntries(config.CACHE_NEAR_MAX_BYTES) : new Map() // off: never filled
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
  const subscribed = Promise.withResolvers() // the first time it is
  const waiting = new Map() // token -> { acks, needed, done }: this worker's writes waiting for the near caches
  let syncSeq = 0
  let turn = null // the sync this turn's writes share, until it is published
  const acks = new Map() // writer -> tokens received this turn, acknowledged together at its end

  const invalidate = (flight) => { flight.invalidated = ++invalidations }
  const clear = () => { entries.clear(); for (const flight of inflight.values()) invalidate(flight) }
  const off = () => { tracking = false; epoch++; clear() }
  const usable = () => tracking && performance.now() - synced < NEAR_HEALTH_MS

  // The set-up, run again whenever a connection comes back, and retried while a step fails.
  let knownId = null // the listening connection's CLIENT ID, once asked (it is then subscribing)
  let running = false // a set-up is under way; `again`: run it once more when it ends
  let again = false
  let failures = 0 // in a row; the counter below counts every one
  let failedSince = 0
  let retry = null
  const counts = { setupFailures: 0 }
  async function setUp () {
    if (running) { again = true; return }
    running = true
    clearTimeout(retry)
    try {
      do {
        again = false
        await subscribe()
        await track()
      } while (again)
      // Done, or waiting for a connection to come back (its 'ready' runs this again).
      if (failures && state() !== 'setting up') {
        log.info(`near cache: set up after ${failures} failed attempt(s) in ${elapsed()}`)
        failures = 0
      }
    } catch (err) {
      if (!failures++) {
        failedSince = performance.now()
        log.warn({ err: err.message }, `near cache: set-up failed, serving without it; retrying every ${
          SETUP_RETRY_MAX_MS / 1000} s at most`)
      }
      counts.setupFailures++
      retry = setTimeout(setUp, Math.min(SETUP_RETRY_MS * 2 ** (failures - 1), SETUP_RETRY_MAX_MS))
      retry.unref()
    } finally {
      running = false
    }
  }
  const elapsed = () => `${Math.round(performance.now() - failedSince)} ms`
  /**
   * 'off': CACHE_NEAR_MAX_BYTES is 0 (the listener is still set up, for the writes' syncs); 'setting
   * up': not yet subscribed and tracking, or Redis is away; 'on'.
   */
  const state = () => listenerId === null || (holds && !tracking) ? 'setting up' : holds ? 'on' : 'off'
  // The listening connection subscribed to the invalidations, the syncs and its acknowledgements. In
  // subscriber mode it takes no other command: its id is asked once per connection, before.
  async function subscribe () {
    if (listenerId !== null || listener.status !== 'ready') return // its 'ready' starts the set-up again
    knownId ??= await listener.client('ID')
    await listener.subscribe(...(holds ? [INVALIDATIONS, syncs] : []), `${ACKS}${knownId}`)
    listenerId = knownId
    subscribed.resolve()
  }
  async function track () {
    if (!holds || tracking || listenerId === null || redis.status !== 'ready') return
    const mine = epoch
    // OPTIN: Redis tracks only the keys of a read preceded by CLIENT CACHING YES (redis-store.js
    // sends it before a batch with a key to hold). NOLOOP: no invalidation of what this connection
    // writes itself (a miss's fill, a write's tombstone); redis-store.js drops those keys here as
    // it writes them (delete below).
    await redis.client('TRACKING', 'ON', 'REDIRECT', listenerId, 'OPTIN', 'NOLOOP')
    // Nothing is held (off() emptied it), and whatever is read from now on is tracked. Turned off
    // meanwhile (a connection lost): the set-up runs again.
    if (epoch === mine) { tracking = true; synced = performance.now() } else again = true
  }
  listener.on('ready', () => {
    listenerId = null
    knownId = null
    off()
    setUp()
  })
  listener.on('close', () => { listenerId = null; knownId = null })
  redis.on('ready', () => { off(); setUp() })
  const acknowledged = (token) => {
    const sync = waiting.get(token)
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
    } else if (channel === syncs) {
      // Every invalidation queued before this sync has just been applied (above, in order).
      const [writer, token] = message.toString().split(' ')
      // This worker's own write (see above), or a writer without a listener, waiting its bound.
      if (writer === String(listenerId) || writer === NO_LISTENER) return
      if (!acks.size) setImmediate(acknowledge)
      acks.get(writer)?.push(token) ?? acks.set(writer, [token])
    } else {
      for (const token of message.toString().split(' ')) acknowledged(token)
    }
  })
  function acknowledge () {
    // Unacknowledged, the writer waits its bound.
    for (const [writer, tokens] of acks) redis.publish(`${ACKS}${writer}`, tokens.join(' ')).catch(() => {})
    acks.clear()
  }
  for (const conn of [redis, listener]) {
    conn.on('close', off)
    conn.on('error', off)
  }
  const pinger = holds && setInterval(() => {
    if (!tracking) return
    const sent = performance.now()
    listener.ping().then(() => { if (sent > synced) synced = sent }, () => {})
    if (performance.now() - synced >= NEAR_HEALTH_MS) clear()
  }, NEAR_PING_MS)
  if (pinger) pinger.unref()

  /**
   * Publishes the sync of this turn's writes; resolves them once acknowledged by every near cache, or
   * at the bound. Without a listener of its own (not set up yet) it cannot hear acknowledgements: it
   * still asks Redis how many near caches listen, and waits the bound only when there is one.
   */
  async function publishSync (shared) {
    turn = null
    const bound = sleep(NEAR_HEALTH_MS)
    const token = String(++syncSeq)
    const sync = { acks: 0, needed: Infinity, done: Promise.withResolvers() }
    waiting.set(token, sync)
    const writer = listenerId ?? NO_LISTENER
    const attributes = () => redisAttributes(redis, 'PUBLISH', 'near cache sync')
    try {
      const listeners = await childSpan('PUBLISH', attributes, () => redis.publish(syncs, `${writer} ${token}`))
      sync.needed = listeners - (holds && writer !== NO_LISTENER ? 1 : 0) // not this worker's own near cache
      if (writer === NO_LISTENER && sync.needed > 0) await bound
      else if (sync.acks < sync.needed) await Promise.race([sync.done.promise, bound])
    } catch {
      await bound
    } finally {
      waiting.delete(token)
      shared.resolve()
    }
  }

  return {
    /**
     * `key`'s value: held, or read by `read(key, tracked)` (tracked: Redis is to track it), then held if
     * it was asked for before.
     */
    async get (key, read) {
      if (!usable()) return read(key, false)
      const e = entries.get(key)
      if (e) return e.value
      if (!seen.has(key)) {
        if (seen.size >= SEEN_KEYS) seen.clear()
        seen.add(key)
        return read(key, false)
      }
      const sentIn = epoch
      const sentAt = invalidations
      let flight = inflight.get(key)
      if (!flight) inflight.set(key, flight = { gets: 0, invalidated: 0 })
      flight.gets++
      let value
      try {
        value = await read(key, true)
      } finally {
        if (--flight.gets === 0) inflight.delete(key)
        const clean = flight.invalidated <= sentAt && sentIn === epoch
        if (clean && value != null && usable()) entries.set(key, { value: ownBytes(value) })
      }
      return value
    },
    /**
     * After a write Redis has taken: resolves once every near cache (this one's listener included)
     * has applied the invalidations queued before, or NEAR_HEALTH_MS from now, whichever comes first.
     */
    sync () {
      // Every write that calls this was taken by Redis before: one sync published once the turn's
      // writes have joined covers them all (their invalidations are queued before it).
      if (!turn) {
        turn = Promise.withResolvers()
        setImmediate(publishSync, turn)
      }
      return turn.promise
    },
    /**
     * Resolves to true once the listening connection is subscribed (writes then sync without waiting
     * for it), false if `signal` aborts first.
     */
    listening: (signal) => listenerId !== null || new Promise((resolve) => {
      subscribed.promise.then(() => resolve(true))
      if (signal.aborted) resolve(false)
      signal.addEventListener('abort', () => resolve(false), { once: true })
    }),
    /**
     * When this worker writes `key` to Redis (as it sends the write, and once Redis took it): not held,
     * and a read of it in flight not kept.
     */
    delete (key) {
      entries.delete(key)
      const flight = inflight.get(key)
      if (flight) invalidate(flight)
    },
    clear,
    state,
    /** Set-up attempts that failed, since the start. */
    setupFailures: () => counts.setupFailures,
    close () { clearInterval(pinger); clearTimeout(retry); off(); listener.disconnect() }
  }
}
