// charts/loadtest on its own: lint, render every mode and validate it offline against the
// Kubernetes and k6-operator TestRun schemas, its unit tests, its values schema, the scripts it
// ships being exactly loadtests/k6 (one copy, through the chart's link), and its SLOs being those of
// loadtests/k6/scenarios.js, the one source the local runner reads too.
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { kubeconform, requireTools } from '../../charts/test/lib.js'
import { SLO } from '../k6/scenarios.js'

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

test('every mode renders TestRuns and the ConfigMap that kubeconform -strict accepts', () => {
  for (const [mode, testRuns] of [['steady', 4], ['ladder', 16], ['matrix', 20]]) {
    const yaml = render(`mode=${mode}`)
    assert.equal(yaml.match(/^kind: TestRun$/gm)?.length, testRuns, mode)
    const kc = kubeconform(yaml)
    assert.equal(kc.code, 0, `${mode}: ${kc.problems.join('\n')}`)
    assert.deepEqual({ valid: kc.valid, invalid: kc.invalid, errors: kc.errors, skipped: kc.skipped }, { valid: testRuns + 1, invalid: 0, errors: 0, skipped: 0 }, mode)
  }
})

test('the chart\'s unit tests pass (helm-unittest)', () => {
  const r = run('helm-unittest', [CHART])
  assert.equal(r.code, 0, r.out + r.err)
})

test('the values schema rejects unknown keys and wrong values, and accepts an umbrella\'s globals', () => {
  for (const bad of ['nosuchkey=1', 'scenarios.product.rat=5', 'mode=burst', 'scenarios.menu.rate=0', 'prometheus.remoteWriteUrl=prometheus:9090', 'ladder.steps={10,10}']) {
    const r = helm('template', 'lt', CHART, '--set', bad)
    assert.notEqual(r.code, 0, `${bad} was accepted`)
    assert.match(r.err, /values don't meet the specifications of the schema|schema/, bad)
  }
  render('global.imageRegistry=registry.example')
})

test('the ConfigMap ships every file of loadtests/k6, byte for byte', () => {
  const yaml = render('mode=steady').split(/^---$/m).find((doc) => /^kind: ConfigMap$/m.test(doc))
  const data = JSON.parse(execFileSync('yq', ['-o=json', '.data'], { input: yaml, encoding: 'utf8' }))
  const files = readdirSync(SCRIPTS).filter((f) => f.endsWith('.js')).sort()
  assert.deepEqual(Object.keys(data).sort(), files)
  for (const f of files) assert.equal(data[f], readFileSync(SCRIPTS + f, 'utf8'), f)
})

test('the chart\'s SLOs are scenarios.js\'s, and every TestRun gets them', () => {
  const values = JSON.parse(execFileSync('yq', ['-o=json', '.slo', `${CHART}/values.yaml`], { encoding: 'utf8' }))
  assert.deepEqual(values, { p95Ms: SLO.p95Ms, p99Ms: SLO.p99Ms, errorRate: SLO.errorRate }, 'charts/loadtest/values.yaml slo: set it from loadtests/k6/scenarios.js SLO')
  const runs = render('mode=ladder').split(/^---$/m).filter((doc) => /^kind: TestRun$/m.test(doc))
  for (const doc of runs) {
    const env = Object.fromEntries(JSON.parse(execFileSync('yq', ['-o=json', '.spec.runner.env'], { input: doc, encoding: 'utf8' })).map((e) => [e.name, e.value]))
    assert.deepEqual([env.P95_MS, env.P99_MS, env.ERROR_RATE], [String(SLO.p95Ms), String(SLO.p99Ms), String(SLO.errorRate)])
  }
})
