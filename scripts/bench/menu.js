// The menu service: GET /menu/:id uniform over every menu (the original's traffic), cached — every
// menu warmed first, so the whole set is in Redis — and uncached (one query each).
import { runBench, warm } from './harness.js'

export const defaults = { menus: 200_000 }

export function run ({ menus = defaults.menus, ...opts }) {
  return runBench({
    ...opts,
    service: 'menu',
    dataset: { count: 'menus', size: menus },
    uncached: true,
    async cases ({ cached, uncached }) {
      const uniform = () => `/menu/${1 + Math.floor(Math.random() * menus)}` // the generator's ids are 1..menus
      await warm(cached.url, Array.from({ length: menus }, (_, i) => `/menu/${i + 1}`))
      const over = menus.toLocaleString('en-US')
      return [
        { name: `cached GET /menu/:id, uniform over ${over}`, url: cached.url, path: uniform, sameBytes: true },
        { name: `uncached GET /menu/:id, uniform over ${over}`, url: uncached.url, path: uniform }
      ]
    }
  })
}
