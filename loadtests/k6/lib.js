// What every k6 script shares: its options and the request loop, both from scenarios.js (the one
// source the local runner on vegeta reads too). Only this file and the scripts import k6 modules.
import http from 'k6/http'
import exec from 'k6/execution'
import { scenario as scenarioOf, baseUrls, k6Options } from './scenarios.js'

// k6's error_code for a connection refused: nothing of the request was sent (a pod that died, its
// endpoint not yet removed), so sending it again, to whichever pod answers next, is safe whatever
// the method. A reset or a timeout is final: the request may have been applied.
const REFUSED = 1212
export const CONNECT_ATTEMPTS = 3

/** `send()` (one try), again while its connection is refused: CONNECT_ATTEMPTS tries at most. */
export function retryRefused (send) {
  let res = send()
  for (let tries = 1; res.error_code === REFUSED && tries < CONNECT_ATTEMPTS; tries++) res = send()
  return res
}

/** The k6 options of these scenarios, from the environment (scenarios.js: k6Options). */
export const options = (...services) => k6Options(__ENV, services)

/**
 * The iteration function of a scenario: one drawn request, named by its route (the answers its
 * route accepts — a 404 on a read by id, a 412 on a lost If-Match race — are not failures); a
 * read-modify-write sends its write with the ETag the read returned, to the same instance.
 */
export function iteration (service) {
  const s = scenarioOf(service, __ENV)
  const urls = baseUrls(__ENV, service)
  const callbacks = Object.fromEntries(Object.entries(s.routes).map(([name, allow]) =>
    [name, allow.length ? http.expectedStatuses({ min: 200, max: 399 }, ...allow) : undefined]))
  const send = (base, r) => {
    const params = { tags: { name: r.name }, headers: { ...r.headers } }
    if (callbacks[r.name]) params.responseCallback = callbacks[r.name]
    const body = r.body === undefined ? null : JSON.stringify(r.body)
    if (body !== null) params.headers['content-type'] = 'application/json'
    return retryRefused(() => http.request(r.method, base + r.path, body, params))
  }
  return () => {
    const base = urls[exec.scenario.iterationInTest % urls.length]
    const r = s.draw(Math.random)
    const res = send(base, r)
    if (r.then && res.status === 200) return send(base, r.then(res.headers.Etag))
    return res
  }
}
