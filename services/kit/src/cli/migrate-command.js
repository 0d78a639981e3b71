// `migrate`: the service's SQL migrations applied, waiting for a database that is still starting.
import { setTimeout } from 'node:timers/promises'
import { createPool } from '../data/pg.js'
import { isUnavailable } from '../data/connection.js'
import { migrate, MigrationError } from '../data/migrate.js'
import { UserError } from './args.js'

// The lock waits: --wait, but at least this (a concurrent migrate that is about to finish must not
// fail a `--wait 0` run such as load's).
export const MIN_LOCK_WAIT_S = 5

/** A command that failed for a reason it can say in one line (a refused load, a failed migration): exit 1. */
export class CommandError extends UserError {}

/**
 * Applies the migrations. `waitSeconds`: while PostgreSQL is unreachable, retry this long (a pod
 * that starts with its database, as in a fresh `helm install`, migrates as soon as it answers);
 * and the longest wait for each lock (the advisory lock another pod's migrate holds, a table a
 * migration changes), at least MIN_LOCK_WAIT_S. The service's statement timeout does not apply.
 * A failure is a CommandError: one line, exit 1.
 */
export async function migrateCommand (service, { config, log }, waitSeconds = 0) {
  // No request timeouts: a migration, or the wait for another pod's migration lock, may be long.
  const settings = { ...config, PG_POOL_MAX: 1, PG_STATEMENT_TIMEOUT_MS: 0, PG_QUERY_TIMEOUT_MS: 0 }
  const pool = createPool(settings, log, `${service.name}-migrate`)
  try {
    await reachable(pool, log, waitSeconds)
    const lockTimeoutMs = Math.max(waitSeconds, MIN_LOCK_WAIT_S) * 1000
    const applied = await migrate(pool, service, { log: (m) => log.info(m), lockTimeoutMs })
    log.info(`${applied.length} migration(s) applied, schema up to date`)
  } catch (err) {
    if (err instanceof MigrationError || err.severity !== undefined || isUnavailable(err)) {
      throw new CommandError(err.message)
    }
    throw err
  } finally {
    await pool.end()
  }
}

// Resolves once PostgreSQL answers; a server still starting is waited for, up to `waitSeconds`.
async function reachable (pool, log, waitSeconds) {
  const deadline = Date.now() + waitSeconds * 1000
  for (let said = false; ; said = true) {
    try {
      await pool.query('SELECT 1')
      return
    } catch (err) {
      // Not a server still starting: a refused password, a certificate that does not verify.
      if (!isUnavailable(err)) throw new CommandError(`cannot connect to PostgreSQL: ${err.message}`)
      if (Date.now() >= deadline) {
        const after = waitSeconds ? ` after ${waitSeconds} s (--wait)` : ''
        throw new CommandError(`PostgreSQL unreachable${after}: ${err.message}`)
      }
      if (!said) log.info({ err: err.message }, `waiting up to ${waitSeconds} s for PostgreSQL`)
      await setTimeout(1000)
    }
  }
}
