// Many writers at once: several service processes (each with worker threads) on one database,
// hammering overlapping hot keys; then kill -9 of a process in the middle of the load.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { flowsDatabase, startFlows, post, get, metric, flow, keyOf, sumInto, storedTotals } from './fixtures.js'

const HOURS = [7, 8]
const SRC = ['web', 'api', 'db']
const DEST = ['cache', 'queue']
const VPC = ['vpc-a', 'vpc-b']
const pick = (list) => list[Math.floor(Math.random() * list.length)]
// Mostly 24 hot keys shared by every writer, one in ten a key of its own.
const record = (client) => Math.random() < 0.9
  ? flow(
      pick(SRC), pick(DEST), pick(VPC), Math.floor(Math.random() * 1e9), Math.floor(Math.random() * 1e9), pick(HOURS)
    )
  : flow(`client${client}`, pick(DEST), pick(VPC), Math.floor(Math.random() * 1e6), 1, pick(HOURS))

/**
 * `clients` concurrent clients per service, each POSTing batches of 5 until `until()`; returns the
 * sums of what was sent and of what was acknowledged (200), and the count of answers by status.
 * A client does what the API asks: after a 503 (nothing of the batch stored) it sends the same batch
 * again, so an overloaded machine slows the test down but the totals must still be exact.
 */
async function hammer (services, { clients, until }) {
  const sent = new Map()
  const acked = new Map()
  const statuses = {}
  await Promise.all(services.flatMap((svc, s) => Array.from({ length: clients }, async (_, c) => {
    while (!until()) {
      const batch = Array.from({ length: 5 }, () => record(`${s}-${c}`))
      sumInto(sent, batch)
      let status = 503
      for (let attempt = 0; status === 503 && attempt < 20; attempt++) {
        if (attempt) await sleep(50)
        status = 'error'
        try { status = (await post(svc.url, batch)).status } catch {}
        if (status === 503) statuses.retried = (statuses.retried ?? 0) + 1
      }
      statuses[status] = (statuses[status] ?? 0) + 1
      if (status === 200) sumInto(acked, batch)
      else if (status === 'error') await sleep(5) // that process is gone
    }
  })))
  return { sent, acked, statuses }
}

async function totalsByGet (url) {
  const totals = new Map()
  for (const hour of HOURS) {
    for (let next = `/flows?hour=${hour}&limit=10000`; next;) { // every page, by the Link header
      const page = await get(url, next)
      for (const f of page.body) totals.set(keyOf(f), { tx: BigInt(f.bytes_tx), rx: BigInt(f.bytes_rx) })
      next = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1]
    }
  }
  return totals
}

test('3 processes × 2 workers on overlapping hot keys: totals equal exactly the sums sent', async () => {
  const url = await flowsDatabase()
  const services = await Promise.all([0, 1, 2].map(() => startFlows({ DATABASE_URL: url, WORKERS: '2' })))
  try {
    let posts = 0
    const { sent, acked, statuses } = await hammer(services, { clients: 24, until: () => ++posts > 3000 })
    assert.equal(statuses[200], 3000, `every POST acknowledged: ${JSON.stringify(statuses)}`)
    assert.deepEqual(acked, sent)
    // Every process answers the same, exact totals (read from PostgreSQL, no cache to be stale).
    for (const svc of services) assert.deepEqual(await totalsByGet(svc.url), sent)
    const db = new pg.Client({ connectionString: url })
    await db.connect()
    assert.deepEqual(await storedTotals(db), sent)
    // Rows are locked in key order by every flush: PostgreSQL never had to break a deadlock.
    const { rows: [{ deadlocks }] } = await db.query(
      'SELECT deadlocks::int FROM pg_stat_database WHERE datname = current_database()'
    )
    assert.equal(deadlocks, 0)
    await db.end()
    // The writers grouped their POSTs: fewer transactions than requests.
    let flushes = 0
    let requests = 0
    for (const svc of services) {
      const text = (await get(svc.url, '/metrics')).body
      flushes += metric(text, 'flows_flush_requests_count')
      requests += metric(text, 'flows_flush_requests_sum')
    }
    assert.equal(requests, statuses[200])
    assert.ok(flushes < requests, `${requests} POSTs in ${flushes} flushes`)
  } finally {
    await Promise.all(services.map((s) => s.stop()))
  }
})

test('kill -9 of a process under load: every acknowledged record is in the totals', async () => {
  const url = await flowsDatabase()
  const services = await Promise.all([0, 1].map(() => startFlows({ DATABASE_URL: url, WORKERS: '2' })))
  try {
    let stop = false
    const load = hammer(services, { clients: 24, until: () => stop })
    await sleep(1000)
    services[0].child.kill('SIGKILL')
    await sleep(1000)
    stop = true
    const { sent, acked, statuses } = await load
    assert.ok(statuses.error > 0, `the killed process failed some requests: ${JSON.stringify(statuses)}`)
    assert.ok(statuses[200] > 20, `load ran: ${JSON.stringify(statuses)}`)
    const stored = await totalsByGet(services[1].url)
    for (const [key, s] of sent) {
      const a = acked.get(key) ?? { tx: 0n, rx: 0n }
      const got = stored.get(key) ?? { tx: 0n, rx: 0n }
      assert.ok(a.tx <= got.tx && got.tx <= s.tx, `${key} bytes_tx: acked ${a.tx} ≤ stored ${got.tx} ≤ sent ${s.tx}`)
      assert.ok(a.rx <= got.rx && got.rx <= s.rx, `${key} bytes_rx: acked ${a.rx} ≤ stored ${got.rx} ≤ sent ${s.rx}`)
    }
    assert.deepEqual([...stored.keys()].filter((k) => !sent.has(k)), [], 'nothing stored that was not sent')
  } finally {
    await Promise.all(services.map((s) => s.stop()))
  }
})

test('SIGTERM under load: the groups in flight commit before exit 0, every acknowledged record stored', async () => {
  const url = await flowsDatabase()
  const svc = await startFlows({ DATABASE_URL: url, WORKERS: '2', FLOWS_BATCH_WINDOW_MS: '20' })
  let stop = false
  const load = hammer([svc], { clients: 32, until: () => stop })
  await sleep(800)
  const exit = await svc.stop('SIGTERM')
  stop = true
  const { sent, acked, statuses } = await load
  assert.deepEqual(exit, { code: 0, signal: null })
  assert.ok(statuses[200] > 20, `load ran: ${JSON.stringify(statuses)}`)
  const db = new pg.Client({ connectionString: url })
  await db.connect()
  const stored = await storedTotals(db)
  await db.end()
  for (const [key, s] of sent) {
    const a = acked.get(key) ?? { tx: 0n, rx: 0n }
    const got = stored.get(key) ?? { tx: 0n, rx: 0n }
    assert.ok(a.tx <= got.tx && got.tx <= s.tx, `${key}: acked ${a.tx} ≤ stored ${got.tx} ≤ sent ${s.tx}`)
  }
})
