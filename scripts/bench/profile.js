// The profile service with the original's read mix — 75% of reads on 20 hot ids, 25% uniform — cached
// (every restaurant read once first: the steady state of a running service, not its first minute)
// and uncached, and writes: PUT and PATCH alternating on uniform ids, each committed, version bumped
// and two cache keys invalidated before it answers.
import { runBench, pick, warm } from './harness.js'

export const defaults = { restaurants: 100_000 }

export function run ({ restaurants = defaults.restaurants, ...opts }) {
  return runBench({
    ...opts,
    service: 'profile',
    dataset: { count: 'restaurants', size: restaurants },
    uncached: true,
    async cases ({ db, cached, uncached }) {
      const ids = (await db.query('SELECT id FROM restaurants ORDER BY id')).rows.map((r) => r.id)
      const hot = ids.slice(0, 20)
      const mix = () => (Math.random() < 0.75 ? pick(hot) : pick(ids))
      await warm(cached.url, ids.flatMap((id) => [`/restaurants/${id}`, `/restaurants/${id}/profile`]))
      let n = 0
      const write = () => {
        const i = n++
        const body = i % 2
          ? { quality: i % 101, name: `Patched ${i}` }
          : { name: `Replaced ${i}`, address: '1 Main St', phone: '(555) 010-0000', picture: 'https://images.example/r.jpg', cuisine: 'Thai', price_range: 2, stars: 4.5, quality: 90, delivery: 80, accuracy: 70 }
        return { method: i % 2 ? 'PATCH' : 'PUT', path: `/restaurants/${pick(ids)}`, body }
      }
      return [
        { name: 'cached GET /restaurants/:id (75% on 20 hot ids)', url: cached.url, path: () => `/restaurants/${mix()}`, sameBytes: true },
        { name: 'cached GET /restaurants/:id/profile (same mix)', url: cached.url, path: () => `/restaurants/${mix()}/profile`, sameBytes: true },
        { name: 'uncached GET /restaurants/:id (same mix)', url: uncached.url, path: () => `/restaurants/${mix()}` },
        { name: 'PUT/PATCH mix (uniform ids)', url: cached.url, request: write }
      ]
    }
  })
}
