// What every service benchmark shares: throwaway PostgreSQL and Redis; the service's data set,
// generated once into .data/ and loaded; bare Fastify (the baseline) measured at the start and at
// the end of the same run; the service with its cache and, as a second instance, without it
// (CACHE_ENABLED=false: every request a query); each case measured alone; one table whose every RPS
// is a ratio to that baseline — the machine is shared and noisy, ratios in one run are what hold.
// A case marked `sameBytes` is also measured against bare Fastify sending the very bytes it sent
// (hello.js with BODIES, run as the service is: same node flags, same memory limit), on the same
// sample of paths: the kit's own cost. Two cases compared (that pair, or a case on two commits with
// bench:compare) are measured in interleaved rounds (a b, b a, a b): neither side always runs
// second, after the other has heated the machine, and both meet the same noise.
import { fileURLToPath } from 'node:url'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { startPostgres, startRedis, startService, get, metric, cpuSeconds } from '@suite/kit/testing'
import { pgTarget } from '@suite/kit/etl'
import { attack, summary } from '../../loadtests/lib/vegeta.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

// A service runs as in its pod: node with its image's flags (the ENTRYPOINT of `tree`'s
// services/Dockerfile, between "node" and the script), in a memory cgroup of the chart's default
// limit where this machine lets us make one (Node sizes its heap from that limit).
const imageNodeArgs = (tree) => JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(`${tree}services/Dockerfile`, 'utf8'))[1]).slice(1, -1)
export const POD_MEMORY_MB = Number(/^resources:\n(?: {2}.*\n)*? {2}limits:\n(?: {4}.*\n)*? {4}memory: (\d+)Mi$/m.exec(readFileSync(`${root}charts/service/values.yaml`, 'utf8'))[1])
const RATE_CONNECTIONS = 64 // fixed-rate cases: requests in flight at most (vegeta's workers)
const SAME_BYTES_SAMPLE = 1000 // paths drawn from a sameBytes case, fetched once, then both sides draw from them
const PAIR_ROUNDS = 3 // interleaved rounds of two compared cases, each duration / PAIR_ROUNDS long

/**
 * @param {object} o
 * @param {string} o.service        services/<service>
 * @param {{count: string, size: number}} [o.dataset]  the generator's size option and value
 * @param {boolean} [o.uncached]    also start an instance with CACHE_ENABLED=false
 * @param {number[]} [o.baselineConnections]  the baseline at each of these (default: connections)
 * @param {Record<string, string>} [o.settings]  --env: settings of this tree's services
 * @param {{ root: string, label: string, settings: object }} [o.base]  bench:compare: the other commit's checkout, and --base-env
 * @param {(ctx) => Promise<Case[]>} o.cases  ctx: { db (a pg client, open until cases returns),
 *   baseline, cached, uncached, redis, connections }; a Case is { name, url, path() | request(), rate?,
 *   groups?, connections?, counters?: { name: metric } (their increase per second, from /metrics; [sum, count] a
 *   histogram's mean; a function (before, after) of the two scrapes),
 *   sameBytes? (also measured against bare Fastify: a GET case on a sample of its paths, sent the same
 *   bytes; a case with a body, parsing the same bodies; see withSameBytes), pid? (the service's
 *   process: its CPU per request and RSS go into the notes), cold? (no warm-up second before it is
 *   measured) };
 *   request() returns { method, path, body?, headers? } (a body is sent as JSON)
 * @returns rows { service, case, connections, rps, p50, p99, non2xx, errors, baseline?, counters? }
 */
