// The one scenario source (k6/scenarios.js) and the k6 scripts that read it, checked without k6:
// the scripts parse; loaded in Node with stand-ins for k6/http and k6/execution (k6-stubs/), their
// options are scenarios.js's for their environment and their iterations send what the scenario
// draws — the profile's read-modify-write sending the ETag its read got. The local runner draws
// from the same functions (lib/vegeta.js: attackScenario).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { register } from 'node:module'
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { scenario, k6Options, settings, maxInFlight, slo, SLO, DEFAULTS, SCENARIO_NAMES } from '../k6/scenarios.js'

register('./k6-stubs/hooks.js', import.meta.url)
const SCRIPTS = fileURLToPath(new URL('../k6/', import.meta.url))

// Park–Miller: deterministic draws.
function seeded (seed) {
  let s = seed
  return () => (s = (s * 16807) % 2147483647) / 2147483647
}

let fresh = 0
/** A k6 script loaded anew with `env` as __ENV, and a fresh request log. */
async function load (script, env = {}, respond) {
  globalThis.__ENV = env
  globalThis.k6stub = { requests: [], respond, iteration: 0 }
  return import(`../k6/${script}.js?load=${fresh++}`)
}

test('every k6 script parses (node --check)', () => {
  const files = readdirSync(SCRIPTS).filter((f) => f.endsWith('.js'))
  assert.ok(files.length >= 8, files.join())
  for (const f of files) {
    const r = spawnSync(process.execPath, ['--check', SCRIPTS + f], { encoding: 'utf8' })
    assert.equal(r.status, 0, `${f}: ${r.stderr}`)
  }
})

test('each script\'s options are scenarios.js\'s for its environment: ' +
  'executor, rate, VUs, SLO thresholds', async () => {
  for (const s of SCENARIO_NAMES) {
    assert.deepEqual((await load(s)).options, k6Options({}, [s]), s)
    const env = { RATE: '50', DURATION: '5s', [`${s.toUpperCase()}_P95_MS`]: '80', ERROR_RATE: '0.05' }
    assert.deepEqual((await load(s, env)).options, k6Options(env, [s]), s)
  }
  const { options } = await load('product')
  assert.equal(options.scenarios.product.executor, 'constant-arrival-rate')
  assert.equal(options.scenarios.product.rate, DEFAULTS.rate)
  assert.deepEqual(options.thresholds['http_req_duration{scenario:product}'],
    [`p(95)<=${SLO.p95Ms}`, `p(99)<=${SLO.p99Ms}`])
  assert.deepEqual(options.thresholds['http_req_failed{scenario:product}'], [`rate<${SLO.errorRate}`])
  assert.deepEqual(options.thresholds['dropped_iterations{scenario:product}'],
    [`rate<=${DEFAULTS.rate * SLO.maxDropped}`])
  const fixed = (await load('menu', { EXECUTOR: 'iterations', ITERATIONS: '300', VUS: '8' })).options
  assert.deepEqual(fixed.scenarios.menu, {
    exec: 'menu',
    startTime: '0s',
    gracefulStop: '5s',
    executor: 'shared-iterations',
    vus: 8,
    iterations: 300,
    maxDuration: '10m'
  })
  assert.equal(fixed.thresholds['dropped_iterations{scenario:menu}'], undefined)
  const suite = await load('suite', { SCENARIOS: 'product,flows', PRODUCT_RATE: '7' })
  assert.deepEqual(suite.options, k6Options({ SCENARIOS: 'product,flows', PRODUCT_RATE: '7' }, ['product', 'flows']))
  assert.equal(typeof suite.flows, 'function')
  assert.deepEqual(Object.keys((await load('suite')).options.scenarios), SCENARIO_NAMES)
})

test('a script\'s iterations send the scenario\'s requests, named by route, ' +
  '404/412 accepted where the route says', async () => {
  const mod = await load('product', { BASE_URL: 'http://a:1,http://b:2', IDS: '1-50' })
  const s = scenario('product', { IDS: '1-50' })
  for (let i = 0; i < 400; i++) { globalThis.k6stub.iteration = i; mod.default() }
  const { requests } = globalThis.k6stub
  assert.equal(requests.length, 400)
  requests.forEach((r, i) => {
    assert.ok(r.url.startsWith(i % 2 ? 'http://b:2/' : 'http://a:1/'), `round robin over BASE_URL: ${r.url}`)
    assert.equal(s.classify(r.method, r.url).name, r.params.tags.name)
    const byId = r.params.tags.name !== 'GET /products'
    assert.deepEqual(r.params.responseCallback, byId ? { expectedStatuses: [{ min: 200, max: 399 }, 404] } : undefined,
      r.params.tags.name)
  })
  assert.deepEqual(new Set(requests.map((r) => r.params.tags.name)), new Set(Object.keys(s.routes)))
})

