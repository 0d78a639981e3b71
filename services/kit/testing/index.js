// Throwaway PostgreSQL and Redis servers for tests and benchmarks, started from the binaries on PATH,
// plus a helper that runs a service as a real child process. Nothing here mocks anything.
import { spawn, execFileSync } from 'node:child_process'
import { mkdtemp, rm, chown, writeFile } from 'node:fs/promises'
import { existsSync, readdirSync, readFileSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { request, Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join, delimiter } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { randomBytes } from 'node:crypto'
import assert from 'node:assert/strict'
import pg from 'pg'
import Ajv from 'ajv'
import addFormats from 'ajv-formats'
import { errorSchema } from '../src/app.js'
import { withUnicodeFormat } from '../src/validation.js'
export { checkErrorContract, assertError, raw } from './contract.js'

export async function freePort () {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

/**
 * A base port with `base + offset` free for every offset (npm start moves its services' ports by
 * PORT as a whole), chosen below the kernel's ephemeral range. listen(0) and outgoing connections take
 * their ports from that range (Linux's connect() prefers its even ones, so base + 1 after a listen(0)
 * base is just where a client's source port lands): a command that binds its block seconds later, as
 * npm start does after PGlite and its samples, would find one of them taken now and then.
 */
export async function freePortBlock (offsets = [0]) {
  const low = ephemeralLow()
  const span = Math.max(...offsets) + 1
  for (let tries = 0; tries < 200; tries++) {
    const base = 10_000 + Math.floor(Math.random() * (low - 10_000 - span))
    const servers = offsets.map((o) => createServer().listen(base + o, '0.0.0.0'))
    const bound = await Promise.all(servers.map((srv) => new Promise((resolve) => {
      srv.once('listening', () => resolve(true))
      srv.once('error', () => resolve(false))
    })))
    await Promise.all(servers.filter((srv, i) => bound[i]).map((srv) => new Promise((resolve) => srv.close(resolve))))
    if (bound.every(Boolean)) return base
  }
  throw new Error(`no block of free ports ${offsets.join(', ')} below ${low}`)
}

// The first port of the ephemeral range (Linux /proc/sys/net/ipv4/ip_local_port_range; 32768 elsewhere).
function ephemeralLow () {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768
  } catch {
    return 32_768
  }
}

// Debian keeps the PostgreSQL server binaries out of PATH, under /usr/lib/postgresql/<major>/bin.
function findBinary (name, hint) {
  const dirs = process.env.PATH.split(delimiter)
  if (existsSync('/usr/lib/postgresql')) {
    for (const v of readdirSync('/usr/lib/postgresql').sort().reverse()) dirs.push(`/usr/lib/postgresql/${v}/bin`)
  }
  for (const dir of dirs) {
    const file = join(dir, name)
    if (existsSync(file)) return file
  }
  throw new Error(`${name} not found on PATH: install ${hint}`)
}

// PostgreSQL refuses to run as root, so under root the server runs as the postgres system user.
function serverUser () {
  if (process.getuid?.() !== 0) return {}
  try {
    return {
      uid: Number(execFileSync('id', ['-u', 'postgres']).toString()),
      gid: Number(execFileSync('id', ['-g', 'postgres']).toString())
    }
  } catch {
    throw new Error('running as root needs the postgres system user: install postgresql (apt-get install postgresql)')
  }
}

async function waitFor (check, what, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  let lastError
  while (Date.now() < deadline) {
    try {
      const v = await check()
      if (v !== false) return v
    } catch (err) { lastError = err }
    await sleep(50)
  }
  throw new Error(`${what} not ready after ${timeoutMs} ms${lastError ? `: ${lastError.message}` : ''}`)
}

function collect (child) {
  let out = ''
  child.stdout?.on('data', (d) => { out += d })
  child.stderr?.on('data', (d) => { out += d })
  return () => out
}

function exited (child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', resolve))
}

// The state, parent and CPU time (user + system, in clock ticks of 1/100 s, all its threads) of a
// process from /proc/<pid>/stat ("pid (comm) state ppid … utime stime …"); null once gone.
function stat (pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { state: fields[0], ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) }
  } catch {
    return null
  }
}
const gone = (pid) => [undefined, 'Z', 'X'].includes(stat(pid)?.state) // a zombie is gone too: it only waits to be reaped

/** The pids of the processes whose parent is `pid` (Linux /proc). */
export function childrenOf (pid) {
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d) && stat(d)?.ppid === pid).map(Number)
}

/**
 * CPU time (user + system, seconds) of process `pid`, all its threads, and with `children` that of its
 * live child processes too (PostgreSQL's backends are the postmaster's); Linux /proc.
 */
