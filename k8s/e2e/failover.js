// The database's own failures, under the load classes a user would watch: cached reads, database
// reads and durable writes through the Ingress. On the datastores' CloudNativePG Cluster (3 instances,
// quorum replication): a replica deleted, a switchover (what `kubectl cnpg promote` does), the primary
// pod deleted, the primary's postgres killed. Each phase prints its requests and failures by class,
// the write outage (from the first failed write until one sent after the last failed one succeeded),
// the longest acknowledged write (with E2E_PRIMARY_WAIT_MS the services hold requests while the
// primary moves), the times to a new primary, to the -rw Service leading to a ready primary again and
// to writes back; then checks that every acknowledged write is there:
// each flows record in the totals, and each updated restaurant reads as its last acknowledged update
// (or a later one whose outcome is unknown), through the services and their caches.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { api, apiItems, kubectl, steadyLoad, table, waitFor, http } from './lib.js'
import { DATA_NS, INGRESS_HOST, INGRESS_URL, PRIMARY_WAIT_MS, e2e } from './context.js'
import { CLUSTER } from './datastores.js'
import { answered, flowTotal, flows, seededIds } from './traffic.js'
import { printClues } from './clues.js'
import { restaurant } from '../../loadtests/k6/scenarios.js'

const RATE = 60
const LEAD_MS = 2000
// The restaurants each phase updates: made for it, so that no cached read's entry is invalidated.
const UPDATED = 20
const COLUMNS = [
  'phase', 'cached reads (failed)', 'database reads (failed)', 'writes (failed)', 'write outage', 'longest write',
  'new primary after', '-rw Service back after', 'writes back after', 'acknowledged writes kept'
]
// The bounds of a write outage, in seconds: a failover's, a switchover's. They are CloudNativePG's own
// e2e's for writes through the -rw Service to resume after a switchover (fastswitchover: 20 s; after a
// failover, 10 s on kind and 30 s elsewhere). Most of it is the operator's: the promotion, then its move
// of the -rw Service's label to the new primary, which both the services and the standbys (whose
// acknowledgement each commit waits for) connect through (docs/decisions/0017-cloudnative-pg-for-failover.md).
export const FAILOVER_S = 20
export const SWITCHOVER_S = 20
// What is the suite's own: writes back within FOLLOW_S of the -rw Service leading to a ready primary
// again. Each node's kube-proxy follows the new endpoint (a second) and the services' next connect
// reaches it; a standby reconnects (wal_retrieve_retry_interval: 1 s; on the lab a connect begun while
// the Service had no endpoint hangs 3 s first, k8s/README.md) and follows the new timeline (a second);
// a commit sent before then fails at its query timeout (PG_QUERY_TIMEOUT_MS: 1.5 s), resent 250 ms later.
export const FOLLOW_S = 10
// A request held while the primary moves (E2E_PRIMARY_WAIT_MS) answers after up to that wait and its
// query: the load waits that much longer for it. A cached read too, as a miss goes to the database.
export const HELD_MS = PRIMARY_WAIT_MS + 10_000
export const failoverPhases = []

export const status = async () =>
  (await api(`/apis/postgresql.cnpg.io/v1/namespaces/${DATA_NS}/clusters/${CLUSTER}`)).status
export const podsOf = async () => (await apiItems(`/api/v1/namespaces/${DATA_NS}/pods`, `cnpg.io/cluster=${CLUSTER}`))
  .filter((p) => !p.metadata.deletionTimestamp)
export async function healthy () {
  await waitFor('the database cluster healthy, every instance ready', async () => {
    const s = await status()
    return s.readyInstances === s.instances && s.currentPrimary === s.targetPrimary && /healthy/i.test(s.phase ?? '')
  }, { timeoutMs: 300_000, everyMs: 1000 })
}

/** Restaurants of the phase's own, to update under load. */
async function freshRestaurants () {
  const ids = []
  for (let i = 0; i < UPDATED; i++) {
    const res = await answered('POST /restaurants answered', {
      method: 'POST', path: '/restaurants', json: { ...restaurant(i), name: `e2e-failover-${i}` }
    })
    if (res.status !== 201) throw new Error(`POST /restaurants: ${res.status} ${JSON.stringify(res.body)}`)
    ids.push(res.body.id)
  }
  return ids
}

