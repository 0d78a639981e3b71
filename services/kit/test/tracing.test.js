// Traces, trace ids in the logs and exemplars, on the fixture service as a real process (worker
// threads), exporting to a real Jaeger (built by scripts/tools.sh): what a span holds and where it
// hangs, W3C trace context in and out, the sampler, every OTLP transport, the flush at SIGTERM, and no
// tracing work at all without an endpoint.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import { startJaeger, startService, get, send } from '@suite/kit/testing'
import { migratedDatabase, redisUrl } from '@suite/kit/testing/env'
import fixture from './fixture/service.js'

const entry = fileURLToPath(new URL('./fixture/cli.js', import.meta.url))
let jaeger, databaseUrl
before(async () => {
  jaeger = await startJaeger()
  databaseUrl = await migratedDatabase(fixture, (c) => c.query("INSERT INTO fixture_items VALUES (1, 'one', 1)"))
})
after(() => jaeger?.stop())

const start = (env = {}) => startService({
  entry,
  env: {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    WORKERS: '2',
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpHttp,
    OTEL_BSP_SCHEDULE_DELAY: '100',
    ...env
  }
})
const newTraceId = () => randomBytes(16).toString('hex')
const newSpanId = () => randomBytes(8).toString('hex')
const traceparent = (traceId, spanId, flags = '01') => `00-${traceId}-${spanId}-${flags}`
const ids = (header) => { const [, traceId, spanId, flags] = header.split('-'); return { traceId, spanId, flags } }
/** GET /items/1 once per traceparent, all pipelined in one write; resolves to the answers' traceparents. */
function pipelined (url, parents) {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    // No half-close after the write: the server would drop the requests it has not answered yet.
    const socket = connect(Number(port), hostname, () =>
      socket.write(parents.map((p) => `GET /items/1 HTTP/1.1\r\nhost: x\r\ntraceparent: ${p}\r\n\r\n`).join('')))
    let text = ''
    socket.setEncoding('utf8')
    socket.on('data', (d) => {
      text += d
      const answers = [...text.matchAll(/^traceparent: (\S+)\r$/gim)].map((m) => m[1])
      if (answers.length === parents.length) {
        socket.destroy()
        resolve(answers)
      }
    })
    socket.on('error', reject)
    socket.on('close', () => reject(new Error(`closed after ${text.length} bytes:\n${text.slice(0, 500)}`)))
  })
}
const logLines = (svc) => svc.logs().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))

test('a request continues its caller\'s trace: the server span under the caller\'s, ' +
  'its PostgreSQL and Redis spans under it', async () => {
  const svc = await start()
  try {
    const caller = { traceId: newTraceId(), spanId: newSpanId() }
    const res = await get(svc.url, '/items/1', {
      traceparent: traceparent(caller.traceId, caller.spanId),
      tracestate: 'vendor=abc'
    })
    assert.equal(res.status, 200)
    const out = ids(res.headers.get('traceparent'))
    assert.deepEqual([out.traceId, out.flags], [caller.traceId, '01'], 'the answer names the same trace')
    assert.notEqual(out.spanId, caller.spanId)
    assert.equal(res.headers.get('tracestate'), 'vendor=abc')
    // The server span ends last and can leave in a later export than its children: waited for by name.
    const spans = await jaeger.waitForTrace(
      caller.traceId,
      (s) => s.length >= 3 && s.some((x) => x.name === 'GET /items/:id')
    )
    const server = spans.find((s) => s.name === 'GET /items/:id')
    assert.ok(server, spans.map((s) => s.name).join(', '))
    assert.equal(server.spanId, out.spanId)
    assert.equal(server.parentSpanId, caller.spanId)
    assert.equal(server.resource['service.name'], 'fixture')
    assert.equal(server.attributes['http.route'], '/items/:id')
    assert.equal(server.attributes['http.response.status_code'], 200)
    assert.deepEqual(server.attributes['http.response.header.x-request-id'], [res.headers.get('x-request-id')])
    const pgSpan = spans.find((s) => s.attributes['db.system.name'] === 'postgresql')
    assert.ok(pgSpan, 'a PostgreSQL span')
    assert.equal(pgSpan.parentSpanId, server.spanId)
    assert.equal(
      pgSpan.name,
      'SELECT',
      'named by its prepared statement, or its first keyword: never its text or values'
    )
    assert.ok(!JSON.stringify(pgSpan).includes('fixture_items'), 'no query text')
    const store = spans.find((s) => s.name === 'EVALSHA')
    assert.equal(store?.parentSpanId, server.spanId, 'the cache fill, under the request')
  } finally {
    await svc.stop()
  }
})

