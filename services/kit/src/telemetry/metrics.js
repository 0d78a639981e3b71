// Prometheus metrics. Each worker thread counts into its own registry; a scrape that lands on any
// worker asks the main thread, which gathers every worker's registry and sums them (workers.js), so
// one scrape always shows the whole pod.
import client from 'prom-client'
import { getHeapStatistics } from 'node:v8'
import { totalmem } from 'node:os'

// Fine at the bottom: a cache hit is answered in well under a millisecond.
const LAG_SAMPLE_MS = 10

export const DURATION_BUCKETS = [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

/** The registry of one worker thread. */
export function createMetrics ({ worker = 0 } = {}) {
  const registry = new client.Registry()
  const m = { registry, worker: String(worker) }
  const opts = (o) => ({ registers: [registry], ...o })

  // What every request counts is recorded in plain numbers and handed to the registry when a scrape
  // collects it: prom-client's observe() and inc() check and hash their labels on every call, on the
  // path of every cached read (docs/decisions/0007-request-metrics-in-plain-numbers.md).
  const durations = requestDurations(opts({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route, method and status code',
    buckets: DURATION_BUCKETS
  }))
  let served = 0
  new client.Counter(opts({ // eslint-disable-line no-new -- made for its registration: the registry calls its collect()
    name: 'http_requests_by_worker_total',
    help: 'HTTP requests answered by each worker thread (how evenly the kernel spreads connections)',
    labelNames: ['worker'],
    collect () { this.inc({ worker: m.worker }, served); served = 0 }
  }))
  /**
   * One request answered: its duration by method, route pattern and status; `sampled`, the span context
   * of a sampled trace, becomes the exemplar of the bucket the duration falls in.
   */
  m.requestAnswered = (method, route, status, seconds, sampled) => {
    durations.observe(method, route, status, seconds, sampled)
    served++
  }
  const lookups = new Map() // keyspace -> { hit, miss, error, bypass }: counts not yet collected
  new client.Counter(opts({ // eslint-disable-line no-new -- made for its registration: the registry calls its collect()
    name: 'cache_requests_total',
    help: 'cache lookups by keyspace and result (hit, miss, error: Redis failed and the request went to the database)',
    labelNames: ['keyspace', 'result'],
    collect () {
      for (const [keyspace, counts] of lookups) {
        for (const result in counts) if (counts[result]) this.inc({ keyspace, result }, counts[result])
      }
      lookups.clear()
    }
  }))
  /** One cache lookup of `keyspace`: 'hit', 'miss', 'error' or 'bypass'. */
  m.cacheLookup = (keyspace, result) => {
    let counts = lookups.get(keyspace)
    if (!counts) lookups.set(keyspace, (counts = { hit: 0, miss: 0, error: 0, bypass: 0 }))
    counts[result]++
  }
  m.cacheLoads = new client.Counter(opts({
    name: 'cache_loads_total',
    help: 'database loads behind cache misses; concurrent misses of one key share one load',
    labelNames: ['keyspace']
  }))
  // 1 once the worker listens (instance.js sets `serving`): a worker still opening its pool answers
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

/**
 * A histogram of request durations by method, route and status_code, in the registry as prom-client's
 * own histograms are (the same export, summed across workers by the main thread alike), its
 * observe() a Map lookup and a few additions. Each bucket keeps the latest sampled trace that fell in
 * it as its exemplar (OpenMetrics), which the main thread's sum keeps too (sumWithExemplars).
 */
function requestDurations ({ name, help, buckets, registers }) {
  const series = new Map() // "method status route" -> { labels, counts per bucket, count, sum }
  const metric = {
    name,
    help,
    type: 'histogram',
    aggregator: 'sumWithExemplars',
    observe (method, route, status, seconds, sampled) {
      const key = `${method} ${status} ${route}`
      let s = series.get(key)
      if (!s) {
        series.set(key, (s = {
          labels: { method, route, status_code: status },
          counts: new Float64Array(buckets.length),
          count: 0,
          sum: 0,
          exemplars: null
        }))
      }
      let i = 0
      while (i < buckets.length && seconds > buckets[i]) i++
      if (i < buckets.length) s.counts[i]++
      s.count++
      s.sum += seconds
      if (sampled) {
        // one per bucket, the +Inf one last; the timestamp in seconds, as OpenMetrics writes it
        s.exemplars ??= new Array(buckets.length + 1)
        s.exemplars[i] = {
          labelSet: { trace_id: sampled.traceId, span_id: sampled.spanId },
          value: seconds,
          timestamp: Date.now() / 1000
        }
      }
    },
    async get () {
      const values = []
      for (const { labels, counts, count, sum, exemplars } of series.values()) {
        let below = 0
        buckets.forEach((le, i) => {
          below += counts[i]
          values.push({
            labels: { le, ...labels },
            value: below,
            metricName: `${name}_bucket`,
            ...(exemplars?.[i] && { exemplar: exemplars[i] })
          })
        })
        values.push({
          labels: { le: '+Inf', ...labels },
          value: count,
          metricName: `${name}_bucket`,
          ...(exemplars?.[buckets.length] && { exemplar: exemplars[buckets.length] })
        })
        values.push({ labels, value: sum, metricName: `${name}_sum` })
        values.push({ labels, value: count, metricName: `${name}_count` })
      }
      return { name, help, type: 'histogram', values, aggregator: 'sumWithExemplars' }
    },
    reset () { series.clear() }
  }
  for (const registry of registers) registry.registerMetric(metric)
  return metric
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

/** The main thread's own registry: process-wide CPU, memory, file descriptors, and the memory limit. */
export function createProcessMetrics () {
  const registry = new client.Registry()
  client.collectDefaultMetrics({ register: registry })
  // The container's memory limit (its cgroup), beside process_resident_memory_bytes: how near the
  // kernel's OOM kill the pod runs. No series without a limit.
  const limit = process.constrainedMemory?.() ?? 0
  if (limit > 0 && limit < totalmem()) {
    new client.Gauge({
      name: 'process_memory_limit_bytes',
      help: 'the memory limit of the process\'s container (cgroup)',
      registers: [registry]
    }).set(limit)
  }
  return registry
}

/** A gauge of a cache's circuit breaker: 1 while it keeps Redis out of the way (cache.state() is 'bypassed'). */
export function cacheMetrics (metrics, cache) {
  new client.Gauge({ // eslint-disable-line no-new -- made for its registration: the registry calls its collect()
    name: 'cache_breaker_open',
    help: 'worker threads whose Redis circuit breaker is open ' +
      '(reads and writes bypass Redis until a probe finds it back)',
    registers: [metrics.registry],
    collect () { this.set(cache.state() === 'bypassed' ? 1 : 0) }
  })
  // The near cache of each worker, as a state set: 1 for the state it is in. Summed over a pod's
  // workers, the series of a state count the workers in it.
  new client.Gauge({ // eslint-disable-line no-new -- made for its registration: the registry calls its collect()
    name: 'cache_near_state',
    help: 'near cache of each worker thread: 1 for its state (off: CACHE_NEAR_MAX_BYTES is 0 or there is no ' +
      'Redis; setting_up: not yet listening and tracking, or Redis is away; on)',
    labelNames: ['worker', 'state'],
    registers: [metrics.registry],
    collect () {
      const now = cache.nearState().replace(' ', '_')
      for (const state of NEAR_STATES) this.set({ worker: metrics.worker, state }, state === now ? 1 : 0)
    }
  })
  let counted = 0
  new client.Counter({ // eslint-disable-line no-new -- made for its registration: the registry calls its collect()
    name: 'cache_near_setup_failures_total',
    help: 'near cache set-ups that failed (a command timed out or was refused) and were tried again',
    labelNames: ['worker'],
    registers: [metrics.registry],
    collect () {
      const failures = cache.nearSetupFailures()
      this.inc({ worker: metrics.worker }, failures - counted)
      counted = failures
    }
  })
}
const NEAR_STATES = ['off', 'setting_up', 'on']

// prom-client's sum, keeping each series' latest exemplar across the registries summed.
client.aggregators.sumWithExemplars = (metrics) => {
  const summed = client.aggregators.sum(metrics)
  const latest = new Map()
  const keyOf = (v) => `${v.metricName} ${Object.entries(v.labels).sort().join(',')}`
  for (const m of metrics) {
    for (const v of m.values) {
      if (v.exemplar && !(latest.get(keyOf(v))?.timestamp >= v.exemplar.timestamp)) latest.set(keyOf(v), v.exemplar)
    }
  }
  if (latest.size) for (const v of summed.values) v.exemplar = latest.get(keyOf(v))
  return summed
}

/** The exposition formats a scrape may ask for: Prometheus text, or OpenMetrics (with exemplars). */
export const FORMATS = {
  prometheus: client.Registry.PROMETHEUS_CONTENT_TYPE,
  openmetrics: client.Registry.OPENMETRICS_CONTENT_TYPE
}

/** The format an Accept header asks for: OpenMetrics when it names it (Prometheus does), else the text format. */
export const formatFor = (accept = '') => (
  accept.includes('application/openmetrics-text') ? 'openmetrics' : 'prometheus'
)

/** Sums the JSON of several registries into one exposition in `format` (a key of FORMATS). */
export async function aggregate (metricsJson, format = 'prometheus') {
  // OpenMetrics names a counter without its _total (its samples have it). prom-client renames the
  // counters of a registry of its own as it writes them, but not those of an aggregated one, which
  // would come out as `<name>_total_total`: the JSON is renamed before the sum instead.
  const json = format === 'openmetrics'
    ? metricsJson.map((metrics) => metrics.map((m) => (
        m.type === 'counter' && m.name.endsWith('_total') ? { ...m, name: m.name.slice(0, -'_total'.length) } : m
      )))
    : metricsJson
  return client.AggregatorRegistry.aggregate(json, FORMATS[format]).metrics()
}

/** prom-client itself, for a service's own metrics (registered in `app.metrics.registry`). */
export { client as promClient }
