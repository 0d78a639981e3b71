// One pg Pool per instance, whose queries are bounded in all by their timeouts, and the ways the kit
// queries it: a prepared statement, a document built by PostgreSQL, several statements on one
// connection.
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { READ_ONLY, connectionLost, connectionStale, connectionOptions, primaryMoving } from './connection.js'
import { childSpan } from '../telemetry/tracing.js'

/**
 * A pg Pool whose `query` (promise form) bounds the whole wait of a query by its `query_timeout`: the
 * wait for a free connection, a new connection's connect, and the answer, together (withClient). pg
 * alone would let a query that waited PG_CONNECT_TIMEOUT_MS for a connection then wait
 * PG_QUERY_TIMEOUT_MS more.
 */
class TimedPool extends pg.Pool {
  // Bumped when a connection turns out stale: every connection made before is dropped when next lent
  // out (withClient), so requests reach the new primary at once instead of each finding its own
  // connection dead, one timeout after another.
  generation = 0
  query (config, values, callback) {
    if ([config, values, callback].some((a) => typeof a === 'function')) return super.query(config, values, callback)
    return withClient(this, (conn) => conn.query(config, values))
  }
}

/** @returns {pg.Pool} */
export function createPool (config, log, applicationName) {
  const pool = new TimedPool({
    ...connectionOptions(config.DATABASE_URL, config.DATABASE_PASSWORD),
    max: config.PG_POOL_MAX,
    // Connections above `min` close after 30 s idle. A new one costs a request its connect and the
    // re-preparing of its statements (milliseconds, in the latency tail), so by default none close.
    min: Math.min(config.PG_POOL_MIN ?? config.PG_POOL_MAX, config.PG_POOL_MAX),
    connectionTimeoutMillis: config.PG_CONNECT_TIMEOUT_MS,
    // Two bounds on a query: the server's (the statement is cancelled, the connection stays usable)
    // and the client's, for a server that answers nothing at all (frozen, cut off by the network):
    // without it a query waits forever. A query timed out on the client side costs its connection.
    // It counts the wait for a connection too, and bounds a whole transaction (withClient).
    statement_timeout: config.PG_STATEMENT_TIMEOUT_MS || undefined,
    query_timeout: config.PG_QUERY_TIMEOUT_MS || undefined,
    idleTimeoutMillis: 30_000,
    application_name: applicationName,
    // Not a pg option: read by queryDocument. Off for poolers that share server sessions between
    // clients (PgBouncer in transaction mode, the embedded PGlite), where statement names collide.
    prepareStatements: config.PG_PREPARED_STATEMENTS,
    // Not a pg option either: read by withClient.
    primaryWaitMs: config.PG_PRIMARY_WAIT_MS ?? 0,
    // Every connection is to the primary: behind a Service that follows the primary (CloudNativePG's
    // -rw) a connection made during a failover can reach an instance that is a standby, whose reads
    // may be older than a write already acknowledged. Refused, it counts as unavailable (503).
    onConnect: async (client) => {
      const { rows: [{ standby }] } = await client.query('SELECT pg_is_in_recovery() AS standby')
      if (standby) throw Object.assign(new Error('connected to a standby, not the primary'), { code: READ_ONLY })
    }
  })
  pool.on('connect', (client) => { client[GENERATION] = pool.generation })
  // An idle connection dies when PostgreSQL restarts; without this listener the process would crash.
  pool.on('error', (err) => {
    pool.generation++
    log.warn({ err: err.message }, 'idle PostgreSQL connection lost')
  })
  return pool
}

const GENERATION = Symbol('pool generation')

/**
 * Opens the pool's `min` connections (at least one) at once, so that the first requests after a start
 * (a new pod under the autoscaler) do not each wait for one; tried again every RETRY_MS until `signal`
 * aborts. A new pod's first connections may be refused for seconds: the database's node has not yet
 * put its address in its NetworkPolicy rules. PostgreSQL still away, or refusing this client: logged;
 * the pool connects later.
 * Resolves to whether it connected.
 */
export async function warmPool (pool, log, signal = AbortSignal.timeout(0)) {
  const RETRY_MS = 250
  for (;;) {
    const n = Math.max(1, pool.options.min)
    const clients = await Promise.allSettled(Array.from({ length: n }, () => pool.connect()))
    for (const c of clients) if (c.status === 'fulfilled') c.value.release()
    const failed = clients.find((c) => c.status === 'rejected')
    if (!failed) return true
    // Refused or unanswered: tried again. PostgreSQL's own answer (a wrong password) would not change.
    if (signal.aborted || !connectionLost(failed.reason)) {
      log.warn({ err: failed.reason.message }, 'PostgreSQL not reachable at start; connecting on demand')
      return false
    }
    await sleep(RETRY_MS, undefined, { signal }).catch(() => {})
  }
}

/**
 * A pg query config for `{ name, text }` with `values`: prepared once per connection under `name`,
 * unless PG_PREPARED_STATEMENTS=false (its span is still named by it: `summary`, which pg ignores).
 */
export function prepared (pool, { name, text }, values) {
  return { name: pool.options.prepareStatements ? name : undefined, summary: name, text, values }
}

