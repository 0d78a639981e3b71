// What every service benchmark shares: throwaway PostgreSQL and Redis; the service's data set,
// generated once into .data/ and loaded; bare Fastify (the baseline) measured at the start and at
// the end of the same run; the service with its cache and, as a second instance, without it
// (CACHE_ENABLED=false: every request a query); each case measured alone; one table whose every RPS
// is a ratio to that baseline — the machine is shared and noisy, ratios in one run are what hold.
import { fileURLToPath } from 'node:url'
import { existsSync } from 'node:fs'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { startPostgres, startRedis, startService, get, metric } from '@suite/kit/testing'
import { pgTarget } from '@suite/kit/etl'
import { attack } from '../../loadtests/lib/vegeta.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const RATE_CONNECTIONS = 64 // fixed-rate cases: requests in flight at most (vegeta's workers)

/**
 * @param {object} o
 * @param {string} o.service        services/<service>
 * @param {{count: string, size: number}} [o.dataset]  the generator's size option and value
 * @param {boolean} [o.uncached]    also start an instance with CACHE_ENABLED=false
 * @param {number[]} [o.baselineConnections]  the baseline at each of these (default: connections)
 * @param {(ctx) => Promise<Case[]>} o.cases  ctx: { db (a pg client, open until cases returns),
 *   baseline, cached, uncached, redis, connections }; a Case is { name, url, path() | request(), rate?,
 *   groups?, connections?, counters?: { name: metric } (their increase per second, from /metrics) };
 *   request() returns { method, path, body?, headers? } (a body is sent as JSON)
 * @returns rows { service, case, connections, rps, p50, p99, non2xx, errors, baseline?, counters? }
 */
export async function runBench ({ service, dataset, uncached = false, duration = 10, connections = 50, baselineConnections = [connections], workers = 1, cases }) {
  const say = (m) => process.stderr.write(`bench ${service}: ${m}\n`)
  say('starting PostgreSQL and Redis')
  const pgServer = await startPostgres({ settings: { shared_buffers: '512MB', max_wal_size: '4GB' } })
  const redis = await startRedis()
  const running = []
  try {
    const dbUrl = await pgServer.createDatabase('bench')
    const db = new pg.Client({ connectionString: dbUrl })
    await db.connect()
    await migrate(db, { name: service, migrations: `${root}services/${service}/migrations` })
    if (dataset) {
      const etl = await import(`${root}services/${service}/etl/index.js`)
      const dir = `${root}.data/bench-${service}-${dataset.size}`
      if (!existsSync(`${dir}/manifest.json`)) {
        say(`generating ${dataset.size} ${dataset.count} into ${dir}`)
        await etl.generate({ out: dir, [dataset.count]: dataset.size, seed: 1 })
      }
      say('loading')
      await etl.load({ db: pgTarget(db), dir, rejectsFile: `${dir}/rejects.csv`, progress: false })
      // Measure the steady state, not the load's aftermath: autovacuum would visit the new tables and
      // the checkpointer flush the loaded pages in the middle of a case; and a cold cache would time
      // the disk (COPY bypasses shared_buffers): the working set goes into memory first, as it would
      // be in a database that has served for a while.
      await db.query('VACUUM')
      await db.query('CHECKPOINT')
      await db.query('CREATE EXTENSION IF NOT EXISTS pg_prewarm')
      await db.query(`SELECT pg_prewarm(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')`)
    }
    const cli = `${root}services/${service}/src/cli.js`
    const env = { DATABASE_URL: dbUrl, REDIS_URL: redis.url, WORKERS: String(workers), LOG_LEVEL: 'error' }
    const [baseline, cached, plain] = await Promise.all([
      startService({ entry: `${root}scripts/bench/hello.js` }),
      startService({ entry: cli, env }),
      uncached ? startService({ entry: cli, env: { ...env, CACHE_ENABLED: 'false' } }) : null
    ])
    running.push(baseline, cached, plain)
    let list
    try {
      list = await cases({ db, baseline, cached, uncached: plain, redis, connections })
    } finally {
      await db.end()
    }
    const hello = (label) => baselineConnections.map((conn) =>
      ({ name: `bare Fastify GET /hello (${label})`, url: baseline.url, path: () => '/hello', connections: conn, baseline: true }))
    list = [...hello('baseline'), ...list, ...hello('baseline, again')]

    const rows = []
    for (const c of list) {
      say(`${c.name}: ${duration} s`)
      rows.push(...await measure(c, { service, duration, connections }))
    }
    return rows
  } finally {
    await Promise.allSettled(running.filter(Boolean).map((s) => s.stop()))
    await redis.stop()
    await pgServer.stop()
  }
}

