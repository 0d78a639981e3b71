// The local runner (lib/vegeta.js) against a small HTTP server that counts what it gets: the open
// loop sends the planned requests spread over the duration whatever the latency, counts requests
// that could not leave on time as late; the closed loop sends exactly its fixed work over its
// connections; answers are classified by route; a read-modify-write sends the ETag its read got;
// the HTML report opens offline. Bounds, not timings: the machine is shared, so where nothing should be
// late a request counts as late only a second after its time (a stalled machine delays vegeta too).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { attack, percentile, countLate } from '../lib/vegeta.js'

let server, base, dir
const got = [] // { method, path, at, ifMatch }
let inFlight = 0
let maxInFlight = 0
let version = 0

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vegeta-test-'))
  server = createServer(async (req, res) => {
    inFlight++
    maxInFlight = Math.max(maxInFlight, inFlight)
    got.push({ method: req.method, path: req.url, at: performance.now(), ifMatch: req.headers['if-match'] })
    for await (const chunk of req) void chunk
    if (req.url === '/slow') await sleep(100)
    inFlight--
    if (req.url === '/missing') return res.writeHead(404).end()
    if (req.url === '/boom') return res.writeHead(500).end()
    if (req.url.startsWith('/item/')) {
      return res.writeHead(200, { etag: `"${req.method === 'GET' ? ++version : version}"` }).end('{}')
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
  })
  server.keepAliveTimeout = 60000
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${server.address().port}`
})
after(async () => {
  server.closeAllConnections()
  server.close()
  await rm(dir, { recursive: true, force: true })
})

const reset = () => { got.length = 0; maxInFlight = 0 }
const byPath = (method, url) => {
  const path = new URL(url).pathname.replace(/\/\d+$/, '/:id')
  return { name: `${method} ${path}`, expected: (s) => (s >= 200 && s < 400) || (path === '/missing' && s === 404) }
}

test('open loop: the planned requests, spread over the duration, none late or dropped', async () => {
  reset()
  const f = await attack({
    draw: () => ({ method: 'GET', path: '/ok' }), classify: byPath, baseUrls: [base],
    rate: 50, seconds: 2, workers: 20, lateMs: 1000
  })
  assert.equal(f.planned, 100)
  assert.equal(f.sent, 100)
  assert.equal(got.length, 100)
  assert.equal(f.dropped, 0)
  assert.ok(f.late <= 5, `${f.late} late at 50 RPS`)
  assert.equal(f.errors, 0)
  const span = (got.at(-1).at - got[0].at) / 1000
  assert.ok(span >= 1.5 && span < 4, `arrivals spread over ${span} s, not sent in a burst`)
  assert.ok(f.p50 > 0 && f.p50 <= f.p95 && f.p95 <= f.p99 && f.p99 <= f.max)
  assert.deepEqual(Object.keys(f.routes), ['GET /ok'])
})

test('open loop: a slow target gets the same rate; ' +
  'with too few requests in flight allowed, they leave late and are counted', async () => {
  reset()
  const enough = await attack({
    draw: () => ({ method: 'GET', path: '/slow' }), classify: byPath, baseUrls: [base],
    rate: 40, seconds: 2, workers: 40, lateMs: 1000
  })
  assert.equal(enough.sent, 80)
  assert.ok(enough.late <= 4, `${enough.late} late with room for 40 in flight`)
  assert.ok(maxInFlight >= 3, `100 ms each at 40/s keeps ~4 in flight, saw ${maxInFlight}`)
  assert.ok(enough.p50 >= 100, 'the latency is the target\'s')
  reset()
  const starved = await attack({
    draw: () => ({ method: 'GET', path: '/slow' }), classify: byPath, baseUrls: [base],
    rate: 40, seconds: 2, workers: 1
  })
  assert.ok(maxInFlight <= 1, `in flight at most 1, saw ${maxInFlight}`)
  assert.ok(starved.late + starved.dropped >= 40,
    `one at a time, 100 ms each, cannot keep 40/s: late ${starved.late}, dropped ${starved.dropped}`)
})

test('closed loop: exactly the fixed work, over at most `workers` connections at once', async () => {
  reset()
  const f = await attack({
    draw: () => ({ method: 'GET', path: '/ok' }), classify: byPath, baseUrls: [base], requests: 300, workers: 4
  })
  assert.equal(f.sent, 300)
  assert.equal(got.length, 300)
  assert.ok(maxInFlight <= 4, `at most 4 in flight, saw ${maxInFlight}`)
  assert.equal(f.dropped, 0)
  assert.ok(f.rps > 0)
})

test('closed loop for a duration: as many as the connections get answered in that time', async () => {
  reset()
  const f = await attack({
    draw: () => ({ method: 'GET', path: '/ok' }), classify: byPath, baseUrls: [base], seconds: 1, workers: 4
  })
  assert.ok(f.sent > 20, `${f.sent} requests in 1 s over 4 connections`)
  assert.equal(got.length, f.sent)
  assert.equal(f.planned, f.sent)
  assert.ok(maxInFlight <= 4, `at most 4 in flight, saw ${maxInFlight}`)
  assert.ok(f.seconds > 0.5 && f.seconds < 3, `${f.seconds} s`)
})

test('answers are classified by route: an accepted 404 is no error, a 500 and a refused connection are', async () => {
  reset()
  let i = 0
  const f = await attack({
    draw: () => ({ method: 'GET', path: i++ % 2 ? '/boom' : '/missing' }), classify: byPath, baseUrls: [base],
    requests: 40, workers: 4
  })
  assert.equal(f.errors, 20)
  assert.equal(f.errorRate, 0.5)
  assert.deepEqual(f.statuses, { 404: 20, 500: 20 })
  assert.deepEqual([f.routes['GET /missing'].errors, f.routes['GET /boom'].errors], [0, 20])
  const refused = await attack({
    draw: () => ({ method: 'GET', path: '/ok' }), classify: byPath, baseUrls: ['http://127.0.0.1:1'],
    requests: 5, workers: 1
  })
  assert.equal(refused.errors, 5)
  assert.match(refused.firstError, /refused/)
})

test('a read-modify-write sends the ETag its read returned, with If-Match; bodies and headers as drawn', async () => {
  reset()
  let n = 0
  const f = await attack({
    draw: () => ({
      method: 'GET',
      path: `/item/${n++ % 5}`,
      then: (etag) => ({ method: 'PUT', path: '/item/0', body: { v: etag }, headers: { 'if-match': etag } })
    }),
    classify: byPath,
    baseUrls: [base],
    rate: 40,
    seconds: 2,
    workers: 20
  })
  const puts = got.filter((g) => g.method === 'PUT')
  assert.ok(puts.length >= 20, `${puts.length} writes followed 80 slots' reads`)
  assert.equal(f.sent, 80, 'writes take slots of the rate: requests per second stay the rate')
  const served = new Set(Array.from({ length: version }, (_, k) => `"${k + 1}"`))
  for (const p of puts) assert.ok(served.has(p.ifMatch), `If-Match ${p.ifMatch} is an ETag the server gave`)
  assert.equal(f.errors, 0)
})

