// charts/loadtest on its own: lint, render every mode and validate it offline against the
// Kubernetes and k6-operator TestRun schemas, its unit tests, its values schema, the scripts it
// ships being exactly loadtests/k6 (one copy, through the chart's link), and its SLOs being those of
// loadtests/k6/scenarios.js, the one source the local runner reads too.
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { kubeconform, parse, requireTools } from '../../charts/test/lib.js'
import { SLO, SCENARIO_NAMES, k6Options } from '../k6/scenarios.js'

const CHART = fileURLToPath(new URL('../../charts/loadtest', import.meta.url))
const SCRIPTS = fileURLToPath(new URL('../k6/', import.meta.url))

before(requireTools)

const run = (cmd, args, input) => {
  const r = spawnSync(cmd, args, { input, encoding: 'utf8' })
  if (r.error) throw r.error
  return { code: r.status, out: r.stdout, err: r.stderr }
}
const helm = (...args) => run('helm', args)
const render = (...sets) => {
  const r = helm('template', 'lt', CHART, ...sets.flatMap((s) => ['--set', s]))
  assert.equal(r.code, 0, r.err)
  return r.out
}

test('helm lint --strict passes', () => {
  const r = helm('lint', '--strict', CHART)
  assert.equal(r.code, 0, r.out + r.err)
})

test('no TestRun until a run is asked for; then every mode renders one, that kubeconform -strict accepts', () => {
  assert.doesNotMatch(render('mode=ladder'), /^kind: TestRun$/m)
  for (const mode of ['steady', 'ladder', 'matrix']) {
    const yaml = render(`mode=${mode}`, 'run=r1')
    assert.equal(yaml.match(/^kind: TestRun$/gm)?.length, 1, mode)
    const kc = kubeconform(yaml)
    assert.equal(kc.code, 0, `${mode}: ${kc.problems.join('\n')}`)
    assert.deepEqual({ valid: kc.valid, invalid: kc.invalid, errors: kc.errors, skipped: kc.skipped },
      { valid: 2, invalid: 0, errors: 0, skipped: 0 }, mode)
  }
})

// The env of the one TestRun a mode renders, as k6 reads it (__ENV).
const envOf = (yaml) => {
  const doc = yaml.split(/^---$/m).find((d) => /^kind: TestRun$/m.test(d))
  return Object.fromEntries(parse(doc)[0].spec.runner.env.map((e) => [e.name, e.value]))
}

test('the run\'s env is a plan scenarios.js lays out one step after another: ' +
  'every step of every scenario, none overlapping', () => {
  const seconds = (d) => Number(/^(\d+)s$/.exec(d)[1])
  for (const [mode, names, length] of [
    ['ladder', SCENARIO_NAMES.flatMap((s) => [1, 10, 100, 1000].map((r) => `${s}_${r}rps`)), 60],
    ['matrix', SCENARIO_NAMES.flatMap((s) => [1, 2, 3, 4, 5].map((n) => `${s}_run${n}`)), 180]
  ]) {
    const env = envOf(render(`mode=${mode}`, 'run=r1'))
    const { scenarios } = k6Options(env, env.SCENARIOS.split(','))
    assert.deepEqual(Object.keys(scenarios), names, mode)
    const spans = Object.values(scenarios)
      .map((s) => [seconds(s.startTime), seconds(s.startTime) + seconds(s.duration ?? s.maxDuration)])
    for (let i = 1; i < spans.length; i++) {
      assert.ok(spans[i][0] >= spans[i - 1][1], `${mode}: ${names[i]} starts before ${names[i - 1]} ends`)
    }
    assert.equal(spans[0][1] - spans[0][0], length, mode)
    assert.equal(scenarios[names[1]].tags.testid,
      `lt-${mode === 'matrix' ? 'matrix-r1w1' : mode}-r1-${names[1].replaceAll('_', '-')}`)
  }
  const steady = envOf(render('run=r1', 'scenarios.menu.rate=7'))
  const { scenarios } = k6Options(steady, steady.SCENARIOS.split(','))
  assert.deepEqual(Object.keys(scenarios), SCENARIO_NAMES)
  assert.equal(scenarios.menu.rate, 7)
  assert.ok(Object.values(scenarios).every((s) => s.startTime === '0s' && s.duration === '5m'))
})

test('the chart\'s unit tests pass (helm-unittest)', () => {
  const r = run('helm-unittest', [CHART])
  assert.equal(r.code, 0, r.out + r.err)
})

test('the values schema rejects unknown keys and wrong values, and accepts an umbrella\'s globals', () => {
  for (const bad of [
    'nosuchkey=1', 'scenarios.product.rat=5', 'mode=burst', 'scenarios.menu.rate=0',
    'prometheus.remoteWriteUrl=prometheus:9090', 'ladder.steps={10,10}', 'run=Big_Run'
  ]) {
    const r = helm('template', 'lt', CHART, '--set', bad)
    assert.notEqual(r.code, 0, `${bad} was accepted`)
    assert.match(r.err, /values don't meet the specifications of the schema|schema/, bad)
  }
  render('global.imageRegistry=registry.example')
})

test('the ConfigMap ships every file of loadtests/k6, byte for byte', () => {
  const yaml = render('mode=steady').split(/^---$/m).find((doc) => /^kind: ConfigMap$/m.test(doc))
  const { data } = parse(yaml)[0]
  const files = readdirSync(SCRIPTS).filter((f) => f.endsWith('.js')).sort()
  assert.deepEqual(Object.keys(data).sort(), files)
  for (const f of files) assert.equal(data[f], readFileSync(SCRIPTS + f, 'utf8'), f)
})

test('the chart\'s SLOs are scenarios.js\'s, and every TestRun gets them', () => {
  const values = parse(readFileSync(`${CHART}/values.yaml`, 'utf8'))[0].slo
  assert.deepEqual(values, { p95Ms: SLO.p95Ms, p99Ms: SLO.p99Ms, errorRate: SLO.errorRate },
    'charts/loadtest/values.yaml slo: set it from loadtests/k6/scenarios.js SLO')
  const env = envOf(render('mode=ladder', 'run=r1'))
  assert.deepEqual([env.P95_MS, env.P99_MS, env.ERROR_RATE],
    [String(SLO.p95Ms), String(SLO.p99Ms), String(SLO.errorRate)])
})
