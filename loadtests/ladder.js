// The ladder: one scenario at 1, 10, 100, 1K, … RPS (a fixed arrival rate per step, the journal's
// method done right) until the breaking point — an SLO broken, errors ≥ 1%, or more than 1% of the
// planned iterations dropped (the target, or the generator beside it, could not keep the rate).
// After a break it tries 2× and 5× the last good step, to place the break within the decade.
// A warm-up before the first step (10 RPS for 10 s, not measured) gives JIT, connections and query
// plans their start; --warmup 0s measures a cold service.
//   node loadtests/ladder.js --scenario product --base-url http://localhost:3000 [--steps 1,10,100,1000,10000]
//     [--duration 30s] [--warmup 10s] [--warmup-rate 10] [--p95-ms 100] [--p99-ms 250] [--error-rate 0.01]
//     [--env IDS=1-2000 …] [--out DIR]
// --start instead of --base-url: the ladder runs the service itself on throwaway PostgreSQL and Redis
// with --rows generated rows and --workers threads (or on --database-url / --redis-url servers).
// Writes into DIR: ladder.md (the table), ladder.svg (the plot), ladder.json, and step-<rate>.html
// (k6's web dashboard report of each step, self-contained: it opens offline).
import { parseArgs } from 'node:util'
import { mkdir, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { pathToFileURL, fileURLToPath } from 'node:url'
import { runK6, figures, scriptOf } from './lib/k6.js'
import { lineChart, svgDocument, fmt } from './lib/svg.js'
import { servers, prepareDatabase, startInstances } from './lib/stack.js'

const here = fileURLToPath(new URL('.', import.meta.url))
const MAX_DROPPED = 0.01

/** Why a step broke (empty: it held). `f` as from figures(), `slo` = { p95, p99, errorRate }. */
export function verdict (f, { rate, seconds, slo, code = 0 }) {
  const why = []
  if (!(f.p95 <= slo.p95)) why.push(`p95 ${fmt(f.p95)} ms > ${slo.p95} ms`)
  if (!(f.p99 <= slo.p99)) why.push(`p99 ${fmt(f.p99)} ms > ${slo.p99} ms`)
  if (f.errorRate >= slo.errorRate) why.push(`errors ${(f.errorRate * 100).toFixed(2)}% ≥ ${(slo.errorRate * 100).toFixed(2)}%`)
  const dropped = f.dropped / Math.max(rate * seconds, 1)
  if (dropped > MAX_DROPPED) why.push(`${(dropped * 100).toFixed(1)}% of iterations dropped: the rate was not kept`)
  if (code === 99 && !why.length) why.push('a k6 threshold was crossed')
  return why
}

/** The rates to try after `broken` broke, between the last good rate and it: 2× and 5× the good one. */
export function refinements (good, broken) {
  return good ? [2 * good, 5 * good].filter((r) => r < broken) : []
}

const seconds = (d) => {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(d)
  if (!m) throw new Error(`not a duration: ${d} (e.g. 30s, 2m)`)
  return Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2]]
}

