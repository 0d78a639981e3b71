// The kit's process model, tested on a real process: config errors, several worker threads on one
// port with one metrics view, crash replacement, graceful shutdown.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { Agent, request } from 'node:http'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { startService, get, metric } from '@suite/kit/testing'
import { adminUrl } from '@suite/kit/testing/env'

const entry = fileURLToPath(new URL('./fixture/cli.js', import.meta.url))
const start = (env = {}) => startService({ entry, env: { DATABASE_URL: adminUrl, ...env } })

// /readyz answers as soon as one worker listens; tests about several workers wait for all of them.
async function allWorkers (svc, n) {
  for (let i = 0; i < 200; i++) {
    if (metric((await get(svc.url, '/metrics')).body, 'service_workers') === n) return
    await sleep(25)
  }
  assert.fail(`${n} workers never all listened: ${svc.logs()}`)
}

// A GET on a connection of its own, so the kernel may hand it to any worker.
function getFresh (url) {
  return new Promise((resolve, reject) => {
    request(url, { agent: false }, (res) => {
      let body = ''
      res.on('data', (d) => { body += d })
      res.on('end', () => resolve({ status: res.statusCode, body }))
    }).on('error', reject).end()
  })
}

test('a bad or missing setting stops the process with one line naming it', () => {
  const run = (env) => spawnSync(process.execPath, [entry], {
    env: { PATH: process.env.PATH, ...env },
    encoding: 'utf8'
  })
  const missing = run({})
  assert.equal(missing.status, 1)
  assert.equal(missing.stderr.trim(), 'fixture serve: config: DATABASE_URL is required but not set')
  const bad = run({ DATABASE_URL: adminUrl, PORT: 'eighty' })
  assert.equal(bad.status, 1)
  assert.equal(bad.stderr.trim(), 'fixture serve: config: PORT must be integer (got "eighty")')
  const badUrl = run({ DATABASE_URL: 'mysql://x' })
  assert.match(badUrl.stderr.trim(), /^fixture serve: config: DATABASE_URL must match pattern/)
  const timeouts = run({ DATABASE_URL: adminUrl, HTTP_HEADERS_TIMEOUT_MS: '5000', HTTP_REQUEST_TIMEOUT_MS: '1000' })
  assert.equal(timeouts.status, 1)
  assert.equal(
    timeouts.stderr.trim(),
    'fixture serve: config: HTTP_HEADERS_TIMEOUT_MS must be at most HTTP_REQUEST_TIMEOUT_MS (got 5000 > 1000)'
  )
})

test('a wrong command line is one line, then the usage, and exit 2: ' +
  'unknown command, unknown option, missing value', () => {
  const run = (...args) => spawnSync(process.execPath, [entry, ...args], {
    env: { PATH: process.env.PATH, DATABASE_URL: adminUrl },
    encoding: 'utf8'
  })
  const unknown = run('fly')
  assert.equal(unknown.status, 2)
  assert.match(unknown.stderr, /^fixture: unknown command "fly"\n\nusage: node \S+ \[command\] \[options\]/)
  assert.match(unknown.stderr, /migrate +apply the SQL migrations/)
  const option = run('migrate', '--fast')
  assert.equal(option.status, 2)
  assert.match(
    option.stderr,
    /^fixture migrate: Unknown option '--fast'[^\n]*\n\nusage: node \S+ migrate \[options\]\n/
  )
  assert.match(option.stderr, new RegExp(
    '--wait SECONDS +while PostgreSQL is unreachable, retry this long; ' +
    'also the longest wait for each lock \\(at least 5\\) \\(default: 0\\)'
  ))
  const missing = run('migrate', '--wait')
  assert.equal(missing.status, 2)
  assert.match(missing.stderr, /^fixture migrate: Option '--wait <value>' argument missing\n/)
  const help = spawnSync(process.execPath, [entry, '--help'], { env: { PATH: process.env.PATH }, encoding: 'utf8' })
  assert.equal(help.status, 0, 'no settings needed for --help')
  assert.match(help.stdout, /^usage: node \S+ \[command\] \[options\]/)
})