/**
 * The load: cached reads of the three read services, the totals of flows (a query each), writes (a
 * flows record, a restaurant's update). `updates`: each updated restaurant's writes, in the order
 * they were sent, { name, sentAt, doneAt } (doneAt: when acknowledged; Infinity while unknown).
 */
function load (ids, updated) {
  const updates = new Map(updated.map((id) => [id, []]))
  let unknown = 0 // flows writes whose every try failed: they may or may not be in the totals
  const targets = [
    (i) => ({ klass: 'cached', path: `/products/${ids.products[i % ids.products.length]}` }),
    (i) => ({ klass: 'cached', path: `/restaurants/${ids.restaurants[i % ids.restaurants.length]}` }),
    (i) => ({ klass: 'cached', path: `/menu/${ids.menus[i % ids.menus.length]}` }),
    () => ({ klass: 'database', path: `/flows?hour=${flows.hour}` }),
    () => ({
      klass: 'write',
      method: 'POST',
      path: '/flows',
      json: [{ src_app: 'e2e-failover', dest_app: 'b', vpc_id: 'v', bytes_tx: 1, bytes_rx: 0, hour: flows.hour }],
      headers: { 'idempotency-key': randomUUID() },
      resend: 5,
      onOk: () => flows.acknowledged++,
      onGiveUp: () => unknown++
    }),
    (i) => {
      const id = updated[i % updated.length]
      const write = { name: `e2e-failover-${randomUUID()}`, sentAt: Date.now(), doneAt: Infinity }
      updates.get(id).push(write)
      return {
        klass: 'write',
        method: 'PUT',
        path: `/restaurants/${id}`,
        json: { ...restaurant(i), name: write.name },
        resend: 5, // a PUT is sent again as it is, as its client would
        onOk: () => { write.doneAt = Date.now() }
      }
    }
  ]
  const held = targets.map((target) => (i) => ({ host: INGRESS_HOST, timeoutMs: HELD_MS, ...target(i) }))
  return {
    load: steadyLoad(INGRESS_URL, { rate: RATE, targets: held }),
    updates,
    flowsUnknown: () => unknown,
    // Whether an update first sent at `ms` or later is acknowledged.
    writtenSince: (ms) => [...updates.values()].some((ws) => ws.some((w) => w.sentAt >= ms && w.doneAt !== Infinity))
  }
}

/**
 * The restaurants whose name reads as none of the writes it may show: a write whose update a later
 * acknowledged write (sent after it was acknowledged) superseded, or none of them at all.
 */
async function staleRestaurants (updates) {
  const stale = []
  for (const [id, writes] of updates) {
    const acknowledged = writes.filter((w) => w.doneAt !== Infinity)
    const current = writes.filter((w) => !acknowledged.some((later) => later.sentAt > w.doneAt))
    if (!writes.length) continue
    const res = await http(INGRESS_URL, { host: INGRESS_HOST, path: `/restaurants/${id}` })
    if (res.status !== 200 || !current.some((w) => w.name === res.body.name)) {
      stale.push(`${id}: ${res.status} ${res.body?.name ?? ''}`)
    }
  }
  return stale
}

// The outage of a class: from the first failed request (when it was sent) until the first one sent
// after the last failed one had its answer (a request the service held while the primary moved counts
// until it was answered), as { from, to } (ms) or null when none failed.
export function outage (answers) {
  const sorted = [...answers].sort((a, b) => a[0] - b[0])
  const first = sorted.findIndex(([, ok]) => !ok)
  if (first === -1) return null
  const last = sorted.findLastIndex(([, ok]) => !ok)
  const back = sorted.slice(last + 1).find(([, ok]) => ok)
  return { from: sorted[first][0], to: back ? back[0] + back[3] : Infinity }
}
// The same, in seconds; 0 when none failed.
export function outageSeconds (answers) {
  const o = outage(answers)
  return o ? (o.to - o.from) / 1000 : 0
}

/**
 * Watches the database while a phase runs, every 250 ms: when a primary other than `primary` is in the
 * Cluster's status, and whether the -rw Service has a ready endpoint (`serviceReady()`: in the last
 * sample). `stop()` resolves to { promoted, serviceBack }, as ms since epoch or null: serviceBack, when
 * the Service led to a ready instance again after its last sample without one.
 */
