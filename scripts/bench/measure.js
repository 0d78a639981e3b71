// How a case is measured: vegeta in a closed loop (the RPS a fixed number of clients get) or an open
// loop at a fixed rate, cases compared in interleaved rounds, and the CPU per request of the service,
// PostgreSQL, Redis and the whole machine over the measured rounds (Linux /proc).
import { readFileSync } from 'node:fs'
import { get, metric, cpuSeconds } from '@suite/kit/testing'
import { attack, summary } from '../../loadtests/lib/vegeta.js'

const RATE_CONNECTIONS = 64 // fixed-rate cases: requests in flight at most (vegeta's workers)

/** A case alone: one run of `duration`, or, for a case with `groups`, percentiles per group of paths. */
export async function measure (c, { service, duration, connections, servers }) {
  const row = {
    service,
    case: c.name,
    connections: c.connections ?? connections,
    baseline: c.baseline,
    pairOf: c.pairOf
  }
  if (c.rate) {
    // Open loop at a fixed rate (vegeta): latency as clients arriving on their own see it, the
    // target's queueing included; `groups` (path → name) also gives percentiles per group of paths
    // sent in the same run (page 1 vs the deepest page, interleaved: both meet the same noise).
    const pathOf = (url) => url.replace(/^[a-z]+:\/\/[^/]+/, '')
    const f = await attack({
      draw: () => ({ method: 'GET', path: c.path() }),
      classify: (method, url) => ({
        name: c.groups?.[pathOf(url)] ?? c.name,
        expected: (status) => status >= 200 && status < 300
      }),
      baseUrls: [c.url],
      rate: c.rate,
      seconds: duration,
      workers: RATE_CONNECTIONS,
      name: `${service}: ${c.name}`
    })
    const common = {
      ...row,
      connections: RATE_CONNECTIONS,
      rate: c.rate,
      non2xx: non2xx(f),
      errors: f.statuses[0] ?? 0,
      counters: { late: f.late, dropped: f.dropped }
    }
    if (!c.groups) return [{ ...common, rps: f.rps, p50: f.p50, p99: f.p99 }]
    return Object.entries(f.routes).map(([name, g]) =>
      ({ ...common, case: `${name} (interleaved)`, rps: g.requests / f.seconds, p50: g.p50, p99: g.p99 }))
  }
  return measureRounds([c], { service, duration, connections, servers }, 1)
}

/**
 * Throughput: a closed loop over `connections` (vegeta), each sending its next request as soon as
 * its answer came; or, for a case with a `rate`, an open loop at that rate (its CPU per request is
 * then what a request costs at that load, not at the most the machine gives). Several cases are
 * measured in `rounds` interleaved rounds of duration / rounds (a b, b a, a b…), each case's figures
 * over all its rounds (its percentiles over every request).
 */
