// `npm test`: installs what the tests need and the machine lacks (scripts/provision.js), runs ESLint
// over the repository, then starts one throwaway PostgreSQL and one Redis for the whole run and runs
// every workspace's node:test files against them, with V8 coverage of every Node process the tests
// start (the services run as their own processes and threads); then the coverage per workspace,
// which fails the run below its floor (COVERAGE_FLOORS). Each test file makes its own database
// (TEST_PG.createDatabase) so files can run in parallel; tests that crash Redis start their own.
// `node scripts/test.js <files…>` runs only those files: no lint, no coverage.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startPostgres, startRedis } from '@suite/kit/testing'
import { provisionFor } from './provision.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const patterns = process.argv.slice(2)
const whole = !patterns.length
const files = whole
  ? ['services/*/test/**/*.test.js', 'scripts/test/*.test.js', 'charts/test/*.test.js', 'loadtests/test/*.test.js']
  : patterns

// PostgreSQL, Redis, nginx, Prometheus and the Go tools: installed where missing (one line a step).
provisionFor('test', 'npm test')

// Lines covered by the test run, per workspace, at least (percent): a service without a floor of
// its own gets `services`'. Raise a floor when coverage rises; a change that leaves code untested
// fails here. The root: scripts/ and loadtests/ (not counted: the benchmarks and explain, run by
// hand; fuzz and the fault suite, CI stages of their own; k8s/e2e, on a cluster).
// Set a point or so below what a full run reaches (npm test prints it, per workspace): fault paths
// reached by timing vary a little between runs.
const COVERAGE_FLOORS = {
  services: 85,
  'services/kit': 97,
  'services/product': 98,
  'services/profile': 98,
  'services/menu': 98,
  'services/flows': 97,
  root: 60
}
const floorOf = (ws) => COVERAGE_FLOORS[ws] ?? COVERAGE_FLOORS.services
const COVERED = ['services/*/src/**', 'services/*/etl/**', 'scripts/**', 'loadtests/lib/**', 'loadtests/*.js']
const NOT_COVERED = [
  '**/*.test.js', 'scripts/bench/**', 'scripts/bench*.js', 'scripts/explain.js', 'scripts/fuzz.js',
  'scripts/faults.js', 'scripts/faults/**', 'scripts/tools.sh'
]

let lint = 0
if (whole) {
  console.log('npm test: eslint .')
  lint = spawnSync(process.execPath, [join(root, 'node_modules/eslint/bin/eslint.js'), '--max-warnings', '0', '.'],
    { cwd: root, stdio: 'inherit' }).status ?? 1
  console.log(lint
    ? 'npm test: eslint found problems (npm run lint -- --fix fixes the style ones)'
    : 'npm test: eslint: no problems')
}

let pgServer, redis
try {
  pgServer = await startPostgres()
  redis = await startRedis()
} catch (err) {
  console.error(`npm test: ${err.message}`)
  await pgServer?.stop()
  process.exit(1)
}

const coverageDir = whole ? mkdtempSync(join(tmpdir(), 'suite-coverage-')) : null
// Three files at once: most of them wait on servers, timeouts and faults, so two at once leave the
// cores partly idle; a fourth at once gains little over three.
const testArgs = ['--test', '--test-concurrency=3', '--test-timeout=120000', '--test-force-exit', ...files]
const child = spawn(process.execPath, testArgs, {
  stdio: 'inherit',
  env: {
    ...process.env,
    TEST_DATABASE_URL: pgServer.url,
    TEST_REDIS_URL: redis.url,
    ...(coverageDir && { NODE_V8_COVERAGE: coverageDir })
  }
})
const code = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))))
await Promise.allSettled([pgServer.stop(), redis.stop()])
const below = coverageDir ? coverage(coverageDir) : 0
process.exit(code || lint || below ? 1 : 0)

/** Reports the lines covered per workspace; returns how many are below their floor. */
function coverage (dir) {
  const reports = join(root, 'coverage')
  const r = spawnSync(process.execPath, [
    join(root, 'node_modules/c8/bin/c8.js'), 'report', '--temp-directory', dir, '--reports-dir', reports,
    '--reporter', 'json-summary', '--all',
    ...COVERED.flatMap((g) => ['--include', g]), ...NOT_COVERED.flatMap((g) => ['--exclude', g])
  ], { cwd: root, encoding: 'utf8' })
  rmSync(dir, { recursive: true, force: true })
  if (r.status !== 0) {
    console.error(`npm test: c8 report failed: ${r.stderr}`)
    return 1
  }
  const summary = JSON.parse(readFileSync(join(reports, 'coverage-summary.json'), 'utf8'))
  const totals = {}
  for (const [file, { lines }] of Object.entries(summary)) {
    if (file === 'total') continue
    const ws = /^services\/[^/]+/.exec(file.slice(root.length))?.[0] ?? 'root'
    totals[ws] ??= { covered: 0, total: 0 }
    totals[ws].covered += lines.covered
    totals[ws].total += lines.total
  }
  let below = 0
  console.log('\nnpm test: lines covered per workspace (c8; coverage/coverage-summary.json has every file)')
  console.log('| workspace | lines | covered | floor |\n| --- | --- | --- | --- |')
  for (const ws of Object.keys(totals).sort((a, b) => (a === 'root') - (b === 'root') || a.localeCompare(b))) {
    const t = totals[ws]
    const pct = t.total ? (100 * t.covered) / t.total : 0
    const floor = floorOf(ws)
    if (pct < floor) below++
    console.log(`| ${ws} | ${t.covered}/${t.total} | ${pct.toFixed(1)}% | ${floor}%${pct < floor ? ' BELOW' : ''} |`)
  }
  return below
}
