// The ladder: its verdict per step and its refinement (pure), and two short real ladders with k6
// against the product service on PostgreSQL and Redis — one that holds, one that breaks at once.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { adminUrl, redisUrl } from '@suite/kit/testing/env'
import { prepareDatabase, startInstances } from '../lib/stack.js'
import { ladder, verdict, refinements } from '../ladder.js'

const slo = { p95: 100, p99: 250, errorRate: 0.01 }
// The real ladders test the mechanics, not the speed of a shared machine: SLOs out of reach of a
// slow moment, and VUs made before the start, so none is missing when the machine stalls.
const loose = { p95: 10000, p99: 10000, errorRate: 0.01 }
const ok = { p50: 1, p95: 5, p99: 9, errorRate: 0, dropped: 0 }

test('a step holds within the SLO and breaks on each way of missing it', () => {
  const at = { rate: 100, seconds: 30, slo }
  assert.deepEqual(verdict(ok, at), [])
  assert.match(verdict({ ...ok, p95: 120 }, at).join(), /p95 120 ms > 100 ms/)
  assert.match(verdict({ ...ok, p99: 300 }, at).join(), /p99 300 ms > 250 ms/)
  assert.match(verdict({ ...ok, p99: NaN }, at).join(), /p99/, 'no measurement is no proof')
  assert.match(verdict({ ...ok, errorRate: 0.01 }, at).join(), /errors 1.00% ≥ 1.00%/)
  assert.deepEqual(verdict({ ...ok, dropped: 30 }, at), [], '1% of 3000 planned iterations dropped is still holding')
  assert.match(verdict({ ...ok, dropped: 31 }, at).join(), /dropped: the rate was not kept/)
  assert.match(verdict(ok, { ...at, code: 99 }).join(), /threshold/)
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
  product.env = { ...db.env, PRE_VUS: '40', MAX_VUS: '200' }
  out = await mkdtemp(join(tmpdir(), 'ladder-test-'))
})
after(async () => {
  await product?.stop()
  if (out) await rm(out, { recursive: true, force: true })
})

test('a ladder that holds: a row per step, no breaking point, the table, the plot and a k6 report per step', async () => {
  const dir = join(out, 'holds')
  const r = await ladder({ scenario: 'product', baseUrl: product.url, steps: [5, 20], duration: '2s', warmup: { duration: '1s', rate: 5 }, slo: loose, env: product.env, out: dir })
  assert.deepEqual(r.rows.map((row) => row.rate), [5, 20])
  assert.equal(r.breakingPoint, null, JSON.stringify(r.rows))
  for (const row of r.rows) {
    assert.ok(row.requests >= row.rate, `step ${row.rate}: ${row.requests} requests`)
    assert.equal(row.errorRate, 0)
    assert.ok(row.p50 > 0 && row.p50 <= row.p95 && row.p95 <= row.p99)
  }
  const md = await readFile(join(dir, 'ladder.md'), 'utf8')
  assert.match(md, /\| 20 \| \d+ \|.*\| held \|/)
  assert.match(md, /No breaking point/)
  const svg = await readFile(join(dir, 'ladder.svg'), 'utf8')
  assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/)
  assert.equal(svg.match(/<polyline/g).length, 5, 'achieved, target, p50, p95, p99')
  assert.deepEqual((await readdir(dir)).filter((f) => f.endsWith('.html')).sort(), ['step-20.html', 'step-5.html'])
  const html = await readFile(join(dir, 'step-5.html'), 'utf8')
  assert.match(html, /<html/i)
  assert.doesNotMatch(html, /<script[^>]+src="https?:/i, 'the report opens offline')
})

test('a ladder that breaks stops at the broken step and names the reason', async () => {
  const dir = join(out, 'breaks')
  const r = await ladder({ scenario: 'product', baseUrl: product.url, steps: [5, 20, 80], duration: '2s', warmup: { duration: '0s' }, slo: { ...loose, p95: 0.001 }, env: product.env, out: dir })
  assert.deepEqual(r.rows.map((row) => row.rate), [5])
  assert.equal(r.breakingPoint.rate, 5)
  assert.equal(r.maxHeld, null)
  assert.match(await readFile(join(dir, 'ladder.md'), 'utf8'), /Breaking point: 5 RPS\*\* \(p95 [\d.]+ ms > 0.001 ms/)
})
