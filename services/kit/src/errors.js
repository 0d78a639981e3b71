// One error contract for every 4xx and 5xx a service answers, whoever produces it — a route, request
// validation, Fastify's body parser and router, or Node's HTTP parser: `application/json` with the
// body `{statusCode, error, message}` (error: the status's reason phrase; message: what was wrong,
// naming the field).
import { STATUS_CODES } from 'node:http'
import { isUtf8 } from 'node:buffer'
import sjson from 'secure-json-parse'

const ERROR_CONTENT_TYPE = 'application/json; charset=utf-8'

export const errorSchema = {
  $id: 'error',
  type: 'object',
  description: 'every 4xx and 5xx answer, whatever produced it',
  required: ['statusCode', 'error', 'message'],
  additionalProperties: false,
  properties: {
    statusCode: { type: 'integer', minimum: 400, maximum: 599, description: 'the HTTP status again' },
    error: { type: 'string', description: 'its reason phrase (Not Found, Bad Request…)' },
    message: { type: 'string', description: 'what was wrong, naming the field (body/3/hour is required)' }
  }
}

/** An error that the error handler turns into `{statusCode, error, message}`. */
export function httpError (statusCode, message) {
  return Object.assign(new Error(message), { statusCode })
}

export function sendError (reply, statusCode, message) {
  return reply.code(statusCode).type(ERROR_CONTENT_TYPE).send({ statusCode, error: STATUS_CODES[statusCode], message })
}

/**
 * Errors of Fastify's router, which never reach the error handler: a path that is not valid
 * percent-encoded UTF-8, a path parameter longer than maxParamLength.
 */
export function frameworkErrors (error, request, reply) {
  if (error.code === 'FST_ERR_BAD_URL') return sendError(reply, 400, 'the path is not valid percent-encoded UTF-8')
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') return sendError(reply, 414, 'a path segment is longer than 100 characters')
  request.log.error({ err: error }, 'router error')
  return sendError(reply, 500, 'Internal Server Error')
}

/**
 * Errors of Node's HTTP parser (a malformed request, headers past 16 KB, a request too slow to
 * arrive): written straight to the socket, which is then closed, as Fastify's own handler does.
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

/**
 * The only body parser: JSON in UTF-8. Any other media type is a 415 on every route, and bytes that
 * are not UTF-8 are refused (a decoder would turn them into U+FFFD, storing something the client
 * never sent). A `__proto__` or `constructor.prototype` key is refused, never silently dropped.
 * An empty body counts as no body (the route's schema then says whether it needs one).
 */
export function jsonBodies (app) {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(request.headers['content-type'])?.[1]
    if (charset !== undefined && !/^utf-?8$/i.test(charset)) return done(httpError(415, `body must be JSON in UTF-8 (got charset=${charset})`))
    if (body.length === 0) return done(null, undefined)
    if (!isUtf8(body)) return done(httpError(400, 'body is not valid UTF-8'))
    try {
      done(null, sjson.parse(body.toString('utf8'), { protoAction: 'error', constructorAction: 'error' }))
    } catch (err) {
      done(httpError(400, /forbidden prototype property/.test(err.message)
        ? 'body must not have a "__proto__" or "constructor.prototype" property'
        : `body is not valid JSON: ${err.message}`))
    }
  })
}

/** The message of an error Fastify raised before the route ran, in the contract's words. */
export function messageOf (error, request) {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return `body must be application/json (got ${request.headers['content-type'] ?? 'no content-type'})`
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `body is larger than ${request.routeOptions.bodyLimit} bytes`
    default:
      return error.message
  }
}
