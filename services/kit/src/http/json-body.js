// The only body parser: JSON in UTF-8. Any other media type is a 415 on every route, and bytes that
// are not UTF-8 are refused (a decoder would turn them into U+FFFD, storing something the client
// never sent). A `__proto__` or `constructor.prototype` key is refused, never silently dropped.
// An empty body counts as no body (the route's schema then says whether it needs one).
import { isUtf8 } from 'node:buffer'
import fp from 'fastify-plugin'
import sjson from 'secure-json-parse'
import { httpError } from './error-schemas.js'

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i
const PARSE_OPTIONS = { protoAction: 'error', constructorAction: 'error' }

export const jsonBody = fp(async function jsonBody (app) {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const charset = CHARSET.exec(request.headers['content-type'])?.[1]
    if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
      return done(httpError(415, `body must be JSON in UTF-8 (got charset=${charset})`))
    }
    if (body.length === 0) return done(null, undefined)
    if (!isUtf8(body)) return done(httpError(400, 'body is not valid UTF-8'))
    try {
      done(null, sjson.parse(body.toString('utf8'), PARSE_OPTIONS))
    } catch (err) {
      done(httpError(400, /forbidden prototype property/.test(err.message)
        ? 'body must not have a "__proto__" or "constructor.prototype" property'
        : `body is not valid JSON: ${err.message}`))
    }
  })
}, { name: 'json-body' })
