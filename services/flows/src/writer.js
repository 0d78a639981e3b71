// Group commit, one writer per worker thread. Concurrent POSTs arriving while the previous flush is in
// flight (or within FLOWS_BATCH_WINDOW_MS, when set) join one group; their records are summed in memory by
// key as they arrive, and the group is written as ONE upsert in ONE transaction. Every request of the
// group is answered after that COMMIT (so 200 means durable: kill -9 loses nothing acknowledged), or
// every one gets the error: nothing of the group is stored, except when the connection was lost while
// the COMMIT was in flight, where nobody can know (504, see commit()). One flush in flight per worker: under
// load the next group fills while the current one commits, so the batch size follows the load and a
// hot key costs one row update per flush instead of one per request.
import { createHash } from 'node:crypto'
import {
  promClient as client, isUnavailable, connectionLost, primaryMoving, withClient, DURATION_BUCKETS, httpError,
  prepared as preparedFor, linkedSpan, requestContext
} from '@suite/kit'
import * as sql from './sql.js'

/** The writer's metrics, in the worker's registry (summed over workers by the kit at scrape time). */
function writerMetrics (registry) {
  const registers = [registry]
  return {
    flushes: new client.Counter({
      name: 'flows_flushes_total',
      help: 'group-commit flushes (one transaction each) by result',
      labelNames: ['result'],
      registers
    }),
    requests: new client.Histogram({
      name: 'flows_flush_requests',
      help: 'POST requests answered by one flush (group size)',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
      registers
    }),
    rows: new client.Histogram({
      name: 'flows_flush_rows',
      help: 'distinct keys upserted by one flush (after pre-aggregation)',
      buckets: [1, 4, 16, 64, 256, 1024, 4096, 16384],
      registers
    }),
    records: new client.Counter({
      name: 'flows_records_committed_total', help: 'flow records (POST array elements) committed', registers
    }),
    replays: new client.Counter({
      name: 'flows_idempotent_replays_total',
      help: 'POSTs whose Idempotency-Key was already committed (not counted again)',
      registers
    }),
    duration: new client.Histogram({
      name: 'flows_flush_duration_seconds', help: 'time of one flush transaction', buckets: DURATION_BUCKETS, registers
    })
  }
}

const newGroup = () => ({ rows: new Map(), records: 0, requests: [] })

/**
 * @param {{ pool: object, config: object, registry: object, log: object }} deps
 * @returns {{ write(records: object[], key?: string): Promise<{stored: number, replayed?: boolean}> }}
 */