function watchDatabase (primary) {
  let promoted = null
  let stopped = false
  const samples = [] // [ms, whether the -rw Service had a ready endpoint]
  const slices = `/apis/discovery.k8s.io/v1/namespaces/${DATA_NS}/endpointslices`
  const selector = `kubernetes.io/service-name=${CLUSTER}-rw`
  const watching = (async () => {
    while (!stopped) {
      const [s, rw] = await Promise.allSettled([status(), apiItems(slices, selector)])
      if (promoted === null && s.value?.currentPrimary && s.value.currentPrimary !== primary) promoted = Date.now()
      const ready = rw.value?.some((slice) => slice.endpoints?.some((e) => e.conditions?.ready))
      if (rw.value) samples.push([Date.now(), ready])
      await sleep(250)
    }
  })()
  return {
    serviceReady: () => samples.at(-1)?.[1] === true,
    async stop () {
      stopped = true
      await watching
      // The samples as answers (outage's shape), each taking no time.
      const serviceBack = outage(samples.map(([ms, ready]) => [ms, ready, false, 0]))?.to ?? null
      return { promoted, serviceBack }
    }
  }
}

/**
 * One phase: the load, `action(primary)`, then `settle(primary)` (by default: every instance ready
 * again, with `newPrimary` under another primary) and a write sent after it acknowledged, the
 * accounting. `bound`: the write outage allowed in seconds (0: no request may fail at all);
 * `followS`: the longest from the -rw Service back to writes back, in seconds (none when not given);
 * `cachedMayFail`: cached reads are the caller's to judge. Its row joins the table; resolves to
 * { text, classes (the answers by class), at (when the action began) }.
 */
export async function phase (name, { bound, followS, newPrimary = false, settle, cachedMayFail = false }, action) {
  await healthy()
  const primary = (await status()).currentPrimary
  const ids = await seededIds()
  const before = await flowTotal()
  const acknowledged = flows.acknowledged
  const { load: running, updates, flowsUnknown, writtenSince } = load(ids, await freshRestaurants())
  await sleep(LEAD_MS)
  const at = Date.now()
  const watch = watchDatabase(primary)
  let detail, promoted, serviceBack
  try {
    detail = await action(primary)
    if (settle) await settle(primary)
    else {
      await sleep(2000) // an instance that restarts in place goes unready first
      // Every instance ready can come before the -rw Service leads to the new primary: both are awaited.
      await waitFor(`${name}: the cluster back`, async () => {
        const s = await status()
        return s.readyInstances === s.instances && (!newPrimary || s.currentPrimary !== primary) &&
          watch.serviceReady()
      }, { timeoutMs: 180_000, everyMs: 500 })
    }
    // Whatever the status says, the phase lasts until a write sent after it is acknowledged: on a busy
    // machine it can read ready seconds after a postmaster was killed, while nothing answers.
    const settled = Date.now()
    await waitFor(`${name}: a write acknowledged`, async () => writtenSince(settled),
      { timeoutMs: 180_000, everyMs: 250 })
    await sleep(3000) // the tail: every request of the outage answered
  } finally {
    ({ promoted, serviceBack } = await watch.stop())
  }
  const since = (ms) => ms === null ? '-' : ms === Infinity ? 'not back' : `${((ms - at) / 1000).toFixed(1)} s`
  const r = await running.stop()
  const c = (k) => r.classes[k] ?? { sent: 0, failed: 0, answers: [] }
  const writesOut = outage(c('write').answers)
  const writeOutage = writesOut ? (writesOut.to - writesOut.from) / 1000 : 0
  const longestWrite = Math.max(0, ...c('write').answers.filter(([, ok]) => ok).map(([, , , ms]) => ms)) / 1000
  const reads = outageSeconds(c('database').answers)
  // Every acknowledged write, read back: the flows totals (and those whose outcome stayed unknown may
  // be there too), and each updated restaurant.
  const counted = (await flowTotal()) - before
  const flowsAcknowledged = flows.acknowledged - acknowledged
  const keptFlows = counted >= flowsAcknowledged && counted <= flowsAcknowledged + flowsUnknown()
  // Those of the unknown ones the totals hold are counted from here on, as the later stages compare
  // the totals with what was written.
  if (keptFlows) flows.acknowledged += counted - flowsAcknowledged
  const stale = await staleRestaurants(updates)
  const kept = keptFlows && !stale.length
  const updatesAcknowledged = [...updates.values()].flat().filter((w) => w.doneAt !== Infinity).length
  failoverPhases.push([
    name,
    `${c('cached').sent} (${c('cached').failed})`,
    `${c('database').sent} (${c('database').failed})`,
    `${c('write').sent} (${c('write').failed})`,
    writeOutage ? `${writeOutage.toFixed(1)} s` : '-',
    `${longestWrite.toFixed(1)} s`,
    since(promoted),
    since(serviceBack),
    since(writesOut?.to ?? null),
    `${kept ? 'yes' : 'NO'}: ${flowsAcknowledged} flows, ${updatesAcknowledged} updates`
  ])
  console.error(table(COLUMNS, failoverPhases.slice(-1)))
  if (r.failed) console.error(`${name}: ${Object.entries(r.failures).map(([k, n]) => `${k}: ${n}`).join(', ')}`)
  const problems = []
  if (!keptFlows) {
    problems.push(`flows: ${counted} counted, ${flowsAcknowledged} acknowledged and ${flowsUnknown()} unknown`)
  }
  if (stale.length) problems.push(`restaurants read older than their last acknowledged update: ${stale.join(', ')}`)
  // A cached read reaches the database only when its entry is missing (expired: CACHE_TTL_SECONDS),
  // so it may fail while writes do, never outside that.
  const cachedOutside = c('cached').answers.filter(([sentAt, ok]) => !ok &&
    !(writesOut && sentAt >= writesOut.from - 1000 && sentAt <= writesOut.to + 1000)).length
  if (cachedOutside && !cachedMayFail) problems.push(`${cachedOutside} cached reads failed while writes did not`)
  if (!bound && r.failed) problems.push(`${r.failed} requests failed`)
  if (writeOutage > bound) problems.push(`write outage ${writeOutage.toFixed(1)} s, over ${bound} s`)
  if (followS && serviceBack && writesOut && writesOut.to - serviceBack > followS * 1000) {
    problems.push(`writes back ${((writesOut.to - serviceBack) / 1000).toFixed(1)} s after the -rw Service, ` +
      `over ${followS} s`)
  }
  if (reads > bound) problems.push(`database reads out for ${reads.toFixed(1)} s, over ${bound} s`)
  for (const p of problems) e2e.problems.push(`${name}: ${p}`)
  if (problems.length) printClues(name, (Date.now() - at) / 1000 + LEAD_MS / 1000)
  return { text: `${name}: ${detail}`, classes: r.classes, at }
}

