// The Redis store: reads of one event-loop turn as one MGET, writes as an atomic "set unless a newer
// version is there", a circuit breaker around both, and the invalidations Redis missed replayed.
import { Redis } from 'ioredis'
import { BYPASSED, redisAttributes } from './entries.js'
import { nearCache } from './near-cache.js'
import { childSpan, linkedSpan, requestContext } from '../telemetry/tracing.js'

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

export function redisStore (config, log) {
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
        const every = config.CACHE_BREAKER_OPEN_MS
        log.warn({ err: err.message }, `redis failed ${failures} times in a row: bypassed, probed every ${every} ms`)
        trip()
      }
      throw err
    })
  }
  function trip () {
    open = true
    near.clear()
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
  // A command's span (under the request that sends it, when it is traced).
  const command = (name, summary, send) => childSpan(name, () => redisAttributes(redis, name, summary), send)
  // This worker's writes drop the key from its near cache once Redis took them (Redis does not tell
  // the connection that wrote: NOLOOP): a read answered before the write took effect (sent between a
  // NOSCRIPT and the EVAL ioredis then sends, say) is not kept either.
  const write = (key, send) => guard(() => command('EVALSHA', 'setIfNotOlder', send))
    .finally(() => near.delete(key))
  // The stores of one turn leave in one write: a turn's misses come back together (one query loaded
  // them all) and each would otherwise cost its own system call. The socket is corked at the first
  // and uncorked when the turn ends, with this turn's MGET if there is one.
  let corked = null
  const store = (key, send) => {
    if (!corked && redis.stream) {
      corked = redis.stream
      corked.cork()
      setImmediate(() => { corked.uncork(); corked = null })
    }
    return write(key, send)
  }
  const tombstone = (key, version, ttl) => write(key, () => redis.setIfNotOlder(key, version, String(version), ttl))
  const replayed = (key, version) => { if (missed.get(key)?.[0] === version) missed.delete(key) }
  const replay = () => Promise.all([...missed].map(([key, [version, ttl]]) =>
    tombstone(key, version, ttl).then(() => replayed(key, version), () => {})))
  const retry = setInterval(() => { if (missed.size && !open) replay() }, REPLAY_MS)
  retry.unref()
  let up = null
  redis.on('ready', () => {
    if (up !== true) log.info('redis connected')
    up = true
    replay()
  })
  redis.on('error', (err) => {
    if (up !== false) log.warn({ err: err.message }, 'redis unavailable, serving from PostgreSQL')
    up = false
  })
  const near = nearCache(config, redis, options, log) // with CACHE_NEAR_MAX_BYTES 0, only the writers' sync
  // The reads of one turn of the event loop go out as one MGET: one write, one reply and one timer
  // for every request that came in together (a key asked twice, once), instead of a write, a read and a
  // Redis wake-up each; on a busy worker those system calls were most of a cached read's CPU. A batch
  // leaves as soon as the turn ends, beside any still in flight: no read waits for another's answer,
  // so CACHE_TIMEOUT_MS still bounds each.
  let batch = null // key -> the read of it this turn (one per key, whoever asked)
  let contexts = null // the traced requests of this turn's reads: the MGET's span is linked to each
  // A read of this turn is of a key the near cache is to hold: Redis is to track the MGET's keys.
  let tracked = false
  const batched = (key, track) => {
    if (!batch) {
      batch = new Map()
      contexts = []
      tracked = false
      setImmediate(flush)
    }
    if (track) tracked = true
    const traced = requestContext()
    if (traced) contexts.push(traced)
    let read = batch.get(key)
    if (!read) batch.set(key, read = Promise.withResolvers())
    return read.promise
  }
  function flush () {
    const reads = [...batch]
    batch = null
    // Sent right before the MGET on the same connection: Redis tracks that command's keys (OPTIN).
    // Refused (its answer comes before the MGET's): the reads in flight are not kept.
    if (tracked) redis.client('CACHING', 'yes').catch(() => near.clear())
    const attributes = () => ({ ...redisAttributes(redis, 'MGET'), 'suite.batch.keys': reads.length })
    linkedSpan('MGET', contexts, attributes, () => redis.mgetBuffer(reads.map(([key]) => key))).then(
      (values) => reads.forEach(([, read], i) => read.resolve(values[i])),
      (err) => reads.forEach(([, read]) => read.reject(err)))
  }
  const read = (key, track) => guard(() => batched(key, track))
  return {
    kind: 'redis',
    get: (key) => settleUntil > Date.now() || open ? Promise.reject(BYPASSED) : near.get(key, read),
    setIfNotOlder: (key, version, value, ttl) => store(key, () => redis.setIfNotOlder(key, version, value, ttl)),
    async tombstone (key, version, ttl) {
      near.delete(key) // this worker's own write: at once, and again once Redis took it (above)
      try {
        await tombstone(key, version, ttl)
      } catch (err) {
        missed.set(key, [version, ttl])
        throw err
      }
      await near.sync() // every other near cache has dropped the key, or no longer serves hits
    },
    state: () => open ? 'bypassed' : redis.status === 'ready' ? 'ok' : 'down',
    nearState: near.state,
    nearSetupFailures: near.setupFailures,
    /**
     * Resolves to true once connected and the near cache's sync listening, or false: not connected
     * within `timeoutMs` (commands fail fast until then), or not listening `nearMs` after (its set-up
     * is retried meanwhile; writes do not wait for it).
     */
    async connected (timeoutMs = 5000, nearMs = 3000) {
      // Not events.once: it gives up on the first 'error', a refused connection that is retried.
      const ready = redis.status === 'ready' || await new Promise((resolve) => {
        const timer = setTimeout(() => { redis.off('ready', onReady); resolve(false) }, timeoutMs).unref()
        const onReady = () => { clearTimeout(timer); resolve(true) }
        redis.once('ready', onReady)
      })
      return ready && near.listening(AbortSignal.timeout(nearMs))
    },
    async deleteByPrefix (prefix) {
      let deleted = 0
      for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 })) {
        if (keys.length) deleted += await redis.unlink(...keys)
      }
      near.clear()
      await near.sync()
      return deleted
    },
    async close () {
      closed = true
      clearInterval(retry)
      near.close()
      await redis.quit().catch(() => redis.disconnect())
    }
  }
}
