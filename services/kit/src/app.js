// The Fastify application of one worker: the kit's routes (health, metrics, OpenAPI) around a
// service's own routes, with one error contract (errors.js), load shedding and request metrics.
import { randomUUID } from 'node:crypto'
import Fastify, { LogController } from 'fastify'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import underPressure from '@fastify/under-pressure'
import { FORMATS, formatFor } from './metrics.js'
import { isUnavailable } from './pg.js'
import { validatorCompiler } from './validation.js'
import { lazyRequestLogger } from './logger.js'
import { noneMatchHolds } from './conditional.js'
import { errorSchema, httpError, sendError, frameworkErrors, clientErrorHandler, jsonBodies, messageOf } from './errors.js'

export { errorSchema, httpError }

const err = { $ref: 'error#' }
const PRESSURE_SAMPLE_MS = 1000 // how often load shedding samples event-loop delay, utilization and memory
/** Response schemas of the error statuses a service route answers besides those the kit adds itself. */
export const errorResponses = { 400: err, 404: err, 500: err, 503: err }
/** The response schema of one more error status a route answers (412, 422…). */
export const errorResponse = err

/** The response schema of a 304 to a conditional GET (see reply.sendCached's `versioned`). */
export const notModifiedResponse = { type: 'null', description: 'not modified: If-None-Match names the current ETag' }

const ERROR_CONTRACT = 'Every 4xx and 5xx answer, whatever produces it (validation, the body parser, an ' +
  'unknown path: 404, an undeclared method on a known path: 405 with Allow, 413, 414, 415, 431, 503), is ' +
  '`application/json` `{statusCode, error, message}`; a 400 names the field (`body/3/hour is required`).'

// Methods that may carry a body: Fastify parses one for them on every route (400, 413, 415).
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

// A client's x-request-id is kept (echoed, logged) only when it is short and plain: an id from a
// tracing system or a load balancer. Anything else (too long, spaces, quotes, several ids joined by
// ", ") is replaced by a UUID, so a client cannot fill the logs or inject into them.
const SAFE_REQUEST_ID = /^[\w.:@+=/-]{1,128}$/
const requestId = (req) => {
  const id = req.headers['x-request-id']
  return typeof id === 'string' && SAFE_REQUEST_ID.test(id) ? id : newRequestId()
}
// A generated id is a UUID (v4 layout) whose first 90 bits are random, drawn once per 2^32 ids of a
// worker, and whose last 32 count: unique as a random one, and made by a concatenation instead of
// randomUUID()'s drawing and formatting of 16 bytes on every request.
let idPrefix = ''
let idCount = 2 ** 32
function newRequestId () {
  if (idCount === 2 ** 32) { idPrefix = randomUUID().slice(0, 28); idCount = 0 }
  return idPrefix + (idCount++).toString(16).padStart(8, '0')
}

/**
 * @param {object} deps
 * @param {{ name: string, version?: string, description?: string, routes: URL }} deps.service  `routes`: the module
 *   whose default export is the service's routes (a Fastify plugin), imported here
 * @param {Function} deps.collectMetrics  (format) resolves to the exposition of the whole process in that format
 * @param {object} [deps.tracing]  the instance's tracing (tracing.js), or null: no tracing work at all
 * @param {Function} [deps.databaseState]  'ok' | 'down' | 'unknown': PostgreSQL as this pod's own
 *   probe last saw it (workers.js), read from memory so that /readyz never waits on the database
 */
