// `npm run bench:near-start`: two instances of the suite (npm start's launcher, every service with its
// default workers) started together on one PostgreSQL and one Redis with the near cache on, as two pods
// start on a busy node. Each run prints how long until every worker's near cache is on
// (cache_near_state) and what menu and profile PUTs cost from the moment both instances listen: p50,
// p99 and the slowest, against a near cache's sync bound of 300 ms. With --base, the same runs of
// another commit, alternating with this tree's.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { runCommand, wholeNumber } from '@suite/kit/args'
import {
  startPostgres, startRedis, metric, waitFor, databaseEnv, freePortBlock, sendOnNewConnection
} from '@suite/kit/testing'
import { Redis } from 'ioredis'
import { PORT_OFFSETS, SERVICES } from '../services/list.js'
import { worktree } from './bench/worktree.js'
import { restaurant } from '../loadtests/k6/scenarios.js'
import { summary } from '../loadtests/lib/vegeta.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const NEAR_BYTES = '33554432'
const SYNC_BOUND_MS = 300
const WRITES = ['menu', 'profile']

const usage = {
  usage: 'npm run bench:near-start -- [options]   (or node scripts/bench-near-start.js [options])',
  summary: 'Starts two instances of the suite together, runs after runs, and prints for each how long until ' +
    'every worker\'s near cache is on, and the menu and profile PUTs\' p50, p99 and slowest from the moment ' +
    'both listen.',
  options: {
    runs: { type: 'string', value: 'N', default: '10', help: 'starts of the pair, one after the other' },
    seconds: {
      type: 'string', value: 'S', default: '4', help: 'how long each run writes, from the moment both listen'
    },
    rate: { type: 'string', value: 'R', default: '25', help: 'PUTs a second, per service, spread over both instances' },
    base: { type: 'string', value: 'COMMIT', help: 'also run another commit (any git revision), alternating runs' }
  },
  examples: ['npm run bench:near-start', 'npm run bench:near-start -- --runs 5 --base HEAD~3']
}

const write = (service, id) => service === 'menu'
  ? {
      path: `/restaurants/${id}/menu`,
      body: { dishes: [{ dishType: 'main', subType: 'bench', dish: `soup ${id}`, price: 4.5, ingredients: 'water' }] }
    }
  : { path: `/restaurants/${id}`, body: restaurant(id) }

await runCommand('bench:near-start', usage, async (values) => {
  const runs = wholeNumber(values, 'runs', { min: 1 })
  const seconds = wholeNumber(values, 'seconds', { min: 1 })
  const rate = wholeNumber(values, 'rate', { min: 1 })
  const base = values.base ? worktree(values.base, 'bench:near-start') : null
  const password = 'near-start'
  const [postgres, redis] = await Promise.all([startPostgres(), startRedis({ password })])
  const env = {
    ...databaseEnv(postgres.url),
    REDIS_URL: redis.url,
    REDIS_PASSWORD: password,
    CACHE_NEAR_MAX_BYTES: NEAR_BYTES,
    LOG_LEVEL: 'warn'
  }
  const flush = new Redis(redis.url, { password })
  const trees = [{ label: 'this tree', root }]
  if (base) trees.push({ label: `base ${base.commit.slice(0, 7)}`, root: base.dir })
  const rows = []
  try {
    // One start alone first: it migrates and loads the samples, which the pairs then find there.
    await (await startPair(trees[0].root, env, 1))[0].stop()
    for (let run = 1; run <= runs; run++) {
      // Alternate which tree goes first, so that neither always starts on a machine the other warmed.
      for (const tree of run % 2 ? trees : [...trees].reverse()) {
        await flush.flushall()
        rows.push({ tree: tree.label, run, ...await measureRun(tree.root, env, { seconds, rate }) })
      }
    }
  } finally {
    flush.disconnect()
    await Promise.all([postgres.stop(), redis.stop()])
    base?.remove()
  }
  console.log(report(rows, { runs, seconds, rate }))
})

/** One run: the pair started, the time to every near cache on, the writes' latencies; then stopped. */
async function measureRun (tree, env, { seconds, rate }) {
  const started = performance.now()
  const pair = await startPair(tree, env, 2)
  const listening = performance.now() - started
  try {
    const [near, writes] = await Promise.all([
      nearCachesOn(pair, started),
      writeLoad(pair, { seconds, rate })
    ])
    return { listening, ...near, ...writes }
  } finally {
    await Promise.all(pair.map((p) => p.stop()))
  }
}

// `count` launchers, each on a block of ports of its own, started at once; resolves once each says
// it listens (every service ready).
async function startPair (tree, env, count) {
  const ports = await Promise.all(Array.from({ length: count }, () => freePortBlock(PORT_OFFSETS)))
  return Promise.all(ports.map((port) => startLauncher(tree, { ...env, PORT: String(port) }, port)))
}

