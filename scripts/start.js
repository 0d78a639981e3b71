// `npm start`: the suite on one machine with nothing installed but Node.
// Without DATABASE_URL, PostgreSQL is PGlite (PostgreSQL compiled to WebAssembly) in this process,
// served on a loopback port by start/pglite-server.js (with a password made for this start), so each
// service runs its ordinary `pg` code. Without REDIS_URL each worker caches in memory. Small generated
// data sets (products, restaurants, menus) are loaded into empty tables. Set DATABASE_URL / REDIS_URL
// to use real servers instead.
// The services run in this process, each on its own worker threads and port, on 127.0.0.1 (HOST to
// change it): Ctrl-C, SIGTERM or SIGHUP to it or to npm, or its parent going away, stops them all.
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { migrate, redact, connectionOptions } from '@suite/kit'
import { hostService } from '@suite/kit/cli'
import { pgTarget, pgliteTarget } from '@suite/kit/etl'
import { servePglite } from './start/pglite-server.js'
import { emptyDataDir } from './start/pglite-datadir.js'
import { SERVICES, PORT_OFFSETS } from '../services/list.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const PORT = Number(process.env.PORT ?? SERVICES[0].port) // the first service's; the others keep their distance from it
const HOST = process.env.HOST ?? '127.0.0.1' // a laptop's quick start is not for the network
const CHECK_HOST = ['0.0.0.0', '::'].includes(HOST) ? '127.0.0.1' : HOST.includes(':') ? `[${HOST}]` : HOST
const SAMPLE_SIZE = Number(process.env.SAMPLE_SIZE ?? 2000) // products, restaurants and menus generated
const READY_WAIT_MS = 60_000 // from a service's workers listening to its /readyz answering 200
const log = (m) => console.log(`suite: ${redact(m)}`)

// Each service of services/list.js on its port, moved by PORT as a whole (the first one's port).
const services = SERVICES.map((s, i) => ({ ...s, port: PORT + PORT_OFFSETS[i], dir: `${root}services/${s.name}` }))

// Every port free before anything starts: on a port in use (a suite already running?) another
// process would answer our readiness checks, and "ready" would be a lie.
for (const s of services) {
  const server = createServer()
  try {
    await new Promise((resolve, reject) => server.once('error', reject)
      .listen({ host: HOST, port: s.port, exclusive: true }, resolve))
  } catch (err) {
    const why = err.code === 'EADDRINUSE'
      ? 'the port is in use (is the suite already running? PORT=… moves them all)'
      : err.message
    log(`cannot start ${s.name} on ${HOST}:${s.port}: ${why}`)
    process.exit(1)
  }
  await new Promise((resolve) => server.close(resolve))
}

// The embedded cluster's folders: one per launcher, named by its pid.
const runsDir = `${root}.data/`
function removeLeftRuns () {
  const alive = (pid) => { try { return process.kill(pid, 0) } catch (err) { return err.code === 'EPERM' } }
  for (const name of existsSync(runsDir) ? readdirSync(runsDir) : []) {
    const pid = Number(/^pglite-run-(\d+)$/.exec(name)?.[1])
    if (pid && !alive(pid)) rmSync(`${runsDir}${name}`, { recursive: true, force: true })
  }
}

let databaseUrl = process.env.DATABASE_URL
let databasePassword = process.env.DATABASE_PASSWORD
let embedded
if (!databaseUrl) {
  // Loaded only when used: PGlite's WebAssembly PostgreSQL is not wanted beside real servers.
  const { PGlite } = await import('@electric-sql/pglite')
  // PostgreSQL's 128 MB of shared buffers would live in PGlite's WebAssembly memory, which never
  // shrinks; the samples fit in far less. The cluster comes made (start/pglite-datadir.js): initdb here would
  // leave its memory behind for good. Its files live in a folder of this run: in memory, PGlite would
  // keep them in ArrayBuffers, RSS growing with the data. Removed at stop, or by the next start if this
  // one was killed. Where the memory goes: docs/npm-start.md#memory.
  removeLeftRuns()
  const dataDir = `${runsDir}pglite-run-${process.pid}`
  const startParams = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB']
  const create = (fresh) => {
    rmSync(dataDir, { recursive: true, force: true })
    return PGlite.create({ dataDir, startParams, loadDataDir: emptyDataDir({ fresh }) })
  }
  const db = await create(false).catch(() => create(true)) // a kept tarball that does not load is made again
  const server = await servePglite(db) // loopback only, with a password made for this start
  databaseUrl = `postgres://postgres@127.0.0.1:${server.port}/postgres`
  databasePassword = server.password
  embedded = { db, server, dataDir }
  log(`embedded PostgreSQL (PGlite, files in .data/pglite-run-${process.pid}) at ${databaseUrl} ` +
    '(password generated for this run)')
}

