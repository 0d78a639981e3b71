// What the cluster e2e is made of: running kubectl and helm, HTTP through the ingress with a Host
// header, steady open-loop load that counts every failure, and a report table.
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'

export { waitFor } from '../../services/kit/testing/wait.js'

/** Runs a program to the end; throws with its output on a non-zero exit (unless `ok: true`). */
export function run (cmd, args, { input, ok = false, env, cwd } = {}) {
  const r = spawnSync(cmd, args, {
    input,
    cwd,
    encoding: 'utf8',
    maxBuffer: 256 << 20,
    env: env && { ...process.env, ...env }
  })
  if (r.error) throw new Error(`${cmd}: ${r.error.code === 'ENOENT' ? 'not found on PATH' : r.error.message}`)
  if (r.status !== 0 && !ok) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${r.stderr || r.stdout}`)
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** The same, without blocking the event loop (load keeps flowing meanwhile). */
export function runAsync (cmd, args, { env, cwd } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: env && { ...process.env, ...env } })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { out += d })
    child.on('error', reject)
    const settle = (code) => (code === 0
      ? resolve(out)
      : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${out}`)))
    // Its output is whole once its pipes close, which may come after the exit; a daemon it started
    // (nodes.sh) may hold them open for good, so at most a second after the exit.
    let exited = null
    child.on('close', (code) => { clearTimeout(exited); settle(code) })
    child.on('exit', (code) => { exited = setTimeout(() => settle(code), 1000) })
  })
}

/**
 * How starved this machine's CPUs are from now until stop(): the share of that time in which some task
 * waited for a CPU (Linux pressure stall information, /proc/pressure/cpu), or null where it cannot be
 * read.
 */
export function cpuPressure () {
  const stalled = () => {
    try {
      return Number(/^some .*total=(\d+)/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'))[1]) // µs
    } catch {
      return null
    }
  }
  const from = performance.now()
  const before = stalled()
  return {
    stop () {
      const after = stalled()
      return before === null || after === null ? null : (after - before) / ((performance.now() - from) * 1000)
    }
  }
}

export const kubectl = (args, opts) => run('kubectl', args, opts)
export const kjson = (args) => JSON.parse(kubectl([...args, '-o', 'json']).stdout)

/**
 * A GET of the API server's `path` (a query string's values encoded), parsed, through one `kubectl
 * proxy` kept for the run: what the phases poll under load, several times a second. A kubectl process
 * for each would start a Go program, read its discovery cache and shake hands over TLS, on the CPUs
 * the suite under test shares on the lab, while it fails over or restarts.
 */
export async function api (path) {
  const res = await fetch(new URL(path, await apiProxy()), { signal: AbortSignal.timeout(10_000) })
  if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${(await res.text()).slice(0, 200)}`)
  return res.json()
}

let proxy = null // the proxy's URL, once it serves
function apiProxy () {
  proxy ??= new Promise((resolve, reject) => {
    const child = spawn('kubectl', ['proxy', '--port=0'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = '' // its last words, for an error
    const heard = (d) => {
      out = (out + d).slice(-4096)
      const at = /Starting to serve on (\S+)/.exec(out)?.[1]
      if (!at) return
      // Serving, it never holds the e2e open, nor outlives it.
      for (const handle of [child, child.stdout, child.stderr]) handle.unref()
      resolve(`http://${at}`)
    }
    child.stdout.on('data', heard)
    child.stderr.on('data', heard)
    child.on('error', reject)
    child.on('exit', (code) => {
      proxy = null // the next call starts another
      reject(new Error(`kubectl proxy exited ${code}: ${out.trim()}`))
    })
    process.once('exit', () => child.kill())
  })
  return proxy
}

/** The items of a list `path` (the API's), with a label selector. */
export const apiItems = async (path, selector) =>
  (await api(selector ? `${path}?labelSelector=${encodeURIComponent(selector)}` : path)).items

// An idle connection is closed after 30 s, long before the proxy's own idle timeout (Traefik's 180 s)
// can close it just as a request is sent on it (ECONNRESET): the sockets a burst opened would otherwise
// sit in the pool unused and all expire at once, under the next burst.
// A socket for every request in flight (the load is open loop, bounded by its rate and timeouts): a
// request queued here, behind those the services hold while a primary moves, would count their wait
// as its own.
const agent = new Agent({ keepAlive: true, maxSockets: Infinity, timeout: 30_000 })

/**
 * One HTTP request to `base` (the ingress) with a Host header; resolves to { status, headers, body }
 * (body parsed when JSON), or rejects with the network error.
 */
export function http (base, { host, method = 'GET', path, json, headers = {}, timeoutMs = 10_000 }) {
  const body = json === undefined ? undefined : JSON.stringify(json)
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), {
      method,
      agent,
      timeout: timeoutMs,
      headers: { ...(host && { host }), ...(body && { 'content-type': 'application/json' }), ...headers }
    }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (d) => { text += d })
      res.on('end', () => {
        let parsed = text
        try { parsed = JSON.parse(text) } catch {}
        resolve({ status: res.statusCode, headers: res.headers, body: parsed })
      })
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })))
    req.on('error', reject)
    req.end(body)
  })
}

