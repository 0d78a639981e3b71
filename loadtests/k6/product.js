// The product catalogue (Atelier): the four routes mixed, ids from a hot set plus uniform, and the
// journal's pagination mix — a random page, 10% of list requests on the last 10% of the pages.
//   k6 run --no-usage-report -e BASE_URL=http://localhost:3000 -e RATE=100 loadtests/k6/product.js
// IDS: the id range (npm start's sample: 1-2000); PRODUCTS: rows, for the page count (default:
// the range's size); HOT_IDS (100) ids spread over the range get HOT_SHARE (0.5) of the reads by id;
// COUNTS: page sizes drawn uniformly (5); MIX: route weights.
import { options as optionsFor, setting, number, baseUrl, request } from './lib.js'
import { range, weights, weighted, spread, hotOrUniform, page } from './mix.js'

const S = 'product'
export const options = optionsFor(S)

const [lo, hi] = range(setting(S, 'IDS', '1-2000'))
const products = number(S, 'PRODUCTS', hi - lo + 1)
const ids = { hot: spread(lo, hi, number(S, 'HOT_IDS', 100)), share: number(S, 'HOT_SHARE', 0.5), lo, hi }
const counts = String(setting(S, 'COUNTS', '5')).split(',').map(Number)
const mix = weights(setting(S, 'MIX', 'list:2,product:3,styles:3,related:2'))
const base = baseUrl(S)

export function product () {
  const route = weighted(Math.random, mix)
  if (route === 'list') {
    const count = counts[Math.floor(Math.random() * counts.length)]
    const p = page(Math.random, Math.max(1, Math.ceil(products / count)))
    return request('GET', `${base()}/products?page=${p}&count=${count}`, { name: 'GET /products' })
  }
  const id = hotOrUniform(Math.random, ids)
  const suffix = route === 'product' ? '' : `/${route}`
  return request('GET', `${base()}/products/${id}${suffix}`, { name: `GET /products/:id${suffix}`, allow: '404' })
}
export default product