export function cpuSeconds (pid, { children = false } = {}) {
  return [pid, ...(children ? childrenOf(pid) : [])].reduce((a, p) => a + (stat(p)?.ticks ?? 0), 0) / 100
}

// Sends `signal` to `pid`, then to each of its children (Linux /proc); returns the children's pids.
function signalTree (pid, signal) {
  const children = childrenOf(pid)
  for (const p of [pid, ...children]) {
    try { process.kill(p, signal) } catch {}
  }
  return children
}

/** Creates an empty database with a unique name on the server of `adminUrl` and returns its URL. */
export async function createDatabase (adminUrl, prefix = 'test') {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`
  const c = new pg.Client({ connectionString: adminUrl })
  await c.connect()
  try { await c.query(`CREATE DATABASE ${name}`) } finally { await c.end() }
  return adminUrl.replace(/\/[^/]*$/, `/${name}`)
}

/**
 * Samples the peak resident memory (VmHWM, Linux) of process `pid` every 100 ms until stop(), which
 * returns it in MB: the high-water mark, so a peak between two samples is not missed.
 */
export function watchMemory (pid) {
  let peakKb = 0
  const sample = () => {
    try {
      peakKb = Math.max(peakKb, Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0))
    } catch {} // gone already
  }
  const timer = setInterval(sample, 100)
  return {
    stop () {
      clearInterval(timer)
      sample()
      return Math.round(peakKb / 1024)
    }
  }
}

/**
 * The processes (pids) whose environment holds `name=value` (Linux /proc): give a command a unique
 * marker variable, and whatever it started and left behind — servers, services — is found by it.
 */
export function processesWithEnv (name, value) {
  const want = `${name}=${value}`
  const found = []
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(want)) found.push(Number(pid))
    } catch {} // gone, or not ours to read
  }
  return found
}

/**
 * Starts a PostgreSQL server in a temporary directory on a free loopback port.
 * `settings` are extra `-c name=value` server settings (a benchmark passes bulk-load tuning here).
 * Returns { url, port, dir, createDatabase(), stop({ keepData }), start(), pause(), resume(), kill(),
 * holdCommits(on) }: pause() stops every process of the server (SIGSTOP: connections stay open, nothing
 * answers, as a frozen host or a partition), resume() lets it go on; kill() is kill -9 of every process
 * (a crash: start() then recovers from the WAL).
 */
export async function startPostgres ({ settings = {} } = {}) {
  const initdb = findBinary('initdb', 'postgresql (apt-get install postgresql)')
  const postgres = findBinary('postgres', 'postgresql (apt-get install postgresql)')
  const user = serverUser()
  const dir = await mkdtemp(join(tmpdir(), 'suite-pg-'))
  if (user.uid !== undefined) await chown(dir, user.uid, user.gid)
  // Every TCP client authenticates with a password (scram-sha-256), as in production: trust auth
  // would hide a password that never reaches the server.
  const password = randomBytes(12).toString('hex')
  const pwfile = `${dir}.pw`
  await writeFile(pwfile, password, { mode: 0o644 })
  try {
    execFileSync(initdb, ['-D', dir, '-U', 'postgres', '--auth-local=trust', '--auth-host=scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--no-sync', '--no-instructions'], { ...user, stdio: 'pipe' })
  } finally {
    await rm(pwfile, { force: true })
  }
  const port = await freePort()
  const args = ['-D', dir, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300']
  for (const [k, v] of Object.entries(settings)) args.push('-c', `${k}=${v}`)
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`
  let child, output
  const start = async () => {
    child = spawn(postgres, args, { ...user, stdio: ['ignore', 'pipe', 'pipe'] })
    output = collect(child)
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`postgres exited: ${output()}`)
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      await c.end()
    }, 'postgres')
  }
  await start()
  return {
    url,
    port,
    dir,
    /** The postmaster's pid (its backends are its children). */
    get pid () { return child.pid },
    output: () => output(),
    createDatabase: (prefix) => createDatabase(url, prefix),
    /** Starts the server again on the same port and data after stop({ keepData: true }) or kill(). */
    start,
    // Each backend is its own process group (PostgreSQL calls setsid), so every process is signalled.
    // The postmaster first: stopped, it forks no new backend.
    pause: () => signalTree(child.pid, 'SIGSTOP'),
    resume: () => signalTree(child.pid, 'SIGCONT'),
    async kill () {
      signalTree(child.pid, 'SIGSTOP') // none of them may react to the others' end: all die at once
      const backends = signalTree(child.pid, 'SIGKILL')
      await exited(child)
      await waitFor(() => backends.every(gone), 'postgres backends to exit', 10_000)
    },
    /**
     * holdCommits(true): every COMMIT, once durable, waits for a synchronous standby that never
     * answers — the window between a commit and its answer (microseconds otherwise) as wide as a test
     * needs, e.g. to kill the server inside it. holdCommits(false) lets them go. Kept across kill() and
     * start() (ALTER SYSTEM), like the commits it holds.
     */
    async holdCommits (on) {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      try {
        await c.query(on ? "ALTER SYSTEM SET synchronous_standby_names = 'nobody'" : 'ALTER SYSTEM RESET synchronous_standby_names')
        await c.query('SELECT pg_reload_conf()')
      } finally {
        await c.end()
      }
    },
    async stop ({ keepData = false } = {}) {
      if (child.exitCode === null && child.signalCode === null) {
        signalTree(child.pid, 'SIGCONT') // a paused server cannot shut down
        child.kill('SIGINT') // fast shutdown: clients are disconnected at once
        await exited(child)
      }
      if (!keepData) await rm(dir, { recursive: true, force: true })
    }
  }
}