test('the MGET that served several requests is one span linked to each of them', async () => {
  const svc = await start({ WORKERS: '1', OTEL_TRACES_SAMPLER: 'always_on' })
  try {
    await get(svc.url, '/items/1') // cached now
    // 40 requests pipelined in one write: the worker parses them in one turn of its event loop, so
    // their reads share MGETs whatever else the machine is doing.
    const servers = (await pipelined(
      svc.url,
      Array.from({ length: 40 }, () => traceparent(newTraceId(), newSpanId()))
    )).map(ids)
    // The MGET spans are roots of traces of their own: found by their links to the requests.
    const mgets = new Map()
    for (const server of servers) {
      const found = await jaeger.waitForLinked('fixture', 'MGET', server)
      mgets.set(found.spanId, found)
    }
    for (const found of mgets.values()) {
      assert.equal(found.parentSpanId, undefined, 'a root, not a made-up child of one request')
      assert.equal(found.attributes['db.system.name'], 'redis')
      assert.equal(found.attributes['suite.requests'], found.links.length)
      for (const l of found.links) {
        assert.ok(
          servers.some((s) => s.spanId === l.spanId && s.traceId === l.traceId),
          'linked to requests of ours only'
        )
      }
    }
    const links = [...mgets.values()].reduce((n, m) => n + m.links.length, 0)
    assert.equal(links, servers.length, 'each request linked by one MGET')
    assert.ok(
      mgets.size < servers.length,
      `the turn's reads share an MGET: ${mgets.size} MGETs for ${servers.length} reads`
    )
  } finally {
    await svc.stop()
  }
})

test('every log line written inside a traced request carries its request id, trace id and span id', async () => {
  const svc = await start({ WORKERS: '1', OTEL_TRACES_SAMPLER: 'always_on' })
  try {
    const res = await get(svc.url, '/log', { 'x-request-id': 'log-test-1' })
    const { traceId, spanId } = ids(res.headers.get('traceparent'))
    await new Promise((resolve) => setTimeout(resolve, 200))
    const lines = logLines(svc).filter((l) => /from the (request|instance) logger/.test(l.msg))
    assert.equal(lines.length, 2, svc.logs())
    for (const l of lines) {
      assert.deepEqual([l.reqId, l.trace_id, l.span_id], ['log-test-1', traceId, spanId], JSON.stringify(l))
    }
  } finally {
    await svc.stop()
  }
})

test('sampling: parent-based ratio by default; a sampled caller is followed, an unsampled one too; ' +
  'a request not traced carries no ids', async () => {
  const svc = await start({ WORKERS: '1', OTEL_TRACES_SAMPLER_ARG: '0' }) // no new trace is kept
  try {
    const fresh = await get(svc.url, '/log', { 'x-request-id': 'untraced-1' })
    assert.equal(fresh.headers.get('traceparent'), null, 'not traced at ratio 0: no span, no ids')
    await new Promise((resolve) => setTimeout(resolve, 200))
    const lines = logLines(svc).filter((l) => l.reqId === 'untraced-1')
    // The instance logger's line has no request to name.
    assert.equal(lines.length, 1, 'the request logger\'s line has its request id')
    assert.equal(lines[0].trace_id, undefined)
    const sampledCaller = newTraceId()
    await get(svc.url, '/items/1', { traceparent: traceparent(sampledCaller, newSpanId(), '01') })
    const unsampledCaller = newTraceId()
    const no = await get(svc.url, '/items/1', { traceparent: traceparent(unsampledCaller, newSpanId(), '00') })
    assert.equal(ids(no.headers.get('traceparent')).flags, '00')
    assert.ok((await jaeger.waitForTrace(sampledCaller)).length > 0)
    await new Promise((resolve) => setTimeout(resolve, 500)) // several export intervals
    assert.deepEqual(await jaeger.trace(unsampledCaller), [])
  } finally {
    await svc.stop()
  }
})

