// One instance of a service: its own pg pool, cache client, metrics registry and Fastify app on the
// shared port. It runs in a worker thread (worker.js), or on the main thread itself when the process
// serves with one worker (workers.js): a thread of its own would then only add a second V8 heap.
import { setTimeout as sleep } from 'node:timers/promises'
import { createLogger } from './logger.js'
import { createMetrics, poolMetrics, cacheMetrics } from './metrics.js'
import { createPool, warmPool } from './pg.js'
import { createCache } from './cache/index.js'
import { buildApp } from './app.js'
import { trackConnections } from './drain.js'
import { startTracing, logIds } from './tracing.js'

/**
 * @param {object} deps
 * @param {object} deps.service  the service definition
 * @param {number} deps.id  the worker's number (metrics label, log field)
 * @param {object} deps.config  the main thread's configuration, validated once there (cli.js)
 * @param {Int32Array} deps.database  PostgreSQL as the main thread's probe last saw it: 0 unknown, 1 ok, 2 down
 * @param {(op: string, args?: object) => Promise<unknown>} deps.call  asks the main thread (`calls` in workers.js)
 * @returns {Promise<{ answers: object, listen: () => Promise<string>, shutdown: () => Promise<0|1>, close: () => Promise<void> }>}
 *   answers: what the main thread asks of every instance; shutdown: the graceful one, resolving to 1
 *   if it had to cut requests; close: at once (an instance that failed to start)
 */
export async function createInstance ({ service, id, reusePort, pretty, config, database, call }) {
  const tracing = await startTracing(config, service, id)
  const log = createLogger({ level: config.LOG_LEVEL, name: service.name, pretty, base: { worker: id }, mixin: tracing ? logIds : undefined })
  const metrics = createMetrics({ worker: id })
  const pool = createPool(config, log, `${service.name}-${id}`)
  poolMetrics(metrics, pool, config.PG_POOL_MAX)
  const cache = createCache({ config, metrics, log, broadcast: (key, version) => call('invalidate', { key, version }) })
  cacheMetrics(metrics, cache)
  const databaseState = () => ['unknown', 'ok', 'down'][Atomics.load(database, 0)]
  // A scrape landing here is answered by the main thread with the sum of every instance.
  const app = await buildApp({ service, config, log, metrics, pool, cache, tracing, collectMetrics: (format) => call('scrape', { format }), databaseState })
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
      await warmPool(pool, log)
      const address = await app.listen({ host: config.HOST, port: config.PORT, reusePort })
      metrics.serving = true
      return address
    },
    async shutdown () {
      app.draining = true
      await sleep(config.SHUTDOWN_DELAY_MS)
      const cut = await connections.drain(config.SHUTDOWN_GRACE_MS) // lets in-flight requests finish, then stops accepting
      if (cut) log.warn(`${cut} connection(s) still busy after SHUTDOWN_GRACE_MS, closed`)
      await close()
      return cut ? 1 : 0
    },
    close
  }
}