export async function runBench ({ service, dataset, uncached = false, duration = 10, connections = 50, baselineConnections = [connections], workers = 1, settings = {}, cases, base, cpuProf }) {
  const say = (m) => process.stderr.write(`bench ${service}: ${m}\n`)
  // --cpu-prof DIR: each server this run starts writes a V8 CPU profile per thread when it stops, into
  // DIR/<service>-<which> (the kit's services and hello.js exit cleanly on SIGTERM).
  const profiled = (which, env = {}) => cpuProf
    ? { ...env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${join(cpuProf, `${service}-${which}`)}`.trim() }
    : env
  say('starting PostgreSQL and Redis')
  const pgServer = await startPostgres({ settings: { shared_buffers: '512MB', max_wal_size: '4GB' } })
  const redis = await startRedis()
  const running = []
  try {
    // This tree's service, and with `base` ({ root, label }: another commit's checkout, bench-compare.js)
    // that one's too, each on a database of its own (its own migrations and loader) in the same
    // PostgreSQL, and a Redis database of its own in the same Redis.
    const trees = base ? [{ root, label: 'this tree', settings }, base] : [{ root, settings }]
    const baseline = await startService({ entry: `${root}scripts/bench/hello.js`, env: profiled('hello') })
    running.push(baseline)
    const lists = []
    for (const [i, tree] of trees.entries()) {
      const dbUrl = await pgServer.createDatabase(`bench${i}`)
      const db = new pg.Client({ connectionString: dbUrl })
      await db.connect()
      try {
        await migrate(db, { name: service, migrations: `${tree.root}services/${service}/migrations` })
        if (dataset) await loadDataset(db, tree.root, service, dataset, say)
        const cli = `${tree.root}services/${service}/src/cli.js`
        const env = { LOG_LEVEL: 'error', ...tree.settings, DATABASE_URL: dbUrl, REDIS_URL: `${redis.url}/${i}`, WORKERS: String(workers) }
        const side = base ? (i ? '-base' : '-this') : ''
        const asInPod = { nodeArgs: imageNodeArgs(tree.root), memoryLimitMb: POD_MEMORY_MB }
        const [cached, plain] = await Promise.all([
          startService({ entry: cli, ...asInPod, env: profiled(`cached${side}`, env) }),
          uncached ? startService({ entry: cli, ...asInPod, env: profiled(`uncached${side}`, { ...env, CACHE_ENABLED: 'false' }) }) : null
        ])
        if (!cached.memoryLimited) say(`no memory cgroup can be made here (root and cgroup v1's memory controller or v2 are needed): the service runs without the pod's ${POD_MEMORY_MB} MB limit, and V8 sizes its heap from the machine's memory`)
        running.push(cached, plain)
        // A sameBytes case's CPU per request is the kit's cost in microseconds: the service's process is measured.
        lists.push((await cases({ db, baseline, cached, uncached: plain, redis, connections }))
          .map((c) => c.sameBytes && !c.pid ? { ...c, pid: [cached, plain].find((s) => s?.url === c.url)?.child.pid } : c))
      } finally {
        await db.end()
      }
    }
    // Compared: each case on the base and on this tree, this tree's RPS a ratio to the base's.
    let list = base
      ? lists[0].map((c, k) => {
          const label = (x, tree) => ({
            ...x,
            name: `${x.name} (${tree})`,
            sameBytes: undefined,
            ...(x.groups && { groups: Object.fromEntries(Object.entries(x.groups).map(([path, name]) => [path, `${name} (${tree})`])) })
          })
          const b = label(lists[1][k], base.label)
          return { pair: [b, { ...label(c, 'this tree'), pairOf: b.name }] }
        })
      : await withSameBytes(lists[0], running, profiled, { nodeArgs: imageNodeArgs(root), memoryLimitMb: POD_MEMORY_MB })
    const hello = (label) => baselineConnections.map((conn) =>
      ({ name: `bare Fastify GET /hello (${label})`, url: baseline.url, path: () => '/hello', connections: conn, baseline: true }))
    list = [...hello('baseline'), ...list, ...hello('baseline, again')]

    const rows = []
    const ctx = { service, duration, connections, servers: { PostgreSQL: pgServer, Redis: redis } }
    for (const c of list) {
      if (c.pair && !c.pair.some((x) => x.groups)) {
        say(`${c.pair.map((x) => x.name).join(' | ')}: ${PAIR_ROUNDS} interleaved rounds of ${duration / PAIR_ROUNDS} s`)
        rows.push(...await measureRounds(c.pair, ctx, PAIR_ROUNDS))
        continue
      }
      for (const x of c.pair ?? [c]) {
        say(`${x.name}: ${duration} s`)
        rows.push(...await measure(x, ctx))
      }
    }
    return rows
  } finally {
    await Promise.allSettled(running.filter(Boolean).map((s) => s.stop()))
    await redis.stop()
    await pgServer.stop()
  }
}

/**
 * Each sameBytes case is followed by a pair measured in interleaved rounds, bare Fastify and the
 * service, both sent the same requests:
 *   - a GET case: SAME_BYTES_SAMPLE paths drawn from it, bare Fastify answering each with the bytes the
 *     service sent for it. The service answered each path once already (its cache is warm for them).
 *   - a case with a body (request()): its requests as drawn, bare Fastify parsing each JSON body and
 *     answering the bytes the service sent for the first: what no implementation of the route can
 *     beat on this machine (its rows are `writes`, a ceiling rather than a target).
 */