test('the settings are validated once, in the main thread; the workers get them as they are', async () => {
  const svc = await start({ WORKERS: '2', FIXTURE_TRACE_CONFIG: '1' })
  try {
    await allWorkers(svc, 2)
    assert.deepEqual(
      svc.logs().match(/config validated in [a-z ]+/g),
      ['config validated in the main thread'],
      svc.logs()
    )
  } finally {
    await svc.stop()
  }
})

test('two workers serve one port and one scrape shows the sum of both', async () => {
  const svc = await start({ WORKERS: '2' })
  try {
    await allWorkers(svc, 2)
    const n = 200
    for (let i = 0; i < n; i += 20) {
      await Promise.all(Array.from({ length: 20 }, () => getFresh(`${svc.url}/slow`)))
    }
    for (let i = 0; i < 10; i++) {
      const text = (await getFresh(`${svc.url}/metrics`)).body
      assert.equal(
        metric(text, 'http_request_duration_seconds_count', { route: '/slow' }),
        n,
        'every scrape sees all requests'
      )
      assert.equal(metric(text, 'service_workers'), 2)
      const perWorker = [0, 1].map((w) => metric(text, 'http_requests_by_worker_total', { worker: w }))
      assert.ok(perWorker.every((c) => c > 0), `both workers served: ${perWorker}`)
      assert.ok(text.includes('process_cpu_seconds_total'), 'process metrics come once, from the main thread')
      assert.deepEqual(JSON.parse((await getFresh(`${svc.url}/thread`)).body), { mainThread: false })
      for (const worker of [0, 1]) {
        const [total, used] = ['total', 'used'].map((kind) => metric(text, 'worker_heap_bytes', { worker, kind }))
        assert.ok(used > 1e6 && used <= total, `worker ${worker}'s own heap: ${used} of ${total} bytes`)
      }
    }
  } finally {
    assert.equal((await svc.stop()).code, 0)
  }
})

test('each worker opens PG_POOL_MIN connections before it listens and keeps them open', async () => {
  const connections = async (svc) =>
    metric((await get(svc.url, '/metrics')).body, 'pg_pool_connections', { state: 'idle' })
  const fixed = await start({ WORKERS: '2', PG_POOL_MAX: '3' }) // PG_POOL_MIN unset: a fixed-size pool
  try {
    await allWorkers(fixed, 2)
    assert.equal(await connections(fixed), 6, 'both workers hold PG_POOL_MAX connections before any request')
  } finally {
    await fixed.stop()
  }
  const some = await start({ WORKERS: '1', PG_POOL_MAX: '3', PG_POOL_MIN: '1' })
  try {
    assert.equal(await connections(some), 1)
    // Three at once need three connections; the two above PG_POOL_MIN close only after 30 s idle.
    await Promise.all(Array.from({ length: 3 }, () => getFresh(`${some.url}/pg-sleep?ms=200`)))
    assert.equal(await connections(some), 3)
  } finally {
    await some.stop()
  }
})

test('one worker runs on the main thread: no thread of its own, one scrape with the process metrics', async () => {
  const svc = await start({ WORKERS: '1', LOG_LEVEL: 'info' })
  try {
    assert.deepEqual(JSON.parse((await getFresh(`${svc.url}/thread`)).body), { mainThread: true })
    await Promise.all(Array.from({ length: 20 }, () => getFresh(`${svc.url}/slow`)))
    const text = (await getFresh(`${svc.url}/metrics`)).body
    assert.equal(metric(text, 'http_request_duration_seconds_count', { route: '/slow' }), 20)
    assert.equal(metric(text, 'service_workers'), 1)
    // The one heap, read twice in one scrape (the worker's registry, then the process's): V8 may take
    // a page or a few (256 KB each) between the two reads, so equal within 1 MB.
    const heaps = [
      metric(text, 'worker_heap_bytes', { worker: 0, kind: 'total' }),
      metric(text, 'nodejs_heap_size_total_bytes')
    ]
    assert.ok(heaps[0] > 0 && Math.abs(heaps[0] - heaps[1]) <= 2 ** 20, `the one heap: ${heaps.join(' vs ')} bytes`)
    assert.match(svc.logs(), /with one worker, on the main thread/)
  } finally {
    assert.equal((await svc.stop()).code, 0)
  }
})

