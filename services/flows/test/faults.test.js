// PostgreSQL dying under writes, for real (kill -9 of every server process, then a restart on the same
// data): the process never exits, writes answer 503 (nothing stored) or 504 (outcome unknown), and
// clients that follow that contract end with exact totals.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { startPostgres } from '@suite/kit/testing'
import { startFlows, post, flow, sumInto, storedTotals, service } from './fixtures.js'

const pick = (list) => list[Math.floor(Math.random() * list.length)]
const batchOf = (client) => Array.from({ length: 5 }, () => Math.random() < 0.9
  ? flow(pick(['web', 'api', 'db']), pick(['cache', 'queue']), 'vpc-a', Math.floor(Math.random() * 1e9), 1, 7)
  : flow(`client${client}`, 'cache', 'vpc-a', Math.floor(Math.random() * 1e6), 1, 7))

async function flowsServer () {
  const server = await startPostgres()
  const url = await server.createDatabase('flows')
  await admin(url, (c) => migrate(c, service))
  return { server, url }
}
async function admin (url, fn) {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try { return await fn(c) } finally { await c.end() }
}

/** `clients` concurrent writers, each running `client(i)` until `until()`; returns the statuses seen. */
async function writers (clients, until, client) {
  const statuses = {}
  const count = (s) => { statuses[s] = (statuses[s] ?? 0) + 1 }
  await Promise.all(Array.from({ length: clients }, (_, i) => (async () => {
    while (!until()) await client(i, count)
  })()))
  return statuses
}
async function send (url, batch, headers) {
  try {
    return (await post(url, batch, headers)).status
  } catch {
    return 'connection error'
  }
}

test('PostgreSQL killed mid-commit and down for 8 s, clients resending with their Idempotency-Key: ' +
  'no exit, 503/504, then exact totals', async () => {
  const { server, url } = await flowsServer()
  const svc = await startFlows({ DATABASE_URL: url, WORKERS: '2' })
  const sent = new Map()
  let stop = false
  try {
    // Each batch has its key and is sent until it is acknowledged, as the API asks.
    const load = writers(24, () => stop, async (i, count) => {
      const batch = batchOf(i)
      sumInto(sent, batch)
      const headers = { 'idempotency-key': randomUUID() }
      for (let status; status !== 200;) {
        status = await send(svc.url, batch, headers)
        count(status)
        if (status !== 200) await sleep(100)
      }
    })
    await sleep(1000)
    // Every COMMIT now waits after it is durable: the kill lands between commits and their answers.
    await server.holdCommits(true)
    await sleep(300) // flushes pile up, committed but unanswered
    await server.kill()
    await sleep(8000) // an outage longer than the old crash-loop limit (6 worker crashes a minute)
    assert.equal(svc.child.exitCode, null, 'the process is still running')
    await server.start()
    await server.holdCommits(false)
    await sleep(3000)
    stop = true
    const statuses = await load
    assert.deepEqual(Object.keys(statuses).filter((s) => !['200', '503', '504'].includes(s)), [],
      JSON.stringify(statuses))
    assert.ok(statuses[503] > 0, `503s during the outage: ${JSON.stringify(statuses)}`)
    assert.ok(statuses[200] > 100, `writes before and after: ${JSON.stringify(statuses)}`)
    assert.doesNotMatch(svc.logs(), /worker exited|worker crashed/)
    assert.deepEqual(await admin(url, storedTotals), sent, 'every batch counted exactly once')
  } finally {
    stop = true
    await svc.stop()
    await server.stop()
  }
})

