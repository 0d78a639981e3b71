// `npm start`: the suite on one machine with nothing installed but Node.
// Without DATABASE_URL, PostgreSQL is PGlite (PostgreSQL compiled to WebAssembly) in this process,
// served on a loopback port by its wire-protocol server, so each service runs its ordinary `pg`
// code. Without REDIS_URL each worker caches in memory. A small generated catalogue is loaded
// when the database has none. Set DATABASE_URL / REDIS_URL to use real servers instead.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { pgTarget, pgliteTarget } from '@suite/kit/etl'
import * as product from '../services/product/etl/index.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const PORT = Number(process.env.PORT ?? 3000) // product; then profile +1, menu +2, flows +3
const SAMPLE_PRODUCTS = Number(process.env.SAMPLE_PRODUCTS ?? 2000)
const log = (m) => console.log(`suite: ${m}`)

const services = [
  {
    name: 'product',
    port: PORT,
    cli: `${root}services/product/src/cli.js`,
    migrations: `${root}services/product/migrations`,
    isEmpty: async (db) => (await db.query('SELECT NOT EXISTS (SELECT 1 FROM products) AS empty')).rows[0].empty,
    async seed (target) {
      const dir = `${root}.data/sample-${SAMPLE_PRODUCTS}`
      if (!existsSync(`${dir}/manifest.json`)) await product.generate({ out: dir, products: SAMPLE_PRODUCTS, seed: 1 })
      await product.load({ db: target, dir, rejectsFile: `${dir}/rejects.csv`, progress: false })
    },
    urls: (base) => [`${base}/products`, `${base}/products/1`, `${base}/products/1/styles`, `${base}/products/1/related`]
  },
  {
    name: 'flows',
    port: PORT + 3,
    cli: `${root}services/flows/src/cli.js`,
    migrations: `${root}services/flows/migrations`,
    urls: (base) => [`${base}/flows?hour=1`]
  }
]

let databaseUrl = process.env.DATABASE_URL
let embedded
if (!databaseUrl) {
  const { PGlite } = await import('@electric-sql/pglite')
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket')
  const db = await PGlite.create()
  const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 64 })
  await server.start()
  databaseUrl = `postgres://postgres@127.0.0.1:${server.server.address().port}/postgres`
  embedded = { db, server }
  log(`embedded PostgreSQL (PGlite, in memory) at ${databaseUrl}`)
}

const client = new pg.Client({ connectionString: databaseUrl })
await client.connect()
for (const s of services) {
  await migrate(client, s.migrations)
  if (s.seed && await s.isEmpty(client)) {
    log(`${s.name}: loading a generated sample`)
    // PGlite's wire protocol has no COPY FROM STDIN; the loader copies into it in process instead.
    await s.seed(embedded ? pgliteTarget(embedded.db) : pgTarget(client))
  }
}
await client.end()

const env = {
  ...process.env,
  DATABASE_URL: databaseUrl,
  // PGlite is one session behind a multiplexer: prepared statement names would collide.
  ...(embedded && { PG_PREPARED_STATEMENTS: 'false', WORKERS: process.env.WORKERS ?? '2' })
}
const children = services.map((s) => spawn(process.execPath, [s.cli, 'serve'], {
  env: { ...env, PORT: String(s.port) },
  stdio: 'inherit',
  detached: true // Ctrl-C reaches this process only; it stops the services once, in order
}))

await Promise.all(services.map((s) => waitReady(`http://127.0.0.1:${s.port}`)))
for (const s of services) {
  const base = `http://localhost:${s.port}`
  log(`${s.name} ready: ${s.urls(base).join('  ')}`)
  log(`${s.name} docs: ${base}/docs  metrics: ${base}/metrics`)
}
log(`cache: ${process.env.REDIS_URL ? process.env.REDIS_URL : 'in-process (set REDIS_URL for Redis)'}; Ctrl-C stops`)

let stopping = false
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, async () => {
    if (stopping) return
    stopping = true
    children.forEach((c) => c.kill('SIGTERM'))
    await Promise.all(children.map((c) => c.exitCode !== null ? null : new Promise((resolve) => c.once('exit', resolve))))
    if (embedded) { await embedded.server.stop(); await embedded.db.close() }
    process.exit(0)
  })
}
for (const c of children) {
  c.on('exit', (code) => {
    if (!stopping) { log(`a service exited with ${code}; stopping`); process.kill(process.pid, 'SIGTERM') }
  })
}

async function waitReady (base) {
  for (let i = 0; i < 300; i++) {
    try { if ((await fetch(`${base}/readyz`)).ok) return } catch {}
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`${base} did not become ready`)
}
