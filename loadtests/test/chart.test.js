// charts/loadtest on its own: lint, render every mode and validate it offline against the
// Kubernetes and k6-operator TestRun schemas, its unit tests, its values schema, and the scripts
// it ships being exactly loadtests/k6 (one copy, through the chart's link).
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { kubeconform, requireTools } from '../../charts/test/lib.js'

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
