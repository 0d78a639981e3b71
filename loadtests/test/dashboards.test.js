// Every PromQL expression of every shipped Grafana dashboard, evaluated against a real Prometheus
// that scraped the four services under load and took a k6 run by remote write: none may fail or
// come back empty. Also: the scenarios' traffic reached every route they are meant to exercise.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { adminUrl, redisUrl } from '@suite/kit/testing/env'
import { prepareDatabase, startInstances, SERVICE_NAMES } from '../lib/stack.js'
import { startPrometheus } from '../lib/prometheus.js'
import { runK6, figures, scriptOf } from '../lib/k6.js'
import { targets, queryVariables, builtins, interpolate, variableValues } from '../lib/grafana.js'

const DASHBOARDS = fileURLToPath(new URL('../../charts/suite/dashboards/', import.meta.url))
const NAMESPACE = 'suite-test'
const TESTID = 'dashboards-test'
const SCRAPE_SECONDS = 1

const dashboards = readdirSync(DASHBOARDS).filter((f) => f.endsWith('.json'))
  .map((f) => ({ file: f, json: JSON.parse(readFileSync(DASHBOARDS + f, 'utf8')) }))
  .filter((d) => Array.isArray(d.json.panels)) // a Grafana dashboard, not some other JSON
let prom, window, k6run
const stops = []

before(async () => {
  const jobs = {}
  const env = {}
  await Promise.all(SERVICE_NAMES.map(async (service) => {
    const db = await prepareDatabase(service, { adminUrl, rows: 300 })
    // Two product pods with two threads each: replicas and per-worker panels have something to count.
    const two = service === 'product' ? 2 : 1
    const procs = await startInstances(service, { count: two, workers: two, databaseUrl: db.url, redisUrl })
    stops.push(...procs.map((p) => () => p.stop()))
    jobs[service] = procs.map((p) => p.url)
    Object.assign(env, db.env, { [`${service.toUpperCase()}_BASE_URL`]: jobs[service].join(',') })
  }))
  prom = await startPrometheus({ jobs, namespace: NAMESPACE, scrapeSeconds: SCRAPE_SECONDS })
  stops.push(() => prom.stop())
  const start = Date.now() / 1000
  k6run = await runK6({
    script: scriptOf('suite'),
    env: {
      ...env,
      RATE: '25',
      // Correctness, not speed (a shared CI machine is no place to time anything): latency SLOs
      // out of reach, VUs made before the start for slow moments; errors must still be none.
      P95_MS: '10000',
      P99_MS: '10000',
      PRE_VUS: '50',
      MAX_VUS: '200',
      PROFILE_WRITE_SHARE: '0.3', // enough writes in 8 s that POST, PUT and PATCH each occur
      DURATION: '8s',
      K6_PROMETHEUS_RW_SERVER_URL: prom.writeUrl,
      // A push per scrape interval: the dashboards' rate() windows assume that spacing.
      K6_PROMETHEUS_RW_PUSH_INTERVAL: `${SCRAPE_SECONDS}s`,
      K6_PROMETHEUS_RW_TREND_STATS: 'p(50),p(95),p(99),max'
    },
    outputs: ['experimental-prometheus-rw'],
    tags: { testid: TESTID }
  })
  await sleep(3 * SCRAPE_SECONDS * 1000) // the scrapes after the last requests
  window = { start, end: Date.now() / 1000 }
})

after(() => Promise.allSettled(stops.map((s) => s())))

/** The variables of a dashboard, each at "All" (every value its query finds), plus the built-ins. */
async function variablesOf (dashboard) {
  const b = builtins({ rangeMs: Math.round((window.end - window.start) * 1000), scrapeMs: SCRAPE_SECONDS * 1000 })
  const vars = { ...b, datasource: 'prometheus' }
  for (const v of queryVariables(dashboard)) {
    vars[v.name] = await variableValues(prom, interpolate(v.query, vars), window)
  }
  return vars
}

/** '' when `expr` returns data over the test window, else why not. */
async function problem (expr, vars, instant = false) {
  try {
    const q = interpolate(expr, vars)
    const data = instant
      ? await prom.api('query', { query: q, time: window.end })
      : await prom.api('query_range', { query: q, start: window.start, end: window.end, step: vars.intervalMs / 1000 })
    const values = data.result.flatMap((r) => r.values ?? [r.value]).map(([, v]) => Number(v))
    return values.some((v) => !Number.isNaN(v)) ? '' : 'no data'
  } catch (err) {
    return err.message
  }
}

