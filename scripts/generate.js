// `npm run generate`: writes every file that derives from one source and cannot import it — from
// services/list.js, the files that name the services (generate/services.js); from the config schemas
// and the charts' values.yaml, the reference tables and the chart's `config` schema
// (generate/reference.js); from package.json's version and CHANGELOG.md, every stated version and
// the chart's annotations (generate/versions.js). In YAML and Markdown only the marked blocks are
// written (the rest is hand-written); JSON schemas get their generated keys.
//   npm run generate             write the files
//   npm run generate -- --check  write nothing; list the stale files and exit 1 if there are any
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runCommand } from '@suite/kit/args'
import * as list from './generate/services.js'
import { VERSION_FILES, suiteChart } from './generate/versions.js'
import {
  SERVICES_WITH_SETTINGS, chartConfigSchema, chartValues, kitSettings, serviceSettings
} from './generate/reference.js'

const root = fileURLToPath(new URL('..', import.meta.url))

/**
 * Every generated file: path (from the root) → (its current text, or '' for a whole file; read(path):
 * another file's text as this run makes it) → new text.
 */
export const FILES = {
  'skaffold.yaml': list.skaffold,
  'charts/suite/Chart.yaml': (text, read) => suiteChart(list.chartYaml(text, read), read),
  ...VERSION_FILES,
  'charts/suite/values.yaml': list.suiteValues,
  'charts/suite/values.schema.json': list.suiteSchema,
  'charts/suite/values-dev.yaml': list.devValues,
  'charts/suite/values-production.yaml': list.aliasValues('service'),
  'k8s/lab/suite.yaml': list.aliasValues('lab'),
  'charts/service/values.schema.json': (text) => chartConfigSchema(list.serviceSchema(text)),
  'charts/loadtest/values.yaml': list.loadtestValues,
  'charts/loadtest/values.schema.json': list.loadtestSchema,
  'charts/loadtest/templates/testruns.yaml': list.testRuns,
  'charts/loadtest/tests/testruns_test.yaml': list.testRunsTest,
  'charts/suite/tests/routing_test.yaml': list.routingTest,
  'loadtests/k6/services.js': list.k6Services,
  'loadtests/k6/suite.js': list.k6Suite,
  'loadtests/k6/scenarios.js': list.k6Scenarios,
  'README.md': list.readme,
  'services/README.md': kitSettings,
  ...Object.fromEntries(SERVICES_WITH_SETTINGS.map((name) => [`services/${name}/README.md`, serviceSettings(name)])),
  'charts/VALUES.md': (text, read) => {
    const suite = chartValues('suite values', 'charts/suite', '###')(text, read)
    return chartValues('service values', 'charts/service', '###')(suite, read)
  },
  'charts/loadtest/README.md': chartValues('values', 'charts/loadtest', '###')
}

/** The files whose text differs from what their source makes, as { path, want }. `dir`: the checkout. */
export function stale (dir = root) {
  const made = new Map()
  const onDisk = (path) => {
    try { return readFileSync(join(dir, path), 'utf8') } catch (err) { if (err.code !== 'ENOENT') throw err }
    return ''
  }
  const read = (path) => made.get(path) ?? onDisk(path)
  return Object.entries(FILES).flatMap(([path, make]) => {
    const have = onDisk(path)
    const want = make(have, read)
    made.set(path, want)
    return want === have ? [] : [{ path, want }]
  })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await runCommand('generate', {
    usage: 'npm run generate [-- --check]   (or node scripts/generate.js [options])',
    summary: 'Writes every file that derives from one source: ' +
      'the files naming the services (from services/list.js), the settings and values tables, ' +
      'the service chart\'s config schema (CONTRIBUTING.md: Generated files).',
    options: {
      check: { type: 'boolean', default: false, help: 'write nothing: name the stale files, exit 1 if there are any' }
    },
    examples: ['npm run generate', 'npm run generate -- --check']
  }, ({ check }) => {
    const changed = stale()
    if (check) {
      for (const { path } of changed) console.error(`generate: ${path} is stale: run npm run generate`)
      process.exitCode = changed.length ? 1 : 0
      return
    }
    for (const { path, want } of changed) {
      writeFileSync(join(root, path), want)
      console.log(`generate: wrote ${path}`)
    }
    if (!changed.length) console.log('generate: every generated file is up to date')
  })
}
