// Prometheus metrics. Each worker thread counts into its own registry; a scrape that lands on any
// worker asks the main thread, which gathers every worker's registry and sums them (workers.js), so
// one scrape always shows the whole pod.
import client from 'prom-client'
import { getHeapStatistics } from 'node:v8'

// Fine at the bottom: a cache hit is answered in well under a millisecond.
const LAG_SAMPLE_MS = 10

export const DURATION_BUCKETS = [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

/** The registry of one worker thread. */
export function createMetrics ({ worker = 0 } = {}) {
  const registry = new client.Registry()
  const m = { registry, worker: String(worker) }
  const opts = (o) => ({ registers: [registry], ...o })

  m.httpDuration = new client.Histogram(opts({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route, method and status code',
    labelNames: ['method', 'route', 'status_code'],
    buckets: DURATION_BUCKETS
  }))
  m.workerRequests = new client.Counter(opts({
    name: 'http_requests_by_worker_total',
    help: 'HTTP requests answered by each worker thread (how evenly the kernel spreads connections)',
    labelNames: ['worker']
  }))
  m.cacheRequests = new client.Counter(opts({
    name: 'cache_requests_total',
    help: 'cache lookups by keyspace and result (hit, miss, error: Redis failed and the request went to the database)',
    labelNames: ['keyspace', 'result']
  }))
  m.cacheLoads = new client.Counter(opts({
    name: 'cache_loads_total',
    help: 'database loads behind cache misses; concurrent misses of one key share one load',
    labelNames: ['keyspace']
  }))
  // 1 once the worker listens (worker.js sets `serving`): a worker still opening its pool answers
  // scrapes already, but serves nothing yet.
  m.serving = false
  new client.Gauge(opts({ // eslint-disable-line no-new -- made for its registration: the registry calls its collect()
    name: 'service_workers',
    help: 'worker threads serving (listening on the port)',
    collect () { this.set(m.serving ? 1 : 0) }
  }))

  // The process metrics (nodejs_heap_*) are the main thread's; each worker's own V8 heap is here,
  // so a pod's memory can be split between its threads.
  new client.Gauge(opts({ // eslint-disable-line no-new -- made for its registration: the registry calls its collect()
    name: 'worker_heap_bytes',
    help: 'V8 heap of each worker thread: total (reserved by its spaces) and used',
    labelNames: ['worker', 'kind'],
    collect () {
      const heap = getHeapStatistics()
      this.set({ worker: m.worker, kind: 'total' }, heap.total_heap_size)
      this.set({ worker: m.worker, kind: 'used' }, heap.used_heap_size)
    }
  }))

  // Event-loop delay as a cumulative histogram: how late a 10 ms timer fires, every time. Counters
  // never reset, so any number of scrapers each see every sample and a spike stays in the buckets
  // (a gauge of percentiles reset at each scrape split the samples between scrapers and lost spikes).
  const lag = new client.Histogram(opts({
    name: 'worker_eventloop_lag_seconds',
    help: 'event-loop delay of each worker thread: how late a 10 ms timer fires, sampled every time it does',
    labelNames: ['worker'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]
  }))
  const lagOf = lag.labels({ worker: m.worker })
  let last = performance.now()
  const sampler = setInterval(() => {
    const now = performance.now()
    lagOf.observe(Math.max(0, now - last - LAG_SAMPLE_MS) / 1000)
    last = now
  }, LAG_SAMPLE_MS)
  sampler.unref()
  m.stop = () => clearInterval(sampler)
  return m
}

/** Gauges of a pg Pool, read at scrape time. */
export function poolMetrics (metrics, pool, max) {
  const opts = (o) => ({ registers: [metrics.registry], ...o })
  new client.Gauge(opts({ // eslint-disable-line no-new -- made for its registration: the registry calls its collect()
    name: 'pg_pool_connections',
    help: 'PostgreSQL pool connections by state (active: lent to a query)',
    labelNames: ['state'],
    collect () {
      this.set({ state: 'idle' }, pool.idleCount)
      this.set({ state: 'active' }, pool.totalCount - pool.idleCount)
      this.set({ state: 'max' }, max)
    }
  }))
  new client.Gauge(opts({ // eslint-disable-line no-new -- made for its registration: the registry calls its collect()
    name: 'pg_pool_waiting_requests',
    help: 'queries waiting for a free PostgreSQL connection',
    collect () { this.set(pool.waitingCount) }
  }))
}

/** The main thread's own registry: process-wide CPU, memory, file descriptors. */
export function createProcessMetrics () {
  const registry = new client.Registry()
  client.collectDefaultMetrics({ register: registry })
  return registry
}

/** Sums the JSON of several registries into one Prometheus text exposition. */
export async function aggregate (metricsJson) {
  return client.AggregatorRegistry.aggregate(metricsJson).metrics()
}

export const contentType = client.Registry.PROMETHEUS_CONTENT_TYPE

/** prom-client itself, for a service's own metrics (registered in `app.metrics.registry`). */
export { client as promClient }
