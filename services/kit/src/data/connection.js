// How the kit connects to PostgreSQL and what a failed query says about the connection: plain
// functions, apart from the pool (pg.js), so that the data commands' threads load neither it nor the
// tracing it reports to.
import { parse } from 'pg-connection-string'

/**
 * pg's connection options for a URL and a password kept out of it (DATABASE_PASSWORD, from a
 * Secret). pg merges the parsed `connectionString` over its other options, and a URL without a
 * password parses to `password: ''`, which would silently replace the one given: so the URL is
 * parsed here and the password set after. No password given: the URL's own, or libpq's PGPASSWORD.
 */
export function connectionOptions (url, password) {
  const options = { ...parse(url) }
  if (password !== undefined) options.password = password
  else if (options.password === '') delete options.password
  return options
}

// SQLSTATEs that mean "the database cannot answer now, retry", not "the query is wrong": connection
// failures (08), too many connections or out of resources (53), shutting down (57P0x), a statement
// cancelled by its timeout (57014), a lock not had within lock_timeout (55P03) — a load's swap or a
// long reader holds it — and a write refused by a server that is no longer the primary (25006: a
// failover or switchover demoted it); and the network's own (a database Service whose name does not
// resolve yet counts: it is starting; one without endpoints is unreachable: kube-proxy answers so while
// a failover moves its primary), and the pg client's own timeouts.
const UNAVAILABLE = /^(08|53|57P0|57014$|55P03$|25006$)/
const NETWORK = [
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH'
]
export function isUnavailable (err) {
  return UNAVAILABLE.test(err?.code ?? '') || NETWORK.includes(err?.code) ||
    /timeout exceeded when trying to connect|Connection terminated|Query read timeout/i.test(err?.message ?? '')
}

/**
 * Whether `err` means the connection was lost with a statement in flight (dropped, reset, timed out on
 * the client side, the server killed or shutting down), rather than the server answering that the
 * statement failed. Only then can a COMMIT in flight have committed without the client knowing.
 */
export function connectionLost (err) {
  const code = err?.code ?? ''
  return !/^[0-9A-Z]{5}$/.test(code) || /^(08|57P0)/.test(code)
}

/**
 * Whether the connection `err` came on is of no more use: lost (above), or to a server that is no
 * longer the primary (25006, read_only_sql_transaction). The server that answered so is likely gone
 * for every connection of the pool: a failover, a switchover, a restart.
 */
export const connectionStale = (err) => connectionLost(err) || err?.code === READ_ONLY

/**
 * Whether a connect that failed with `err` may have met a primary on its way (a failover, a
 * switchover, a restart): the server refused or dropped the connection, said it is starting or
 * shutting down (57P0x), answered as a standby, or nothing answered the connect at all — a Service
 * without endpoints while its primary moves is a black hole where a NetworkPolicy drops what it does
 * not admit. Nothing was sent on it, so connecting again is safe. Not a wait for a free connection of
 * the pool: that is the pool's own load, which waiting would only add to.
 */
export function primaryMoving (err) {
  const code = err?.code ?? ''
  return /^(57P0|25006$)/.test(code) || ['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH'].includes(code) ||
    /Connection terminated (unexpectedly|due to connection timeout)/i.test(err?.message ?? '')
}

/** The SQLSTATE of a write refused by a standby (read_only_sql_transaction). */
export const READ_ONLY = '25006'
