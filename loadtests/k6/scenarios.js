// The one source of the load tests: the SLOs, the default rate and duration, and each scenario's
// traffic (which requests, in what proportions, which answers count as errors). Plain JavaScript
// with no k6 import, so that both generators read it:
//   - the k6 scripts beside it (what k6-operator TestRuns run in a cluster: charts/loadtest), and
//   - the local runner on vegeta (loadtests/lib/vegeta.js: the ladder, the matrix, npm run bench's
//     fixed-rate cases, the dashboards test).
// Every setting NAME is read from an environment object (k6: __ENV; locally: --env NAME=VALUE) as
// <SERVICE>_NAME (PRODUCT_RATE) or, for every scenario, NAME (RATE).
import { range, weights, weighted, uniform, spread, hotOrUniform, page } from './mix.js'
import { SLO } from './slo.js'

export { SLO }

/** Arrival rate (requests or iterations per second) and duration when none is given. */
export const DEFAULTS = { rate: 10, duration: '30s' }

/** npm start's ports: the default BASE_URL of each scenario (services/list.js, through services.js). */
import { PORTS } from './services.js'
export { PORTS }

/** The settings of one scenario: get(NAME, fallback) and number(NAME, fallback). */
export function settings (env, service) {
  const get = (name, fallback) => {
    const v = env[`${service.toUpperCase()}_${name}`] ?? env[name]
    return v === undefined || v === '' ? fallback : String(v)
  }
  const number = (name, fallback) => {
    const v = Number(get(name, fallback))
    if (!Number.isFinite(v)) throw new Error(`${name} must be a number (got "${get(name)}")`)
    return v
  }
  return { get, number }
}

/** BASE_URL, which may list several (comma-separated): the client then sends round robin over them. */
export function baseUrls (env, service) {
  return settings(env, service).get('BASE_URL', `http://localhost:${PORTS[service]}`).split(',')
    .map((u) => u.trim().replace(/\/$/, ''))
}

/** The SLOs of a scenario, with its P95_MS / P99_MS / ERROR_RATE settings applied. */
export function slo (env, service) {
  const s = settings(env, service)
  return {
    p95Ms: s.number('P95_MS', SLO.p95Ms),
    p99Ms: s.number('P99_MS', SLO.p99Ms),
    errorRate: s.number('ERROR_RATE', SLO.errorRate),
    maxDropped: SLO.maxDropped,
    maxLateMs: s.number('LATE_MS', SLO.maxLateMs)
  }
}

/**
 * Requests in flight at most: rate × latency needs that many at once. MAX_VUS, else the rate
 * (a whole second of latency) within [20, 2000]. k6 makes that many VUs at most; vegeta that
 * many workers. When all are busy a request cannot leave on time: k6 drops the iteration, vegeta
 * sends it late — both counted, and more than SLO.maxDropped of them breaks a step.
 */
export function maxInFlight (env, service, rate) {
  return Math.max(settings(env, service).number('MAX_VUS', Math.min(Math.max(rate, 20), 2000)), 1)
}

// A read by id may find nothing: the catalogue has gaps in its ids, the loaders reject planted rows,
// so a 404 there is an answer. An If-Match write that lost a race is answered 412: optimistic
// concurrency working. Any other status ≥ 400, a timeout or a reset is an error.
const FOUND_OR_NOT = [404]
const WRITTEN_OR_CONFLICT = [412]

const product = {
  param: 'id',
  routes: {
    'GET /products': [],
    'GET /products/:id': FOUND_OR_NOT,
    'GET /products/:id/styles': FOUND_OR_NOT,
    'GET /products/:id/related': FOUND_OR_NOT
  },
  // IDS: the id range (npm start's sample: 1-2000); PRODUCTS: rows, for the page count (default: the
  // range's size); HOT_IDS (100) ids spread over the range get HOT_SHARE (0.5) of the reads by id;
  // COUNTS: page sizes drawn uniformly (5); MIX: route weights. List pages: the journal's mix, 10% of
  // list requests on the last 10% of the pages.
  make (s) {
    const [lo, hi] = range(s.get('IDS', '1-2000'))
    const products = s.number('PRODUCTS', hi - lo + 1)
    const ids = { hot: spread(lo, hi, s.number('HOT_IDS', 100)), share: s.number('HOT_SHARE', 0.5), lo, hi }
    const counts = s.get('COUNTS', '5').split(',').map(Number)
    const mix = weights(s.get('MIX', 'list:2,product:3,styles:3,related:2'))
    return (rand) => {
      const route = weighted(rand, mix)
      if (route === 'list') {
        const count = counts[Math.floor(rand() * counts.length)]
        const p = page(rand, Math.max(1, Math.ceil(products / count)))
        return { method: 'GET', path: `/products?page=${p}&count=${count}`, name: 'GET /products' }
      }
      const suffix = route === 'product' ? '' : `/${route}`
      return {
        method: 'GET',
        path: `/products/${hotOrUniform(rand, ids)}${suffix}`,
        name: `GET /products/:id${suffix}`
      }
    }
  }
}

