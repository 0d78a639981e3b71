// The per-request logger: lines carry the request's id and obey the levels, and a request that logs
// nothing costs no pino child.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import pino from 'pino'
import { lazyRequestLogger } from '../src/telemetry/logger.js'

function capture (level) {
  const lines = []
  const out = new Writable({
    write (chunk, enc, done) { lines.push(...chunk.toString().trim().split('\n').map((l) => JSON.parse(l))); done() }
  })
  const logger = pino({ level }, out)
  let children = 0
  const parent = new Proxy(logger, {
    get: (target, key) => key === 'child'
      ? (...args) => { children++; return target.child(...args) }
      : Reflect.get(target, key)
  })
  return { parent, lines, children: () => children }
}

test('a request logger makes its pino child only for a line that is written, and binds the request id there', () => {
  const { parent, lines, children } = capture('info')
  const log = lazyRequestLogger(parent, { reqId: 'r-1' }, {})
  log.debug('dropped')
  log.trace({ a: 1 }, 'dropped')
  assert.deepEqual([log.isLevelEnabled('debug'), log.isLevelEnabled('info')], [false, true])
  assert.equal(children(), 0, 'lines below the level, and asking for the level, make no child')
  assert.equal(log.level, 'info')
  log.info({ n: 1 }, 'kept')
  log.error('also kept')
  log.debug('dropped by the child')
  assert.equal(children(), 1, 'one child, made once')
  assert.deepEqual(
    lines.map((l) => [l.level, l.reqId, l.msg, l.n]),
    [[30, 'r-1', 'kept', 1], [50, 'r-1', 'also kept', undefined]]
  )
})

test('a route\'s own level decides, silent writes nothing, and child() binds on top of the request id', () => {
  const { parent, lines } = capture('info')
  const quiet = lazyRequestLogger(parent, { reqId: 'r-2' }, { level: 'warn' })
  quiet.info('dropped: the route logs from warn up')
  quiet.warn('kept')
  const silent = lazyRequestLogger(parent, { reqId: 'r-3' }, { level: 'silent' })
  silent.fatal('dropped')
  const chatty = lazyRequestLogger(parent, { reqId: 'r-4' }, { level: 'debug' })
  chatty.debug('kept: below the parent, above the route')
  chatty.child({ step: 'two' }).info('kept')
  assert.deepEqual(lines.map((l) => [l.reqId, l.msg, l.step]), [
    ['r-2', 'kept', undefined],
    ['r-4', 'kept: below the parent, above the route', undefined],
    ['r-4', 'kept', 'two']
  ])
  assert.equal(quiet.level, 'warn')
  assert.equal(quiet.isLevelEnabled('info'), false)
  assert.equal(chatty.isLevelEnabled('debug'), true)
})