async function withSameBytes (list, running, profiled, asInPod) {
  const pairs = list.filter((c) => c.sameBytes)
  if (!pairs.length) return list
  const bodies = {} // "METHOD /path" → the answer, as hello.js reads it
  const record = async (c, { method = 'GET', path, body, headers = {} }) => {
    const res = await fetch(c.url + path, body === undefined ? { method, headers } : { method, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
    bodies[`${method} ${path}`] ??= { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()).toString('base64') }
    return `${method} ${path}`
  }
  const samples = new Map() // case → the requests recorded for it
  for (const c of pairs) {
    if (c.request) {
      samples.set(c, [await record(c, c.request())])
      continue
    }
    const paths = [...new Set(Array.from({ length: SAME_BYTES_SAMPLE }, () => c.path()))]
    const sample = []
    for (let i = 0; i < paths.length; i += 50) sample.push(...await Promise.all(paths.slice(i, i + 50).map((path) => record(c, { path }))))
    samples.set(c, sample)
  }
  const dir = mkdtempSync(join(tmpdir(), 'bench-bodies-'))
  let same
  try {
    writeFileSync(join(dir, 'bodies.json'), JSON.stringify(bodies))
    same = await startService({ entry: `${root}scripts/bench/hello.js`, ...asInPod, env: profiled('same-bytes', { BODIES: join(dir, 'bodies.json') }) })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  running.push(same)
  return list.flatMap((c) => {
    if (!c.sameBytes) return [c]
    const sample = samples.get(c)
    const bytes = sample.reduce((n, key) => n + Buffer.byteLength(bodies[key].body, 'base64'), 0) / sample.length
    const base = { ...c, url: same.url, pid: same.child.pid, sameBytes: undefined, counters: undefined }
    if (c.request) {
      const baseName = `bare Fastify parsing the same bodies, answering the same bytes (${Math.round(bytes)} B)`
      return [c, { pair: [{ ...base, name: baseName, writes: true }, { ...c, name: `${c.name} — beside it`, sameBytes: undefined, pairOf: baseName, writes: true }] }]
    }
    const name = `${c.name} — ${sample.length} of its paths`
    const baseName = `bare Fastify, the same bytes (${Math.round(bytes).toLocaleString('en-US')} B mean) — ${sample.length} paths`
    const paths = sample.map((key) => key.slice('GET '.length))
    const path = () => paths[Math.floor(Math.random() * paths.length)]
    return [c, { pair: [{ ...base, name: baseName, path }, { ...c, name, path, sameBytes: undefined, pairOf: baseName }] }]
  })
}

/** The service's generated data set (generated once into .data/), loaded by that tree's loader and made resident. */
async function loadDataset (db, tree, service, dataset, say) {
  const etl = await import(`${tree}services/${service}/etl/index.js`)
  const dir = `${root}.data/bench-${service}-${dataset.size}`
  if (!existsSync(`${dir}/manifest.json`)) {
    say(`generating ${dataset.size} ${dataset.count} into ${dir}`)
    await etl.generate({ out: dir, [dataset.count]: dataset.size, seed: 1 })
  }
  say('loading')
  await etl.load({ db: pgTarget(db), dir, rejectsFile: `${dir}/rejects.csv`, progress: false })
  // Measure the steady state, not the load's aftermath: autovacuum would visit the new tables and
  // the checkpointer flush the loaded pages in the middle of a case; and a cold cache would time
  // the disk (COPY bypasses shared_buffers): the working set goes into memory first, as it would
  // be in a database that has served for a while.
  await db.query('VACUUM')
  await db.query('CHECKPOINT')
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_prewarm')
  await db.query(`SELECT pg_prewarm(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')`)
}

async function measure (c, { service, duration, connections, servers }) {
  const row = { service, case: c.name, connections: c.connections ?? connections, baseline: c.baseline, pairOf: c.pairOf }
  if (c.rate) {
    // Open loop at a fixed rate (vegeta): latency as clients arriving on their own see it, the
    // target's queueing included; `groups` (path → name) also gives percentiles per group of paths
    // sent in the same run (page 1 vs the deepest page, interleaved: both meet the same noise).
    const pathOf = (url) => url.replace(/^[a-z]+:\/\/[^/]+/, '')
    const f = await attack({
      draw: () => ({ method: 'GET', path: c.path() }),
      classify: (method, url) => ({ name: c.groups?.[pathOf(url)] ?? c.name, expected: (status) => status >= 200 && status < 300 }),
      baseUrls: [c.url],
      rate: c.rate,
      seconds: duration,
      workers: RATE_CONNECTIONS,
      name: `${service}: ${c.name}`
    })
    const common = { ...row, connections: RATE_CONNECTIONS, rate: c.rate, non2xx: non2xx(f), errors: f.statuses[0] ?? 0, counters: { late: f.late, dropped: f.dropped } }
    if (!c.groups) return [{ ...common, rps: f.rps, p50: f.p50, p99: f.p99 }]
    return Object.entries(f.routes).map(([name, g]) => ({ ...common, case: `${name} (interleaved)`, rps: g.requests / f.seconds, p50: g.p50, p99: g.p99 }))
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
async function measureRounds (cases, { service, duration, connections, servers }, rounds) {
  const sides = cases.map((c) => {
    const draw = c.request ?? (() => ({ method: 'GET', path: c.path() }))
    const row = { service, case: c.name, connections: c.rate ? RATE_CONNECTIONS : c.connections ?? connections, rate: c.rate, baseline: c.baseline, pairOf: c.pairOf, writes: c.writes }
    const load = (seconds) => attack({ draw, classify: () => ({ name: c.name, expected: (status) => status >= 200 && status < 300 }), baseUrls: [c.url], seconds, rate: c.rate, workers: row.connections, name: `${service}: ${c.name}` })
    // The service's process, and PostgreSQL (its backends) and Redis beside it: what a request costs each.
    const cpus = c.pid ? [['CPU µs/req', () => cpuSeconds(c.pid)], ...Object.entries(servers).map(([name, s]) => [`${name} µs/req`, () => cpuSeconds(s.pid, { children: true })])] : []
    return { c, row, load, cpus, cpu: cpus.map(() => 0), machine: 0, requests: 0, seconds: 0, latencies: [], statuses: {}, late: 0, dropped: 0 }
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
      row.counters = { ...row.counters, ...Object.fromEntries(Object.entries(c.counters).map(([label, name]) =>
        [label, typeof name === 'function' ? name(before, after) : Array.isArray(name) ? ratio(before, after, ...name) : (metric(after, name) - metric(before, name)) / seconds])) }
    }
    if (c.pid) {
      // Each process over the measured rounds (the service: main thread and workers), per request answered.
      row.counters = { ...row.counters, ...Object.fromEntries(cpus.map(([label], i) => [label, 1e6 * cpu[i] / requests])), 'RSS MB': rssBytes(c.pid) / 2 ** 20 }
    }
    // Every process of the machine, the load generator's too: on a machine it saturates, RPS follows this.
    if (requests) row.counters = { ...row.counters, 'machine µs/req': 1e6 * machine / requests }
    const { p50, p99 } = summary(latencies)
    rows.push({ ...row, rps: seconds > 0 ? requests / seconds : 0, p50, p99, errors: statuses[0] ?? 0, non2xx: non2xx({ statuses }) })
  }
  return rows
}

/** What the `machine µs/req` note means, printed above the table by bench and bench:compare. */
export const MACHINE_CPU_NOTE = 'machine µs/req: the CPU of every process here (the load generator\'s too) per request: where the machine is saturated, RPS follows it.'

/**
 * The CPU time of the whole machine so far, in seconds: every core and every process (the load
 * generator's, the kernel's network work), but not idle, I/O wait, or time a hypervisor stole (Linux
 * /proc/stat, in the kernel's USER_HZ of 100 a second, as /proc/<pid>/stat).
 */
export function machineCpuSeconds () {
  const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number)
  return (user + nice + system + irq + softirq) / 100
}

// The resident memory of a process.
const rssBytes = (pid) => 1024 * Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1])

/** A `counters` entry: the share of cache lookups that were hits over the case, in percent. */
export const hitRatio = (before, after) => {
  const d = (result) => metric(after, 'cache_requests_total', { result }) - metric(before, 'cache_requests_total', { result })
  return 100 * d('hit') / (d('hit') + d('miss') + d('error'))
}

// The 20 hot ids of the originals' own load script (profile's database/stresstest/get.js: 75% of GETs
// on these, 25% uniform), for a data set of `n` ids (they are all ≤ 10M; a smaller set folds them in).
const ORIGINAL_HOT_IDS = [3352999, 6921999, 8115999, 3984999, 3473999, 855999, 1103999, 4168999, 1477999, 1579992,
  9905999, 6549999, 5399992, 8537999, 6858999, 8009992, 4499999, 1017999, 8508999, 9967999]
export function originalTraffic (n) {
  const hot = ORIGINAL_HOT_IDS.map((id) => ((id - 1) % n) + 1)
  const uniform = () => 1 + Math.floor(Math.random() * n)
  return { hot: () => pick(hot), uniform, mix: () => (Math.random() < 0.75 ? pick(hot) : uniform()) }
}

// The connections of that script, the default of every --traffic original case.
export const ORIGINAL_CONNECTIONS = 60

/**
 * The read-path issue's targets on the originals' traffic: the cold mix ≥ 45% of bare Fastify hello
 * in the same run, one worker's process ≤ 150 MB RSS, and the CPU per hit and per miss solved from the
 * hot-only and uniform-only cases (each a mix of hits and misses in a known ratio).
 */
export function originalTargets (rows, service, mixCase) {
  const own = rows.filter((r) => r.service === service)
  const mix = own.find((r) => r.case === mixCase)
  if (!mix) return []
  const hello = own.filter((r) => r.baseline && r.connections === mix.connections)
  const share = mix.rps / (hello.reduce((a, r) => a + r.rps, 0) / hello.length)
  const rss = Math.max(...own.filter((r) => r.counters?.['RSS MB']).map((r) => r.counters['RSS MB']))
  const hot = own.find((r) => r.case === 'hot ids only')?.counters
  const uniform = own.find((r) => r.case === 'uniform ids only')?.counters
  const out = [
    [`${mixCase} ≥ 45% of bare Fastify hello`, share >= 0.45, `${Math.round(100 * share)}%`],
    ['RSS of the process (one worker: WORKERS=1) ≤ 150 MB', rss <= 150, `${Math.round(rss)} MB`]
  ]
  const per = mix.counters ?? {}
  if (per['CPU µs/req'] !== undefined) {
    // CPU µs per request × 10,000 requests a second = µs of CPU a second; ÷ 1e6 = cores.
    const cores = ['CPU µs/req', 'PostgreSQL µs/req', 'Redis µs/req'].map((k) => (per[k] * 10_000 / 1e6).toFixed(2))
    out.push([`cores for 10K RPS of ${mixCase}: the service / PostgreSQL / Redis (its CPU per request × 10K)`, undefined, cores.join(' / ')])
  }
  if (hot && uniform) {
    // cpu = h·hit + (1−h)·miss for both cases: two equations, two unknowns.
    const [h1, c1, h2, c2] = [hot['hits %'] / 100, hot['CPU µs/req'], uniform['hits %'] / 100, uniform['CPU µs/req']]
    const miss = (c2 * h1 - c1 * h2) / (h1 - h2)
    const hit = (c1 - (1 - h1) * miss) / h1
    if (Number.isFinite(hit) && Number.isFinite(miss)) out.push(['CPU per cached read (hit) / per miss, solved from the two cases', undefined, `${Math.round(hit)} µs / ${Math.round(miss)} µs`])
  }
  return out
}

// Answers other than 2xx (status 0 is no answer: an error, counted apart).
const non2xx = (f) => Object.entries(f.statuses).reduce((n, [code, k]) => n + (code !== '0' && (code < 200 || code >= 300) ? k : 0), 0)

// [sum, count] of a histogram: its mean over the case (e.g. requests per flush).
const ratio = (before, after, sum, count) =>
  (metric(after, sum) - metric(before, sum)) / (metric(after, count) - metric(before, count))

const fmt = (n, d = 0) => (n === undefined || Number.isNaN(n) ? '' : n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }))

