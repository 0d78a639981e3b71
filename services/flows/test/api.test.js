// Black-box HTTP tests of the flows API against a real PostgreSQL: shapes, bad input, idempotency,
// group commit and its failure modes.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { conforms, checkErrorContract, raw, keepAliveLoad } from '@suite/kit/testing'
import { request } from 'node:http'
import pg from 'pg'
import * as schemas from '../src/schemas.js'
import { flowsDatabase, startFlows, post, get, metric, flow, storedTotals } from './fixtures.js'

let service, db
const postSchema = schemas.postFlows({ maxBatch: 10_000, bodyLimit: 4 * 1024 * 1024 })

// The server answers 413 from Content-Length alone and closes the connection; a client still
// writing the body may see that as a reset before it reads the answer. So send only the headers of
// the large body and read the answer.
function postLarge (base, length) {
  return new Promise((resolve, reject) => {
    const headers = { 'content-type': 'application/json', 'content-length': length }
    const req = request(`${base}/flows`, { method: 'POST', headers }, (res) => {
      let text = ''
      res.on('data', (d) => { text += d })
      res.on('end', () => { req.destroy(); resolve({ status: res.statusCode, body: JSON.parse(text) }) })
    })
    req.on('error', reject)
    req.flushHeaders()
  })
}

before(async () => {
  const url = await flowsDatabase()
  db = new pg.Client({ connectionString: url })
  await db.connect()
  service = await startFlows({ DATABASE_URL: url, WORKERS: '2' })
})
after(async () => {
  await service?.stop()
  await db?.end()
})

// The original service's own example (seed 002): one answer per key, totals as decimal strings.
test('POST then GET /flows sums per (src_app, dest_app, vpc_id) and hour, in key order', async () => {
  const batch = [
    flow('foo', 'bar', 'vpc-0', 100, 300, 1), flow('foo', 'bar', 'vpc-0', 200, 600, 1),
    flow('baz', 'qux', 'vpc-0', 100, 500, 1), flow('baz', 'qux', 'vpc-0', 100, 500, 2),
    flow('baz', 'qux', 'vpc-1', 100, 500, 2)
  ]
  const res = conforms(postSchema, await post(service.url, batch))
  assert.equal(res.status, 200)
  assert.deepEqual(res.body, { stored: 5 })
  const one = conforms(schemas.listFlows, await get(service.url, '/flows?hour=1'))
  assert.deepEqual(one.body, [
    { src_app: 'baz', dest_app: 'qux', vpc_id: 'vpc-0', bytes_tx: '100', bytes_rx: '500', hour: 1 },
    { src_app: 'foo', dest_app: 'bar', vpc_id: 'vpc-0', bytes_tx: '300', bytes_rx: '900', hour: 1 }
  ])
  const two = conforms(schemas.listFlows, await get(service.url, '/flows?hour=2'))
  assert.deepEqual(
    two.body.map((f) => [f.vpc_id, f.bytes_tx, f.bytes_rx]),
    [['vpc-0', '100', '500'], ['vpc-1', '100', '500']]
  )
  assert.deepEqual(conforms(schemas.listFlows, await get(service.url, '/flows?hour=3')).body, [])
  // A read after an acknowledged write includes it, on whichever worker it lands.
  for (let i = 0; i < 10; i++) {
    assert.equal((await post(service.url, [flow('foo', 'bar', 'vpc-0', 1, 1, 1)])).status, 200)
    const got = (await get(service.url, '/flows?hour=1')).body.find((f) => f.src_app === 'foo')
    assert.equal(got.bytes_tx, String(301 + i))
  }
})

