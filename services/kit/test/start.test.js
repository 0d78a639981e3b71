// A worker's start: it takes requests once PostgreSQL and Redis answer it. A new pod's connections are
// refused for seconds while the NetworkPolicy rules of the database's and Redis's nodes do not have its
// address yet; here, their ports open late.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort, get, send, startService } from '@suite/kit/testing'
import { redisUrl } from '@suite/kit/testing/env'
import { entry, itemsDatabase } from './fixture/items.js'

/** A forwarder to `url` on a port of its own, listening once open() is called; `url`: `url` through it. */
async function lateForwarder (url) {
  const target = new URL(url)
  const port = await freePort()
  const sockets = new Set()
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname)
    sockets.add(client).add(upstream)
    client.pipe(upstream).pipe(client)
    for (const s of [client, upstream]) {
      s.on('error', () => {}).on('close', () => { client.destroy(); upstream.destroy() })
    }
  })
  const late = new URL(url)
  late.hostname = '127.0.0.1'
  late.port = String(port)
  return {
    url: late.href,
    open: () => new Promise((resolve) => server.listen(port, '127.0.0.1', resolve)),
    close: () => { for (const s of sockets) s.destroy(); server.close() }
  }
}

test('a worker takes requests once PostgreSQL and Redis answer it, not while they refuse it', async (t) => {
  const db = await lateForwarder(await itemsDatabase('start'))
  const redis = await lateForwarder(`${redisUrl}/13`)
  t.after(() => { db.close(); redis.close() })
  const t0 = performance.now()
  const starting = startService({
    entry,
    env: { DATABASE_URL: db.url, REDIS_URL: redis.url, WORKERS: '2', LOG_LEVEL: 'info' },
    readyPath: '/healthz'
  })
  await sleep(1500)
  await db.open()
  await sleep(1500)
  await redis.open()
  const svc = await starting
  t.after(() => svc.stop())
  const listened = performance.now() - t0
  assert.ok(listened >= 3000, `listened ${Math.round(listened)} ms after the start, before Redis answered`)
  assert.ok(listened < 10_000, `listened ${Math.round(listened)} ms after the start: its dependencies answered at 3 s`)
  assert.deepEqual((await get(svc.url, '/readyz')).body, { status: 'ready', postgres: 'ok', cache: 'ok' })
  assert.equal((await send(svc.url, 'PUT', '/items/1', { value: 'v' })).status, 200)
  assert.equal((await get(svc.url, '/items/1')).status, 200)
  assert.doesNotMatch(svc.logs(), /not reachable at start/)
})

test('a worker whose PostgreSQL never answers listens after START_WAIT_MS, and says why', async () => {
  const db = await lateForwarder(await itemsDatabase('start'))
  const t0 = performance.now()
  const svc = await startService({
    entry,
    env: { DATABASE_URL: db.url, WORKERS: '1', START_WAIT_MS: '1000', PG_CONNECT_TIMEOUT_MS: '200' },
    readyPath: '/healthz'
  })
  try {
    const listened = performance.now() - t0
    assert.ok(listened >= 1000 && listened < 10_000, `listened ${Math.round(listened)} ms after the start`)
    assert.match(svc.logs(), /PostgreSQL not reachable at start; connecting on demand/)
    assert.equal((await get(svc.url, '/items/1')).status, 503, 'uncached reads answer 503 meanwhile')
  } finally {
    await svc.stop()
  }
})
