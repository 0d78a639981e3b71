// What a database failover does to a service's pool, on a real PostgreSQL: a server that answers
// as a standby (a primary demoted, or a Service that still points at the old instance) is never
// read from nor written to, only 503s until a primary answers; connections to a server that went
// silent are all dropped once one of them is found dead, so the next request reaches the new one.
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import assert from 'node:assert/strict'
import { connect, createServer } from 'node:net'
import pg from 'pg'
import { startPostgres, startService, get, send } from '@suite/kit/testing'
import { migrate } from '@suite/kit'
import { entry } from './fixture/items.js'
import fixture from './fixture/service.js'

async function itemsOn (url) {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  await migrate(c, fixture)
  await c.query("INSERT INTO fixture_items SELECT i, 'v', 1 FROM generate_series(1, 10) i")
  await c.end()
}

const env = (url) => ({ DATABASE_URL: url, WORKERS: '1', PG_POOL_MAX: '4', PG_CONNECT_TIMEOUT_MS: '1000' })

/**
 * A TCP proxy whose connections can all go silent at once, as to a node that vanished: nothing is
 * forwarded and nothing is closed. New connections after that reach the server again, unless
 * `blackhole(true)`: then they are silent from the start, until blackhole(false).
 */
async function silencingProxy (port) {
  let open = new Set()
  let blackhole = false
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1')
    const pair = { client, upstream, silent: blackhole }
    open.add(pair)
    client.on('data', (d) => { if (!pair.silent) upstream.write(d) })
    upstream.on('data', (d) => { if (!pair.silent) client.write(d) })
    const end = () => { client.destroy(); upstream.destroy() }
    for (const s of [client, upstream]) s.on('error', () => {}).on('close', end)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: server.address().port,
    silence () {
      for (const pair of open) pair.silent = true
      open = new Set()
    },
    blackhole (on) { blackhole = on },
    close () { server.close() }
  }
}

/**
 * `fn({ server, svc, proxy })` on a database of its own holding the items fixture, with the fixture's
 * service started on it with `settings`; `proxied`: the service reaches PostgreSQL through a
 * silencingProxy. The service, the proxy and PostgreSQL are stopped afterwards, whatever fn did.
 */
async function onItems (name, { settings = {}, proxied = false }, fn) {
  const server = await startPostgres()
  let proxy, svc
  try {
    const url = new URL(await server.createDatabase(name))
    await itemsOn(url.href)
    if (proxied) {
      proxy = await silencingProxy(server.port)
      url.port = String(proxy.port)
    }
    svc = await startService({ entry, env: { ...env(url.href), ...settings } })
    await fn({ server, svc, proxy })
  } finally {
    await svc?.stop()
    proxy?.close()
    await server.stop()
  }
}

test('a server that answers as a standby: 503 with Retry-After, never a read of it; promoted, served at once',
  () => onItems('standby', {}, async ({ server, svc }) => {
    assert.equal((await get(svc.url, '/items/1')).status, 200)
    await server.demote()
    for (const [method, path, body] of [
      ['GET', '/items/2'], ['GET', '/pg-sleep?ms=0'], ['PUT', '/items/3', { value: 'w' }], ['GET', '/items/4']
    ]) {
      const res = await send(svc.url, method, path, body)
      assert.equal(res.status, 503, `${method} ${path} on a standby: ${JSON.stringify(res.body)}`)
      assert.equal(res.headers.get('retry-after'), '1')
    }
    await server.promote()
    const write = await send(svc.url, 'PUT', '/items/3', { value: 'after' })
    assert.equal(write.status, 200, `the first write after the promotion: ${JSON.stringify(write.body)}`)
    assert.equal((await get(svc.url, '/items/3')).body.value, 'after')
  }))

test('connections to a server gone silent: one request pays the timeout, the next ones reach the server anew',
  () => onItems('silent', { proxied: true }, async ({ svc, proxy }) => {
    // Four pooled connections, each lent once.
    const warm = await Promise.all([1, 2, 3, 4].map(() => get(svc.url, '/pg-sleep?ms=50')))
    assert.deepEqual(warm.map((r) => r.status), [200, 200, 200, 200])
    proxy.silence()
    const statuses = []
    for (let i = 0; i < 6; i++) statuses.push((await get(svc.url, `/items/${1 + i}`)).status)
    assert.equal(statuses[0], 503, 'the first request finds its connection dead, past PG_QUERY_TIMEOUT_MS')
    assert.deepEqual(statuses.slice(1), [200, 200, 200, 200, 200],
      'the others are not lent a connection of the silent server')
  }))

test('PG_PRIMARY_WAIT_MS: requests wait for a primary on its way and are served once it is back; a longer ' +
  'absence answers 503 at the bound', () => onItems('moving', { settings: { PG_PRIMARY_WAIT_MS: '4000' } },
  async ({ server, svc }) => {
    assert.equal((await get(svc.url, '/items/1')).status, 200)
    await server.demote()
    const started = performance.now()
    const answers = Promise.all([
      send(svc.url, 'PUT', '/items/3', { value: 'moved' }), get(svc.url, '/items/2'), get(svc.url, '/items/4')
    ])
    await sleep(1000)
    await server.promote()
    const statuses = (await answers).map((r) => r.status)
    const waited = performance.now() - started
    assert.deepEqual(statuses, [200, 200, 200], 'served by the primary once it is back')
    assert.ok(waited >= 1000, `they waited for it (${waited} ms)`)
    assert.equal((await get(svc.url, '/items/3')).body.value, 'moved')
    // Gone for longer than the wait (refused): 503 once the wait is over, not before, not much after.
    await server.stop({ keepData: true })
    const t0 = performance.now()
    const res = await get(svc.url, '/items/5')
    const took = performance.now() - t0
    assert.equal(res.status, 503)
    assert.equal(res.headers.get('retry-after'), '1')
    assert.ok(took >= 3750 && took < 4000 + 1000, `503 after ${took} ms, the wait 4000 ms`)
  }))

test('PG_PRIMARY_WAIT_MS: a connect that nothing answers (a Service without endpoints, behind a NetworkPolicy ' +
  'that drops what it does not admit) is waited through too',
() => onItems('blackhole', { proxied: true, settings: { PG_PRIMARY_WAIT_MS: '5000' } }, async ({ svc, proxy }) => {
  assert.equal((await get(svc.url, '/items/1')).status, 200)
  proxy.silence()
  proxy.blackhole(true)
  // The pooled connections are silent: the first request finds one dead, which drops the others.
  // (Items not read before: a cached one would not reach PostgreSQL.)
  assert.equal((await get(svc.url, '/items/5')).status, 503)
  const answers = Promise.all([2, 3, 4].map((id) => get(svc.url, `/items/${id}`)))
  await sleep(2500)
  proxy.blackhole(false)
  assert.deepEqual((await answers).map((r) => r.status), [200, 200, 200],
    'held through connects that timed out, served once one is answered')
}))