test('names with quotes and unicode round-trip, order is byte order, totals past 2^53 stay exact, ' +
  'also in GET', async () => {
  const names = ['Ünïcødé "q", \'a\' 🧭', 'Zed', 'alpha', 'a;DROP TABLE flows']
  assert.equal((await post(service.url, names.map((n) => flow(n, n, 'v', 1, 2, 50)))).status, 200)
  const got = (await get(service.url, '/flows?hour=50')).body
  assert.deepEqual(got.map((f) => f.src_app), [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))))
  const max = Number.MAX_SAFE_INTEGER
  const big = [flow('big', 'big', 'v', max, max, 51), flow('big', 'big', 'v', max, 1, 51)]
  assert.equal((await post(service.url, big)).status, 200)
  assert.equal((await post(service.url, big)).status, 200)
  const { rows: [row] } = await db.query('SELECT bytes_tx::text, bytes_rx::text FROM flows WHERE hour = 51')
  assert.deepEqual(row, { bytes_tx: String(4n * BigInt(max)), bytes_rx: String(2n * BigInt(max) + 2n) })
  // The answer carries every digit: 36028797018963964 as a JSON number would read as ...960.
  const [total] = conforms(schemas.listFlows, await get(service.url, '/flows?hour=51')).body
  assert.deepEqual([total.bytes_tx, total.bytes_rx], [String(4n * BigInt(max)), String(2n * BigInt(max) + 2n)])
})