const client = new pg.Client(connectionOptions(databaseUrl, databasePassword))
await client.connect()
for (const s of services) {
  await migrate(client, { name: s.name, migrations: `${s.dir}/migrations` })
  if (!s.data) continue
  const { rows: [{ empty }] } = await client.query(`SELECT NOT EXISTS (SELECT 1 FROM ${s.data.table}) AS empty`)
  if (!empty) continue
  log(`${s.name}: loading a generated sample (${SAMPLE_SIZE} ${s.data.option})`)
  // By path: the list names the services, each with its own data module.
  const etl = await import(`${s.dir}/etl/index.js`)
  const dir = `${root}.data/sample-${s.name}-${SAMPLE_SIZE}`
  if (!existsSync(`${dir}/manifest.json`)) await etl.generate({ out: dir, [s.data.option]: SAMPLE_SIZE, seed: 1 })
  // PGlite's wire protocol has no COPY FROM STDIN; the loader copies into it in process instead.
  await etl.load({
    db: embedded ? pgliteTarget(embedded.db) : pgTarget(client),
    dir,
    rejectsFile: `${dir}/rejects.csv`,
    progress: false
  })
}
await client.end()

const env = {
  ...process.env,
  HOST,
  DATABASE_URL: databaseUrl,
  ...(databasePassword !== undefined && { DATABASE_PASSWORD: databasePassword }),
  // PGlite is one session behind a multiplexer: prepared statement names would collide, and its
  // connection limit is shared by 4 services × WORKERS pools. It answers one exchange at a time, for
  // all of them: a query may wait its turn longer than the kit's timeouts, made for a real server.
  ...(embedded && {
    PG_PREPARED_STATEMENTS: 'false',
    WORKERS: process.env.WORKERS ?? '2',
    PG_POOL_MAX: process.env.PG_POOL_MAX ?? '4',
    PG_CONNECT_TIMEOUT_MS: process.env.PG_CONNECT_TIMEOUT_MS ?? '10000',
    PG_STATEMENT_TIMEOUT_MS: process.env.PG_STATEMENT_TIMEOUT_MS ?? '10000',
    PG_QUERY_TIMEOUT_MS: process.env.PG_QUERY_TIMEOUT_MS ?? '15000'
  })
}
// Every service runs in this process, each on its own worker threads: one Node process instead of
// five saves a main thread and Node itself per service (docs/decisions/0012-pglite-for-npm-start.md).
// The workers' young generation stays small too (package.json's --max-semi-space-size=1 is V8's, so
// every thread's): a laptop's quick start needs memory more than the last per cent of throughput.
const serviceEnv = (s) => ({ ...env, PORT: String(s.port) })
let stopping = false
const running = [] // each service's { close } once its workers listen
const started = services.map(async (s) => {
  const { default: service } = await import(`${s.dir}/src/service.js`)
  const exit = (code) => { log(`${s.name}: its workers keep crashing; stopping`); stop(code) }
  try {
    running.push(await hostService(service, serviceEnv(s), { exit }))
  } catch (err) {
    if (!stopping) log(`${s.name} cannot start: ${err.message}; stopping`)
    await stop(1)
  }
})

// One way out, whatever the cause (Ctrl-C, SIGTERM, the terminal closing, npm going away, a service
// that cannot start): stop every service gracefully, then the embedded database; exit 1 when a
// service failed. (A SIGKILL takes the services with it: they are this process.)
async function stop (code) {
  if (stopping) return
  stopping = true
  await Promise.all(running.map((r) => r.close()))
  if (embedded) {
    await embedded.server.close()
    await embedded.db.close()
    rmSync(embedded.dataDir, { recursive: true, force: true })
  }
  process.exit(code)
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => stop(0))
// npm does not always pass a signal on (SIGTERM to npm leaves its script running): when the parent
// goes, this process is re-parented, and that is the signal.
const parent = process.ppid
setInterval(() => {
  if (process.ppid !== parent) { log('the parent process is gone; stopping'); stop(0) }
}, 500).unref()

await Promise.all(started)
await Promise.all(services.map((s) => waitReady(s)))
for (const s of services) {
  const base = `http://localhost:${s.port}`
  log(`${s.name} ready: ${s.samples.map((u) => base + u).join('  ')}`)
  log(`${s.name} docs: ${base}/docs  metrics: ${base}/metrics`)
}
log(`listening on ${HOST} (HOST to change); ` +
  `cache: ${process.env.REDIS_URL ? process.env.REDIS_URL : 'in-process (set REDIS_URL for Redis)'}; Ctrl-C stops`)

// Ready: its workers listen on its port (hostService resolved), and its /readyz answers 200 within
// READY_WAIT_MS; each check may take 2 s (a port whose owner accepts and never answers must not hang us).
async function waitReady (s) {
  if (stopping) return new Promise(() => {}) // stop() takes it from here
  const until = Date.now() + READY_WAIT_MS
  let last = 'no answer'
  while (!stopping && Date.now() < until) {
    try {
      const answer = await fetch(`http://${CHECK_HOST}:${s.port}/readyz`, { signal: AbortSignal.timeout(2000) })
      if (answer.ok) return
      last = `${answer.status} ${(await answer.text()).slice(0, 200)}`
    } catch (err) {
      last = err.cause?.code ?? err.name
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  if (!stopping) {
    log(`${s.name} did not become ready in ${READY_WAIT_MS / 1000} s (its last /readyz: ${last}); stopping`)
    await stop(1)
  }
  return new Promise(() => {})
}
