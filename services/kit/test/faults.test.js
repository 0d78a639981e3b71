// PostgreSQL misbehaving for real, under the kit's fixture service: frozen (SIGSTOP), and answering
// with a cancelled statement or a lock it could not take. Each test that breaks a server starts its own.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { startPostgres, startService, get } from '@suite/kit/testing'
import { createDatabase } from '@suite/kit/testing/env'
import fixture from './fixture/service.js'

const entry = fileURLToPath(new URL('./fixture/cli.js', import.meta.url))

async function itemsOn (url) {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  await migrate(c, fixture)
  await c.query("INSERT INTO fixture_items SELECT i, 'v', 1 FROM generate_series(1, 10) i")
  return c
}
const timed = async (promise) => {
  const t0 = performance.now()
  const res = await promise
  return { ...res, ms: performance.now() - t0 }
}

test('PostgreSQL frozen: every request a 503 within 2 s, /readyz and /healthz within 1 s, ' +
  'back after SIGCONT', async () => {
  const server = await startPostgres()
  const url = await server.createDatabase('frozen')
  await (await itemsOn(url)).end()
  // The kit's default timeouts (the test harness raises the connect timeout for busy machines).
  const svc = await startService({
    entry,
    env: { DATABASE_URL: url, WORKERS: '1', PG_POOL_MAX: '4', PG_CONNECT_TIMEOUT_MS: '1000' }
  })
  try {
    assert.equal((await get(svc.url, '/pg-sleep?ms=0')).status, 200)
    server.pause()
    // More requests than connections: some wait in the pool's queue, the rest on a frozen connection.
    const during = await Promise.all(Array.from({ length: 12 }, (_, i) =>
      timed(get(svc.url, i % 2 ? '/pg-sleep?ms=0' : `/items/${1 + i}`))))
    for (const r of during) {
      assert.equal(r.status, 503, JSON.stringify(r.body))
      assert.equal(r.headers.get('retry-after'), '1')
      assert.ok(r.ms <= 2000, `answered in ${Math.round(r.ms)} ms`)
    }
    await sleep(2000) // the probe has timed out by now
    const ready = await timed(get(svc.url, '/readyz'))
    assert.ok(ready.ms < 1000, `/readyz in ${Math.round(ready.ms)} ms`)
    assert.deepEqual([ready.status, ready.body], [200, { status: 'ready', postgres: 'down', cache: 'memory' }])
    const live = await timed(get(svc.url, '/healthz'))
    assert.ok(live.status === 200 && live.ms < 1000, `/healthz ${live.status} in ${Math.round(live.ms)} ms`)
    // Requests during a longer freeze are bounded the same way.
    const later = await timed(get(svc.url, '/items/9'))
    assert.ok(later.status === 503 && later.ms <= 2000, `${later.status} in ${Math.round(later.ms)} ms`)

    server.resume()
    let status
    for (let i = 0; i < 100 && status !== 200; i++) {
      await sleep(100)
      status = (await get(svc.url, '/items/10')).status
    }
    assert.equal(status, 200, 'recovers without a restart')
    for (let i = 0; i < 30 && (await get(svc.url, '/readyz')).body.postgres !== 'ok'; i++) await sleep(100)
    assert.equal((await get(svc.url, '/readyz')).body.postgres, 'ok')
  } finally {
    server.resume()
    await svc.stop()
    await server.stop()
  }
})

test('a statement cancelled by its timeout (57014) or a lock not had (55P03): 503 with Retry-After, ' +
  'logged without a stack', async () => {
  const url = await createDatabase('locked')
  const holder = await itemsOn(url)
  const svc = await startService({ entry, env: { DATABASE_URL: url, WORKERS: '1', PG_STATEMENT_TIMEOUT_MS: '300' } })
  try {
    // A reader queued behind an exclusive lock (a load's swap behind a long reader does that) is
    // cancelled by statement_timeout.
    await holder.query('BEGIN')
    await holder.query('LOCK TABLE fixture_items IN ACCESS EXCLUSIVE MODE')
    const cancelled = await get(svc.url, '/items/1')
    await holder.query('ROLLBACK')
    assert.equal(cancelled.status, 503, JSON.stringify(cancelled.body))
    assert.equal(cancelled.headers.get('retry-after'), '1')
    assert.deepEqual(cancelled.body, {
      statusCode: 503,
      error: 'Service Unavailable',
      message: 'database unavailable, retry shortly'
    })

    await holder.query('BEGIN')
    await holder.query('SELECT * FROM fixture_items WHERE id = 2 FOR UPDATE')
    const nowait = await get(svc.url, '/items/2/nowait')
    await holder.query('ROLLBACK')
    assert.equal(nowait.status, 503, JSON.stringify(nowait.body))
    assert.equal(nowait.headers.get('retry-after'), '1')

    assert.equal((await get(svc.url, '/items/1')).status, 200, 'the lock gone, the same read answers')
    const logs = svc.logs()
    assert.match(logs, /canceling statement due to statement timeout/)
    assert.match(logs, /could not obtain lock on row/)
    assert.doesNotMatch(logs, /"stack"|request failed/)
  } finally {
    await svc.stop()
    await holder.end()
  }
})