/**
 * One markdown table of rows from any benchmarks: each RPS as a ratio to the mean of its own run's
 * baseline rows at the same connection count (none for a fixed-rate case: its RPS is the rate), and
 * a sameBytes case's to bare Fastify sending its bytes.
 */
export function table (rows) {
  const baseOf = (r) => {
    const b = rows.filter((x) => x.baseline && x.service === r.service && x.connections === r.connections)
    return b.reduce((a, x) => a + x.rps, 0) / b.length
  }
  const out = [
    '| service | case | conn | RPS | p50 ms | p99 ms | RPS / baseline | RPS / pair | non-2xx | errors | notes |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |'
  ]
  for (const r of rows) {
    const notes = Object.entries(r.counters ?? {}).map(([k, v]) => `${k} ${fmt(v, Number.isInteger(v) || v >= 100 ? 0 : 1)}`).join(', ')
    const ratioToBase = r.rate ? `- (fixed ${fmt(r.rate)}/s)` : fmt(r.rps / baseOf(r), 2)
    const ratio = pairRatio(rows, r)
    const toPair = ratio === undefined ? '' : r.rate ? `CPU ${fmt(ratio, 2)}×` : fmt(ratio, 2)
    out.push(`| ${r.service} | ${r.case} | ${r.rate ? `≤${r.connections}` : r.connections} | ${fmt(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${ratioToBase} | ${toPair} | ${r.non2xx} | ${r.errors} | ${notes} |`)
  }
  return out.join('\n')
}