test('the k6 run of all four scenarios sent its load without a failed request', () => {
  const f = figures(k6run.summary)
  assert.ok(f.requests > 4 * 25 * 8 * 0.8, `${f.requests} requests`)
  assert.equal(f.errorRate, 0, k6run.output)
})

test('there are dashboards to check, with a services and a k6 dashboard', () => {
  const titles = dashboards.map((d) => d.json.title)
  assert.ok(titles.length >= 2, titles.join())
  for (const d of dashboards) assert.ok(targets(d.json).length > 0, `${d.file} has no PromQL`)
})

test('panels are well formed: unique ids in a 24-column grid, the data source a variable, every service series selected by $service and $namespace', () => {
  const uids = dashboards.map((d) => d.json.uid)
  assert.equal(new Set(uids).size, uids.length, `duplicate uids: ${uids}`)
  for (const { file, json } of dashboards) {
    const panels = json.panels.flatMap((p) => [p, ...(p.panels ?? [])])
    const ids = panels.map((p) => p.id)
    assert.equal(new Set(ids).size, ids.length, `${file}: duplicate panel ids`)
    for (const p of panels) {
      assert.ok(p.gridPos.x + p.gridPos.w <= 24, `${file} "${p.title}" is wider than the grid`)
      if (p.type === 'row') continue
      for (const t of [p, ...p.targets]) assert.deepEqual(t.datasource, { type: 'prometheus', uid: '${datasource}' }, `${file} "${p.title}"`)
    }
  }
  const services = dashboards.find((d) => d.json.uid === 'suite-services').json
  for (const t of targets(services)) {
    for (const selector of t.expr.match(/\{[^}]*\}/g)) {
      assert.match(selector, /job=~"\$service".*namespace=~"\$namespace"/, `"${t.panel}": ${selector}`)
    }
  }
})

test('every template variable finds values, as in the cluster', async () => {
  const services = dashboards.find((d) => d.json.uid === 'suite-services').json
  const k6 = dashboards.find((d) => d.json.uid === 'suite-k6').json
  const sv = await variablesOf(services)
  assert.deepEqual(sv.namespace, [NAMESPACE])
  assert.deepEqual(sv.service, [...SERVICE_NAMES].sort())
  assert.ok((await variablesOf(k6)).testid.includes(TESTID))
  for (const d of dashboards) {
    const vars = await variablesOf(d.json)
    for (const v of queryVariables(d.json)) assert.ok(vars[v.name].length > 0, `${d.file}: $${v.name} has no values`)
  }
})

test('every panel expression of every dashboard returns data', async () => {
  const failures = []
  let checked = 0
  for (const d of dashboards) {
    const vars = await variablesOf(d.json)
    for (const t of targets(d.json)) {
      checked++
      const why = await problem(t.expr, vars, t.instant)
      if (why) failures.push(`${d.file} "${t.panel}" ${t.refId}: ${why}\n    ${t.expr}`)
    }
  }
  assert.deepEqual(failures, [], `${failures.length} of ${checked} expressions failed:\n${failures.join('\n')}`)
  assert.ok(checked >= 20, `only ${checked} expressions`)
})

test('the check fails an expression without data and one that is not PromQL', async () => {
  const vars = await variablesOf(dashboards[0].json)
  assert.equal(await problem('sum(rate(http_request_duration_seconds_count{job="no-such-service"}[$__rate_interval]))', vars), 'no data')
  assert.match(await problem('sum(rate(http_request_duration_seconds_count[$__rate_interval])', vars), /parse/)
  assert.match(await problem('up{job=~"$nosuchvariable"}', vars), /unknown variable/)
})

test('the scenarios reached every route they are written to exercise', async () => {
  const { result } = await prom.api('query', {
    query: 'sum by (job, method, route) (http_request_duration_seconds_count{route!~"/(metrics|healthz|readyz)"})',
    time: window.end
  })
  const seen = new Set(result.filter((r) => Number(r.value[1]) > 0).map((r) => `${r.metric.job} ${r.metric.method} ${r.metric.route}`))
  for (const route of [
    'product GET /products', 'product GET /products/:id', 'product GET /products/:id/styles', 'product GET /products/:id/related',
    'profile GET /restaurants/:id', 'profile GET /restaurants/:id/profile', 'profile POST /restaurants', 'profile PUT /restaurants/:id', 'profile PATCH /restaurants/:id',
    'menu GET /restaurants/:id/menu', 'menu GET /menu/:id',
    'flows POST /flows', 'flows GET /flows'
  ]) assert.ok(seen.has(route), `${route} got no requests; seen: ${[...seen].join(', ')}`)
})
