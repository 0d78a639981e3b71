// The menu service: GET /menu/:id uniform over every menu (the original's traffic), cached — every
// menu warmed first, so the whole set is in Redis — and uncached (one query each).
import autocannon from 'autocannon'
import { runBench } from './harness.js'

export const defaults = { menus: 200_000 }

export function run ({ menus = defaults.menus, ...opts }) {
  return runBench({
    ...opts,
    service: 'menu',
    dataset: { count: 'menus', size: menus },
    uncached: true,
    async cases ({ cached, uncached, connections }) {
      const uniform = () => `/menu/${1 + Math.floor(Math.random() * menus)}` // the generator's ids are 1..menus
      let next = 0
      await autocannon({ url: cached.url, connections, amount: menus, requests: [{ setupRequest: (req) => ({ ...req, path: `/menu/${1 + (next++ % menus)}` }) }] })
      const over = menus.toLocaleString('en-US')
      return [
        { name: `cached GET /menu/:id, uniform over ${over}`, url: cached.url, path: uniform },
        { name: `uncached GET /menu/:id, uniform over ${over}`, url: uncached.url, path: uniform }
      ]
    }
  })
}
