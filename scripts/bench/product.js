// Benchmark of the product service on a real PostgreSQL and Redis holding a generated catalogue,
// measured against bare Fastify in the same run, so the ratios hold on a noisy shared machine.
//   node scripts/bench/product.js [--products 100000] [--duration 10] [--connections 50] [--workers 1]
// or `import { run, table } from './bench/product.js'` (npm run bench does).
// Each case runs alone. Throughput cases: autocannon, 50 keep-alive connections, as fast as the
// service answers. Latency cases "at 1K RPS": an open loop at a constant rate (bench/rate.js), the
// way real clients arrive. "cached": a warmed hot set of 1,000 ids; "uncached": a second instance
// with CACHE_ENABLED=false, so every request is a database query.
import { parseArgs } from 'node:util'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { existsSync } from 'node:fs'
import autocannon from 'autocannon'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { startPostgres, startRedis, startService } from '@suite/kit/testing'
import { pgTarget } from '@suite/kit/etl'
import { generate, load } from '../../services/product/etl/index.js'
import { constantRate } from './rate.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const productCli = `${root}services/product/src/cli.js`

const say = (m) => process.stderr.write(`bench product: ${m}\n`)

/** @returns {Promise<Array<{case, rps, p50, p99, non2xx, errors}>>} */
export async function run ({ products = 100_000, duration = 10, connections = 50, workers = 1 } = {}) {
  say('starting PostgreSQL and Redis')
  const pgServer = await startPostgres({ settings: { shared_buffers: '512MB', max_wal_size: '4GB' } })
  const redis = await startRedis()
  const services = []
  try {
    const dbUrl = await pgServer.createDatabase('bench')
    const dir = `${root}.data/bench-${products}`
    if (!existsSync(`${dir}/manifest.json`)) {
      say(`generating ${products} products into ${dir}`)
      await generate({ out: dir, products, seed: 1 })
    }
    const client = new pg.Client({ connectionString: dbUrl })
    await client.connect()
    await migrate(client, `${root}services/product/migrations`)
    say('loading')
    await load({ db: pgTarget(client), dir, rejectsFile: `${dir}/rejects.csv`, progress: false })
    const ids = (await client.query('SELECT id FROM products ORDER BY id')).rows.map((r) => r.id)
    await client.end()
    const lastPage = Math.ceil(ids.length / 5)

    const env = { DATABASE_URL: dbUrl, REDIS_URL: redis.url, WORKERS: String(workers), LOG_LEVEL: 'error' }
    const [baseline, cached, uncached] = await Promise.all([
      startService({ entry: `${root}scripts/bench/hello.js` }),
      startService({ entry: productCli, env }),
      startService({ entry: productCli, env: { ...env, CACHE_ENABLED: 'false' } })
    ])
    services.push(baseline, cached, uncached)

    const hot = ids.slice(0, 1000)
    const pick = (list) => list[Math.floor(Math.random() * list.length)]
    const routes = {
      'products?page': () => `/products?page=${1 + Math.floor(Math.random() * 1000)}&count=5`,
      'products/:id': (list) => `/products/${pick(list)}`,
      'products/:id/styles': (list) => `/products/${pick(list)}/styles`,
      'products/:id/related': (list) => `/products/${pick(list)}/related`
    }
    say('warming the cache with the hot set')
    for (const id of hot) {
      await Promise.all(['', '/styles', '/related'].map((s) => fetch(`${cached.url}/products/${id}${s}`).then((r) => r.arrayBuffer())))
    }
    for (let p = 1; p <= 1000; p++) await fetch(`${cached.url}/products?page=${p}&count=5`).then((r) => r.arrayBuffer())

    const cases = [
      { name: 'bare Fastify GET /hello (baseline)', url: baseline.url, path: () => '/hello' },
      ...Object.entries(routes).map(([name, path]) => ({ name: `cached ${name}`, url: cached.url, path: () => path(hot) })),
      ...Object.entries(routes).map(([name, path]) => ({ name: `uncached ${name}`, url: uncached.url, path: () => path(ids) })),
      { name: 'uncached products/:id/styles at 1K RPS', url: uncached.url, path: () => routes['products/:id/styles'](ids), rate: 1000 },
      // Page 1 and the deepest page interleaved in one run, so both meet the same noise.
      {
        name: 'uncached pages',
        url: uncached.url,
        path: (() => { let i = 0; return () => (i++ % 2 ? `/products?page=${lastPage}&count=5` : '/products?page=1&count=5') })(),
        rate: 1000,
        groups: { '/products?page=1&count=5': 'uncached page 1 at 1K RPS', [`/products?page=${lastPage}&count=5`]: `uncached deepest page (${lastPage}) at 1K RPS` }
      },
      // The baseline again at the end: the machine is shared, so the ratio uses the mean of both runs.
      { name: 'bare Fastify GET /hello (baseline, again)', url: baseline.url, path: () => '/hello' }
    ]
    const rows = []
    for (const c of cases) {
      say(`${c.name}: ${duration} s`)
      if (c.rate) {
        const r = await constantRate({ url: c.url, path: c.path, rate: c.rate, duration, groupBy: c.groups && ((p) => c.groups[p]) })
        if (!c.groups) rows.push({ case: c.name, ...r })
        for (const [name, g] of Object.entries(r.groups)) rows.push({ case: `${name} (interleaved)`, ...g, non2xx: r.non2xx, errors: r.errors })
        continue
      }
      const run = (duration) => autocannon({
        url: c.url,
        connections: connections,
        duration,
        requests: [{ setupRequest: (req) => ({ ...req, path: c.path() }) }]
      })
      await run(1) // warm-up, not counted: JIT, connections, PostgreSQL's buffers
      const r = await run(duration)
      rows.push({ case: c.name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx })
    }

    return rows
  } finally {
    await Promise.allSettled(services.map((s) => s.stop()))
    await redis.stop()
    await pgServer.stop()
  }
}

