// Restaurant menus (FourCourses): reads uniform over all menus — the seed's randomized requests,
// which a cache only helps once much of the set is in it — on both paths of the same document.
//   k6 run --no-usage-report -e BASE_URL=http://localhost:3002 -e RATE=100 loadtests/k6/menu.js
// IDS: the id range (npm start: 1-2000); MIX: the API path and the original client's /menu/:id.
import { options as optionsFor, setting, baseUrl, request } from './lib.js'
import { range, weights, weighted, uniform } from './mix.js'

const S = 'menu'
export const options = optionsFor(S)

const [lo, hi] = range(setting(S, 'IDS', '1-2000'))
const mix = weights(setting(S, 'MIX', 'api:4,original:1'))
const base = baseUrl(S)

export function menu () {
  const id = uniform(Math.random, lo, hi)
  return weighted(Math.random, mix) === 'api'
    ? request('GET', `${base()}/restaurants/${id}/menu`, { name: 'GET /restaurants/:id/menu' })
    : request('GET', `${base()}/menu/${id}`, { name: 'GET /menu/:id' })
}
export default menu