test('bad input is a 400 naming the index and field, never a 5xx, and stores nothing of the batch', async () => {
  const before = await storedTotals(db)
  const good = (i) => flow(`app${i}`, 'dest', 'vpc-9', 10, 20, 99)
  const withAt3 = (patch) => {
    const batch = [0, 1, 2, 3, 4].map(good)
    batch[3] = { ...batch[3], ...patch }
    for (const [k, v] of Object.entries(patch)) if (v === undefined) delete batch[3][k]
    return batch
  }
  const cases = [
    ['{"a": 1}', 'body must be array'],
    ['"flows"', 'body must be array'],
    ['[]', 'body must NOT have fewer than 1 items'],
    ['[1]', 'body/0 must be object'],
    ['[{"src_app": "a"', 'body is not valid JSON'],
    [JSON.stringify([good(0), { ...good(1), bytes: 5 }]), 'body/1/bytes is not allowed'],
    ['[{"__proto__": {"src_app": "x"}}]', 'body must not have a "__proto__"'],
    [JSON.stringify(Array.from({ length: 10_001 }, (_, i) => good(i))), 'body must NOT have more than 10000 items']
  ]
  for (const field of ['src_app', 'dest_app', 'vpc_id', 'bytes_tx', 'bytes_rx', 'hour']) {
    cases.push([withAt3({ [field]: undefined }), `body/3/${field} is required`])
    cases.push([withAt3({ [field]: null }), `body/3/${field} must be`])
    cases.push([
      withAt3({ [field]: [field.startsWith('bytes') || field === 'hour' ? 1 : 'x'] }),
      `body/3/${field} must be`
    ])
  }
  for (const field of ['src_app', 'dest_app', 'vpc_id']) {
    cases.push([withAt3({ [field]: '' }), `body/3/${field} must NOT have fewer than 1 characters`])
    cases.push([withAt3({ [field]: 'x'.repeat(201) }), `body/3/${field} must NOT have more than 200 characters`])
    cases.push([withAt3({ [field]: 'nul\u0000byte' }), `body/3/${field} must not contain NUL`])
    cases.push([withAt3({ [field]: 'lone \ud800' }), `body/3/${field} must not contain NUL`])
    cases.push([withAt3({ [field]: '\udfffx' }), `body/3/${field} must not contain NUL`])
    cases.push([withAt3({ [field]: 7 }), `body/3/${field} must be string`])
  }
  for (const field of ['bytes_tx', 'bytes_rx', 'hour']) {
    cases.push([withAt3({ [field]: -1 }), `body/3/${field} must be >= 0`])
    cases.push([withAt3({ [field]: 1.5 }), `body/3/${field} must be integer`])
    cases.push([withAt3({ [field]: '7' }), `body/3/${field} must be integer`])
    cases.push([withAt3({ [field]: true }), `body/3/${field} must be integer`])
    cases.push([withAt3({ [field]: 1e300 }), `body/3/${field} must be <=`])
  }
  cases.push([withAt3({ bytes_tx: 2 ** 53 }), 'body/3/bytes_tx must be <= 9007199254740991'])
  cases.push([withAt3({ hour: 2 ** 31 }), 'body/3/hour must be <= 2147483647'])
  for (const [body, message] of cases) {
    const res = conforms(postSchema, await post(service.url, body))
    const sent = typeof body === 'string' ? body.slice(0, 40) : JSON.stringify(body[3])
    const label = `${sent}: ${JSON.stringify(res.body)}`
    assert.equal(res.status, 400, label)
    assert.ok(res.body.message.startsWith(message), label)
  }
  const idempotency = await post(service.url, [good(1)], { 'idempotency-key': 'k'.repeat(201) })
  assert.equal(idempotency.status, 400)
  assert.match(idempotency.body.message, /^headers\/idempotency-key/)

  // Larger than FLOWS_BODY_LIMIT (4 MiB): 413 before parsing.
  const huge = await postLarge(service.url, 4 * 1024 * 1024 + 1)
  assert.equal(huge.status, 413)
  assert.equal(huge.body.error, 'Payload Too Large')
  // Only JSON is read: any other media type is a 415, as on every route.
  const text = await post(service.url, '[]', { 'content-type': 'text/plain' })
  assert.deepEqual([text.status, text.body.message], [415, 'body must be application/json (got text/plain)'])
  // Bytes that are not UTF-8 are refused, not stored as U+FFFD.
  const latin1 = await raw(service.url, 'POST', '/flows', {
    headers: { 'content-type': 'application/json' },
    body: Buffer.from('[{"src_app":"caf\xe9","dest_app":"d","vpc_id":"v",' +
      '"bytes_tx":1,"bytes_rx":1,"hour":99}]', 'latin1')
  })
  assert.deepEqual([latin1.status, latin1.json.message], [400, 'body is not valid UTF-8'])

  const hours = {
    '/flows': 'querystring/hour is required',
    '/flows?hour=': 'querystring/hour must be integer',
    '/flows?hour=-1': 'querystring/hour must be >= 0',
    '/flows?hour=1.5': 'querystring/hour must be integer',
    '/flows?hour=abc': 'querystring/hour must be integer',
    '/flows?hour=2147483648': 'querystring/hour must be <= 2147483647',
    '/flows?hour=99999999999999999999999': 'querystring/hour must be <= 2147483647',
    "/flows?hour=1'%20OR%201=1": 'querystring/hour must be integer',
    '/flows?hour=1&hour=2': 'querystring/hour must be integer',
    '/flows?hour=0x63': 'querystring/hour must be integer',
    '/flows?hour=%2B63': 'querystring/hour must be integer',
    '/flows?hour=063': 'querystring/hour must be integer',
    '/flows?hour=99&limit=0': 'querystring/limit must be >= 1',
    '/flows?hour=99&limit=10001': 'querystring/limit must be <= 10000',
    '/flows?hour=99&after_src_app=%00':
      'querystring/after_src_app must not contain NUL (\\u0000) or an unpaired surrogate (\\uD800-\\uDFFF)'
  }
  for (const [path, message] of Object.entries(hours)) {
    const res = conforms(schemas.listFlows, await get(service.url, path))
    assert.equal(res.status, 400, path)
    assert.equal(res.body.message, message, path)
  }
  for (const [method, path] of [['GET', '/nope'], ['GET', '/flows/1']]) {
    const res = await fetch(service.url + path, { method })
    assert.equal(res.status, 404, `${method} ${path}`)
    assert.equal((await res.json()).error, 'Not Found')
  }
  for (const method of ['PUT', 'DELETE', 'PATCH']) {
    const res = await fetch(service.url + '/flows', { method })
    assert.equal(res.status, 405, method)
    assert.equal(res.headers.get('allow'), 'GET, HEAD, OPTIONS, POST')
  }
  // Answered before a body is read: a body Fastify would refuse (415) is not looked at.
  const plain = { body: 'x', headers: { 'content-type': 'text/plain' } }
  for (const [method, path, status] of [['PUT', '/flows', 405], ['POST', '/nope', 404], ['QUERY', '/nope', 404]]) {
    const res = await fetch(service.url + path, { method, ...plain })
    assert.equal(res.status, status, `${method} ${path}`)
    assert.match(res.headers.get('x-request-id'), /^[\w-]+$/, 'an unknown path is answered with its request id')
  }
  const options = await fetch(service.url + '/flows', { method: 'OPTIONS' })
  assert.equal(options.status, 204)
  assert.equal(options.headers.get('allow'), 'GET, HEAD, OPTIONS, POST')
  assert.deepEqual(await storedTotals(db), before, 'no bad batch wrote anything')
})

