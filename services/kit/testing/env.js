// What scripts/test.js hands every test file: the shared throwaway servers.
import { createDatabase as create } from './index.js'

export const adminUrl = required('TEST_DATABASE_URL')
export const redisUrl = required('TEST_REDIS_URL')

function required (name) {
  const v = process.env[name]
  if (!v) throw new Error(`${name} is not set: run the tests with npm test, which starts PostgreSQL and Redis`)
  return v
}

/** A fresh, empty database on the shared test server; returns its URL. */
export const createDatabase = (prefix) => create(adminUrl, prefix)
