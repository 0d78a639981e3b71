// What the cache's stores share: the stored value's layout, the error of a bypassed Redis, the
// bounded in-process map the near cache and the memory store keep their entries in, and the
// attributes of a Redis command's span.
import { LRUCache } from 'lru-cache'

/** What a store operation rejects with while the circuit breaker keeps Redis out of the way. */
export const BYPASSED = Object.assign(new Error('Redis bypassed by the circuit breaker'), { code: 'CACHE_BYPASSED' })

/**
 * Bytes "<version>\n<json>" → { version, value } (value null: not found; else a view of those bytes);
 * "<version>" → { version } (a tombstone).
 */
export function parse (raw) {
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
export function ownBytes (data) {
  const bytes = Buffer.allocUnsafeSlow(typeof data === 'string' ? Buffer.byteLength(data) : data.length)
  if (typeof data === 'string') bytes.write(data)
  else data.copy(bytes)
  return bytes
}

/**
 * A map of `{ value, … }` entries (value: a Buffer with memory of its own, see ownBytes) within
 * `maxBytes`, the least recently used evicted first; an entry larger than the bound is not kept. An
 * entry's size is an upper bound of what it holds: its bytes, the key (V8 keeps a string in 1 or 2 bytes
 * a character), the Buffer's objects and the map's own record. The near cache and the memory store
 * each hold one.
 */
export function boundedEntries (maxBytes) {
  const sizeCalculation = (entry, key) => 2 * key.length + entry.value.length + 200
  const entries = new LRUCache({ maxSize: maxBytes, sizeCalculation })
  return {
    get: (key) => entries.get(key),
    set: (key, entry) => { entries.set(key, entry) },
    delete: (key) => { entries.delete(key) },
    clear: () => entries.clear(),
    keys: () => entries.keys(),
    bytes: () => entries.calculatedSize
  }
}

/** A Redis command's span attributes (OpenTelemetry's database conventions). */
export const redisAttributes = (redis, operation, summary = operation) => ({
  'db.system.name': 'redis',
  'db.operation.name': operation,
  'db.query.summary': summary,
  'db.namespace': String(redis.options.db ?? 0),
  'server.address': redis.options.host,
  'server.port': redis.options.port
})