/**
 * Requests each of `paths` once, 50 at a time, so that a case measures a warm cache: every key it
 * will read is in Redis before it starts.
 */
export async function warm (url, paths) {
  let next = 0
  await attack({ draw: () => ({ method: 'GET', path: paths[next++] }), classify: () => ({ name: 'warm', expected: () => true }), baseUrls: [url], requests: paths.length, workers: 50 })
}

/**
 * The RPS / pair of each paired row over several runs of the same cases (bench:compare --repeat), as a
 * table: each run's ratio and their median. One service process can run slower than another of the
 * same code for its whole life, so a ratio of one run can be that process's; fresh processes in
 * every run show how far it holds.
 */
export function pairsAcrossRuns (runs) {
  // undefined where a row has no pair row (the groups of an interleaved case are named apart)
  const ratio = (rows, r) => {
    const mine = rows.find((x) => x.service === r.service && x.case === r.case && x.connections === r.connections)
    return mine && pairRatio(rows, mine)
  }
  const out = [
    '| service | case | conn | RPS / pair, each run | median |',
    '| --- | --- | ---: | --- | ---: |'
  ]
  for (const r of runs[0].filter((x) => x.pairOf)) {
    const ratios = runs.map((rows) => ratio(rows, r))
    if (ratios.some((x) => x === undefined)) continue
    out.push(`| ${r.service} | ${r.case}${r.rate ? ': CPU per request / pair' : ''} | ${r.connections} | ${ratios.map((x) => fmt(x, 2)).join(', ')} | ${fmt(median(ratios), 2)} |`)
  }
  return out.join('\n')
}

