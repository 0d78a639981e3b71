// Disruptions under steady load through the Ingress and the HTTPRoute: an image upgrade, a config change and a pod
// deletion, each with zero failed requests and every acknowledged write counted.
import { setTimeout as sleep } from 'node:timers/promises'
import { kjson, kubectl, runAsync, steadyLoad, table } from './lib.js'
import { INGRESS_URL, LOAD_HOSTS, NS, RELEASE, SERVICES, TAG, e2e, env, fullname, helmValues } from './context.js'
import { flows, flowTotal, loadTargets, seededIds } from './traffic.js'

/** Each phase: [name, requests, failed, failures, p99, action took, what]. */
export const phases = []

const RATE = Number(env.E2E_RATE || 40)
export async function underLoad (name, ids, action) {
  const load = steadyLoad(INGRESS_URL, { rate: RATE, targets: loadTargets(ids, LOAD_HOSTS) })
  await sleep(3000)
  const started = Date.now()
  const detail = await action()
  const actionSeconds = ((Date.now() - started) / 1000).toFixed(1)
  await sleep(5000) // the tail: old pods finishing their drain
  const r = await load.stop()
  phases.push([name, r.sent, r.failed, Object.entries(r.failures).map(([k, v]) => `${k}: ${v}`).join(', ') || '-', `${r.p99Ms} ms`, `${actionSeconds} s`, detail])
  return r
}

function rolloutStatus () {
  for (const s of SERVICES) kubectl(['rollout', 'status', '-n', NS, `deploy/${fullname(s)}`, '--timeout=300s'])
}

export async function disruptions () {
  const before = await flowTotal()
  const ids = await seededIds()
  await underLoad('image upgrade (every service)', ids, async () => {
    await runAsync('helm', ['upgrade', RELEASE, e2e.chartDir, '-n', NS, '--wait', '--timeout', '10m', ...helmValues(SERVICES.flatMap((s) => ['--set', `${s}.image.tag=${TAG}-b`]))])
    rolloutStatus()
    return `to ${TAG}-b`
  })
  await underLoad('config change (every service)', ids, async () => {
    await runAsync('helm', ['upgrade', RELEASE, e2e.chartDir, '-n', NS, '--wait', '--timeout', '10m', ...helmValues([...SERVICES.flatMap((s) => ['--set', `${s}.image.tag=${TAG}-b`, '--set', `${s}.config.LOG_LEVEL=warn`])])])
    rolloutStatus()
    return 'LOG_LEVEL=warn'
  })
  await underLoad('pod deleted (each service with 2 replicas)', ids, async () => {
    const deleted = []
    for (const s of SERVICES) {
      const pods = kjson(['get', 'pods', '-n', NS, '-l', `app.kubernetes.io/name=${s},app.kubernetes.io/component=server`]).items.filter((p) => !p.metadata.deletionTimestamp)
      if (pods.length < 2) continue // one replica: deleting it is an outage by definition
      kubectl(['delete', 'pod', '-n', NS, pods[0].metadata.name, '--wait=false'])
      deleted.push(s)
    }
    await sleep(2000)
    rolloutStatus()
    return deleted.join(', ')
  })
  const after = await flowTotal()
  if (after - before !== flows.acknowledged) throw new Error(`flows: ${flows.acknowledged} writes acknowledged under load, ${after - before} in the totals`)
  const failed = phases.reduce((s, p) => s + p[2], 0)
  console.error(table(['phase', 'requests', 'failed', 'failures', 'p99', 'action took', 'what'], phases))
  // The run goes on (the later stages still tell something) and fails at the end.
  if (failed) e2e.problems.push(`${failed} failed requests during the disruptions`)
  return `${phases.map((p) => `${p[0]}: ${p[1]} requests, ${p[2]} failed`).join('; ')}; ${flows.acknowledged} acknowledged flows writes all counted`
}
