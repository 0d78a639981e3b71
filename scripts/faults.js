// npm run test:faults: real faults under steady load, each printing requests sent, failures by kind,
// p99 while the fault lasts and seconds to recover, and checked:
//   postgres-killed       PostgreSQL killed with commits in flight (flows, clients resending with their
//                         Idempotency-Key): every acknowledged write kept, none counted twice
//   postgres-frozen       PostgreSQL frozen (SIGSTOP of every server process): reads and writes answered
//                         within 2 s
//   postgres-down         PostgreSQL down 20 s under writes: no worker crash, no exit, 503s, then full
//                         recovery
//   redis-frozen          Redis frozen: throughput of the cached service ≥ 50% of the same service
//                         without a cache
//   replicas-never-stale  profile, 2 replicas: no read stale more than 1 s after a write acknowledged on
//                         the other one, without Redis, and with a shared Redis frozen mid-run
//   sigterm-keep-alive    SIGTERM under keep-alive load, default SHUTDOWN_DELAY_MS: 0 connection resets
// Every server is its own (throwaway PostgreSQL and Redis on free loopback ports); services run with
// the kit's defaults, except load shedding (off: on a shared machine it would add 503s of its own).
// Exit 1 when a check fails. `node scripts/faults.js postgres-frozen redis-frozen` runs some of them.
import { fileURLToPath } from 'node:url'
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { attack } from '../loadtests/lib/vegeta.js'
import { migrate } from '@suite/kit'
import { startPostgres, startRedis, startService, get, metric } from '@suite/kit/testing'
import { startLoad, summarize, recovery } from './faults/load.js'
import { provisionFor } from './provision.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const cli = (service) => `${root}services/${service}/src/cli.js`
// The kit's own connect timeout (the test harness raises it for busy machines).
const DEFAULTS = { PG_CONNECT_TIMEOUT_MS: '1000', LOG_LEVEL: 'warn' }

const rows = []
const checks = []
const check = (name, ok, detail) => {
  checks.push({ name, ok })
  console.log(`${ok ? '✔' : '✖'} ${name}${detail ? ` — ${detail}` : ''}`)
}
const say = (m) => console.log(`  ${m}`)
function row (fault, whole, during, recovered) {
  const failures = Object.entries(whole.failures).map(([k, n]) => `${k}: ${n}`).join(', ') || 'none'
  const r = {
    fault,
    requests: whole.sent,
    failures,
    p99: `${Math.round(during.p99)} ms`,
    recovered: recovered === undefined ? '—' : recovered === null ? 'never' : `${recovered.toFixed(1)} s`
  }
  rows.push(r)
  console.log(`  requests ${r.requests}, failures ${r.failures}, p99 during the fault ${r.p99}, ` +
    `recovered in ${r.recovered}`)
}

async function database (server, service, seed) {
  const url = await server.createDatabase(service)
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    await migrate(c, { name: service, migrations: `${root}services/${service}/migrations` })
    if (seed) await c.query(seed)
  } finally {
    await c.end()
  }
  return url
}
async function query (url, text) {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try { return (await c.query(text)).rows } finally { await c.end() }
}
const start = (service, env) => startService({ entry: cli(service), env: { ...DEFAULTS, ...env } })

const PRODUCTS = 2000
const PRODUCT_SEED = `
  INSERT INTO products (id, seq, name, slogan, description, category, default_price)
    SELECT i, i, 'Product ' || i, 's', 'd', 'c', 10 FROM generate_series(1, ${PRODUCTS}) i;
  INSERT INTO styles (id, product_id, name, sale_price, original_price, default_style)
    SELECT i, i, 'Style ' || i, NULL, 10, true FROM generate_series(1, ${PRODUCTS}) i;
  INSERT INTO skus (id, style_id, size, quantity) SELECT i, i, 'M', 3 FROM generate_series(1, ${PRODUCTS}) i;`
const productPath = () => `/products/${1 + Math.floor(Math.random() * PRODUCTS)}`