function median (list) {
  const s = [...list].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/** The row a compared row was measured against (its `pairOf`), or undefined (none, or not in `rows`). */
function pairRow (rows, r) {
  return r.pairOf === undefined ? undefined : rows.find((x) => x.service === r.service && x.case === r.pairOf && x.connections === r.connections)
}

// A row's service CPU per request, where its process was measured (a sameBytes case and its pair).
const cpuOf = (r) => r.counters?.['CPU µs/req']

/**
 * A paired row's figure against its pair row's, or undefined (no pair): RPS over RPS, or at a fixed
 * rate (where both answer the rate) CPU per request over CPU per request, where both were measured.
 */
function pairRatio (rows, r) {
  const pair = pairRow(rows, r)
  if (!pair) return undefined
  if (!r.rate) return r.rps / pair.rps
  return cpuOf(r) && cpuOf(pair) ? cpuOf(r) / cpuOf(pair) : undefined
}

// The full-speed pairs of `service`, reads or writes: [case, its RPS over its pair's].
const fullSpeedShares = (rows, service, writes) => rows
  .filter((r) => r.service === service && r.pairOf && !r.rate && Boolean(r.writes) === writes)
  .map((r) => [r.case, pairRatio(rows, r)])

/** Each sameBytes read's RPS as a share of bare Fastify sending the same bytes: [case, share]. (Fixed-rate cases: see sameBytesCpu.) */
export const sameBytesShares = (rows, service) => fullSpeedShares(rows, service, false)

/** Each sameBytes case with a body: its RPS as a share of bare Fastify parsing the same bodies (the ceiling): [case, share]. */
export const ceilingShares = (rows, service) => fullSpeedShares(rows, service, true)

/** Each fixed-rate sameBytes case's CPU per request and bare Fastify's for the same bytes at that rate: [case, µs, Fastify's µs]. */
export function sameBytesCpu (rows, service) {
  return rows.filter((r) => r.service === service && r.pairOf && r.rate && pairRatio(rows, r) !== undefined)
    .map((r) => [r.case, cpuOf(r), cpuOf(pairRow(rows, r))])
}

/** A random element of a list. */
export const pick = (list) => list[Math.floor(Math.random() * list.length)]
