// The umbrella's PrometheusRule: rendered as a cluster with the prometheus-operator gets it, checked by
// promtool, and every alert fired and resolved by promtool's unit tests (alerts/rules-test.yaml) on
// synthetic series. The same rules evaluate with data on a live Prometheus in loadtests/test/monitoring.test.js.
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { findBinary } from '@suite/kit/testing'
import { SERVICES, parse, requireTools, root, template, umbrella } from './lib.js'

const RULE_API = ['monitoring.coreos.com/v1/PrometheusRule', 'monitoring.coreos.com/v1/ServiceMonitor']
const rulesOf = (args = [], apiVersions = RULE_API) =>
  parse(template(umbrella(), ['--show-only', 'templates/prometheusrule.yaml', ...args], { apiVersions }))
// A CloudNativePG Cluster of 3 instances the release depends on (the e2e's), and its alerts.
const DATABASE = ['--set', 'alerts.database.cluster=db', '--set', 'alerts.database.instances=3']
let rule, withDatabase
before(() => {
  requireTools()
  ;[rule] = rulesOf()
  ;[withDatabase] = rulesOf(DATABASE)
})

const alertsOf = (group) => group.rules.filter((r) => r.alert).map((r) => r.alert)

test('one PrometheusRule where the operator\'s API is, with each service\'s SLO and symptom groups alike', () => {
  assert.equal(rule.kind, 'PrometheusRule')
  assert.equal(rule.metadata.labels.release, 'kube-prometheus-stack',
    'what kube-prometheus-stack\'s ruleSelector matches')
  const groups = rule.spec.groups.map((g) => g.name)
  assert.deepEqual(groups.sort(), SERVICES.flatMap((s) => [`suite-${s}-slo`, `suite-${s}-symptoms`]).sort())
  const [first, ...rest] = SERVICES.map((s) =>
    rule.spec.groups.filter((g) => g.name.startsWith(`suite-${s}-`)).flatMap(alertsOf))
  for (const other of rest) assert.deepEqual(other, first)
  assert.deepEqual([...first].sort(), [
    'SuiteErrorBudgetBurnFast', 'SuiteErrorBudgetBurnSlow', 'SuiteEventLoopDelayHigh', 'SuiteHPAAtMaximum',
    'SuiteLatencyBudgetBurnFast', 'SuiteLatencyBudgetBurnSlow', 'SuiteMemoryNearLimit', 'SuiteNearCacheDown',
    'SuitePodRestarting', 'SuitePostgresPoolSaturated', 'SuiteRedisBypassed'
  ])
})

test('no PrometheusRule without the operator\'s API, or with alerts.enabled=false', () => {
  assert.equal(parse(template(umbrella(), [], { apiVersions: ['monitoring.coreos.com/v1/ServiceMonitor'] }))
    .filter((o) => o.kind === 'PrometheusRule').length, 0)
  assert.equal(parse(template(umbrella(), ['--set', 'alerts.enabled=false'], { apiVersions: RULE_API }))
    .filter((o) => o.kind === 'PrometheusRule').length, 0)
})

test('the database\'s alerts: for the chart\'s own CloudNativePG Cluster, or one named in alerts.database', () => {
  assert.deepEqual(withDatabase.spec.groups.filter((g) => g.name === 'suite-database').flatMap(alertsOf).sort(),
    ['SuiteDatabaseInstancesDown', 'SuiteDatabaseReplicationLag', 'SuiteDatabaseSyncStandbyLost'])
  const [own] = rulesOf([
    '--set', 'global.database=cloudnative-pg', '--set', 'postgresql.enabled=false', '--set', 'cloudnativePg.instances=3'
  ], [...RULE_API, 'postgresql.cnpg.io/v1/Cluster'])
  const down = own.spec.groups.find((g) => g.name === 'suite-database').rules
    .find((r) => r.alert === 'SuiteDatabaseInstancesDown')
  assert.match(down.expr, /namespace="suite", pod=~"r-postgresql-\[0-9\]\+"/)
  assert.match(down.expr, /< 3\b/)
})

test('every alert has a runbook in docs/runbooks, a severity and a summary', () => {
  for (const r of withDatabase.spec.groups.flatMap((g) => g.rules).filter((r) => r.alert)) {
    assert.ok(['critical', 'warning'].includes(r.labels.severity), r.alert)
    assert.ok(r.annotations.summary && r.annotations.description, r.alert)
    const page = /\/docs\/runbooks\/(\w+\.md)$/.exec(r.annotations.runbook_url)?.[1]
    assert.equal(page, `${r.alert}.md`, r.annotations.runbook_url)
    assert.ok(existsSync(join(root, 'docs', 'runbooks', page)), `docs/runbooks/${page} is missing`)
  }
  const [custom] = rulesOf(['--set', 'alerts.runbookBaseUrl=https://wiki.example/runbooks/'])
  assert.equal(custom.spec.groups[1].rules.find((r) => r.alert).annotations.runbook_url,
    'https://wiki.example/runbooks/SuitePodRestarting.md')
})

test('the SLOs come from values: a service\'s own availability and latency change its thresholds; ' +
  'a latency that is no bucket bound is refused', () => {
  // --set-json: helm's --set keeps a decimal number as a string
  const [own] = rulesOf([
    '--set-json', 'alerts.slos.menu.availability=0.999', '--set-json', 'alerts.slos.menu.latencySeconds=0.1'
  ])
  const menu = own.spec.groups.find((g) => g.name === 'suite-menu-slo').rules
  assert.match(menu.find((r) => r.alert === 'SuiteErrorBudgetBurnFast').expr, /> 0\.0144\b/)
  assert.match(menu.find((r) => r.record === 'suite:http_slow:ratio_rate5m').expr, /le="0\.1"/)
  assert.throws(() => rulesOf(['--set-json', 'alerts.slos.menu.latencySeconds=0.2']),
    /values don't meet the specifications of the schema/)
})

test('promtool accepts the rules, and every alert fires and resolves in its unit test', () => {
  const promtool = findBinary('promtool')
  const dir = mkdtempSync(join(tmpdir(), 'suite-alerts-'))
  try {
    writeFileSync(join(dir, 'rules.yaml'), JSON.stringify({ groups: withDatabase.spec.groups }))
    const check = spawnSync(promtool, ['check', 'rules', join(dir, 'rules.yaml')], { encoding: 'utf8' })
    assert.equal(check.status, 0, check.stdout + check.stderr)
    // Its runbook URLs name the chart's version (the default runbookBaseUrl) as VERSION.
    const version = /^version: (\S+)$/m.exec(readFileSync(join(root, 'charts/suite/Chart.yaml'), 'utf8'))[1]
    writeFileSync(join(dir, 'rules-test.yaml'), readFileSync(join(root, 'charts/test/alerts/rules-test.yaml'), 'utf8')
      .replaceAll('/blob/vVERSION/', `/blob/v${version}/`))
    const unit = spawnSync(promtool, ['test', 'rules', join(dir, 'rules-test.yaml')], { encoding: 'utf8' })
    assert.equal(unit.status, 0, unit.stdout + unit.stderr)
    // Every alert of the rules has a test that fires it.
    const grep = spawnSync('grep', ['-o', 'alertname: Suite[A-Za-z]*', join(dir, 'rules-test.yaml')],
      { encoding: 'utf8' })
    const tested = new Set([...grep.stdout.matchAll(/alertname: (\w+)/g)].map((m) => m[1]))
    assert.deepEqual([...new Set(withDatabase.spec.groups.flatMap(alertsOf))].filter((a) => !tested.has(a)), [])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
