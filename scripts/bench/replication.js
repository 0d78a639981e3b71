// What synchronous replication costs a write: flows POST and profile PUT at a fixed rate, each on
// PostgreSQL alone and on a primary with two standbys under quorum replication (ANY 1: a commit is
// acknowledged once one standby has flushed it; the chart's CloudNativePG Cluster of 3 instances),
// measured side by side in interleaved rounds. The row of the replicated one gives the service's
// CPU per request over the single one's (CPU n×) and its p99; "PostgreSQL µs/req" counts every
// PostgreSQL process of its side, the standbys' too.
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { startPostgres, startStandby, startRedis, startService, databaseEnv } from '@suite/kit/testing'
import { pgTarget } from '@suite/kit/etl'
import { measureRounds } from './measure.js'
import { imageNodeArgs, POD_MEMORY_MB } from './harness.js'
import { restaurant } from '../../loadtests/k6/scenarios.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const RATE = 500
const RESTAURANTS = 2000
const ROUNDS = 4

export const defaults = {}

export async function run ({ duration = 10, workers = 1, settings = {} }) {
  const say = (m) => process.stderr.write(`bench replication: ${m}\n`)
  say('starting PostgreSQL alone, a primary with two standbys (ANY 1), and Redis')
  const single = await startPostgres()
  const primary = await startPostgres({ settings: { synchronous_standby_names: 'ANY 1 (s1, s2)' } })
  const standbys = await Promise.all(['s1', 's2'].map((name) => startStandby(primary, name)))
  const redis = await startRedis()
  const running = []
  const sides = { alone: { pg: single, servers: [single] }, quorum: { pg: primary, servers: [primary, ...standbys] } }
  try {
    const rows = []
    for (const service of ['flows', 'profile']) {
      const instances = {}
      const ids = {}
      for (const [side, { pg: server }] of Object.entries(sides)) {
        const url = await server.createDatabase(`${service}_${side}`)
        ids[side] = await prepare(url, service)
        instances[side] = await startService({
          entry: `${root}services/${service}/src/cli.js`,
          nodeArgs: imageNodeArgs(root),
          memoryLimitMb: POD_MEMORY_MB,
          env: {
            LOG_LEVEL: 'error', ...settings, ...databaseEnv(url), REDIS_URL: redis.url, WORKERS: String(workers)
          }
        })
        running.push(instances[side])
      }
      const route = service === 'flows' ? 'POST /flows ×5' : 'PUT /restaurants/:id'
      const cases = Object.entries(instances).map(([side, instance], i) => ({
        name: `${route} (${side === 'alone' ? 'PostgreSQL alone' : '3 instances, quorum'})`,
        url: instance.url,
        rate: RATE,
        pid: instance.child.pid,
        servers: { PostgreSQL: sides[side].servers, Redis: redis },
        request: write(service, ids[side]),
        ...(i && { pairOf: `${route} (PostgreSQL alone)` })
      }))
      say(`${service}: ${ROUNDS} interleaved rounds of ${duration / ROUNDS} s at ${RATE}/s`)
      rows.push(...await measureRounds(cases, { service, duration, connections: 64, servers: {} }, ROUNDS))
    }
    return rows
  } finally {
    await Promise.allSettled(running.map((s) => s.stop()))
    await Promise.allSettled([...standbys.map((s) => s.stop()), primary.stop(), single.stop(), redis.stop()])
  }
}

// The service's tables, and for profile the restaurants its PUTs replace: resolves to their ids.
async function prepare (url, service) {
  const db = new pg.Client({ connectionString: url })
  await db.connect()
  try {
    await migrate(db, { name: service, migrations: `${root}services/${service}/migrations` })
    if (service !== 'profile') return []
    const etl = await import(`${root}services/profile/etl/index.js`)
    const dir = `${root}.data/bench-replication-${RESTAURANTS}`
    await etl.generate({ out: dir, restaurants: RESTAURANTS, seed: 1 })
    await etl.load({ db: pgTarget(db), dir, rejectsFile: `${dir}/rejects.csv`, progress: false })
    return (await db.query('SELECT id FROM restaurants ORDER BY id')).rows.map((r) => r.id)
  } finally {
    await db.end()
  }
}

let n = 0
const write = (service, ids) => service === 'flows'
  ? () => ({
      method: 'POST',
      path: '/flows',
      body: Array.from({ length: 5 }, () => ({
        src_app: `app${n % 100}`, dest_app: 'svc', vpc_id: 'vpc-0', bytes_tx: 1, bytes_rx: 1, hour: 1 + (n++ % 24)
      }))
    })
  : () => ({ method: 'PUT', path: `/restaurants/${ids[n % ids.length]}`, body: restaurant(n++) })