export async function measureRounds (cases, { service, duration, connections, servers }, rounds) {
  const sides = cases.map((c) => {
    const draw = c.request ?? (() => ({ method: 'GET', path: c.path() }))
    const row = {
      service,
      case: c.name,
      connections: c.rate ? RATE_CONNECTIONS : c.connections ?? connections,
      rate: c.rate,
      baseline: c.baseline,
      pairOf: c.pairOf,
      sameBytesPair: c.sameBytesPair,
      writes: c.writes
    }
    const load = (seconds) => attack({
      draw,
      classify: () => ({ name: c.name, expected: (status) => status >= 200 && status < 300 }),
      baseUrls: [c.url],
      seconds,
      rate: c.rate,
      workers: row.connections,
      name: `${service}: ${c.name}`
    })
    // The service's process, and PostgreSQL (its backends) and Redis beside it: what a request costs
    // each. A case may name servers of its own (a PostgreSQL with standbys: all of them).
    const serverCpu = (s) => [s].flat().reduce((sum, x) => sum + cpuSeconds(x.pid, { children: true }), 0)
    const cpus = c.pid
      ? [
          ['CPU µs/req', () => cpuSeconds(c.pid)],
          ...Object.entries(c.servers ?? servers).map(([name, s]) => [`${name} µs/req`, () => serverCpu(s)])
        ]
      : []
    return {
      c,
      row,
      load,
      cpus,
      cpu: cpus.map(() => 0),
      machine: 0,
      requests: 0,
      seconds: 0,
      latencies: [],
      statuses: {},
      late: 0,
      dropped: 0
    }
  })
  // Warm-up, not counted: JIT, connections, PostgreSQL's buffers (a cold case measures its first second too).
  for (const s of sides) if (!s.c.cold) await s.load(1)
  for (const s of sides) s.before = s.c.counters && (await get(s.c.url, '/metrics')).body
  for (let round = 0; round < rounds; round++) {
    for (const s of round % 2 ? [...sides].reverse() : sides) {
      const cpuBefore = s.cpus.map(([, read]) => read())
      const machineBefore = machineCpuSeconds()
      const f = await s.load(duration / rounds)
      s.machine += machineCpuSeconds() - machineBefore
      s.cpus.forEach(([, read], i) => { s.cpu[i] += read() - cpuBefore[i] })
      s.requests += f.requests
      s.seconds += f.seconds
      for (const ms of f.latencies) s.latencies.push(ms)
      s.late += f.late ?? 0
      s.dropped += f.dropped ?? 0
      for (const [code, n] of Object.entries(f.statuses)) s.statuses[code] = (s.statuses[code] ?? 0) + n
    }
  }
  const rows = []
  for (const { c, row, cpus, cpu, machine, requests, seconds, latencies, statuses, before, late, dropped } of sides) {
    if (c.rate) row.counters = { late, dropped }
    if (c.counters) {
      const after = (await get(c.url, '/metrics')).body
      row.counters = {
        ...row.counters,
        ...Object.fromEntries(Object.entries(c.counters).map(([label, name]) => [
          label,
          typeof name === 'function'
            ? name(before, after)
            : Array.isArray(name)
              ? ratio(before, after, ...name)
              : (metric(after, name) - metric(before, name)) / seconds
        ]))
      }
    }
    if (c.pid) {
      // Each process over the measured rounds (the service: main thread and workers), per request answered.
      row.counters = {
        ...row.counters,
        ...Object.fromEntries(cpus.map(([label], i) => [label, 1e6 * cpu[i] / requests])),
        'RSS MB': rssBytes(c.pid) / 2 ** 20
      }
    }
    // Every process of the machine, the load generator's too: on a machine it saturates, RPS follows this.
    if (requests) row.counters = { ...row.counters, 'machine µs/req': 1e6 * machine / requests }
    const { p50, p99 } = summary(latencies)
    rows.push({
      ...row,
      rps: seconds > 0 ? requests / seconds : 0,
      p50,
      p99,
      errors: statuses[0] ?? 0,
      non2xx: non2xx({ statuses })
    })
  }
  return rows
}

/** What the `machine µs/req` note means, printed above the table by bench and bench:compare. */
export const MACHINE_CPU_NOTE = 'machine µs/req: the CPU of every process here (the load generator\'s too) ' +
  'per request: where the machine is saturated, RPS follows it.'

/**
 * The CPU time of the whole machine so far, in seconds: every core and every process (the load
 * generator's, the kernel's network work), but not idle, I/O wait, or time a hypervisor stole (Linux
 * /proc/stat, in the kernel's USER_HZ of 100 a second, as /proc/<pid>/stat).
 */
export function machineCpuSeconds () {
  const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8')
    .split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number)
  return (user + nice + system + irq + softirq) / 100
}

// The resident memory of a process.
const rssBytes = (pid) => 1024 * Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1])

// Answers other than 2xx (status 0 is no answer: an error, counted apart).
const non2xx = (f) => Object.entries(f.statuses)
  .reduce((n, [code, k]) => n + (code !== '0' && (code < 200 || code >= 300) ? k : 0), 0)

// [sum, count] of a histogram: its mean over the case (e.g. requests per flush).
const ratio = (before, after, sum, count) =>
  (metric(after, sum) - metric(before, sum)) / (metric(after, count) - metric(before, count))
