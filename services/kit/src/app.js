// The Fastify application of one worker: the kit's routes (health, metrics, OpenAPI) around a
// service's own routes, with JSON errors, load shedding and request metrics.
import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import Fastify, { LogController } from 'fastify'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import underPressure from '@fastify/under-pressure'
import { contentType } from './metrics.js'
import { isUnavailable } from './pg.js'
import { validatorCompiler } from './validation.js'

export const errorSchema = {
  $id: 'error',
  type: 'object',
  required: ['statusCode', 'error', 'message'],
  properties: {
    statusCode: { type: 'integer' },
    error: { type: 'string' },
    message: { type: 'string', description: 'what was wrong, naming the field' }
  }
}
const err = { $ref: 'error#' }
/** Response schemas of the error statuses every route can answer. */
export const errorResponses = { 400: err, 404: err, 500: err, 503: err }
/** The response schema of one more error status a route answers (413, 412, 422…). */
export const errorResponse = err

/** The response schema of a 304 to a conditional GET (see reply.sendCached's `versioned`). */
export const notModifiedResponse = { type: 'null', description: 'not modified: If-None-Match names the current ETag' }

/** An error that the error handler turns into `{statusCode, error, message}`. */
export function httpError (statusCode, message) {
  return Object.assign(new Error(message), { statusCode })
}

// A client's x-request-id is kept (echoed, logged) only when it is short and plain: an id from a
// tracing system or a load balancer. Anything else (too long, spaces, quotes, several ids joined by
// ", ") is replaced by a UUID, so a client cannot fill the logs or inject into them.
const SAFE_REQUEST_ID = /^[\w.:@+=/-]{1,128}$/
const requestId = (req) => {
  const id = req.headers['x-request-id']
  return typeof id === 'string' && SAFE_REQUEST_ID.test(id) ? id : randomUUID()
}

/**
 * @param {object} deps
 * @param {{ name: string, version?: string, description?: string, routes: Function }} deps.service
 * @param {Function} deps.collectMetrics  resolves to the Prometheus text of the whole process
 * @param {Function} [deps.databaseState]  'ok' | 'down' | 'unknown': PostgreSQL as this pod's own
 *   probe last saw it (workers.js), read from memory so that /readyz never waits on the database
 */
