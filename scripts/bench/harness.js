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
import { startPostgres, startRedis, startService } from '@suite/kit/testing'
import { pgTarget } from '@suite/kit/etl'
import { parse } from 'yaml'
import { attack } from '../../loadtests/lib/vegeta.js'
import { measure, measureRounds } from './measure.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

// A service runs as in its pod: node with its image's flags (the exec-form ENTRYPOINT instruction of
// `tree`'s services/Dockerfile, between "node" and the script), in a memory cgroup of the chart's
// default limit where this machine lets us make one (Node sizes its heap from that limit).
/**
 * The node flags of the image's ENTRYPOINT (services/Dockerfile) in `tree`: what every service and data
 * command runs with in its pod.
 */
export const imageNodeArgs = (tree) =>
  JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(`${tree}services/Dockerfile`, 'utf8'))[1]).slice(1, -1)
const podMemory = parse(readFileSync(`${root}charts/service/values.yaml`, 'utf8')).resources.limits.memory
if (!/^\d+Mi$/.test(podMemory)) {
  throw new Error(`charts/service/values.yaml: resources.limits.memory ${podMemory} is not in Mi`)
}
export const POD_MEMORY_MB = Number.parseInt(podMemory)
// A cached read's CPU at a load well below what one worker serves (docs/benchmarks/report.md), as pods
// an HPA keeps at 70% run: a turn of the event loop holds a request or two, so a hit's round trip to
// Redis is not shared with others (one MGET a request) as it is at saturation.
export const MODERATE_RPS = 3000
// paths drawn from a sameBytes case, fetched once, then both sides draw from them
const SAME_BYTES_SAMPLE = 1000
const PAIR_ROUNDS = 3 // interleaved rounds of two compared cases, each duration / PAIR_ROUNDS long

/**
 * @param {object} o
 * @param {string} o.service        services/<service>
 * @param {{count: string, size: number}} [o.dataset]  the generator's size option and value
 * @param {boolean} [o.uncached]    also start an instance with CACHE_ENABLED=false
 * @param {number[]} [o.baselineConnections]  the baseline at each of these (default: connections)
 * @param {Record<string, string>} [o.settings]  --env: settings of this tree's services
 * @param {Record<string, Record<string, string>>} [o.variants]  more instances of this tree's cached
 *   service, each with these settings added, passed to `cases` as ctx.variants by name
 * @param {{ root: string, label: string, settings: object }} [o.base]  bench:compare: the other commit's
 *   checkout, and --base-env
 * @param {number} [o.rate]  bench:compare --rate: every compared case without a rate of its own at this one
 * @param {(ctx) => Promise<Case[]>} o.cases  ctx: { db (a pg client, open until cases returns),
 *   baseline, cached, uncached, redis, connections, stopAtEnd(server) }; a Case is { name, url,
 *   path() | request(), rate?, groups?, connections?, counters?: { name: metric } (their increase per
 *   second, from /metrics; [sum, count] a histogram's mean; a function (before, after) of the two scrapes),
 *   sameBytes? (also measured against bare Fastify: a GET case on a sample of its paths, sent the same
 *   bytes; a case with a body, parsing the same bodies; see withSameBytes), pid? (the service's
 *   process: its CPU per request and RSS go into the notes), cold? (no warm-up second before it is
 *   measured) };
 *   request() returns { method, path, body?, headers? } (a body is sent as JSON)
 * @returns rows { service, case, connections, rps, p50, p99, non2xx, errors, baseline?, counters? }
 */
