// The suite on several nodes (on the lab: k8s/lab/nodes.sh): where its pods and the database's
// instances landed (checked, not assumed); a node drained, a node lost without a word to the API
// server, the node back. Each under failover.js's load (cached reads, database reads, durable writes
// through the Ingress), on the node of the database's primary, never on the lab's own node (the
// control plane and Traefik): the figures go to the failover table, the times to the stage's result.
import { setTimeout as sleep } from 'node:timers/promises'
import { join } from 'node:path'
import { root } from '../../charts/test/lib.js'
import { api, apiItems, kubectl, runAsync, waitFor } from './lib.js'
import { CONTROL_NODE, DATABASE, NS, RELEASE, SERVICES, e2e, fullname } from './context.js'
import { HELD_MS, healthy, outage, phase, podsOf, status, switchoverTo } from './failover.js'

const NODES = join(root, 'k8s', 'lab', 'nodes.sh')
const ZONE = 'topology.kubernetes.io/zone'
// The ingress controller's namespace: the lab's Traefik (as kind's, k8s/install-addons.sh) is one
// replica (on the lab's own node: lab-traefik.js), and the load comes through it, so its node is not
// the one drained or lost either.
const INGRESS_NS = 'traefik'
// CloudNativePG's operator: its namespace and Deployment (k8s/install-addons.sh).
const OPERATOR_NS = 'cnpg-system'
// A lost node's primary. CloudNativePG begins a failover once Kubernetes finds the primary's pod not
// ready (the node's detection), but its operator's first status request to the dead primary, on a
// connection made before the loss, holds that reconcile for its whole timeout (30 s, then a connect's
// 2 s); sent up to seconds after the detection, by the reconcile the pod's unreadiness starts, the
// failover begins within OPERATOR_HELD_S of the detection. Once begun, writes are back within
// NODE_FAILOVER_S: a killed primary's failover, which a 2-s connect timeout to the dead instance in each
// of the operator's reconciles lengthens.
const OPERATOR_HELD_S = 35
const NODE_FAILOVER_S = 25

const nodes = () => apiItems('/api/v1/nodes')
const ready = (node) => node.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True')
const serverPods = async (s) => (await apiItems(`/api/v1/namespaces/${NS}/pods`,
  `app.kubernetes.io/name=${s},app.kubernetes.io/component=server`)).filter((p) => !p.metadata.deletionTimestamp)
// Every service's server pods.
const allServerPods = async () => (await Promise.all(SERVICES.map(serverPods))).flat()
const isReady = (p) => p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
const seconds = (from, to = Date.now()) => `${((to - from) / 1000).toFixed(1)} s`

/** Whether this cluster has nodes to drain and lose: several, and a database to fail over. */
export async function severalNodes () {
  if ((await nodes()).length > 1 && DATABASE === 'cloudnative-pg') return true
  e2e.notes.push('several nodes: one node here (or no CloudNativePG), so no spread, drain or node loss ' +
    '(k8s/lab/nodes.sh add)')
  return false
}

/**
 * Each service's pods on as many nodes and zones as they can be; the database's instances on distinct
 * nodes. Product's autoscaler first goes back to the chart's 2 replicas at least (the HPA phase had
 * it at 1): a single replica is down while it is evicted, whatever the node.
 */
export async function spread () {
  // The crashes stage moved this field with kubectl patch, which server-side apply counts as another
  // owner: helm takes it back. A value of the same chart and images: no migration to run (no hooks).
  await runAsync('helm', [
    'upgrade', RELEASE, e2e.chartDir, '-n', NS, '--reuse-values', '--wait', '--force-conflicts', '--no-hooks',
    '--set', 'product.autoscaling.minReplicas=2'
  ])
  await waitFor('product at 2 ready replicas', async () => (await serverPods('product')).filter(isReady).length >= 2,
    { timeoutMs: 120_000, everyMs: 1000 })
  const zoneOf = Object.fromEntries((await nodes()).map((n) => [n.metadata.name, n.metadata.labels[ZONE] ?? '-']))
  const count = Object.keys(zoneOf).length
  const zones = new Set(Object.values(zoneOf)).size
  const seen = []
  const check = (what, placed) => {
    const onNodes = new Set(placed).size
    const inZones = new Set(placed.map((n) => zoneOf[n])).size
    seen.push(`${what} ${placed.length} on ${onNodes} nodes, ${inZones} zones`)
    if (onNodes < Math.min(placed.length, count) || inZones < Math.min(placed.length, zones)) {
      e2e.problems.push(`spread: ${what}: ${placed.length} pods on ${placed.join(', ')}`)
    }
  }
  for (const s of SERVICES) check(s, (await serverPods(s)).map((p) => p.spec.nodeName))
  check('the database', (await podsOf()).map((p) => p.spec.nodeName))
  return `${count} nodes in ${zones} zones: ${seen.join('; ')}`
}

