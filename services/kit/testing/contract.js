// The error contract, route by route: every operation of a running service's own OpenAPI document
// (/docs/json) gets a table of bad requests — an undeclared method, non-canonical integers in its
// path and query, an overlong path segment, a body that is not JSON, not UTF-8, too large or of
// another media type, a `__proto__` key — and every answer must be the one error body
// `{statusCode, error, message}` as `application/json`, with a status the operation declares.
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { connect } from 'node:net'
import { STATUS_CODES } from 'node:http'
import Ajv from 'ajv'
import addFormats from 'ajv-formats'
import { withUnicodeFormat } from '../src/http/validation.js'

const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH']
// Integers as a client might write them that are not plain decimal digits, each naming 16 if coerced.
const NON_CANONICAL = ['0x10', '1e1', '%2B16', '016', '%2016', '16.0', '16%20']

/** One request over a fresh connection; `declaredLength` sends only the headers, claiming that many body bytes. */
export function raw (base, method, path, { headers = {}, body, declaredLength } = {}) {
  return new Promise((resolve, reject) => {
    // Content-Length always: Node sends a DELETE body without it otherwise (neither length nor chunks).
    const length = declaredLength ?? (body === undefined ? undefined : Buffer.byteLength(body))
    const req = request(base + path, {
      method,
      headers: { ...headers, ...(length !== undefined && { 'content-length': length }) },
      agent: false
    }, (res) => {
      const chunks = []
      res.on('data', (d) => chunks.push(d))
      res.on('end', () => {
        req.destroy()
        const text = Buffer.concat(chunks).toString()
        let json
        try { json = JSON.parse(text) } catch {}
        resolve({ status: res.statusCode, headers: res.headers, text, json })
      })
    })
    req.on('error', reject)
    if (declaredLength) req.flushHeaders()
    else req.end(body)
  })
}

