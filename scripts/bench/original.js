// The originals' traffic (--traffic original): their own load script's hot ids and mix, the cache's hit
// ratio over a case, and the read-path targets solved from it.
import { metric } from '@suite/kit/testing'
import { cpuOf, pairRow } from './report.js'

/** A random element of a list. */
export const pick = (list) => list[Math.floor(Math.random() * list.length)]

/** A `counters` entry: the share of cache lookups that were hits over the case, in percent. */
export const hitRatio = (before, after) => {
  const d = (result) =>
    metric(after, 'cache_requests_total', { result }) - metric(before, 'cache_requests_total', { result })
  return 100 * d('hit') / (d('hit') + d('miss') + d('error'))
}

// The 20 hot ids of the originals' own load script (profile's database/stresstest/get.js: 75% of GETs
// on these, 25% uniform), for a data set of `n` ids (they are all ≤ 10M; a smaller set folds them in).
const ORIGINAL_HOT_IDS = [
  3352999, 6921999, 8115999, 3984999, 3473999, 855999, 1103999, 4168999, 1477999, 1579992,
  9905999, 6549999, 5399992, 8537999, 6858999, 8009992, 4499999, 1017999, 8508999, 9967999
]
export function originalTraffic (n) {
  const hot = ORIGINAL_HOT_IDS.map((id) => ((id - 1) % n) + 1)
  const uniform = () => 1 + Math.floor(Math.random() * n)
  return { hot: () => pick(hot), uniform, mix: () => (Math.random() < 0.75 ? pick(hot) : uniform()) }
}

// The connections of that script, the default of every --traffic original case.
export const ORIGINAL_CONNECTIONS = 60

// The service's CPU per request on the mix at full speed, at most this many times bare Fastify hello's.
const MIX_CPU_OF_HELLO = 1.9

/**
 * The read-path issue's targets on the originals' traffic: the cold mix ≥ 45% of bare Fastify hello
 * in the same run and its CPU per request ≤ 1.9× hello's, one worker's process ≤ 150 MB RSS, and the
 * CPU per hit and per miss solved from the hot-only and uniform-only cases (each a mix of hits and
 * misses in a known ratio).
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
  const helloCpu = hello.map((r) => r.counters?.['CPU µs/req']).filter((c) => c !== undefined)
  const cpu = mix.counters?.['CPU µs/req'] / (helloCpu.reduce((a, c) => a + c, 0) / helloCpu.length)
  const cpuTarget = `${mixCase}: CPU per request ≤ ${MIX_CPU_OF_HELLO}× bare Fastify hello's ` +
    "(the service's process, both at full speed)"
  const out = [
    [`${mixCase} ≥ 45% of bare Fastify hello`, share >= 0.45, `${Math.round(100 * share)}%`],
    ...(Number.isFinite(cpu) ? [[cpuTarget, cpu <= MIX_CPU_OF_HELLO, `${cpu.toFixed(2)}×`]] : []),
    ['RSS of the process (one worker: WORKERS=1) ≤ 150 MB', rss <= 150, `${Math.round(rss)} MB`]
  ]
  const per = mix.counters ?? {}
  if (per['CPU µs/req'] !== undefined) {
    // CPU µs per request × 10,000 requests a second = µs of CPU a second; ÷ 1e6 = cores.
    const cores = ['CPU µs/req', 'PostgreSQL µs/req', 'Redis µs/req']
      .map((k) => (per[k] * 10_000 / 1e6).toFixed(2))
    out.push([
      `cores for 10K RPS of ${mixCase}: the service / PostgreSQL / Redis (its CPU per request × 10K)`,
      undefined,
      cores.join(' / ')
    ])
  }
  if (hot && uniform) {
    // cpu = h·hit + (1−h)·miss for both cases: two equations, two unknowns.
    const [h1, c1, h2, c2] = [
      hot['hits %'] / 100, hot['CPU µs/req'], uniform['hits %'] / 100, uniform['CPU µs/req']
    ]
    const miss = (c2 * h1 - c1 * h2) / (h1 - h2)
    const hit = (c1 - (1 - h1) * miss) / h1
    if (Number.isFinite(hit) && Number.isFinite(miss)) {
      out.push([
        'CPU per cached read (hit) / per miss, solved from the two cases',
        undefined,
        `${Math.round(hit)} µs / ${Math.round(miss)} µs`
      ])
    }
  }
  return out
}

// Ours on the original's mix, side by side with the original itself (--original): at least this many times its RPS.
const OVER_THE_ORIGINAL = 3

/** --original: ours against the original on the same mix, from the pair's rows (`ours` names our side). */
export function sideBySide (rows, service, ours) {
  const mine = rows.find((r) => r.service === service && r.case === ours)
  const theirs = mine && pairRow(rows, mine)
  if (!theirs) return []
  const shownRps = (r) => Math.round(r.rps).toLocaleString('en-US')
  return [
    [
      `${ours}: ≥ ${OVER_THE_ORIGINAL}× the original's RPS, in the same interleaved rounds`,
      mine.rps >= OVER_THE_ORIGINAL * theirs.rps,
      `${(mine.rps / theirs.rps).toFixed(2)}× (${shownRps(mine)} / ${shownRps(theirs)} RPS)`
    ],
    [
      `${ours}: the original's CPU per request over ours (each process's own)`,
      undefined,
      `${(cpuOf(theirs) / cpuOf(mine)).toFixed(2)}× (${cpuOf(theirs).toFixed(1)} / ${cpuOf(mine).toFixed(1)} µs)`
    ]
  ]
}
