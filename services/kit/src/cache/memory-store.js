// The store without Redis: each worker's own memory, the least recently used evicted first once the
// entries take more than CACHE_MEMORY_MAX_BYTES. Another process (a second replica) cannot invalidate
// it, so an entry lives at most CACHE_MEMORY_TTL_MS from the moment its data was read: that is how
// stale a read can be after a write on another replica. (Writes on this process invalidate every
// worker at once: createCache's broadcast.)
import { boundedEntries, ownBytes, parse } from './entries.js'

export function memoryStore (config) {
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
    nearState: () => 'off',
    nearSetupFailures: () => 0,
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
