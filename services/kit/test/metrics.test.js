// The request metrics the kit records in plain numbers (metrics.js) export exactly what prom-client's
// own Histogram and Counters export for the same observations: per worker, and summed over workers
// as the main thread sums them for a scrape.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import client from 'prom-client'
import { createMetrics, DURATION_BUCKETS, aggregate } from '../src/telemetry/metrics.js'

// What prom-client itself made of the same calls: one registry per worker.
function promClientWorker (worker) {
  const registry = new client.Registry()
  const registers = [registry]
  const durations = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route, method and status code',
    labelNames: ['method', 'route', 'status_code'],
    buckets: DURATION_BUCKETS,
    registers
  })
  const served = new client.Counter({
    name: 'http_requests_by_worker_total',
    help: 'HTTP requests answered by each worker thread (how evenly the kernel spreads connections)',
    labelNames: ['worker'],
    registers
  })
  const lookups = new client.Counter({
    name: 'cache_requests_total',
    help: 'cache lookups by keyspace and result (hit, miss, error: Redis failed and the request went to the database)',
    labelNames: ['keyspace', 'result'],
    registers
  })
  return {
    registry,
    requestAnswered (method, route, status, seconds) {
      durations.observe({ method, route, status_code: status }, seconds)
      served.inc({ worker: String(worker) })
    },
    cacheLookup: (keyspace, result) => lookups.inc({ keyspace, result })
  }
}

// The same requests and lookups on both, including durations on a bucket's bound and past the last.
function record (m, shift) {
  const durations = [0.0001, 0.00025, 0.0003, 0.001, 0.004, 0.02, 0.3, 2.5, 7]
  durations.forEach((s, i) => m.requestAnswered('GET', '/products/:id', i % 3 ? 200 : 404, s + shift))
  m.requestAnswered('POST', '/flows', 200, 0.002)
  m.requestAnswered('GET', 'unmatched', 404, 0.0002)
  for (const [keyspace, result, n] of [
    ['product:styles', 'hit', 5],
    ['product:styles', 'miss', 2],
    ['profile:restaurant', 'error', 1],
    ['product:page', 'bypass', 3]
  ]) {
    for (let i = 0; i < n; i++) m.cacheLookup(keyspace, result)
  }
}

const KIT_METRICS = ['http_request_duration_seconds', 'http_requests_by_worker_total', 'cache_requests_total']
const only = (json) => json.filter((metric) => KIT_METRICS.includes(metric.name))

test('request durations, requests by worker and cache lookups export as prom-client exports them, ' +
  'per worker and summed', async (t) => {
  const kit = [createMetrics({ worker: 0 }), createMetrics({ worker: 1 })]
  t.after(() => kit.forEach((m) => m.stop()))
  const theirs = [promClientWorker(0), promClientWorker(1)]
  kit.forEach((m, w) => record(m, w / 1000))
  theirs.forEach((m, w) => record(m, w / 1000))

  const ours = await Promise.all(kit.map(async (m) => only(await m.registry.getMetricsAsJSON())))
  const expected = await Promise.all(theirs.map((m) => m.registry.getMetricsAsJSON()))
  assert.equal(await aggregate(ours), await aggregate(expected), 'the summed scrape')
  for (const w of [0, 1]) assert.equal(await aggregate([ours[w]]), await aggregate([expected[w]]), `worker ${w} alone`)

  // Counted since the last scrape only once: a second scrape with one more request adds just it.
  kit[0].requestAnswered('GET', '/products/:id', 200, 0.001)
  theirs[0].requestAnswered('GET', '/products/:id', 200, 0.001)
  assert.equal(
    await aggregate([only(await kit[0].registry.getMetricsAsJSON())]),
    await aggregate([await theirs[0].registry.getMetricsAsJSON()])
  )
})
