// The menu service: GET /menu/:id uniform over every menu (the original's traffic), cached — every
// menu warmed first, so the whole set is in Redis — at full speed and at a moderate fixed rate (its CPU
// per request against bare Fastify's for the same bytes), and uncached (one query each).
// --traffic original: at the original's scale, from a cold start (see originalCases).
import { runBench, warm, MODERATE_RPS } from './harness.js'
import { hitRatio, originalTraffic, originalTargets } from './original.js'

export const defaults = { menus: 200_000 }
export const originalDefaults = { menus: 10_000_000 }

export function run ({ menus = defaults.menus, traffic = 'mix', ...opts }) {
  return runBench({
    ...opts,
    service: 'menu',
    dataset: { count: 'menus', size: menus },
    uncached: traffic !== 'original',
    async cases ({ cached, uncached }) {
      if (traffic === 'original') return originalCases(cached, menus)
      const uniform = () => `/menu/${1 + Math.floor(Math.random() * menus)}` // the generator's ids are 1..menus
      await warm(cached.url, Array.from({ length: menus }, (_, i) => `/menu/${i + 1}`))
      const over = menus.toLocaleString('en-US')
      return [
        { name: `cached GET /menu/:id, uniform over ${over}`, url: cached.url, path: uniform, sameBytes: true },
        {
          name: `cached GET /menu/:id, uniform over ${over}, at ${MODERATE_RPS / 1000}K RPS`,
          url: cached.url,
          path: uniform,
          rate: MODERATE_RPS,
          sameBytes: true
        },
        { name: `uncached GET /menu/:id, uniform over ${over}`, url: uncached.url, path: uniform }
      ]
    }
  })
}

// The original's traffic as its write-up describes it, GET /menu/:id uniform over every menu, from a
// cold start (Redis empty, no warm-up); then profile's 75/25 mix on the same 20 hot ids, hot ids
// alone (for the CPU per hit), and both mixes at a fixed arrival rate for their latency.
function originalCases (service, n) {
  const t = originalTraffic(n)
  const path = (id) => () => `/menu/${id()}`
  const c = { url: service.url, pid: service.child.pid, counters: { 'hits %': hitRatio } }
  return [
    { ...c, name: 'uniform ids only, cold start (the original\'s traffic)', path: path(t.uniform), cold: true },
    { ...c, name: 'original mix (75% on 20 hot ids)', path: path(t.mix) },
    { ...c, name: 'hot ids only', path: path(t.hot) },
    { ...c, name: 'uniform ids only', path: path(t.uniform) },
    { name: 'uniform ids', url: service.url, path: path(t.uniform), rate: 2000 },
    { name: 'original mix', url: service.url, path: path(t.mix), rate: 2000 }
  ]
}

/** --traffic original: the read-path issue's targets for menu, from this run's rows. */
export function targets (rows) {
  return originalTargets(rows, 'menu', 'uniform ids only, cold start (the original\'s traffic)')
}
