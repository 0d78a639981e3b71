// The ladder: its verdict per step and its refinement (pure), and two short real ladders with vegeta
// against the product service on PostgreSQL and Redis — one that holds, one that breaks at once.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { adminUrl, redisUrl } from '@suite/kit/testing/env'
import { prepareDatabase, startInstances } from '../lib/stack.js'
import { ladder, verdict, refinements } from '../ladder.js'

const slo = { p95: 100, p99: 250, errorRate: 0.01 }
// The real ladders test the mechanics, not the speed of a shared machine: SLOs out of reach of a
// slow moment, and a request counted late only a second after its time.
const loose = { p95: 10000, p99: 10000, errorRate: 0.01 }
const ok = { p50: 1, p95: 5, p99: 9, errorRate: 0, dropped: 0, late: 0, planned: 3000 }

test('a step holds within the SLO and breaks on each way of missing it', () => {
  const at = { slo }
  assert.deepEqual(verdict(ok, at), [])
  assert.match(verdict({ ...ok, p95: 120 }, at).join(), /p95 120 ms > 100 ms/)
  assert.match(verdict({ ...ok, p99: 300 }, at).join(), /p99 300 ms > 250 ms/)
  assert.match(verdict({ ...ok, p99: NaN }, at).join(), /p99/, 'no measurement is no proof')
  assert.match(verdict({ ...ok, errorRate: 0.01 }, at).join(), /errors 1.00% ≥ 1.00%/)
  assert.deepEqual(verdict({ ...ok, dropped: 10, late: 20 }, at), [],
    '1% of 3000 planned requests late or dropped is still holding')
  assert.match(verdict({ ...ok, dropped: 1, late: 30 }, at).join(),
    /1.0% of requests late or dropped: the rate was not kept/)
  assert.match(verdict({ ...ok, dropped: 31 }, at).join(), /late or dropped/)
})

test('after a break it tries 2× and 5× the last good rate below the broken one', () => {
  assert.deepEqual(refinements(100, 1000), [200, 500])
  assert.deepEqual(refinements(100, 300), [200])
  assert.deepEqual(refinements(undefined, 1), [])
})

let product, out
before(async () => {
  const db = await prepareDatabase('product', { adminUrl, rows: 300 })
  ;[product] = await startInstances('product', { databaseUrl: db.url, redisUrl })
  // The generated catalogue has gaps in its ids (the scenario counts a 404 there as an answer): the
  // ladders read from the longest run of consecutive ids, so that every answer is a 200.
  const client = new pg.Client({ connectionString: db.url })
  await client.connect()
  const ids = (await client.query('SELECT id FROM products ORDER BY id')).rows.map((r) => Number(r.id))
  await client.end()
  let best = [0, 0]
  for (let start = 0, i = 1; i <= ids.length; i++) {
    if (i === ids.length || ids[i] !== ids[i - 1] + 1) {
      if (i - start > best[1] - best[0]) best = [start, i]
      start = i
    }
  }
  product.env = { ...db.env, PRODUCT_IDS: `${ids[best[0]]}-${ids[best[1] - 1]}`, LATE_MS: '1000' }
  out = await mkdtemp(join(tmpdir(), 'ladder-test-'))
})
after(async () => {
  await product?.stop()
  if (out) await rm(out, { recursive: true, force: true })
})

test('a ladder that holds: a row per step, no breaking point, the table, the plot and a report per step', async () => {
  const dir = join(out, 'holds')
  const r = await ladder({
    scenario: 'product', baseUrl: product.url, steps: [5, 20], seconds: 2, warmup: { seconds: 1, rate: 5 },
    slo: loose, env: product.env, out: dir
  })
  assert.deepEqual(r.rows.map((row) => row.rate), [5, 20])
  assert.equal(r.breakingPoint, null, JSON.stringify(r.rows))
  for (const row of r.rows) {
    assert.equal(row.planned, row.rate * 2)
    assert.ok(row.requests >= row.planned - 2, `step ${row.rate}: ${row.requests} of ${row.planned} requests`)
    assert.equal(row.errorRate, 0, row.firstError)
    assert.ok(row.p50 > 0 && row.p50 <= row.p95 && row.p95 <= row.p99)
  }
  const md = await readFile(join(dir, 'ladder.md'), 'utf8')
  assert.match(md, /\| 20 \| [\d.]+ \|.*\| held \| \[plot\]\(step-20.html\), \[report\]\(step-20.txt\) \|/)
  assert.match(md, /No breaking point/)
  const svg = await readFile(join(dir, 'ladder.svg'), 'utf8')
  assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/)
  assert.equal(svg.match(/<polyline/g).length, 5, 'achieved, target, p50, p95, p99')
  const files = await readdir(dir)
  assert.deepEqual(files.filter((f) => /^step-/.test(f)).sort(),
    ['step-20.html', 'step-20.txt', 'step-5.html', 'step-5.txt'], 'no results file left behind')
  const html = await readFile(join(dir, 'step-5.html'), 'utf8')
  assert.match(html, /<html/i)
  assert.doesNotMatch(html, /<script[^>]+src=["']?https?:|<link[^>]+href=["']?https?:/i, 'the report opens offline')
  const report = await readFile(join(dir, 'step-20.txt'), 'utf8')
  assert.match(report, /Requests +\[total, rate, throughput\] +40, /,
    'the requests and nothing else (not vegeta\'s "no targets" at the end)')
  assert.match(report, /Status Codes +\[code:count\] +200:40 /)
  assert.deepEqual(JSON.parse(await readFile(join(dir, 'ladder.json'), 'utf8')).rows.map((row) => row.rate), [5, 20])
})

test('a ladder that breaks stops at the broken step and names the reason', async () => {
  const dir = join(out, 'breaks')
  const r = await ladder({
    scenario: 'product', baseUrl: product.url, steps: [5, 20, 80], seconds: 2, warmup: { seconds: 0 },
    slo: { ...loose, p95: 0.001 }, env: product.env, out: dir
  })
  assert.deepEqual(r.rows.map((row) => row.rate), [5])
  assert.equal(r.breakingPoint.rate, 5)
  assert.equal(r.maxHeld, null)
  assert.match(await readFile(join(dir, 'ladder.md'), 'utf8'), /Breaking point: 5 RPS\*\* \(p95 [\d.]+ ms > 0.001 ms/)
})

test('a target that gives no HTTP answer at all is an error (exit 1 naming it), not a breaking point', () => {
  const r = spawnSync(process.execPath, [
    fileURLToPath(new URL('../ladder.js', import.meta.url)), '--base-url', 'http://127.0.0.1:1', '--steps', '1',
    '--duration', '2s', '--warmup', '0s', '--out', join(tmpdir(), `ladder-refused-${process.pid}`)
  ], { encoding: 'utf8' })
  assert.equal(r.status, 1, r.stderr)
  assert.match(r.stderr, /^ladder: no HTTP answer from http:\/\/127\.0\.0\.1:1 \(\d+ requests; first error: .*refused/m)
})