/**
 * The primary's node, made one with neither the control plane nor the ingress controller first (a
 * switchover, outside any measured phase).
 */
async function primaryNode () {
  await healthy()
  const nodeOf = async (pod) => (await podsOf()).find((p) => p.metadata.name === pod).spec.nodeName
  // A pod evicted or finished stays listed on its node until deleted: only the live ones count.
  const ingress = await apiItems(`/api/v1/namespaces/${INGRESS_NS}/pods`)
  const live = ingress.filter((p) => !p.metadata.deletionTimestamp && !['Succeeded', 'Failed'].includes(p.status.phase))
  const spared = new Set([CONTROL_NODE, ...live.map((p) => p.spec.nodeName)])
  let primary = (await status()).currentPrimary
  if (spared.has(await nodeOf(primary))) {
    const target = (await podsOf()).find((p) => !spared.has(p.spec.nodeName))?.metadata.name
    if (!target) {
      const pods = ingress.map((p) => `${p.metadata.name} on ${p.spec.nodeName}: ${p.status.phase}`)
      throw new Error(`no database instance on a node other than ${[...spared].join(', ')} ` +
        `(${INGRESS_NS}: ${pods.join(', ')})`)
    }
    switchoverTo(target)
    await waitFor('the primary on an added node', async () => (await status()).currentPrimary === target,
      { timeoutMs: 120_000, everyMs: 500 })
    await healthy()
    primary = target
  }
  return nodeOf(primary)
}

/** The release's PodDisruptionBudgets, sampled: none ever below its healthy floor. */
function budgets () {
  const breaches = new Set()
  // A sample that fails (the API server slow, or answering nothing while the node drains) is skipped.
  const sample = () => apiItems(`/apis/policy/v1/namespaces/${NS}/poddisruptionbudgets`)
    .then((items) => {
      for (const pdb of items) {
        if ((pdb.status.currentHealthy ?? 0) < (pdb.status.desiredHealthy ?? 0)) breaches.add(pdb.metadata.name)
      }
    })
    .catch(() => {})
  const timer = setInterval(sample, 500)
  return { stop: () => { clearInterval(timer); return [...breaches] } }
}

// A drain's bound on the write outage, in seconds: its switchover, while the node's other pods start
// elsewhere on the same CPUs (k8s/README.md#several-nodes-a-drain-and-a-lost-node).
const DRAIN_S = 30

/**
 * `kubectl drain` of the primary's node under load: every eviction through the budgets, the primary
 * switched over before its node empties (the operator does it once the node is cordoned), the
 * outage within DRAIN_S; then the node uncordoned and the database whole again.
 */
