// Every command a newcomer runs, as a newcomer runs it: --help prints the usage with examples and
// exits 0 (no database needed); an unknown option or a bad value prints one line naming it, then the
// usage, and exits 2 — before anything is started, and never with a stack trace.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SERVICES } from '../../services/list.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
// A URL that passes the settings' checks but where nothing listens: a check that fires after the
// settings are read still never connects.
const env = { PATH: process.env.PATH, DATABASE_URL: 'postgres://suite@127.0.0.1:1/none' }
const run = (file, ...args) => {
  const r = spawnSync(process.execPath, [file, ...args], { cwd: root, env, encoding: 'utf8', timeout: 30000 })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

// [command, program name in its messages, [bad arguments, what the one line says]…]
const COMMANDS = [
  ['loadtests/ladder.js', 'ladder', [
    [['--steps', '10,x'], /^ladder: --steps must be a comma-separated list of whole numbers ≥ 1 \(got "10,x"\)$/],
    [['--scenario', 'nope'], /^ladder: --scenario must be one of product, profile, menu, flows \(got "nope"\)$/],
    [['--duration', '30'], /^ladder: --duration must be a duration such as 30s or 2m \(got "30"\)$/],
    [['--start', '--base-url', 'http://x'], /^ladder: --start and --base-url exclude each other$/],
    [['--env', 'ids=1-5'], /^ladder: --env must be NAME=VALUE/],
    [['--p95-ms', 'fast'], /^ladder: --p95-ms must be a number ≥ 0 \(got "fast"\)$/],
    [['--steps'], /^ladder: Option '--steps <value>' argument missing$/]
  ]],
  ['loadtests/matrix.js', 'matrix', [
    [['--lb', 'none,nginx'],
      /^matrix: --lb must be a comma-separated list of none, round_robin, least_conn \(got "none,nginx"\)$/],
    [['--repeat', '0'], /^matrix: --repeat must be a whole number ≥ 1 \(got "0"\)$/],
    [['--vus', '8'], /^matrix: Unknown option '--vus'/]
  ]],
  ['scripts/bench.js', 'bench', [
    [['--only', 'product,nope'], /^bench: --only must be a comma-separated list of product, profile, menu, flows/],
    [['--duration', '0'], /^bench: --duration must be a whole number ≥ 1 \(got "0"\)$/],
    [['--only', 'product', '--env', 'FLOWS_MAX_BATCH=5'], /^bench: --env FLOWS_MAX_BATCH: not a setting of product$/],
    [['extra'], /^bench: Unexpected argument 'extra'/]
  ]],
  ['scripts/bench-compare.js', 'bench:compare', [
    [['--base', 'no-such-commit'], /^bench:compare: --base no-such-commit names no commit of this repository$/],
    [['--only', 'nope'], /^bench:compare: --only must be a comma-separated list of product, profile, menu, flows/],
    [['--repeat', '0'], /^bench:compare: --repeat must be a whole number ≥ 1 \(got "0"\)$/],
    [['--base-env', 'CACHE_ENABLED=false'], /^bench:compare: --base-env CACHE_ENABLED: the bench sets it itself$/]
  ]],
  ['scripts/bench-etl.js', 'bench:etl', [
    [['--service', 'flows'], /^bench:etl: --service must be one of product, menu, profile \(got "flows"\)$/],
    [['--size', '-1'], /^bench:etl: Option '--size' argument is ambiguous\./]
  ]],
  ['scripts/bench-near-start.js', 'bench:near-start', [
    [['--runs', '0'], /^bench:near-start: --runs must be a whole number ≥ 1 \(got "0"\)$/],
    [['--base', 'no-such-commit'], /^bench:near-start: --base no-such-commit names no commit of this repository$/]
  ]],
  ['scripts/bench-start.js', 'bench:start', [
    [['--workers', '0'], /^bench:start: --workers must be a whole number ≥ 1 \(got "0"\)$/],
    [['--sample-size', 'many'], /^bench:start: --sample-size must be a whole number ≥ 1 \(got "many"\)$/]
  ]],
  ['scripts/explain.js', 'explain', [
    [['--products', '1e5'], /^explain: --products must be a whole number ≥ 1 \(got "1e5"\)$/]
  ]],
  ['scripts/generate.js', 'generate', [
    [['extra'], /^generate: Unexpected argument 'extra'/]
  ]],
  ['scripts/new-service.js', 'new-service', [
    [[], /^new-service: --name NAME is required$/],
    [['--name', 'Bad-Name'],
      /^new-service: --name must be lowercase letters and digits, a letter first \(got "Bad-Name"\)$/],
    [['--name', 'product'], /^new-service: --name: product exists already$/],
    [['--name', 'x1', '--port', '80'], /^new-service: --port must be a port number from 1024 to 65535 \(got "80"\)$/],
    [['--name', 'x1', '--port', '3000'], /^new-service: --port: 3000 is product's$/]
  ]],
  ['services/product/src/cli.js', 'product', [
    [['fly'], /^product: unknown command "fly"$/],
    [['generate', '--products', 'many', '--out', '/tmp/never'],
      /^product generate: --products must be a whole number \(got "many"\)$/],
    [['load'], /^product load: --dir DIR is required$/],
    [['migrate', '--wait', 'soon'], /^product migrate: --wait must be a whole number \(got "soon"\)$/]
  ]],
  ['services/profile/src/cli.js', 'profile', [
    [['generate', '--out'], /^profile generate: Option '--out <value>' argument missing$/]
  ]],
  ['services/menu/src/cli.js', 'menu', [
    [['seed', '--streams', '0'], /^menu seed: --streams must be a whole number ≥ 1 \(got "0"\)$/]
  ]],
  ['services/flows/src/cli.js', 'flows', [
    [['serve', '--port', '80'], /^flows serve: Unknown option '--port'/]
  ]]
]

for (const [file, name, bad] of COMMANDS) {
  test(`${file}: --help shows the usage with examples; mistakes are one line, the usage, exit 2`, () => {
    const help = run(file, '--help')
    assert.equal(help.code, 0, help.err)
    assert.match(help.out, /^usage: /)
    assert.match(help.out, /\nexamples:\n {2}\S/)
    assert.match(help.out, /--help +print this help and exit/)
    assert.equal(help.err, '')
    const unknown = run(file, '--no-such-option')
    assert.equal(unknown.code, 2, unknown.err)
    // A service's options with no command are serve's.
    assert.match(unknown.err.split('\n')[0], new RegExp(`^${name}(?: serve)?: Unknown option '--no-such-option'`))
    for (const [args, line] of bad) {
      const r = run(file, ...args)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`)
      const [first, blank, usage] = r.err.split('\n')
      assert.match(first, line, args.join(' '))
      assert.equal(blank, '')
      assert.match(usage, /^usage: /)
      assert.doesNotMatch(r.err, /^\s+at /m, 'no stack trace')
      assert.equal(r.out, '')
    }
  })
}

test('a service command\'s own --help lists its options with their defaults', () => {
  const r = run('services/menu/src/cli.js', 'seed', '--help')
  assert.equal(r.code, 0, r.err)
  assert.match(r.out, /^usage: node services\/menu\/src\/cli\.js seed \[options\]/)
  assert.match(r.out, /--menus N +how many menus \(default: 10000000\)/)
  assert.match(r.out, /--streams K +COPY connections at once/)
  const top = run('services/menu/src/cli.js', 'help')
  assert.match(top.out, /commands \(serve when none is given\):\n {2}serve/)
  assert.match(top.out, / {2}seed +generate the data straight into PostgreSQL/)
})

test('each service\'s commands are its entry in services/list.js: data commands with its size option, seed with direct',
  async () => {
    for (const s of SERVICES) {
      const top = run(`services/${s.name}/src/cli.js`, 'help')
      assert.equal(top.code, 0, top.err)
      const commands = [...top.out.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1])
      const want = ['serve', 'migrate', ...(s.data ? ['generate', 'load'] : []), ...(s.data?.direct ? ['seed'] : [])]
      assert.deepEqual(commands, want, `${s.name}: its commands`)
      if (!s.data) continue
      const generate = run(`services/${s.name}/src/cli.js`, 'generate', '--help')
      const option = new RegExp(`--${s.data.option} N +how many ${s.data.option} \\(default: ${s.data.defaultCount}\\)`)
      assert.match(generate.out, option, `${s.name}: generate's size option`)
      assert.match(generate.out, new RegExp(`write ${s.data.files.replace(/[()]/g, '\\$&')}, deterministic`))
      // The generator takes its size from that option.
      const out = mkdtempSync(join(tmpdir(), `cli-${s.name}-`))
      try {
        const made = run(`services/${s.name}/src/cli.js`, 'generate', '--out', out, `--${s.data.option}`, '5')
        assert.equal(made.code, 0, made.err)
        assert.match(made.out + made.err, /: 5 rows, /, `${s.name}: --${s.data.option} 5 makes 5 rows`)
      } finally {
        rmSync(out, { recursive: true, force: true })
      }
      // The module the commands run has what they call.
      const etl = await import(`../../services/${s.name}/etl/index.js`)
      for (const f of ['generate', 'load', ...(s.data.direct ? ['seed'] : [])]) {
        assert.equal(typeof etl[f], 'function', `${s.name}: etl/index.js exports ${f}`)
      }
    }
  })
