// Every PromQL expression of the shipped Grafana dashboards of the services, evaluated against a
// real Prometheus that scraped the four services under load (the four scenarios at once, sent by
// vegeta): none may fail or come back empty. Also: the scenarios' traffic reached every route they
// are meant to exercise. The k6 dashboard reads what k6 writes by remote write in a cluster; it is
// checked by promtool on k6's series (k6-dashboard.test.js): no k6 runs here.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { adminUrl, redisUrl } from '@suite/kit/testing/env'
import { prepareDatabase, startInstances, SERVICE_NAMES } from '../lib/stack.js'
import { startPrometheus } from '../lib/prometheus.js'
import { attackScenario } from '../lib/vegeta.js'
import { targets, queryVariables, builtins, interpolate, variableValues } from '../lib/grafana.js'

const DASHBOARDS = fileURLToPath(new URL('../../charts/suite/dashboards/', import.meta.url))
const NAMESPACE = 'suite-test'
const K6_DASHBOARD = 'suite-k6' // promtool's, in k6-dashboard.test.js
const RATE = 25
const SECONDS = 8
const SCRAPE_SECONDS = 1

const dashboards = readdirSync(DASHBOARDS).filter((f) => f.endsWith('.json'))
  .map((f) => ({ file: f, json: JSON.parse(readFileSync(DASHBOARDS + f, 'utf8')) }))
  .filter((d) => Array.isArray(d.json.panels)) // a Grafana dashboard, not some other JSON
  .filter((d) => d.json.uid !== K6_DASHBOARD)
let prom, window, load
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
  // Correctness, not speed (a shared CI machine is no place to time anything): errors must be none.
  load = await Promise.all(SERVICE_NAMES.map((service) => attackScenario(service, {
    env: { ...env, PROFILE_WRITE_SHARE: '0.3' }, // enough writes in 8 s that POST, PUT and PATCH each occur
    rate: RATE,
    seconds: SECONDS
  })))
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

test('the four scenarios sent their load at once without a failed request', () => {
  load.forEach((f, i) => {
    assert.ok(f.requests >= RATE * SECONDS * 0.9, `${SERVICE_NAMES[i]}: ${f.requests} requests`)
    assert.equal(f.errors, 0, `${SERVICE_NAMES[i]}: ${f.firstError}`)
  })
})

test('there are dashboards to check: the services\' here, the k6 one in k6-dashboard.test.js', () => {
  const uids = readdirSync(DASHBOARDS).filter((f) => f.endsWith('.json')).map((f) => JSON.parse(readFileSync(DASHBOARDS + f, 'utf8')).uid).sort()
  assert.deepEqual(uids, [K6_DASHBOARD, 'suite-services'], 'a new dashboard needs a test: here if its series come from the services')
  for (const d of dashboards) assert.ok(targets(d.json).length > 0, `${d.file} has no PromQL`)
})

test('panels are well formed: unique ids in a 24-column grid, the data source a variable, every service series selected by $service and $namespace', () => {
  const all = readdirSync(DASHBOARDS).filter((f) => f.endsWith('.json')).map((f) => ({ file: f, json: JSON.parse(readFileSync(DASHBOARDS + f, 'utf8')) }))
  const uids = all.map((d) => d.json.uid)
  assert.equal(new Set(uids).size, uids.length, `duplicate uids: ${uids}`)
  for (const { file, json } of all) {
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
  const sv = await variablesOf(services)
  assert.deepEqual(sv.namespace, [NAMESPACE])
  assert.deepEqual(sv.service, [...SERVICE_NAMES].sort())
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
