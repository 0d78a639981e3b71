// Disruptions under steady load through the Ingress and the HTTPRoute: an image upgrade (where no
// release was upgraded from), a config change and a pod deletion, each with zero failed requests (on
// the lab's starved CPUs, a few of the services' own answers: `starved`) and every acknowledged write
// counted.
import { setTimeout as sleep } from 'node:timers/promises'
import { cpuPressure, kjson, kubectl, runAsync, steadyLoad, table } from './lib.js'
import {
  ADDONS, INGRESS_URL, LOAD_HOSTS, NS, RELEASE, SERVICES, TAG, TAG_B, e2e, env, fullname, helmValues
} from './context.js'
import { flowsMark, keptSince, loadTargets, seededIds } from './traffic.js'
import { followServerLogs, printClues } from './clues.js'

/** Each phase: [name, requests, failed, failures, p99, action took, what]. */
export const phases = []
export const PHASE_COLUMNS = ['phase', 'requests', 'failed', 'failures', 'p99', 'action took', 'what']

export const RATE = Number(env.E2E_RATE || 40)
// The load alone before a phase's action: every route's requests flowing (at RATE, 60 of them).
export const LEAD_MS = 1500
// Failed requests a phase allows, by its row: see underLoad's `excused`.
const excusedIn = new Map()
// The services' own answers to a request they could not serve now, each with Retry-After: load shed,
// the database not reached, a flows batch not stored (503), a commit's outcome unknown (504, resent
// with its Idempotency-Key). Never the edge's own (502, 504) nor a connection that failed.
export const OWN_ANSWERS =
  /^50[34] .*\((service overloaded|database unavailable|the batch was not stored|the database connection was lost)/
// On the lab every node's CPUs are this machine's two, which the load and the control plane share. A
// phase in which some task waited for a CPU most of the time may get a few of the services' own
// answers: a worker whose event loop a starved CPU held past its bound sheds, a flows batch whose wait
// for the hot row's lock outlasted its statement timeout is not stored. Up to 1 request in 100.
const STARVED = 0.5
const starved = (pressure) => (ADDONS === 'lab' && pressure >= STARVED
  ? {
      test: (kind) => OWN_ANSWERS.test(kind),
      why: `the services' own 503s and 504s while the lab's CPUs were starved ${(pressure * 100).toFixed(0)}% ` +
        'of the phase',
      share: 0.01
    }
  : undefined)

/**
 * `action` under steady load over `ids`, as a row of the report. `excused` ({ test(kind), why, share }):
 * failures of the kinds `test` accepts, up to `share` of the phase's requests, do not fail the run; the
 * row says how many there were and why they are allowed. Without it, a phase on the lab's starved
 * CPUs allows a few of the services' own answers (`starved`).
 */
export async function underLoad (name, ids, action, { excused } = {}) {
  const followed = followServerLogs()
  const pressure = cpuPressure()
  const load = steadyLoad(INGRESS_URL, { rate: RATE, targets: loadTargets(ids, LOAD_HOSTS) })
  const loaded = Date.now()
  await sleep(LEAD_MS)
  const started = Date.now()
  const detail = await action()
  const actionSeconds = ((Date.now() - started) / 1000).toFixed(1)
  await sleep(5000) // the tail: old pods finishing their drain
  const r = await load.stop()
  const logged = followed.stop()
  excused ??= starved(pressure.stop())
  const row = phaseRow(name, r, actionSeconds, detail)
  const allowed = Object.entries(r.failures).filter(([kind]) => excused?.test(kind)).reduce((n, [, v]) => n + v, 0)
  if (allowed && allowed <= excused.share * r.sent) {
    excusedIn.set(row, allowed)
    row[6] += `; ${allowed} failed as allowed: ${excused.why}`
  }
  if (r.failed) printClues(name, (Date.now() - loaded) / 1000, logged)
  return r
}

/** A phase's row of the report (PHASE_COLUMNS): `r` is its load's result, `seconds` its action's. */
export function phaseRow (name, r, seconds, detail) {
  const failures = Object.entries(r.failures).map(([k, v]) => `${k}: ${v}`).join(', ') || '-'
  const row = [name, r.sent, r.failed, failures, `${r.p99Ms} ms`, `${seconds} s`, detail]
  phases.push(row)
  return row
}

/** Every service's Deployment rolled out; the load flows meanwhile. */
export async function rolloutStatus () {
  await Promise.all(SERVICES.map((s) => runAsync('kubectl', [
    'rollout', 'status', '-n', NS, `deploy/${fullname(s)}`, '--timeout=300s'
  ])))
}

/**
 * A stage of underLoad() phases, `run(ids)`, over the seeded ids: every flows write acknowledged
 * during it must be in the totals at its end; its phases' failed requests are printed, and make the
 * run fail at the end (the later stages still tell something). Returns its summary.
 */
export async function phasesUnderLoad (during, run) {
  const mark = await flowsMark()
  const first = phases.length
  await run(await seededIds())
  const { kept, acked, unknown, grew } = await keptSince(mark)
  if (!kept) {
    throw new Error(`flows: ${acked} writes acknowledged ${during} and ${unknown} unknown, ${grew} in the totals`)
  }
  const mine = phases.slice(first)
  const failed = mine.reduce((s, p) => s + p[2] - (excusedIn.get(p) ?? 0), 0)
  console.error(table(PHASE_COLUMNS, mine))
  if (failed) e2e.problems.push(`${failed} failed requests ${during}`)
  const allowed = (p) => (excusedIn.has(p) ? ` (${excusedIn.get(p)} allowed)` : '')
  return `${mine.map((p) => `${p[0]}: ${p[1]} requests, ${p[2]} failed${allowed(p)}`).join('; ')}; ` +
    `${acked} acknowledged flows writes all counted`
}

export const disruptions = () => phasesUnderLoad('during the disruptions', async (ids) => {
  // Installed from a release, the release was upgraded already (release.js: upgradePath); from here
  // on the tree's chart and images run (TAG).
  if (TAG_B) {
    await underLoad('image upgrade (every service)', ids, async () => {
      await runAsync('helm', [
        'upgrade', RELEASE, e2e.chartDir, '-n', NS, '--wait', '--timeout', '10m',
        ...helmValues(SERVICES.flatMap((s) => ['--set', `${s}.image.tag=${TAG_B}`]))
      ])
      await rolloutStatus()
      return `to ${TAG_B}`
    })
  }
  const tag = TAG_B ?? TAG
  await underLoad(`config change (every service)${TAG_B ? '' : ', to the tree\'s chart and images'}`, ids, async () => {
    await runAsync('helm', [
      'upgrade', RELEASE, e2e.chartDir, '-n', NS, '--wait', '--timeout', '10m',
      ...helmValues([
        ...SERVICES.flatMap((s) => ['--set', `${s}.image.tag=${tag}`, '--set', `${s}.config.LOG_LEVEL=warn`])
      ])
    ])
    await rolloutStatus()
    return `LOG_LEVEL=warn, ${tag}`
  })
  await underLoad('pod deleted (each service with 2 replicas)', ids, async () => {
    const deleted = []
    for (const s of SERVICES) {
      const pods = kjson([
        'get', 'pods', '-n', NS, '-l', `app.kubernetes.io/name=${s},app.kubernetes.io/component=server`
      ]).items.filter((p) => !p.metadata.deletionTimestamp)
      if (pods.length < 2) continue // one replica: deleting it is an outage by definition
      kubectl(['delete', 'pod', '-n', NS, pods[0].metadata.name, '--wait=false'])
      deleted.push(s)
    }
    await sleep(2000)
    await rolloutStatus()
    return deleted.join(', ')
  })
})
