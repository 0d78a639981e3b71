// Benchmark of the menu service on a real PostgreSQL and Redis holding generated menus, against bare
// Fastify in the same run, so the ratios hold on a noisy shared machine.
//   node scripts/bench/menu.js [--menus 200000] [--duration 10] [--connections 50] [--workers 1]
// or `import { run, table } from './bench/menu.js'`.
// Cases: the baseline; GET /menu/:id uniform over all menus, cached (every menu warmed first, so the
// whole set is in Redis) and uncached (a second instance with CACHE_ENABLED=false: one query each).
import { parseArgs } from 'node:util'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { existsSync } from 'node:fs'
import autocannon from 'autocannon'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { startPostgres, startRedis, startService } from '@suite/kit/testing'
import { pgTarget } from '@suite/kit/etl'
import { generate, load } from '../../services/menu/etl/index.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const menuCli = `${root}services/menu/src/cli.js`
const say = (m) => process.stderr.write(`bench menu: ${m}\n`)

/** @returns {Promise<Array<{case, rps, p50, p99, non2xx, errors}>>} */
export async function run ({ menus = 200_000, duration = 10, connections = 50, workers = 1 } = {}) {
  say('starting PostgreSQL and Redis')
  const pgServer = await startPostgres({ settings: { shared_buffers: '512MB', max_wal_size: '4GB' } })
  const redis = await startRedis()
  const services = []
  try {
    const dbUrl = await pgServer.createDatabase('bench')
    const dir = `${root}.data/bench-menu-${menus}`
    if (!existsSync(`${dir}/manifest.json`)) {
      say(`generating ${menus} menus into ${dir}`)
      await generate({ out: dir, menus, seed: 1 })
    }
    const client = new pg.Client({ connectionString: dbUrl })
    await client.connect()
    await migrate(client, `${root}services/menu/migrations`)
    say('loading')
    await load({ db: pgTarget(client), dir, rejectsFile: `${dir}/rejects.csv`, progress: false })
    await client.end()

    const env = { DATABASE_URL: dbUrl, REDIS_URL: redis.url, WORKERS: String(workers), LOG_LEVEL: 'error' }
    const [baseline, cached, uncached] = await Promise.all([
      startService({ entry: `${root}scripts/bench/hello.js` }),
      startService({ entry: menuCli, env }),
      startService({ entry: menuCli, env: { ...env, CACHE_ENABLED: 'false' } })
    ])
    services.push(baseline, cached, uncached)

    // Ids are 1..menus (the generator writes them dense).
    const uniform = () => `/menu/${1 + Math.floor(Math.random() * menus)}`
    say(`warming the cache with all ${menus} menus`)
    let next = 0
    await autocannon({ url: cached.url, connections, amount: menus, requests: [{ setupRequest: (req) => ({ ...req, path: `/menu/${1 + (next++ % menus)}` }) }] })

    const cases = [
      { name: 'bare Fastify GET /hello (baseline)', url: baseline.url, path: () => '/hello' },
      { name: `cached GET /menu/:id, uniform over ${menus.toLocaleString('en-US')}`, url: cached.url, path: uniform },
      { name: `uncached GET /menu/:id, uniform over ${menus.toLocaleString('en-US')}`, url: uncached.url, path: uniform },
      // The baseline again at the end: the machine is shared, so the ratio uses the mean of both runs.
      { name: 'bare Fastify GET /hello (baseline, again)', url: baseline.url, path: () => '/hello' }
    ]
    const rows = []
    for (const c of cases) {
      say(`${c.name}: ${duration} s`)
      const bench = (duration) => autocannon({ url: c.url, connections, duration, requests: [{ setupRequest: (req) => ({ ...req, path: c.path() }) }] })
      await bench(1) // warm-up, not counted: JIT, connections, PostgreSQL's buffers
      const r = await bench(duration)
      rows.push({ case: c.name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx })
    }
    return rows
  } finally {
    await Promise.allSettled(services.map((s) => s.stop()))
    await redis.stop()
    await pgServer.stop()
  }
}

/** The markdown table of `run`'s rows, with each RPS as a ratio of the baseline (mean of both runs). */
export function table (rows) {
  const base = (rows[0].rps + rows.at(-1).rps) / 2
  const fmt = (n, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })
  const out = ['| case | RPS | p50 ms | p99 ms | RPS / baseline | non-2xx | errors |', '| --- | ---: | ---: | ---: | ---: | ---: | ---: |']
  for (const r of rows) out.push(`| ${r.case} | ${fmt(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${fmt(r.rps / base, 2)} | ${r.non2xx} | ${r.errors} |`)
  return out.join('\n')
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      menus: { type: 'string', default: '200000' },
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '50' },
      workers: { type: 'string', default: '1' }
    }
  })
  const rows = await run({ menus: Number(values.menus), duration: Number(values.duration), connections: Number(values.connections), workers: Number(values.workers) })
  console.log(`\nmenu service, ${values.menus} menus, WORKERS=${values.workers}, ${values.connections} connections, ${values.duration} s per case\n`)
  console.log(table(rows))
}
