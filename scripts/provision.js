// Installs what the tests need and this machine lacks, so that `npm test` works on a fresh clone with
// nothing but Node 24: the distribution's packages (PostgreSQL, Redis, nginx, Prometheus, Python's
// venv) when running as root on Debian or Ubuntu, and the pinned Go tools (scripts/tools.sh, built
// once into the tools folder; Go itself from the distribution when missing). One line per step. Where
// it cannot install (not root, not apt), it stops and names the one command to run.
//   node scripts/provision.js [test|faults|fuzz|e2e|all]   (default: all)
// npm test, test:faults, test:fuzz and test:e2e call provision() themselves.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { delimiter, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PACKAGES, goBinDir, toolsDir, whichBinary } from '@suite/kit/testing/tools'

const root = fileURLToPath(new URL('..', import.meta.url))
const GO_MIN = [1, 26]
const GO_TOOLCHAIN = 'go1.26.8' // what Go's own toolchain switch fetches when the machine's Go is older

// What each command needs: programs from packages (PACKAGES names their package), Go, and the Go tools
// ('go-tools': scripts/tools.sh, which builds only what its stamps say is missing).
const NEEDS = {
  test: ['initdb', 'postgres', 'redis-server', 'nginx', 'prometheus', 'promtool', 'go', 'go-tools'],
  faults: ['initdb', 'postgres', 'redis-server', 'go', 'go-tools'],
  fuzz: ['initdb', 'postgres', 'redis-server', 'python3-venv'],
  e2e: ['go', 'go-tools']
}

/**
 * Makes sure everything `what` (a key of NEEDS, or 'all') needs is here; installs what is missing.
 * Returns the PATH entries the caller puts first (the Go tools folder, Go's own folder).
 */
export function provision (what = 'all', { log = (line) => console.log(`provision: ${line}`) } = {}) {
  const needs = [...new Set(what === 'all' ? Object.values(NEEDS).flat() : NEEDS[what])]
  if (!needs.length) throw new Error(`provision: nothing is called "${what}" (${Object.keys(NEEDS).join(', ')}, all)`)

  const packages = new Set()
  for (const need of needs) {
    if (PACKAGES[need] && !whichBinary(need)) packages.add(PACKAGES[need])
    if (need === 'python3-venv' && !hasPythonVenv()) packages.add('python3-venv')
    if (need === 'go' && !goBinary()) packages.add('golang-go')
  }
  if (packages.size) aptInstall([...packages], log)

  const path = []
  if (needs.includes('go-tools')) {
    const go = goBinary()
    path.push(dirname(go))
    const env = { ...process.env, PATH: [dirname(go), process.env.PATH].join(delimiter), SUITE_TOOLS: toolsDir() }
    if (!goIsRecent(go)) env.GOTOOLCHAIN = GO_TOOLCHAIN // Debian's Go fetches and runs a recent one itself
    const r = spawnSync('bash', [`${root}scripts/tools.sh`], { env, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`provision: scripts/tools.sh failed (exit ${r.status ?? r.signal}): see its output above`)
    path.unshift(goBinDir())
  }
  return path
}

/**
 * provision() for a command: the tools go first on this process's PATH (its children inherit it); a
 * failure is one line, "<name>: <why>", and exit 1.
 */
export function provisionFor (what, name) {
  try {
    process.env.PATH = [...provision(what), process.env.PATH].join(delimiter)
  } catch (err) {
    console.error(`${name}: ${err.message}`)
    process.exit(1)
  }
}

/** Go: on PATH or where its official archive unpacks; null when missing. */
function goBinary () {
  return whichBinary('go') ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : null)
}

function goIsRecent (go) {
  const v = /go(\d+)\.(\d+)/.exec(spawnSync(go, ['version'], { encoding: 'utf8' }).stdout ?? '')
  return Boolean(v) && (Number(v[1]) > GO_MIN[0] || (Number(v[1]) === GO_MIN[0] && Number(v[2]) >= GO_MIN[1]))
}

function hasPythonVenv () {
  return spawnSync('python3', ['-c', 'import ensurepip, venv'], { stdio: 'ignore' }).status === 0
}

/** apt-get install, as root on a Debian or Ubuntu machine; anything else stops with the command to run. */
function aptInstall (packages, log) {
  const list = packages.sort().join(' ')
  const command = `apt-get install -y --no-install-recommends ${list}`
  if (!whichBinary('apt-get')) throw new Error(`provision: this machine lacks ${list} and has no apt-get: install them with its package manager, then run the command again`)
  if (process.getuid?.() !== 0) throw new Error(`provision: this machine lacks ${list}: run \`sudo apt-get update && sudo ${command}\`, then the command again`)
  log(`apt-get install ${list}`)
  const started = Date.now()
  // DPkg::Lock::Timeout: a fresh VM's unattended upgrade holds the lock for a while; wait, do not fail.
  const opts = ['-o', 'DPkg::Lock::Timeout=600', '-qq']
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', ...packages]]) {
    const r = spawnSync('apt-get', [...opts, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`provision: apt-get ${args[0]} failed: ${r.stderr.trim().split('\n').slice(-3).join(' ')}`)
  }
  log(`installed ${list} in ${Math.round((Date.now() - started) / 1000)} s`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const path = provision(process.argv[2] ?? 'all')
    // For a shell: PATH="$(node scripts/provision.js | tail -1):$PATH"
    console.log(path.join(delimiter))
  } catch (err) {
    console.error(err.message)
    process.exit(1)
  }
}
