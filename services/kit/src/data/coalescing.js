// Request coalescing: reads that arrive together share one database round trip, and never get an
// answer older than a write acknowledged before they were sent.
import { prepared } from './pg.js'
import { linkedSpan, requestContext } from '../telemetry/tracing.js'

/**
 * Reads of one key share one load, the read side of group commit: a read that arrives while its key's
 * load is in flight waits for that load to end and then shares the next one with every read that
 * arrived meanwhile. A read never gets the answer of a load that began before it arrived, so it sees
 * every write acknowledged before it was sent: sharing changes the cost, never the answer. Under a
 * crowd of identical reads (dashboards polling one page) one query answers them all; alone, a read
 * runs its load at once. A read waits for at most two loads (the one in flight, then its own), each
 * bounded by the load's own timeouts; nothing is kept once a key's loads are done.
 * Returns read(key, load): load() is the first waiting read's, called once for all of them.
 */
export function sharedReads () {
  const keys = new Map() // key -> { running, next: { promise, resolve, reject, load, contexts } | null }
  function start (key, state) {
    const group = state.next
    state.next = null
    state.running = true
    linkedSpan('shared read', group.contexts, () => ({}), () => new Promise((resolve) => resolve(group.load())))
      .then(group.resolve, group.reject)
      .finally(() => {
        state.running = false
        if (state.next) start(key, state)
        else keys.delete(key)
      })
  }
  return function read (key, load) {
    let state = keys.get(key)
    if (!state) keys.set(key, state = { running: false, next: null })
    state.next ??= { ...Promise.withResolvers(), load, contexts: [] }
    const traced = requestContext()
    if (traced) state.next.contexts.push(traced)
    const { promise } = state.next
    if (!state.running) start(key, state)
    return promise
  }
}

/**
 * Loads by id, batched: the ids asked in one turn of the event loop go to PostgreSQL as ONE query,
 * `loadMany(ids)` resolving to a Map id → row (an id it lacks resolves to undefined). The cache misses
 * that came in together so cost one round trip, one statement and one wake-up of a backend instead of
 * one each. A batch holds at most `max` ids (the next ones start another); a failure fails each read
 * of its batch, as their own queries would have. A read is sent after it arrived, so it sees every
 * write acknowledged before it: batching changes the cost, never the answer.
 * Returns load(id).
 */
export function batchedLoads (loadMany, { max = 100 } = {}) {
  let batch = null // id -> its read, this turn
  let contexts = null // the traced requests of this batch (one span, linked to each)
  function run (ids, traced) {
    linkedSpan('batched load', traced, () => ({ 'suite.batch.ids': ids.size }), () => loadMany([...ids.keys()])).then(
      (rows) => { for (const [id, read] of ids) read.resolve(rows.get(id)) },
      (err) => { for (const read of ids.values()) read.reject(err) })
  }
  return function load (id) {
    if (!batch || batch.size >= max) {
      const ids = batch = new Map()
      const traced = contexts = []
      setImmediate(() => { if (batch === ids) batch = null; run(ids, traced) })
    }
    const traced = requestContext()
    if (traced) contexts.push(traced)
    let read = batch.get(id)
    if (!read) batch.set(id, read = Promise.withResolvers())
    return read.promise
  }
}

/**
 * batchedLoads over one prepared statement: `query` takes the ids as an array in $1 and returns a
 * row per id found, with its `id` column. Returns load(id), resolving to that id's row or undefined.
 */
export function batchedRows (pool, query) {
  return batchedLoads(async (ids) => new Map(
    (await pool.query(prepared(pool, query, [ids]))).rows.map((row) => [row.id, row])
  ))
}
