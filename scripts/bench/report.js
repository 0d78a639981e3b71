// The bench's tables: every RPS a ratio to its own run's baseline, a compared row's ratio to its pair
// (RPS over RPS, or CPU per request over CPU per request at a fixed rate), and the shares printed
// under the tables.

const fmt = (n, d = 0) => (n === undefined || Number.isNaN(n)
  ? ''
  : n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }))

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
    const notes = Object.entries(r.counters ?? {})
      .map(([k, v]) => `${k} ${fmt(v, Number.isInteger(v) || v >= 100 ? 0 : 1)}`).join(', ')
    const ratioToBase = r.rate ? `- (fixed ${fmt(r.rate)}/s)` : fmt(r.rps / baseOf(r), 2)
    const ratio = pairRatio(rows, r)
    const toPair = ratio === undefined ? '' : r.rate ? `CPU ${fmt(ratio, 2)}×` : fmt(ratio, 2)
    const conn = r.rate ? `≤${r.connections}` : r.connections
    out.push(`| ${r.service} | ${r.case} | ${conn} | ${fmt(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ` +
      `${ratioToBase} | ${toPair} | ${r.non2xx} | ${r.errors} | ${notes} |`)
  }
  return out.join('\n')
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
    const what = r.rate ? ': CPU per request / pair' : ''
    const each = ratios.map((x) => fmt(x, 2)).join(', ')
    out.push(`| ${r.service} | ${r.case}${what} | ${r.connections} | ${each} | ${fmt(median(ratios), 2)} |`)
  }
  return out.join('\n')
}

function median (list) {
  const s = [...list].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/** The row a compared row was measured against (its `pairOf`), or undefined (none, or not in `rows`). */
export function pairRow (rows, r) {
  return r.pairOf === undefined
    ? undefined
    : rows.find((x) => x.service === r.service && x.case === r.pairOf && x.connections === r.connections)
}

// A row's service CPU per request, where its process was measured (a sameBytes case and its pair).
export const cpuOf = (r) => r.counters?.['CPU µs/req']

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
  .filter((r) => r.service === service && r.sameBytesPair && !r.rate && Boolean(r.writes) === writes)
  .map((r) => [r.case, pairRatio(rows, r)])

/**
 * Each sameBytes read's RPS as a share of bare Fastify sending the same bytes: [case, share].
 * (Fixed-rate cases: see sameBytesCpu.)
 */
export const sameBytesShares = (rows, service) => fullSpeedShares(rows, service, false)

/**
 * Each sameBytes case with a body: its RPS as a share of bare Fastify parsing the same bodies (the
 * ceiling): [case, share].
 */
export const ceilingShares = (rows, service) => fullSpeedShares(rows, service, true)

/**
 * Each fixed-rate sameBytes case's CPU per request and bare Fastify's for the same bytes at that rate:
 * [case, µs, Fastify's µs].
 */
export function sameBytesCpu (rows, service) {
  return rows.filter((r) => r.service === service && r.sameBytesPair && r.rate && pairRatio(rows, r) !== undefined)
    .map((r) => [r.case, cpuOf(r), cpuOf(pairRow(rows, r))])
}
