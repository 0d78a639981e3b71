// `npm run test:fuzz`: schemathesis against every service's own OpenAPI (/docs/json), all checks, every
// phase (examples, coverage, fuzzing, stateful), on a real PostgreSQL (password auth) and Redis
// (AUTH), with a fixed seed and a rotating one. Prints per service and seed the operations, test
// cases and failures; exits 1 on any failure.
//   node scripts/fuzz.js [--only product,flows] [--seed N] [--max-examples N]
// The rotating seed is the date (YYYYMMDD) unless --seed names one: a failure is rerun with the seed
// it printed. schemathesis lives in a venv outside the clone, made on first use. FUZZ_KEEP=1 keeps
// the run's folder (schemathesis's JSON reports) instead of removing it.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, rm, readFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { startPostgres, startRedis, startService, createDatabase, databaseEnv, toolsDir } from '@suite/kit/testing'
import { provisionFor } from './provision.js'
import { SERVICES as LIST } from '../services/list.js'

const SCHEMATHESIS = '4.32.5'
const FIXED_SEED = 11
const root = fileURLToPath(new URL('..', import.meta.url))
const { values: opts } = parseArgs({
  options: { only: { type: 'string' }, seed: { type: 'string' }, 'max-examples': { type: 'string', default: '25' } }
})
const seeds = [FIXED_SEED, Number(opts.seed ?? new Date().toISOString().slice(0, 10).replaceAll('-', ''))]

// Each service of services/list.js with the data it is fuzzed on: a small generated set (in `dir`),
// loaded by its own commands.
const SERVICES = Object.fromEntries(LIST.map((s) => [
  s.name,
  (dir) => s.data ? [['generate', `--${s.data.option}`, '300', '--out', dir], ['load', '--dir', dir]] : []
]))
const only = opts.only ? opts.only.split(',') : Object.keys(SERVICES)

provisionFor('fuzz', 'test:fuzz')
const st = await schemathesis()
const redisPassword = randomBytes(12).toString('hex')
const work = await mkdtemp(join(tmpdir(), 'suite-fuzz-'))
let pg, redis
const running = []
let bad
try {
  pg = await startPostgres() // scram-sha-256: every TCP client logs in with a password
  redis = await startRedis({ password: redisPassword })
  const summary = []
  for (const [i, name] of only.entries()) {
    const env = {
      // The passwords apart from the URLs, as the charts pass them (from Secrets).
      ...databaseEnv(await createDatabase(pg.url, name)),
      REDIS_URL: `redis://127.0.0.1:${redis.port}/${i}`,
      REDIS_PASSWORD: redisPassword,
      LOG_LEVEL: 'error'
    }
    const cli = join(root, 'services', name, 'src', 'cli.js')
    for (const args of [['migrate'], ...SERVICES[name](join(work, name))]) run(process.execPath, [cli, ...args], env)
    const service = await startService({ entry: cli, env: { ...env, WORKERS: '2' } })
    running.push(service)
    for (const seed of seeds) summary.push(await fuzz(name, service.url, seed))
    await service.stop()
    running.pop()
  }
  console.log('\nschemathesis %s, every check (scripts/fuzz/schemathesis.toml), ' +
    'phases examples,coverage,fuzzing,stateful, --max-examples %s', SCHEMATHESIS, opts['max-examples'])
  console.log('| service | seed | operations | test cases | failures |\n| --- | --- | --- | --- | --- |')
  for (const r of summary) console.log(`| ${r.name} | ${r.seed} | ${r.operations} | ${r.cases} | ${r.failures} |`)
  // One line per run of schemathesis, then the count of runs in the form CI reads.
  bad = summary.filter((r) => r.failures || r.exitCode).length
  console.log(`\nfuzz: ${summary.length - bad} passed, ${bad} failed`)
} finally {
  await Promise.allSettled(running.map((s) => s.stop()))
  await Promise.allSettled([pg?.stop(), redis?.stop()])
  if (!process.env.FUZZ_KEEP) await rm(work, { recursive: true, force: true })
}
process.exit(bad ? 1 : 0)

// The venv with schemathesis, made once under the tools folder (outside the clone).
async function schemathesis () {
  const venv = join(toolsDir(), `schemathesis-${SCHEMATHESIS}`)
  const bin = join(venv, 'bin', 'st')
  if (!existsSync(bin)) {
    console.log(`fuzz: installing schemathesis ${SCHEMATHESIS} into ${venv}`)
    run('python3', ['-m', 'venv', venv])
    run(join(venv, 'bin', 'pip'), ['install', '--quiet', `schemathesis==${SCHEMATHESIS}`])
  }
  return bin
}

function run (cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit'] })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal})`)
}

// One schemathesis run; its counts come from its JSON run report.
async function fuzz (name, url, seed) {
  const report = join(work, `${name}-${seed}.json`)
  const args = [
    '--config-file', join(root, 'scripts', 'fuzz', 'schemathesis.toml'),
    'run', `${url}/docs/json`, // every check: [checks] enabled = true in the file
    '--phases', 'examples,coverage,fuzzing,stateful',
    '--seed', String(seed),
    '--max-examples', opts['max-examples'],
    '--request-timeout', '10',
    '--generation-database', 'none', // each run from its seed alone, nothing kept between runs
    '--report', 'json', '--report-json-path', report,
    '--no-color'
  ]
  console.log(`\nfuzz: ${name} seed ${seed}: st ${args.join(' ')}`)
  // In the run's folder: schemathesis and Hypothesis write their caches beside them, not into the clone.
  const child = spawn(st, args, { cwd: work, stdio: ['ignore', 'inherit', 'inherit'] })
  const exitCode = await new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))))
  const r = JSON.parse(await readFile(report, 'utf8').catch(() => 'null')) ??
    { operations: {}, test_cases: {}, errors: ['no report'] }
  return {
    name,
    seed,
    exitCode,
    operations: `${r.operations.tested}/${r.operations.total}`,
    cases: r.test_cases.generated,
    failures: r.test_cases.unique_failures + r.errors.length
  }
}
