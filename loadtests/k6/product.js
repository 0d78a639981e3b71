// The product catalogue (Atelier): the four routes mixed, ids from a hot set plus uniform, and the
// journal's pagination mix. The traffic and its settings: scenarios.js (product).
//   k6 run --no-usage-report -e BASE_URL=http://localhost:3000 -e RATE=100 loadtests/k6/product.js
// IDS, PRODUCTS, HOT_IDS, HOT_SHARE, COUNTS, MIX; RATE, DURATION, P95_MS, P99_MS, ERROR_RATE…
import { options as optionsFor, iteration } from './lib.js'

export const options = optionsFor('product')
export const product = iteration('product')
export default product