/**
 * Starts redis-server on a free loopback port with persistence off (`password`: AUTH required).
 * Returns { url, port, kill(), start(), pause(), resume(), stop() }: kill() is SIGKILL (a crash), start()
 * brings it back on the same port; pause() stops the process without closing connections (a stalled
 * server or a network partition: requests hang), resume() lets it go on with its data.
 */
export async function startRedis ({ password } = {}) {
  const bin = findBinary('redis-server', 'redis-server (apt-get install redis-server)')
  const port = await freePort()
  let child
  const start = async () => {
    // The password goes in on stdin ("-": read the configuration there), not on a command line.
    child = spawn(bin, ['-', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'], { stdio: ['pipe', 'pipe', 'pipe'] })
    child.stdin.end(password === undefined ? '' : `requirepass "${password}"\n`)
    const output = collect(child)
    await waitFor(() => {
      if (child.exitCode !== null) throw new Error(`redis-server exited: ${output()}`)
      return output().includes('Ready to accept connections')
    }, 'redis-server')
  }
  await start()
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid () { return child.pid },
    start,
    async kill () {
      child.kill('SIGKILL')
      await exited(child)
    },
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    async stop () {
      child.kill('SIGTERM')
      await exited(child)
    }
  }
}

/**
 * The database settings of a service for `url`, split as the charts pass them: the password in
 * DATABASE_PASSWORD (from a Secret), the URL without it.
 */
export function databaseEnv (url) {
  const u = new URL(url)
  const password = decodeURIComponent(u.password)
  u.password = ''
  return { DATABASE_URL: u.href, ...(password && { DATABASE_PASSWORD: password }) }
}

let cgroups = 0
/**
 * A memory cgroup limited to `limitMb`, as a pod's container gets: the kernel holds the process to it,
 * and Node sizes its V8 heap from it (a 384 MB limit gives a 256 MB old generation and a 1 MB
 * semi-space, against 4 GB and 32 MB on this 24 GB machine), so memory is measured as in the pod.
 * cgroup v1's memory controller or cgroup v2, as root; null where neither can be made.
 * Returns { dir, remove() }.
 */
function memoryCgroup (limitMb) {
  const bytes = String(limitMb * 2 ** 20)
  const name = `suite-test-${process.pid}-${++cgroups}`
  // [where, the limit's file, a file only that hierarchy has]: on a cgroup v1 machine /sys/fs/cgroup is
  // a tmpfs, where mkdir and a write would make a plain folder and file, and limit nothing.
  for (const [parent, file, mark] of [['/sys/fs/cgroup/memory', 'memory.limit_in_bytes', 'memory.limit_in_bytes'], ['/sys/fs/cgroup', 'memory.max', 'cgroup.subtree_control']]) {
    if (!existsSync(join(parent, mark))) continue
    const dir = join(parent, name)
    try {
      mkdirSync(dir)
      writeFileSync(join(dir, file), bytes)
      return { dir, remove: () => { try { rmdirSync(dir) } catch {} } } // emptied by the exit just before
    } catch {
      try { rmdirSync(dir) } catch {}
    }
  }
  return null
}

/**
 * Runs `node ...nodeArgs <entry> ...args` as a child process with `env` added, and waits until
 * GET <url>/readyz is 200. A password in env.DATABASE_URL is passed apart, in DATABASE_PASSWORD (see
 * databaseEnv). `memoryLimitMb`: the process runs in a memory cgroup of that limit, as in a pod (see
 * memoryCgroup), or, where none can be made, without one (`memoryLimited` says which).
 * Returns { url, port, child, memoryLimited, logs(), stop(signal) } where stop resolves with { code, signal }.
 */
export async function startService ({ entry, args = [], nodeArgs = [], env = {}, port, memoryLimitMb, readyPath = '/readyz', timeoutMs = 30_000 }) {
  port ??= await freePort()
  const cgroup = memoryLimitMb ? memoryCgroup(memoryLimitMb) : null
  // In the cgroup from its first instruction: Node reads the limit once, when it sizes the heap. The
  // shell's pid is node's (exec).
  const command = [process.execPath, ...nodeArgs, entry, ...args]
  const child = spawn(cgroup ? 'sh' : command[0], cgroup ? ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup.dir, ...command] : command.slice(1), {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      // A shared test machine stalls at times: no load shedding or connect timeout unless a test asks.
      PG_CONNECT_TIMEOUT_MS: '10000',
      MAX_EVENT_LOOP_DELAY_MS: '0',
      MAX_EVENT_LOOP_UTILIZATION: '0',
      ...env,
      ...(env.DATABASE_URL && !env.DATABASE_PASSWORD && databaseEnv(env.DATABASE_URL))
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const logs = collect(child)
  const url = `http://127.0.0.1:${port}`
  try {
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}: ${logs()}`)
      const res = await fetch(url + readyPath)
      return res.status === 200
    }, `service ${entry}`, timeoutMs)
  } catch (err) {
    // Never ready (a machine too busy, say): the test fails, and the process must not outlive it.
    child.kill('SIGKILL')
    await exited(child)
    cgroup?.remove()
    throw err
  }
  return {
    url,
    port,
    child,
    memoryLimited: Boolean(cgroup),
    logs,
    async stop (signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      await exited(child)
      cgroup?.remove()
      return { code: child.exitCode, signal: child.signalCode }
    }
  }
}

/**
 * An HTTP request with an optional JSON body (an object, or text sent as is); the answer parsed when
 * it is JSON. Returns { status, headers, body }.
 */
export async function send (base, method, path, json, headers = {}) {
  const res = await fetch(base + path, {
    method,
    headers: { ...(json === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: json === undefined || typeof json === 'string' ? json : JSON.stringify(json)
  })
  const text = await res.text()
  let body = text
  try { body = JSON.parse(text) } catch {}
  return { status: res.status, headers: res.headers, body }
}

/** GET and parse; returns { status, headers, body }. */
export const get = (base, path, headers) => send(base, 'GET', path, undefined, headers)

/** The value of one series of a Prometheus text exposition (0 when absent). */
export function metric (text, name, labels = {}) {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
  let sum = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue
    if (want.every((l) => line.includes(l))) sum += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return sum
}

/**
 * Load like a client behind a load balancer: `clients` keep-alive connections, each sending the
 * next request as soon as the previous answer is in, until `until()` is true. A client stops
 * when an answer says `Connection: close` (the server is draining), as HTTP clients do, and never
 * opens a second connection. Resolves to { statuses: {code: n}, errors: {code: n}, sent }.
 */
export async function keepAliveLoad ({ url, paths, clients = 16, until }) {
  const result = { statuses: {}, errors: {}, sent: 0 }
  const one = (agent, path) => new Promise((resolve) => {
    const req = request(url + path, { agent }, (res) => {
      res.resume()
      res.on('end', () => {
        result.statuses[res.statusCode] = (result.statuses[res.statusCode] ?? 0) + 1
        resolve(res.headers.connection !== 'close')
      })
      res.on('error', (err) => { count(err); resolve(false) })
    })
    const count = (err) => { result.errors[err.code ?? err.message] = (result.errors[err.code ?? err.message] ?? 0) + 1 }
    req.on('error', (err) => { count(err); resolve(false) })
    result.sent++
    req.end()
  })
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    for (let i = c; !until(); i++) {
      if (!await one(agent, paths[i % paths.length])) break
    }
    agent.destroy()
  }))
  return result
}

const ajv = withUnicodeFormat(addFormats(new Ajv({ allErrors: true, strict: false })))
ajv.addSchema(errorSchema)

/**
 * Asserts that an answer `{ status, body }` matches the response schema its route declares for that
 * status (what the OpenAPI document promises); returns the answer.
 */
export function conforms (routeSchema, res) {
  const schema = routeSchema.response[res.status]
  assert.ok(schema, `the route declares no response ${res.status}`)
  const validate = ajv.compile(schema)
  assert.ok(validate(res.body === '' ? null : res.body), `${res.status} ${JSON.stringify(validate.errors)}`)
  return res
}