/**
 * Open-loop load: `rate` requests per second spread over `targets` (each a function returning the
 * http() options and the statuses it accepts), whatever the answers take, until stop() is called.
 * Every answer outside `expect` and every network error is a failure, counted by kind. A target with
 * `resend: n` (a write with its Idempotency-Key) is sent again after a failure, as its client would,
 * up to n times; each failed try counts. peakInFlight(match) watches the most requests under way at
 * once whose target `match` accepts, until its stop() returns that count. stop() resolves to { sent,
 * ok, failed, failures: {kind: n}, failedBy: {service: n}, resent, unresolved, p99Ms, classes } once
 * the requests in flight are in; unresolved: resent writes whose outcome stayed unknown (the target's
 * onGiveUp() is called for each); classes: for the targets with a `klass`, { sent, ok, failed,
 * answers: [[sentAt, ok, byService, ms]…] } (byService: a failure the service itself answered, as a
 * JSON error; not one of the way to it: no answer at all, or the proxy's own 502/503/504; ms: how
 * long it took).
 */
export function steadyLoad (base, { rate, targets }) {
  const result = {
    sent: 0, ok: 0, failed: 0, failures: {}, failedBy: {}, resent: 0, unresolved: 0, durations: [], classes: {}
  }
  const counted = (target, ok, at, t0, byService = ok) => {
    if (!target.klass) return
    const c = result.classes[target.klass] ??= { sent: 0, ok: 0, failed: 0, answers: [] }
    c.sent++
    c[ok ? 'ok' : 'failed']++
    c.answers.push([at, ok, byService, performance.now() - t0])
  }
  const inFlight = new Map() // a request on the wire -> its target
  const onWire = (match) => [...inFlight.values()].filter(match).length
  // The count only grows when a request is sent, so reading it at each send gives the exact peak.
  const peaks = new Set()
  const pending = new Set() // a request and the resends it may still need
  const fail = (kind, target) => {
    result.failed++
    result.failures[kind] = (result.failures[kind] ?? 0) + 1
    if (target.service) result.failedBy[target.service] = (result.failedBy[target.service] ?? 0) + 1
  }
  const what = (target) => {
    const via = target.host ? ` via ${target.host}` : ''
    return `${target.method ?? 'GET'} ${target.path.replace(/\d+/g, 'N')}${via}`
  }
  const send = (target, resends) => {
    const t0 = performance.now()
    const at = Date.now()
    const wire = http(base, target)
    inFlight.set(wire, target)
    for (const peak of peaks) if (peak.match(target)) peak.max = Math.max(peak.max, onWire(peak.match))
    wire.finally(() => inFlight.delete(wire)).catch(() => {})
    const p = wire.then((res) => {
      result.durations.push(performance.now() - t0)
      if ((target.expect ?? [200]).includes(res.status)) {
        result.ok++
        counted(target, true, at, t0)
        target.onOk?.(res)
        return
      }
      counted(target, false, at, t0, typeof res.body === 'object' && res.body !== null)
      const excerpt = typeof res.body === 'string' ? res.body.slice(0, 40).trim() : res.body?.message?.slice(0, 40)
      fail(`${res.status} ${what(target)} (${excerpt})`, target)
      if (res.status < 500) return // the request's own fault: sending it again changes nothing
      return again(target, resends)
    }, (err) => {
      counted(target, false, at, t0)
      fail(`${err.code ?? err.message} ${what(target)}`, target)
      return again(target, resends)
    })
    pending.add(p)
    p.finally(() => pending.delete(p))
    return p
  }
  const again = async (target, resends) => {
    if (!target.resend) return
    if (resends >= target.resend) {
      result.unresolved++
      target.onGiveUp?.()
      return
    }
    await sleep(250)
    result.resent++
    return send(target, resends + 1)
  }
  let stopped = false
  const started = Date.now()
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      const due = started + (i * 1000) / rate
      const wait = due - Date.now() // read once: a second read can be later, and negative
      if (wait > 0) await sleep(wait)
      if (stopped) break
      result.sent++
      send(targets[i % targets.length](i), 0)
    }
  })()
  return {
    peakInFlight (match) {
      const peak = { match, max: onWire(match) }
      peaks.add(peak)
      return { stop: () => { peaks.delete(peak); return peak.max } }
    },
    async stop () {
      stopped = true
      await loop
      while (pending.size) await Promise.all(pending) // resends join while it waits
      const sorted = result.durations.sort((a, b) => a - b)
      const p99Ms = sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] : 0
      const { durations, ...counts } = result
      return { ...counts, p99Ms: Math.round(p99Ms) }
    }
  }
}

/** A markdown table. */
export function table (header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}