test('the profile\'s read-modify-write sends the ETag its read returned, with If-Match, to the same instance; ' +
  'no write after a 404', async () => {
  const env = { WRITE_SHARE: '1', WRITE_MIX: 'put:1,patch:1', BASE_URL: 'http://a:1,http://b:2' }
  const mod = await load('profile', env, (r) =>
    (r.method === 'GET' ? { status: 200, headers: { Etag: '"7"' } } : { status: 200, headers: {} }))
  for (let i = 0; i < 50; i++) { globalThis.k6stub.iteration = i; mod.default() }
  const { requests } = globalThis.k6stub
  assert.equal(requests.length, 100)
  for (let i = 0; i < 100; i += 2) {
    const [read, write] = [requests[i], requests[i + 1]]
    assert.equal(read.method, 'GET')
    assert.ok(['PUT', 'PATCH'].includes(write.method))
    assert.equal(write.url, read.url, 'the write goes to what was read, on the same instance')
    assert.equal(write.params.headers['if-match'], '"7"')
    assert.equal(write.params.headers['content-type'], 'application/json')
    assert.deepEqual(write.params.responseCallback, { expectedStatuses: [{ min: 200, max: 399 }, 412] })
    assert.doesNotThrow(() => JSON.parse(write.body))
  }
  const gone = await load('profile', env, () => ({ status: 404, headers: {} }))
  for (let i = 0; i < 10; i++) gone.default()
  assert.equal(globalThis.k6stub.requests.length, 10, 'a read that found nothing writes nothing')
})

test('a refused connection is sent again, any method, at most 3 tries; a reset or a timeout never is', async () => {
  // The flows script POSTs: a refused try was never sent, so the same POST goes again.
  const refusedTwice = (r) => (globalThis.k6stub.requests.filter((q) => q.url === r.url).length < 2
    ? { status: 0, error_code: 1212, headers: {} }
    : { status: 200, headers: {} })
  const flows = await load('flows', { POST_SHARE: '1' }, refusedTwice)
  flows.default()
  const sent = globalThis.k6stub.requests
  assert.equal(sent.length, 3)
  assert.equal(sent[0].method, 'POST')
  assert.ok(sent.every((q) => q.method === sent[0].method && q.url === sent[0].url && q.body === sent[0].body),
    'the same request each time')

  const refused = await load('product', {}, () => ({ status: 0, error_code: 1212, headers: {} }))
  assert.equal(refused.default().error_code, 1212, 'after the last try, its answer is the iteration\'s')
  assert.equal(globalThis.k6stub.requests.length, 3, 'bounded: 3 tries')

  for (const [code, what] of [[1220, 'reset by peer'], [1211, 'dial timeout'], [1050, 'request timeout']]) {
    const mod = await load('flows', { POST_SHARE: '1' }, () => ({ status: 0, error_code: code, headers: {} }))
    mod.default()
    assert.equal(globalThis.k6stub.requests.length, 1, `${what}: the POST may have been applied; it is not sent again`)
  }
})

test('every scenario draws only its declared routes, each classified back to its name, ' +
  'in the mix\'s proportions', () => {
  const base = 'http://127.0.0.1:1'
  for (const name of SCENARIO_NAMES) {
    const s = scenario(name, { IDS: '1-500', WRITE_SHARE: '0.5' })
    const rand = seeded(7)
    const counts = {}
    for (let i = 0; i < 20000; i++) {
      let r = s.draw(rand)
      if (r.then) {
        assert.equal(s.classify(r.method, base + r.path).name, r.name)
        r = r.then('"1"')
        assert.equal(r.headers['if-match'], '"1"')
      }
      assert.ok(r.name in s.routes, `${name}: ${r.name}`)
      assert.equal(s.classify(r.method, base + r.path).name, r.name, `${name}: ${r.method} ${r.path}`)
      counts[r.name] = (counts[r.name] ?? 0) + 1
    }
    assert.deepEqual(Object.keys(counts).sort(), Object.keys(s.routes).sort(), `${name} reaches every route`)
  }
  const product = scenario('product')
  const rand = seeded(3)
  const lists = Array.from({ length: 20000 }, () => product.draw(rand))
    .filter((r) => r.name === 'GET /products').length / 20000
  assert.ok(Math.abs(lists - 0.2) < 0.01, `list share ${lists}, MIX list:2 of 10`)
  const { classify } = scenario('profile')
  assert.equal(classify('PUT', 'http://x/restaurants/3').expected(412), true)
  assert.equal(classify('PUT', 'http://x/restaurants/3').expected(409), false)
  assert.equal(classify('GET', 'http://x/restaurants/3/profile').expected(404), true)
  assert.equal(classify('POST', 'http://x/restaurants').expected(404), false)
  assert.equal(classify('GET', 'http://x/restaurants/3').expected(500), false)
})

