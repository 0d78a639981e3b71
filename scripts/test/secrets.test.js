// No secret is ever printed: the suite runs with a known PostgreSQL and Redis password — in the URLs
// and apart from them, right and wrong, through config errors, migrate, load, every service
// under requests and Redis faults, and npm start — and the password is in no log line, no answer
// body or header, and no /metrics.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import Redis from 'ioredis'
import { startRedis, startService, freePortBlock, get, send } from '@suite/kit/testing'
import { adminUrl } from '@suite/kit/testing/env'
import { generate } from '../../services/product/etl/index.js'
import { NAMES, PORT_OFFSETS, serviceNamed } from '../../services/list.js'

const KNOWN = `Kn0wn-${randomBytes(8).toString('hex')}`
const WRONG = `Wr0ng-${randomBytes(8).toString('hex')}`
const cli = (service) => fileURLToPath(new URL(`../../services/${service}/src/cli.js`, import.meta.url))
const SERVICES = NAMES // services/list.js
const VERBOSE = { LOG_LEVEL: 'trace', LOG_REQUESTS: 'true' }

// Everything the suite printed or answered, to search for the passwords at the end.
const seen = []
const keep = (what, text) => seen.push([what, String(text)])

/** Runs `node cli(service) ...args` with env; resolves to { code, out } (stdout and stderr). */
function run (service, args, env, { until } = {}) {
  const { DATABASE_URL, DATABASE_PASSWORD, REDIS_URL, REDIS_PASSWORD, ...base } = process.env
  const child = spawn(process.execPath, [service.endsWith('.js') ? service : cli(service), ...args], {
    env: { ...base, ...VERBOSE, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { out += d })
  return {
    child,
    out: () => out,
    exited: new Promise((resolve) => child.on('close', (code) => {
      keep(`${service} ${args.join(' ')}`, out)
      resolve({ code, out })
    }))
  }
}

/** Every request a client makes of a service: answers ok, 400, 404; health, metrics, docs. */
async function exercise (name, base) {
  // Its sample paths, and each again with its id or number made a word and made huge (400, 404).
  const { samples } = serviceNamed(name)
  const paths = [
    ...samples,
    ...samples.filter((p) => /\d/.test(p)).flatMap((p) => [p.replace(/\d+/, 'x'), p.replace(/\d+/, '999999')])
  ]
  for (const path of [...paths, '/healthz', '/readyz', '/metrics', '/docs/json', '/no/such/route']) {
    const r = await get(base, path)
    keep(`${name} GET ${path}`,
      `${r.status} ${JSON.stringify([...r.headers])} ${typeof r.body === 'string' ? r.body : JSON.stringify(r.body)}`)
  }
  if (name === 'flows') {
    const r = await send(base, 'POST', '/flows',
      [{ src_app: 'a', dest_app: 'b', vpc_id: 'v', bytes_tx: 1, bytes_rx: 2, hour: 1 }])
    keep('flows POST', `${r.status} ${JSON.stringify(r.body)}`)
  }
}

test('a known password is in no log line, no answer and no /metrics', { timeout: 600_000 }, async () => {
  // A role and a database of their own, with the known password (scram on the shared test server).
  const role = `secret_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${KNOWN}'`)
  await admin.query(`CREATE DATABASE ${role} OWNER ${role}`)
  await admin.end()
  const { port: pgPort } = new URL(adminUrl)
  const url = (password) => `postgres://${role}:${password}@127.0.0.1:${pgPort}/${role}`
  const bare = `postgres://${role}@127.0.0.1:${pgPort}/${role}`
  // A Redis that wants the known password.
  const redis = await startRedis()
  const setPassword = async () => {
    const r = new Redis(redis.url)
    await r.config('SET', 'requirepass', KNOWN)
    r.disconnect()
  }
  await setPassword()
  const redisUrl = (password) => `redis://:${password}@127.0.0.1:${redis.port}`
  const data = await mkdtemp(join(tmpdir(), 'secrets-'))
  const services = []
  let started = null // npm start
  try {
    // Settings that stop a command at once: each names the variable, never the password.
    for (const env of [
      { DATABASE_URL: `postgresql//suite:${KNOWN}@db:5432/suite` }, // the colon forgotten
      { DATABASE_URL: url(KNOWN), PORT: 'eighty' },
      { DATABASE_URL: url(KNOWN), REDIS_URL: `redis//:${KNOWN}@cache:6379` },
      { DATABASE_URL: bare, DATABASE_PASSWORD: KNOWN, WORKERS: 'many' }
    ]) {
      const r = await run('product', ['serve'], env).exited
      assert.equal(r.code, 1, r.out)
      assert.match(r.out, /config: /)
    }

    // migrate and load, right and wrong password.
    await generate({ out: data, products: 200, seed: 1 })
    for (const service of SERVICES) {
      const r = await run(service, ['migrate'], { DATABASE_URL: url(KNOWN) }).exited
      assert.equal(r.code, 0, r.out)
    }
    const loaded = await run('product', ['load', '--dir', data],
      { DATABASE_URL: bare, DATABASE_PASSWORD: KNOWN, REDIS_URL: redisUrl(KNOWN) }).exited
    assert.equal(loaded.code, 0, loaded.out)
    assert.notEqual((await run('product', ['migrate'], { DATABASE_URL: url(WRONG) }).exited).code, 0)
    assert.notEqual((await run('product', ['load', '--dir', data], { DATABASE_URL: url(WRONG) }).exited).code, 0)

    // Every service: the password in the URL (every other one) or apart.
    for (const [i, name] of SERVICES.entries()) {
      const db = i % 2
        ? { DATABASE_URL: bare, DATABASE_PASSWORD: KNOWN }
        : { DATABASE_URL: url(KNOWN), DATABASE_PASSWORD: KNOWN }
      const cache = i % 2
        ? { REDIS_URL: `redis://127.0.0.1:${redis.port}`, REDIS_PASSWORD: KNOWN }
        : { REDIS_URL: redisUrl(KNOWN) }
      services.push([name, await startService({
        entry: cli(name),
        env: { ...VERBOSE, WORKERS: '1', ...db, ...cache }
      })])
    }
    // Wrong passwords: up, but PostgreSQL and Redis refuse it; the answers are 503s.
    services.push(['product', await startService({
      entry: cli('product'),
      readyPath: '/healthz',
      env: {
        ...VERBOSE, WORKERS: '1', DATABASE_URL: url(WRONG), DATABASE_PASSWORD: WRONG, REDIS_URL: redisUrl(WRONG),
        START_WAIT_MS: '500' // Redis refusing the password is not waited for
      }
    })])
    for (const [name, svc] of services) await exercise(name, svc.url)
    // Redis stalled, then killed and back (without its password now: every AUTH fails).
    redis.pause()
    for (const [name, svc] of services) await exercise(name, svc.url)
    redis.resume()
    await redis.kill()
    for (const [name, svc] of services) await exercise(name, svc.url)
    await redis.start()
    await sleep(1500)
    for (const [name, svc] of services) await exercise(name, svc.url)
    await setPassword()
    for (const [name, svc] of services) {
      await svc.stop()
      keep(`${name} logs`, svc.logs())
    }
    services.length = 0

    // npm start on these servers: its own output and the services'.
    const port = await freePortBlock(PORT_OFFSETS) // npm start's ports
    started = run(fileURLToPath(new URL('../start.js', import.meta.url)), [], {
      PORT: String(port),
      SAMPLE_SIZE: '50',
      DATABASE_URL: url(KNOWN),
      REDIS_URL: redisUrl(KNOWN),
      LOG_LEVEL: 'info'
    })
    for (let i = 0; i < 1200 && !started.out().includes('Ctrl-C stops') && started.child.exitCode === null; i++) {
      await sleep(100)
    }
    assert.match(started.out(), /Ctrl-C stops/)
    assert.match(started.out(), /cache: redis:\/\/\*\*\*@127\.0\.0\.1:/)
    await exercise('product', `http://127.0.0.1:${port}`)
    started.child.kill('SIGTERM')
    assert.equal((await started.exited).code, 0)
  } finally {
    if (started?.child.exitCode === null) {
      started.child.kill('SIGTERM')
      await started.exited
    }
    for (const [, svc] of services) await svc.stop()
    await redis.stop()
    await rm(data, { recursive: true, force: true })
  }

  assert.ok(seen.length > 100, `${seen.length} outputs and answers looked at`)
  for (const [what, text] of seen) {
    for (const secret of [KNOWN, WRONG]) {
      const at = text.indexOf(secret)
      assert.equal(at, -1, `${what} shows a password: …${text.slice(Math.max(0, at - 200), at + 50)}…`)
    }
  }
})
