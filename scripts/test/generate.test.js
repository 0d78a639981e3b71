// The generated files (scripts/generate.js) are what their sources make, whole: a stale one — the list,
// a setting's description or a `## @param` changed without `npm run generate`, or a generated block
// edited by hand — fails here.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { FILES, stale } from '../generate.js'
import { VERSION_FILES } from '../generate/versions.js'
import { NAMES } from '../../services/list.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

test('every generated file is up to date with services/list.js (npm run generate)', () => {
  assert.deepEqual(stale().map((f) => f.path), [], 'stale: run npm run generate')
})

/** A copy of the generated files and their sources, in a temporary folder. */
function copyOfSources () {
  const copy = mkdtempSync(join(tmpdir(), 'suite-generate-'))
  // The generated files and their sources: the generator, the list, the services' definitions, the
  // version and the changelog.
  const sources = [
    'scripts/generate.js', 'scripts/generate', 'services/list.js', 'charts/service/values.yaml', 'loadtests/k6/slo.js',
    'package.json', 'CHANGELOG.md', ...NAMES.flatMap((s) => [`services/${s}/src`, `services/${s}/package.json`])
  ]
  for (const path of [...Object.keys(FILES), ...sources]) {
    mkdirSync(dirname(join(copy, path)), { recursive: true })
    cpSync(join(root, path), join(copy, path), { recursive: true })
  }
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'))
  return copy
}

test('a generated block edited by hand, or a file missing, is stale; generate --check names it and exits 1', () => {
  const copy = copyOfSources()
  try {
    const values = join(copy, 'charts/suite/values.yaml')
    writeFileSync(values, readFileSync(values, 'utf8').replace('scaleOption: products', 'scaleOption: rows'))
    rmSync(join(copy, 'loadtests/k6/services.js'))
    assert.deepEqual(stale(copy).map((f) => f.path).sort(), ['charts/suite/values.yaml', 'loadtests/k6/services.js'])
    const check = spawnSync(process.execPath, [join(copy, 'scripts/generate.js'), '--check'], { encoding: 'utf8' })
    assert.equal(check.status, 1, check.stderr)
    assert.equal(check.stderr,
      'generate: charts/suite/values.yaml is stale: run npm run generate\n' +
      'generate: loadtests/k6/services.js is stale: run npm run generate\n')
  } finally {
    rmSync(copy, { recursive: true, force: true })
  }
})

test('a new version in package.json reaches every versioned file, ' +
  'and CHANGELOG.md\'s section the chart\'s changes', () => {
  const copy = copyOfSources()
  try {
    const pkg = join(copy, 'package.json')
    writeFileSync(pkg, readFileSync(pkg, 'utf8').replace(/"version": "[^"]*"/, '"version": "7.8.9"'))
    assert.throws(() => stale(copy), /CHANGELOG.md has no section "## \[7.8.9\]"/)
    const changelog = join(copy, 'CHANGELOG.md')
    // The new section goes where a release puts it: after [Unreleased] and whatever it holds.
    writeFileSync(changelog, readFileSync(changelog, 'utf8').replace(/^## \[\d/m, (next) =>
      '## [7.8.9] - 2030-01-01\n\n### Fixed\n- A fix, said\n  on two lines.\n\n' +
      `### Upgrading\n- Nothing.\n\n${next}`))
    const changed = Object.fromEntries(stale(copy).map((f) => [f.path, f.want]))
    assert.deepEqual(Object.keys(changed).sort(), [...Object.keys(VERSION_FILES), 'charts/suite/Chart.yaml'].sort())
    const chart = parse(changed['charts/suite/Chart.yaml'])
    assert.equal(chart.version, '7.8.9')
    assert.equal(chart.appVersion, '7.8.9')
    for (const d of chart.dependencies) {
      const want = d.repository.startsWith('file://')
        ? '7.8.9'
        : parse(readFileSync(join(root, 'charts/suite/Chart.yaml'), 'utf8')).dependencies
          .find((o) => o.name === d.name).version
      assert.equal(d.version, want, d.name)
    }
    assert.deepEqual(parse(chart.annotations['artifacthub.io/changes']),
      [{ kind: 'fixed', description: 'A fix, said on two lines.' }])
    assert.deepEqual(parse(chart.annotations['artifacthub.io/images']).map((i) => i.image),
      NAMES.map((n) => `suite-${n}:7.8.9`))
    for (const w of ['kit', ...NAMES]) {
      assert.equal(JSON.parse(changed[`services/${w}/package.json`]).version, '7.8.9', w)
    }
    assert.equal(JSON.parse(changed['services/flows/package.json']).dependencies['@suite/kit'], '^7.8.9')
    const lock = JSON.parse(changed['package-lock.json'])
    assert.equal(lock.packages['services/menu'].dependencies['@suite/kit'], '^7.8.9')
    assert.equal(lock.packages[''].version, '7.8.9')
  } finally {
    rmSync(copy, { recursive: true, force: true })
  }
})