// flows: batches of 5 records on 24 hot keys and a few of their own, each with its Idempotency-Key,
// resent with that key while the answer is 503, 504 or no answer, as the API asks: after Retry-After,
// or half a second without an answer.
const keyOf = (f) => `${f.hour}|${f.src_app}|${f.dest_app}|${f.vpc_id}`
const pick = (list) => list[Math.floor(Math.random() * list.length)]
function flowsWriter (url) {
  const sent = new Map()
  const stats = { batches: 0, acked: 0, refused: 0 }
  const next = (i) => {
    const batch = Array.from({ length: 5 }, () => ({
      src_app: Math.random() < 0.9 ? pick(['web', 'api', 'db']) : `client${i % 50}`,
      dest_app: pick(['cache', 'queue']),
      vpc_id: pick(['vpc-a', 'vpc-b']),
      bytes_tx: Math.floor(Math.random() * 1e9),
      bytes_rx: 1,
      hour: pick([7, 8])
    }))
    for (const f of batch) sent.set(keyOf(f), (sent.get(keyOf(f)) ?? 0n) + BigInt(f.bytes_tx))
    stats.batches++
    const spec = {
      url,
      path: '/flows',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify(batch),
      then (rec, resend) {
        const resendable = rec.error || rec.status === 503 || rec.status === 504
        if (rec.status === 200) stats.acked++
        else if (resendable) resend(spec, rec.retryAfter ? rec.retryAfter * 1000 : 500)
        else stats.refused++
      }
    }
    return spec
  }
  return { next, sent, stats }
}
async function storedFlows (url) {
  const rows = await query(url, 'SELECT hour, src_app, dest_app, vpc_id, bytes_tx::text AS tx FROM flows')
  return new Map(rows.map((r) => [keyOf(r), BigInt(r.tx)]))
}
function compareTotals (sent, stored) {
  let lost = 0
  let extra = 0
  for (const key of new Set([...sent.keys(), ...stored.keys()])) {
    const s = sent.get(key) ?? 0n
    const got = stored.get(key) ?? 0n
    if (got < s) lost++
    if (got > s) extra++
  }
  return { lost, extra }
}
const statusesOnly = (failures, allowed) => Object.keys(failures).every((k) => allowed.includes(k))