test('flows POSTs carry a batch and a fresh Idempotency-Key each', () => {
  const s = scenario('flows', { POST_SHARE: '1', BATCH: '3' })
  const keys = new Set()
  for (let i = 0; i < 1000; i++) {
    const r = s.draw(Math.random)
    assert.equal(r.body.length, 3)
    keys.add(r.headers['idempotency-key'])
  }
  assert.equal(keys.size, 1000)
})

test('settings: per scenario before global, numbers checked by name, ' +
  'SLOs and in-flight caps from the one source', () => {
  const s = settings({ RATE: '5', PRODUCT_RATE: '9', IDS: '' }, 'product')
  assert.equal(s.number('RATE', 1), 9)
  assert.equal(settings({ RATE: '5' }, 'menu').number('RATE', 1), 5)
  assert.equal(s.get('IDS', 'x'), 'x', 'empty is unset')
  assert.throws(() => settings({ RATE: 'fast' }, 'menu').number('RATE', 1), /RATE must be a number \(got "fast"\)/)
  assert.throws(() => scenario('nope'), /unknown scenario nope: one of product, profile, menu, flows/)
  assert.throws(() => scenario('menu', { IDS: '9-1' }), /lo-hi/)
  assert.deepEqual(slo({}, 'menu'), SLO)
  assert.equal(slo({ MENU_P99_MS: '300' }, 'menu').p99Ms, 300)
  assert.deepEqual([
    maxInFlight({}, 'menu', 1),
    maxInFlight({}, 'menu', 500),
    maxInFlight({}, 'menu', 1e5),
    maxInFlight({ MAX_VUS: '64' }, 'menu', 1e5)
  ], [20, 500, 2000, 64])
})

test('a run plan: a ladder\'s steps and a matrix\'s repeats are scenarios of one k6 run, one after another, ' +
  'each with its own SLOs and testid', async () => {
  const ladder = k6Options({
    PLAN: 'ladder', STEPS: '1,10,100', STEP_SECONDS: '20', PAUSE_SECONDS: '10', TESTID: 'lt-ladder-a', MENU_IDS: '1-9'
  }, ['product', 'menu'])
  assert.deepEqual(Object.keys(ladder.scenarios),
    ['product_1rps', 'product_10rps', 'product_100rps', 'menu_1rps', 'menu_10rps', 'menu_100rps'])
  assert.deepEqual(Object.values(ladder.scenarios).map((s) => [s.exec, s.rate, s.duration, s.startTime]), [
    ['product', 1, '20s', '0s'], ['product', 10, '20s', '30s'], ['product', 100, '20s', '60s'],
    ['menu', 1, '20s', '90s'], ['menu', 10, '20s', '120s'], ['menu', 100, '20s', '150s']
  ])
  assert.equal(ladder.scenarios.menu_10rps.tags.testid, 'lt-ladder-a-menu-10rps')
  assert.deepEqual(ladder.thresholds['dropped_iterations{scenario:product_100rps}'], [`rate<=${100 * SLO.maxDropped}`])
  assert.deepEqual(ladder.thresholds['http_req_duration{scenario:menu_1rps}'],
    [`p(95)<=${SLO.p95Ms}`, `p(99)<=${SLO.p99Ms}`])
  const matrix = k6Options({ PLAN: 'matrix', REPEAT: '3', SLOT_SECONDS: '100', ITERATIONS: '500', VUS: '4' }, ['flows'])
  assert.deepEqual(
    Object.values(matrix.scenarios).map((s) => [s.executor, s.iterations, s.vus, s.maxDuration, s.startTime, s.tags]),
    [1, 2, 3].map((n) => ['shared-iterations', 500, 4, '100s', `${(n - 1) * 100}s`, undefined])
  )
  assert.deepEqual(Object.keys(matrix.scenarios), ['flows_run1', 'flows_run2', 'flows_run3'])
  assert.equal(matrix.thresholds['dropped_iterations{scenario:flows_run1}'], undefined)
  // The chart's one TestRun per run loads suite.js with the plan in its environment.
  const suite = await load('suite', { SCENARIOS: 'profile', PLAN: 'ladder', STEPS: '5,50' })
  assert.deepEqual(Object.keys(suite.options.scenarios), ['profile_5rps', 'profile_50rps'])
  assert.throws(() => k6Options({ PLAN: 'soak' }, ['menu']), /PLAN must be run, ladder or matrix/)
  assert.throws(() => k6Options({ PLAN: 'ladder', STEPS: '1,x' }, ['menu']), /STEPS must list rates above 0/)
  assert.throws(() => k6Options({ PLAN: 'matrix', REPEAT: '0' }, ['menu']), /REPEAT must be a number above 0/)
})