/** A valid restaurant profile, its fields drawn from `n` (the load tests', benchmarks' and e2e's writes). */
export const restaurant = (n) => ({
  name: `Load Test Kitchen ${n}`,
  address: `${n} Main St, Springfield`,
  phone: '(555) 010-0000',
  picture: `https://images.example/${n}.jpg`,
  cuisine: 'Thai',
  price_range: 1 + (n % 4),
  stars: (n % 51) / 10,
  quality: n % 101,
  delivery: (n * 7) % 101,
  accuracy: (n * 13) % 101
})

const profile = {
  param: 'id',
  routes: {
    'GET /restaurants/:id': FOUND_OR_NOT,
    'GET /restaurants/:id/profile': FOUND_OR_NOT,
    'POST /restaurants': [],
    'PUT /restaurants/:id': WRITTEN_OR_CONFLICT,
    'PATCH /restaurants/:id': WRITTEN_OR_CONFLICT
  },
  // IDS: the id range (npm start: 1-2000); reads: HOT_IDS (20) ids spread over it get HOT_SHARE (0.75),
  // the rest uniform (the seed's measurement), on the two read routes by READ_MIX; WRITE_SHARE (0.1)
  // of the draws write, by WRITE_MIX: POST a new restaurant, or read-modify-write one with PUT /
  // PATCH — a GET for its ETag first, then the write with If-Match, as a real client does (`then`).
  make (s) {
    const [lo, hi] = range(s.get('IDS', '1-2000'))
    const reads = { hot: spread(lo, hi, s.number('HOT_IDS', 20)), share: s.number('HOT_SHARE', 0.75), lo, hi }
    const writeShare = s.number('WRITE_SHARE', 0.1)
    const readMix = weights(s.get('READ_MIX', 'restaurant:4,profile:1'))
    const writeMix = weights(s.get('WRITE_MIX', 'post:1,put:2,patch:2'))
    return (rand) => {
      if (rand() < writeShare) {
        const kind = weighted(rand, writeMix)
        const n = Math.floor(rand() * 1e9)
        if (kind === 'post') {
          return { method: 'POST', path: '/restaurants', name: 'POST /restaurants', body: restaurant(n) }
        }
        const path = `/restaurants/${uniform(rand, lo, hi)}`
        const method = kind.toUpperCase()
        return {
          method: 'GET',
          path,
          name: 'GET /restaurants/:id',
          then: (etag) => ({
            method,
            path,
            name: `${method} /restaurants/:id`,
            body: kind === 'put' ? restaurant(n) : { quality: n % 101 },
            headers: { 'if-match': etag }
          })
        }
      }
      const compat = weighted(rand, readMix) === 'profile' ? '/profile' : ''
      return {
        method: 'GET',
        path: `/restaurants/${hotOrUniform(rand, reads)}${compat}`,
        name: `GET /restaurants/:id${compat}`
      }
    }
  }
}

const menu = {
  param: 'id',
  routes: { 'GET /restaurants/:id/menu': FOUND_OR_NOT, 'GET /menu/:id': FOUND_OR_NOT },
  // Reads uniform over all menus (the seed's randomized requests, which a cache only helps once much
  // of the set is in it), IDS (1-2000); MIX: the API path and the original client's /menu/:id.
  make (s) {
    const [lo, hi] = range(s.get('IDS', '1-2000'))
    const mix = weights(s.get('MIX', 'api:4,original:1'))
    return (rand) => {
      const id = uniform(rand, lo, hi)
      return weighted(rand, mix) === 'api'
        ? { method: 'GET', path: `/restaurants/${id}/menu`, name: 'GET /restaurants/:id/menu' }
        : { method: 'GET', path: `/menu/${id}`, name: 'GET /menu/:id' }
    }
  }
}

