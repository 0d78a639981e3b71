// The ladder: one scenario at 1, 10, 100, 1K, … RPS (a fixed arrival rate per step, the journal's
// method done right) until the breaking point — an SLO broken, errors ≥ 1%, or more than 1% of the
// planned requests late or dropped (the target, or the generator beside it, could not keep the rate).
// After a break it tries 2× and 5× the last good step, to place the break within the decade.
// A warm-up before the first step (10 RPS for 10 s, not measured) gives JIT, connections and query
// plans their start; --warmup 0s measures a cold service. The load is vegeta's (lib/vegeta.js), the
// traffic and the SLOs those of loadtests/k6/scenarios.js; `--help` for the options.
// Writes into DIR: ladder.md (the table), ladder.svg (the plot), ladder.json, and per step
// step-<rate>.html (vegeta plot: latency of every request over time, self-contained, opens offline)
// and step-<rate>.txt (vegeta report: latency percentiles, status codes, errors).
import { mkdir, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { pathToFileURL, fileURLToPath } from 'node:url'
import {
  runCommand, UsageError, UserError, oneOf, wholeNumbers, wholeNumber, numberIn, duration, settings
} from '@suite/kit/args'
import { attackScenario } from './lib/vegeta.js'
import { lineChart, svgDocument, fmt } from './lib/svg.js'
import { servers, prepareDatabase, startInstances } from './lib/stack.js'
import { SLO, PORTS, SCENARIO_NAMES } from './k6/scenarios.js'

const here = fileURLToPath(new URL('.', import.meta.url))

/** Why a step broke (empty: it held). `f` as attack() returns it, `slo` = { p95, p99, errorRate }. */
export function verdict (f, { slo }) {
  const why = []
  if (!(f.p95 <= slo.p95)) why.push(`p95 ${fmt(f.p95)} ms > ${slo.p95} ms`)
  if (!(f.p99 <= slo.p99)) why.push(`p99 ${fmt(f.p99)} ms > ${slo.p99} ms`)
  if (f.errorRate >= slo.errorRate) {
    why.push(`errors ${(f.errorRate * 100).toFixed(2)}% ≥ ${(slo.errorRate * 100).toFixed(2)}%`)
  }
  const missed = (f.late + f.dropped) / Math.max(f.planned, 1)
  if (missed > SLO.maxDropped) {
    why.push(`${(missed * 100).toFixed(1)}% of requests late or dropped: the rate was not kept`)
  }
  return why
}

/** The rates to try after `broken` broke, between the last good rate and it: 2× and 5× the good one. */
export function refinements (good, broken) {
  return good ? [2 * good, 5 * good].filter((r) => r < broken) : []
}

/**
 * durations in seconds; slo = { p95, p99, errorRate } (ms, ms, share); env: the scenario's settings
 * (IDS, MAX_VUS, LATE_MS…); baseUrl: one URL or several, comma-separated (round robin).
 */
export async function ladder ({
  scenario,
  baseUrl,
  steps = [1, 10, 100, 1000, 10000],
  seconds = 30,
  warmup = { seconds: 10, rate: 10 },
  slo = { p95: SLO.p95Ms, p99: SLO.p99Ms, errorRate: SLO.errorRate },
  env = {},
  out,
  log = () => {}
}) {
  await mkdir(out, { recursive: true })
  const load = (rate, s, files = {}) =>
    attackScenario(scenario, { env: { ...env, BASE_URL: baseUrl }, rate, seconds: s, ...files })
  if (warmup.seconds > 0) {
    log(`${scenario}: warming up at ${warmup.rate} RPS for ${warmup.seconds} s (not measured)`)
    await load(warmup.rate, warmup.seconds)
  }
  const rows = []
  const run = async (rate) => {
    log(`${scenario}: ${rate} RPS for ${seconds} s`)
    const f = await load(rate, seconds, { html: join(out, `step-${rate}.html`), text: join(out, `step-${rate}.txt`) })
    // No HTTP answer at all (refused, reset, timed out): not a breaking point but a target that is not
    // there. The ladder says so and exits 1 rather than reporting a "break" at its first step.
    if (f.requests > 0 && !Object.keys(f.statuses).some((code) => code !== '0')) {
      throw new UserError(`no HTTP answer from ${baseUrl} (${f.requests} requests; first error: ${f.firstError})`)
    }
    const row = { rate, ...f, broken: verdict(f, { slo }) }
    log(`  ${fmt(f.rps)} RPS, p50 ${fmt(f.p50)} ms, p95 ${fmt(f.p95)} ms, p99 ${fmt(f.p99)} ms, ` +
      `errors ${(f.errorRate * 100).toFixed(2)}%, late ${f.late}, dropped ${f.dropped}` +
      `${row.broken.length ? ` — broken: ${row.broken.join('; ')}` : ''}` +
      `${f.errors ? ` (first error: ${f.firstError})` : ''}`)
    rows.push(row)
    return row
  }
  let good
  for (const rate of steps) {
    if ((await run(rate)).broken.length) {
      for (const r of refinements(good, rate)) {
        if ((await run(r)).broken.length) break
      }
      break
    }
    good = rate
  }
  rows.sort((a, b) => a.rate - b.rate)
  const result = {
    scenario,
    baseUrl,
    seconds,
    warmup,
    slo,
    rows,
    breakingPoint: rows.find((r) => r.broken.length) ?? null,
    maxHeld: rows.filter((r) => !r.broken.length).at(-1) ?? null
  }
  await writeFile(join(out, 'ladder.json'), JSON.stringify(result, null, 2) + '\n')
  await writeFile(join(out, 'ladder.md'), markdown(result))
  await writeFile(join(out, 'ladder.svg'), plot(result))
  return result
}

export function markdown ({ scenario, baseUrl, seconds, warmup, slo, rows, breakingPoint, maxHeld }) {
  const lines = [
    `# Ladder: ${scenario} at ${baseUrl}`,
    '',
    `${seconds} s per step (vegeta, constant arrival rate), ` +
    `${warmup.seconds > 0 ? `after a warm-up of ${warmup.seconds} s at ${warmup.rate} RPS` : 'no warm-up'}; ` +
    `SLO p95 ≤ ${slo.p95} ms, p99 ≤ ${slo.p99} ms, errors < ${slo.errorRate * 100}%, ` +
    `≤ ${SLO.maxDropped * 100}% of requests late or dropped.`,
    '',
    '| target RPS | achieved RPS | p50 ms | p95 ms | p99 ms | errors | late | dropped | verdict | report |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |'
  ]
  for (const r of rows) {
    lines.push(`| ${fmt(r.rate)} | ${fmt(r.rps)} | ${fmt(r.p50)} | ${fmt(r.p95)} | ${fmt(r.p99)} | ` +
      `${(r.errorRate * 100).toFixed(2)}% | ${r.late} | ${r.dropped} | ` +
      `${r.broken.length ? `broken: ${r.broken.join('; ')}` : 'held'} | ` +
      `[plot](step-${r.rate}.html), [report](step-${r.rate}.txt) |`)
  }
  lines.push('', breakingPoint
    ? (`**Breaking point: ${fmt(breakingPoint.rate)} RPS** (${breakingPoint.broken.join('; ')}); ` +
      `highest rate held: ${maxHeld ? `${fmt(maxHeld.rate)} RPS` : 'none'}.`)
    : `**No breaking point** up to ${fmt(rows.at(-1).rate)} RPS: add steps (--steps).`,
  '', '![ladder](ladder.svg)', '')
  return lines.join('\n')
}

export function plot ({ scenario, slo, rows, breakingPoint }) {
  const at = (k) => rows.map((r) => [r.rate, r[k]])
  const logX = rows.length > 1 && rows.at(-1).rate / rows[0].rate >= 10
  const mark = breakingPoint ? [{ x: breakingPoint.rate, y: breakingPoint.p99, label: 'breaking point' }] : []
  return svgDocument([
    lineChart({
      title: `${scenario}: achieved vs target rate`,
      xLabel: 'target RPS',
      yLabel: 'RPS',
      logX,
      logY: logX,
      series: [
        { name: 'achieved', points: at('rps') },
        { name: 'target', points: rows.map((r) => [r.rate, r.rate]), color: '#999', dashed: true }
      ]
    }),
    lineChart({
      title: `${scenario}: latency`,
      xLabel: 'target RPS',
      yLabel: 'ms',
      logX,
      logY: true,
      series: [
        { name: 'p50', points: at('p50') },
        { name: 'p95', points: at('p95') },
        { name: 'p99', points: at('p99') }
      ],
      hlines: [{ y: slo.p95, label: `SLO p95 ${slo.p95} ms` }, { y: slo.p99, label: `SLO p99 ${slo.p99} ms` }],
      marks: mark
    })
  ])
}

export const usage = {
  usage: 'node loadtests/ladder.js [--scenario NAME] (--base-url URL | --start) [options]',
  summary: 'Runs a scenario of loadtests/k6/scenarios.js at each rate of --steps with vegeta (constant arrival rate) ' +
    'until a step breaks an SLO, has ≥ 1% errors or more than 1% of its requests late or dropped; ' +
    'then 2× and 5× the last good rate. ' +
    'Writes ladder.md, ladder.svg, ladder.json and, per step, step-<rate>.html (vegeta plot, opens offline) ' +
    'and step-<rate>.txt (vegeta report).',
  options: {
    scenario: { type: 'string', value: 'NAME', default: 'product', help: SCENARIO_NAMES.join(', ') },
    'base-url': {
      type: 'string',
      value: 'URL',
      help: 'the service to load (several: comma-separated, round robin); default: npm start\'s port of the scenario'
    },
    start: {
      type: 'boolean',
      default: false,
      help: 'run the service itself on throwaway PostgreSQL + Redis with generated data, instead of --base-url'
    },
    rows: { type: 'string', value: 'N', default: '10000', help: 'with --start: rows generated' },
    workers: { type: 'string', value: 'N', default: '1', help: 'with --start: WORKERS threads' },
    'database-url': {
      type: 'string',
      value: 'URL',
      help: 'with --start: an admin URL of a PostgreSQL to create the database on (default: a throwaway one)'
    },
    'redis-url': { type: 'string', value: 'URL', help: 'with --start: a Redis to use (default: a throwaway one)' },
    steps: { type: 'string', value: 'R,R,…', default: '1,10,100,1000,10000', help: 'rates, requests per second' },
    duration: { type: 'string', value: 'TIME', default: '30s', help: 'per step' },
    warmup: {
      type: 'string', value: 'TIME', default: '10s', help: 'unmeasured warm-up before the first step; 0s: none'
    },
    'warmup-rate': { type: 'string', value: 'R', default: '10', help: 'warm-up rate' },
    'p95-ms': { type: 'string', value: 'MS', default: String(SLO.p95Ms), help: 'SLO: p95 latency' },
    'p99-ms': { type: 'string', value: 'MS', default: String(SLO.p99Ms), help: 'SLO: p99 latency' },
    'error-rate': {
      type: 'string', value: 'SHARE', default: String(SLO.errorRate), help: 'SLO: errors below this share'
    },
    env: {
      type: 'string',
      value: 'NAME=VALUE',
      multiple: true,
      default: [],
      help: 'a scenario setting (IDS, HOT_SHARE, MAX_VUS, LATE_MS… — scenarios.js)'
    },
    out: { type: 'string', value: 'DIR', help: 'where to write (default: loadtests/results/ladder-<scenario>-<time>)' }
  },
  examples: [
    'node loadtests/ladder.js --scenario product --start',
    'node loadtests/ladder.js --scenario product --base-url http://localhost:3000 --steps 100,200,500,1000 ' +
    '--duration 20s',
    'node loadtests/ladder.js --scenario menu --base-url http://localhost:3002 --env IDS=1-2000 --out /tmp/menu-ladder'
  ]
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runCommand('ladder', usage, async (values) => {
    const scenario = oneOf(values, 'scenario', SCENARIO_NAMES)
    if (values.start && values['base-url']) throw new UsageError('--start and --base-url exclude each other')
    const options = {
      scenario,
      steps: wholeNumbers(values, 'steps', { min: 1 }),
      seconds: duration(values, 'duration'),
      warmup: { seconds: duration(values, 'warmup'), rate: wholeNumber(values, 'warmup-rate', { min: 1 }) },
      slo: {
        p95: numberIn(values, 'p95-ms', { min: 0 }),
        p99: numberIn(values, 'p99-ms', { min: 0 }),
        errorRate: numberIn(values, 'error-rate', { min: 0, max: 1 })
      },
      env: settings(values, 'env')
    }
    const rows = wholeNumber(values, 'rows', { min: 1 })
    const workers = wholeNumber(values, 'workers', { min: 1 })
    if (!(options.seconds >= 1)) throw new UsageError(`--duration must be at least 1s (got "${values.duration}")`)
    const log = (m) => process.stderr.write(`ladder: ${m}\n`)
    let baseUrl = values['base-url'] ?? `http://localhost:${PORTS[scenario]}`
    const stops = []
    try {
      if (values.start) {
        const s = await servers({ databaseUrl: values['database-url'], redisUrl: values['redis-url'] })
        stops.push(s.stop)
        log(`starting ${scenario} (WORKERS=${workers}) on ${rows} generated rows`)
        const db = await prepareDatabase(scenario, { adminUrl: s.databaseUrl, rows })
        const [instance] = await startInstances(scenario, { workers, databaseUrl: db.url, redisUrl: s.redisUrl })
        stops.unshift(() => instance.stop())
        baseUrl = instance.url
        options.env = { ...db.env, ...options.env }
      }
      const out = values.out ??
        join(here, 'results', `ladder-${scenario}-${new Date().toISOString().replace(/[:.]/g, '-')}`)
      const result = await ladder({ ...options, baseUrl, out, log })
      console.log(markdown(result))
      console.log(`written to ${relative(process.cwd(), out) || '.'}/ ` +
        '(ladder.md, ladder.svg, ladder.json, step-*.html, step-*.txt)')
    } finally {
      for (const stop of stops) await stop()
    }
  })
}
