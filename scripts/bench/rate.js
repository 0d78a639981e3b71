// An open-loop load at a constant rate: request i is sent at start + i/rate whatever the answers
// before it did (a closed loop would slow down with the server and hide its queueing), over up to
// `connections` keep-alive connections. Latency is measured per request with hrtime, in µs.
import { request, Agent } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'

// `groupBy(path)`: also percentiles per group of paths sent in the same run (e.g. page 1 vs the
// deepest page, interleaved, so both meet the same noise of a shared machine).
export async function constantRate ({ url, path, rate, duration, connections = 64, groupBy }) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const latencies = []
  const grouped = {}
  const result = { sent: 0, non2xx: 0, errors: 0 }
  const pending = new Set()
  const send = () => {
    const t0 = process.hrtime.bigint()
    const target = path()
    const p = new Promise((resolve) => {
      const req = request(url + target, { agent }, (res) => {
        res.resume()
        res.on('end', () => {
          const us = Number(process.hrtime.bigint() - t0) / 1000
          latencies.push(us)
          if (groupBy) (grouped[groupBy(target)] ??= []).push(us)
          if (res.statusCode >= 300) result.non2xx++
          resolve()
        })
      })
      req.on('error', () => { result.errors++; resolve() })
      req.end()
    })
    pending.add(p)
    p.then(() => pending.delete(p))
    result.sent++
  }
  const total = Math.round(rate * duration)
  const started = performance.now()
  while (result.sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate) + 1)
    while (result.sent < due) send()
    await sleep(1)
  }
  await Promise.all(pending)
  const seconds = (performance.now() - started) / 1000
  agent.destroy()
  const pct = (list, q) => list[Math.min(list.length - 1, Math.floor(q * list.length))] / 1000
  const stats = (list) => {
    list.sort((a, b) => a - b)
    return { rps: list.length / seconds, p50: pct(list, 0.5), p99: pct(list, 0.99) }
  }
  const groups = Object.fromEntries(Object.entries(grouped).map(([k, list]) => [k, stats(list)]))
  return { ...stats(latencies), ...result, groups }
}
