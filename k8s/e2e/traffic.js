// Requests through the Ingress and the HTTPRoute: every original route answered by the right service,
// the ids the seeded data holds, and the steady load's targets (reads and durable flows writes).
import { randomBytes, randomUUID } from 'node:crypto'
import { http, kubectl, waitFor } from './lib.js'
import { restaurant } from '../../loadtests/k6/scenarios.js'
import {
  GATEWAY_HOST, INGRESS_HOST, INGRESS_URL, NS, SERVICES, e2e, fullname, gatewayName, gatewayNs
} from './context.js'

/**
 * Every original path through one host, and that the right service answers it (its own shape: a
 * route sent to the wrong service is a 404 there): reads and writes of every service's tables.
 * `url`: where the host is served (the ingress controller; scripts/test/expand-contract.test.js: a local
 * router). Returns the number of checks.
 */
export async function routes (host, url = INGRESS_URL) {
  const get = async (path, expect = 200) => {
    const res = await http(url, { host, path })
    if (res.status !== expect) {
      throw new Error(`${host} GET ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
    }
    return res.body
  }
  const send = async (method, path, json, expect, headers) => {
    const res = await http(url, { host, method, path, json, headers })
    if (res.status !== expect) {
      throw new Error(`${host} ${method} ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
    }
    return res
  }
  const checks = []
  const check = (what, ok) => {
    if (!ok) throw new Error(`${host}: ${what}`)
    checks.push(what)
  }
  // product (seeded)
  const [first] = await get('/products?count=1')
  check('GET /products → product list', Number.isInteger(first?.id))
  check('GET /products/:id → product', (await get(`/products/${first.id}`)).id === first.id)
  check('GET /products/:id/styles → styles', Array.isArray((await get(`/products/${first.id}/styles`)).results))
  check('GET /products/:id/related → ids', Array.isArray(await get(`/products/${first.id}/related`)))
  // profile: a new restaurant, then every read path
  const created = await send('POST', '/restaurants', { ...restaurant(1), name: `e2e ${host}` }, 201)
  const id = created.body.id
  check('POST /restaurants → 201 + Location', created.headers.location === `/restaurants/${id}`)
  check('GET /restaurants/:id → profile', (await get(`/restaurants/${id}`)).name === `e2e ${host}`)
  check('GET /restaurants/:id/profile → original shape', Array.isArray(await get(`/restaurants/${id}/profile`)))
  check('PATCH /restaurants/:id with If-Match', (await send(
    'PATCH', `/restaurants/${id}`, { stars: 4.5 }, 200, { 'if-match': created.headers.etag }
  )).body.stars === 4.5)
  // menu: the same restaurant's menu, by both paths
  const dishes = [{ dishType: 'main', subType: 'e2e', dish: 'soup', price: 4.5, ingredients: 'water' }]
  await send('PUT', `/restaurants/${id}/menu`, { dishes }, 201)
  check(
    'PUT+GET /restaurants/:id/menu → menu (not profile)',
    (await get(`/restaurants/${id}/menu`)).dishes?.[0]?.dish === 'soup'
  )
  check('GET /menu/:id → menu', (await get(`/menu/${id}`)).id === id)
  check('GET /menu/1 → a seeded menu', (await get('/menu/1')).id === 1)
  check('GET /restaurants/1 → a seeded profile', (await get('/restaurants/1')).id === 1)
  check('DELETE /restaurants/:id → 204', (await send('DELETE', `/restaurants/${id}`, undefined, 204)).status === 204)
  check(
    'GET /restaurants/:id after DELETE → 404',
    (await http(url, { host, path: `/restaurants/${id}` })).status === 404
  )
  // flows
  const hour = 400_000 + Number.parseInt(randomBytes(2).toString('hex'), 16)
  const record = { src_app: 'e2e', dest_app: host, vpc_id: 'vpc-e2e', bytes_tx: 5, bytes_rx: 7, hour }
  await send('POST', '/flows', [record, record], 200, { 'idempotency-key': randomUUID() })
  const totals = rows(await get(`/flows?hour=${hour}`))
  check(
    'POST+GET /flows → totals',
    totals.length === 1 && Number(totals[0].bytes_tx) === 10 && Number(totals[0].bytes_rx) === 14
  )
  // paths that belong to no service, and paths that look like one but are not routed to it
  check('GET /nothing → 404', [404].includes((await http(url, { host, path: '/nothing' })).status))
  check(
    'GET /restaurants/1/menu/extra → 404',
    (await http(url, { host, path: '/restaurants/1/menu/extra' })).status === 404
  )
  return checks.length
}

// GET /flows answers an array of totals, or a page of them ({ items, next }).
const rows = (body) => (Array.isArray(body) ? body : body.items ?? body.results ?? [])

/**
 * Waits until the proxy routes each service's path on `host`: Traefik learns of new endpoints from its
 * watch, throttled, a few seconds after helm's --wait saw the pods Ready, and until then answers 503
 * "no available server". Returns the seconds it took.
 */
export async function served (host) {
  const started = Date.now()
  const paths = ['/products?count=1', '/restaurants/1', '/menu/1', `/flows?hour=${flows.hour}`]
  await waitFor(`every service routed on ${host}`, async () => {
    for (const path of paths) if ((await http(INGRESS_URL, { host, path })).status !== 200) return false
    return true
  }, { timeoutMs: 120_000, everyMs: 500 })
  return (Date.now() - started) / 1000
}

export async function routesAll () {
  const waited = [await served(INGRESS_HOST), gatewayName ? await served(GATEWAY_HOST) : 0]
  if (Math.max(...waited) > 1) {
    e2e.notes.push(
      `the proxy routed every service ${Math.max(...waited).toFixed(1)} s after the install was Ready ` +
      '(endpoints reach Traefik through its watch)'
    )
  }
  const out = [`Ingress (${INGRESS_HOST}): ${await routes(INGRESS_HOST)} checks`]
  if (gatewayName) {
    out.push(
      `HTTPRoute via Gateway ${gatewayNs}/${gatewayName} (${GATEWAY_HOST}): ${await routes(GATEWAY_HOST)} checks`
    )
  } else {
    e2e.notes.push(
      'Gateway API: no E2E_GATEWAY, so the HTTPRoute was rendered and validated only (charts/test), not served'
    )
  }
  return out.join('; ')
}
// Prints a pod's own /metrics from inside it. Not through the API server's Service proxy: the API
// server is no peer the service's NetworkPolicy admits, and where policies are enforced it reaches
// only the pods of its own node (a node's own traffic to its pods is let through, for the probes).
const OWN_METRICS = 'fetch(`http://127.0.0.1:${process.env.PORT}/metrics`)' +
  '.then(async (r) => { if (!r.ok) throw new Error(`/metrics: ${r.status}`); process.stdout.write(await r.text()) })'

/** /metrics of each service, read inside one of its pods (`kubectl exec`: any cluster, no port-forward). */
export function metrics () {
  for (const s of SERVICES) {
    const text = kubectl(['exec', '-n', NS, `deploy/${fullname(s)}`, '--', 'node', '-e', OWN_METRICS]).stdout
    for (const name of ['http_request_duration_seconds_count', 'pg_pool_connections', 'service_workers']) {
      if (!text.includes(name)) throw new Error(`${s} /metrics has no ${name}`)
    }
  }
  return `${SERVICES.length} services expose http_request_duration_seconds, pg_pool_connections, service_workers`
}
/** The hour the e2e's flows writes go to (one of its own), and how many of them were acknowledged. */
export const flows = {
  hour: 300_000 + Number.parseInt(randomBytes(2).toString('hex'), 16),
  acknowledged: 0,
  unknown: 0 // writes whose every try failed: each may or may not be in the totals
}
/**
 * Ids that exist in the seeded data (the generators plant rejects, so some ids are missing). Read
 * through answered(): after a phase, an error answer is no list, and a 5xx no missing id.
 */
export async function seededIds () {
  const list = await answered('GET /products answered', { path: '/products?count=50' }, (a) => a.status !== 200)
  const products = list.body.map((p) => p.id)
  const found = async (path) => {
    const ids = []
    for (let id = 1; id <= 80 && ids.length < 40; id++) {
      if ((await answered(`GET ${path('N')} answered`, { path: path(id) })).status === 200) ids.push(id)
    }
    return ids
  }
  return { products, restaurants: await found((id) => `/restaurants/${id}`), menus: await found((id) => `/menu/${id}`) }
}
/**
 * The steady load's targets: a read of each service and a durable flows write, through `hosts` in
 * turn (the Ingress's, the HTTPRoute's). A write that fails is sent again with its Idempotency-Key,
 * as its client would: flows answers the first outcome, so the totals count each write once.
 */
export function loadTargets ({ products, restaurants, menus }, hosts = [INGRESS_HOST]) {
  const host = (i) => hosts[Math.floor(i / 5) % hosts.length] // five targets a cycle: every one through every host
  return [
    (i) => ({ service: 'product', host: host(i), path: `/products/${products[i % products.length]}` }),
    (i) => ({ service: 'profile', host: host(i), path: `/restaurants/${restaurants[i % restaurants.length]}` }),
    (i) => ({ service: 'menu', host: host(i), path: `/menu/${menus[i % menus.length]}` }),
    (i) => ({ service: 'flows', host: host(i), path: `/flows?hour=${flows.hour}` }),
    // A write per cycle: each acknowledged one must be in the totals at the end.
    (i) => ({
      service: 'flows',
      host: host(i),
      method: 'POST',
      path: '/flows',
      json: [{ src_app: 'e2e-load', dest_app: 'b', vpc_id: 'v', bytes_tx: 1, bytes_rx: 0, hour: flows.hour }],
      headers: { 'idempotency-key': randomUUID() },
      resend: 3,
      onOk: () => flows.acknowledged++,
      onGiveUp: () => flows.unknown++
    })
  ]
}

/** Where the e2e's flows writes stand, for keptSince(). */
export const flowsMark = async () => ({ total: await flowTotal(), acked: flows.acknowledged, unknown: flows.unknown })

/**
 * The flows writes since `mark`: kept when every acknowledged one is in the totals, beside any number
 * of those whose every try failed (outcome unknown). Those the totals hold count as written from here
 * on. Returns { kept, acked, unknown, grew }.
 */
export async function keptSince (mark) {
  const grew = (await flowTotal()) - mark.total
  const acked = flows.acknowledged - mark.acked
  const unknown = flows.unknown - mark.unknown
  const kept = grew >= acked && grew <= acked + unknown
  if (kept) flows.acknowledged += grew - acked
  return { kept, acked, unknown, grew }
}

/**
 * A request through the Ingress (`http()`'s options), sent again every 500 ms for a minute at most while
 * `again(answer)`: by default while it answers a 5xx. For the set-up and the checks around a phase: a
 * pooled connection to a former primary (a switchover outside the phase) fails its first query and is
 * replaced, and what they send is not the phase's figures.
 */
export function answered (what, options, again = (answer) => answer.status >= 500) {
  return waitFor(what, async () => {
    const answer = await http(INGRESS_URL, { host: INGRESS_HOST, ...options })
    if (again(answer)) throw new Error(`${answer.status} ${JSON.stringify(answer.body)}`)
    return answer
  }, { timeoutMs: 60_000, everyMs: 500 })
}

/** The flows totals of the run's hour, asked again while not a 200: an error's body is no total. */
export async function flowTotal () {
  const res = await answered('GET /flows answered', { path: `/flows?hour=${flows.hour}` }, (a) => a.status !== 200)
  return rows(res.body).reduce((s, r) => s + Number(r.bytes_tx), 0)
}