function startLauncher (tree, env, port) {
  const child = spawn(process.execPath, [`${tree}scripts/start.js`], {
    cwd: tree,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true
  })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { out += d })
  const exit = new Promise((resolve) => child.on('exit', resolve))
  const launcher = {
    urls: Object.fromEntries(SERVICES.map((s, i) => [s.name, `http://127.0.0.1:${port + PORT_OFFSETS[i]}`])),
    async stop () {
      try { process.kill(-child.pid, 'SIGTERM') } catch {}
      await exit
    }
  }
  return waitFor(`the launcher on port ${port} listening`, () => {
    if (child.exitCode !== null) throw new Error(`the launcher exited ${child.exitCode}: ${out.slice(-2000)}`)
    return /suite: listening on/.test(out) && launcher
  }, { timeoutMs: 180_000, everyMs: 100 })
}

// Milliseconds from the start until every worker of every service of the pair has its near cache on;
// null where the services say nothing of it (a commit before cache_near_state).
async function nearCachesOn (pair, started) {
  const scrapes = () => Promise.all(pair.flatMap((p) => Object.values(p.urls).map(async (url) =>
    (await fetch(`${url}/metrics`)).text())))
  const counts = (texts) => texts.reduce((c, text) => ({
    on: c.on + metric(text, 'cache_near_state', { state: 'on' }),
    workers: c.workers + metric(text, 'service_workers'),
    known: c.known && text.includes('cache_near_state')
  }), { on: 0, workers: 0, known: true })
  let last
  try {
    await waitFor('every near cache on', async () => {
      last = counts(await scrapes())
      return !last.known || (last.workers > 0 && last.on === last.workers)
    }, { timeoutMs: 20_000, everyMs: 50 })
  } catch {}
  return last.known
    ? { nearOnMs: last.on === last.workers ? performance.now() - started : null, on: `${last.on}/${last.workers}` }
    : { nearOnMs: null, on: 'n/a' }
}

// PUTs of menus and profiles at `rate` a second each, each on a new connection (the kernel spreads
// them over the workers), alternately to the two instances; their latencies by service.
async function writeLoad (pair, { seconds, rate }) {
  const latencies = Object.fromEntries(WRITES.map((s) => [s, []]))
  let failed = 0
  const sends = []
  const begin = performance.now()
  for (let i = 0; i < seconds * rate; i++) {
    const wait = begin + (i * 1000) / rate - performance.now()
    if (wait > 0) await sleep(wait)
    for (const service of WRITES) {
      const { path, body } = write(service, 1 + (i % 200))
      sends.push(sendOnNewConnection(pair[i % pair.length].urls[service] + path, 'PUT', body).then(({ status, ms }) => {
        if (status >= 300) failed++
        latencies[service].push(ms)
      }, () => { failed++ }))
    }
  }
  await Promise.all(sends)
  return { failed, ...Object.fromEntries(WRITES.map((s) => [s, latencies[s]])) }
}

function report (rows, { runs, seconds, rate }) {
  const ms = (v) => (v === null || Number.isNaN(v) ? '-' : `${Math.round(v)}`)
  const stats = (l) => {
    const { p50, p99, max } = summary(l)
    return `${ms(p50)} / ${ms(p99)} / ${ms(max)}`
  }
  const lines = [
    `Two instances of npm start's launcher started together, ${runs} runs; CACHE_NEAR_MAX_BYTES=${NEAR_BYTES}, ` +
    `default workers; ${rate} PUTs a second per service for ${seconds} s from the moment both listen, each on a ` +
    `new connection. Milliseconds; the near cache's sync bound is ${SYNC_BOUND_MS} ms.`,
    '',
    '| tree | run | both listening | every near cache on | workers on | menu PUT p50 / p99 / max | ' +
    'profile PUT p50 / p99 / max | failed |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.tree} | ${r.run} | ${ms(r.listening)} | ${ms(r.nearOnMs)} | ${r.on} | ` +
      `${stats(r.menu)} | ${stats(r.profile)} | ${r.failed} |`),
    '',
    '| tree | runs with every near cache on | slowest to on | menu PUT p50 / p99 / max | ' +
    'profile PUT p50 / p99 / max | writes over the bound |',
    '| --- | ---: | ---: | ---: | ---: | ---: |'
  ]
  for (const tree of [...new Set(rows.map((r) => r.tree))]) {
    const mine = rows.filter((r) => r.tree === tree)
    const all = (s) => mine.flatMap((r) => r[s])
    const on = mine.filter((r) => r.nearOnMs !== null)
    const over = WRITES.reduce((n, s) => n + all(s).filter((v) => v >= SYNC_BOUND_MS).length, 0)
    lines.push(`| ${tree} | ${mine[0].on === 'n/a' ? 'n/a' : `${on.length} of ${mine.length}`} | ` +
      `${on.length ? ms(Math.max(...on.map((r) => r.nearOnMs))) : '-'} | ${stats(all('menu'))} | ` +
      `${stats(all('profile'))} | ${over} of ${all('menu').length + all('profile').length} |`)
  }
  return lines.join('\n')
}