test('exemplars: a sampled request\'s trace id on its duration bucket, in OpenMetrics only, ' +
  'kept through the sum of the workers', async () => {
  const svc = await start({ OTEL_TRACES_SAMPLER: 'always_on' })
  try {
    const traceIds = []
    for (let i = 0; i < 6; i++) traceIds.push(ids((await get(svc.url, '/items/1')).headers.get('traceparent')).traceId)
    const open = await fetch(`${svc.url}/metrics`, {
      headers: { accept: 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5' }
    })
    assert.match(open.headers.get('content-type'), /^application\/openmetrics-text; version=1.0.0/)
    const text = await open.text()
    assert.match(text, /# EOF\n$/)
    // Counters in OpenMetrics: the family without _total, its samples with it (once), through the sum.
    assert.match(text, /^# TYPE http_requests_by_worker counter$/m)
    assert.match(text, /^http_requests_by_worker_total\{worker="\d+"\} \d+$/m)
    assert.ok(!text.includes('_total_total'), text)
    const exemplars = text.split('\n').filter((l) =>
      l.startsWith('http_request_duration_seconds_bucket{') && l.includes('route="/items/:id"') && l.includes(' # {'))
    assert.ok(exemplars.length >= 1, text)
    for (const line of exemplars) {
      const [, traceId] = /trace_id="([0-9a-f]{32})"/.exec(line)
      assert.ok(traceIds.includes(traceId), line)
      assert.match(line, /span_id="[0-9a-f]{16}"\} [0-9.e-]+ \d+(\.\d+)?$/)
    }
    const plain = await get(svc.url, '/metrics')
    assert.match(plain.headers.get('content-type'), /^text\/plain; version=0.0.4/)
    assert.ok(!plain.body.includes('trace_id'), 'no exemplar in the Prometheus text format')
    assert.ok(!text.includes('route="/metrics"') || !/route="\/metrics".* # \{/.test(text), 'scrapes are not traced')
  } finally {
    await svc.stop()
  }
})

for (const protocol of ['http/json', 'grpc']) {
  test(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} exports the same trace`, async () => {
    const svc = await start({
      OTEL_TRACES_SAMPLER: 'always_on',
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_EXPORTER_OTLP_ENDPOINT: protocol === 'grpc' ? jaeger.otlpGrpc : jaeger.otlpHttp
    })
    try {
      const { traceId } = ids((await get(svc.url, '/items/1')).headers.get('traceparent'))
      const spans = await jaeger.waitForTrace(traceId, (s) => s.some((x) => x.name === 'GET /items/:id'))
      assert.ok(spans.some((s) => s.name === 'GET /items/:id'))
    } finally {
      await svc.stop()
    }
  })
}

test('SIGTERM: the drain exports the last spans before the process exits', async () => {
  const svc = await start({ OTEL_TRACES_SAMPLER: 'always_on', OTEL_BSP_SCHEDULE_DELAY: '600000' }) // never on its own
  const { traceId } = ids((await send(svc.url, 'PUT', '/items/7', { value: 'seven' })).headers.get('traceparent'))
  assert.deepEqual(await jaeger.trace(traceId), [])
  const { code } = await svc.stop('SIGTERM')
  assert.equal(code, 0)
  const spans = await jaeger.waitForTrace(
    traceId,
    (s) => s.length >= 2 && s.some((x) => x.name === 'PUT /items/:id'),
    5000
  )
  assert.ok(spans.some((s) => s.name === 'PUT /items/:id'))
})

test('without an endpoint there is no tracing at all: ' +
  'no trace context in or out, no ids in the logs, no exemplars', async () => {
  const svc = await start({ WORKERS: '1', OTEL_EXPORTER_OTLP_ENDPOINT: '' })
  try {
    const caller = newTraceId()
    const res = await get(svc.url, '/log', { traceparent: traceparent(caller, newSpanId()) })
    assert.equal(res.headers.get('traceparent'), null)
    await new Promise((resolve) => setTimeout(resolve, 200))
    for (const l of logLines(svc)) assert.equal(l.trace_id, undefined, JSON.stringify(l))
    const text = await (await fetch(`${svc.url}/metrics`, {
      headers: { accept: 'application/openmetrics-text' }
    })).text()
    assert.ok(!text.includes('trace_id'))
    assert.deepEqual(await jaeger.trace(caller), [])
  } finally {
    await svc.stop()
  }
})
