// The suite's services: the one list everything else derives from. npm start, the tests, the load
// tests and the cluster e2e import it; what cannot import it (skaffold.yaml, the charts' Chart.yaml,
// values and schemas, the k6 scripts' services.js, the README tables) is written from it by
// `npm run generate`, and scripts/test/generate.test.js fails when one of those is stale.
// Adding a service: CONTRIBUTING.md.
//
// Each service, in the order everything lists them:
//   name      its folder under services/, image suite-<name>, chart alias, Prometheus job
//   summary   one line for the README
//   port      its port under `npm start` (PORT moves them all by the same amount)
//   data      only for a service with a data set (a generator and a loader in etl/), whose data
//             commands the kit makes from it (src/cli.js): `option` is the generator's size option
//             (--products N) and `defaultCount` its default, `files` what `generate` writes, `table`
//             the table whose rows mean "the data is there" (npm start, --if-empty); `direct`: it has
//             the `seed` command (generate straight into PostgreSQL), which its chart's seed Job uses
//             instead of generate + load
//   routes    its paths through the one host (Ingress and HTTPRoute): match is Exact, PathPrefix or
//             RegularExpression (the whole path, no anchors)
//   samples   paths that answer 200 on its sample data: npm start prints them, the tests call them
//   checks    paths `helm test` calls
//   scenario  the load test's settings in the TestRun chart (its traffic: loadtests/k6/scenarios.js)
export const SERVICES = [
  {
    name: 'product',
    summary: 'the Atelier product catalogue API, drop-in compatible',
    port: 3000,
    data: {
      option: 'products',
      defaultCount: 1_000_011,
      files: 'the six Atelier CSVs (product, styles, photos, skus, features, related)',
      table: 'products'
    },
    routes: [{ match: 'PathPrefix', path: '/products' }],
    samples: ['/products', '/products/1', '/products/1/styles', '/products/1/related'],
    checks: ['/readyz', '/products?count=1'],
    scenario: { IDS: '1-1000', PRODUCTS: '1000' }
  },
  {
    name: 'profile',
    summary: 'restaurant profiles: CRUD with ETag / If-Match, never stale after a write',
    port: 3001,
    data: { option: 'restaurants', defaultCount: 10_000_000, files: 'restaurants.csv', table: 'restaurants' },
    routes: [
      { match: 'Exact', path: '/restaurants' },
      { match: 'RegularExpression', path: '/restaurants/[^/]+(/profile)?' }
    ],
    samples: ['/restaurants/1', '/restaurants/1/profile'],
    checks: ['/readyz', '/docs/json'],
    scenario: { IDS: '1-1000' }
  },
  {
    name: 'menu',
    summary: 'restaurant menus at 10M scale, JSONB, the original client\'s paths',
    port: 3002,
    data: { option: 'menus', defaultCount: 10_000_000, files: 'menus.csv', table: 'menus', direct: true },
    routes: [{ match: 'RegularExpression', path: '/restaurants/[^/]+/menu' }, { match: 'PathPrefix', path: '/menu' }],
    samples: ['/restaurants/2/menu', '/menu/2'],
    checks: ['/readyz', '/docs/json'],
    scenario: { IDS: '1-1000' }
  },
  {
    name: 'flows',
    summary: 'traffic-flow aggregation: exact totals with many writers, group commit',
    port: 3003,
    routes: [{ match: 'PathPrefix', path: '/flows' }],
    samples: ['/flows?hour=1'],
    checks: ['/readyz', '/flows?hour=0'],
    scenario: {}
  }
]

export const NAMES = SERVICES.map((s) => s.name)

/** How far each service's port is from the first one's: npm start moves them all by PORT. */
export const PORT_OFFSETS = SERVICES.map((s) => s.port - SERVICES[0].port)

/** The service called `name`; throws naming the known ones. */
export function serviceNamed (name) {
  const s = SERVICES.find((x) => x.name === name)
  if (!s) throw new Error(`no service "${name}" in services/list.js (${NAMES.join(', ')})`)
  return s
}

/**
 * The service a path of the one host goes to, by the routes above (as the Ingress and the HTTPRoute
 * route it); null: none.
 */
export function serviceOf (path) {
  const p = path.split('?')[0]
  const matches = (r) => (r.match === 'Exact'
    ? p === r.path
    : r.match === 'PathPrefix'
      ? p === r.path || p.startsWith(`${r.path}/`)
      : new RegExp(`^(?:${r.path})$`).test(p))
  return SERVICES.find((s) => s.routes.some(matches))?.name ?? null
}
