// Versioned SQL migrations: every `NNN_name.sql` of a service's folder, in order, each in its own
// transaction, recorded in schema_migrations under (service, version): services that share one
// database may each have a `001_init.sql`. Safe to run again and from several pods at once
// (advisory lock). A migration runs under its own session settings, not the service's: no statement
// timeout (an index build takes what it takes), and every lock wait — the advisory lock behind
// another pod's migrate, a table lock behind a long reader — bounded by `lockTimeoutMs`.
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const LOCK_KEY = 7_310_001 // any constant shared by every migrate run against one database

// The kit's own table. A database migrated before versions were keyed by service has the table
// without `service` (version was the primary key): the column is added and the old key dropped, and
// its rows, `service` NULL, are claimed below by the service whose folder holds a file of that name.
const KEYED_BY_SERVICE = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    service    text,
    version    text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now());
  ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS service text;
  ALTER TABLE schema_migrations DROP CONSTRAINT IF EXISTS schema_migrations_pkey;
  CREATE UNIQUE INDEX IF NOT EXISTS schema_migrations_service_version ON schema_migrations (service, version)`
const CLAIM = 'UPDATE schema_migrations SET service = $1 WHERE service IS NULL AND version = ANY($2::text[])'
const APPLIED = 'SELECT version FROM schema_migrations WHERE service = $1'
const RECORD = 'INSERT INTO schema_migrations (service, version) VALUES ($1, $2)'

/** A migration run that failed; its message is one line (the file, and PostgreSQL's reason). */
export class MigrationError extends Error {}

/**
 * @param {{ query: Function }} db  a pg Pool or Client
 * @param {{ name: string, migrations: string|URL }} service  the service's name (the key of its
 *   versions) and its folder of .sql files: a service definition (src/service.js) is one
 * @param {{ log?: Function, lockTimeoutMs?: number }} [options]  lockTimeoutMs: the longest wait for
 *   any one lock (0: no bound)
 * @returns {Promise<string[]>} the versions applied by this run
 */
export async function migrate (db, { name, migrations }, { log = () => {}, lockTimeoutMs = 0 } = {}) {
  if (!name) throw new TypeError('migrate: the service has no name (its versions are keyed by it)')
  const dir = migrations instanceof URL ? fileURLToPath(migrations) : migrations
  const files = (await readdir(dir)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort()
  const versions = files.map((f) => f.replace(/\.sql$/, ''))
  const client = typeof db.connect === 'function' && db.totalCount !== undefined ? await db.connect() : db
  const applied = []
  const seconds = `${Math.round(lockTimeoutMs / 1000)} s`
  try {
    await client.query('SET statement_timeout = 0')
    await client.query(`SET lock_timeout = ${Math.round(lockTimeoutMs)}`)
    try {
      await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY])
    } catch (err) {
      if (err.code !== '55P03') throw err
      throw new MigrationError(`another migrate run has held the migration lock for more than ${seconds}; ` +
        'it may still be running (pg_stat_activity shows it)')
    }
    await client.query(KEYED_BY_SERVICE)
    await client.query(CLAIM, [name, versions])
    const { rows } = await client.query(APPLIED, [name])
    const done = new Set(rows.map((r) => r.version))
    for (const [i, file] of files.entries()) {
      const version = versions[i]
      if (done.has(version)) continue
      const sql = await readFile(join(dir, file), 'utf8')
      await client.query('BEGIN')
      try {
        await client.query(sql)
        await client.query(RECORD, [name, version])
        await client.query('COMMIT')
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {})
        const why = err.code === '55P03'
          ? `waited more than ${seconds} for a lock: a long transaction holds a table it changes`
          : err.message
        throw new MigrationError(`migration ${file} failed, rolled back: ${why}`)
      }
      applied.push(version)
      log(`applied migration ${version}`)
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {})
    // A client that goes on serving (npm start's) gets its own settings back.
    await client.query('RESET statement_timeout; RESET lock_timeout').catch(() => {})
    if (client !== db) client.release()
  }
  return applied
}
