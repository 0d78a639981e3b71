// Traffic flows (TPAggregator): POST batches of flow records for the current hours, GET the totals
// of an hour. Every POST carries a fresh Idempotency-Key, as a client that retries must.
//   k6 run --no-usage-report -e BASE_URL=http://localhost:3003 -e RATE=100 loadtests/k6/flows.js
// POST_SHARE (0.8) of the iterations POST a batch of BATCH (5, the seed's wrk script) records over
// APPS (20) source × destination apps and VPCS (4) VPCs; HOURS: the hours written and read.
// Fewer APPS: hotter keys, more contention on the same rows (the seed's case).
import { options as optionsFor, setting, number, baseUrl, request } from './lib.js'
import { range, uniform } from './mix.js'

const S = 'flows'
export const options = optionsFor(S)

const [firstHour, lastHour] = range(setting(S, 'HOURS', '1-24'))
const postShare = number(S, 'POST_SHARE', 0.8)
const batch = number(S, 'BATCH', 5)
const apps = number(S, 'APPS', 20)
const vpcs = number(S, 'VPCS', 4)
const base = baseUrl(S)

const record = (hour) => ({
  src_app: `app-${uniform(Math.random, 1, apps)}`,
  dest_app: `app-${uniform(Math.random, 1, apps)}`,
  vpc_id: `vpc-${uniform(Math.random, 0, vpcs - 1)}`,
  bytes_tx: uniform(Math.random, 0, 100000),
  bytes_rx: uniform(Math.random, 0, 100000),
  hour
})

export function flows () {
  const hour = uniform(Math.random, firstHour, lastHour)
  if (Math.random() >= postShare) return request('GET', `${base()}/flows?hour=${hour}`, { name: 'GET /flows' })
  const key = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`
  return request('POST', `${base()}/flows`, {
    name: 'POST /flows', body: Array.from({ length: batch }, () => record(hour)), headers: { 'idempotency-key': key }
  })
}
export default flows
