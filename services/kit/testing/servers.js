// Throwaway PostgreSQL and Redis servers for tests and benchmarks, started from the machine's binaries
// on free loopback ports, with password auth as in production. Nothing here mocks anything.
import { spawn, execFileSync } from 'node:child_process'
import { mkdtemp, rm, chown, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { freePort } from './ports.js'
import { collect, exited, gone, signalTree } from './processes.js'
import { waitFor } from './wait.js'
import { findBinary } from './tools.js'

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

/** Creates an empty database with a unique name on the server of `adminUrl` and returns its URL. */
export async function createDatabase (adminUrl, prefix = 'test') {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`
  const c = new pg.Client({ connectionString: adminUrl })
  await c.connect()
  try { await c.query(`CREATE DATABASE ${name}`) } finally { await c.end() }
  return adminUrl.replace(/\/[^/]*$/, `/${name}`)
}

/**
 * Starts a PostgreSQL server in a temporary directory on a free loopback port.
 * `settings` are extra `-c name=value` server settings (a benchmark passes bulk-load tuning here).
 * Returns { url, port, dir, createDatabase(), stop({ keepData }), start(), pause(), resume(), kill(),
 * holdCommits(on), demote(), promote() }: pause() stops every process of the server (SIGSTOP:
 * connections stay open, nothing answers, as a frozen host or a partition), resume() lets it go on;
 * kill() is kill -9 of every process (a crash: start() then recovers from the WAL).
 */
export async function startPostgres ({ settings = {} } = {}) {
  const initdb = findBinary('initdb')
  const postgres = findBinary('postgres')
  const user = serverUser()
  const dir = await mkdtemp(join(tmpdir(), 'suite-pg-'))
  if (user.uid !== undefined) await chown(dir, user.uid, user.gid)
  // Every TCP client authenticates with a password (scram-sha-256), as in production: trust auth
  // would hide a password that never reaches the server.
  const password = randomBytes(12).toString('hex')
  const pwfile = `${dir}.pw`
  await writeFile(pwfile, password, { mode: 0o644 })
  try {
    execFileSync(initdb, [
      '-D', dir, '-U', 'postgres', '--auth-local=trust', '--auth-host=scram-sha-256', `--pwfile=${pwfile}`,
      '-E', 'UTF8', '--no-sync', '--no-instructions'
    ], { ...user, stdio: 'pipe' })
  } finally {
    await rm(pwfile, { force: true })
  }
  const port = await freePort()
  const args = [
    '-D', dir, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'
  ]
  for (const [k, v] of Object.entries(settings)) args.push('-c', `${k}=${v}`)
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`
  let child, output
  const start = async () => {
    child = spawn(postgres, args, { ...user, stdio: ['ignore', 'pipe', 'pipe'] })
    output = collect(child)
    await waitFor('postgres', async () => {
      if (child.exitCode !== null) throw new Error(`postgres exited: ${output()}`)
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      await c.end()
      return true
    })
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
      await waitFor('postgres backends to exit', () => backends.every(gone), { timeoutMs: 10_000 })
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
        await c.query(on
          ? "ALTER SYSTEM SET synchronous_standby_names = 'nobody'"
          : 'ALTER SYSTEM RESET synchronous_standby_names')
        await c.query('SELECT pg_reload_conf()')
      } finally {
        await c.end()
      }
    },
    /**
     * Restarts the server as a standby of its own data (standby.signal), as a primary is after a
     * switchover: it answers, read-only, until promote().
     */
    async demote () {
      await this.stop({ keepData: true })
      const signal = join(dir, 'standby.signal')
      await writeFile(signal, '')
      if (user.uid !== undefined) await chown(signal, user.uid, user.gid)
      await start()
    },
    async promote () {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      try { await c.query('SELECT pg_promote()') } finally { await c.end() }
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
 * A hot standby of `primary` (a startPostgres server), streaming from it as `name`: the name the
 * primary's synchronous_standby_names gives it (`ANY 1 (s1, s2)`: a commit is acknowledged once one
 * of them has it). Made from a base backup, on a free loopback port. Returns { name, port, pid, stop() }.
 */
export async function startStandby (primary, name) {
  const postgres = findBinary('postgres')
  const user = serverUser()
  const dir = await mkdtemp(join(tmpdir(), `suite-pg-${name}-`))
  if (user.uid !== undefined) await chown(dir, user.uid, user.gid)
  const { password, port: primaryPort } = new URL(primary.url)
  const conninfo = `host=127.0.0.1 port=${primaryPort} user=postgres password=${password} application_name=${name}`
  execFileSync(findBinary('pg_basebackup'), ['-d', conninfo, '-D', dir, '-X', 'stream', '--no-sync'], {
    ...user, stdio: 'pipe'
  })
  await writeFile(join(dir, 'standby.signal'), '')
  if (user.uid !== undefined) await chown(join(dir, 'standby.signal'), user.uid, user.gid)
  const port = await freePort()
  const child = spawn(postgres, [
    '-D', dir, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300',
    '-c', 'hot_standby=on',
    '-c', `primary_conninfo=${conninfo}`, '-c', 'synchronous_standby_names='
  ], { ...user, stdio: ['ignore', 'pipe', 'pipe'] })
  const output = collect(child)
  const url = primary.url.replace(`:${primaryPort}/`, `:${port}/`)
  await waitFor(`standby ${name} streaming`, async () => {
    if (child.exitCode !== null) throw new Error(`standby ${name} exited: ${output()}`)
    const c = new pg.Client({ connectionString: primary.url })
    await c.connect()
    try {
      const { rows } = await c.query(
        "SELECT 1 FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'", [name])
      return rows.length === 1
    } finally {
      await c.end()
    }
  }, { timeoutMs: 60_000, everyMs: 200 })
  return {
    name,
    port,
    url,
    get pid () { return child.pid },
    async stop () {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGINT')
        await exited(child)
      }
      await rm(dir, { recursive: true, force: true })
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
  const bin = findBinary('redis-server')
  const port = await freePort()
  let child
  const start = async () => {
    // The password goes in on stdin ("-": read the configuration there), not on a command line.
    child = spawn(bin, [
      '-', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'
    ], { stdio: ['pipe', 'pipe', 'pipe'] })
    child.stdin.end(password === undefined ? '' : `requirepass "${password}"\n`)
    const output = collect(child)
    await waitFor('redis-server', () => {
      if (child.exitCode !== null) throw new Error(`redis-server exited: ${output()}`)
      return output().includes('Ready to accept connections')
    })
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
