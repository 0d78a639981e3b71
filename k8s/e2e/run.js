#!/usr/bin/env node
// The cluster e2e (`npm run test:e2e`): builds the images from services/Dockerfile, installs the
// umbrella chart as a user would into a namespace that enforces Pod Security "restricted", and
// proves it on a real cluster: helm test, every route through the Ingress and the HTTPRoute,
// /metrics, zero failed requests over an image upgrade, a config change and a pod deletion under
// steady load, the HPA scaling out, TestRuns accepted by the API server, an uninstall that leaves
// nothing behind and a reinstall that finds its data. Any cluster: see `--help` and k8s/README.md.
import { randomBytes, randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { root, shared, umbrellaWithDependencies } from '../../charts/test/lib.js'
import { datastores } from './datastores.js'
import { http, kjson, kubectl, run, runAsync, steadyLoad, table, waitFor } from './lib.js'
import { SERVICES as LIST, NAMES } from '../../services/list.js'

const USAGE = `usage: npm run test:e2e [-- --keep] [-- --help]

Installs the suite on the cluster of KUBECONFIG and checks it end to end. Settings (environment):
  KUBECONFIG           the cluster (kubectl's default when unset)
  INGRESS_URL          where this machine reaches the ingress controller (required), e.g. http://127.0.0.1:30080
  E2E_IMAGE_LOAD       command that loads an image archive into the cluster's nodes; the archive's path is
                       appended (kind: "kind load image-archive --name suite", k3d: "k3d image import -c suite",
                       the lab: "$K8S_LAB_LOAD", which is the default). Empty with E2E_BUILD=none: images are there
  E2E_BUILD            buildah (default when installed) | docker | none (images already built and loaded)
  E2E_TAG              tag of the images (default: e2e-<commit>; the upgrade phase uses <tag>-b)
  E2E_NODE_IMAGE       base image of services/Dockerfile (its NODE_IMAGE build argument)
  E2E_REGISTRY         registry part of the image names (default: localhost)
  E2E_POSTGRES_IMAGE   PostgreSQL image of the external datastores (default: postgres:15)
  E2E_REDIS_IMAGE      Redis image of the external datastores (default: redis:7)
  E2E_GATEWAY          <namespace>/<name> of a Gateway: the HTTPRoute attaches to it and every route is sent
                       through it too (default: none, the Gateway API path is then only rendered)
  E2E_VALUES           more values files for this cluster, comma-separated (e.g. k8s/e2e/values-lab.yaml)
  E2E_NAMESPACE        namespace of the release (default: suite-e2e; <namespace>-data holds the datastores)
  E2E_RELEASE          release name (default: suite.e2e, a dotted name on purpose)
Options:
  --keep               leave the release installed at the end (for a look around); the next run removes it
  --help               this text`

const { values: opts } = (() => {
  try {
    return parseArgs({ options: { keep: { type: 'boolean' }, help: { type: 'boolean' } } })
  } catch (err) {
    console.error(`test:e2e: ${err.message}\n\n${USAGE}`)
    process.exit(2)
  }
})()
if (opts.help) {
  console.log(USAGE)
  process.exit(0)
}

const env = process.env
const SERVICES = NAMES // services/list.js
const NS = env.E2E_NAMESPACE || 'suite-e2e'
const DATA_NS = `${NS}-data`
const RELEASE = env.E2E_RELEASE || 'suite.e2e'
const REGISTRY = env.E2E_REGISTRY || 'localhost'
const INGRESS_URL = env.INGRESS_URL
const INGRESS_HOST = 'ingress.suite.test'
const GATEWAY_HOST = 'gateway.suite.test'
const BUILD = env.E2E_BUILD || (run('sh', ['-c', 'command -v buildah'], { ok: true }).code === 0 ? 'buildah' : 'docker')
const LOAD = env.E2E_IMAGE_LOAD ?? env.K8S_LAB_LOAD ?? ''
const TAG = env.E2E_TAG || `e2e-${run('git', ['-C', root, 'rev-parse', '--short', 'HEAD']).stdout.trim()}`
const [gatewayNs, gatewayName] = (env.E2E_GATEWAY || '').split('/')
if (!INGRESS_URL) {
  console.error(`test:e2e: INGRESS_URL is not set\n\n${USAGE}`)
  process.exit(2)
}
// The names the chart gives: a dot is not allowed in a Service name, so it becomes a dash.
const fullname = (service) => `${RELEASE.replaceAll('.', '-')}-${service}`
const image = (service, tag = TAG) => `${REGISTRY}/suite-${service}:${tag}`

const report = []
const notes = []
const problems = [] // failures found by a stage that lets the run go on
const t0 = Date.now()
async function stage (name, fn) {
  const start = Date.now()
  console.error(`\n== e2e: ${name}`)
  const result = await fn()
  const seconds = ((Date.now() - start) / 1000).toFixed(1)
  console.error(`== e2e: ${name}: ${seconds} s`)
  report.push([name, `${seconds} s`, result ?? 'ok'])
  return result
}

// ---------------------------------------------------------------------------------------------

function preflight () {
  const nodes = kjson(['get', 'nodes']).items
  const ready = nodes.filter((n) => n.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'))
  if (!ready.length) throw new Error('no Ready node')
  const version = kjson(['version']).serverVersion.gitVersion
  const cpu = nodes.reduce((s, n) => s + Number.parseFloat(n.status.allocatable.cpu), 0)
  console.error(`cluster ${version}, ${ready.length} node(s) ready, ${cpu} CPU allocatable; helm ${run('helm', ['version', '--short']).stdout.trim()}`)
  return `${version}, ${ready.length} node(s), ${cpu} CPU`
}

/** Builds every service's image from the real Dockerfile, tagged TAG and TAG-b (the upgrade), and loads them. */
async function images () {
  if (BUILD === 'none') return 'not built (E2E_BUILD=none)'
  const dir = mkdtempSync(join(tmpdir(), 'suite-e2e-images-'))
  try {
    const archives = []
    const pushes = [] // a service's archives are written while the next one builds (a push is mostly one core compressing)
    for (const s of SERVICES) {
      const args = ['--build-arg', `SERVICE=${s}`, ...(env.E2E_NODE_IMAGE ? ['--build-arg', `NODE_IMAGE=${env.E2E_NODE_IMAGE}`] : []), '-f', 'services/Dockerfile', '-t', image(s), root]
      const started = Date.now()
      if (BUILD === 'buildah') {
        await runAsync('buildah', ['bud', '--quiet', '--layers', ...args], { env: { STORAGE_DRIVER: 'vfs', BUILDAH_ISOLATION: 'chroot' } })
        run('buildah', ['tag', image(s), image(s, `${TAG}-b`)], { env: { STORAGE_DRIVER: 'vfs' } })
        for (const tag of [TAG, `${TAG}-b`]) {
          const file = join(dir, `${s}-${tag}.tar`)
          const push = runAsync('buildah', ['push', '--quiet', image(s, tag), `oci-archive:${file}:${image(s, tag)}`], { env: { STORAGE_DRIVER: 'vfs' } })
          push.catch(() => {}) // a failure is thrown by Promise.all below, not as an unhandled rejection meanwhile
          pushes.push(push)
          archives.push(file)
        }
      } else {
        await runAsync('docker', ['build', '-q', ...args])
        run('docker', ['tag', image(s), image(s, `${TAG}-b`)])
        const file = join(dir, `${s}.tar`)
        run('docker', ['save', '-o', file, image(s), image(s, `${TAG}-b`)])
        archives.push(file)
      }
      console.error(`built ${image(s)} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    }
    await Promise.all(pushes)
    if (BUILD === 'buildah') checkImageFiles()
    if (LOAD) {
      const [cmd, ...args] = LOAD.split(' ').filter(Boolean)
      await runAsync(cmd, [...args, ...archives])
    }
    return `${SERVICES.length} images ${TAG} (+ -b for the upgrade), ${LOAD ? 'loaded' : 'not loaded (no E2E_IMAGE_LOAD)'}`
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The image holds the service's runtime files and nothing else of the repository (.dockerignore as buildah reads it). */
function checkImageFiles () {
  const files = run('sh', ['-c', `ctr=$(buildah from -q ${image('product')}) && buildah run "$ctr" -- sh -c 'cd /app && find services -type f | sort'; buildah rm "$ctr" >/dev/null`], { env: { STORAGE_DRIVER: 'vfs', BUILDAH_ISOLATION: 'chroot' } }).stdout.trim().split('\n')
  const tracked = run('git', ['-C', root, 'ls-files', 'services/kit', 'services/product']).stdout.trim().split('\n')
  const runtime = tracked.filter((f) => /^services\/[^/]+\/(package\.json|(src|migrations|etl)\/.+)$/.test(f)).sort()
  const extra = files.filter((f) => !runtime.includes(f))
  const missing = runtime.filter((f) => !files.includes(f))
  if (extra.length || missing.length) throw new Error(`the image's services/ is not the runtime files: extra ${extra.join(', ') || '-'}; missing ${missing.join(', ') || '-'}`)
  console.error(`image ${image('product')}: /app/services holds exactly the ${runtime.length} runtime files`)
}

function namespaces () {
  for (const ns of [NS, DATA_NS, `${NS}-bundled`]) {
    if (kubectl(['get', 'ns', ns], { ok: true }).code === 0) {
      run('helm', ['uninstall', RELEASE, '-n', ns, '--wait', '--ignore-not-found'], { ok: true })
      kubectl(['delete', 'ns', ns, '--wait=true', '--timeout=180s'])
    }
  }
  // The release's namespace enforces Pod Security "restricted" (and warns, which is what a dry-run
  // of a Deployment or StatefulSet gets); the datastores, like a managed database, live elsewhere.
  for (const ns of [NS, `${NS}-bundled`]) {
    kubectl(['create', 'ns', ns])
    kubectl(['label', 'ns', ns, 'pod-security.kubernetes.io/enforce=restricted', 'pod-security.kubernetes.io/warn=restricted', 'pod-security.kubernetes.io/audit=restricted'])
  }
  kubectl(['create', 'ns', DATA_NS])
  const passwords = { 'postgres-password': randomBytes(18).toString('base64url'), 'redis-password': randomBytes(18).toString('base64url') }
  kubectl(['apply', '-n', DATA_NS, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: datastores({ passwords, postgresImage: env.E2E_POSTGRES_IMAGE || 'postgres:15', redisImage: env.E2E_REDIS_IMAGE || 'redis:7' }) }) })
  // The operator's Secret in the release's namespace, as for any external database.
  kubectl(['create', 'secret', 'generic', 'suite-datastores', '-n', NS, ...Object.entries(passwords).map(([k, v]) => `--from-literal=${k}=${v}`)])
  kubectl(['rollout', 'status', '-n', DATA_NS, 'deploy/postgres', 'deploy/redis', '--timeout=180s'])
  // The CRDs of the optional APIs the charts use (ServiceMonitor, TestRun), where the cluster lacks them.
  const crds = join(shared, 'crds')
  const installed = []
  for (const f of existsSync(crds) ? readdirSync(crds) : []) {
    const name = f.replace(/\.yaml$/, '').split('_').reverse().join('.')
    if (kubectl(['get', 'crd', name], { ok: true }).code !== 0) {
      kubectl(['apply', '--server-side', '-f', join(crds, f)])
      installed.push(name.split('.')[0])
    }
  }
  return `${NS} (restricted), datastores in ${DATA_NS}${installed.length ? `; CRDs installed: ${installed.join(', ')}` : ''}`
}

/** charts/suite with its dependencies, as after `helm dependency build` (offline: ../shared/k8s/charts). */
let chartDir
function chart () {
  chartDir = umbrellaWithDependencies()
  return readdirSync(join(chartDir, 'charts')).join(', ')
}

// helm template knows no cluster: the optional APIs the CRDs above (and the lab's Gateway API) serve.
const API_VERSIONS = ['monitoring.coreos.com/v1/ServiceMonitor', 'k6.io/v1alpha1/TestRun', 'gateway.networking.k8s.io/v1/HTTPRoute'].flatMap((a) => ['--api-versions', a])

/** Every object of the bundled mode (Bitnami's PostgreSQL and Redis included) passes a server-side dry-run under "restricted". */
function bundledDryRun () {
  // A release name without a dot: the Bitnami charts cannot take one (the chart refuses it).
  const yaml = run('helm', ['template', 'suite', chartDir, '-n', `${NS}-bundled`, ...API_VERSIONS, '--set', 'loadtest.enabled=true', '--set', 'loadtest.run=e2e']).stdout
  const r = kubectl(['apply', '--dry-run=server', '-n', `${NS}-bundled`, '-f', '-'], { input: yaml, ok: true })
  const violations = r.stderr.split('\n').filter((l) => /PodSecurity/.test(l))
  if (r.code !== 0 || violations.length) throw new Error(`bundled mode, server-side dry-run in a restricted namespace:\n${violations.join('\n') || r.stderr}`)
  return `${r.stdout.trim().split('\n').length} objects accepted, 0 Pod Security warnings`
}

function helmValues (extra = []) {
  const data = `${DATA_NS}.svc.cluster.local`
  const args = [
    '--set', 'postgresql.enabled=false', '--set', 'redis.enabled=false',
    '--set', `global.suite.imageRegistry=${REGISTRY}`,
    '--set', `global.externalDatabase.host=postgres.${data}`, '--set', 'global.externalDatabase.user=app',
    '--set', 'global.externalDatabase.database=app', '--set', 'global.externalDatabase.existingSecret=suite-datastores',
    '--set', 'global.externalDatabase.existingSecretPasswordKey=postgres-password',
    '--set', `global.externalRedis.host=redis.${data}`, '--set', 'global.externalRedis.existingSecret=suite-datastores',
    '--set', 'global.externalRedis.existingSecretPasswordKey=redis-password',
    '--set', `ingress.host=${INGRESS_HOST}`,
    // One service scales from a single replica, for the HPA phase; the others keep the default two.
    '--set', 'product.autoscaling.minReplicas=1',
    ...LIST.filter((s) => s.data).flatMap((s) => ['--set', `${s.name}.seed.enabled=true`, '--set', `${s.name}.seed.scale=200`]),
    ...SERVICES.flatMap((s) => ['--set', `${s}.image.tag=${TAG}`])
  ]
  if (gatewayName) args.push('--set', 'gateway.enabled=true', '--set', `gateway.parentRefs[0].name=${gatewayName}`, '--set', `gateway.parentRefs[0].namespace=${gatewayNs}`, '--set', `gateway.hostnames[0]=${GATEWAY_HOST}`)
  for (const f of (env.E2E_VALUES || '').split(',').filter(Boolean)) args.push('-f', join(root, f))
  return [...args, ...extra]
}

async function install () {
  const started = Date.now()
  await runAsync('helm', ['install', RELEASE, chartDir, '-n', NS, '--wait', '--timeout', '10m', ...helmValues()])
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  // The seed Jobs are part of the release; the services answer while they run, and swap the data in at the end.
  await waitFor('seed Jobs complete', () => {
    const jobs = kjson(['get', 'jobs', '-n', NS, '-l', 'app.kubernetes.io/component=seed']).items
    const failed = jobs.find((j) => j.status.failed >= (j.spec.backoffLimit ?? 6) + 1)
    if (failed) throw new Error(`seed Job ${failed.metadata.name} failed`)
    return jobs.length === 3 && jobs.every((j) => j.status.succeeded >= 1)
  }, 300, 2000)
  return `helm install --wait: ${seconds} s; 3 seed Jobs complete after ${((Date.now() - started) / 1000).toFixed(1)} s`
}

function helmTest () {
  const r = run('helm', ['test', RELEASE, '-n', NS, '--timeout', '5m'], { ok: true })
  const suites = [...r.stdout.matchAll(/TEST SUITE:\s+(\S+)\n.*\n.*\n\s*Phase:\s+(\S+)/g)].map(([, name, phase]) => `${name} ${phase}`)
  if (r.code !== 0) {
    // A failed test pod is kept (hook-delete-policy: hook-succeeded): what it printed says which URL
    // answered what (or that it could not connect).
    const failed = [...r.stdout.matchAll(/TEST SUITE:\s+(\S+)\n.*\n.*\n\s*Phase:\s+Failed/g)].map(([, name]) => name)
    const logs = failed.map((pod) => `--- ${pod}:\n${kubectl(['logs', '-n', NS, `pod/${pod}`], { ok: true }).stdout.trim()}`).join('\n')
    throw new Error(`helm test failed:\n${r.stdout}${r.stderr}${logs}`)
  }
  return `${suites.filter((s) => s.endsWith('Succeeded')).length}/${suites.length} Succeeded`
}

/**
 * Every original path through one host, and that the right service answers it (its own shape: a
 * route sent to the wrong service is a 404 there). Returns the number of checks.
 */
async function routes (host) {
  const get = async (path, expect = 200) => {
    const res = await http(INGRESS_URL, { host, path })
    if (res.status !== expect) throw new Error(`${host} GET ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
    return res.body
  }
  const send = async (method, path, json, expect, headers) => {
    const res = await http(INGRESS_URL, { host, method, path, json, headers })
    if (res.status !== expect) throw new Error(`${host} ${method} ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
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
  const restaurant = { name: `e2e ${host}`, address: '1 Main St', phone: '555-0100', picture: 'https://example.com/r.jpg', cuisine: 'test', price_range: 2, stars: 4, quality: 90, delivery: 80, accuracy: 70 }
  const created = await send('POST', '/restaurants', restaurant, 201)
  const id = created.body.id
  check('POST /restaurants → 201 + Location', created.headers.location === `/restaurants/${id}`)
  check('GET /restaurants/:id → profile', (await get(`/restaurants/${id}`)).name === `e2e ${host}`)
  check('GET /restaurants/:id/profile → original shape', Array.isArray(await get(`/restaurants/${id}/profile`)))
  check('PATCH /restaurants/:id with If-Match', (await send('PATCH', `/restaurants/${id}`, { stars: 4.5 }, 200, { 'if-match': created.headers.etag })).body.stars === 4.5)
  // menu: the same restaurant's menu, by both paths
  const dishes = [{ dishType: 'main', subType: 'e2e', dish: 'soup', price: 4.5, ingredients: 'water' }]
  await send('PUT', `/restaurants/${id}/menu`, { dishes }, 201)
  check('PUT+GET /restaurants/:id/menu → menu (not profile)', (await get(`/restaurants/${id}/menu`)).dishes?.[0]?.dish === 'soup')
  check('GET /menu/:id → menu', (await get(`/menu/${id}`)).id === id)
  check('GET /menu/1 → a seeded menu', (await get('/menu/1')).id === 1)
  check('GET /restaurants/1 → a seeded profile', (await get('/restaurants/1')).id === 1)
  check('DELETE /restaurants/:id → 204', (await send('DELETE', `/restaurants/${id}`, undefined, 204)).status === 204)
  check('GET /restaurants/:id after DELETE → 404', (await http(INGRESS_URL, { host, path: `/restaurants/${id}` })).status === 404)
  // flows
  const hour = 400_000 + Number.parseInt(randomBytes(2).toString('hex'), 16)
  const record = { src_app: 'e2e', dest_app: host, vpc_id: 'vpc-e2e', bytes_tx: 5, bytes_rx: 7, hour }
  await send('POST', '/flows', [record, record], 200, { 'idempotency-key': randomUUID() })
  const totals = rows(await get(`/flows?hour=${hour}`))
  check('POST+GET /flows → totals', totals.length === 1 && Number(totals[0].bytes_tx) === 10 && Number(totals[0].bytes_rx) === 14)
  // paths that belong to no service, and paths that look like one but are not routed to it
  check('GET /nothing → 404', [404].includes((await http(INGRESS_URL, { host, path: '/nothing' })).status))
  check('GET /restaurants/1/menu/extra → 404', (await http(INGRESS_URL, { host, path: '/restaurants/1/menu/extra' })).status === 404)
  return checks.length
}

// GET /flows answers an array of totals, or a page of them ({ items, next }).
const rows = (body) => (Array.isArray(body) ? body : body.items ?? body.results ?? [])

/**
 * Waits until the proxy routes each service's path on `host`: Traefik learns of new endpoints from its
 * watch, throttled, a few seconds after helm's --wait saw the pods Ready, and until then answers 503
 * "no available server". Returns the seconds it took.
 */
async function served (host) {
  const started = Date.now()
  const paths = ['/products?count=1', '/restaurants/1', '/menu/1', `/flows?hour=${FLOW_HOUR}`]
  await waitFor(`every service routed on ${host}`, async () => {
    for (const path of paths) if ((await http(INGRESS_URL, { host, path })).status !== 200) return false
    return true
  }, 120, 500)
  return (Date.now() - started) / 1000
}

async function routesAll () {
  const waited = [await served(INGRESS_HOST), gatewayName ? await served(GATEWAY_HOST) : 0]
  if (Math.max(...waited) > 1) notes.push(`the proxy routed every service ${Math.max(...waited).toFixed(1)} s after the install was Ready (endpoints reach Traefik through its watch)`)
  const out = [`Ingress (${INGRESS_HOST}): ${await routes(INGRESS_HOST)} checks`]
  if (gatewayName) out.push(`HTTPRoute via Gateway ${gatewayNs}/${gatewayName} (${GATEWAY_HOST}): ${await routes(GATEWAY_HOST)} checks`)
  else notes.push('Gateway API: no E2E_GATEWAY, so the HTTPRoute was rendered and validated only (charts/test), not served')
  return out.join('; ')
}

/** /metrics of each service, through the API server's Service proxy (no port-forward, any cluster). */
function metrics () {
  for (const s of SERVICES) {
    const text = kubectl(['get', '--raw', `/api/v1/namespaces/${NS}/services/${fullname(s)}:http/proxy/metrics`]).stdout
    for (const name of ['http_request_duration_seconds_count', 'pg_pool_connections', 'service_workers']) {
      if (!text.includes(name)) throw new Error(`${s} /metrics has no ${name}`)
    }
  }
  return `${SERVICES.length} services expose http_request_duration_seconds, pg_pool_connections, service_workers`
}

// ---------------------------------------------------------------------------------------------
// Disruptions under steady load: every request must succeed.

const FLOW_HOUR = 300_000 + Number.parseInt(randomBytes(2).toString('hex'), 16)
let flowsAcknowledged = 0
/** Ids that exist in the seeded data (the generators plant rejects, so some ids are missing). */
async function seededIds () {
  const products = (await http(INGRESS_URL, { host: INGRESS_HOST, path: '/products?count=50' })).body.map((p) => p.id)
  const found = async (path) => {
    const ids = []
    for (let id = 1; id <= 80 && ids.length < 40; id++) if ((await http(INGRESS_URL, { host: INGRESS_HOST, path: path(id) })).status === 200) ids.push(id)
    return ids
  }
  return { products, restaurants: await found((id) => `/restaurants/${id}`), menus: await found((id) => `/menu/${id}`) }
}
function loadTargets ({ products, restaurants, menus }) {
  return [
    (i) => ({ host: INGRESS_HOST, path: `/products/${products[i % products.length]}` }),
    (i) => ({ host: INGRESS_HOST, path: `/restaurants/${restaurants[i % restaurants.length]}` }),
    (i) => ({ host: INGRESS_HOST, path: `/menu/${menus[i % menus.length]}` }),
    () => ({ host: INGRESS_HOST, path: `/flows?hour=${FLOW_HOUR}` }),
    // A write per cycle: each acknowledged one must be in the totals at the end.
    () => ({ host: INGRESS_HOST, method: 'POST', path: '/flows', json: [{ src_app: 'e2e-load', dest_app: 'b', vpc_id: 'v', bytes_tx: 1, bytes_rx: 0, hour: FLOW_HOUR }], headers: { 'idempotency-key': randomUUID() }, onOk: () => flowsAcknowledged++ })
  ]
}

const RATE = Number(env.E2E_RATE || 40)
async function underLoad (name, ids, action) {
  const load = steadyLoad(INGRESS_URL, { rate: RATE, targets: loadTargets(ids) })
  await sleep(3000)
  const started = Date.now()
  const detail = await action()
  const actionSeconds = ((Date.now() - started) / 1000).toFixed(1)
  await sleep(5000) // the tail: old pods finishing their drain
  const r = await load.stop()
  phases.push([name, r.sent, r.failed, Object.entries(r.failures).map(([k, v]) => `${k}: ${v}`).join(', ') || '-', `${r.p99Ms} ms`, `${actionSeconds} s`, detail])
  return r
}
const phases = []

function rolloutStatus () {
  for (const s of SERVICES) kubectl(['rollout', 'status', '-n', NS, `deploy/${fullname(s)}`, '--timeout=300s'])
}

async function disruptions () {
  const before = await flowTotal()
  const ids = await seededIds()
  await underLoad('image upgrade (every service)', ids, async () => {
    await runAsync('helm', ['upgrade', RELEASE, chartDir, '-n', NS, '--wait', '--timeout', '10m', ...helmValues(SERVICES.flatMap((s) => ['--set', `${s}.image.tag=${TAG}-b`]))])
    rolloutStatus()
    return `to ${TAG}-b`
  })
  await underLoad('config change (every service)', ids, async () => {
    await runAsync('helm', ['upgrade', RELEASE, chartDir, '-n', NS, '--wait', '--timeout', '10m', ...helmValues([...SERVICES.flatMap((s) => ['--set', `${s}.image.tag=${TAG}-b`, '--set', `${s}.config.LOG_LEVEL=warn`])])])
    rolloutStatus()
    return 'LOG_LEVEL=warn'
  })
  await underLoad('pod deleted (each service with 2 replicas)', ids, async () => {
    const deleted = []
    for (const s of SERVICES) {
      const pods = kjson(['get', 'pods', '-n', NS, '-l', `app.kubernetes.io/name=${s},app.kubernetes.io/component=server`]).items.filter((p) => !p.metadata.deletionTimestamp)
      if (pods.length < 2) continue // one replica: deleting it is an outage by definition
      kubectl(['delete', 'pod', '-n', NS, pods[0].metadata.name, '--wait=false'])
      deleted.push(s)
    }
    await sleep(2000)
    rolloutStatus()
    return deleted.join(', ')
  })
  const after = await flowTotal()
  if (after - before !== flowsAcknowledged) throw new Error(`flows: ${flowsAcknowledged} writes acknowledged under load, ${after - before} in the totals`)
  const failed = phases.reduce((s, p) => s + p[2], 0)
  console.error(table(['phase', 'requests', 'failed', 'failures', 'p99', 'action took', 'what'], phases))
  // The run goes on (the later stages still tell something) and fails at the end.
  if (failed) problems.push(`${failed} failed requests during the disruptions`)
  return `${phases.map((p) => `${p[0]}: ${p[1]} requests, ${p[2]} failed`).join('; ')}; ${flowsAcknowledged} acknowledged flows writes all counted`
}

async function flowTotal () {
  const res = await http(INGRESS_URL, { host: INGRESS_HOST, path: `/flows?hour=${FLOW_HOUR}` })
  return rows(res.body).reduce((s, r) => s + Number(r.bytes_tx), 0)
}

/** CPU load on product until its HPA has scaled it from 1 replica to 2 or more. */
async function hpa () {
  const name = fullname('product')
  const replicas = () => kjson(['get', 'hpa', '-n', NS, name]).status
  await waitFor('product at 1 replica with a CPU metric', () => {
    const st = replicas()
    return st.currentReplicas === 1 && st.currentMetrics?.some((m) => m.resource?.current?.averageUtilization !== undefined)
  }, 180, 2000)
  // Well above the target, so that a cheaper request does not make the test miss it: 150 RPS of cached
  // pages took ~71 millicores in a local run, at the 70m target of the 100m request, and an HPA run
  // saw no scale-out in 300 s once the kit's per-request cost fell.
  const load = steadyLoad(INGRESS_URL, { rate: Number(env.E2E_HPA_RATE || 400), targets: [(i) => ({ host: INGRESS_HOST, path: `/products?count=5&page=${1 + (i % 40)}` })] })
  const started = Date.now()
  let scaled
  let seen
  try {
    scaled = await waitFor('the HPA scales product out', () => {
      const st = seen = replicas()
      return st.desiredReplicas >= 2 && st
    }, 300, 1000).catch((err) => {
      throw new Error(`${err.message}; the HPA last saw ${JSON.stringify(seen?.currentMetrics ?? null)}`)
    })
  } finally {
    await load.stop()
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(0)
  await waitFor('the new product pod is Ready', () => kjson(['get', 'deploy', '-n', NS, name]).status.readyReplicas >= 2, 180, 2000)
  const ready = ((Date.now() - started) / 1000).toFixed(0)
  return `product 1 → ${scaled.desiredReplicas} replicas: decided after ${seconds} s of load, second pod Ready after ${ready} s`
}

/**
 * The TestRun of each mode is valid for the installed k6-operator CRD (nothing runs it here), and the
 * release makes none until a run is asked for.
 */
function testRuns () {
  const template = (...sets) => run('helm', ['template', RELEASE, chartDir, '-n', NS, ...API_VERSIONS, ...helmValues(['--set', 'loadtest.enabled=true', ...sets.flatMap((s) => ['--set', s])])]).stdout
  if (/^kind: TestRun$/m.test(template())) throw new Error('a TestRun is rendered without loadtest.run')
  const accepted = []
  for (const mode of ['steady', 'ladder', 'matrix']) {
    const yaml = template(`loadtest.mode=${mode}`, 'loadtest.run=e2e').split(/^---$/m).filter((doc) => /^kind: TestRun$/m.test(doc))
    if (yaml.length !== 1) throw new Error(`${mode}: ${yaml.length} TestRuns rendered, 1 expected`)
    const r = kubectl(['apply', '--dry-run=server', '-n', NS, '-f', '-'], { input: yaml[0] })
    accepted.push(r.stdout.trim().replace(/^testrun\.k6\.io\//, '').replace(/ created \(server dry run\)$/, ''))
  }
  notes.push('k6 TestRuns: accepted by the API server (dry-run) only; no k6-operator or k6 runner image here')
  return `none without loadtest.run; one per run in each mode, accepted (server-side dry-run): ${accepted.join(', ')}`
}

/** helm uninstall leaves nothing of the release: no Pods, Jobs, Secrets, ConfigMaps… */
async function uninstall () {
  await runAsync('helm', ['uninstall', RELEASE, '-n', NS, '--wait', '--timeout', '5m'])
  const kinds = 'pods,jobs,deployments,replicasets,services,configmaps,secrets,serviceaccounts,persistentvolumeclaims,horizontalpodautoscalers,poddisruptionbudgets,networkpolicies,ingresses'
  const extra = ['servicemonitors.monitoring.coreos.com', 'httproutes.gateway.networking.k8s.io', 'testruns.k6.io'].filter((k) => kubectl(['get', k, '-n', NS], { ok: true }).code === 0)
  const left = await waitFor('nothing of the release left', () => {
    const items = kjson(['get', [kinds, ...extra].join(','), '-n', NS]).items
      .filter((o) => o.metadata.name !== 'suite-datastores' && !(o.kind === 'ConfigMap' && o.metadata.name === 'kube-root-ca.crt') && !(o.kind === 'ServiceAccount' && o.metadata.name === 'default'))
    return items.length === 0 ? [] : (console.error(`left: ${items.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`), false)
  }, 120, 3000)
  return `${left.length} objects left`
}

/** Installed again on the same database (its Secret kept by its owner): the data is there. */
async function reinstall () {
  await runAsync('helm', ['install', RELEASE, chartDir, '-n', NS, '--wait', '--timeout', '10m', ...helmValues()])
  const total = await waitFor('flows answers', async () => {
    const res = await http(INGRESS_URL, { host: INGRESS_HOST, path: `/flows?hour=${FLOW_HOUR}` })
    return res.status === 200 && res
  }, 120)
  const kept = rows(total.body).reduce((s, r) => s + Number(r.bytes_tx), 0)
  if (kept !== flowsAcknowledged) throw new Error(`after reinstall: ${kept} flows in the totals, ${flowsAcknowledged} acknowledged before`)
  const waited = await served(INGRESS_HOST)
  await routes(INGRESS_HOST)
  return `routed ${waited.toFixed(1)} s after helm --wait; installed again on the same database: the ${kept} acknowledged writes are there, every route answers`
}

// ---------------------------------------------------------------------------------------------

let failed = false
try {
  await stage('preflight', preflight)
  await stage('images', images)
  await stage('namespaces, datastores, CRDs', namespaces)
  await stage('chart with its dependencies', chart)
  await stage('bundled mode: server-side dry-run under restricted', bundledDryRun)
  await stage('install', install)
  await stage('helm test', helmTest)
  await stage('routes', routesAll)
  await stage('metrics', metrics)
  await stage('disruptions under load', disruptions)
  await stage('HPA', hpa)
  await stage('TestRuns', testRuns)
  await stage('uninstall', uninstall)
  await stage('reinstall', reinstall)
  // The uninstall above proved that nothing is left; this one only cleans up, without waiting for
  // the pods' drain (SHUTDOWN_DELAY_MS and more, which would only add to the run).
  if (!opts.keep) await stage('clean up', () => { run('helm', ['uninstall', RELEASE, '-n', NS]); return 'helm uninstall (not waited for)' })
  if (problems.length) throw new Error(problems.join('; '))
} catch (err) {
  failed = true
  console.error(`\ne2e FAILED: ${err.stack ?? err.message}`)
  console.error(kubectl(['get', 'pods,jobs', '-n', NS, '-o', 'wide'], { ok: true }).stdout)
  console.error(kubectl(['get', 'events', '-n', NS, '--sort-by=.lastTimestamp'], { ok: true }).stdout.split('\n').slice(-30).join('\n'))
}
notes.push('NetworkPolicy: objects created and validated; enforcement depends on the CNI (not enforced on the lab cluster)')
notes.push('bundled PostgreSQL/Redis (Bitnami): server-side dry-run only; their images cannot be pulled without a registry')
console.log(`\n## e2e ${failed ? 'FAILED' : 'passed'} in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`)
console.log(table(['stage', 'time', 'result'], report))
if (phases.length) console.log(`\n${table(['phase', 'requests', 'failed', 'failures', 'p99', 'action took', 'what'], phases)}`)
console.log(`\nNot proven on this cluster:\n${notes.map((n) => `- ${n}`).join('\n')}`)
if (!opts.keep && !failed) {
  for (const ns of [NS, DATA_NS, `${NS}-bundled`]) kubectl(['delete', 'ns', ns, '--wait=false'], { ok: true })
}
process.exit(failed ? 1 : 0)