const faults = {
  async 'postgres-killed' () {
    console.log('\npostgres-killed: PostgreSQL killed with commits in flight ' +
      '(flows, 2 workers, 100 POST/s, resent with their key)')
    const server = await startPostgres()
    const url = await database(server, 'flows')
    const svc = await start('flows', { DATABASE_URL: url, WORKERS: '2' })
    try {
      const writer = flowsWriter(svc.url)
      const load = startLoad({ rate: 100, next: writer.next })
      await sleep(3000)
      const from = load.now()
      await server.holdCommits(true) // every COMMIT waits after it is durable: the kill lands there
      await sleep(300)
      await server.kill()
      await sleep(2000)
      const to = load.now() // restarted now: recovery counts from here, crash recovery included
      await server.start()
      await server.holdCommits(false)
      await sleep(7000)
      await load.stop()
      row('postgres-killed', summarize(load.records), summarize(load.records, { from, to }),
        recovery(load.records, to))
      const { lost, extra } = compareTotals(writer.sent, await storedFlows(url))
      say(`${writer.stats.batches} batches sent, ${writer.stats.acked} acknowledged (after resends)`)
      check('postgres-killed: every batch acknowledged, 0 acknowledged writes lost, none counted twice',
        lost === 0 && extra === 0 && writer.stats.acked === writer.stats.batches,
        `keys short ${lost}, keys over ${extra}`)
      check('postgres-killed: only 503 and 504 while PostgreSQL is gone',
        statusesOnly(summarize(load.records).failures, ['503', '504']))
    } finally {
      await svc.stop()
      await server.stop()
    }
  },

  async 'postgres-frozen' () {
    console.log('\npostgres-frozen: PostgreSQL frozen 5 s (SIGSTOP): product reads without cache (100/s) ' +
      'and flows writes (50/s)')
    const server = await startPostgres()
    const product = await start('product', {
      DATABASE_URL: await database(server, 'product', PRODUCT_SEED),
      WORKERS: '2',
      CACHE_ENABLED: 'false'
    })
    const flowsUrl = await database(server, 'flows')
    const flows = await start('flows', { DATABASE_URL: flowsUrl, WORKERS: '2' })
    try {
      const writer = flowsWriter(flows.url)
      const reads = startLoad({ rate: 100, next: () => ({ url: product.url, path: productPath() }) })
      const writes = startLoad({ rate: 50, next: writer.next })
      const ready = startLoad({ rate: 10, next: () => ({ url: product.url, path: '/readyz' }) })
      await sleep(3000)
      const from = reads.now()
      server.pause()
      await sleep(5000)
      server.resume()
      const to = reads.now()
      await sleep(5000)
      await Promise.all([reads.stop(), writes.stop(), ready.stop()])
      const all = [...reads.records, ...writes.records]
      row('postgres-frozen', summarize(all), summarize(all, { from, to }), recovery(all, to))
      const [slowRead, slowWrite] = [summarize(reads.records).max, summarize(writes.records).max]
      check('postgres-frozen: every request answered within 2 s, frozen or not', Math.max(slowRead, slowWrite) <= 2000,
        `slowest read ${Math.round(slowRead)} ms, slowest write ${Math.round(slowWrite)} ms`)
      const readyz = summarize(ready.records, { from, to, ok: (s) => s === 200 })
      check('postgres-frozen: /readyz answered within 1 s while frozen', readyz.max <= 1000 && readyz.sent > 0,
        `slowest ${Math.round(readyz.max)} ms of ${readyz.sent}`)
      check('postgres-frozen: only 503 and 504 while frozen', statusesOnly(summarize(all).failures, ['503', '504']))
      const { lost, extra } = compareTotals(writer.sent, await storedFlows(flowsUrl))
      const kept = lost === 0 && extra === 0 && writer.stats.acked === writer.stats.batches
      check('postgres-frozen: 0 acknowledged writes lost', kept, `keys short ${lost}, over ${extra}`)
    } finally {
      server.resume()
      await Promise.all([product.stop(), flows.stop()])
      await server.stop()
    }
  },

  async 'postgres-down' () {
    console.log('\npostgres-down: PostgreSQL killed and down 20 s under writes (flows, 2 workers, 100 POST/s)')
    const server = await startPostgres()
    const url = await database(server, 'flows')
    const svc = await start('flows', { DATABASE_URL: url, WORKERS: '2' })
    try {
      const writer = flowsWriter(svc.url)
      const load = startLoad({ rate: 100, next: writer.next })
      await sleep(2000)
      const from = load.now()
      await server.kill()
      await sleep(20_000)
      const alive = svc.child.exitCode === null
      const to = load.now()
      await server.start()
      await sleep(8000)
      await load.stop()
      row('postgres-down', summarize(load.records), summarize(load.records, { from, to }),
        recovery(load.records, to))
      check('postgres-down: the process never exited, no worker crashed',
        alive && svc.child.exitCode === null && !/worker exited|worker crashed/.test(svc.logs()))
      check('postgres-down: only 503 and 504 during the outage',
        statusesOnly(summarize(load.records).failures, ['503', '504']))
      const { lost, extra } = compareTotals(writer.sent, await storedFlows(url))
      check('postgres-down: full recovery: every batch acknowledged, totals exact',
        lost === 0 && extra === 0 && writer.stats.acked === writer.stats.batches, `keys short ${lost}, over ${extra}`)
    } finally {
      await svc.stop()
      await server.stop()
    }
  },

  async 'redis-frozen' () {
    console.log('\nredis-frozen: Redis frozen: product reads, 32 connections as fast as they go, 6 s each, ' +
      'against the same service without a cache')
    const server = await startPostgres()
    const redis = await startRedis()
    const url = await database(server, 'product', PRODUCT_SEED)
    const [cached, uncached] = await Promise.all([
      start('product', { DATABASE_URL: url, REDIS_URL: redis.url, WORKERS: '1' }),
      start('product', { DATABASE_URL: url, CACHE_ENABLED: 'false', WORKERS: '1' })
    ])
    // Closed loop on vegeta: 32 connections as fast as the service answers, for 6 s.
    const run = (base) => attack({
      name: 'fault redis-frozen',
      baseUrls: [base],
      rate: 0,
      seconds: 6,
      workers: 32,
      timeoutSeconds: 10,
      draw: () => ({ method: 'GET', path: productPath() }),
      classify: () => ({ name: 'GET /products/:id', expected: (status) => status === 200 })
    })
    try {
      const without = await run(uncached.url)
      say(`no cache: ${Math.round(without.rps)} req/s, p99 ${Math.round(without.p99)} ms`)
      redis.pause()
      const frozen = await run(cached.url)
      say(`Redis frozen: ${Math.round(frozen.rps)} req/s, p99 ${Math.round(frozen.p99)} ms`)
      redis.resume()
      const t0 = performance.now()
      const hits = async () => metric((await get(cached.url, '/metrics')).body, 'cache_requests_total',
        { result: 'hit' })
      const before = await hits()
      let back = null
      while (back === null && performance.now() - t0 < 15_000) {
        await get(cached.url, '/products/1')
        if (await hits() > before) back = (performance.now() - t0) / 1000
        else await sleep(50)
      }
      const failures = {}
      for (const [code, n] of Object.entries(frozen.statuses)) {
        if (Number(code) !== 200) failures[code === '0' ? 'no answer' : code] = n
      }
      row('redis-frozen', { sent: frozen.sent, failures }, { p99: frozen.p99 }, back)
      const ratio = frozen.rps / without.rps
      check('redis-frozen: frozen-Redis throughput ≥ 50% of the no-cache figure of the same run', ratio >= 0.5,
        `${Math.round(ratio * 100)}%`)
      check('redis-frozen: no failed request, cache hits again after Redis comes back',
        Object.keys(failures).length === 0 && back !== null)
    } finally {
      redis.resume()
      await Promise.all([cached.stop(), uncached.stop()])
      await Promise.all([redis.stop(), server.stop()])
    }
  },

  async 'replicas-never-stale' () {
    for (const withRedis of [false, true]) {
      const replicas = withRedis ? 'sharing a Redis frozen from 3 s to 7 s' : 'without Redis'
      console.log(`\nreplicas-never-stale: profile, 2 replicas ${replicas}: writes on one (PATCH in turn on 10 ids), ` +
        'reads on the other (100/s)')
      const server = await startPostgres()
      const redis = withRedis ? await startRedis() : null
      const url = await database(server, 'profile',
        'INSERT INTO restaurants (id, name, address, phone, picture, cuisine, ' +
        `price_range, stars, quality, delivery, accuracy)
        SELECT i, 'w0', 'a', 'p', 'https://x.example/p.jpg', 'c', 2, 4.5, 90, 80, 70 FROM generate_series(1, 10) i`)
      const env = { DATABASE_URL: url, WORKERS: '2', ...(redis && { REDIS_URL: redis.url }) }
      const [a, b] = await Promise.all([start('profile', env), start('profile', env)])
      try {
        const reads = startLoad({ rate: 100, next: (i) => ({ url: b.url, path: `/restaurants/${1 + (i % 10)}` }) })
        const acks = new Map() // id -> [{ seq, at }] in order
        let writing = true
        const writer = (async () => {
          for (let seq = 1; writing; seq++) {
            const id = 1 + (seq % 10)
            const res = await fetch(`${a.url}/restaurants/${id}`, {
              method: 'PATCH',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ name: `w${seq}` })
            })
            await res.arrayBuffer()
            if (res.status === 200) { if (!acks.has(id)) acks.set(id, []); acks.get(id).push({ seq, at: reads.now() }) }
            await sleep(50)
          }
        })()
        let from = 0
        let to = 0
        if (redis) {
          await sleep(3000)
          from = reads.now()
          redis.pause()
          await sleep(4000)
          redis.resume()
          to = reads.now()
          await sleep(5000)
        } else {
          await sleep(10_000)
          to = reads.now()
        }
        writing = false
        await writer
        await reads.stop()
        // A read is stale when a write newer than what it returned was acknowledged before it was sent;
        // by how long: since the first such acknowledgement.
        let stalest = 0
        let stale = 0
        for (const r of reads.records.filter((x) => x.status === 200)) {
          const id = Number(r.path.split('/').pop())
          const seq = Number(JSON.parse(r.body).name.slice(1))
          const missed = (acks.get(id) ?? []).find((w) => w.seq > seq && w.at <= r.at)
          if (missed) { stale++; stalest = Math.max(stalest, r.at - missed.at) }
        }
        const writes = [...acks.values()].reduce((n, l) => n + l.length, 0)
        row(`replicas-never-stale, ${withRedis ? 'Redis frozen' : 'no Redis'}`, summarize(reads.records),
          summarize(reads.records, { from, to }), withRedis ? recovery(reads.records, to) : undefined)
        say(`${writes} writes acknowledged; ${stale} reads returned an older version, ` +
          `the stalest ${Math.round(stalest)} ms after the newer one was acknowledged`)
        const which = `replicas-never-stale (${withRedis ? 'Redis frozen' : 'no Redis'})`
        check(`${which}: no read stale more than 1 s after an acknowledged write on the other replica`,
          stalest <= 1000 && writes > 50, `stalest ${Math.round(stalest)} ms`)
        check(`${which}: no failed read`,
          Object.keys(summarize(reads.records).failures).length === 0)
      } finally {
        redis?.resume()
        await Promise.all([a.stop(), b.stop()])
        await Promise.all([server.stop(), redis?.stop()])
      }
    }
  },

  async 'sigterm-keep-alive' () {
    console.log('\nsigterm-keep-alive: SIGTERM to one of 2 product replicas under keep-alive load (200/s), ' +
      'SHUTDOWN_DELAY_MS default (0)')
    const server = await startPostgres()
    const redis = await startRedis()
    const url = await database(server, 'product', PRODUCT_SEED)
    const [a, b] = await Promise.all([0, 1].map(() => start('product', {
      DATABASE_URL: url,
      REDIS_URL: redis.url,
      WORKERS: '2'
    })))
    try {
      const targets = [a.url, b.url]
      // Round robin over the replicas not draining: one that answered `Connection: close` gets nothing new.
      const load = startLoad({ rate: 200, next: (i, draining) => {
        const live = targets.filter((t) => !draining.has(t))
        return { url: live[i % live.length], path: productPath() }
      } })
      await sleep(3000)
      const from = load.now()
      const exit = a.stop('SIGTERM')
      const { code } = await exit
      const to = load.now()
      await sleep(3000)
      await load.stop()
      const whole = summarize(load.records)
      row('sigterm-keep-alive', whole, summarize(load.records, { from, to }), recovery(load.records, to))
      const resets = load.records.filter((r) => ['ECONNRESET', 'EPIPE'].includes(r.error))
      say(`the stopped replica exited ${code} after ${((to - from) / 1000).toFixed(1)} s; ` +
        `${resets.filter((r) => r.reused).length} resets on a kept-alive connection, ` +
        `${resets.filter((r) => !r.reused).length} on a new one`)
      check('sigterm-keep-alive: 0 connection resets, exit 0', resets.length === 0 && code === 0,
        `resets ${resets.length}, exit ${code}`)
      const unanswered = load.records.filter((r) => r.error)
      check('sigterm-keep-alive: every request got an HTTP answer (none reset, refused or cut), on kept-alive ' +
        'connections and new ones', unanswered.length === 0, JSON.stringify(summarize(unanswered).failures))
    } finally {
      await Promise.all([a.stop(), b.stop()])
      await Promise.all([redis.stop(), server.stop()])
    }
  }
}

provisionFor('faults', 'test:faults')
const chosen = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(faults)
for (const name of chosen) {
  if (!faults[name]) { console.error(`unknown fault ${name}: ${Object.keys(faults).join(', ')}`); process.exit(2) }
  try {
    await faults[name]()
  } catch (err) {
    check(`${name}: ran to the end`, false, err.stack)
  }
}

console.log('\n| fault | requests | failures by kind | p99 during the fault | recovered in |\n' +
  '| --- | --- | --- | --- | --- |')
for (const r of rows) console.log(`| ${r.fault} | ${r.requests} | ${r.failures} | ${r.p99} | ${r.recovered} |`)
const failed = checks.filter((c) => !c.ok)
console.log(`\n${checks.length - failed.length} of ${checks.length} checks passed`)
process.exit(failed.length ? 1 : 0)
