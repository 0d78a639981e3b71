// Traffic flows (TPAggregator): POST batches of flow records with a fresh Idempotency-Key, GET the
// totals of an hour. The traffic and its settings: scenarios.js (flows).
//   k6 run --no-usage-report -e BASE_URL=http://localhost:3003 -e RATE=100 loadtests/k6/flows.js
// POST_SHARE, BATCH, APPS, VPCS, HOURS; RATE, DURATION, P95_MS…
import { options as optionsFor, iteration } from './lib.js'

export const options = optionsFor('flows')
export const flows = iteration('flows')
export default flows
