// The near cache's set-up, when its commands time out at start (a pod starting on a busy node): it is
// retried until it is on, on every worker, and no write waits the sync's bound meanwhile or after.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { startService, metric, sendOnNewConnection } from '@suite/kit/testing'
import { redisUrl } from '@suite/kit/testing/env'
import { entry, itemsDatabase } from './fixture/items.js'

// The commands of the near cache's set-up, as ioredis writes them (RESP).
const SETUP = /\$6\r\nCLIENT\r\n\$2\r\nID\r\n|SUBSCRIBE\r\n|\$8\r\nTRACKING\r\n/i

/**
 * A TCP proxy in front of Redis that holds the set-up commands (and what follows them on their
 * connection, in order) for `holdMs` while `holding()` is true: past CACHE_TIMEOUT_MS, they time out
 * in the client as they did while a busy start held its event loop. Every other command passes at once.
 */
async function holdingProxy (target, { holdMs, holding }) {
  const { hostname, port } = new URL(target)
  const sockets = new Set()
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname)
    sockets.add(client).add(upstream)
    let queue = Promise.resolve() // chunks leave in order
    client.on('data', (chunk) => {
      const hold = holding() && SETUP.test(chunk.toString('latin1'))
      queue = queue.then(() => (hold ? sleep(holdMs) : null)).then(() => upstream.write(chunk))
    })
    upstream.pipe(client)
    for (const s of [client, upstream]) {
      s.on('error', () => {}).on('close', () => { client.destroy(); upstream.destroy() })
    }
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String(server.address().port)
  return {
    url: url.href,
    close: () => { for (const s of sockets) s.destroy(); server.close() }
  }
}

// A PUT on a new connection each: the kernel spreads them over the workers of the port.
const put = (base, id, value) => sendOnNewConnection(`${base}/items/${id}`, 'PUT', { value })

const nearStates = async (base) => {
  const text = await (await fetch(`${base}/metrics`)).text()
  const count = (state) => metric(text, 'cache_near_state', { state })
  return {
    on: count('on'),
    settingUp: count('setting_up'),
    failures: metric(text, 'cache_near_setup_failures_total')
  }
}

test('near cache: a set-up that times out at start is retried until every worker has it on; ' +
  'writes stay fast', async (t) => {
  let holdUntil = Infinity
  const proxy = await holdingProxy(`${redisUrl}/14`, { holdMs: 400, holding: () => performance.now() < holdUntil })
  t.after(() => proxy.close())
  const env = {
    DATABASE_URL: await itemsDatabase('nearsetup'),
    REDIS_URL: proxy.url,
    WORKERS: '2',
    CACHE_NEAR_MAX_BYTES: '33554432',
    LOG_LEVEL: 'info'
  }
  const [a, b] = await Promise.all([startService({ entry, env }), startService({ entry, env })])
  t.after(() => Promise.all([a.stop(), b.stop()]))

  // Held: no worker's near cache is up, and the metrics say so.
  const held = await nearStates(a.url)
  assert.equal(held.on, 0, 'no near cache is on while its set-up is held')
  assert.equal(held.settingUp, 2, 'both workers are setting up')
  assert.ok(held.failures >= 1, 'the failed set-ups are counted')
  assert.match(a.logs(), /near cache: set-up failed/, 'a failure is logged at warn level')

  // Released: every worker of both instances is on within the retry bound (2 s) and a set-up's time.
  holdUntil = performance.now()
  const bound = 2000 + 2 * 400 + 500
  for (const svc of [a, b]) {
    let states
    const deadline = performance.now() + bound
    do states = await nearStates(svc.url)
    while (states.on < 2 && performance.now() < deadline && await sleep(50) === undefined)
    assert.equal(states.on, 2, `every worker's near cache on within ${bound} ms of the release`)
    assert.equal(states.settingUp, 0)
  }
  assert.match(a.logs(), /near cache: set up after \d+ failed attempt/, 'the recovery is logged at info level')

  // Writes answered by any worker of either instance wait for no bound: the near caches all listen.
  const times = []
  for (let i = 0; i < 40; i++) {
    const { status, ms } = await put([a, b][i % 2].url, 1 + (i % 4), `v${i}`)
    assert.equal(status, 200)
    times.push(ms)
  }
  const slowest = Math.max(...times)
  assert.ok(slowest < 200, `the slowest of 40 writes took ${Math.round(slowest)} ms (the sync's bound: 300 ms)`)
})