export function createWriter ({ pool, config, registry, log }) {
  const metrics = writerMetrics(registry)
  const windowMs = config.FLOWS_BATCH_WINDOW_MS
  const maxRecords = config.FLOWS_FLUSH_MAX_ROWS
  const prepared = (q, values) => preparedFor(pool, q, values)
  let open = newGroup() // filling
  const closed = [] // full groups waiting for the flusher
  let flushing = false
  let timer = null
  let nextPrune = Date.now() + Math.random() * 3_600_000

  function write (records, key) {
    const fingerprint = key === undefined ? undefined : fingerprintOf(records)
    return new Promise((resolve, reject) => {
      // A request is never split (its records commit together); a group is closed before it would
      // pass FLOWS_FLUSH_MAX_ROWS, so one request larger than that is a group of its own.
      if (open.records > 0 && open.records + records.length > maxRecords) { closed.push(open); open = newGroup() }
      open.requests.push({ records, key, fingerprint, resolve, reject, traced: requestContext() })
      open.records += records.length
      addAll(open.rows, records)
      if (flushing) return // the flusher takes this group as soon as the current flush commits
      if (closed.length || open.records >= maxRecords) next()
      // No window (0): the group is written once this turn of the event loop has read every request
      // that came in with this one; the next group fills while it commits.
      else timer ??= windowMs ? setTimeout(next, windowMs) : setImmediate(next)
    })
  }

  async function next () {
    if (timer) windowMs ? clearTimeout(timer) : clearImmediate(timer)
    timer = null
    if (!closed.length && open.requests.length) { closed.push(open); open = newGroup() }
    const group = closed.shift()
    if (!group) return
    flushing = true
    let failed
    try {
      failed = await flush(group)
    } finally {
      flushing = false
    }
    // PostgreSQL unreachable (connection lost, or none to be had), or no primary after its wait
    // (PG_PRIMARY_WAIT_MS): the groups that waited behind this one would each wait as long to fail the
    // same way. Nothing of them was sent: 503 at once.
    if (failed && (connectionLost(failed) || primaryMoving(failed))) {
      for (const g of [...closed.splice(0), open]) for (const r of g.requests) r.reject(failed)
      open = newGroup()
    }
    // What came in meanwhile has already waited one flush: write it now, without a new window.
    if (closed.length || open.requests.length) next()
  }

  async function flush (group) {
    const end = metrics.duration.startTimer()
    try {
      // One span for the group's transaction, linked to every request it answers (kit tracing).
      const { replays, conflicts } = await linkedSpan('group commit', group.requests.map((r) => r.traced),
        () => ({ 'suite.batch.records': group.records, 'suite.batch.keys': group.rows.size }), () => commit(group))
      end()
      metrics.flushes.inc({ result: 'ok' })
      metrics.requests.observe(group.requests.length)
      for (const r of group.requests) {
        if (conflicts.has(r)) {
          r.reject(httpError(422, `Idempotency-Key "${r.key}" was already used with a different batch: ` +
          'nothing of this batch was stored'))
        } else if (replays.has(r)) {
          metrics.replays.inc()
          r.resolve({ stored: r.records.length, replayed: true })
        } else {
          metrics.records.inc(r.records.length)
          r.resolve({ stored: r.records.length })
        }
      }
    } catch (err) {
      metrics.flushes.inc({ result: 'error' })
      // A data error (class 22, e.g. a total past the bigint range) comes from one request's values,
      // and would fail every retry of the same group: write the requests one by one, so only the
      // request that caused it fails (422) and the others commit.
      if (group.requests.length > 1 && /^22/.test(err.code ?? '')) {
        log.warn({ err: err.message }, 'flush failed on a data error: retrying its requests one by one')
        for (const r of group.requests) {
          const single = newGroup()
          single.requests.push(r)
          single.records = r.records.length
          addAll(single.rows, r.records)
          await flush(single)
        }
        return
      }
      const answer = err.outcomeUnknown
        ? httpError(504, 'the database connection was lost while the batch was committing: it may or may not be ' +
        'stored. Send it again with the same Idempotency-Key (it then counts once); without a key it may count twice')
        : /^22/.test(err.code ?? '') ? dataError(err) : err
      if (!isUnavailable(err) && answer === err) log.error({ err }, 'flush failed, nothing of its group stored')
      else if (err.outcomeUnknown) {
        log.warn({ err: err.message }, 'connection lost during a commit: outcome unknown (504)')
      } else if (answer === err) log.warn({ err: err.message }, 'flush failed, nothing of its group stored (503)')
      for (const r of group.requests) r.reject(answer)
      return err
    }
  }

  // Returns the requests that were replays of an already committed Idempotency-Key (the same batch)
  // and those that reused one with another batch (conflicts); neither is counted. Whatever fails before
  // the committing statement is sent, or is an error PostgreSQL answers to it, leaves nothing
  // committed. Only a connection lost while it is in flight leaves the outcome unknown: the server may
  // have committed and died before answering. That error is marked `outcomeUnknown`.
  async function commit (group) {
    const keyed = group.requests.filter((r) => r.key !== undefined)
    return withClient(pool, async (conn) => {
      if (!keyed.length) { // the common case: one statement, which is its own transaction
        await committing(conn.query(upsert(group.rows)))
        metrics.rows.observe(group.rows.size)
        return { replays: new Set(), conflicts: new Set() }
      }
      try {
        await conn.query('BEGIN')
        const first = new Map() // key -> its first request in this group; later ones replay it
        for (const r of keyed) if (!first.has(r.key)) first.set(r.key, r)
        const { rows } = await conn.query(prepared(sql.claimKeys, [
          [...first.keys()],
          [...first.values()].map((r) => r.fingerprint)
        ]))
        const fresh = new Set(rows.map((row) => row.key))
        // The batch each key was first committed with: this group's first request, or an earlier one's.
        const original = new Map([...first].map(([key, r]) => [key, r.fingerprint]))
        const taken = [...first.keys()].filter((k) => !fresh.has(k))
        if (taken.length) {
          for (const row of (await conn.query(prepared(sql.keyFingerprints, [taken]))).rows) {
            original.set(row.key, row.fingerprint)
          }
        }
        const replays = new Set()
        const conflicts = new Set()
        for (const r of keyed) {
          if (fresh.has(r.key) && first.get(r.key) === r) continue // counted now
          // A key stored before fingerprints were (null) counts as the same batch, as it used to.
          const was = original.get(r.key)
          if (was === null || was.equals(r.fingerprint)) replays.add(r)
          else conflicts.add(r)
        }
        let flows = group.rows
        if (replays.size || conflicts.size) { // rare: sum again without them
          flows = new Map()
          for (const r of group.requests) if (!replays.has(r) && !conflicts.has(r)) addAll(flows, r.records)
        }
        if (flows.size) await conn.query(upsert(flows))
        await committing(conn.query('COMMIT'))
        metrics.rows.observe(flows.size)
        if (Date.now() > nextPrune) prune()
        return { replays, conflicts }
      } catch (err) {
        // On a lost connection the server rolls back by itself, and a ROLLBACK would only wait.
        if (!connectionLost(err)) await conn.query('ROLLBACK').catch(() => {})
        throw err
      }
    })
  }

  const committing = (query) => query.catch((err) => {
    if (connectionLost(err)) err.outcomeUnknown = true
    throw err
  })

  // Idempotency keys only need to outlive client retries; at most once an hour per worker.
  function prune () {
    nextPrune = Date.now() + 3_600_000
    pool.query(prepared(sql.pruneKeys, [config.FLOWS_IDEMPOTENCY_TTL_HOURS]))
      .catch((err) => log.warn({ err: err.message }, 'pruning idempotency keys failed'))
  }

  function upsert (rows) {
    const cols = [[], [], [], [], [], []]
    for (const r of rows.values()) {
      cols[0].push(r.hour); cols[1].push(r.src); cols[2].push(r.dest)
      cols[3].push(r.vpc); cols[4].push(r.tx); cols[5].push(r.rx)
    }
    return prepared(sql.upsert, cols)
  }

  return { write }
}

