// One error contract for every 4xx and 5xx a service answers, whoever produces it: a route, request
// validation, Fastify's body parser and router, or Node's HTTP parser. The answer is
// `application/json` with the body `{statusCode, error, message}` (error: the status's reason phrase;
// message: what was wrong, naming the field). An unknown path is a 404; a known path with another
// method a 405 naming the methods it has, or, for OPTIONS, a 204 with them.
import { STATUS_CODES } from 'node:http'
import fp from 'fastify-plugin'
import { errorSchema, httpError } from './error-schemas.js'
import { isUnavailable } from '../data/connection.js'

const ERROR_CONTENT_TYPE = 'application/json; charset=utf-8'
// Methods that may carry a body: Fastify parses one for them on every route (400, 413, 415).
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

export function sendError (reply, statusCode, message) {
  const body = { statusCode, error: STATUS_CODES[statusCode], message }
  return reply.code(statusCode).type(ERROR_CONTENT_TYPE).send(body)
}

/**
 * Errors of Fastify's router, which never reach the error handler: a path that is not valid
 * percent-encoded UTF-8, a path parameter longer than maxParamLength. (A Fastify option.)
 */
export function frameworkErrors (error, request, reply) {
  if (error.code === 'FST_ERR_BAD_URL') return sendError(reply, 400, 'the path is not valid percent-encoded UTF-8')
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return sendError(reply, 414, 'a path segment is longer than 100 characters')
  }
  request.log.error({ err: error }, 'router error')
  return sendError(reply, 500, 'Internal Server Error')
}

/**
 * Errors of Node's HTTP parser (a malformed request, headers past 16 KB, a request too slow to
 * arrive): written straight to the socket, which is then closed, as Fastify's own handler does.
 * (A Fastify option.)
 */
export function clientErrorHandler (err, socket) {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const [status, message] = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? [408, 'the request did not arrive in time']
    : err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'the request line and headers are larger than 16 KB']
      : [400, 'the request is not valid HTTP/1.1']
  const body = JSON.stringify({ statusCode: status, error: STATUS_CODES[status], message })
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${ERROR_CONTENT_TYPE}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
  }
  socket.destroy(err)
}

// The message of an error Fastify raised before the route ran, in the contract's words.
function messageOf (error, request) {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return `body must be application/json (got ${request.headers['content-type'] ?? 'no content-type'})`
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `body is larger than ${request.routeOptions.bodyLimit} bytes`
    default:
      return error.message
  }
}

/**
 * The plugin: the error schema, the error handler, and 404, 405 and OPTIONS for every path.
 * `tracing`: the instance's, which records a 500's error on the request's span.
 */
export const errorContract = fp(async function errorContract (app, { tracing }) {
  app.addSchema(errorSchema)
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

  const allowed = methodsByPath(app)
  const notFound = (request, reply) => {
    const path = request.url.split('?')[0]
    const allow = allowed(path)
    if (!allow) return sendError(reply, 404, `Route ${request.method}:${path} not found`)
    reply.header('allow', allow)
    if (request.method === 'OPTIONS') return reply.code(204).send()
    return sendError(reply, 405, `${request.method} is not allowed on ${path} (allowed: ${allow})`)
  }
  // Answered in onRequest, before Fastify reads a body: it would refuse a QUERY without a
  // Content-Type first. The hook is in a scope of its own with the not-found handler, so it runs on
  // unknown paths only, not on every request.
  await app.register(async function unknownPaths (scope) {
    scope.addHook('onRequest', (request, reply) => { notFound(request, reply) }) // answered: no done()
    scope.setNotFoundHandler(notFound)
  })
}, { name: 'error-contract' })

/**
 * The error statuses the kit itself answers on a service route, declared in its response schemas (so
 * in the OpenAPI): 400 for bad input, 414 for an overlong path parameter, 413 and 415 for a body, 503
 * when shedding load or the database is down, 500. Registered in the scope of the service's routes.
 */
export const declaredErrors = fp(async function declaredErrors (app) {
  app.addHook('onRoute', (route) => {
    const s = route.schema
    if (!s || s.hide) return
    s.response ??= {}
    const declare = (status) => { s.response[status] ??= { $ref: 'error#' } }
    const methods = [route.method].flat()
    const hasBody = methods.some((m) => BODY_METHODS.has(m))
    if (s.params || s.querystring || s.headers || s.body || hasBody) declare(400)
    if (s.params) declare(414)
    if (hasBody) { declare(413); declare(415) }
    declare(500)
    declare(503)
  })
}, { name: 'declared-errors' })

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

export { httpError }
