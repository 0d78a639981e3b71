// What every scenario shares: settings from the environment, the executor, the SLO thresholds and
// a request helper. Every setting NAME can be given per service as <SERVICE>_NAME (PRODUCT_RATE)
// or for all as NAME (RATE); suite.js runs every scenario in one k6 process that way.
import http from 'k6/http'
import exec from 'k6/execution'

import { PORTS } from './services.js'

export function setting (service, name, fallback) {
  const v = __ENV[`${service.toUpperCase()}_${name}`] ?? __ENV[name]
  return v === undefined || v === '' ? fallback : v
}

export function number (service, name, fallback) {
  const v = Number(setting(service, name, fallback))
  if (!Number.isFinite(v)) throw new Error(`${name} must be a number (got "${setting(service, name)}")`)
  return v
}

/**
 * The base URL of each request. BASE_URL may list several, comma-separated: requests then go
 * round robin over them straight from the client — the matrix's "no load balancer" with N instances.
 */
export function baseUrl (service) {
  const urls = String(setting(service, 'BASE_URL', `http://localhost:${PORTS[service]}`)).split(',').map((u) => u.trim().replace(/\/$/, ''))
  return () => urls[exec.scenario.iterationInTest % urls.length]
}

/**
 * EXECUTOR=rate (default): constant-arrival-rate, RATE iterations per second for DURATION whatever
 * the latency — an open loop, so a slow target cannot lower the load it gets (VUs + sleep sends
 * less when the target slows, and more than meant when it is fast: the journal's "1K" that was 2.4K).
 * EXECUTOR=iterations: ITERATIONS in total over VUS connections, as fast as they go — fixed work
 * timed, the method of the scale-out matrix (seed 003).
 * START_TIME delays the scenario (the chart's ladder runs its steps one after another this way).
 */
export function scenario (service) {
  const common = { exec: service, startTime: setting(service, 'START_TIME', '0s'), gracefulStop: '5s' }
  if (setting(service, 'EXECUTOR', 'rate') === 'iterations') {
    return { ...common, executor: 'shared-iterations', vus: number(service, 'VUS', 32), iterations: number(service, 'ITERATIONS', 10000), maxDuration: setting(service, 'DURATION', '10m') }
  }
  const rate = number(service, 'RATE', 10)
  // VUs in flight = rate × latency: start with PRE_VUS, enough for 100 ms by default (a VU made
  // mid-run costs time and drops iterations meanwhile), let k6 add up to MAX_VUS; an iteration
  // that finds none free is dropped and counted (dropped_iterations).
  const maxVUs = Math.max(number(service, 'MAX_VUS', Math.min(Math.max(rate, 20), 2000)), 1)
  return {
    ...common,
    executor: 'constant-arrival-rate',
    rate,
    timeUnit: '1s',
    duration: setting(service, 'DURATION', '30s'),
    preAllocatedVUs: Math.min(number(service, 'PRE_VUS', Math.ceil(rate * 0.1) + 10), maxVUs),
    maxVUs
  }
}

/**
 * The SLOs as thresholds, per scenario so suite.js holds each service to its own:
 * p95 ≤ P95_MS (100), p99 ≤ P99_MS (250), failed requests < ERROR_RATE (1%), and at most 1% of
 * the planned iterations dropped (the target or the generator could not keep the rate).
 */
export function thresholds (service) {
  const tag = `{scenario:${service}}`
  const t = {
    [`http_req_duration${tag}`]: [`p(95)<=${number(service, 'P95_MS', 100)}`, `p(99)<=${number(service, 'P99_MS', 250)}`],
    [`http_req_failed${tag}`]: [`rate<${number(service, 'ERROR_RATE', 0.01)}`]
  }
  if (setting(service, 'EXECUTOR', 'rate') === 'rate') {
    t[`dropped_iterations${tag}`] = [`rate<=${number(service, 'RATE', 10) * 0.01}`]
  }
  return t
}

export function options (...services) {
  return {
    scenarios: Object.fromEntries(services.map((s) => [s, scenario(s)])),
    thresholds: Object.assign({}, ...services.map(thresholds)),
    summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
    // Bodies are received in full but not kept: the generator's CPU goes to sending.
    discardResponseBodies: true,
    // A URL with a random id is a new series in Prometheus: requests are named by route instead.
    systemTags: ['status', 'method', 'name', 'scenario', 'expected_response', 'error_code', 'check']
  }
}

// Reads by id may find nothing: the catalogue has gaps in its ids, the loaders reject planted
// rows. A 404 there is an answer, not an error; 5xx, timeouts and other 4xx are errors.
const FOUND_OR_NOT = http.expectedStatuses({ min: 200, max: 399 }, 404)
// An If-Match write that lost a race is answered 412: optimistic concurrency working, not an error.
const WRITTEN_OR_CONFLICT = http.expectedStatuses({ min: 200, max: 299 }, 412)

/** One request named by its route; `allow: '404'` or `'412'` accepts that answer as expected. */
export function request (method, url, { name, body, headers = {}, allow } = {}) {
  const params = { tags: { name }, headers }
  if (allow === '404') params.responseCallback = FOUND_OR_NOT
  if (allow === '412') params.responseCallback = WRITTEN_OR_CONFLICT
  if (body !== undefined) {
    params.headers = { 'content-type': 'application/json', ...headers }
    return http.request(method, url, JSON.stringify(body), params)
  }
  return http.request(method, url, null, params)
}
