// The local load generator: vegeta (github.com/tsenart/vegeta v12, MIT; scripts/tools.sh builds it),
// fed lazily with requests drawn from a scenario, its results read back as they come.
//   - Open loop at a constant arrival rate: request i leaves at start + (i+1)/rate whatever the
//     answers before it did, so a slow target meets the same load and its queueing shows in the
//     latency (no coordinated omission). Requests in flight are capped (`workers`, the scenario's
//     MAX_VUS); a request that cannot leave on time is sent late and counted as late, one never sent
//     before the end is counted as dropped.
//   - Closed loop (rate 0): `workers` connections each sending its next request as soon as its answer
//     came, for a fixed number of requests (fixed work timed: the scale-out matrix) or for a duration
//     (throughput: npm run bench).
// Node writes the targets (vegeta's JSON format) to vegeta's stdin a little ahead of their time
// (`-lazy`: vegeta reads one per request), and reads every result as JSON (`vegeta encode`): the
// figures below, and the ETag of a read that a read-modify-write waits for (vegeta has no stateful
// scenarios; the write goes out in the next free slot after its read answered). The results go to a
// file for `vegeta plot` (a self-contained HTML report) and `vegeta report`.
import { spawn } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { UserError } from '@suite/kit/args'
import { findBinary } from '@suite/kit/testing'
import { scenario, baseUrls, maxInFlight, slo } from '../k6/scenarios.js'

const LEAD_MS = 200 // how far ahead of its time a target is written to vegeta's stdin
const TICK_MS = 10

/** vegeta: $VEGETA, or the pinned Go tool (on PATH or in the tools folder). */
function vegetaBinary () {
  try {
    return process.env.VEGETA || findBinary('vegeta')
  } catch (err) {
    throw new UserError(err.message) // one line from the ladder and the matrix, not a stack
  }
}

function run (bin, args, stdio) {
  const child = spawn(bin, args, { stdio })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const exited = new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => resolve(code ?? signal))
  })
  return { child, exited, stderr: () => stderr }
}

/** Runs `vegeta args…` to completion with stdout into `file`; rejects with its stderr. */
async function vegetaTo (file, args) {
  const p = run(vegetaBinary(), args, ['ignore', 'pipe', 'pipe'])
  const out = createWriteStream(file)
  p.child.stdout.pipe(out)
  const code = await p.exited
  if (!out.closed) await once(out, 'close')
  if (code !== 0) throw new Error(`vegeta ${args[0]} exited with ${code}: ${p.stderr()}`)
}

/** A vegeta JSON target line for request `r` against `base`. */
function targetLine (base, r) {
  const t = { method: r.method, url: base + r.path }
  const header = Object.fromEntries(Object.entries(r.headers ?? {}).map(([k, v]) => [k, [String(v)]]))
  if (r.body !== undefined) {
    header['content-type'] = ['application/json']
    t.body = Buffer.from(JSON.stringify(r.body)).toString('base64')
  }
  if (Object.keys(header).length) t.header = header
  return JSON.stringify(t) + '\n'
}

// RFC 3339 with nanoseconds → milliseconds since the epoch (Date.parse keeps only milliseconds).
function epochMs (text) {
  const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(.*)$/.exec(text)
  return Date.parse(m[1] + m[3]) + (m[2] ? Number(`0${m[2]}`) * 1000 : 0)
}

/** Nearest-rank percentile of sorted values. */
export function percentile (sorted, q) {
  if (!sorted.length) return NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]
}

/** p50, p95, p99 and max (ms) of a list of latencies. */
export const summary = (latencies) => {
  const s = Float64Array.from(latencies).sort()
  return {
    p50: percentile(s, 0.5),
    p95: percentile(s, 0.95),
    p99: percentile(s, 0.99),
    max: s.length ? s[s.length - 1] : NaN
  }
}

/**
 * How many requests left late. `offsets`: each request's start minus its planned time from the
 * attack's start ((seq+1)/rate), in ms; the attack's own start is not in the results, so lateness is
 * measured from the most punctual request. Late: more than `lateMs` after its planned time and after
 * the next request's (1/rate) — at a few requests a second, a request that still leaves before its
 * successor was due has not changed the rate the target sees.
 */
export function countLate (offsets, { rate, lateMs }) {
  const origin = offsets.reduce((a, b) => Math.min(a, b), Infinity)
  const after = Math.max(lateMs, 1000 / rate)
  return offsets.reduce((n, o) => n + (o - origin > after ? 1 : 0), 0)
}

