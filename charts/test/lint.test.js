// helm lint --strict on every chart and the helm-unittest suites (charts/*/tests/*_test.yaml).
// charts/loadtest is linted here as a subchart of the umbrella; its own suites run in loadtests/test.
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { charts, requireTools, run, umbrella } from './lib.js'

before(requireTools)

function lint (chart, args = []) {
  const r = run('helm', ['lint', '--strict', chart, ...args])
  assert.equal(r.code, 0, `helm lint --strict ${chart} ${args.join(' ')}:\n${r.stdout}${r.stderr}`)
  assert.match(r.stdout, /\d+ chart\(s\) linted, 0 chart\(s\) failed/)
}

test('helm lint --strict: the service chart', () => lint(join(charts, 'service')))
test('helm lint --strict: the umbrella and its subcharts, with each values file', () => {
  const dir = umbrella()
  lint(dir, ['--with-subcharts'])
  lint(dir, ['-f', join(dir, 'values-dev.yaml')])
  lint(dir, ['-f', join(dir, 'values-production.yaml')])
  lint(dir, ['--set', 'loadtest.enabled=true'])
})

// helm-unittest prints one line per suite and a "Tests: N passed, N total" line per run.
function unittest (chart) {
  // Each chart's own suites: the subcharts' run on their own.
  const r = run('helm-unittest', ['--color=false', '--with-subchart=false', chart])
  assert.equal(r.code, 0, `helm-unittest ${chart}:\n${r.stdout}${r.stderr}`)
  const [, passed, total] = r.stdout.match(/Tests:\s+(\d+) passed, (\d+) total/) ?? []
  assert.ok(Number(total) > 0 && passed === total, `helm-unittest ${chart}: ${r.stdout}`)
  return Number(total)
}

test('helm-unittest: the service chart\'s policies', (t) =>
  t.diagnostic(`${unittest(join(charts, 'service'))} unit tests`))
test('helm-unittest: the umbrella\'s routing and checks', (t) => t.diagnostic(`${unittest(umbrella())} unit tests`))
