// The k6 dashboard (charts/suite/dashboards/k6.json) without k6: every panel's PromQL evaluated by
// `promtool test rules` (Debian's prometheus package) over input series named and labelled as k6's
// Prometheus remote-write output writes them (k6 docs, "Prometheus remote write", Metrics mapping:
// a Counter is k6_<name>_total, a Gauge k6_<name>, a Rate k6_<name>_rate, a Trend one gauge per
// K6_PROMETHEUS_RW_TREND_STATS stat, k6_<name>_<stat> with p(95) written p95, in seconds; every
// tag is a label — the system tags the scripts keep and the run's --tag testid=…).
// Two runs: one with failures and dropped iterations, one with neither, whose error and dropped
// panels must show 0 rather than "No data". The variables and $__rate_interval are Grafana's
// (lib/grafana.js) for a 10-minute range and the scrape interval of k8s/kube-prometheus-stack.yaml.
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { targets, queryVariables, builtins, interpolate } from '../lib/grafana.js'

const dashboard = JSON.parse(readFileSync(new URL('../../charts/suite/dashboards/k6.json', import.meta.url), 'utf8'))
const SCRAPE = Number(/scrapeInterval: (\d+)s/
  .exec(readFileSync(new URL('../../k8s/kube-prometheus-stack.yaml', import.meta.url), 'utf8'))[1])
const PUSH = 5 // seconds: k6's K6_PROMETHEUS_RW_PUSH_INTERVAL default, the chart's prometheus.pushInterval
const POINTS = 120 // ten minutes of pushes
const AT = '9m'
const BUSY = 'lt-product-100rps' // a ladder step with failures and dropped iterations
const CLEAN = 'lt-menu' // a steady run without either

// The tags k6 keeps on an HTTP request's samples (scenarios.js: systemTags) and the run's testid.
const req = (testid, scenario, name, status, expected) =>
  `{testid="${testid}", scenario="${scenario}", name="${name}", method="GET", status="${status}", ` +
  `expected_response="${expected}"}`
const series = (name, labels, values) => ({ series: `${name}${labels}`, values })
const inputSeries = [
  // BUSY: 99 requests/s answered 200 and 1/s answered 500, 0.2 dropped iterations/s, 10 VUs of 20.
  series('k6_http_reqs_total', req(BUSY, 'product', 'GET /products/:id', 200, true), `0+495x${POINTS}`),
  series('k6_http_reqs_total', req(BUSY, 'product', 'GET /products/:id', 500, false), `0+5x${POINTS}`),
  series('k6_iterations_total', `{testid="${BUSY}", scenario="product"}`, `0+500x${POINTS}`),
  series('k6_dropped_iterations_total', `{testid="${BUSY}", scenario="product"}`, `0+1x${POINTS}`),
  series('k6_vus', `{testid="${BUSY}"}`, `10x${POINTS}`),
  series('k6_vus_max', `{testid="${BUSY}"}`, `20x${POINTS}`),
  // The Rate carries the request's tags too, expected_response among them: 0 on one series, 1 on the other.
  series('k6_http_req_failed_rate', req(BUSY, 'product', 'GET /products/:id', 200, true), `0x${POINTS}`),
  series('k6_http_req_failed_rate', req(BUSY, 'product', 'GET /products/:id', 500, false), `1x${POINTS}`),
  ...[['p50', 0.004], ['p95', 0.02], ['p99', 0.08], ['max', 0.3]].flatMap(([stat, v]) => [
    series(`k6_http_req_duration_${stat}`, req(BUSY, 'product', 'GET /products/:id', 200, true), `${v}x${POINTS}`),
    series(`k6_http_req_duration_${stat}`, req(BUSY, 'product', 'GET /products/:id', 500, false), `${v * 2}x${POINTS}`)
  ]),
  // CLEAN: 20 requests/s, all answered 200; k6 writes no dropped_iterations series when none dropped.
  series('k6_http_reqs_total', req(CLEAN, 'menu', 'GET /menu/:id', 200, true), `0+100x${POINTS}`),
  series('k6_iterations_total', `{testid="${CLEAN}", scenario="menu"}`, `0+100x${POINTS}`),
  series('k6_vus', `{testid="${CLEAN}"}`, `2x${POINTS}`),
  series('k6_vus_max', `{testid="${CLEAN}"}`, `20x${POINTS}`),
  series('k6_http_req_failed_rate', req(CLEAN, 'menu', 'GET /menu/:id', 200, true), `0x${POINTS}`),
  ...[['p50', 0.002], ['p95', 0.01], ['p99', 0.03], ['max', 0.1]].map(([stat, v]) =>
    series(`k6_http_req_duration_${stat}`, req(CLEAN, 'menu', 'GET /menu/:id', 200, true), `${v}x${POINTS}`))
]