/**
 * @param {object} o
 * @param {() => object} o.draw  the next request { method, path, name?, body?, headers?, then?(etag) }
 * @param {(method: string, url: string) => { name: string, expected: (status: number) => boolean }} o.classify
 * @param {string[]} o.baseUrls  requests go round robin over them (origins, no path)
 * @param {number} [o.rate]      requests per second, a whole number; 0: closed loop over `workers` connections
 * @param {number} [o.seconds]   duration (open loop; closed loop without `requests`)
 * @param {number} [o.requests]  closed loop: how many, as fast as they go (then `seconds` is not used)
 * @param {number} o.workers     requests in flight at most
 * @param {number} [o.lateMs]    a request that leaves later than this after its planned time (and after
 *   the next one's) is late
 * @param {number} [o.timeoutSeconds]  a request without an answer by then is an error
 * @param {string} [o.name]      the attack's name (the plot's title)
 * @param {string} [o.html]      write vegeta plot's HTML report there
 * @param {string} [o.text]      write vegeta report's text there
 * @returns figures: planned, sent, requests, seconds, rps, p50/p95/p99/max (ms), errors, errorRate,
 *   late, dropped, statuses {code: n}, routes {name: {requests, errors, p50, p95, p99, max}}, firstError,
 *   latencies (ms, every request's, in the order they came: several attacks' percentiles together)
 */
