// Installs what the tests need and this machine lacks, so that `npm test` works on a fresh clone with
// nothing but Node 24: the distribution's packages (PostgreSQL, Redis, nginx, Prometheus, Python's
// venv) when running as root on Debian or Ubuntu, and the pinned Go tools (scripts/tools.sh, built
// once into the tools folder; Go itself from the distribution when missing). One line per step. Where
// it cannot install (not root, not apt), it stops and names the one command to run.
//   node scripts/provision.js [test|faults|fuzz|e2e|all]   (default: all)
// npm test, test:faults, test:fuzz and test:e2e call provision() themselves.
import { spawnSync } from 'node:child_process'
import { chmodSync, cpSync, existsSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PACKAGES, goBinDir, toolsDir, whichBinary } from '@suite/kit/testing/tools'

const root = fileURLToPath(new URL('..', import.meta.url))
const GO_MIN = [1, 26]
const GO_TOOLCHAIN = 'go1.26.8' // what Go's own toolchain switch fetches when the machine's Go is older
const GO_SWITCH = [1, 21] // the first Go that switches toolchains (Debian 12's is 1.19)

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
    let go = goBinary()
    if (!goIsAtLeast(go, GO_SWITCH)) go = goToolchain(go, log)
    path.push(dirname(go))
    const env = { ...process.env, PATH: [dirname(go), process.env.PATH].join(delimiter), SUITE_TOOLS: toolsDir() }
    if (!goIsAtLeast(go, GO_MIN)) env.GOTOOLCHAIN = GO_TOOLCHAIN // Ubuntu's Go fetches and runs a recent one itself
    const r = spawnSync('bash', [`${root}scripts/tools.sh`],
      { env, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' })
    if (r.status !== 0) {
      throw new Error(`provision: scripts/tools.sh failed (exit ${r.status ?? r.signal}): see its output above`)
    }
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

function goIsAtLeast (go, [major, minor]) {
  const v = /go(\d+)\.(\d+)/.exec(spawnSync(go, ['version'], { encoding: 'utf8' }).stdout ?? '')
  return Boolean(v) && (Number(v[1]) > major || (Number(v[1]) === major && Number(v[2]) >= minor))
}

/**
 * GO_TOOLCHAIN for a Go too old to switch to it itself: the module the switch would fetch
 * (golang.org/toolchain, from the module proxy), downloaded by the old Go and copied into the tools
 * folder once. An old Go unpacks modules without execute bits: they are set on the copy.
 */
export function goToolchain (oldGo, log) {
  const dir = join(toolsDir(), GO_TOOLCHAIN)
  const go = join(dir, 'bin', 'go')
  if (existsSync(go)) return go
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch] ?? process.arch
  const mod = `golang.org/toolchain@v0.0.1-${GO_TOOLCHAIN}.${process.platform}-${arch}`
  log(`go mod download ${mod} (this machine's Go cannot switch toolchains)`)
  const r = spawnSync(oldGo, ['mod', 'download', '-json', mod],
    { cwd: tmpdir(), encoding: 'utf8', env: { ...process.env, GOFLAGS: '-modcacherw' } })
  if (r.status !== 0) {
    throw new Error(`provision: go mod download ${mod} failed: ` +
      `${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' ')}`)
  }
  rmSync(`${dir}.tmp`, { recursive: true, force: true })
  cpSync(JSON.parse(r.stdout).Dir, `${dir}.tmp`, { recursive: true })
  const tools = join(`${dir}.tmp`, 'pkg', 'tool')
  for (const d of [join(`${dir}.tmp`, 'bin'), ...readdirSync(tools).map((t) => join(tools, t))]) {
    for (const f of readdirSync(d)) chmodSync(join(d, f), 0o755)
  }
  renameSync(`${dir}.tmp`, dir) // a copy cut short leaves no Go that looks whole
  return go
}

function hasPythonVenv () {
  return spawnSync('python3', ['-c', 'import ensurepip, venv'], { stdio: 'ignore' }).status === 0
}

/** apt-get install, as root on a Debian or Ubuntu machine; anything else stops with the command to run. */
function aptInstall (packages, log) {
  const list = packages.sort().join(' ')
  const command = `apt-get install -y --no-install-recommends ${list}`
  if (!whichBinary('apt-get')) {
    throw new Error(`provision: this machine lacks ${list} and has no apt-get: ` +
      'install them with its package manager, then run the command again')
  }
  if (process.getuid?.() !== 0) {
    throw new Error(`provision: this machine lacks ${list}: ` +
      `run \`sudo apt-get update && sudo ${command}\`, then the command again`)
  }
  log(`apt-get install ${list}`)
  const started = Date.now()
  // DPkg::Lock::Timeout: a fresh VM's unattended upgrade holds the lock for a while; wait, do not fail.
  const opts = ['-o', 'DPkg::Lock::Timeout=600', '-qq']
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', ...packages]]) {
    const r = spawnSync('apt-get', [...opts, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' })
    if (r.status !== 0) {
      throw new Error(`provision: apt-get ${args[0]} failed: ${r.stderr.trim().split('\n').slice(-3).join(' ')}`)
    }
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