/** The markdown table of `run`'s rows, then the targets of the product issue. */
export function table (rows) {
  const out = []
  const base = (rows[0].rps + rows.at(-1).rps) / 2
  const fmt = (n, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })
  out.push('| case | RPS | p50 ms | p99 ms | RPS / baseline (mean of both runs) | non-2xx | errors |')
  out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const r of rows) {
    const ratio = r.case.includes(' at 1K RPS') ? '-' : fmt(r.rps / base, 2) // a fixed rate is no throughput
    out.push(`| ${r.case} | ${fmt(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${ratio} | ${r.non2xx} | ${r.errors} |`)
  }
  const row = (name) => rows.find((r) => r.case.startsWith(name))
  const targets = [
    ['cached styles ≥ 50% of baseline RPS', row('cached products/:id/styles').rps / base >= 0.5, `${fmt(100 * row('cached products/:id/styles').rps / base)}%`],
    ['uncached styles p99 ≤ 10 ms at 1K RPS', row('uncached products/:id/styles at 1K').p99 <= 10, `${fmt(row('uncached products/:id/styles at 1K').p99, 2)} ms`],
    ['deepest page p99 ≤ 2× page 1 (same run, interleaved)', row('uncached deepest').p99 <= 2 * row('uncached page 1').p99,
      `${fmt(row('uncached deepest').p99, 2)} ms vs ${fmt(row('uncached page 1').p99, 2)} ms`]
  ]
  out.push('\n| target | result | met |\n| --- | --- | --- |')
  for (const [name, met, value] of targets) out.push(`| ${name} | ${value} | ${met ? 'yes' : 'NO'} |`)
  return out.join('\n')
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      products: { type: 'string', default: '100000' },
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '50' },
      workers: { type: 'string', default: '1' }
    }
  })
  const rows = await run({ products: Number(values.products), duration: Number(values.duration), connections: Number(values.connections), workers: Number(values.workers) })
  console.log(`\nproduct service, ${values.products} products, WORKERS=${values.workers}, ${values.connections} connections, ${values.duration} s per case\n`)
  console.log(table(rows))
}