export async function attack ({
  draw, classify, baseUrls, rate = 0, seconds = 0, requests = 0, workers, lateMs = 100, timeoutSeconds = 30,
  name = 'attack', html, text
}) {
  if (!Number.isInteger(rate) || rate < 0) {
    throw new Error(`the rate must be a whole number of requests per second (got ${rate})`)
  }
  if (!(workers >= 1)) throw new Error(`workers must be at least 1 (got ${workers})`)
  const closed = rate === 0
  const fixedWork = closed && requests > 0
  if (!fixedWork && !(seconds > 0)) throw new Error('attack needs a duration, or a rate of 0 and a number of requests')
  let planned = closed ? requests : Math.round(rate * seconds)
  const bin = vegetaBinary()
  const resultsFile = html || text ? `${html ?? text}.results.json` : null
  const args = [
    'attack', '-lazy', '-format=json', `-name=${name}`, '-max-body=0', `-timeout=${timeoutSeconds}s`,
    `-max-workers=${workers}`, `-connections=${workers}`
  ]
  args.push(...(closed
    ? ['-rate=0', `-workers=${workers}`]
    : [`-rate=${rate}/1s`, `-workers=${Math.min(workers, 10)}`]))
  // An open loop runs until its planned requests are sent (the end of its input stops vegeta), and
  // for a grace period past its duration at most: a generator that fell behind sends the rest late
  // instead of dropping them at the bell.
  if (!fixedWork) args.push(`-duration=${closed ? seconds : seconds + Math.max(1, seconds / 10)}s`)
  const atk = run(bin, args, ['pipe', 'pipe', 'pipe'])
  const enc = run(bin, ['encode', '-to=json'], ['pipe', 'pipe', 'pipe'])
  atk.child.stdout.pipe(enc.child.stdin)
  // The requests' results (not vegeta's own "no targets" at the end), as JSON lines, for vegeta plot
  // and vegeta report, which read that format as well as their own.
  const file = resultsFile && createWriteStream(resultsFile)
  let attackDone = false
  atk.exited.finally(() => { attackDone = true })
  atk.child.stdin.on('error', () => {}) // vegeta stops reading when its duration is over

  // Reads waiting for their ETag: "GET <url>" → [[then, base], …]; answered writes go first.
  const waiting = new Map()
  const followUps = []
  let turn = 0
  const nextLine = () => {
    const f = followUps.shift()
    if (f) return targetLine(f.base, f.request)
    const base = baseUrls[turn++ % baseUrls.length]
    const r = draw()
    if (r.then) {
      const key = `${r.method} ${base}${r.path}`
      if (!waiting.has(key)) waiting.set(key, [])
      waiting.get(key).push({ then: r.then, base })
    }
    return targetLine(base, r)
  }

  const feed = async () => {
    const t0 = performance.now()
    let written = 0
    // Fixed work and open loop: exactly `planned` targets, then the end of input ends the attack;
    // closed loop for a duration: as many as vegeta takes. Open loop: each target written LEAD_MS
    // before its time at most, so a write's ETag is as fresh as its read's answer.
    const limit = closed && !fixedWork ? Infinity : planned
    while (written < limit && !attackDone) {
      const due = closed
        ? Math.min(limit, written + 256)
        : Math.min(limit, Math.floor((performance.now() - t0 + LEAD_MS) / 1000 * rate))
      let chunk = ''
      while (written < due) { chunk += nextLine(); written++ }
      if (chunk && !atk.child.stdin.write(chunk)) {
        await Promise.race([once(atk.child.stdin, 'drain').catch(() => {}), atk.exited])
      }
      if (!closed) await sleep(TICK_MS)
    }
    if (written === planned && !attackDone) atk.child.stdin.end()
  }

  const all = []
  const routes = new Map()
  const statuses = {}
  const starts = []
  let errors = 0
  let firstError
  let first = Infinity
  let last = -Infinity
  const read = async () => {
    for await (const line of createInterface({ input: enc.child.stdout, crlfDelay: Infinity })) {
      const r = JSON.parse(line)
      if (!r.url) { // vegeta's own, not a request: "no targets to attack" once the plan is sent
        if (r.error !== 'no targets to attack') firstError ??= r.error
        continue
      }
      file?.write(line + '\n')
      const start = epochMs(r.timestamp)
      const ms = r.latency / 1e6
      first = Math.min(first, start)
      last = Math.max(last, start + ms)
      if (!closed) starts.push(start - (r.seq + 1) * 1000 / rate)
      const c = classify(r.method, r.url)
      const ok = r.code !== 0 && c.expected(r.code)
      statuses[r.code] = (statuses[r.code] ?? 0) + 1
      if (!ok) { errors++; firstError ??= `${r.method} ${r.url}: ${r.error || r.code}` }
      all.push(ms)
      let route = routes.get(c.name)
      if (!route) routes.set(c.name, (route = { requests: 0, errors: 0, latencies: [] }))
      route.requests++
      if (!ok) route.errors++
      route.latencies.push(ms)
      const pending = r.method === 'GET' && waiting.get(`GET ${r.url}`)
      if (pending?.length) {
        const { then, base } = pending.shift()
        if (!pending.length) waiting.delete(`GET ${r.url}`)
        const etag = r.headers?.Etag?.[0]
        if (r.code === 200 && etag) followUps.push({ base, request: then(etag) })
      }
    }
  }

  try {
    const [code] = await Promise.all([atk.exited, feed(), read()])
    if (code !== 0) throw new Error(`vegeta attack exited with ${code}: ${atk.stderr()}`)
    if (file) await new Promise((resolve, reject) => file.end((err) => (err ? reject(err) : resolve())))
    if (html) await vegetaTo(html, ['plot', `-title=${name}`, resultsFile])
    if (text) await vegetaTo(text, ['report', '-type=text', resultsFile])
  } catch (err) {
    if (err.code === 'ENOENT') throw new UserError(`vegeta not found at ${bin}: run node scripts/provision.js`)
    throw err
  } finally {
    atk.child.kill()
    enc.child.kill()
    if (resultsFile) await rm(resultsFile, { force: true })
  }

  const late = closed ? 0 : countLate(starts, { rate, lateMs })
  const seconds_ = all.length ? (last - first) / 1000 : 0
  if (closed && !fixedWork) planned = all.length
  return {
    planned,
    sent: all.length,
    requests: all.length,
    seconds: seconds_,
    rps: seconds_ > 0 ? all.length / seconds_ : 0,
    ...summary(all),
    errors,
    errorRate: all.length ? errors / all.length : 0,
    late,
    dropped: closed ? 0 : Math.max(0, planned - all.length),
    statuses,
    routes: Object.fromEntries([...routes].sort(([a], [b]) => a.localeCompare(b))
      .map(([n, r]) => [n, { requests: r.requests, errors: r.errors, ...summary(r.latencies) }])),
    firstError,
    latencies: all
  }
}

/**
 * A scenario of loadtests/k6/scenarios.js at a rate (or, rate 0, `requests` as fast as they go) with
 * its settings from `env`: in flight at most its MAX_VUS, late after its LATE_MS.
 */
export function attackScenario (service, {
  env = {}, baseUrls: urls = baseUrls(env, service), rate, seconds, requests, workers, ...rest
}) {
  const s = scenario(service, env)
  return attack({
    draw: () => s.draw(Math.random),
    classify: s.classify,
    baseUrls: urls,
    rate,
    seconds,
    requests,
    workers: workers ?? maxInFlight(env, service, rate),
    lateMs: slo(env, service).maxLateMs,
    name: `${service} ${rate ? `${rate} RPS` : `${requests} requests`}`,
    ...rest
  })
}
