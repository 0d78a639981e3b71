// The fault suite's load: open-loop (request i leaves at i/rate whatever happened to the ones before:
// a closed loop would slow down with a faulty server and hide what the fault does), over keep-alive
// connections, every request recorded. Up to `connections` per target: enough that requests never
// queue in the client while a fault slows the answers (a queue here would count as the server's
// latency). A target that answers `Connection: close` is draining: it gets no new request, as a load
// balancer would stop sending to a pod leaving its endpoints.
import { request, Agent } from 'node:http'

/**
 * @param {object} o
 * @param {number} o.rate  new requests a second (resends by `then` come on top)
 * @param {(i: number, draining: Set<string>) => Spec} o.next  the i-th request; a Spec is
 *   { url, path, method?, body?, headers?, then?(record, resend(spec, afterMs)) }
 * @returns {{ records, now(), resend(spec, ms), stop() }}  a record: { at, ms, url, path, status?, body?,
 *   retryAfter?, error? } (at: ms from the start when it was sent; error: the socket error's code, e.g.
 *   ECONNRESET)
 */
export function startLoad ({ rate, next, connections = 1024, timeoutMs = 15_000 }) {
  const t0 = performance.now()
  const now = () => performance.now() - t0
  const records = []
  const agents = new Map()
  const draining = new Set()
  const pending = new Set()
  const track = (p) => { pending.add(p); p.finally(() => pending.delete(p)) }

  function send (spec) {
    if (!agents.has(spec.url)) agents.set(spec.url, new Agent({ keepAlive: true, maxSockets: connections }))
    const rec = { at: now(), url: spec.url, path: spec.path }
    track(new Promise((resolve) => {
      const done = () => {
        if (rec.ms !== undefined) return
        rec.ms = now() - rec.at
        records.push(rec)
        spec.then?.(rec, resend)
        resolve()
      }
      const req = request(spec.url + spec.path, {
        agent: agents.get(spec.url),
        method: spec.method ?? 'GET',
        headers: spec.headers,
        timeout: timeoutMs
      }, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (d) => { body += d })
        res.on('end', () => {
          rec.status = res.statusCode
          rec.body = body
          if (res.headers['retry-after']) rec.retryAfter = Number(res.headers['retry-after'])
          if (res.headers.connection === 'close') draining.add(spec.url)
          done()
        })
        res.on('error', (err) => { rec.error = err.code ?? err.message; done() })
      })
      req.on('timeout', () => req.destroy(Object.assign(new Error('no answer'), { code: 'TIMEOUT' })))
      req.on('error', (err) => { rec.error = err.code ?? err.message; rec.reused = req.reusedSocket; done() })
      req.end(spec.body)
    }))
  }
  function resend (spec, afterMs) {
    track(new Promise((resolve) => setTimeout(() => { send(spec); resolve() }, afterMs)))
  }

  let sent = 0
  const timer = setInterval(() => {
    const due = Math.floor((now() / 1000) * rate)
    while (sent < due) send(next(sent++, draining))
  }, 2)
  return {
    records,
    now,
    resend,
    /** Stops sending new requests; resolves once every request sent (and resend scheduled) is answered. */
    async stop () {
      clearInterval(timer)
      while (pending.size) await Promise.all(pending)
      for (const a of agents.values()) a.destroy()
    }
  }
}

/** What went wrong with a record, or null: a socket error's code, else an unexpected status. */
const failureOf = (r, ok = (s) => s < 500) => r.error ?? (ok(r.status) ? null : String(r.status))

/**
 * Records sent within [from, to] ms: how many, failures by kind, p99 and max latency in ms.
 * `ok(status)` says which statuses are not failures (default: below 500).
 */
export function summarize (records, { from = -Infinity, to = Infinity, ok } = {}) {
  const some = records.filter((r) => r.at >= from && r.at <= to)
  const failures = {}
  for (const r of some) {
    const f = failureOf(r, ok)
    if (f) failures[f] = (failures[f] ?? 0) + 1
  }
  const ms = some.map((r) => r.ms).sort((a, b) => a - b)
  const pct = (q) => (ms.length ? ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] : 0)
  return { sent: some.length, failures, p99: pct(0.99), max: ms.at(-1) ?? 0 }
}

/**
 * Seconds from `after` (ms) to the first request that starts a full second of requests without a
 * failure; null when that never happened.
 */
export function recovery (records, after, ok) {
  const later = records.filter((r) => r.at >= after).sort((a, b) => a.at - b.at)
  let start = 0
  for (let i = 0; i < later.length; i++) {
    if (failureOf(later[i], ok)) { start = i + 1; continue }
    if (start < later.length && later[i].at - later[start].at >= 1000) return (later[start].at - after) / 1000
  }
  return null
}
