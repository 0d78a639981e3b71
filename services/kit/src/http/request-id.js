// Every answer carries its request's id (x-request-id), and, while the worker drains, asks the client
// to reconnect elsewhere (Connection: close).
//
// A client's x-request-id is kept (echoed, logged) only when it is short and plain: an id from a
// tracing system or a load balancer. Anything else (too long, spaces, quotes, several ids joined by
// ", ") is replaced by a new id, so a client cannot fill the logs or inject into them.
import { randomUUID } from 'node:crypto'
import fp from 'fastify-plugin'

const SAFE_REQUEST_ID = /^[\w.:@+=/-]{1,128}$/

/** Fastify's genReqId. */
export function requestId (req) {
  const id = req.headers['x-request-id']
  return typeof id === 'string' && SAFE_REQUEST_ID.test(id) ? id : newRequestId()
}

// A new id is a UUID (v4 layout) whose first 90 bits are random, drawn once per 2^32 ids of a
// worker, and whose last 32 count: as unique as a random one, and made by a concatenation instead
// of drawing and formatting 16 bytes on every request.
let idPrefix = ''
let idCount = 2 ** 32
function newRequestId () {
  if (idCount === 2 ** 32) { idPrefix = randomUUID().slice(0, 28); idCount = 0 }
  return idPrefix + (idCount++).toString(16).padStart(8, '0')
}

// A callback hook, not an async one: it runs on every request, and an async hook costs a promise and
// a microtask turn each.
export const requestIds = fp(async function requestIds (app) {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    if (app.draining) reply.header('connection', 'close')
    done()
  })
}, { name: 'request-id' })
