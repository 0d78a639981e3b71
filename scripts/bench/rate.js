// An open-loop load at a constant rate: request i is sent at start + i/rate whatever the answers
// before it did (a closed loop would slow down with the server and hide its queueing), over up to
// `connections` keep-alive connections. Latency is measured per request with hrtime, in µs.
import { request, Agent } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'

export async function constantRate ({ url, path, rate, duration, connections = 64 }) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const latencies = []
  const result = { sent: 0, non2xx: 0, errors: 0 }
  const pending = new Set()
  const send = () => {
    const t0 = process.hrtime.bigint()
    const p = new Promise((resolve) => {
      const req = request(url + path(), { agent }, (res) => {
        res.resume()
        res.on('end', () => {
          latencies.push(Number(process.hrtime.bigint() - t0) / 1000)
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
  latencies.sort((a, b) => a - b)
  const pct = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] / 1000
  return { rps: latencies.length / seconds, p50: pct(0.5), p99: pct(0.99), ...result }
}
