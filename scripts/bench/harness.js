// What every service benchmark shares: throwaway PostgreSQL and Redis; the service's data set,
// generated once into .data/ and loaded; bare Fastify (the baseline) measured at the start and at
// the end of the same run; the service with its cache and, as a second instance, without it
// (CACHE_ENABLED=false: every request a query); each case measured alone; one table whose every RPS
// is a ratio to that baseline — the machine is shared and noisy, ratios in one run are what hold.
import { fileURLToPath } from 'node:url'
import { existsSync } from 'node:fs'
import autocannon from 'autocannon'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { startPostgres, startRedis, startService, get, metric } from '@suite/kit/testing'
import { pgTarget } from '@suite/kit/etl'
import { constantRate } from './rate.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

/**
 * @param {object} o
 * @param {string} o.service        services/<service>
 * @param {{count: string, size: number}} [o.dataset]  the generator's size option and value
 * @param {boolean} [o.uncached]    also start an instance with CACHE_ENABLED=false
 * @param {number[]} [o.baselineConnections]  the baseline at each of these (default: connections)
 * @param {(ctx) => Promise<Case[]>} o.cases  ctx: { db (a pg client, open until cases returns),
 *   baseline, cached, uncached, redis, connections }; a Case is { name, url, path() | setup(req), rate?,
 *   groups?, connections?, counters?: { name: metric } (their increase per second, from /metrics) }
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
    // Open loop at a fixed rate: latency as clients arriving on their own see it.
    const r = await constantRate({ url: c.url, path: c.path, rate: c.rate, duration, groupBy: c.groups && ((p) => c.groups[p]) })
    const grouped = Object.entries(r.groups).map(([name, g]) => ({ ...row, case: `${name} (interleaved)`, ...g, rate: c.rate, non2xx: r.non2xx, errors: r.errors }))
    return c.groups ? grouped : [{ ...row, rps: r.rps, p50: r.p50, p99: r.p99, rate: c.rate, non2xx: r.non2xx, errors: r.errors }]
  }
  const setupRequest = c.setup ?? ((req) => ({ ...req, path: c.path() }))
  const load = (seconds) => autocannon({ url: c.url, connections: row.connections, duration: seconds, requests: [{ setupRequest }] })
  await load(1) // warm-up, not counted: JIT, connections, PostgreSQL's buffers
  const before = c.counters && (await get(c.url, '/metrics')).body
  const r = await load(duration)
  if (c.counters) {
    const after = (await get(c.url, '/metrics')).body
    row.counters = Object.fromEntries(Object.entries(c.counters).map(([label, name]) =>
      [label, Array.isArray(name) ? ratio(before, after, ...name) : (metric(after, name) - metric(before, name)) / r.duration]))
  }
  return [{ ...row, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx }]
}

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
    const notes = Object.entries(r.counters ?? {}).map(([k, v]) => `${k} ${fmt(v, v < 100 ? 1 : 0)}`).join(', ')
    const ratioToBase = r.rate ? `- (fixed ${fmt(r.rate)}/s)` : fmt(r.rps / baseOf(r), 2)
    out.push(`| ${r.service} | ${r.case} | ${r.rate ? '≤64' : r.connections} | ${fmt(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${ratioToBase} | ${r.non2xx} | ${r.errors} | ${notes} |`)
  }
  return out.join('\n')
}

/**
 * Requests each of `paths` once, 50 at a time (autocannon), so that a case measures a warm cache:
 * every key it will read is in Redis before it starts.
 */
export async function warm (url, paths) {
  let next = 0
  await autocannon({ url, connections: 50, amount: paths.length, requests: [{ setupRequest: (req) => ({ ...req, path: paths[next++] }) }] })
}

/** A random element of a list. */
export const pick = (list) => list[Math.floor(Math.random() * list.length)]
