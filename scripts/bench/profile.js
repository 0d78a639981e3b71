// The profile service with the original's read mix — 75% of reads on 20 hot ids, 25% uniform — cached
// (every restaurant read once first: the steady state of a running service, not its first minute), at
// full speed and at a moderate fixed rate (its CPU per request against bare Fastify's for the same
// bytes), and uncached, and writes: PUT and PATCH alternating on uniform ids, each committed, version bumped
// and two cache keys invalidated before it answers.
// --traffic original: the original's own load script at its own scale instead (see originalCases).
import { runBench, warm, MODERATE_RPS } from './harness.js'
import { pick, hitRatio, originalTraffic, originalTargets, sideBySide } from './original.js'
import { startOriginal } from './original-service.js'
import { restaurant } from '../../loadtests/k6/scenarios.js'

export const defaults = { restaurants: 100_000 }
export const originalDefaults = { restaurants: 10_000_000 }

export function run ({ restaurants = defaults.restaurants, traffic = 'mix', original, ...opts }) {
  return runBench({
    ...opts,
    service: 'profile',
    dataset: { count: 'restaurants', size: restaurants },
    uncached: traffic !== 'original',
    async cases ({ db, cached, uncached, redis, stopAtEnd }) {
      if (traffic === 'original') {
        const theirs = original && await startOriginal(original, db, redis)
        if (theirs) stopAtEnd(theirs)
        return originalCases(cached, restaurants, theirs)
      }
      const ids = (await db.query('SELECT id FROM restaurants ORDER BY id')).rows.map((r) => r.id)
      const hot = ids.slice(0, 20)
      const mix = () => (Math.random() < 0.75 ? pick(hot) : pick(ids))
      await warm(cached.url, ids.flatMap((id) => [`/restaurants/${id}`, `/restaurants/${id}/profile`]))
      let n = 0
      const write = () => {
        const i = n++
        const body = i % 2 ? { quality: i % 101, name: `Patched ${i}` } : { ...restaurant(i), name: `Replaced ${i}` }
        return { method: i % 2 ? 'PATCH' : 'PUT', path: `/restaurants/${pick(ids)}`, body }
      }
      return [
        {
          name: 'cached GET /restaurants/:id (75% on 20 hot ids)',
          url: cached.url,
          path: () => `/restaurants/${mix()}`,
          sameBytes: true
        },
        {
          name: 'cached GET /restaurants/:id/profile (same mix)',
          url: cached.url,
          path: () => `/restaurants/${mix()}/profile`,
          sameBytes: true
        },
        {
          name: `cached GET /restaurants/:id (same mix) at ${MODERATE_RPS / 1000}K RPS`,
          url: cached.url,
          path: () => `/restaurants/${mix()}`,
          rate: MODERATE_RPS,
          sameBytes: true
        },
        { name: 'uncached GET /restaurants/:id (same mix)', url: uncached.url, path: () => `/restaurants/${mix()}` },
        { name: 'PUT/PATCH mix (uniform ids)', url: cached.url, request: write }
      ]
    }
  })
}

// The original's own stress test (its database/stresstest/get.js) on GET /restaurants/:id/profile:
// 75% on its 20 hot ids, 25% uniform over every restaurant, from a cold start (Redis empty, no
// warm-up): the first case is what a new deployment meets. Then each part alone (hot: nearly all
// hits; uniform over 10M: nearly all misses), from which the CPU per hit and per miss follow, and the
// mix at a fixed arrival rate for its latency. With --original, the original itself (`theirs`) and
// ours on the same mix in interleaved rounds, both warm.
function originalCases (service, n, theirs) {
  const t = originalTraffic(n)
  const path = (id) => () => `/restaurants/${id()}/profile`
  const c = { url: service.url, pid: service.child.pid, counters: { 'hits %': hitRatio } }
  return [
    { ...c, name: 'original mix (75% on 20 hot ids), cold start', path: path(t.mix), cold: true },
    { ...c, name: 'hot ids only', path: path(t.hot) },
    { ...c, name: 'uniform ids only', path: path(t.uniform) },
    { name: 'original mix', url: service.url, path: path(t.mix), rate: 2000 },
    ...(theirs
      ? [{
          pair: [
            { name: THE_ORIGINAL, url: theirs.url, pid: theirs.child.pid, path: path(t.mix) },
            { ...c, name: OURS_BESIDE_IT, path: path(t.mix), pairOf: THE_ORIGINAL }
          ]
        }]
      : [])
  ]
}
const THE_ORIGINAL = 'the original (Express, pg, redis), original mix'
const OURS_BESIDE_IT = 'original mix, beside the original'

/** --traffic original: profile's issue targets, and the CPU per hit and per miss, from this run's rows. */
export function targets (rows) {
  return [
    ...originalTargets(
      rows.filter((r) => r.case !== THE_ORIGINAL), 'profile', 'original mix (75% on 20 hot ids), cold start'
    ),
    ...sideBySide(rows, 'profile', OURS_BESIDE_IT)
  ]
}
