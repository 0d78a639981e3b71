// What tracing costs: the product service three times in one run — without an OTLP endpoint, traced
// at the default ratio (parentbased_traceidratio 0.1), traced at 100% — each exporting to a real Jaeger,
// measured in interleaved rounds at a fixed arrival rate (below saturation, where pods run: CPU per
// request decides how many pods a traffic needs). Two reads: a cached one (a server span, the turn's
// MGET span linked to it) and an uncached one (a server span and a PostgreSQL span under it).
// The ratio without an endpoint against the kit before tracing:
// npm run bench:compare -- --base <commit> --only tracing.
import { startJaeger } from '@suite/kit/testing'
import { runBench, warm } from './harness.js'
import { pick } from './original.js'

export const defaults = { products: 100_000 }

const CACHED_RPS = 3000
const UNCACHED_RPS = 1000
const OFF = 'no endpoint'
const SAMPLED = 'at 10% (the default)'
const ALL = 'at 100%'

export async function run ({ products = defaults.products, ...opts }) {
  const jaeger = await startJaeger()
  try {
    const traced = (ratio) => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpHttp,
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: String(ratio)
    })
    return await runBench({
      ...opts,
      service: 'product',
      dataset: { count: 'products', size: products },
      uncached: true,
      variants: {
        'traced-10': traced(0.1),
        'traced-100': traced(1),
        'uncached-traced-10': { ...traced(0.1), CACHE_ENABLED: 'false' },
        'uncached-traced-100': { ...traced(1), CACHE_ENABLED: 'false' }
      },
      async cases ({ db, cached, uncached, variants }) {
        const ids = (await db.query('SELECT id FROM products ORDER BY id')).rows.map((r) => r.id)
        const hot = ids.slice(0, 1000)
        const paths = hot.map((id) => `/products/${id}/styles`)
        for (const s of [cached, variants['traced-10'], variants['traced-100']]) await warm(s.url, paths)
        const three = (what, rate, list, [off, ten, all]) => {
          const base = `${what} at ${rate / 1000}K RPS, tracing ${OFF}`
          const side = (name, s) =>
            ({ name, url: s.url, pid: s.child.pid, path: () => `/products/${pick(list)}/styles`, rate })
          return {
            pair: [
              side(base, off),
              { ...side(`${what} at ${rate / 1000}K RPS, tracing ${SAMPLED}`, ten), pairOf: base },
              { ...side(`${what} at ${rate / 1000}K RPS, tracing ${ALL}`, all), pairOf: base }
            ]
          }
        }
        return [
          three('cached styles', CACHED_RPS, hot, [cached, variants['traced-10'], variants['traced-100']]),
          three('uncached styles', UNCACHED_RPS, ids, [
            uncached, variants['uncached-traced-10'], variants['uncached-traced-100']
          ])
        ]
      }
    })
  } finally {
    await jaeger.stop()
  }
}

/** Tracing's cost against the same service without an endpoint, CPU per request in the same run. */
export function targets (rows) {
  // Only the pairs this bench made: product's own (same-bytes) pairs may be in the same run.
  const own = rows.filter((r) => r.service === 'product' && r.pairOf?.endsWith(`tracing ${OFF}`))
  const cpu = (r) => r.counters?.['CPU µs/req']
  const base = (r) => rows.find((x) => x.service === r.service && x.case === r.pairOf)
  return own.map((r) => {
    const ratio = cpu(r) / cpu(base(r))
    const limit = r.case.endsWith(SAMPLED) ? 1.15 : 1.6
    return [
      `${r.case}: CPU per request ≤ ${limit}× without an endpoint`,
      ratio <= limit,
      `${cpu(r).toFixed(0)} µs / ${cpu(base(r)).toFixed(0)} µs (${ratio.toFixed(2)}×), ` +
      `p99 ${r.p99.toFixed(2)} ms / ${base(r).p99.toFixed(2)} ms`
    ]
  })
}
