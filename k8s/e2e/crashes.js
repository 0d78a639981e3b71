// Crashes under steady load through the Ingress and the HTTPRoute at once: a container of each service
// killed with SIGKILL by its node's container runtime (what a crash does: no SIGTERM, no drain), and one
// of each pushed over its memory limit until the kernel's OOM killer ends it: every service's at once,
// each judged on its own. A crash may cost the requests that were inside that pod, nothing more: the
// edge sends a request whose connection is refused to the other pod (charts/README.md, Retries), and
// every acknowledged write is counted.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { root } from '../../charts/test/lib.js'
import { api, apiItems, kubectl, runAsync, steadyLoad, waitFor } from './lib.js'
import { ADDONS, INGRESS_URL, LOAD_HOSTS, NS, SERVICES, e2e, env, fullname } from './context.js'
import { LEAD_MS, RATE, phaseRow, phases } from './disruptions.js'
import { flowsMark, keptSince, loadTargets, seededIds } from './traffic.js'

// The command that kills a container on its node with SIGKILL: {id} is the container's ID (appended
// when absent), {node} its node's name. The lab's nodes' containerds are on this machine (its own
// and those k8s/lab/nodes.sh adds).
const KILL = env.E2E_CONTAINER_KILL ??
  (ADDONS === 'lab' ? `bash ${join(root, 'k8s', 'lab', 'nodes.sh')} ctr {node} tasks kill -s SIGKILL {id}` : '')
const DEATH_MS = 100 // from the kill command's return to the process gone and its sockets closed, at most

// Children of 32 MiB each, one every 150 ms, inside the victim's container: each stays smaller than
// the service's own process, whose OOM score is raised first, so the kernel ends the service as it
// would if the service itself had grown (a child the size of the limit would be the one killed).
// Bounded: 40 children, 10 s.
const HOG = `echo 1000 > /proc/1/oom_score_adj && exec node -e "
const { spawn } = require('node:child_process'); let n = 0
setInterval(() => { if (++n > 40) process.exit(3); ` +
  "spawn(process.execPath, ['-e', 'globalThis.b = Buffer.alloc(32 << 20, 1); setInterval(() => {}, 1e9)'], " +
  `{ stdio: 'ignore' }) }, 150)
setTimeout(() => process.exit(4), 10000)"`

const serving = async (service) => (await apiItems(`/api/v1/namespaces/${NS}/pods`,
  `app.kubernetes.io/name=${service},app.kubernetes.io/component=server`))
  .filter((p) => !p.metadata.deletionTimestamp && p.status.containerStatuses?.[0]?.ready)

/** The victim's endpoint in its Service, watched: when (Date.now()) it stopped being ready, and when it was again. */
function watchEndpoint (service, ip) {
  const times = {}
  const child = spawn('kubectl', [
    'get', 'endpointslices', '-n', NS, '-l', `kubernetes.io/service-name=${fullname(service)}`, '--watch', '-o', 'json'
  ], { stdio: ['ignore', 'pipe', 'ignore'] })
  let text = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk) => {
    text += chunk
    // One indented JSON object per event, its closing brace alone on a line.
    for (let end = text.indexOf('\n}\n'); end !== -1; end = text.indexOf('\n}\n')) {
      const slice = JSON.parse(text.slice(0, end + 2))
      text = text.slice(end + 3)
      const ready = slice.endpoints?.find((e) => e.addresses.includes(ip))?.conditions.ready
      if (ready === false && times.out === undefined) times.out = Date.now()
      if (ready === true && times.out !== undefined && times.back === undefined) times.back = Date.now()
    }
  })
  return { times, stop: () => child.kill() }
}

