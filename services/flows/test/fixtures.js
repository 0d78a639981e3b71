// A migrated, empty flows database and the service on it, plus helpers to post and to read totals.
import { fileURLToPath } from 'node:url'
import { startService, send } from '@suite/kit/testing'
import { migratedDatabase } from '@suite/kit/testing/env'
import service from '../src/service.js'
export { get, metric } from '@suite/kit/testing'

export const entry = fileURLToPath(new URL('../src/cli.js', import.meta.url))
export { service }

/** A fresh migrated database; returns its URL. */
export const flowsDatabase = () => migratedDatabase(service)

// Load shedding off: these tests check answers and totals, and on a CPU-starved shared machine the
// kit's shedding (event-loop delay/utilization) would answer some requests 503 by design.
export function startFlows (env) {
  return startService({ entry, env: { WORKERS: '1', ...env } })
}

/** POST a JSON body (an array, or any text) to /flows; returns { status, headers, body }. */
export const post = (base, body, headers = {}) => send(base, 'POST', '/flows', body, headers)

export const flow = (src, dest, vpc, tx, rx, hour) => ({
  src_app: src, dest_app: dest, vpc_id: vpc, bytes_tx: tx, bytes_rx: rx, hour
})
export const keyOf = (f) => `${f.hour}|${f.src_app}|${f.dest_app}|${f.vpc_id}`

/** Adds records into a Map key -> { tx, rx } (BigInt, exact). */
export function sumInto (sums, records) {
  for (const f of records) {
    const s = sums.get(keyOf(f)) ?? { tx: 0n, rx: 0n }
    s.tx += BigInt(f.bytes_tx)
    s.rx += BigInt(f.bytes_rx)
    sums.set(keyOf(f), s)
  }
  return sums
}

/** Every total in the table, as a Map key -> { tx, rx } (BigInt: read as text, exact). */
export async function storedTotals (db) {
  const { rows } = await db.query(
    'SELECT hour, src_app, dest_app, vpc_id, bytes_tx::text AS tx, bytes_rx::text AS rx FROM flows'
  )
  return new Map(rows.map((r) => [keyOf(r), { tx: BigInt(r.tx), rx: BigInt(r.rx) }]))
}
