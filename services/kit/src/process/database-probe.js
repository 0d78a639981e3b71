// PostgreSQL as this pod sees it, for /readyz: `SELECT 1` every PROBE_INTERVAL_MS on a connection of
// its own (one per process, not from the request pools, so it never waits behind requests nor takes a
// connection from them), bounded by the same connect and query timeouts. The result is shared with
// every worker through `state` (0 unknown, 1 ok, 2 down), read without a message or a wait.
import { createPool } from '../data/pg.js'

const PROBE_INTERVAL_MS = 1000

/** Returns { state: Int32Array over shared memory, stop() }. */
export function probeDatabase (config, log, name) {
  const state = new Int32Array(new SharedArrayBuffer(4))
  // allowExitOnIdle: the idle probe connection never holds the process open at exit. It says what it
  // finds at once: it does not wait for a primary on its way as requests may (PG_PRIMARY_WAIT_MS).
  const settings = { ...config, PG_POOL_MAX: 1, PG_POOL_MIN: 0, PG_PRIMARY_WAIT_MS: 0 }
  const pool = createPool(settings, log, `${name}-probe`)
  pool.options.allowExitOnIdle = true
  let timer
  let stopped = false
  const check = async () => {
    const up = await pool.query('SELECT 1').then(() => true, () => false)
    Atomics.store(state, 0, up ? 1 : 2)
    if (stopped) return
    timer = setTimeout(check, PROBE_INTERVAL_MS)
    timer.unref()
  }
  check()
  return { state, stop () { stopped = true; clearTimeout(timer); pool.end().catch(() => {}) } }
}

/** The probe's last word, as /readyz says it. */
export const databaseStateOf = (state) => () => ['unknown', 'ok', 'down'][Atomics.load(state, 0)]