test('one worker: an error nothing catches shuts the process down gracefully, ' +
  'exit 1 (Kubernetes restarts it)', async () => {
  const svc = await start({ WORKERS: '1', LOG_LEVEL: 'info', SHUTDOWN_DELAY_MS: '100' })
  const inFlight = getFresh(`${svc.url}/slow?ms=300`)
  await sleep(50)
  await get(svc.url, '/crash')
  assert.equal((await inFlight).status, 200, 'the request in flight is answered')
  // SIGCONT: no signal of ours, only the wait for the exit.
  assert.deepEqual(await svc.stop('SIGCONT'), { code: 1, signal: null })
  assert.match(svc.logs(), /deliberate crash/)
})

test('a crashed worker is replaced and the port keeps answering', async () => {
  const svc = await start({ WORKERS: '2' })
  try {
    await allWorkers(svc, 2)
    await get(svc.url, '/crash')
    // Connections queued on the dying worker's socket at the instant it dies are reset, as with any
    // crashed process; from then on the other worker, and soon its replacement, answer everything.
    // Its listening socket is gone once the main thread logs the exit (a loaded machine takes seconds).
    for (let i = 0; i < 500 && !/worker exited/.test(svc.logs()); i++) await sleep(20)
    assert.match(svc.logs(), /worker exited/)
    for (let i = 0; i < 50; i++) assert.equal((await getFresh(`${svc.url}/slow`)).status, 200)
    let workers = 0
    for (let i = 0; i < 100 && workers !== 2; i++) {
      await sleep(50)
      workers = metric((await getFresh(`${svc.url}/metrics`)).body, 'service_workers')
    }
    assert.equal(workers, 2)
    assert.match(svc.logs(), /worker exited, starting a new one/)
  } finally {
    await svc.stop()
  }
})

test('SIGTERM: readiness fails at once, in-flight requests finish, exit 0', async () => {
  const svc = await start({ WORKERS: '2', SHUTDOWN_DELAY_MS: '300' })
  await allWorkers(svc, 2)
  const inflight = Array.from({ length: 20 }, () => getFresh(`${svc.url}/slow?ms=800`))
  await sleep(200)
  const stopped = svc.stop('SIGTERM')
  await sleep(50)
  const ready = await getFresh(`${svc.url}/readyz`)
  assert.equal(ready.status, 503)
  assert.equal(JSON.parse(ready.body).status, 'shutting down')
  const answers = await Promise.all(inflight)
  assert.deepEqual(answers.map((a) => a.status), Array(20).fill(200))
  assert.deepEqual(await stopped, { code: 0, signal: null })
})

test('SIGTERM with SHUTDOWN_IDLE_MS 0 (the dev loop): an idle keep-alive connection is closed at once, ' +
  'the request in flight answered, exit 0 within a grace of 1 s', async () => {
  const svc = await start({ WORKERS: '1', LOG_LEVEL: 'info', SHUTDOWN_IDLE_MS: '0', SHUTDOWN_GRACE_MS: '1000' })
  const agent = new Agent({ keepAlive: true })
  await new Promise((resolve, reject) => {
    request(`${svc.url}/slow`, { agent }, (res) => res.resume().on('end', resolve)).on('error', reject).end()
  })
  const idle = agent.freeSockets[Object.keys(agent.freeSockets)[0]][0]
  const closed = new Promise((resolve) => idle.once('close', resolve))
  const inFlight = getFresh(`${svc.url}/slow?ms=300`)
  await sleep(100)
  // With the default idle wait (1 s), the drain outlasts this grace: the process is killed, exit 1.
  assert.deepEqual(await svc.stop('SIGTERM'), { code: 0, signal: null })
  assert.equal((await inFlight).status, 200)
  await closed
  assert.doesNotMatch(svc.logs(), /killed by timeout/)
  agent.destroy()
})

