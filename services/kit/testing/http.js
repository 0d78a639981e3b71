// HTTP helpers for tests: requests, a metric's value in a scrape, keep-alive load, and answers checked
// against the response schema their route declares.
import { request, Agent } from 'node:http'
import assert from 'node:assert/strict'
import Ajv from 'ajv'
import addFormats from 'ajv-formats'
import { errorSchema } from '../src/http/error-schemas.js'
import { withUnicodeFormat } from '../src/http/validation.js'

/**
 * An HTTP request with an optional JSON body (an object, or text sent as is); the answer parsed when
 * it is JSON. Returns { status, headers, body }.
 */
export async function send (base, method, path, json, headers = {}) {
  const res = await fetch(base + path, {
    method,
    headers: { ...(json === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: json === undefined || typeof json === 'string' ? json : JSON.stringify(json)
  })
  const text = await res.text()
  let body = text
  try { body = JSON.parse(text) } catch {}
  return { status: res.status, headers: res.headers, body }
}

/**
 * A request with a JSON body on a connection of its own (on a port several workers share, the kernel
 * picks the worker for each); resolves to { status, ms } once the answer is read.
 */
export function sendOnNewConnection (url, method, json) {
  const body = JSON.stringify(json)
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method,
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
    }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** GET and parse; returns { status, headers, body }. */
export const get = (base, path, headers) => send(base, 'GET', path, undefined, headers)

/** The value of one series of a Prometheus text exposition (0 when absent). */
export function metric (text, name, labels = {}) {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
  let sum = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue
    if (want.every((l) => line.includes(l))) sum += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return sum
}

/**
 * Load like a client behind a load balancer: `clients` keep-alive connections, each sending the
 * next request as soon as the previous answer is in, until `until()` is true. A client stops
 * when an answer says `Connection: close` (the server is draining), as HTTP clients do, and never
 * opens a second connection. Resolves to { statuses: {code: n}, errors: {code: n}, sent }.
 */
export async function keepAliveLoad ({ url, paths, clients = 16, until }) {
  const result = { statuses: {}, errors: {}, sent: 0 }
  const one = (agent, path) => new Promise((resolve) => {
    const req = request(url + path, { agent }, (res) => {
      res.resume()
      res.on('end', () => {
        result.statuses[res.statusCode] = (result.statuses[res.statusCode] ?? 0) + 1
        resolve(res.headers.connection !== 'close')
      })
      res.on('error', (err) => { count(err); resolve(false) })
    })
    const count = (err) => {
      result.errors[err.code ?? err.message] = (result.errors[err.code ?? err.message] ?? 0) + 1
    }
    req.on('error', (err) => { count(err); resolve(false) })
    result.sent++
    req.end()
  })
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    for (let i = c; !until(); i++) {
      if (!await one(agent, paths[i % paths.length])) break
    }
    agent.destroy()
  }))
  return result
}

const ajv = withUnicodeFormat(addFormats(new Ajv({ allErrors: true, strict: false })))
ajv.addSchema(errorSchema)

/**
 * Asserts that an answer `{ status, body }` matches the response schema its route declares for that
 * status (what the OpenAPI document promises); returns the answer.
 */
export function conforms (routeSchema, res) {
  const schema = routeSchema.response[res.status]
  assert.ok(schema, `the route declares no response ${res.status}`)
  const validate = ajv.compile(schema)
  assert.ok(validate(res.body === '' ? null : res.body), `${res.status} ${JSON.stringify(validate.errors)}`)
  return res
}