test('Idempotency-Key: a batch sent again, even concurrently, counts once', async () => {
  const batch = [flow('idem', 'x', 'v', 5, 7, 60), flow('idem', 'x', 'v', 1, 1, 60)]
  const first = await post(service.url, batch, { 'idempotency-key': 'batch-1' })
  assert.deepEqual(first.body, { stored: 2 })
  const again = await post(service.url, batch, { 'idempotency-key': 'batch-1' })
  assert.deepEqual(again.body, { stored: 2, replayed: true })
  const racing = await Promise.all(
    Array.from({ length: 20 }, () => post(service.url, batch, { 'idempotency-key': 'batch-2' }))
  )
  assert.ok(racing.every((r) => r.status === 200))
  assert.equal(racing.filter((r) => !r.body.replayed).length, 1, 'exactly one of the racing copies counted')
  assert.equal((await post(service.url, batch)).status, 200) // no key: counted
  const [row] = (await get(service.url, '/flows?hour=60')).body
  assert.deepEqual([row.bytes_tx, row.bytes_rx], ['18', '24'])
})

test('Idempotency-Key reused with another batch is a 422 that says so, and stores nothing of it', async () => {
  const batch = [flow('reuse', 'x', 'v', 5, 7, 61)]
  assert.deepEqual((await post(service.url, batch, { 'idempotency-key': 'reuse-1' })).body, { stored: 1 })
  // The same records, keys in another order and other spacing: the same batch, a replay.
  const reordered = '[{"hour":61, "vpc_id":"v","bytes_rx":7,"bytes_tx":5,"dest_app":"x","src_app":"reuse"}]'
  assert.deepEqual(
    (await post(service.url, reordered, { 'idempotency-key': 'reuse-1' })).body,
    { stored: 1, replayed: true }
  )
  for (const other of [
    [flow('reuse', 'x', 'v', 5, 8, 61)],
    [...batch, ...batch],
    [flow('other', 'x', 'v', 5, 7, 61)]
  ]) {
    const res = conforms(postSchema, await post(service.url, other, { 'idempotency-key': 'reuse-1' }))
    assert.equal(res.status, 422, JSON.stringify(other))
    assert.equal(res.body.message,
      'Idempotency-Key "reuse-1" was already used with a different batch: nothing of this batch was stored')
  }
  // Concurrently (in one group, or on two workers): whichever batch arrives first counts; a copy of
  // it replays, the other batch is refused. Which one is first is the race's, not the test's.
  const other = [flow('reuse', 'x', 'v', 1, 1, 61)]
  const sent = [batch, batch, other]
  const racing = await Promise.all(sent.map((b) => post(service.url, b, { 'idempotency-key': 'reuse-2' })))
  const counted = racing.filter((r) => r.status === 200 && !r.body.replayed)
  assert.equal(counted.length, 1, 'one of the racing batches counted')
  const won = sent[racing.indexOf(counted[0])]
  assert.deepEqual(racing.map((r) => r.status), sent.map((b) => b === won ? 200 : 422))
  assert.equal(racing.filter((r) => r.body.replayed).length, won === batch ? 1 : 0,
    'the copy of the counted batch replays')
  const [row] = (await get(service.url, '/flows?hour=61')).body
  const sum = (field) => String(batch[0][field] + won[0][field])
  assert.deepEqual([row.bytes_tx, row.bytes_rx], [sum('bytes_tx'), sum('bytes_rx')],
    'each key counted its batch once, the other batches not at all')
})