/** Asserts that `res` is the contract's error body for `status`. */
export function assertError (res, status, label) {
  assert.equal(res.status, status, `${label}: ${res.status} ${res.text}`)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${label}: content-type`)
  assert.deepEqual(Object.keys(res.json ?? {}).sort(), ['error', 'message', 'statusCode'], `${label}: ${res.text}`)
  assert.equal(res.json.statusCode, status, label)
  assert.equal(res.json.error, STATUS_CODES[status], label)
  assert.ok(typeof res.json.message === 'string' && res.json.message.length > 0, label)
}

// Every string schema a request can carry (params, query, headers, body), with where it is.
function * stringSchemas (schema, where) {
  if (!schema || typeof schema !== 'object') return
  if (schema.type === 'string' && schema.enum === undefined) yield [where, schema]
  for (const [k, s] of Object.entries(schema.properties ?? {})) yield * stringSchemas(s, `${where}/${k}`)
  if (schema.items) yield * stringSchemas(schema.items, `${where}/0`)
  const variants = [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]
  for (const s of variants) yield * stringSchemas(s, where)
}

/**
 * Runs the table against the service at `base`; returns the number of requests checked.
 * `bodyLimit` is the largest body (1 MiB), `bodyLimits` that of a route ('POST /flows').
 */
export async function checkErrorContract (base, { bodyLimit = 1024 * 1024, bodyLimits = {} } = {}) {
  const doc = await (await fetch(`${base}/docs/json`)).json()
  const ajv = withUnicodeFormat(addFormats(new Ajv({ strict: false, allErrors: true })))
  let checked = 0
  const expect = async (op, status, label, method, path, options) => {
    const res = await raw(base, method, path, options)
    assertError(res, status, label)
    if (op) assert.ok(op.responses[status], `${label}: the OpenAPI of ${method} ${path} does not declare ${status}`)
    checked++
    return res
  }

  for (const [template, item] of Object.entries(doc.paths)) {
    const declared = Object.keys(item).filter((m) => METHODS.includes(m.toUpperCase())).map((m) => m.toUpperCase())
    const path = template.replace(/\{[^}]+\}/g, '1')

    // An undeclared method on a known path: 405, and Allow lists what the path has; also for methods
    // Fastify would otherwise read a body for first (QUERY without Content-Type was a 400).
    for (const method of [...METHODS, 'QUERY', 'TRACE'].filter((m) => !declared.includes(m))) {
      const res = await expect(null, 405, `${method} ${template}`, method, path)
      const allow = res.headers.allow.split(', ')
      for (const m of declared) {
        assert.ok(allow.includes(m), `${method} ${template}: Allow ${res.headers.allow} lacks ${m}`)
      }
      assert.ok(!allow.includes(method), `${method} ${template}: Allow ${res.headers.allow}`)
    }
    const options = await raw(base, 'OPTIONS', path)
    assert.equal(options.status, 204, `OPTIONS ${template}`)
    assert.deepEqual(
      options.headers.allow.split(', ').filter((m) => METHODS.includes(m)).sort(),
      [...declared].sort(),
      `OPTIONS ${template}`
    )
    // A path below it that no route has: 404.
    await expect(null, 404, `GET ${template}/no/such/route`, 'GET', `${path}/no/such/route`)

    for (const method of declared) {
      const op = item[method.toLowerCase()]
      const label = `${method} ${template}`
      const params = op.parameters ?? []
      const query = params.filter((p) => p.in === 'query' && p.required).map((p) => `${p.name}=1`).join('&')
      const target = (p) => (query ? `${p}?${query}` : p)

      // Integers not in plain digits, in the path and in the query: 400 naming the parameter (sent
      // without a body: parameters are validated first, and a route's own body checks see none).
      for (const p of params.filter((p) => p.schema?.type === 'integer' && ['path', 'query'].includes(p.in))) {
        for (const bad of NON_CANONICAL) {
          const otherQuery = params.filter((q) => q.in === 'query' && q.required && q.name !== p.name)
            .map((q) => `${q.name}=1`)
          const url = p.in === 'path'
            ? target(template.replace(`{${p.name}}`, bad).replace(/\{[^}]+\}/g, '1'))
            : `${path}?${[...otherQuery, `${p.name}=${bad}`].join('&')}`
          const res = await expect(op, 400, `${label} ${p.name}=${bad}`, method, url)
          assert.match(
            res.json.message,
            new RegExp(`^${p.in === 'path' ? 'params' : 'querystring'}/${p.name} `),
            `${label} ${p.name}=${bad}`
          )
        }
        if (p.in === 'path') {
          const longPath = target(template.replace(`{${p.name}}`, '1'.repeat(101)).replace(/\{[^}]+\}/g, '1'))
          await expect(op, 414, `${label} ${p.name} of 101 digits`, method, longPath)
        }
      }

      // Every string the operation takes refuses NUL and unpaired surrogates (what PostgreSQL cannot
      // store, or would store as U+FFFD). Not headers: HTTP itself refuses NUL there, and they are bytes.
      const parts = [
        ...params.filter((p) => p.in !== 'header').map((p) => [`${p.in}/${p.name}`, p.schema]),
        ['body', op.requestBody?.content?.['application/json']?.schema]
      ]
      for (const [where, schema] of parts) {
        for (const [at, s] of stringSchemas(schema, where)) {
          const validate = ajv.compile(s)
          for (const bad of ['a\u0000b', 'a\ud800b', 'a\udc00']) {
            assert.ok(!validate(bad), `${label} ${at} accepts ${JSON.stringify(bad)}`)
          }
        }
      }

      if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) continue
      // A body that is not JSON in UTF-8: 415 for another media type, 400 for broken JSON, bytes that
      // are not UTF-8 or a prototype key, 413 past the body limit.
      const url = target(path)
      const json = { 'content-type': 'application/json' }
      await expect(op, 415, `${label} text/plain`, method, url, {
        headers: { 'content-type': 'text/plain' },
        body: '[]'
      })
      await expect(op, 415, `${label} form`, method, url, {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'a=1'
      })
      await expect(op, 415, `${label} latin1 JSON`, method, url, {
        headers: { 'content-type': 'application/json; charset=iso-8859-1' },
        body: '{}'
      })
      await expect(op, 415, `${label} no content-type`, method, url, { body: '{}' })
      const broken = await expect(op, 400, `${label} broken JSON`, method, url, { headers: json, body: '{"a": ' })
      assert.match(broken.json.message, /^body is not valid JSON/)
      const latin1 = await expect(op, 400, `${label} not UTF-8`, method, url, {
        headers: json,
        body: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])
      })
      assert.equal(latin1.json.message, 'body is not valid UTF-8')
      const proto = await expect(op, 400, `${label} __proto__`, method, url, {
        headers: json,
        body: '{"__proto__": {"x": 1}}'
      })
      assert.match(proto.json.message, /__proto__/)
      const limit = bodyLimits[`${method} ${template}`] ?? bodyLimit
      await expect(op, 413, `${label} larger than ${limit} bytes`, method, url, {
        headers: json,
        declaredLength: limit + 1
      })
    }
  }

  // What Node's HTTP parser refuses before any route: headers past 16 KB (431), a request that is
  // not HTTP (400). And a method Node does not know.
  await expect(null, 431, 'headers of 20 KB', 'GET', '/healthz', { headers: { 'x-big': 'x'.repeat(20_000) } })
  const garbage = await rawSocket(base, 'HELLO\r\n\r\n')
  assertError(garbage, 400, 'not HTTP')
  checked++
  return checked
}

// Sends bytes over a socket and parses the one answer.
function rawSocket (base, bytes) {
  const { hostname, port } = new URL(base)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(bytes))
    let text = ''
    socket.on('data', (d) => { text += d })
    socket.on('error', reject)
    socket.on('close', () => {
      const [head, body] = text.split('\r\n\r\n')
      const [status, ...lines] = head.split('\r\n')
      const headers = Object.fromEntries(lines.map((l) => [
        l.slice(0, l.indexOf(':')).toLowerCase(),
        l.slice(l.indexOf(':') + 1).trim()
      ]))
      let json
      try { json = JSON.parse(body) } catch {}
      resolve({ status: Number(status.split(' ')[1]), headers, text: body, json })
    })
  })
}
