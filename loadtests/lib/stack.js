// The services on real PostgreSQL and Redis, with generated data, for the matrix and the tests:
// a migrated database per service loaded through the service's own generator and ETL, and any
// number of instances of a service as real processes.
import { fileURLToPath } from 'node:url'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { pgTarget } from '@suite/kit/etl'
import { createDatabase, startService, startPostgres, startRedis } from '@suite/kit/testing'
import { NAMES, serviceNamed } from '../../services/list.js'

const root = fileURLToPath(new URL('../../', import.meta.url))
export const SERVICE_NAMES = NAMES

const cliOf = (service) => `${root}services/${service}/src/cli.js`

/** The given PostgreSQL (admin URL) and Redis, or throwaway ones for what is not given; stop() stops only those. */
export async function servers ({ databaseUrl, redisUrl } = {}) {
  const owned = []
  if (!databaseUrl) { const s = await startPostgres(); owned.push(s); databaseUrl = s.url }
  if (!redisUrl) { const s = await startRedis(); owned.push(s); redisUrl = s.url }
  return { databaseUrl, redisUrl, stop: () => Promise.allSettled(owned.map((s) => s.stop())) }
}

/**
 * A new database on the server of `adminUrl`, migrated, with `rows` generated rows loaded.
 * Returns { url, env }: env tells the scenario the ids that exist (<SERVICE>_IDS, PRODUCT_PRODUCTS).
 */
export async function prepareDatabase (service, { adminUrl, rows = 1000 }) {
  const url = await createDatabase(adminUrl, `loadtest_${service}`)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await migrate(client, { name: service, migrations: `${root}services/${service}/migrations` })
    // The generator's size option and the table whose ids the scenarios draw from.
    const { data } = serviceNamed(service)
    if (!data) return { url, env: {} }
    const dir = await mkdtemp(join(tmpdir(), `loadtest-${service}-`))
    try {
      // By path: the list names the services, each with its own data module.
      const etl = await import(`${root}services/${service}/etl/index.js`)
      await etl.generate({ out: dir, [data.option]: rows, seed: 1 })
      await etl.load({ db: pgTarget(client), dir, progress: false })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
    const { rows: [r] } = await client.query(`SELECT min(id) AS lo, max(id) AS hi, count(*) AS n FROM ${data.table}`)
    const prefix = service.toUpperCase()
    return {
      url,
      env: { [`${prefix}_IDS`]: `${r.lo}-${r.hi}`, ...(service === 'product' && { PRODUCT_PRODUCTS: String(r.n) }) }
    }
  } finally {
    await client.end()
  }
}

/**
 * `count` processes of `service` on `databaseUrl` sharing `redisUrl`, each with `workers` threads;
 * `memoryLimitMb`: each in a memory cgroup of that limit, as in a pod (startService).
 */
export function startInstances (service, { count = 1, workers = 1, databaseUrl, redisUrl, env = {}, memoryLimitMb }) {
  return Promise.all(Array.from({ length: count }, () => startService({
    entry: cliOf(service),
    args: ['serve'],
    memoryLimitMb,
    env: { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, WORKERS: String(workers), LOG_LEVEL: 'error', ...env }
  })))
}

/** Requests a running instance has answered so far on its API routes (from its /metrics). */
export async function requestsServed (url) {
  const text = await (await fetch(`${url}/metrics`)).text()
  let sum = 0
  for (const line of text.split('\n')) {
    if (line.startsWith('http_request_duration_seconds_count{') && !/route="\/(metrics|healthz|readyz)"/.test(line)) {
      sum += Number(line.slice(line.lastIndexOf(' ') + 1))
    }
  }
  return sum
}