test('the step report: vegeta plot\'s HTML opens offline, vegeta report\'s text has the percentiles', async () => {
  const html = join(dir, 'step.html')
  const text = join(dir, 'step.txt')
  await attack({
    draw: () => ({ method: 'GET', path: '/ok' }), classify: byPath, baseUrls: [base],
    rate: 20, seconds: 1, workers: 5, html, text, name: 'report test'
  })
  const page = await readFile(html, 'utf8')
  assert.match(page, /<html/i)
  assert.match(page, /report test/)
  assert.doesNotMatch(page, /<script[^>]+src=["']?https?:|<link[^>]+href=["']?https?:|@import\s+url\(["']?https?:/i,
    'nothing fetched from the network')
  assert.match(await readFile(text, 'utf8'), /Latencies\s+\[min, mean, 50, 90, 95, 99, max\]/)
})

test('percentiles are nearest-rank', () => {
  const s = Float64Array.from({ length: 100 }, (_, i) => i + 1)
  assert.deepEqual([percentile(s, 0.5), percentile(s, 0.95), percentile(s, 0.99), percentile(s, 1)], [50, 95, 99, 100])
  assert.ok(Number.isNaN(percentile([], 0.5)))
})

test('late: more than lateMs after its planned time and after the next one\'s, from the most punctual request', () => {
  const offsets = [5, 3, 160, 40, 1200] // ms after the planned time; the most punctual left 3 ms after
  assert.equal(countLate(offsets, { rate: 100, lateMs: 100 }), 2, '157 and 1197 ms late')
  assert.equal(countLate(offsets, { rate: 1, lateMs: 100 }), 1,
    'at 1/s only the one that left after its successor was due')
  assert.equal(countLate(offsets, { rate: 100, lateMs: 1000 }), 1)
  assert.equal(countLate([], { rate: 10, lateMs: 100 }), 0)
})