export async function runBench ({
  service, dataset, uncached = false, duration = 10, connections = 50, baselineConnections = [connections],
  workers = 1, settings = {}, variants = {}, cases, base, cpuProf, rate
}) {
  const say = (m) => process.stderr.write(`bench ${service}: ${m}\n`)
  // --cpu-prof DIR: each server this run starts writes a V8 CPU profile per thread when it stops, into
  // DIR/<service>-<which> (the kit's services and hello.js exit cleanly on SIGTERM).
  const profiled = (which, env = {}) => {
    if (!cpuProf) return env
    const dir = join(cpuProf, `${service}-${which}`)
    return { ...env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${dir}`.trim() }
  }
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
        const env = {
          LOG_LEVEL: 'error',
          ...tree.settings,
          DATABASE_URL: dbUrl,
          REDIS_URL: `${redis.url}/${i}`,
          WORKERS: String(workers)
        }
        const side = base ? (i ? '-base' : '-this') : ''
        const asInPod = { nodeArgs: imageNodeArgs(tree.root), memoryLimitMb: POD_MEMORY_MB }
        const uncachedEnv = { ...env, CACHE_ENABLED: 'false' }
        const [cached, plain] = await Promise.all([
          startService({ entry: cli, ...asInPod, env: profiled(`cached${side}`, env) }),
          uncached ? startService({ entry: cli, ...asInPod, env: profiled(`uncached${side}`, uncachedEnv) }) : null
        ])
        if (!cached.memoryLimited) {
          say("no memory cgroup can be made here (root and cgroup v1's memory controller or v2 are needed): " +
            `the service runs without the pod's ${POD_MEMORY_MB} MB limit, ` +
            "and V8 sizes its heap from the machine's memory")
        }
        running.push(cached, plain)
        // The variants are this tree's only (bench:compare compares two trees, not settings within one).
        const started = await Promise.all(Object.entries(i ? {} : variants).map(async ([name, more]) =>
          [name, await startService({ entry: cli, ...asInPod, env: profiled(name, { ...env, ...more }) })]))
        const others = Object.fromEntries(started)
        running.push(...Object.values(others))
        // A sameBytes case's CPU per request is the kit's cost in microseconds: the service's process is
        // measured; a compared case's too, as at a fixed rate its ratio is its CPU per request's.
        const stopAtEnd = (server) => running.push(server) // a server a case starts itself
        const caseList = await cases({
          db, baseline, cached, uncached: plain, variants: others, redis, connections, stopAtEnd
        })
        lists.push(caseList.map((c) => (c.sameBytes || base) && !c.pid
          ? { ...c, pid: [cached, plain].find((s) => s?.url === c.url)?.child.pid }
          : c))
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
            rate: x.rate ?? rate,
            sameBytes: undefined,
            ...(x.groups && {
              groups: Object.fromEntries(Object.entries(x.groups).map(([path, name]) => [path, `${name} (${tree})`]))
            })
          })
          const b = label(lists[1][k], base.label)
          return { pair: [b, { ...label(c, 'this tree'), pairOf: b.name }] }
        })
      : await withSameBytes(lists[0], running, profiled, {
          nodeArgs: imageNodeArgs(root),
          memoryLimitMb: POD_MEMORY_MB
        })
    const hello = (label) => baselineConnections.map((conn) => ({
      name: `bare Fastify GET /hello (${label})`,
      url: baseline.url,
      pid: baseline.child.pid,
      path: () => '/hello',
      connections: conn,
      baseline: true
    }))
    list = [...hello('baseline'), ...list, ...hello('baseline, again')]

    const rows = []
    const ctx = { service, duration, connections, servers: { PostgreSQL: pgServer, Redis: redis } }
    for (const c of list) {
      if (c.pair && !c.pair.some((x) => x.groups)) {
        const names = c.pair.map((x) => x.name).join(' | ')
        say(`${names}: ${PAIR_ROUNDS} interleaved rounds of ${duration / PAIR_ROUNDS} s`)
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
    const res = await fetch(c.url + path, body === undefined
      ? { method, headers }
      : { method, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
    bodies[`${method} ${path}`] ??= {
      status: res.status,
      type: res.headers.get('content-type'),
      body: Buffer.from(await res.arrayBuffer()).toString('base64')
    }
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
    for (let i = 0; i < paths.length; i += 50) {
      sample.push(...await Promise.all(paths.slice(i, i + 50).map((path) => record(c, { path }))))
    }
    samples.set(c, sample)
  }
  const dir = mkdtempSync(join(tmpdir(), 'bench-bodies-'))
  let same
  try {
    writeFileSync(join(dir, 'bodies.json'), JSON.stringify(bodies))
    same = await startService({
      entry: `${root}scripts/bench/hello.js`,
      ...asInPod,
      env: profiled('same-bytes', { BODIES: join(dir, 'bodies.json') })
    })
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
      return [c, {
        pair: [
          { ...base, name: baseName, writes: true },
          {
            ...c,
            name: `${c.name} — beside it`,
            sameBytes: undefined,
            pairOf: baseName,
            sameBytesPair: true,
            writes: true
          }
        ]
      }]
    }
    const name = `${c.name} — ${sample.length} of its paths`
    const mean = Math.round(bytes).toLocaleString('en-US')
    const baseName = `bare Fastify, the same bytes (${mean} B mean) — ${sample.length} paths`
    const paths = sample.map((key) => key.slice('GET '.length))
    const path = () => paths[Math.floor(Math.random() * paths.length)]
    return [c, {
      pair: [
        { ...base, name: baseName, path },
        { ...c, name, path, sameBytes: undefined, pairOf: baseName, sameBytesPair: true }
      ]
    }]
  })
}

/**
 * The service's generated data set (generated once into .data/), loaded by that tree's loader and made
 * resident.
 */
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

/**
 * Requests each of `paths` once, 50 at a time, so that a case measures a warm cache: every key it
 * will read is in Redis before it starts.
 */
export async function warm (url, paths) {
  let next = 0
  await attack({
    draw: () => ({ method: 'GET', path: paths[next++] }),
    classify: () => ({ name: 'warm', expected: () => true }),
    baseUrls: [url],
    requests: paths.length,
    workers: 50
  })
}