const flows = {
  param: 'id',
  routes: { 'POST /flows': [], 'GET /flows': [] },
  // POST_SHARE (0.8) of the draws POST a batch of BATCH (5, the seed's wrk script) records over APPS
  // (20) source × destination apps and VPCS (4) VPCs, with a fresh Idempotency-Key as a client that
  // retries must send; the rest GET an hour's totals. HOURS: the hours written and read. Fewer
  // APPS: hotter keys, more contention on the same rows (the seed's case).
  make (s) {
    const [firstHour, lastHour] = range(s.get('HOURS', '1-24'))
    const postShare = s.number('POST_SHARE', 0.8)
    const batch = s.number('BATCH', 5)
    const apps = s.number('APPS', 20)
    const vpcs = s.number('VPCS', 4)
    const record = (rand, hour) => ({
      src_app: `app-${uniform(rand, 1, apps)}`,
      dest_app: `app-${uniform(rand, 1, apps)}`,
      vpc_id: `vpc-${uniform(rand, 0, vpcs - 1)}`,
      bytes_tx: uniform(rand, 0, 100000),
      bytes_rx: uniform(rand, 0, 100000),
      hour
    })
    return (rand) => {
      const hour = uniform(rand, firstHour, lastHour)
      if (rand() >= postShare) return { method: 'GET', path: `/flows?hour=${hour}`, name: 'GET /flows' }
      const key = `${Date.now().toString(36)}-${rand().toString(36).slice(2)}`
      return {
        method: 'POST',
        path: '/flows',
        name: 'POST /flows',
        body: Array.from({ length: batch }, () => record(rand, hour)),
        headers: { 'idempotency-key': key }
      }
    }
  }
}

// One scenario per service of services/list.js (a missing one is a ReferenceError here).
// generated by npm run generate from services/list.js: scenarios
const SCENARIOS = { product, profile, menu, flows }
// end generated: scenarios
export const SCENARIO_NAMES = Object.keys(SCENARIOS)

/**
 * A scenario with its settings from `env`: { name, draw(rand), routes, classify(method, url) }.
 * draw(rand) returns the next request, { method, path, name, body?, headers?, then? }; `then(etag)`,
 * when present, is the write to send once this read has answered 200 with that ETag.
 * classify(method, url) gives { name, expected(status) } for an answer: its route, and whether the
 * status is an answer rather than an error.
 */
export function scenario (service, env = {}) {
  const def = SCENARIOS[service]
  if (!def) throw new Error(`unknown scenario ${service}: one of ${SCENARIO_NAMES.join(', ')}`)
  const draw = def.make(settings(env, service))
  const classify = (method, url) => {
    const path = url.replace(/^[a-z]+:\/\/[^/]+/, '').replace(/\?.*$/, '')
    const name = `${method} ${path.replace(/\/\d+(?=\/|$)/g, `/:${def.param}`)}`
    const allow = def.routes[name] ?? []
    return { name, expected: (status) => (status >= 200 && status < 400) || allow.includes(status) }
  }
  return { name: service, draw, routes: def.routes, classify }
}

/**
 * The k6 scenarios one run is made of, in order: { name, service, env } — `env` with the settings of
 * that one scenario. PLAN=run (default): each service once, all at once, named by the service.
 * PLAN=ladder: each service at every rate of STEPS (comma-separated), STEP_SECONDS each and
 * PAUSE_SECONDS apart, one service's ladder after the other's; named <service>_<rate>rps. PLAN=matrix:
 * fixed work (EXECUTOR=iterations) REPEAT times, each cut at SLOT_SECONDS, one after another; named
 * <service>_run<n>. One k6 process runs the whole plan, so a cluster needs one runner for it rather
 * than one per step (the chart's TestRun).
 */
