// The monitoring of the four services, live: a real Prometheus (exemplar storage on, the umbrella's
// PrometheusRule loaded) scrapes them under load (the four scenarios at once, sent by vegeta) while
// they send every trace to a real Jaeger. Every PromQL expression of the shipped Grafana dashboards,
// and every recording and alerting rule, must evaluate with data; a request of each service is one
// trace of the right shape; the latency histogram's exemplars lead to traces. Also: the scenarios'
// traffic reached every route they are meant to exercise. The k6 dashboard reads what k6 writes by
// remote write in a cluster; it is checked by promtool on k6's series (k6-dashboard.test.js): no k6
// runs here. The alerts fire and resolve in promtool's unit tests (charts/test/alerts.test.js).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { startJaeger } from '@suite/kit/testing'
import { adminUrl, redisUrl } from '@suite/kit/testing/env'
import { parse, run, umbrella } from '../../charts/test/lib.js'
import { prepareDatabase, startInstances, SERVICE_NAMES } from '../lib/stack.js'
import { startPrometheus } from '../lib/prometheus.js'
import { attackScenario } from '../lib/vegeta.js'
import { restaurant } from '../k6/scenarios.js'
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
let prom, jaeger, window, load, rules
const stops = []
const urls = {}

before(async () => {
  jaeger = await startJaeger()
  stops.push(() => jaeger.stop())
  // Every request traced, exported at once: the trace of any request of the load is in Jaeger.
  const tracing = {
    OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpHttp,
    OTEL_TRACES_SAMPLER: 'always_on',
    OTEL_BSP_SCHEDULE_DELAY: '200'
  }
  const jobs = {}
  const env = {}
  await Promise.all(SERVICE_NAMES.map(async (service) => {
    const db = await prepareDatabase(service, { adminUrl, rows: 300 })
    // Two product pods with two threads each: replicas and per-worker panels have something to count.
    const two = service === 'product' ? 2 : 1
    // In a memory cgroup, as in a pod: process_memory_limit_bytes, which SuiteMemoryNearLimit reads.
    const procs = await startInstances(service, {
      count: two, workers: two, databaseUrl: db.url, redisUrl, env: tracing, memoryLimitMb: 512
    })
    stops.push(...procs.map((p) => () => p.stop()))
    jobs[service] = procs.map((p) => p.url)
    urls[service] = jobs[service][0]
    Object.assign(env, db.env, { [`${service.toUpperCase()}_BASE_URL`]: jobs[service].join(',') })
  }))
  // The umbrella's PrometheusRule, rendered for this namespace: Prometheus evaluates it every scrape.
  const rendered = run('helm', [
    'template', 'r', umbrella(), '--namespace', NAMESPACE,
    '--api-versions', 'monitoring.coreos.com/v1/PrometheusRule',
    '--show-only', 'templates/prometheusrule.yaml'
  ])
  assert.equal(rendered.code, 0, rendered.stderr)
  rules = parse(rendered.stdout)[0].spec.groups
  prom = await startPrometheus({ jobs, namespace: NAMESPACE, scrapeSeconds: SCRAPE_SECONDS, groups: rules })
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
  const uids = readdirSync(DASHBOARDS).filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(DASHBOARDS + f, 'utf8')).uid).sort()
  assert.deepEqual(uids, [K6_DASHBOARD, 'suite-services'],
    'a new dashboard needs a test: here if its series come from the services')
  for (const d of dashboards) assert.ok(targets(d.json).length > 0, `${d.file} has no PromQL`)
})