export async function ladder ({ scenario, baseUrl, steps = [1, 10, 100, 1000, 10000], duration = '30s', warmup = { duration: '10s', rate: 10 }, slo = { p95: 100, p99: 250, errorRate: 0.01 }, env = {}, out, log = () => {} }) {
  await mkdir(out, { recursive: true })
  const k6 = (rate, d, html) => runK6({
    script: scriptOf(scenario),
    env: { ...env, BASE_URL: baseUrl, RATE: String(rate), DURATION: d, P95_MS: String(slo.p95), P99_MS: String(slo.p99), ERROR_RATE: String(slo.errorRate) },
    html
  })
  if (seconds(warmup.duration) > 0) {
    log(`${scenario}: warming up at ${warmup.rate} RPS for ${warmup.duration} (not measured)`)
    await k6(warmup.rate, warmup.duration)
  }
  const rows = []
  const run = async (rate) => {
    log(`${scenario}: ${rate} RPS for ${duration}`)
    const { code, summary } = await k6(rate, duration, join(out, `step-${rate}.html`))
    const f = figures(summary)
    const row = { rate, ...f, broken: verdict(f, { rate, seconds: seconds(duration), slo, code }) }
    log(`  ${fmt(f.rps)} RPS, p50 ${fmt(f.p50)} ms, p95 ${fmt(f.p95)} ms, p99 ${fmt(f.p99)} ms, errors ${(f.errorRate * 100).toFixed(2)}%${row.broken.length ? ` — broken: ${row.broken.join('; ')}` : ''}`)
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
  const result = { scenario, baseUrl, duration, warmup, slo, rows, breakingPoint: rows.find((r) => r.broken.length) ?? null, maxHeld: rows.filter((r) => !r.broken.length).at(-1) ?? null }
  await writeFile(join(out, 'ladder.json'), JSON.stringify(result, null, 2) + '\n')
  await writeFile(join(out, 'ladder.md'), markdown(result))
  await writeFile(join(out, 'ladder.svg'), plot(result))
  return result
}

export function markdown ({ scenario, baseUrl, duration, warmup, slo, rows, breakingPoint, maxHeld }) {
  const lines = [
    `# Ladder: ${scenario} at ${baseUrl}`,
    '',
    `${duration} per step, ${seconds(warmup.duration) > 0 ? `after a warm-up of ${warmup.duration} at ${warmup.rate} RPS` : 'no warm-up'}; SLO p95 ≤ ${slo.p95} ms, p99 ≤ ${slo.p99} ms, errors < ${slo.errorRate * 100}%, ≤ ${MAX_DROPPED * 100}% of iterations dropped.`,
    '',
    '| target RPS | achieved RPS | p50 ms | p95 ms | p99 ms | errors | dropped | verdict | k6 report |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |'
  ]
  for (const r of rows) {
    lines.push(`| ${fmt(r.rate)} | ${fmt(r.rps)} | ${fmt(r.p50)} | ${fmt(r.p95)} | ${fmt(r.p99)} | ${(r.errorRate * 100).toFixed(2)}% | ${r.dropped} | ${r.broken.length ? `broken: ${r.broken.join('; ')}` : 'held'} | [step-${r.rate}.html](step-${r.rate}.html) |`)
  }
  lines.push('', breakingPoint
    ? `**Breaking point: ${fmt(breakingPoint.rate)} RPS** (${breakingPoint.broken.join('; ')}); highest rate held: ${maxHeld ? `${fmt(maxHeld.rate)} RPS` : 'none'}.`
    : `**No breaking point** up to ${fmt(rows.at(-1).rate)} RPS: add steps (--steps).`, '', '![ladder](ladder.svg)', '')
  return lines.join('\n')
}

export function plot ({ scenario, slo, rows, breakingPoint }) {
  const at = (k) => rows.map((r) => [r.rate, r[k]])
  const logX = rows.length > 1 && rows.at(-1).rate / rows[0].rate >= 10
  const mark = breakingPoint ? [{ x: breakingPoint.rate, y: breakingPoint.p99, label: 'breaking point' }] : []
  return svgDocument([
    lineChart({ title: `${scenario}: achieved vs target rate`, xLabel: 'target RPS', yLabel: 'RPS', logX, logY: logX, series: [{ name: 'achieved', points: at('rps') }, { name: 'target', points: rows.map((r) => [r.rate, r.rate]), color: '#999', dashed: true }] }),
    lineChart({ title: `${scenario}: latency`, xLabel: 'target RPS', yLabel: 'ms', logX, logY: true, series: [{ name: 'p50', points: at('p50') }, { name: 'p95', points: at('p95') }, { name: 'p99', points: at('p99') }], hlines: [{ y: slo.p95, label: `SLO p95 ${slo.p95} ms` }, { y: slo.p99, label: `SLO p99 ${slo.p99} ms` }], marks: mark })
  ])
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string', default: 'product' },
      'base-url': { type: 'string', default: 'http://localhost:3000' },
      steps: { type: 'string', default: '1,10,100,1000,10000' },
      duration: { type: 'string', default: '30s' },
      warmup: { type: 'string', default: '10s' },
      'warmup-rate': { type: 'string', default: '10' },
      'p95-ms': { type: 'string', default: '100' },
      'p99-ms': { type: 'string', default: '250' },
      'error-rate': { type: 'string', default: '0.01' },
      env: { type: 'string', multiple: true, default: [] },
      out: { type: 'string' },
      start: { type: 'boolean', default: false },
      rows: { type: 'string', default: '10000' },
      workers: { type: 'string', default: '1' },
      'database-url': { type: 'string' },
      'redis-url': { type: 'string' }
    }
  })
  const log = (m) => process.stderr.write(`ladder: ${m}\n`)
  const env = Object.fromEntries(values.env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]))
  let baseUrl = values['base-url']
  const stops = []
  if (values.start) {
    const s = await servers({ databaseUrl: values['database-url'], redisUrl: values['redis-url'] })
    stops.push(s.stop)
    log(`starting ${values.scenario} (WORKERS=${values.workers}) on ${values.rows} generated rows`)
    const db = await prepareDatabase(values.scenario, { adminUrl: s.databaseUrl, rows: Number(values.rows) })
    const [instance] = await startInstances(values.scenario, { workers: Number(values.workers), databaseUrl: db.url, redisUrl: s.redisUrl })
    stops.unshift(() => instance.stop())
    baseUrl = instance.url
    Object.assign(env, db.env)
  }
  const out = values.out ?? join(here, 'results', `ladder-${values.scenario}-${new Date().toISOString().replace(/[:.]/g, '-')}`)
  const result = await ladder({
    scenario: values.scenario,
    baseUrl,
    steps: values.steps.split(',').map(Number),
    duration: values.duration,
    warmup: { duration: values.warmup, rate: Number(values['warmup-rate']) },
    slo: { p95: Number(values['p95-ms']), p99: Number(values['p99-ms']), errorRate: Number(values['error-rate']) },
    env,
    out,
    log
  }).finally(async () => { for (const stop of stops) await stop() })
  console.log(markdown(result))
  console.log(`written to ${relative(process.cwd(), out) || '.'}/ (ladder.md, ladder.svg, step-*.html)`)
}