export async function drain () {
  const node = await primaryNode()
  const onNode = (await allServerPods()).filter((p) => p.spec.nodeName === node).length
  let drained, watch, switchedAt, waited
  const started = Date.now()
  const r = await phase(`${node} drained (kubectl drain)`, {
    bound: DRAIN_S,
    newPrimary: true,
    settle: async (primary) => {
      // Each eviction a budget refused (the database's primary's, until its switchover) is retried.
      waited = ((await drained).match(/violate the pod's disruption budget/g) ?? []).length
      switchedAt = Date.now()
      // Its own instance cannot leave (a local volume): it waits for the node, the others serve.
      await waitFor('a new primary, the other instances ready', async () => {
        const s = await status()
        return s.currentPrimary !== primary && s.readyInstances >= s.instances - 1
      }, { timeoutMs: 180_000, everyMs: 500 })
    }
  }, () => {
    watch = budgets()
    drained = runAsync('kubectl', ['drain', node, '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=5m'])
    return `${onNode} suite pods and the primary on ${node}`
  })
  const breaches = watch.stop()
  if (breaches.length) e2e.problems.push(`drain: below their budget: ${breaches.join(', ')}`)
  const failedReads = `${r.classes.cached?.failed ?? 0} cached and ${r.classes.database?.failed ?? 0} database`
  const drainTook = seconds(started, switchedAt)
  kubectl(['uncordon', node])
  await healthy()
  return `${r.text}; drained in ${drainTook} (${waited} evictions held back by a budget), ${failedReads} reads ` +
    `failed, the release's budgets ${breaches.length ? `broken: ${breaches.join(', ')}` : 'kept'}; uncordoned, ` +
    'the database whole again ' +
    `${seconds(started)} after the drain began`
}

let lost = null // the node lost, for nodeBack()

/**
 * CloudNativePG's operator, in its own log since `since`: when it began a failover, and when the first
 * status request to `primary` that waited its whole timeout ended (what holds a failover from a lost
 * node). Resolves to { began, heldUntil }, each in ms or null.
 */
async function operatorAccount (since, primary) {
  const log = await runAsync('kubectl', ['logs', '-n', OPERATOR_NS, 'deploy/cnpg-controller-manager',
    `--since-time=${new Date(since).toISOString()}`])
  const lines = log.split('\n').flatMap((line) => {
    try { return [JSON.parse(line)] } catch { return [] }
  })
  const at = (line) => (typeof line.ts === 'number' ? line.ts * 1000 : Date.parse(line.ts))
  const began = lines.find((l) => /initiating a failover/.test(l.msg))
  const held = lines.find((l) => l.msg === 'Cannot extract Pod status' && l.podName === primary &&
    /Client\.Timeout exceeded/.test(l.error ?? ''))
  return { began: began ? at(began) : null, heldUntil: held ? at(held) : null }
}

/**
 * The primary's node lost at once (nodes.sh lose: its daemons and pods SIGKILLed, its network cut),
 * under load. Requests may fail only until the endpoints leave the dead pods (the node NotReady, its
 * pods unready) and a request timeout after; writes come back within the database's failover bound
 * after that detection; the pods run elsewhere once evicted (the chart's nodeLoss.tolerationSeconds).
 */
export async function nodeLost () {
  const node = await primaryNode()
  const marks = {}
  const r = await phase(`${node} lost (no warning)`, {
    bound: Infinity, // judged below, against the detection time measured
    newPrimary: true,
    cachedMayFail: true,
    settle: async (primary) => {
      marks.primary = primary
      await waitFor(`${node} NotReady`, async () => !ready((await nodes()).find((n) => n.metadata.name === node)),
        { timeoutMs: 180_000, everyMs: 500 })
      marks.notReady = Date.now()
      await waitFor('no endpoint left on the lost node', async () => (await apiItems(
        `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`, 'app.kubernetes.io/component=server'
      )).flatMap((e) => e.endpoints ?? []).every((e) => e.nodeName !== node || !e.conditions?.ready),
      { timeoutMs: 120_000, everyMs: 500 })
      marks.endpointsGone = Date.now()
      await waitFor('a new primary', async () => (await status()).currentPrimary !== primary,
        { timeoutMs: 180_000, everyMs: 500 })
        .catch(async (err) => { // what the operator said, and where it ran
          const operator = (await apiItems(`/api/v1/namespaces/${OPERATOR_NS}/pods`)).map((p) => `${p.metadata.name} ` +
            `on ${p.spec.nodeName}`)
          throw new Error(`${err.message} (the Cluster: ${(await status()).phase}; the operator: ` +
            `${operator.join(', ')})`)
        })
      marks.newPrimary = Date.now()
      await waitFor('every service\'s pods ready elsewhere', async () => {
        for (const s of SERVICES) {
          const live = (await serverPods(s)).filter((p) => p.spec.nodeName !== node && isReady(p))
          const want = (await api(`/apis/apps/v1/namespaces/${NS}/deployments/${fullname(s)}`)).spec.replicas
          if (live.length < want) return false
        }
        return true
      }, { timeoutMs: 300_000, everyMs: 1000 })
      marks.rescheduled = Date.now()
    }
  }, async () => {
    marks.lost = Date.now()
    await runAsync('bash', [NODES, 'lose', node])
    return `${node} gone with its pods and the primary`
  })
  lost = node
  const detection = (marks.notReady - marks.lost) / 1000
  const answers = Object.values(r.classes).flatMap((c) => c.answers)
  // The requests that met the dead pods (no answer, or the proxy's own): the database's outage is the
  // other failures', judged by when the writes came back.
  const deadPods = answers.filter(([, ok, byService]) => !ok && !byService).map(([at]) => at)
  const lastDeadPod = deadPods.length ? Math.max(...deadPods) : null
  const writesOut = outage(r.classes.write?.answers ?? [])
  const writesBack = writesOut ? (writesOut.to === Infinity ? null : writesOut.to) : marks.lost
  // The bounds: requests meet the dead pods only when sent before the endpoints left them (and a
  // request timeout after, for one already on its way); writes back within the failover bound after
  // the node was found lost.
  const deadPodsUntil = marks.endpointsGone + HELD_MS
  if (lastDeadPod && lastDeadPod > deadPodsUntil) {
    e2e.problems.push(`node lost: a request met a dead pod ${seconds(marks.endpointsGone, lastDeadPod)} after the ` +
      'endpoints had left the lost node')
  }
  // Writes back within the failover bound of the failover's beginning, which is within the operator's
  // hold of the detection.
  const { began, heldUntil } = await operatorAccount(marks.lost, marks.primary)
  if (!began) e2e.problems.push('node lost: the operator\'s log names no failover begun')
  else if (!writesBack || writesBack - began > NODE_FAILOVER_S * 1000) {
    e2e.problems.push(`node lost: writes back ${writesBack ? seconds(began, writesBack) : 'never'} after ` +
      `the operator began the failover, over ${NODE_FAILOVER_S} s`)
  }
  if (!writesBack || writesBack - marks.lost > (detection + OPERATOR_HELD_S + NODE_FAILOVER_S) * 1000) {
    e2e.problems.push(`node lost: writes back ${writesBack ? seconds(marks.lost, writesBack) : 'never'}, over ` +
      `the node's detection (${detection.toFixed(1)} s), the operator's hold (${OPERATOR_HELD_S} s) and the ` +
      `failover bound (${NODE_FAILOVER_S} s)`)
  }
  const held = heldUntil
    ? ` (a status request to the lost primary waited its whole timeout until ${seconds(marks.lost, heldUntil)})`
    : ''
  return `${r.text}; NotReady after ${seconds(marks.lost, marks.notReady)}; endpoints off it after ` +
    `${seconds(marks.lost, marks.endpointsGone)}; requests meeting dead pods until ` +
    `${lastDeadPod ? seconds(marks.lost, lastDeadPod) : '-'} (${deadPods.length}); failover begun after ` +
    `${began ? seconds(marks.lost, began) : '-'}${held}; new primary after ` +
    `${seconds(marks.lost, marks.newPrimary)}; writes back after ${seconds(marks.lost, writesBack)}; every ` +
    `service's pods ready elsewhere after ${seconds(marks.lost, marks.rescheduled)}`
}

/** The lost node back: Ready again, the database whole (its instance rejoins from its volume). */
export async function nodeBack () {
  if (!lost) return 'no node was lost'
  const started = Date.now()
  await runAsync('bash', [NODES, 'restore', lost])
  const readyAfter = seconds(started)
  await healthy()
  const wholeAfter = seconds(started)
  await sleep(5000)
  const back = (await allServerPods()).filter((p) => p.spec.nodeName === lost).length
  const instance = (await podsOf()).find((p) => p.spec.nodeName === lost)?.metadata.name ?? 'none'
  return `${lost} Ready after ${readyAfter}; the database whole after ${wholeAfter} (its instance there: ` +
    `${instance}); suite pods back on it: ${back} (a Deployment does not move pods back)`
}
