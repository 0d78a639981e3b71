// Benchmark of the profile service on a real PostgreSQL and Redis holding generated restaurants,
// measured against bare Fastify in the same run, so the ratios hold on a noisy shared machine.
//   node scripts/bench/profile.js [--restaurants 100000] [--duration 10] [--connections 50] [--workers 1]
// or `import { run, table } from './bench/profile.js'`.
// Reads follow the original's mix: 75% on 20 hot ids, 25% uniform over all. "uncached" is a second
// instance with CACHE_ENABLED=false (every request a query). Writes: PUT and PATCH alternating on
// uniform ids; each commits, bumps the version and invalidates two cache keys before answering.
import { parseArgs } from 'node:util'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { existsSync } from 'node:fs'
import autocannon from 'autocannon'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { startPostgres, startRedis, startService } from '@suite/kit/testing'
import { pgTarget } from '@suite/kit/etl'
import { generate, load } from '../../services/profile/etl/index.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const cli = `${root}services/profile/src/cli.js`
const say = (m) => process.stderr.write(`bench profile: ${m}\n`)

/** @returns {Promise<Array<{case, rps, p50, p99, non2xx, errors}>>} */
export async function run ({ restaurants = 100_000, duration = 10, connections = 50, workers = 1 } = {}) {
  say('starting PostgreSQL and Redis')
  const pgServer = await startPostgres({ settings: { shared_buffers: '512MB', max_wal_size: '4GB' } })
  const redis = await startRedis()
  const services = []
  try {
    const dbUrl = await pgServer.createDatabase('bench')
    const dir = `${root}.data/bench-profile-${restaurants}`
    if (!existsSync(`${dir}/manifest.json`)) {
      say(`generating ${restaurants} restaurants into ${dir}`)
      await generate({ out: dir, restaurants, seed: 1 })
    }
    const client = new pg.Client({ connectionString: dbUrl })
    await client.connect()
    await migrate(client, `${root}services/profile/migrations`)
    say('loading')
    await load({ db: pgTarget(client), dir, rejectsFile: `${dir}/rejects.csv`, progress: false })
    const ids = (await client.query('SELECT id FROM restaurants ORDER BY id')).rows.map((r) => r.id)
    await client.end()

    const env = { DATABASE_URL: dbUrl, REDIS_URL: redis.url, WORKERS: String(workers), LOG_LEVEL: 'error' }
    const [baseline, cached, uncached] = await Promise.all([
      startService({ entry: `${root}scripts/bench/hello.js` }),
      startService({ entry: cli, env }),
      startService({ entry: cli, env: { ...env, CACHE_ENABLED: 'false' } })
    ])
    services.push(baseline, cached, uncached)

    const hot = ids.slice(0, 20)
    const pick = (list) => list[Math.floor(Math.random() * list.length)]
    const seedMix = () => (Math.random() < 0.75 ? pick(hot) : pick(ids))
    say('warming the cache with the hot set')
    for (const id of hot) await Promise.all(['', '/profile'].map((s) => fetch(`${cached.url}/restaurants/${id}${s}`).then((r) => r.arrayBuffer())))

    const json = { 'content-type': 'application/json' }
    let n = 0
    const write = (req) => {
      const i = n++
      const body = i % 2
        ? { quality: i % 101, name: `Patched ${i}` }
        : { name: `Replaced ${i}`, address: '1 Main St', phone: '(555) 010-0000', picture: 'https://images.example/r.jpg', cuisine: 'Thai', price_range: 2, stars: 4.5, quality: 90, delivery: 80, accuracy: 70 }
      return { ...req, method: i % 2 ? 'PATCH' : 'PUT', path: `/restaurants/${pick(ids)}`, headers: json, body: JSON.stringify(body) }
    }
    const cases = [
      { name: 'bare Fastify GET /hello (baseline)', url: baseline.url, setup: (req) => ({ ...req, path: '/hello' }) },
      { name: 'cached GET /restaurants/:id (75% on 20 hot ids)', url: cached.url, setup: (req) => ({ ...req, path: `/restaurants/${seedMix()}` }) },
      { name: 'cached GET /restaurants/:id/profile (same mix)', url: cached.url, setup: (req) => ({ ...req, path: `/restaurants/${seedMix()}/profile` }) },
      { name: 'uncached GET /restaurants/:id (same mix)', url: uncached.url, setup: (req) => ({ ...req, path: `/restaurants/${seedMix()}` }) },
      { name: 'PUT/PATCH mix (uniform ids)', url: cached.url, setup: write },
      // The baseline again at the end: the machine is shared, so the ratio uses the mean of both runs.
      { name: 'bare Fastify GET /hello (baseline, again)', url: baseline.url, setup: (req) => ({ ...req, path: '/hello' }) }
    ]
    const rows = []
    for (const c of cases) {
      say(`${c.name}: ${duration} s`)
      const once = (duration) => autocannon({ url: c.url, connections, duration, requests: [{ setupRequest: c.setup }] })
      await once(1) // warm-up, not counted: JIT, connections, PostgreSQL's buffers
      const r = await once(duration)
      rows.push({ case: c.name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx })
    }
    return rows
  } finally {
    await Promise.allSettled(services.map((s) => s.stop()))
    await redis.stop()
    await pgServer.stop()
  }
}

/** The markdown table of `run`'s rows, with each case's ratio to the baseline. */
export function table (rows) {
  const base = (rows[0].rps + rows.at(-1).rps) / 2
  const fmt = (n, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })
  const out = [
    '| case | RPS | p50 ms | p99 ms | RPS / baseline (mean of both runs) | non-2xx | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |'
  ]
  for (const r of rows) out.push(`| ${r.case} | ${fmt(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${fmt(r.rps / base, 2)} | ${r.non2xx} | ${r.errors} |`)
  return out.join('\n')
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      restaurants: { type: 'string', default: '100000' },
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '50' },
      workers: { type: 'string', default: '1' }
    }
  })
  const rows = await run({ restaurants: Number(values.restaurants), duration: Number(values.duration), connections: Number(values.connections), workers: Number(values.workers) })
  console.log(`\nprofile service, ${values.restaurants} restaurants, WORKERS=${values.workers}, ${values.connections} connections, ${values.duration} s per case\n`)
  console.log(table(rows))
}
