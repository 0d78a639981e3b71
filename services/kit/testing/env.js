// What scripts/test.js hands every test file: the shared throwaway servers.
import pg from 'pg'
import { createDatabase as create } from './index.js'
import { migrate } from '../src/data/migrate.js'

export const adminUrl = required('TEST_DATABASE_URL')
export const redisUrl = required('TEST_REDIS_URL')

function required (name) {
  const v = process.env[name]
  if (!v) throw new Error(`${name} is not set: run the tests with npm test, which starts PostgreSQL and Redis`)
  return v
}

/** A fresh, empty database on the shared test server; returns its URL. */
export const createDatabase = (prefix) => create(adminUrl, prefix)

/**
 * A fresh database on the shared test server with a service's migrations (its definition, src/service.js) applied, then
 * `fill(client)` run on it (test rows); returns its URL.
 */
export async function migratedDatabase (service, fill = async () => {}) {
  const url = await createDatabase(service.name)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await migrate(client, service)
    await fill(client)
  } finally {
    await client.end()
  }
  return url
}