test('SIGTERM: a request longer than SHUTDOWN_GRACE_MS is cut and the exit says so', async () => {
  const svc = await start({ WORKERS: '1', SHUTDOWN_GRACE_MS: '500' })
  const long = getFresh(`${svc.url}/slow?ms=10000`).catch((err) => err)
  await sleep(100)
  const t0 = Date.now()
  const { code } = await svc.stop('SIGTERM')
  assert.equal(code, 1)
  assert.ok(Date.now() - t0 < 3000, 'forced exit soon after the grace')
  assert.ok((await long) instanceof Error)
})

test('a worker whose start-up held its event loop answers its first requests instead of shedding them', async () => {
  const svc = await start({
    WORKERS: '1', FIXTURE_BUSY_START_MS: '2500', MAX_EVENT_LOOP_DELAY_MS: '1000', MAX_EVENT_LOOP_UTILIZATION: '0.98'
  })
  try {
    const statuses = []
    for (let i = 0; i < 10; i++) statuses.push((await get(svc.url, '/slow')).status)
    assert.deepEqual(statuses, Array(10).fill(200))
  } finally {
    await svc.stop()
  }
})

test('overload: the event loop lags, service routes answer 503 with Retry-After, health still answers', async () => {
  const svc = await start({ WORKERS: '1', MAX_EVENT_LOOP_DELAY_MS: '100' })
  try {
    const statuses = []
    let retryAfter
    for (let i = 0; i < 20 && !retryAfter; i++) {
      await Promise.all([get(svc.url, '/busy?ms=400'), get(svc.url, '/busy?ms=400')])
      const res = await get(svc.url, '/slow')
      statuses.push(res.status)
      if (res.status === 503) {
        retryAfter = res.headers.get('retry-after')
        assert.deepEqual(res.body, {
          statusCode: 503,
          error: 'Service Unavailable',
          message: 'service overloaded, retry shortly'
        })
        assert.equal((await get(svc.url, '/healthz')).status, 200)
      }
    }
    assert.equal(retryAfter, '1', `shed load at some point: ${statuses}`)
    // Once the hog stops, the service answers again.
    let status
    for (let i = 0; i < 50 && status !== 200; i++) {
      await sleep(100)
      status = (await get(svc.url, '/slow')).status
    }
    assert.equal(status, 200)
  } finally {
    await svc.stop()
  }
})

test('SIGTERM while the workers are still starting: a clean exit 0, not a kill', async () => {
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, DATABASE_URL: adminUrl, WORKERS: '2', PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  // The first log line comes from a worker while it starts; stop the process right then.
  await new Promise((resolve) => child.stdout.once('data', resolve))
  child.kill('SIGTERM')
  const [code, signal] = await new Promise((resolve) => child.on('exit', (c, s) => resolve([c, s])))
  assert.deepEqual({ code, signal }, { code: 0, signal: null }, out)
})

test('a second process on a port in use fails loudly instead of sharing it', async () => {
  const first = await start({ WORKERS: '2' })
  try {
    const second = spawnSync(process.execPath, [entry], {
      env: { ...process.env, DATABASE_URL: adminUrl, HOST: '127.0.0.1', PORT: String(first.port), LOG_LEVEL: 'info' },
      encoding: 'utf8',
      timeout: 15000
    })
    assert.equal(second.status, 1)
    assert.match(second.stdout, /the port is in use/)
  } finally {
    await first.stop()
  }
})
