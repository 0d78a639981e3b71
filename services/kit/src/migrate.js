// Versioned SQL migrations: every `NNN_name.sql` of a folder, in order, each in its own transaction,
// recorded in schema_migrations. Safe to run again and from several pods at once (advisory lock).
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'

const LOCK_KEY = 7_310_001 // any constant shared by every migrate run against one database

/**
 * @param {{ query: Function }} db  a pg Pool or Client
 * @param {string} dir  folder of .sql files
 * @returns {Promise<string[]>} the versions applied by this run
 */
export async function migrate (db, dir, log = () => {}) {
  const files = (await readdir(dir)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort()
  const client = typeof db.connect === 'function' && db.totalCount !== undefined ? await db.connect() : db
  const applied = []
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY])
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
        await client.query('ROLLBACK')
        throw new Error(`migration ${file} failed: ${err.message}`)
      }
      applied.push(version)
      log(`applied migration ${version}`)
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {})
    if (client !== db) client.release()
  }
  return applied
}
