// All four scenarios at once in one k6 process, each at its own rate against its own service and
// held to its own thresholds: the mixed traffic of the whole suite.
//   k6 run --no-usage-report -e PRODUCT_BASE_URL=http://localhost:3000 -e FLOWS_BASE_URL=http://localhost:3003 \
//     -e RATE=50 -e SCENARIOS=product,flows loadtests/k6/suite.js
// SCENARIOS picks some (default: all four); PRODUCT_RATE, MENU_IDS… set one scenario's settings.
import { options as optionsFor } from './lib.js'
import { SCENARIO_NAMES } from './scenarios.js'
export { product } from './product.js'
export { profile } from './profile.js'
export { menu } from './menu.js'
export { flows } from './flows.js'

export const options = optionsFor(...(__ENV.SCENARIOS ? __ENV.SCENARIOS.split(',') : SCENARIO_NAMES))