async function measure (c, { service, duration, connections }) {
  const row = { service, case: c.name, connections: c.connections ?? connections, baseline: c.baseline }
  if (c.rate) {
    // Open loop at a fixed rate (vegeta): latency as clients arriving on their own see it, the
    // target's queueing included; `groups` (path → name) also gives percentiles per group of paths
    // sent in the same run (page 1 vs the deepest page, interleaved: both meet the same noise).
    const pathOf = (url) => url.replace(/^[a-z]+:\/\/[^/]+/, '')
    const f = await attack({
      draw: () => ({ method: 'GET', path: c.path() }),
      classify: (method, url) => ({ name: c.groups?.[pathOf(url)] ?? c.name, expected: (status) => status >= 200 && status < 300 }),
      baseUrls: [c.url],
      rate: c.rate,
      seconds: duration,
      workers: RATE_CONNECTIONS,
      name: `${service}: ${c.name}`
    })
    const common = { ...row, connections: RATE_CONNECTIONS, rate: c.rate, non2xx: non2xx(f), errors: f.statuses[0] ?? 0, counters: { late: f.late, dropped: f.dropped } }
    if (!c.groups) return [{ ...common, rps: f.rps, p50: f.p50, p99: f.p99 }]
    return Object.entries(f.routes).map(([name, g]) => ({ ...common, case: `${name} (interleaved)`, rps: g.requests / f.seconds, p50: g.p50, p99: g.p99 }))
  }
  // Throughput: a closed loop over `connections` (vegeta), each sending its next request as soon as
  // its answer came.
  const draw = c.request ?? (() => ({ method: 'GET', path: c.path() }))
  const load = (seconds) => attack({ draw, classify: () => ({ name: c.name, expected: (status) => status >= 200 && status < 300 }), baseUrls: [c.url], seconds, workers: row.connections, name: `${service}: ${c.name}` })
  await load(1) // warm-up, not counted: JIT, connections, PostgreSQL's buffers
  const before = c.counters && (await get(c.url, '/metrics')).body
  const f = await load(duration)
  if (c.counters) {
    const after = (await get(c.url, '/metrics')).body
    row.counters = Object.fromEntries(Object.entries(c.counters).map(([label, name]) =>
      [label, Array.isArray(name) ? ratio(before, after, ...name) : (metric(after, name) - metric(before, name)) / f.seconds]))
  }
  return [{ ...row, rps: f.rps, p50: f.p50, p99: f.p99, errors: f.statuses[0] ?? 0, non2xx: non2xx(f) }]
}

// Answers other than 2xx (status 0 is no answer: an error, counted apart).
const non2xx = (f) => Object.entries(f.statuses).reduce((n, [code, k]) => n + (code !== '0' && (code < 200 || code >= 300) ? k : 0), 0)

// [sum, count] of a histogram: its mean over the case (e.g. requests per flush).
const ratio = (before, after, sum, count) =>
  (metric(after, sum) - metric(before, sum)) / (metric(after, count) - metric(before, count))

const fmt = (n, d = 0) => (n === undefined || Number.isNaN(n) ? '' : n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }))

/**
 * One markdown table of rows from any benchmarks: each RPS as a ratio to the mean of its own run's
 * baseline rows at the same connection count (none for a fixed-rate case: its RPS is the rate).
 */
export function table (rows) {
  const baseOf = (r) => {
    const b = rows.filter((x) => x.baseline && x.service === r.service && x.connections === r.connections)
    return b.reduce((a, x) => a + x.rps, 0) / b.length
  }
  const out = [
    '| service | case | conn | RPS | p50 ms | p99 ms | RPS / baseline | non-2xx | errors | notes |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |'
  ]
  for (const r of rows) {
    const notes = Object.entries(r.counters ?? {}).map(([k, v]) => `${k} ${fmt(v, Number.isInteger(v) || v >= 100 ? 0 : 1)}`).join(', ')
    const ratioToBase = r.rate ? `- (fixed ${fmt(r.rate)}/s)` : fmt(r.rps / baseOf(r), 2)
    out.push(`| ${r.service} | ${r.case} | ${r.rate ? `≤${r.connections}` : r.connections} | ${fmt(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${ratioToBase} | ${r.non2xx} | ${r.errors} | ${notes} |`)
  }
  return out.join('\n')
}

/**
 * Requests each of `paths` once, 50 at a time, so that a case measures a warm cache: every key it
 * will read is in Redis before it starts.
 */
export async function warm (url, paths) {
  let next = 0
  await attack({ draw: () => ({ method: 'GET', path: paths[next++] }), classify: () => ({ name: 'warm', expected: () => true }), baseUrls: [url], requests: paths.length, workers: 50 })
}

/** A random element of a list. */
export const pick = (list) => list[Math.floor(Math.random() * list.length)]
