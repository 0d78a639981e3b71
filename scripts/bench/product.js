// The product service: each route cached (a warmed hot set of 1,000 ids) and uncached; cached styles
// at a moderate fixed rate (its CPU per hit there, against bare Fastify's for the same bytes); then,
// at a fixed 1K RPS (open loop, vegeta), bare Fastify (the latency floor of this machine and this
// client), uncached styles, and page 1 against the deepest page interleaved in one run so that both
// meet the same noise. Ends with the product issue's targets.
import { runBench, warm, MODERATE_RPS } from './harness.js'
import { pick } from './original.js'

export const defaults = { products: 100_000 }

export function run ({ products = defaults.products, ...opts }) {
  return runBench({
    ...opts,
    service: 'product',
    dataset: { count: 'products', size: products },
    uncached: true,
    async cases ({ db, baseline, cached, uncached }) {
      const ids = (await db.query('SELECT id FROM products ORDER BY id')).rows.map((r) => r.id)
      const lastPage = Math.ceil(ids.length / 5)
      const hot = ids.slice(0, 1000)
      const routes = {
        'products?page': () => `/products?page=${1 + Math.floor(Math.random() * 1000)}&count=5`,
        'products/:id': (list) => `/products/${pick(list)}`,
        'products/:id/styles': (list) => `/products/${pick(list)}/styles`,
        'products/:id/related': (list) => `/products/${pick(list)}/related`
      }
      await warm(cached.url, [
        ...hot.flatMap((id) => ['', '/styles', '/related'].map((s) => `/products/${id}${s}`)),
        ...Array.from({ length: 1000 }, (_, i) => `/products?page=${i + 1}&count=5`)
      ])
      const first = '/products?page=1&count=5'
      const deepest = `/products?page=${lastPage}&count=5`
      let turn = 0
      return [
        ...Object.entries(routes).map(([name, path]) =>
          ({ name: `cached ${name}`, url: cached.url, path: () => path(hot), sameBytes: true })),
        ...Object.entries(routes).map(([name, path]) =>
          ({ name: `uncached ${name}`, url: uncached.url, path: () => path(ids) })),
        {
          name: `cached products/:id/styles at ${MODERATE_RPS / 1000}K RPS`,
          url: cached.url,
          path: () => routes['products/:id/styles'](hot),
          rate: MODERATE_RPS,
          sameBytes: true
        },
        {
          name: 'bare Fastify GET /hello at 1K RPS (the latency floor)',
          url: baseline.url,
          path: () => '/hello',
          rate: 1000
        },
        {
          name: 'uncached products/:id/styles at 1K RPS',
          url: uncached.url,
          path: () => routes['products/:id/styles'](ids),
          rate: 1000
        },
        {
          name: 'uncached pages',
          url: uncached.url,
          path: () => (turn++ % 2 ? deepest : first),
          rate: 1000,
          groups: {
            [first]: 'uncached page 1 at 1K RPS',
            [deepest]: `uncached deepest page (${lastPage}) at 1K RPS`
          }
        }
      ]
    }
  })
}

/** The targets of the product issue, from this run's rows. */
export function targets (rows) {
  const row = (start) => rows.find((r) => r.service === 'product' && r.case.startsWith(start))
  const base = rows.filter((r) => r.service === 'product' && r.baseline)
    .reduce((a, r, _, all) => a + r.rps / all.length, 0)
  const styles = row('cached products/:id/styles')
  const slow = row('uncached products/:id/styles at 1K')
  const floor = row('bare Fastify GET /hello at 1K')
  const [deep, first] = [row('uncached deepest'), row('uncached page 1')]
  const ms = (n) => `${n.toFixed(2)} ms`
  return [
    ['cached styles ≥ 50% of baseline RPS', styles.rps / base >= 0.5, `${Math.round(100 * styles.rps / base)}%`],
    [
      'uncached styles p99 ≤ 10 ms at 1K RPS',
      slow.p99 <= 10,
      `${ms(slow.p99)} (bare Fastify at 1K RPS, same client: ${ms(floor.p99)})`
    ],
    [
      'deepest page p99 ≤ 2× page 1 (same run, interleaved)',
      deep.p99 <= 2 * first.p99,
      `${ms(deep.p99)} vs ${ms(first.p99)}`
    ]
  ]
}
