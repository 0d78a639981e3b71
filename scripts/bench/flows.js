// The flows service: POSTs of 5 records at 32 and 256 connections, on hot keys (every record on one
// of 8 keys of one hour: the contention the original deadlocked on) and on spread keys (drawn from
// 100,000 per hour), and GET of an hour's 100 totals. "rows/s": records acknowledged, so committed,
// per second; "req/flush": POSTs per group-commit flush; the service process's CPU per request and RSS.
// Each POST case at 32 connections is also measured beside bare Fastify parsing the same bodies and
// answering the same bytes: the most any implementation of the route could reach on this machine.
import { runBench } from './harness.js'

const BATCH = 5
const [HOT_HOUR, SPREAD_HOUR, GET_HOUR] = [1, 2, 3]
const rand = (n) => Math.floor(Math.random() * n)
const record = (src, dest, hour) => ({
  src_app: `app${rand(src)}`,
  dest_app: `svc${rand(dest)}`,
  vpc_id: 'vpc-0',
  bytes_tx: rand(1e6),
  bytes_rx: rand(1e6),
  hour
})
const hot = () => Array.from({ length: BATCH }, () => record(4, 2, HOT_HOUR))
const spread = () => Array.from({ length: BATCH }, () => record(1000, 100, SPREAD_HOUR))

export const defaults = {}

export function run (opts) {
  return runBench({
    ...opts,
    service: 'flows',
    connections: 32,
    baselineConnections: [32, 256], // each POST case has a baseline at its own connection count
    async cases ({ cached: flows }) {
      await fetch(`${flows.url}/flows`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(Array.from({ length: 100 }, (_, i) =>
          ({ src_app: `app${i}`, dest_app: 'svc', vpc_id: 'vpc-0', bytes_tx: i, bytes_rx: i, hour: GET_HOUR })))
      })
      const post = (name, batch, connections) => ({
        name: `POST /flows ×${BATCH} ${name} keys`,
        url: flows.url,
        connections,
        sameBytes: connections === 32,
        request: () => ({ method: 'POST', path: '/flows', body: batch() }),
        counters: {
          'rows/s': 'flows_records_committed_total',
          'req/flush': ['flows_flush_requests_sum', 'flows_flush_requests_count']
        },
        pid: flows.child.pid
      })
      return [
        post('hot', hot, 32),
        post('spread', spread, 32),
        post('hot', hot, 256),
        post('spread', spread, 256),
        {
          name: 'GET /flows?hour=N (100 keys)',
          url: flows.url,
          path: () => `/flows?hour=${GET_HOUR}`,
          pid: flows.child.pid
        }
      ]
    }
  })
}