// What some panels must show at AT, worked out from the input above: [labels, value].
const run = (t) => `{testid="${t}"}`
const EXPECTED = {
  'Requests per second by test run A': [[run(BUSY), 100], [run(CLEAN), 20]],
  'Dropped iterations per second A': [[run(BUSY), 0.2], [run(CLEAN), 0]],
  'Latency percentiles by test run B': [[run(BUSY), 0.04], [run(CLEAN), 0.01]],
  'Failed request ratio by test run A': [[run(BUSY), 0.01], [run(CLEAN), 0]],
  'Failed requests per second by status A': [[`{status="500", testid="${BUSY}"}`, 1], [run(CLEAN), 0]]
}

let vars
before(() => {
  const r = spawnSync('promtool', ['--version'], { encoding: 'utf8' })
  if (r.error) throw new Error('promtool not found: apt-get install prometheus (it ships promtool)')
  vars = { ...builtins({ rangeMs: 10 * 60 * 1000, scrapeMs: SCRAPE * 1000 }), datasource: 'prometheus' }
  for (const v of queryVariables(dashboard)) {
    assert.equal(v.name, 'testid', 'the k6 dashboard has one query variable, $testid')
    vars.testid = [BUSY, CLEAN] // "All": what label_values(k6_http_reqs_total, testid) finds (checked below)
  }
})

/** Runs promtool test rules on these expression tests; resolves to { code, output }. */
function promtool (exprTests) {
  const dir = mkdtempSync(join(tmpdir(), 'k6-dashboard-'))
  try {
    const file = join(dir, 'test.yml')
    // JSON is YAML: no YAML library needed.
    writeFileSync(file, JSON.stringify({
      rule_files: [],
      evaluation_interval: `${PUSH}s`,
      tests: [{ interval: `${PUSH}s`, input_series: inputSeries, promql_expr_test: exprTests }]
    }, null, 1))
    const r = spawnSync('promtool', ['test', 'rules', file], { encoding: 'utf8' })
    return { code: r.status, output: r.stdout + r.stderr }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

// Data for each test run: a sample per testid (NaN samples do not count: x == x drops them).
const perRun = (expr) => ({
  expr: `count by (testid) ((${expr}) == (${expr})) > bool 0`,
  eval_time: AT,
  exp_samples: [BUSY, CLEAN].map((t) => ({ labels: `{testid="${t}"}`, value: 1 }))
})

test('the $testid variable finds both runs in k6_http_reqs_total', () => {
  const { query } = queryVariables(dashboard)[0]
  const m = /^label_values\((\w+), testid\)$/.exec(query)
  assert.ok(m, query)
  const r = promtool([{
    expr: `count by (testid) (${m[1]}) > bool 0`,
    eval_time: AT,
    exp_samples: [BUSY, CLEAN].map((t) => ({ labels: `{testid="${t}"}`, value: 1 }))
  }])
  assert.equal(r.code, 0, r.output)
})

test('every panel expression of the k6 dashboard returns data for every test run, ' +
  'errors and dropped as 0 when there are none', () => {
  const all = targets(dashboard)
  assert.ok(all.length >= 10, `only ${all.length} expressions`)
  const r = promtool(all.map((t) => perRun(interpolate(t.expr, vars))))
  assert.equal(r.code, 0, `${all.map((t) => `${t.panel} ${t.refId}`).join(', ')}:\n${r.output}`)
})

test('the panels show what the series say', () => {
  const byKey = Object.fromEntries(targets(dashboard).map((t) => [`${t.panel} ${t.refId}`, t]))
  const tests = Object.entries(EXPECTED).map(([key, samples]) => {
    assert.ok(byKey[key], `no panel target "${key}"`)
    return {
      expr: interpolate(byKey[key].expr, vars),
      eval_time: AT,
      exp_samples: samples.map(([labels, value]) => ({ labels, value }))
    }
  })
  const r = promtool(tests)
  assert.equal(r.code, 0, r.output)
})

test('the check fails on a series k6 does not write, and on a wrong value', () => {
  // A unit suffix on the trend stat (k6 writes none), and a rate that is not the input's.
  const r1 = promtool([
    perRun('max by (testid) (k6_http_req_duration_seconds_p95{testid=~"(lt-product-100rps|lt-menu)"})')
  ])
  assert.notEqual(r1.code, 0)
  const rps = targets(dashboard).find((t) => t.panel === 'Requests per second by test run')
  const r2 = promtool([{
    expr: interpolate(rps.expr, vars),
    eval_time: AT,
    exp_samples: [{ labels: run(BUSY), value: 101 }, { labels: run(CLEAN), value: 20 }]
  }])
  assert.notEqual(r2.code, 0)
  assert.match(r2.output, /1\.01E\+02/)
})