export async function buildApp ({ service, config, log, metrics, pool, cache, collectMetrics, databaseState = () => 'unknown' }) {
  const app = Fastify({
    loggerInstance: log,
    logController: new LogController({ disableRequestLogging: !config.LOG_REQUESTS }),
    requestIdHeader: false,
    genReqId: requestId,
    bodyLimit: 1024 * 1024,
    // A client that trickles its headers or body (a byte every few seconds) is cut off: 408, connection
    // closed. Node checks these bounds once per connectionsCheckingInterval, so a request is cut at
    // most a second after its bound.
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    http: { headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS, requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS, connectionsCheckingInterval: 1000 }
  })
  app.setValidatorCompiler(validatorCompiler)
  app.decorate('config', config)
  app.decorate('pg', pool)
  app.decorate('cache', cache)
  app.decorate('metrics', metrics)
  // Set when shutdown starts: /readyz fails and responses ask clients to reconnect elsewhere.
  app.decorate('draining', false)
  app.addSchema(errorSchema)

  /**
   * Cache-aside for a whole response: sends the cached JSON text of `key`, or calls `load()` for the
   * document, serializes it once by the route's response schema and caches that text.
   * A document that changes has a version (a counter its table bumps on every write, see
   * cache.invalidate): pass `{ versioned: true }` and make `load()` resolve to `{ doc, version }`;
   * the answer then carries `ETag: "<version>"`, and a GET whose If-None-Match names it gets a 304.
   * Resolves to true once sent, or to false when `load()` found nothing (the route then answers 404).
   */
  app.decorateReply('sendCached', async function (key, load, { versioned = false } = {}) {
    const { value: json, version } = await cache.wrapEntry(key, async () => {
      const loaded = await load()
      const doc = versioned ? loaded?.doc ?? null : loaded
      const value = doc === null ? null : this.serialize(doc)
      return versioned ? { value, version: loaded?.version ?? 0 } : value
    })
    if (json === null) return false
    if (versioned) {
      const etag = `"${version}"`
      this.header('etag', etag)
      if (this.request.headers['if-none-match'] === etag) {
        this.code(304).send()
        return true
      }
    }
    this.type('application/json; charset=utf-8').send(json)
    return true
  })

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
    if (app.draining) reply.header('connection', 'close')
  })
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpDuration.observe({
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status_code: reply.statusCode
    }, reply.elapsedTime / 1000)
    metrics.workerRequests.inc({ worker: metrics.worker })
  })

  app.setErrorHandler((error, request, reply) => {
    if (error.validation) return sendError(reply, 400, error.message)
    if (isUnavailable(error)) {
      request.log.warn({ err: error.message }, 'database unavailable')
      reply.header('retry-after', '1')
      return sendError(reply, 503, 'database unavailable, retry shortly')
    }
    const status = error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500
    if (status === 500) request.log.error({ err: error }, 'request failed')
    return sendError(reply, status, status === 500 ? 'Internal Server Error' : error.message)
  })
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, 404, `Route ${request.method}:${request.url} not found`))

  await app.register(swagger, {
    openapi: {
      info: { title: `${service.name} API`, version: service.version ?? '0.0.0', description: service.description },
      tags: [{ name: 'ops', description: 'health and metrics' }]
    },
    refResolver: { buildLocalReference: (json, baseUri, fragment, i) => json.$id ?? `def-${i}` }
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })

  const ok = { type: 'object', properties: { status: { type: 'string' } } }
  // Liveness depends on nothing but this thread's event loop: a restart cures no database outage.
  app.get('/healthz', {
    schema: { tags: ['ops'], summary: 'liveness: the process is serving HTTP (no dependency is checked)', response: { 200: ok } }
  }, async () => ({ status: 'ok' }))

  // Readiness answers from memory, never from a query: a probe must not queue behind the requests it
  // is meant to protect, nor hang with a frozen database. Dependencies shared by every pod (PostgreSQL,
  // Redis) do not make it fail by default: taking every pod out of the Service during an outage would
  // also drop the answers they can still give (cached ones, fast 503s with Retry-After). It fails while
  // shutting down, and on a dependency only when READY_REQUIRES_DATABASE / READY_REQUIRES_CACHE ask.
  const readiness = {
    type: 'object',
    properties: {
      status: { type: 'string', enum: ['ready', 'not ready', 'shutting down'] },
      postgres: { type: 'string', enum: ['ok', 'down', 'unknown'], description: "this pod's probe connection, checked every second" },
      cache: { type: 'string', enum: ['ok', 'down', 'bypassed', 'memory'], description: 'Redis connected, down, bypassed by the circuit breaker; or the in-process cache' }
    }
  }
  app.get('/readyz', {
    schema: {
      tags: ['ops'],
      summary: 'readiness: not shutting down (and PostgreSQL, Redis reachable when READY_REQUIRES_DATABASE, READY_REQUIRES_CACHE); answered from memory',
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
    schema: { tags: ['ops'], summary: 'Prometheus metrics, summed over all worker threads', produces: ['text/plain'] }
  }, async (request, reply) => {
    reply.type(contentType)
    return collectMetrics()
  })

  // The service's routes, and load shedding for them only: health and metrics must answer under load.
  await app.register(async (scope) => {
    await scope.register(underPressure, {
      maxEventLoopDelay: config.MAX_EVENT_LOOP_DELAY_MS,
      maxEventLoopUtilization: config.MAX_EVENT_LOOP_UTILIZATION,
      maxHeapUsedBytes: config.MAX_HEAP_USED_BYTES,
      maxRssBytes: config.MAX_RSS_BYTES,
      retryAfter: 1,
      message: 'service overloaded, retry shortly'
    })
    await scope.register(service.routes)
  })

  app.addHook('onClose', async () => {
    await Promise.allSettled([pool.end(), cache.close()])
  })
  return app
}

function sendError (reply, statusCode, message) {
  return reply.code(statusCode).send({ statusCode, error: STATUS_CODES[statusCode], message })
}