/** What `kubectl cnpg promote` does: a new target primary in the status; the operator switches over. */
export function switchoverTo (target) {
  kubectl(['patch', 'cluster', CLUSTER, '-n', DATA_NS, '--subresource=status', '--type=merge', '-p', JSON.stringify({
    status: { targetPrimary: target, targetPrimaryTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }
  })])
}

/** The four phases, one after the other; their table printed. */
export async function databaseFailover () {
  const out = []
  out.push((await phase('a replica deleted', { bound: 0 }, async (primary) => {
    const replica = (await podsOf()).find((p) => p.metadata.name !== primary)
    kubectl(['delete', 'pod', '-n', DATA_NS, replica.metadata.name, '--wait=false'])
    return `deleted ${replica.metadata.name}`
  })).text)
  const switchover = { bound: SWITCHOVER_S, followS: FOLLOW_S, newPrimary: true }
  const failover = { bound: FAILOVER_S, followS: FOLLOW_S }
  out.push((await phase('switchover (as kubectl cnpg promote)', switchover, async (primary) => {
    const target = (await podsOf()).find((p) => p.metadata.name !== primary).metadata.name
    switchoverTo(target)
    return `${primary} to ${target}`
  })).text)
  out.push((await phase('the primary pod deleted', { ...failover, newPrimary: true }, (primary) => {
    kubectl(['delete', 'pod', '-n', DATA_NS, primary, '--wait=false'])
    return `deleted ${primary}`
  })).text)
  out.push((await phase('the primary\'s postgres killed (SIGKILL)', failover, (primary) => {
    kubectl(['exec', '-n', DATA_NS, primary, '-c', 'postgres', '--', 'sh', '-c',
      'kill -9 "$(head -n 1 "$PGDATA/postmaster.pid")"'])
    return `killed the postmaster of ${primary}`
  })).text)
  await healthy()
  console.error(table(COLUMNS, failoverPhases))
  return out.join('; ')
}
export { COLUMNS as FAILOVER_COLUMNS }
