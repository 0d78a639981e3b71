// Benchmark of the flows service against bare Fastify in the same run, on a real PostgreSQL (and
// Redis, as deployed, though flows caches nothing):
//   node scripts/bench/flows.js [--duration 10] [--workers 1]
// or `import { run } from './bench/flows.js'` from another benchmark. Each case runs alone
// (autocannon, keep-alive). POSTs carry 5 records; "hot": every record on one of 8 keys of one hour
// (the contention the original deadlocked on); "spread": keys drawn from 100,000 per hour.
// rows/s: records acknowledged (so committed) per second. req/flush: POSTs per group-commit flush.
import { parseArgs } from 'node:util'
import { fileURLToPath, pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { startPostgres, startRedis, startService, get, metric } from '@suite/kit/testing'

const root = fileURLToPath(new URL('../..', import.meta.url))
const say = (m) => process.stderr.write(`bench flows: ${m}\n`)
const BATCH = 5
const HOT_HOUR = 1
const SPREAD_HOUR = 2
const GET_HOUR = 3 // 100 keys
const rand = (n) => Math.floor(Math.random() * n)
const hotBatch = () => Array.from({ length: BATCH }, () =>
  ({ src_app: `app${rand(4)}`, dest_app: `svc${rand(2)}`, vpc_id: 'vpc-0', bytes_tx: rand(1e6), bytes_rx: rand(1e6), hour: HOT_HOUR }))
const spreadBatch = () => Array.from({ length: BATCH }, () =>
  ({ src_app: `app${rand(1000)}`, dest_app: `svc${rand(100)}`, vpc_id: 'vpc-0', bytes_tx: rand(1e6), bytes_rx: rand(1e6), hour: SPREAD_HOUR }))

/** @returns {Promise<Array<{case, rps, p50, p99, rowsPerSec?, perFlush?, non2xx, errors}>>} */
export async function run ({ duration = 10, connections = 32, workers = 1 } = {}) {
  say('starting PostgreSQL and Redis')
  const pgServer = await startPostgres()
  const redis = await startRedis()
  const services = []
  try {
    const dbUrl = await pgServer.createDatabase('bench_flows')
    const client = new pg.Client({ connectionString: dbUrl })
    await client.connect()
    await migrate(client, `${root}services/flows/migrations`)
    await client.end()
    const [baseline, flows] = await Promise.all([
      startService({ entry: `${root}scripts/bench/hello.js` }),
      startService({ entry: `${root}services/flows/src/cli.js`, env: { DATABASE_URL: dbUrl, REDIS_URL: redis.url, WORKERS: String(workers), LOG_LEVEL: 'error' } })
    ])
    services.push(baseline, flows)
    await fetch(`${flows.url}/flows`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ src_app: `app${i}`, dest_app: 'svc', vpc_id: 'vpc-0', bytes_tx: i, bytes_rx: i, hour: GET_HOUR })))
    })

    const post = (batch) => ({ url: flows.url, method: 'POST', body: batch, rows: true })
    const cases = [
      { name: `bare Fastify GET /hello, ${connections} conn (baseline)`, url: baseline.url, path: '/hello', connections },
      { name: 'bare Fastify GET /hello, 256 conn (baseline)', url: baseline.url, path: '/hello', connections: 256 },
      { name: `POST /flows ×5 hot keys, ${connections} conn`, ...post(hotBatch), connections },
      { name: `POST /flows ×5 spread keys, ${connections} conn`, ...post(spreadBatch), connections },
      { name: 'POST /flows ×5 hot keys, 256 conn', ...post(hotBatch), connections: 256 },
      { name: 'POST /flows ×5 spread keys, 256 conn', ...post(spreadBatch), connections: 256 },
      { name: `GET /flows?hour=N (100 keys), ${connections} conn`, url: flows.url, path: `/flows?hour=${GET_HOUR}`, connections }
    ]
    const rows = []
    for (const c of cases) {
      say(`${c.name}: ${duration} s`)
      const before = c.rows && (await get(flows.url, '/metrics')).body
      const r = await autocannon({
        url: c.url,
        connections: c.connections,
        duration,
        requests: [c.body
          ? { method: 'POST', path: '/flows', headers: { 'content-type': 'application/json' }, setupRequest: (req) => ({ ...req, body: JSON.stringify(c.body()) }) }
          : { method: 'GET', path: c.path }]
      })
      const row = { case: c.name, connections: c.connections, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts }
      if (c.rows) {
        const after = (await get(flows.url, '/metrics')).body
        const delta = (name) => metric(after, name) - metric(before, name)
        row.rowsPerSec = delta('flows_records_committed_total') / r.duration
        row.perFlush = delta('flows_flush_requests_sum') / delta('flows_flush_requests_count')
      }
      rows.push(row)
    }
    return rows
  } finally {
    await Promise.allSettled(services.map((s) => s.stop()))
    await redis.stop()
    await pgServer.stop()
  }
}

/** The markdown table of `run`'s rows; each ratio is to the baseline at the same connection count. */
export function table (rows) {
  const fmt = (n, d = 0) => (n === undefined ? '' : n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }))
  const base = (r) => rows.find((b) => b.case.includes('baseline') && b.connections === r.connections)?.rps
  const lines = [
    '| case | RPS | p50 ms | p99 ms | rows/s written | req/flush | RPS / baseline | non-2xx | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |'
  ]
  for (const r of rows) {
    lines.push(`| ${r.case} | ${fmt(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${fmt(r.rowsPerSec)} | ${fmt(r.perFlush, 1)} | ${fmt(r.rps / base(r), 2)} | ${r.non2xx} | ${r.errors} |`)
  }
  return lines.join('\n')
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { duration: { type: 'string', default: '10' }, connections: { type: 'string', default: '32' }, workers: { type: 'string', default: '1' } } })
  const rows = await run({ duration: Number(values.duration), connections: Number(values.connections), workers: Number(values.workers) })
  console.log(`\nflows service, WORKERS=${values.workers}, batches of ${BATCH} records, ${values.duration} s per case\n`)
  console.log(table(rows))
}
