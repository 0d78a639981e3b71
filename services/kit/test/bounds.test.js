// The kit's bounds on what a client or the process can make it hold: HTTP header and body timeouts
// on real sockets, request ids, memory-based load shedding, readiness without queries, a query's
// whole wait, and the event-loop histogram that every scraper sees whole.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { startService, get, metric } from '@suite/kit/testing'
import { adminUrl } from '@suite/kit/testing/env'

const entry = fileURLToPath(new URL('./fixture/cli.js', import.meta.url))
const start = (env = {}) => startService({ entry, env: { DATABASE_URL: adminUrl, WORKERS: '1', ...env } })

/**
 * Opens a raw connection, writes `head`, then one byte of `trickle` every `everyMs` until the server
 * closes the connection. Resolves to { ms: how long the server kept it, answer: what it sent }.
 */
function trickle (port, head, trickle, everyMs) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    let answer = ''
    let i = 0
    const socket = connect(port, '127.0.0.1', () => socket.write(head))
    const timer = setInterval(() => { if (i < trickle.length) socket.write(trickle[i++]) }, everyMs)
    socket.on('data', (d) => { answer += d })
    socket.on('error', () => {}) // a reset after the answer is still an end
    socket.on('close', () => { clearInterval(timer); resolve({ ms: performance.now() - t0, answer }) })
    setTimeout(() => { socket.destroy(); reject(new Error(`still open after 20 s: ${answer}`)) }, 20_000).unref()
  })
}

test('a client trickling its headers or its body is cut off within the bound (408), a slow answer is not', async () => {
  const svc = await start({ HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '2000' })
  try {
    // Node checks the bounds once a second: cut between the bound and the bound + 1 s (+ a busy machine).
    const headers = await trickle(svc.port, 'GET /slow HTTP/1.1\r\nHost: x\r\n', 'X-Slow: ' + 'a'.repeat(100), 200)
    assert.match(headers.answer, /^HTTP\/1\.1 408/)
    assert.ok(headers.ms >= 900 && headers.ms < 3500, `headers cut after ${Math.round(headers.ms)} ms`)

    const body = '{"value":"' + 'b'.repeat(200) + '"}'
    const head = 'PUT /items/1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      `Content-Length: ${body.length}\r\n\r\n`
    const trickled = await trickle(svc.port, head, body, 200)
    assert.match(trickled.answer, /^HTTP\/1\.1 408/)
    assert.ok(trickled.ms >= 1900 && trickled.ms < 4500, `body cut after ${Math.round(trickled.ms)} ms`)

    // The bounds are on receiving the request; a slow answer is the server's own business.
    const slow = await get(svc.url, '/slow?ms=3000')
    assert.deepEqual([slow.status, slow.body], [200, { slept: 3000 }])
  } finally {
    await svc.stop()
  }
})

test('x-request-id: a short plain id is kept, anything else is replaced by a UUID', async () => {
  const svc = await start({ LOG_REQUESTS: 'true', LOG_LEVEL: 'info' })
  try {
    const idOf = async (id) =>
      (await get(svc.url, '/healthz', id === undefined ? {} : { 'x-request-id': id })).headers.get('x-request-id')
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
    assert.equal(await idOf('trace-42_a.b:c@d+e=f/g'), 'trace-42_a.b:c@d+e=f/g')
    assert.equal(await idOf('x'.repeat(128)), 'x'.repeat(128))
    const long = 'y'.repeat(3000)
    assert.match(await idOf(long), uuid)
    assert.match(await idOf('a b'), uuid)
    assert.match(await idOf('"}{"level":60'), uuid)
    assert.match(await idOf(''), uuid)
    assert.match(await idOf(undefined), uuid)
    const generated = await Promise.all(Array.from({ length: 20 }, () => idOf(undefined)))
    assert.equal(new Set(generated).size, 20, 'every generated id is new')
    await sleep(200)
    assert.doesNotMatch(svc.logs(), /yyyyyyyy/, 'the long id is in no log line')
    // Each request's lines carry its id (Fastify's per-request logger, made only when a line is written).
    const lines = svc.logs().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
    const kept = lines.filter((l) => l.reqId === 'trace-42_a.b:c@d+e=f/g').map((l) => l.msg)
    assert.deepEqual(kept, ['incoming request', 'request completed'])
  } finally {
    await svc.stop()
  }
})

test('memory pressure: service routes answer 503 above MAX_RSS_BYTES or MAX_HEAP_USED_BYTES, ' +
  'health still answers', async () => {
  const rss = await start({ MAX_RSS_BYTES: '1' })
  try {
    let res
    for (let i = 0; i < 60 && res?.status !== 503; i++) { await sleep(100); res = await get(rss.url, '/slow') }
    assert.equal(res.status, 503)
    assert.equal(res.headers.get('retry-after'), '1')
    assert.deepEqual(res.body, {
      statusCode: 503,
      error: 'Service Unavailable',
      message: 'service overloaded, retry shortly'
    })
    assert.equal((await get(rss.url, '/healthz')).status, 200)
    assert.equal((await get(rss.url, '/readyz')).status, 200)
  } finally {
    await rss.stop()
  }
  const heap = await start({ MAX_HEAP_USED_BYTES: String(150 * 2 ** 20) })
  try {
    assert.equal((await get(heap.url, '/slow')).status, 200)
    assert.equal((await get(heap.url, '/hold?mb=200')).status, 200)
    let status
    for (let i = 0; i < 60 && status !== 503; i++) { await sleep(100); status = (await get(heap.url, '/slow')).status }
    assert.equal(status, 503, 'sheds once the heap is past its bound')
    assert.equal((await get(heap.url, '/healthz')).status, 200)
  } finally {
    await heap.stop()
  }
})

