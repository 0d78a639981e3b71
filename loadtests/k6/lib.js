// What every k6 script shares: its options and the request loop, both from scenarios.js (the one
// source the local runner on vegeta reads too). Only this file and the scripts import k6 modules.
import http from 'k6/http'
import exec from 'k6/execution'
import { scenario as scenarioOf, baseUrls, k6Options } from './scenarios.js'

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
    if (r.body === undefined) return http.request(r.method, base + r.path, null, params)
    params.headers['content-type'] = 'application/json'
    return http.request(r.method, base + r.path, JSON.stringify(r.body), params)
  }
  return () => {
    const base = urls[exec.scenario.iterationInTest % urls.length]
    const r = s.draw(Math.random)
    const res = send(base, r)
    if (r.then && res.status === 200) return send(base, r.then(res.headers.Etag))
    return res
  }
}