test('keys that differ only in unpaired surrogates are refused, not merged into one', async () => {
  const res = await post(service.url, [flow('a\ud800', 'x', 'v', 1, 1, 62), flow('a\ud801', 'x', 'v', 1, 1, 62)])
  assert.equal(res.status, 400)
  assert.match(res.body.message, /^body\/0\/src_app must not contain NUL/)
  assert.deepEqual((await get(service.url, '/flows?hour=62')).body, [])
})

test('GET /flows pages an hour by keyset: limit bounded, Link to the next page, every key once, in order', async () => {
  const keys = Array.from({ length: 2345 },
    (_, i) => flow(`s${String(i % 50).padStart(2, '0')}`, `d${i}`, i % 3 ? 'v' : 'v é', 1, i, 63))
  for (let i = 0; i < keys.length; i += 1000) {
    assert.equal((await post(service.url, keys.slice(i, i + 1000))).status, 200)
  }
  const expected = keys.map((f) => [f.src_app, f.dest_app, f.vpc_id])
    .sort((a, b) => Buffer.compare(Buffer.from(a.join('\0')), Buffer.from(b.join('\0'))))
  // The default page is 1000 keys; the seed's client, asking with hour alone, gets the first of them.
  const first = conforms(schemas.listFlows, await get(service.url, '/flows?hour=63'))
  assert.equal(first.body.length, 1000)
  const seen = []
  let next = '/flows?hour=63&limit=700'
  let pages = 0
  while (next) {
    const page = conforms(schemas.listFlows, await get(service.url, next))
    assert.ok(page.body.length <= 700)
    seen.push(...page.body.map((f) => [f.src_app, f.dest_app, f.vpc_id]))
    next = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1]
    pages++
  }
  assert.equal(pages, 4)
  assert.deepEqual(seen, expected)
  assert.deepEqual(first.body.map((f) => [f.src_app, f.dest_app, f.vpc_id]), expected.slice(0, 1000))
  // A cursor part left out counts as '': after (s48~) alone starts at s49's first key.
  const tail = (await get(service.url, '/flows?hour=63&limit=10000&after_src_app=s48~')).body
  assert.deepEqual(tail.map((f) => [f.src_app, f.dest_app, f.vpc_id]), expected.filter(([s]) => s === 's49'))
})

test('every route answers bad requests with the one error body, a status its OpenAPI declares', async () => {
  assert.ok(await checkErrorContract(service.url, { bodyLimits: { 'POST /flows': 4 * 1024 * 1024 } }) > 30)
})

test('group commit: concurrent POSTs share flushes, and each is answered after its commit', async () => {
  const scrape = async () => (await get(service.url, '/metrics')).body
  const before = await scrape()
  const n = 300
  const results = await Promise.all(Array.from({ length: n }, (_, i) =>
    post(service.url, [flow('hot', 'hot', 'v', 1, 2, 70), flow(`spread${i}`, 'x', 'v', 1, 1, 70)])))
  assert.ok(results.every((r) => r.status === 200))
  const now = await scrape()
  const delta = (name, labels) => metric(now, name, labels) - metric(before, name, labels)
  const flushes = delta('flows_flush_requests_count')
  assert.equal(delta('flows_flush_requests_sum'), n, 'every request went through a flush')
  assert.equal(delta('flows_records_committed_total'), 2 * n)
  assert.ok(flushes < n / 3, `${n} requests in ${flushes} flushes`)
  const hot = (await get(service.url, '/flows?hour=70')).body.find((f) => f.src_app === 'hot')
  assert.deepEqual([hot.bytes_tx, hot.bytes_rx], [String(n), String(2 * n)])
})

