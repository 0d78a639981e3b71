// One instance of a service: its own pg pool, cache client, metrics registry and Fastify app on the
// shared port. It runs in a worker thread (worker-thread.js), or on the main thread itself when the
// process serves with one worker (workers.js): a thread of its own would then only add a second V8 heap.
import { setTimeout as sleep } from 'node:timers/promises'
import { createLogger } from '../telemetry/logger.js'
import { createMetrics, poolMetrics, cacheMetrics } from '../telemetry/metrics.js'
import { startTracing, logIds } from '../telemetry/tracing.js'
import { createPool, warmPool } from '../data/pg.js'
import { createCache } from '../cache/index.js'
import { buildApp } from '../http/app.js'
import { trackConnections } from '../http/drain.js'
import { databaseStateOf } from './database-probe.js'

/**
 * @param {object} deps
 * @param {object} deps.service  the service definition
 * @param {number} deps.id  the worker's number (metrics label, log field)
 * @param {object} deps.config  the main thread's configuration, validated once there (cli/index.js)
 * @param {Int32Array} deps.database  PostgreSQL as the main thread's probe last saw it (database-probe.js)
 * @param {(op: string, args?: object) => Promise<unknown>} deps.call  asks the main thread (workers.js)
 * @returns {Promise<{ answers: object, listen: () => Promise<string>, shutdown: () => Promise<0|1>,
 *   close: () => Promise<void> }>}  answers: what the main thread asks of every instance; shutdown: the
 *   graceful one, resolving to 1 if it had to cut requests; close: at once (an instance that failed to start)
 */
export async function createInstance ({ service, id, reusePort, pretty, config, database, call }) {
  const tracing = await startTracing(config, service, id)
  const log = createLogger({
    level: config.LOG_LEVEL,
    name: service.name,
    pretty,
    base: { worker: id },
    mixin: tracing ? logIds : undefined
  })
  const metrics = createMetrics({ worker: id })
  const pool = createPool(config, log, `${service.name}-${id}`)
  poolMetrics(metrics, pool, config.PG_POOL_MAX)
  const broadcast = (key, version) => call('invalidate', { key, version })
  const cache = createCache({ config, metrics, log, broadcast })
  cacheMetrics(metrics, cache)
  const app = await buildApp({
    service,
    config,
    log,
    metrics,
    pool,
    cache,
    tracing,
    // A scrape landing here is answered by the main thread with the sum of every instance.
    collectMetrics: (format) => call('scrape', { format }),
    databaseState: databaseStateOf(database)
  })
  const connections = trackConnections(app.server)
  const close = async () => {
    await app.close() // closes pool and cache
    metrics.stop()
    await tracing?.shutdown() // the spans of the last requests leave before the process does
  }

  return {
    answers: {
      metrics: () => metrics.registry.getMetricsAsJSON(),
      invalidate: ({ key, version }) => cache.applyInvalidation(key, version)
    },
    async listen () {
      // A worker takes requests once PostgreSQL and Redis answer it, and its near cache listens for the
      // other writers' syncs and its own writes' acknowledgements (near-cache.js). A new pod is refused
      // by both for seconds, until their nodes have its address in their NetworkPolicy rules: a worker
      // serving meanwhile would answer 503s, reads from PostgreSQL alone, and writes that wait the
      // sync's bound. Still away after START_WAIT_MS (an outage): it listens without them.
      const waited = AbortSignal.timeout(config.START_WAIT_MS)
      await Promise.all([warmPool(pool, log, waited), cache.connected(config.START_WAIT_MS)])
      const address = await app.listen({ host: config.HOST, port: config.PORT, reusePort })
      metrics.serving = true
      return address
    },
    async shutdown () {
      app.draining = true
      await sleep(config.SHUTDOWN_DELAY_MS)
      // Lets in-flight requests finish, then stops accepting.
      const cut = await connections.drain(config.SHUTDOWN_GRACE_MS, config.SHUTDOWN_IDLE_MS)
      if (cut) log.warn(`${cut} connection(s) still busy after SHUTDOWN_GRACE_MS, closed`)
      await close()
      return cut ? 1 : 0
    },
    close
  }
}