test('panels are well formed: unique ids in a 24-column grid, the data source a variable, ' +
  'every service series selected by $service and $namespace', () => {
  const all = readdirSync(DASHBOARDS).filter((f) => f.endsWith('.json'))
    .map((f) => ({ file: f, json: JSON.parse(readFileSync(DASHBOARDS + f, 'utf8')) }))
  const uids = all.map((d) => d.json.uid)
  assert.equal(new Set(uids).size, uids.length, `duplicate uids: ${uids}`)
  for (const { file, json } of all) {
    const panels = json.panels.flatMap((p) => [p, ...(p.panels ?? [])])
    const ids = panels.map((p) => p.id)
    assert.equal(new Set(ids).size, ids.length, `${file}: duplicate panel ids`)
    for (const p of panels) {
      assert.ok(p.gridPos.x + p.gridPos.w <= 24, `${file} "${p.title}" is wider than the grid`)
      if (p.type === 'row') continue
      for (const t of [p, ...p.targets]) {
        assert.deepEqual(t.datasource, { type: 'prometheus', uid: '${datasource}' }, `${file} "${p.title}"`)
      }
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
    for (const v of queryVariables(d.json)) {
      assert.ok(vars[v.name].length > 0, `${d.file}: $${v.name} has no values`)
    }
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
  assert.equal(
    await problem('sum(rate(http_request_duration_seconds_count{job="no-such-service"}[$__rate_interval]))', vars),
    'no data'
  )
  assert.match(await problem('sum(rate(http_request_duration_seconds_count[$__rate_interval])', vars), /parse/)
  assert.match(await problem('up{job=~"$nosuchvariable"}', vars), /unknown variable/)
})

test('the scenarios reached every route they are written to exercise', async () => {
  const { result } = await prom.api('query', {
    query: 'sum by (job, method, route) (http_request_duration_seconds_count{route!~"/(metrics|healthz|readyz)"})',
    time: window.end
  })
  const seen = new Set(result.filter((r) => Number(r.value[1]) > 0)
    .map((r) => `${r.metric.job} ${r.metric.method} ${r.metric.route}`))
  for (const route of [
    'product GET /products', 'product GET /products/:id', 'product GET /products/:id/styles',
    'product GET /products/:id/related',
    'profile GET /restaurants/:id', 'profile GET /restaurants/:id/profile', 'profile POST /restaurants',
    'profile PUT /restaurants/:id', 'profile PATCH /restaurants/:id',
    'menu GET /restaurants/:id/menu', 'menu GET /menu/:id',
    'flows POST /flows', 'flows GET /flows'
  ]) assert.ok(seen.has(route), `${route} got no requests; seen: ${[...seen].join(', ')}`)
})

// The series only kube-state-metrics exports: no such exporter runs here. Their alerts fire in
// promtool's unit tests, and are evaluated live in the cluster e2e.
const KUBE_STATE_METRICS = /^kube_/

test('every recording and alerting rule evaluates on the live scrapes: ' +
  'healthy, and every series it reads has data', async () => {
  // Two rounds of evaluation after the load, so that every rule has been evaluated since.
  await sleep(3 * SCRAPE_SECONDS * 1000)
  const { groups } = await prom.api('rules')
  const all = groups.flatMap((g) => g.rules)
  assert.equal(all.length, rules.flatMap((g) => g.rules).length, 'Prometheus loaded every rule')
  const unhealthy = all.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError ?? ''}`)
  assert.deepEqual(unhealthy, [])
  const failures = []
  const exempt = new Set()
  for (const group of rules) {
    const service = /^suite-(\w+)-/.exec(group.name)[1]
    for (const rule of group.rules) {
      if (rule.record) {
        const { result } = await prom.api('query', {
          query: `${rule.record}{suite_service="${service}"}`,
          time: window.end + 3 * SCRAPE_SECONDS
        })
        if (!result.some((r) => !Number.isNaN(Number(r.value[1])))) {
          failures.push(`${group.name} ${rule.record}: no data`)
        }
        continue
      }
      // An alert's condition is false on healthy services: each series it reads must have data.
      const selectors = [...rule.expr.matchAll(/([a-zA-Z_:][\w:]*)(\{[^}]*\})/g)]
        .map(([, name, labels]) => ({ name, labels }))
      assert.ok(selectors.length > 0, `${rule.alert}: no series read`)
      for (const { name, labels } of selectors) {
        if (KUBE_STATE_METRICS.test(name)) { exempt.add(rule.alert); continue }
        const { result } = await prom.api('query', { query: `${name}${labels}`, time: window.end + 3 * SCRAPE_SECONDS })
        if (!result.length) failures.push(`${group.name} ${rule.alert}: ${name}${labels} has no data`)
      }
    }
  }
  assert.deepEqual(failures, [])
  assert.deepEqual([...exempt].sort(), ['SuiteHPAAtMaximum', 'SuitePodRestarting'],
    'only these read kube-state-metrics alone')
})

// A request sent with a W3C traceparent of ours: the answer, and the ids to find its trace by.
async function traced (service, method, path, body) {
  const traceId = randomBytes(16).toString('hex')
  const parent = randomBytes(8).toString('hex')
  const res = await fetch(urls[service] + path, {
    method,
    headers: {
      traceparent: `00-${traceId}-${parent}-01`,
      ...(body !== undefined && { 'content-type': 'application/json' })
    },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await res.text()
  assert.ok(res.ok, `${service} ${method} ${path}: ${res.status} ${text}`)
  const [, sameTrace, spanId] = res.headers.get('traceparent').split('-')
  assert.equal(sameTrace, traceId, 'the trace goes on')
  return { traceId, parent, spanId, body: text ? JSON.parse(text) : null }
}

/** The request's trace: its server span under our caller's, and its spans by name. */
async function requestTrace (service, r, route, { children }) {
  // The server span ends after its children and can leave in a later export than theirs: wait for both.
  const spans = await jaeger.waitForTrace(r.traceId, (s) =>
    s.some((x) => x.spanId === r.spanId) && children.every((c) => s.some((x) => x.name === c)))
  const server = spans.find((s) => s.spanId === r.spanId)
  assert.equal(server?.name, route)
  assert.equal(server.parentSpanId, r.parent)
  assert.equal(server.resource['service.name'], service)
  for (const c of children) {
    const child = spans.find((s) => s.name === c)
    assert.equal(child.parentSpanId, server.spanId, `${c} under ${route}`)
  }
  return { spans, server }
}

test('a request of each service is one trace: its server span continues the caller\'s, ' +
  'its own PostgreSQL and Redis calls are its children, shared work is linked', async () => {
  // product: a page no load asked for, so a miss: its query and the cache fill under it.
  const page = await traced('product', 'GET', `/products?page=${1 + Math.floor(Math.random() * 90)}&count=3`)
  const { spans } = await requestTrace('product', page, 'GET /products', { children: ['EVALSHA'] })
  const query = spans.find((s) => s.attributes['db.system.name'] === 'postgresql')
  assert.equal(query?.parentSpanId, page.spanId)
  assert.match(query.name, /^[a-z]/, 'named by its prepared statement')
  assert.equal(query.attributes['db.query.summary'], query.name)
  const mget = await jaeger.waitForLinked('product', 'MGET', page)
  assert.equal(mget.parentSpanId, undefined)

  // profile and menu: a write, then a read of it (a miss): the turn's misses share one query, its own trace.
  const created = await traced('profile', 'POST', '/restaurants', { ...restaurant(1), name: 'traced' })
  const write = await requestTrace('profile', created, 'POST /restaurants', { children: ['EVALSHA'] })
  assert.ok(write.spans.some((s) =>
    s.attributes['db.system.name'] === 'postgresql' && s.parentSpanId === created.spanId))
  for (const [service, path, route] of [
    ['profile', `/restaurants/${created.body.id}`, 'GET /restaurants/:id'],
    ['menu', '/menu/7', 'GET /menu/:id']
  ]) {
    if (service === 'menu') await traced('menu', 'PUT', '/restaurants/7/menu', { link: 'https://menus.example/7' })
    const read = await traced(service, 'GET', path)
    await requestTrace(service, read, route, { children: ['EVALSHA'] })
    const batch = await jaeger.waitForLinked(service, 'batched load', read)
    const batchSpans = await jaeger.waitForTrace(batch.traceId, (s) => s.length >= 2)
    assert.ok(
      batchSpans.some((s) => s.attributes['db.system.name'] === 'postgresql' && s.parentSpanId === batch.spanId),
      `${service}: the batch's query under it`
    )
  }

  // flows: concurrent POSTs answered by group commits, each linked to every POST it wrote.
  const hour = 500_000 + Math.floor(Math.random() * 10_000)
  const posts = await Promise.all(Array.from({ length: 4 }, (_, i) => traced('flows', 'POST', '/flows', [
    { src_app: `t${i}`, dest_app: 'b', vpc_id: 'v', bytes_tx: 1, bytes_rx: 2, hour }
  ])))
  const commits = new Map()
  for (const p of posts) {
    const c = await jaeger.waitForLinked('flows', 'group commit', p)
    commits.set(c.spanId, c)
  }
  const linked = [...commits.values()].flatMap((c) => c.links.map((l) => l.spanId)).sort()
  assert.deepEqual(linked, posts.map((p) => p.spanId).sort(),
    'each POST written by exactly one group commit, linked to it')
  for (const c of commits.values()) {
    const inside = await jaeger.waitForTrace(c.traceId, (s) => s.some((x) => x.parentSpanId === c.spanId))
    assert.ok(inside.some((s) => s.attributes['db.system.name'] === 'postgresql' && s.parentSpanId === c.spanId),
      'the group\'s statements under its span')
  }
  const totals = await traced('flows', 'GET', `/flows?hour=${hour}`)
  assert.equal(totals.body.length, 4)
  await jaeger.waitForLinked('flows', 'shared read', totals)
})

test('exemplars: Prometheus stored sampled requests\' trace ids on the latency histogram, ' +
  'and each leads to its trace', async () => {
  const data = await prom.api('query_exemplars', {
    query: `http_request_duration_seconds_bucket{namespace="${NAMESPACE}"}`,
    start: window.start,
    end: Date.now() / 1000
  })
  for (const service of SERVICE_NAMES) {
    const exemplars = data.filter((d) => d.seriesLabels.job === service).flatMap((d) => d.exemplars)
    assert.ok(exemplars.length > 0, `${service}: no exemplar stored`)
    const { trace_id: traceId } = exemplars[0].labels
    assert.match(traceId, /^[0-9a-f]{32}$/)
    const isServer = (s) => s.kind === 2 || s.kind === 'SPAN_KIND_SERVER'
    const spans = await jaeger.waitForTrace(traceId, (s) => s.some(isServer))
    assert.ok(spans.some(isServer), `${service}: the exemplar's trace has its server span`)
    assert.equal(spans[0].resource['service.name'], service)
  }
})
