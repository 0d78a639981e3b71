// Restaurant menus (FourCourses): reads uniform over all menus, on both paths of the same document.
// The traffic and its settings: scenarios.js (menu).
//   k6 run --no-usage-report -e BASE_URL=http://localhost:3002 -e RATE=100 loadtests/k6/menu.js
// IDS, MIX; RATE, DURATION, P95_MS…
import { options as optionsFor, iteration } from './lib.js'

export const options = optionsFor('menu')
export const menu = iteration('menu')
export default menu