test('/readyz answers from memory: ready while the pool is busy or PostgreSQL is unreachable, ' +
  'unless READY_REQUIRES_DATABASE', async () => {
  const busy = await start({
    PG_POOL_MAX: '1', PG_CONNECT_TIMEOUT_MS: '5000', PG_STATEMENT_TIMEOUT_MS: '5000', PG_QUERY_TIMEOUT_MS: '6000'
  })
  try {
    const holding = get(busy.url, '/pg-sleep?ms=2000') // the pool's only connection
    await sleep(200)
    const t0 = performance.now()
    const ready = await get(busy.url, '/readyz')
    const ms = performance.now() - t0
    assert.deepEqual([ready.status, ready.body], [200, { status: 'ready', postgres: 'ok', cache: 'memory' }])
    assert.ok(ms < 500, `answered in ${Math.round(ms)} ms, not after the busy pool`)
    assert.equal((await holding).status, 200)
  } finally {
    await busy.stop()
  }
  // Started without PostgreSQL: each listens after its START_WAIT_MS (see the start's own test).
  const none = 'postgres://postgres@127.0.0.1:1/none'
  const down = await startService({
    entry,
    env: { DATABASE_URL: none, PG_CONNECT_TIMEOUT_MS: '200', START_WAIT_MS: '500' },
    readyPath: '/healthz'
  })
  const strict = await startService({
    entry,
    env: { DATABASE_URL: none, PG_CONNECT_TIMEOUT_MS: '200', START_WAIT_MS: '500', READY_REQUIRES_DATABASE: 'true' },
    readyPath: '/healthz'
  })
  try {
    await sleep(500) // the probe has failed by now
    assert.deepEqual((await get(down.url, '/readyz')).body, { status: 'ready', postgres: 'down', cache: 'memory' })
    const refused = await get(strict.url, '/readyz')
    assert.deepEqual([refused.status, refused.body], [503, { status: 'not ready', postgres: 'down', cache: 'memory' }])
    assert.equal((await get(down.url, '/items/1')).status, 503, 'uncached reads answer 503 meanwhile')
    assert.equal((await get(strict.url, '/healthz')).status, 200, 'liveness never depends on PostgreSQL')
  } finally {
    await Promise.all([down.stop(), strict.stop()])
  }
})

test('PG_QUERY_TIMEOUT_MS bounds a query\'s whole wait, its wait for a connection included', async () => {
  const svc = await start({
    PG_POOL_MAX: '1', PG_CONNECT_TIMEOUT_MS: '1400', PG_QUERY_TIMEOUT_MS: '1500', PG_STATEMENT_TIMEOUT_MS: '5000'
  })
  try {
    const holding = get(svc.url, '/pg-sleep?ms=1200') // the pool's only connection, 1.2 s
    await sleep(100)
    const t0 = performance.now()
    const queued = await get(svc.url, '/pg-sleep?ms=800') // ~1.1 s for the connection, then 0.8 s more: past 1.5 s
    const ms = performance.now() - t0
    assert.equal(queued.status, 503, JSON.stringify(queued.body))
    assert.ok(
      ms < 1900,
      `answered after ${Math.round(ms)} ms, not after the connection's wait plus a whole query timeout`
    )
    assert.equal((await holding).status, 200)
    assert.equal((await get(svc.url, '/pg-sleep?ms=800')).status, 200, 'the same query alone fits')
  } finally {
    await svc.stop()
  }
})

test('event-loop lag is a cumulative histogram: a stall stays in every later scrape, ' +
  'whoever scraped before', async () => {
  const svc = await start()
  try {
    const slow = async () => {
      const text = (await get(svc.url, '/metrics')).body
      const count = metric(text, 'worker_eventloop_lag_seconds_count')
      return { count, above: count - metric(text, 'worker_eventloop_lag_seconds_bucket', { le: '0.25' }) }
    }
    await get(svc.url, '/busy?ms=600') // one stall of 600 ms
    const first = await slow()
    await sleep(200) // a sample every 10 ms, however loaded the machine: some come in meanwhile
    const second = await slow() // a second scraper
    assert.ok(first.above >= 1, `the stall is counted: ${JSON.stringify(first)}`)
    assert.ok(second.above >= first.above, `…and still there for the next scraper: ${JSON.stringify(second)}`)
    assert.ok(second.count > first.count, `samples keep adding up: ${first.count} then ${second.count}`)
  } finally {
    await svc.stop()
  }
})