export async function buildApp ({ service, config, log, metrics, pool, cache, tracing = null, collectMetrics, databaseState = () => 'unknown' }) {
  const app = Fastify({
    loggerInstance: log,
    childLoggerFactory: lazyRequestLogger,
    logController: new LogController({ disableRequestLogging: !config.LOG_REQUESTS }),
    requestIdHeader: false,
    genReqId: requestId,
    bodyLimit: 1024 * 1024,
    frameworkErrors,
    clientErrorHandler,
    // A client that trickles its headers or body (a byte every few seconds) is cut off: 408, connection
    // closed. Node checks these bounds once per connectionsCheckingInterval, so a request is cut at
    // most a second after its bound.
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    http: { headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS, requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS, connectionsCheckingInterval: 1000 }
  })
  app.setValidatorCompiler(validatorCompiler)
  jsonBodies(app)
  const allowed = methodsByPath(app)
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
      if (noneMatchHolds(this.request.headers['if-none-match'], etag)) {
        this.code(304).send()
        return true
      }
    }
    this.type('application/json; charset=utf-8').send(json)
    return true
  })

  // The kit's hooks take a callback rather than being async: they run on every request, and an async
  // hook costs a promise and a microtask turn each.
  app.addHook('onResponse', (request, reply, done) => {
    const sampled = tracing?.endRequest(request, reply.statusCode)
    metrics.requestAnswered(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000, sampled)
    done()
  })
  // The handler, and whatever it starts, runs in the request's trace context (tracing.js).
  if (tracing) app.addHook('preHandler', (request, reply, done) => tracing.inRequest(request, done))

  app.setErrorHandler((error, request, reply) => {
    if (error.validation) return sendError(reply, 400, error.message)
    if (isUnavailable(error)) {
      request.log.warn({ err: error.message }, 'database unavailable')
      reply.header('retry-after', '1')
      return sendError(reply, 503, 'database unavailable, retry shortly')
    }
    const status = error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500
    if (status === 500) {
      request.log.error({ err: error }, 'request failed')
      tracing?.failed(request, error)
    }
    return sendError(reply, status, status === 500 ? 'Internal Server Error' : messageOf(error, request))
  })
  // A known path with another method: 405 and the methods it has (OPTIONS: just those, 204). Answered
  // in onRequest, before Fastify reads a body (it would refuse a QUERY without Content-Type first).
  const notFound = (request, reply) => {
    const path = request.url.split('?')[0]
    const allow = allowed(path)
    if (!allow) return sendError(reply, 404, `Route ${request.method}:${path} not found`)
    reply.header('allow', allow)
    if (request.method === 'OPTIONS') return reply.code(204).send()
    return sendError(reply, 405, `${request.method} is not allowed on ${path} (allowed: ${allow})`)
  }
  // One hook for every request: its id echoed, a close asked for while draining, and an unknown path
  // or method answered (404, 405) before Fastify reads a body.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    tracing?.startRequest(request, reply)
    if (app.draining) reply.header('connection', 'close')
    if (request.is404) notFound(request, reply) // answered here: no done()
    else done()
  })
  app.setNotFoundHandler(notFound)

  await app.register(swagger, {
    openapi: {
      info: { title: `${service.name} API`, version: service.version ?? '0.0.0', description: `${service.description}\n\n${ERROR_CONTRACT}` },
      tags: [{ name: 'ops', description: 'health and metrics' }]
    },
    refResolver: { buildLocalReference: (json, baseUri, fragment, i) => json.$id ?? `def-${i}` }
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })

  const ok = { type: 'object', properties: { status: { type: 'string' } } }
  // Liveness depends on nothing but this thread's event loop: a restart cures no database outage.
  // The kit's own routes are not traced (config.traced): probes and scrapes are not the service's traffic.
  const ops = { traced: false }
  app.get('/healthz', {
    config: ops,
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
    config: ops,
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
    config: ops,
    schema: { tags: ['ops'], summary: 'Prometheus metrics, summed over all worker threads; OpenMetrics (with exemplars) when Accept asks for it', produces: ['text/plain', 'application/openmetrics-text'] }
  }, async (request, reply) => {
    const format = formatFor(request.headers.accept)
    reply.type(FORMATS[format])
    return collectMetrics(format)
  })

  // The service's routes, and load shedding for them only: health and metrics must answer under load.
  // The plugin measures from its registration, so its first samples count the start-up's own work
  // (compiling schemas, on a busy node a second or more) as event-loop delay and utilization: without
  // a grace, a worker just Ready would answer 503 to its first requests. It sheds once two whole
  // sample windows lie after listen.
  let sheddingFrom = Infinity
  app.addHook('onListen', async () => { sheddingFrom = performance.now() + 2 * PRESSURE_SAMPLE_MS })
  await app.register(async (scope) => {
    await scope.register(underPressure, {
      maxEventLoopDelay: config.MAX_EVENT_LOOP_DELAY_MS,
      maxEventLoopUtilization: config.MAX_EVENT_LOOP_UTILIZATION,
      maxHeapUsedBytes: config.MAX_HEAP_USED_BYTES,
      maxRssBytes: config.MAX_RSS_BYTES,
      sampleInterval: PRESSURE_SAMPLE_MS,
      pressureHandler: (request, reply) => {
        if (performance.now() < sheddingFrom) return // serve it
        reply.header('retry-after', '1')
        return Promise.reject(httpError(503, 'service overloaded, retry shortly'))
      }
    })
    scope.addHook('onRoute', declareKitErrors)
    await scope.register((await import(service.routes)).default)
  })

  app.addHook('onClose', async () => {
    await Promise.allSettled([pool.end(), cache.close()])
  })
  return app
}

// The error statuses the kit itself answers on a service route, declared in its response schemas
// (so in the OpenAPI): 400 for bad input, 414 for an overlong path parameter, 413/415 for a body, 503
// when shedding load or the database is down, 500.
function declareKitErrors (route) {
  const s = route.schema
  if (!s || s.hide) return
  s.response ??= {}
  const declare = (status) => { s.response[status] ??= err }
  const methods = [route.method].flat()
  if (s.params || s.querystring || s.headers || s.body || methods.some((m) => BODY_METHODS.has(m))) declare(400)
  if (s.params) declare(414)
  if (methods.some((m) => BODY_METHODS.has(m))) { declare(413); declare(415) }
  declare(500)
  declare(503)
}

// The methods of every route by path pattern, gathered as routes are added; returns a lookup from a
// request path to its `Allow` value, or null when no route has that path.
function methodsByPath (app) {
  const byUrl = new Map()
  app.addHook('onRoute', (route) => {
    const methods = byUrl.get(route.url) ?? byUrl.set(route.url, new Set()).get(route.url)
    for (const m of [route.method].flat()) methods.add(m)
  })
  let patterns
  return (path) => {
    patterns ??= [...byUrl].map(([url, methods]) => [patternOf(url), methods])
    const allow = new Set()
    for (const [re, methods] of patterns) if (re.test(path)) for (const m of methods) allow.add(m)
    if (!allow.size) return null
    if (allow.has('GET')) allow.add('HEAD')
    allow.add('OPTIONS')
    return [...allow].sort().join(', ')
  }
}

// '/restaurants/:id/menu' → /^\/restaurants\/[^/]+\/menu$/; '/docs/*' → anything below /docs/.
function patternOf (url) {
  const parts = url.split('/').map((seg) => seg.startsWith(':')
    ? '[^/]+'
    : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  return new RegExp(`^${parts.join('/')}$`)
}