test('with identical GETs polling a page, a GET always sees every POST acknowledged before it was sent', async () => {
  // 16 clients poll the same page without a pause, so its GETs share queries; any cache of the
  // answer would miss the POST acknowledged just before. (That a shared read never joins a query begun
  // before it arrived, a window too short to hit here at will, is the kit's sharedReads test.)
  let done = false
  const crowd = keepAliveLoad({ url: service.url, paths: ['/flows?hour=71'], clients: 16, until: () => done })
  try {
    for (let i = 1; i <= 60; i++) {
      assert.equal((await post(service.url, [flow('raw', 'x', 'v', 1, 2, 71)])).status, 200)
      const res = conforms(schemas.listFlows, await get(service.url, '/flows?hour=71'))
      assert.deepEqual([res.body[0].bytes_tx, res.body[0].bytes_rx], [String(i), String(2 * i)], `after POST ${i}`)
    }
  } finally {
    done = true
  }
  const { statuses, errors } = await crowd
  assert.deepEqual(errors, {})
  assert.deepEqual(Object.keys(statuses), ['200'])
})

test('the OpenAPI document describes both routes and their limits', async () => {
  const doc = (await get(service.url, '/docs/json')).body
  assert.ok(doc.paths['/flows'].get)
  assert.ok(doc.paths['/flows'].post.responses['413'])
  assert.match(doc.paths['/flows'].post.description, /At most 10000 records/)
})

test('a failed flush answers every request of its group 503 + Retry-After and stores none of it', async () => {
  const url = await flowsDatabase()
  const own = new pg.Client({ connectionString: url })
  await own.connect()
  // A wide window so that all requests below form one group; a trigger fails any flush holding 'poison'.
  const svc = await startFlows({ DATABASE_URL: url, FLOWS_BATCH_WINDOW_MS: '300' })
  try {
    await own.query(`CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.src_app = 'poison' THEN RAISE EXCEPTION 'poisoned flush'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER poison BEFORE INSERT ON flows FOR EACH ROW EXECUTE FUNCTION poison()`)
    const batches = Array.from({ length: 10 }, (_, i) => [flow(`good${i}`, 'x', 'v', 1, 1, 1)])
    batches.push([flow('poison', 'x', 'v', 1, 1, 1)])
    const results = await Promise.all(batches.map((b) => post(svc.url, b)))
    for (const r of results) {
      assert.equal(r.status, 503)
      assert.equal(r.headers.get('retry-after'), '1')
      assert.deepEqual(r.body,
        { statusCode: 503, error: 'Service Unavailable', message: 'the batch was not stored, retry shortly' })
    }
    assert.equal((await own.query('SELECT count(*)::int AS n FROM flows')).rows[0].n, 0)
    await own.query('DROP TRIGGER poison ON flows')
    const retried = await Promise.all(batches.map((b) => post(svc.url, b)))
    assert.ok(retried.every((r) => r.status === 200))
    assert.equal((await own.query('SELECT count(*)::int AS n FROM flows')).rows[0].n, 11)

    // A data error (a total past bigint) fails only the request that causes it, not its group.
    await own.query("INSERT INTO flows VALUES (2, 'full', 'x', 'v', 9223372036854775000, 0)")
    const mixed = await Promise.all([
      post(svc.url, [flow('full', 'x', 'v', Number.MAX_SAFE_INTEGER, 0, 2)]),
      post(svc.url, [flow('fine', 'x', 'v', 3, 4, 2)])
    ])
    assert.equal(mixed[0].status, 422)
    // In the API's words, not PostgreSQL's.
    assert.equal(mixed[0].body.message,
      'a total of this batch would pass 9223372036854775807 (2^63-1): nothing of it was stored')
    assert.equal(mixed[1].status, 200)
    const totals = (await get(svc.url, '/flows?hour=2')).body
    assert.deepEqual(totals.map((f) => [f.src_app, f.bytes_tx]), [['fine', '3'], ['full', '9223372036854775000']])
  } finally {
    await svc.stop()
    await own.end()
  }
})