async function kill (pod) {
  const id = pod.status.containerStatuses[0].containerID.replace(/^[a-z]+:\/\//, '')
  const words = KILL.replaceAll('{node}', pod.spec.nodeName).split(/\s+/)
  if (!KILL.includes('{id}')) words.push(id)
  await runAsync(words[0], words.slice(1).map((w) => w.replaceAll('{id}', id)))
}

async function oom (pod) {
  // The exec ends with the container (exit 137) or, if the limit were never reached, with the hog's own exit.
  await runAsync('kubectl', [
    'exec', '-n', NS, pod.metadata.name, '-c', pod.spec.containers[0].name, '--', 'sh', '-c', HOG
  ]).catch(() => {})
}

/**
 * A container of every service crashed at once under load, one pod each; returns the problems found.
 * Each service is judged on its own: its failed requests at most those it had on the wire at the crash.
 */
async function crash (fault, ids) {
  const victims = await Promise.all(SERVICES.map(async (service) => {
    const pods = await serving(service)
    if (pods.length < 2) {
      throw new Error(`${service}: ${pods.length} serving pod(s); a crash needs another pod to fail over to`)
    }
    const pod = fault === 'SIGKILL' ? pods[0] : pods[1]
    return {
      service,
      pod,
      restarts: pod.status.containerStatuses[0].restartCount,
      endpoint: watchEndpoint(service, pod.status.podIP)
    }
  }))
  const load = steadyLoad(INGRESS_URL, { rate: RATE, targets: loadTargets(ids, LOAD_HOSTS) })
  await sleep(LEAD_MS)
  const start = Date.now()
  // The most requests to each service on the wire at once, from just before the crash until it
  // struck: at least as many as were inside its victim when it died. The kill command returns once
  // the signal is sent; the process dies, and its connections close, a moment later: a request the
  // edge wrote on a kept-alive connection meanwhile was inside it too (the edge retries only what
  // never reached a pod).
  const peaks = victims.map((v) => load.peakInFlight((t) => t.service === v.service))
  try {
    await Promise.all(victims.map((v) => (fault === 'SIGKILL' ? kill(v.pod) : oom(v.pod))))
    await sleep(DEATH_MS)
  } finally {
    victims.forEach((v, i) => { v.inFlight = peaks[i].stop() })
  }
  const struck = ((Date.now() - start) / 1000).toFixed(1)
  try {
    await Promise.all(victims.map((v) => waitFor(`${v.service}: ${v.pod.metadata.name} restarted and ready`,
      async () => {
        v.last = (await api(`/api/v1/namespaces/${NS}/pods/${v.pod.metadata.name}`)).status.containerStatuses[0]
        return v.last.restartCount > v.restarts && v.last.ready && v.endpoint.times.back !== undefined
      }, { timeoutMs: 120_000, everyMs: 500 })))
  } finally {
    for (const v of victims) v.endpoint.stop()
  }
  await sleep(3000) // the tail: anything the crashes still cost
  const r = await load.stop()
  const seconds = (at) => (at === undefined ? '?' : `${((at - start) / 1000).toFixed(1)} s`)
  const problems = []
  const said = victims.map((v) => {
    const { service, inFlight, endpoint: { times } } = v
    // The kubelet records a restarted container's end at best effort: at times none (kubernetes#101044).
    const reason = v.last.lastState.terminated?.reason ?? 'its end not recorded'
    const failed = r.failedBy[service] ?? 0
    if (failed > inFlight) {
      problems.push(`${fault} of ${service}: ${failed} failed requests, more than the ${inFlight} in flight ` +
        'at the crash')
    }
    if (fault === 'OOM' && v.last.lastState.terminated && reason !== 'OOMKilled') {
      problems.push(`${service}: the container ended ${reason}, not OOMKilled`)
    }
    return `${service}: ${failed} failed, ${inFlight} in flight at the crash, endpoint not ready after ` +
      `${seconds(times.out)}, ready again after ${seconds(times.back)}, ${reason}`
  })
  phaseRow(`${fault}: every service at once`, r, struck,
    `${said.join('; ')}${r.resent ? `; ${r.resent} writes resent with their key` : ''}`)
  if (r.unresolved) problems.push(`${fault}: ${r.unresolved} writes still failing after their resends`)
  return problems
}

export async function crashes () {
  if (!KILL) {
    e2e.notes.push('crashes: no E2E_CONTAINER_KILL for this cluster, so no container was killed (k8s/README.md)')
    return 'skipped: E2E_CONTAINER_KILL unset'
  }
  // Every service at two pods for the length of the stage (product scales from one).
  const hpa = fullname('product')
  kubectl(['patch', 'hpa', '-n', NS, hpa, '--type', 'merge', '-p', '{"spec":{"minReplicas":2}}'])
  try {
    const twoServing = async () => (await Promise.all(SERVICES.map(serving))).every((pods) => pods.length >= 2)
    await waitFor('two serving pods of each service', twoServing, { timeoutMs: 180_000, everyMs: 2000 })
    const mark = await flowsMark()
    const ids = await seededIds()
    const first = phases.length
    for (const fault of ['SIGKILL', 'OOM']) e2e.problems.push(...await crash(fault, ids))
    const { kept, acked, unknown, grew } = await keptSince(mark)
    if (!kept) {
      e2e.problems.push(`crashes: ${acked} flows writes acknowledged, ${unknown} unknown; the totals grew by ${grew}`)
    }
    const ours = phases.slice(first)
    return `${ours.length * SERVICES.length} crashes: ${ours.reduce((n, p) => n + p[1], 0)} requests, ` +
      `${ours.reduce((n, p) => n + p[2], 0)} failed; ${acked} flows writes acknowledged, all in the totals`
  } finally {
    kubectl(['patch', 'hpa', '-n', NS, hpa, '--type', 'merge', '-p', '{"spec":{"minReplicas":1}}'], { ok: true })
  }
}
