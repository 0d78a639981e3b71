// Versioned SQL migrations: every `NNN_name.sql` of a folder, in order, each in its own transaction,
// recorded in schema_migrations. Safe to run again and from several pods at once (advisory lock).
// A migration runs under its own session settings, not the service's: no statement timeout (an
// index build takes what it takes), and every lock wait — the advisory lock behind another pod's
// migrate, a table lock behind a long reader — bounded by `lockTimeoutMs`.
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'

const LOCK_KEY = 7_310_001 // any constant shared by every migrate run against one database

/** A migration run that failed; its message is one line (the file, and PostgreSQL's reason). */
export class MigrationError extends Error {}

/**
 * @param {{ query: Function }} db  a pg Pool or Client
 * @param {string} dir  folder of .sql files
 * @param {{ lockTimeoutMs?: number }} [options]  the longest wait for any one lock (0: no bound)
 * @returns {Promise<string[]>} the versions applied by this run
 */
export async function migrate (db, dir, log = () => {}, { lockTimeoutMs = 0 } = {}) {
  const files = (await readdir(dir)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort()
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
      throw new MigrationError(`another migrate run has held the migration lock for more than ${seconds}; it may still be running (pg_stat_activity shows it)`)
    }
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
    const { rows } = await client.query('SELECT version FROM schema_migrations')
    const done = new Set(rows.map((r) => r.version))
    for (const file of files) {
      const version = file.replace(/\.sql$/, '')
      if (done.has(version)) continue
      const sql = await readFile(join(dir, file), 'utf8')
      await client.query('BEGIN')
      try {
        await client.query(sql)
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version])
        await client.query('COMMIT')
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {})
        const why = err.code === '55P03' ? `waited more than ${seconds} for a lock: a long transaction holds a table it changes` : err.message
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