test('PostgreSQL killed mid-commit, clients without a key: a 503 batch was not stored (resent), ' +
  'only a 504 may have been', async () => {
  const { server, url } = await flowsServer()
  const svc = await startFlows({ DATABASE_URL: url, WORKERS: '2' })
  const acked = new Map()
  const unknown = new Map()
  let stop = false
  try {
    const load = writers(24, () => stop, async (i, count) => {
      const batch = batchOf(i)
      for (;;) {
        const status = await send(svc.url, batch)
        count(status)
        if (status === 200) { sumInto(acked, batch); return }
        if (status === 504) { sumInto(unknown, batch); return } // not resent: without a key it could count twice
        await sleep(100) // 503: nothing stored, resend
      }
    })
    await sleep(1000)
    await server.holdCommits(true)
    await sleep(300)
    await server.kill()
    await sleep(1000)
    await server.start()
    await server.holdCommits(false)
    await sleep(2000)
    stop = true
    const statuses = await load
    assert.ok(statuses[504] > 0, `commits in flight at the kill are 504: ${JSON.stringify(statuses)}`)
    const stored = await admin(url, storedTotals)
    for (const [key, got] of stored) {
      const a = acked.get(key) ?? { tx: 0n, rx: 0n }
      const u = unknown.get(key) ?? { tx: 0n, rx: 0n }
      assert.ok(a.tx <= got.tx && got.tx <= a.tx + u.tx,
        `${key}: acked ${a.tx} ≤ stored ${got.tx} ≤ acked + unknown ${a.tx + u.tx}`)
    }
    for (const key of acked.keys()) assert.ok(stored.has(key), `${key} acknowledged and stored`)
  } finally {
    stop = true
    await svc.stop()
    await server.stop()
  }
})

test('PostgreSQL frozen under writes: every POST answered within 2 s (503, or 504 for a COMMIT caught in flight), ' +
  'then 200s again', async () => {
  const { server, url } = await flowsServer()
  const svc = await startFlows({ DATABASE_URL: url, WORKERS: '2', PG_CONNECT_TIMEOUT_MS: '1000' })
  const sent = new Map()
  let stop = false
  let frozen = false
  const slowest = { during: 0 }
  try {
    const load = writers(16, () => stop, async (i, count) => {
      const batch = batchOf(i)
      sumInto(sent, batch)
      const headers = { 'idempotency-key': randomUUID() }
      for (let status; status !== 200;) {
        const t0 = performance.now()
        const during = frozen
        status = await send(svc.url, batch, headers)
        if (during) slowest.during = Math.max(slowest.during, performance.now() - t0)
        count(status)
        if (status !== 200) await sleep(100)
      }
    })
    await sleep(1000)
    frozen = true
    server.pause()
    await sleep(4000)
    server.resume()
    frozen = false
    await sleep(3000)
    stop = true
    const statuses = await load
    assert.deepEqual(Object.keys(statuses).filter((s) => !['200', '503', '504'].includes(s)), [],
      JSON.stringify(statuses))
    assert.ok(statuses[503] > 0, JSON.stringify(statuses))
    assert.ok(slowest.during <= 2000, `slowest answer sent during the freeze: ${Math.round(slowest.during)} ms`)
    assert.deepEqual(await admin(url, storedTotals), sent, 'every batch counted exactly once')
  } finally {
    stop = true
    server.resume()
    await svc.stop()
    await server.stop()
  }
})

test('no primary for longer than PG_PRIMARY_WAIT_MS: each POST answers 503 once the wait is over, the ' +
  'groups behind the one that waited do not wait again; promoted, the next POST is stored', async () => {
  const { server, url } = await flowsServer()
  const svc = await startFlows({ DATABASE_URL: url, WORKERS: '1', PG_PRIMARY_WAIT_MS: '1000' })
  const record = flow('a', 'b', 'v', 1, 1, 1)
  try {
    assert.equal(await send(svc.url, [record]), 200)
    await server.demote()
    // Three waves: the first group waits for the primary while the others queue behind its flush.
    const answers = await Promise.all([0, 200, 400].flatMap((after) => Array.from({ length: 4 }, async () => {
      await sleep(after)
      const sentAt = performance.now()
      return { status: await send(svc.url, [record]), took: performance.now() - sentAt }
    })))
    assert.deepEqual([...new Set(answers.map((a) => a.status))], [503])
    const longest = Math.max(...answers.map((a) => a.took))
    assert.ok(longest < 1500, `the longest POST took ${Math.round(longest)} ms, the wait 1000 ms`)
    await server.promote()
    assert.equal(await send(svc.url, [record]), 200)
    assert.deepEqual(await admin(url, storedTotals), sumInto(new Map(), [record, record]), 'the 503s stored nothing')
  } finally {
    await svc.stop()
    await server.stop()
  }
})
