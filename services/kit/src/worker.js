// One worker thread: its own pg pool, cache client, metrics registry and Fastify app on the shared port.
import { parentPort, workerData } from 'node:worker_threads'
import { setTimeout as sleep } from 'node:timers/promises'
import { createLogger } from './logger.js'
import { createMetrics, poolMetrics } from './metrics.js'
import { createPool, warmPool } from './pg.js'
import { createCache } from './cache.js'
import { buildApp } from './app.js'
import { trackConnections } from './drain.js'

// config: the main thread's, validated once there (cli.js), passed as it is.
const { serviceUrl, id, reusePort, pretty, config, database } = workerData
// Imported by URL, not statically: this thread runs whichever service started it, and its routes are
// code, which cannot be sent to a thread.
const service = (await import(serviceUrl)).default
const log = createLogger({ level: config.LOG_LEVEL, name: service.name, pretty, base: { worker: id } })
const metrics = createMetrics({ worker: id })
const pool = createPool(config, log, `${service.name}-${id}`)
poolMetrics(metrics, pool, config.PG_POOL_MAX)
// Requests to the main thread (see `calls` in workers.js), answered by { type: 'reply', id, result }.
const pending = new Map()
let callSeq = 0
function call (op, args = {}) {
  const callId = ++callSeq
  return new Promise((resolve) => {
    pending.set(callId, resolve)
    parentPort.postMessage({ type: 'call', id: callId, op, ...args })
  })
}

const cache = createCache({ config, metrics, log, broadcast: (key, version) => call('invalidate', { key, version }) })
// A scrape landing here is answered by the main thread with the sum of every worker.
// PostgreSQL as the main thread's probe last saw it (workers.js): 0 unknown, 1 ok, 2 down.
const databaseState = () => ['unknown', 'ok', 'down'][Atomics.load(database, 0)]
const app = await buildApp({ service, config, log, metrics, pool, cache, collectMetrics: () => call('scrape'), databaseState })
const connections = trackConnections(app.server)

// What the main thread asks of every worker.
const answers = {
  metrics: () => metrics.registry.getMetricsAsJSON(),
  invalidate: ({ key, version }) => cache.applyInvalidation(key, version)
}

parentPort.on('message', async (msg) => {
  if (msg.type === 'reply') {
    pending.get(msg.id)?.(msg.result)
    pending.delete(msg.id)
  } else if (msg.type === 'ask') {
    parentPort.postMessage({ type: 'answer', id: msg.id, result: await answers[msg.op](msg) })
  } else if (msg.type === 'shutdown') {
    app.draining = true
    await sleep(config.SHUTDOWN_DELAY_MS)
    const cut = await connections.drain(config.SHUTDOWN_GRACE_MS) // lets in-flight requests finish, then stops accepting
    if (cut) log.warn(`${cut} connection(s) still busy after SHUTDOWN_GRACE_MS, closed`)
    await app.close() // closes pool and cache
    metrics.stop()
    process.exit(cut ? 1 : 0) // ends this thread only; 1: requests were cut
  }
})

await warmPool(pool, log)
const address = await app.listen({ host: config.HOST, port: config.PORT, reusePort })
metrics.serving = true
parentPort.postMessage({ type: 'listening', address })