// What identifies a batch for its Idempotency-Key: a hash of its records' values in a fixed field
// order, so the same batch resent with its keys in another order or other spacing is still the same.
function fingerprintOf (records) {
  const values = records.map((f) => [f.hour, f.src_app, f.dest_app, f.vpc_id, f.bytes_tx, f.bytes_rx])
  return createHash('sha256').update(JSON.stringify(values)).digest()
}

// A data error (class 22) in the contract's words, not PostgreSQL's: in practice a total past bigint.
function dataError (err) {
  return httpError(422, err.code === '22003'
    ? 'a total of this batch would pass 9223372036854775807 (2^63-1): nothing of it was stored'
    : `the batch cannot be added to the totals (SQLSTATE ${err.code}): nothing of it was stored`)
}

// Sums records into rows by key. NUL cannot occur in the strings (the schema rejects it), so it
// separates the key's parts unambiguously.
function addAll (rows, records) {
  for (const f of records) {
    const key = `${f.hour}\0${f.src_app}\0${f.dest_app}\0${f.vpc_id}`
    const row = rows.get(key)
    if (row) {
      row.tx = add(row.tx, f.bytes_tx)
      row.rx = add(row.rx, f.bytes_rx)
    } else {
      rows.set(key, { hour: f.hour, src: f.src_app, dest: f.dest_app, vpc: f.vpc_id, tx: f.bytes_tx, rx: f.bytes_rx })
    }
  }
}

// Exact sums: a Number while it is a safe integer, a BigInt past 2^53 (pg sends both as digits).
function add (a, b) {
  if (typeof a === 'number') {
    const sum = a + b
    if (Number.isSafeInteger(sum)) return sum
  }
  return BigInt(a) + BigInt(b)
}