// A statement's span is named by its prepared statement's name, or its first keyword (BEGIN, COMMIT…):
// never its text or a bound value.
const statementName = (query) =>
  query.name ?? query.summary ?? /^\s*(\w+)/.exec(query.text)?.[1]?.toUpperCase() ?? 'query'
const statementAttributes = (pool, query) => ({
  'db.system.name': 'postgresql',
  'db.namespace': pool.options.database,
  'db.query.summary': statementName(query),
  'server.address': pool.options.host,
  'server.port': Number(pool.options.port ?? 5432)
})

/**
 * Runs a query whose single column `json` holds a whole response document, built by PostgreSQL so
 * that a request is one round trip. Returns the parsed document, or null when there is no row.
 * `name` makes pg prepare the statement once per connection (unless PG_PREPARED_STATEMENTS=false).
 */
export async function queryDocument (pool, query, values) {
  const { rows } = await pool.query(prepared(pool, query, values))
  return rows.length ? rows[0].json : null
}

/**
 * Runs `fn(conn)` on one connection of the pool: `conn.query` takes pg's arguments, for several
 * statements on one connection (a transaction). All of it — the wait for the connection and every
 * statement — has the pool's query_timeout (PG_QUERY_TIMEOUT_MS) in all, on the client's clock: a frozen
 * or cut-off server fails it within that bound, however many statements were to come. A connection
 * that dies while lent out emits 'error' on its client, which would end the worker thread without a
 * listener: here it only fails the statement in progress; a connection lost, or left with a statement
 * timed out on the client side, is dropped instead of going back to the pool.
 * While the primary moves it waits for it first, up to PG_PRIMARY_WAIT_MS (primaryConnection); the
 * query_timeout then counts from the connect that found it.
 */
export async function withClient (pool, fn) {
  const { client, since } = await primaryConnection(pool)
  const timeout = pool.options.query_timeout
  const deadline = timeout ? since + timeout : Infinity
  let lost
  const onError = (err) => { lost ??= err }
  client.on('error', onError)
  const conn = {
    query (config, values) {
      const query = typeof config === 'string'
        ? { text: config, values }
        : { ...config, ...(values !== undefined && { values }) }
      if (deadline !== Infinity) query.query_timeout = Math.max(1, Math.round(deadline - performance.now()))
      return childSpan(
        statementName(query),
        () => statementAttributes(pool, query),
        () => client.query(query).catch((err) => {
          if (connectionStale(err)) lost ??= err
          throw err
        })
      )
    }
  }
  try {
    return await fn(conn)
  } finally {
    client.off('error', onError)
    if (lost) pool.generation++
    client.release(lost)
  }
}

/**
 * A connection of the pool to the primary. A connect that meets a primary on its way (primaryMoving)
 * waits for it, up to the pool's `primaryWaitMs` in all, then connects again; while one waits, the
 * requests that come after it join the wait instead of each trying a connect that hangs or is refused.
 * Resolves to { client, since }: since, when the connect that got it began.
 */
async function primaryConnection (pool) {
  const until = performance.now() + pool.options.primaryWaitMs
  for (;;) {
    const moving = pool[MOVING]
    if (moving && !(await primaryBack(moving, until))) throw moving.error
    const since = performance.now()
    try {
      return { client: await currentClient(pool), since }
    } catch (err) {
      // A wait for a free connection that timed out (not the connect itself) counts only while the
      // pool knows its primary is on its way: its connections were the ones that hung then.
      const waiting = pool[MOVING] && /timeout exceeded when trying to connect/.test(err.message)
      if (!(primaryMoving(err) || waiting) || performance.now() >= until) throw err
      if (!pool[MOVING]) {
        const wait = { until, error: err }
        pool[MOVING] = wait
        wait.back = tryPrimary(pool, wait)
      } else if (!waiting) pool[MOVING].error = err
    }
  }
}

// A connection of the pool, any made before a stale one dropped: likely to the same server.
async function currentClient (pool) {
  let client = await pool.connect()
  while (client[GENERATION] < pool.generation) {
    client.release(true)
    client = await pool.connect()
  }
  return client
}

const RETRY_MS = 250
const MOVING = Symbol('the primary on its way')

/**
 * Waits for `wait` to end — a connect of the pool reached the primary again, or failed otherwise than
 * on its way — or for `until`; resolves to whether there is time left to connect. One connect every
 * RETRY_MS tries for all of a pool's waiting requests: a try that reaches a standby costs it a whole
 * connection (its process, its authentication).
 */
async function primaryBack (wait, until) {
  if (performance.now() >= until) return false
  wait.until = Math.max(wait.until, until)
  const timer = new AbortController()
  const late = sleep(until - performance.now(), undefined, { signal: timer.signal }).catch(() => {})
  await Promise.race([wait.back, late])
  timer.abort()
  return performance.now() < until
}

async function tryPrimary (pool, wait) {
  try {
    while (performance.now() < wait.until) {
      await sleep(RETRY_MS)
      try {
        (await currentClient(pool)).release()
        return
      } catch (err) {
        if (!primaryMoving(err)) return
        wait.error = err
      }
    }
  } finally {
    if (pool[MOVING] === wait) pool[MOVING] = undefined
  }
}
