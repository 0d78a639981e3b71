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
import { FILES, stale } from './generate.js'
import { NAMES } from '../services/list.js'

const root = fileURLToPath(new URL('..', import.meta.url))

test('every generated file is up to date with services/list.js (npm run generate)', () => {
  assert.deepEqual(stale().map((f) => f.path), [], 'stale: run npm run generate')
})

test('a generated block edited by hand, or a file missing, is stale; generate --check names it and exits 1', () => {
  const copy = mkdtempSync(join(tmpdir(), 'suite-generate-'))
  try {
    // The generated files and their sources: the generator, the list, the services' definitions.
    const sources = ['scripts/generate.js', 'scripts/generate', 'services/list.js', 'charts/service/values.yaml', 'loadtests/k6/slo.js', ...NAMES.flatMap((s) => [`services/${s}/src`, `services/${s}/package.json`])]
    for (const path of [...Object.keys(FILES), ...sources]) {
      mkdirSync(dirname(join(copy, path)), { recursive: true })
      cpSync(join(root, path), join(copy, path), { recursive: true })
    }
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'))
    const values = join(copy, 'charts/suite/values.yaml')
    writeFileSync(values, readFileSync(values, 'utf8').replace('scaleOption: products', 'scaleOption: rows'))
    rmSync(join(copy, 'loadtests/k6/services.js'))
    assert.deepEqual(stale(copy).map((f) => f.path).sort(), ['charts/suite/values.yaml', 'loadtests/k6/services.js'])
    const check = spawnSync(process.execPath, [join(copy, 'scripts/generate.js'), '--check'], { encoding: 'utf8' })
    assert.equal(check.status, 1, check.stderr)
    assert.equal(check.stderr, 'generate: charts/suite/values.yaml is stale: run npm run generate\ngenerate: loadtests/k6/services.js is stale: run npm run generate\n')
  } finally {
    rmSync(copy, { recursive: true, force: true })
  }
})
