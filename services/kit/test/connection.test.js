// What a failed query says: the database cannot answer now (503, retry) or the query is wrong (500).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { isUnavailable } from '../src/data/connection.js'

const error = (code, message = 'x') => Object.assign(new Error(message), { code })

test('the database out of reach, shutting down, demoted or out of time is unavailable', () => {
  for (const code of [
    // A Service without endpoints (kube-proxy: host unreachable), a route gone, a refused or reset connection.
    'EHOSTUNREACH', 'ENETUNREACH', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND',
    // SQLSTATEs: connection failure, too many connections, admin shutdown, statement timeout, lock
    // timeout, a write to a standby.
    '08006', '53300', '57P01', '57014', '55P03', '25006'
  ]) assert.equal(isUnavailable(error(code)), true, code)
  assert.equal(isUnavailable(error(undefined, 'Connection terminated unexpectedly')), true)
  assert.equal(isUnavailable(error(undefined, 'timeout exceeded when trying to connect')), true)
})

test('a query the database refused on its merits is not unavailable', () => {
  for (const code of ['23505', '42P01', '22P02', '40001']) {
    assert.equal(isUnavailable(error(code)), false, code)
  }
  assert.equal(isUnavailable(new TypeError('x is not a function')), false)
})
