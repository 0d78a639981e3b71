// The kit's own routes: /healthz (liveness), /readyz (readiness) and /metrics. They are not traced
// (config.traced): probes and scrapes are not the service's traffic.
import fp from 'fastify-plugin'
import { FORMATS, formatFor } from '../telemetry/metrics.js'

const ops = { traced: false }
const ok = { type: 'object', properties: { status: { type: 'string' } } }
const readiness = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ready', 'not ready', 'shutting down'] },
    postgres: {
      type: 'string',
      enum: ['ok', 'down', 'unknown'],
      description: "this pod's probe connection, checked every second"
    },
    cache: {
      type: 'string',
      enum: ['ok', 'down', 'bypassed', 'memory'],
      description: 'Redis connected, down, bypassed by the circuit breaker; or the in-process cache'
    }
  }
}

/**
 * @param {object} options
 * @param {Function} options.collectMetrics  (format) resolves to the exposition of the whole process
 * @param {Function} options.databaseState  'ok' | 'down' | 'unknown': PostgreSQL as this pod's own
 *   probe last saw it (process/database-probe.js), read from memory so that /readyz never waits on it
 */
export const opsRoutes = fp(async function opsRoutes (app, { config, cache, collectMetrics, databaseState }) {
  // Liveness depends on nothing but this thread's event loop: a restart cures no database outage.
  app.get('/healthz', {
    config: ops,
    schema: {
      tags: ['ops'],
      summary: 'liveness: the process is serving HTTP (no dependency is checked)',
      response: { 200: ok }
    }
  }, async () => ({ status: 'ok' }))

  // Readiness answers from memory, never from a query: a probe must not queue behind the requests it
  // is meant to protect, nor hang with a frozen database. Dependencies shared by every pod (PostgreSQL,
  // Redis) do not make it fail by default: taking every pod out of the Service during an outage would
  // also drop the answers they can still give (cached ones, fast 503s with Retry-After). It fails while
  // shutting down, and on a dependency only when READY_REQUIRES_DATABASE / READY_REQUIRES_CACHE ask.
  app.get('/readyz', {
    config: ops,
    schema: {
      tags: ['ops'],
      summary: 'readiness: not shutting down (and PostgreSQL, Redis reachable when READY_REQUIRES_DATABASE, ' +
        'READY_REQUIRES_CACHE); answered from memory',
      response: { 200: readiness, 503: readiness }
    }
  }, async (request, reply) => {
    const postgres = databaseState()
    const cacheState = cache.state()
    const ready = !app.draining &&
      (postgres === 'ok' || !config.READY_REQUIRES_DATABASE) &&
      (['ok', 'memory'].includes(cacheState) || !config.READY_REQUIRES_CACHE)
    reply.code(ready ? 200 : 503)
    return { status: app.draining ? 'shutting down' : ready ? 'ready' : 'not ready', postgres, cache: cacheState }
  })

  app.get('/metrics', {
    config: ops,
    schema: {
      tags: ['ops'],
      summary: 'Prometheus metrics, summed over all worker threads; OpenMetrics (with exemplars) when Accept ' +
        'asks for it',
      produces: ['text/plain', 'application/openmetrics-text']
    }
  }, async (request, reply) => {
    const format = formatFor(request.headers.accept)
    reply.type(FORMATS[format])
    return collectMetrics(format)
  })
}, { name: 'ops-routes' })