export function runPlan (env, services) {
  const plan = env.PLAN || 'run'
  const number = (name, fallback) => {
    const v = Number(env[name] ?? fallback)
    if (!(v > 0)) throw new Error(`${name} must be a number above 0 (got "${env[name]}")`)
    return v
  }
  const one = (service, name, at, own) => {
    const prefix = `${service.toUpperCase()}_`
    const prefixed = Object.entries({ ...own, START_TIME: `${at}s` }).map(([k, v]) => [prefix + k, String(v)])
    return { name, service, env: { ...env, ...Object.fromEntries(prefixed) } }
  }
  if (plan === 'run') return services.map((service) => ({ name: service, service, env }))
  if (plan === 'ladder') {
    const steps = String(env.STEPS ?? '1,10,100,1000').split(',').map((r) => Number(r.trim()))
    if (steps.some((r) => !(r > 0))) throw new Error(`STEPS must list rates above 0 (got "${env.STEPS}")`)
    const step = number('STEP_SECONDS', 60)
    const slot = step + number('PAUSE_SECONDS', 30)
    return services.flatMap((service, i) => steps.map((rate, j) =>
      one(service, `${service}_${rate}rps`, (i * steps.length + j) * slot, { RATE: rate, DURATION: `${step}s` })))
  }
  if (plan === 'matrix') {
    const repeat = number('REPEAT', 5)
    const slot = number('SLOT_SECONDS', 180)
    return services.flatMap((service, i) => Array.from({ length: repeat }, (_, j) =>
      one(service, `${service}_run${j + 1}`, (i * repeat + j) * slot,
        { EXECUTOR: 'iterations', DURATION: `${slot}s` })))
  }
  throw new Error(`PLAN must be run, ladder or matrix (got "${plan}")`)
}

/**
 * The k6 options of the scenarios in `services` (a k6 script's `options`), from `env`, as runPlan
 * lays them out. Each scenario:
 * EXECUTOR=rate (default): constant-arrival-rate, RATE iterations per second for DURATION whatever
 * the latency — an open loop, so a slow target cannot lower the load it gets (VUs + sleep sends less
 * when the target slows, and more than meant when it is fast).
 * EXECUTOR=iterations: ITERATIONS in total over VUS connections, as fast as they go — fixed work
 * timed, the method of the scale-out matrix (seed 003). START_TIME delays a scenario. The thresholds
 * are the SLOs, per scenario (a ladder's step breaks on its own). With TESTID set, each scenario tags
 * its samples testid=<TESTID>-<name> (a scenario's tags win over the run's --tag), so that a
 * dashboard tells a ladder's steps apart.
 */
export function k6Options (env, services) {
  const plan = runPlan(env, services)
  const scenarioOf = ({ name, service, env }) => {
    const s = settings(env, service)
    const common = { exec: service, startTime: s.get('START_TIME', '0s'), gracefulStop: '5s' }
    if (env.TESTID) common.tags = { testid: `${env.TESTID}-${name.replaceAll('_', '-')}` }
    if (s.get('EXECUTOR', 'rate') === 'iterations') {
      return {
        ...common,
        executor: 'shared-iterations',
        vus: s.number('VUS', 32),
        iterations: s.number('ITERATIONS', 10000),
        maxDuration: s.get('DURATION', '10m')
      }
    }
    const rate = s.number('RATE', DEFAULTS.rate)
    const maxVUs = maxInFlight(env, service, rate)
    return {
      ...common,
      executor: 'constant-arrival-rate',
      rate,
      timeUnit: '1s',
      duration: s.get('DURATION', DEFAULTS.duration),
      // Enough VUs made before the start for 100 ms of latency (a VU made mid-run costs time and
      // drops iterations meanwhile); k6 adds more up to maxVUs.
      preAllocatedVUs: Math.min(s.number('PRE_VUS', Math.ceil(rate * 0.1) + 10), maxVUs),
      maxVUs
    }
  }
  const thresholdsOf = ({ name, service, env }) => {
    const tag = `{scenario:${name}}`
    const o = slo(env, service)
    const t = {
      [`http_req_duration${tag}`]: [`p(95)<=${o.p95Ms}`, `p(99)<=${o.p99Ms}`],
      [`http_req_failed${tag}`]: [`rate<${o.errorRate}`]
    }
    const s = settings(env, service)
    if (s.get('EXECUTOR', 'rate') === 'rate') {
      t[`dropped_iterations${tag}`] = [`rate<=${s.number('RATE', DEFAULTS.rate) * o.maxDropped}`]
    }
    return t
  }
  return {
    scenarios: Object.fromEntries(plan.map((p) => [p.name, scenarioOf(p)])),
    thresholds: Object.assign({}, ...plan.map(thresholdsOf)),
    summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
    // Bodies are received in full but not kept: the generator's CPU goes to sending.
    discardResponseBodies: true,
    // A URL with a random id is a new series in Prometheus: requests are named by route instead.
    systemTags: ['status', 'method', 'name', 'scenario', 'expected_response', 'error_code', 'check']
  }
}
