// The monitoring path, live: kube-prometheus-stack, prometheus-adapter and Jaeger installed by
// k8s/install-addons.sh as a user would (on the lab, from the charts' archives and with images built
// on this machine), then proven: the ServiceMonitors discovered with a target per pod, the request
// counters equal to what was sent, every dashboard query and rule with data, the HPA scaling on
// requests per second, an alert through Alertmanager under a real fault, and a trace with its exemplar.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { charts, root, shared } from '../../charts/test/lib.js'
import { builtins, interpolate, queryVariables, targets, variableValues } from '../../loadtests/lib/grafana.js'
import { addonImages } from './addon-images.js'
import { CLUSTER } from './datastores.js'
import { labTraefik } from './lab-traefik.js'
import { http, kjson, kubectl, run, runAsync, steadyLoad, waitFor } from './lib.js'
import {
  DATABASE, DATA_NS, INGRESS_HOST, INGRESS_URL, LOAD, NS, PRIMARY_WAIT_MS, SCRAPE_SECONDS, SERVICES, e2e, env,
  fullname
} from './context.js'

const MONITORING = 'monitoring'
const OBSERVABILITY = 'observability'
/** GET on a Service of the cluster through the API server's proxy: no port-forward, any cluster. */
const proxied = (ns, service, path) => JSON.parse(
  kubectl(['get', '--raw', `/api/v1/namespaces/${ns}/services/${service}/proxy${path}`]).stdout
)

// Prometheus through `kubectl port-forward`, as its users reach it: its NetworkPolicy
// (k8s/kube-prometheus-stack.yaml) admits no API server proxy, which where policies are enforced
// reaches only the pods of its own node. One forward for the run, made again if it ended (the pod moved).
let forward = null
function prometheusUrl () {
  if (forward && forward.child.exitCode === null) return forward.url
  const child = spawn('kubectl', ['port-forward', '-n', MONITORING, 'svc/kube-prometheus-stack-prometheus', ':9090'],
    { stdio: ['ignore', 'pipe', 'pipe'] })
  process.once('exit', () => child.kill())
  const url = new Promise((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      const port = /127\.0\.0\.1:(\d+)/.exec(out)?.[1]
      if (!port) return
      // Ready: from now on not what keeps the run going (it ends when its stages do).
      for (const handle of [child, child.stdout, child.stderr]) handle.unref()
      resolve(`http://127.0.0.1:${port}`)
    })
    child.stderr.on('data', (d) => { out += d })
    child.once('exit', (code) => reject(new Error(`kubectl port-forward to Prometheus exited ${code}: ${out}`)))
  })
  url.catch(() => {})
  forward = { child, url }
  return url
}
export const prom = {
  api: async (path, params = {}) => {
    const res = await fetch(`${await prometheusUrl()}/api/v1/${path}?${new URLSearchParams(params)}`,
      { signal: AbortSignal.timeout(30_000) })
    const body = await res.json()
    if (body.status !== 'success') throw new Error(`${body.errorType}: ${body.error}`)
    return body.data
  }
}

/**
 * The add-ons, as `k8s/install-addons.sh --lab --with-adapter --registry --cloudnative-pg --charts
 * <archives>` installs them, and the lab's Traefik set up as k8s/traefik.yaml.
 */
export async function addons () {
  const archives = await addonImages()
  if (LOAD) {
    const [cmd, ...args] = LOAD.split(' ').filter(Boolean)
    await runAsync(cmd, [...args, ...archives])
  }
  const started = Date.now()
  const traefik = labTraefik()
  await runAsync('bash', [
    join(root, 'k8s', 'install-addons.sh'), '--lab', '--with-adapter', '--registry', '--cloudnative-pg',
    '--charts', join(shared, 'charts')
  ])
  const pods = kjson(['get', 'pods', '-n', MONITORING]).items.length +
    kjson(['get', 'pods', '-n', OBSERVABILITY]).items.length
  return `${archives.length} add-on images loaded; ${traefik}; ` +
    'kube-router, local-path-provisioner, kube-prometheus-stack, prometheus-adapter, Jaeger, the registry, ' +
    'CloudNativePG installed in ' +
    `${((Date.now() - started) / 1000).toFixed(0)} s (${pods} pods)`
}

/**
 * Every service's ServiceMonitor discovered, a target per pod, all up; the request counter equal to
 * what was sent.
 */
export async function scraped () {
  const podsOf = (s) => kjson([
    'get', 'pods', '-n', NS, '-l', `app.kubernetes.io/name=${s},app.kubernetes.io/component=server`
  ]).items.filter((p) => p.status.phase === 'Running' && !p.metadata.deletionTimestamp).length
  const seen = {}
  await waitFor('a target per pod of every service, up', async () => {
    const { activeTargets } = await prom.api('targets', { state: 'active' })
    for (const s of SERVICES) {
      const mine = activeTargets.filter((t) => t.labels.job === s && t.labels.namespace === NS)
      seen[s] = `${mine.filter((t) => t.health === 'up').length}/${podsOf(s)}`
      if (mine.length !== podsOf(s) || mine.some((t) => t.health !== 'up')) return false
    }
    return true
  }, { timeoutMs: 180_000, everyMs: 3000 })
  // A route only this check calls while nothing else runs: Prometheus's counter must rise by what was sent.
  const query = `sum(http_request_duration_seconds_count{namespace="${NS}", job="flows", route="/flows", method="GET"})`
  const counter = async () => Number((await prom.api('query', { query })).result[0]?.value[1] ?? 0)
  await sleep(2 * SCRAPE_SECONDS * 1000) // the scrapes after the last requests of earlier stages
  const before = await counter()
  const sent = 120
  const hour = 600_000 + Number.parseInt(randomBytes(2).toString('hex'), 16)
  for (let i = 0; i < sent; i++) {
    const res = await http(INGRESS_URL, { host: INGRESS_HOST, path: `/flows?hour=${hour}` })
    if (res.status !== 200) throw new Error(`GET /flows: ${res.status}`)
  }
  const sentAt = Date.now()
  let counted = 0
  await waitFor(
    'Prometheus to count the requests sent',
    async () => (counted = await counter() - before) >= sent,
    { timeoutMs: 4 * SCRAPE_SECONDS * 1000, everyMs: 500 }
  ).catch(() => {})
  const seconds = ((Date.now() - sentAt) / 1000).toFixed(1)
  if (counted !== sent) e2e.problems.push(`Prometheus counted ${counted} of the ${sent} GET /flows sent`)
  return `targets up per service (up/pods): ${SERVICES.map((s) => `${s} ${seen[s]}`).join(', ')}; ` +
    `${sent} GET /flows sent, ${counted} counted ${seconds} s later (scrapes every ${SCRAPE_SECONDS} s)`
}

/**
 * Every panel query of the services' dashboard, and every rule of the umbrella's PrometheusRule, with
 * data on this Prometheus.
 */
export async function queriesWithData () {
  // Two per service, and the database's where it is a CloudNativePG Cluster.
  const expected = 2 * SERVICES.length + (DATABASE === 'cloudnative-pg' ? 1 : 0)
  const loaded = async () => (await prom.api('rules')).groups.filter((g) => g.name.startsWith('suite-'))
  // The tree's chart (the disruptions' config change, minutes before) may add a group to the releases'
  // ones: the operator's new rule file reaches Prometheus' volume at the kubelet's next sync of it (a
  // minute or more), then a reload and a first evaluation. A group that never comes still fails.
  const ours = await waitFor(`the suite's ${expected} rule groups loaded and evaluated`, async () => {
    const now = await loaded()
    return now.length === expected && now.every((g) => g.rules.every((r) => r.health !== 'unknown')) && now
  }, { timeoutMs: 180_000, everyMs: 2000 }).catch(loaded)
  const end = Date.now() / 1000
  const window = { start: end - 600, end }
  const dir = join(charts, 'suite', 'dashboards')
  const failures = []
  let panels = 0
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const dashboard = JSON.parse(readFileSync(join(dir, file), 'utf8'))
    if (dashboard.uid === 'suite-k6') continue // k6's series come from a TestRun's remote writes: none run here
    const vars = { ...builtins({ rangeMs: 600_000, scrapeMs: SCRAPE_SECONDS * 1000 }), datasource: 'prometheus' }
    for (const v of queryVariables(dashboard)) {
      vars[v.name] = await variableValues(prom, interpolate(v.query, vars), window)
    }
    for (const t of targets(dashboard)) {
      panels++
      const data = await prom.api('query_range', {
        query: interpolate(t.expr, vars), start: window.start, end: window.end, step: 15
      }).catch((err) => ({ result: [], error: err.message }))
      if (!data.result.some((r) => r.values.some(([, v]) => !Number.isNaN(Number(v))))) {
        failures.push(`${file} "${t.panel}": ${data.error ?? 'no data'}`)
      }
    }
  }
  if (ours.length !== expected) {
    failures.push(`the operator loaded ${ours.length} of the suite's ${expected} rule groups`)
  }
  let rules = 0
  for (const rule of ours.flatMap((g) => g.rules)) {
    rules++
    if (rule.health !== 'ok') failures.push(`${rule.name}: ${rule.health} ${rule.lastError ?? ''}`)
    const selectors = rule.type === 'recording'
      ? [`${rule.name}{namespace="${NS}"}`]
      : [...rule.query.matchAll(/([a-zA-Z_:][\w:]*)(\{[^}]*\})/g)].map(([s]) => s)
    for (const selector of selectors) {
      if (!(await prom.api('query', { query: selector })).result.length) {
        failures.push(`${rule.name}: ${selector} has no data`)
      }
    }
  }
  if (failures.length) {
    e2e.problems.push(`queries without data on the cluster's Prometheus:\n  ${failures.join('\n  ')}`)
  }
  return `${panels} panel queries and ${rules} rules (kube-state-metrics' series included) evaluated: ` +
    `${failures.length} without data`
}

/**
 * product from 1 replica to 2 or more on requests per second (prometheus-adapter, no CPU metric), and
 * back to 1 after the load.
 */
export async function rpsAutoscaling () {
  const name = fullname('product')
  const hpa = () => kjson(['get', 'hpa', '-n', NS, name])
  const spec = hpa().spec
  if (
    spec.metrics.some((m) => m.type === 'Resource') ||
    !spec.metrics.some((m) => m.pods?.metric.name === 'http_requests_per_second')
  ) {
    throw new Error(`the HPA does not scale on requests per second alone: ${JSON.stringify(spec.metrics)}`)
  }
  await waitFor('product at 1 replica, its RPS metric served by prometheus-adapter', () => {
    const st = hpa().status
    return st.currentReplicas === 1 && st.currentMetrics?.some((m) => m.pods?.current?.averageValue !== undefined)
  }, { timeoutMs: 240_000, everyMs: 3000 })
  const rate = Number(env.E2E_HPA_RATE || 60)
  const load = steadyLoad(INGRESS_URL, {
    rate,
    targets: [(i) => ({ host: INGRESS_HOST, path: `/products?count=5&page=${1 + (i % 40)}` })]
  })
  const started = Date.now()
  let up, seen
  try {
    up = await waitFor('the HPA scales product out on requests per second', () => {
      const st = hpa().status
      seen = st.currentMetrics?.find((m) => m.pods)?.pods.current.averageValue
      return st.desiredReplicas >= 2 && st
    }, { timeoutMs: 300_000, everyMs: 1000 })
  } finally {
    const r = await load.stop()
    if (r.failed) e2e.problems.push(`${r.failed} failed requests while product scaled out`)
  }
  const upSeconds = ((Date.now() - started) / 1000).toFixed(0)
  const stopped = Date.now()
  // Back to 1 replica takes minutes (the metric's rate window, then the scale-down window): waited for
  // while the next stages run, which send product no load (a trace's request aside), and joined by
  // scaledBack(). kubectl runs without blocking: those stages' load shares this event loop.
  // Meanwhile the adapter must answer for every pod, the new ones that never served at 0: a pod
  // missing there leaves the HPA without a metric once the pods that served are gone.
  const selector = encodeURIComponent('app.kubernetes.io/name=product,app.kubernetes.io/component=server')
  const metricPath = `/apis/custom.metrics.k8s.io/v1beta1/namespaces/${NS}/pods/*/http_requests_per_second` +
    `?labelSelector=${selector}`
  adapter = { most: 0, zeros: 0 }
  scaleDown = waitFor('the HPA scales product back to 1 replica after the load', async () => {
    const items = JSON.parse(await runAsync('kubectl', ['get', '--raw', metricPath])).items
    if (items.length > adapter.most) {
      adapter = { most: items.length, zeros: items.filter((i) => i.value === '0').length }
    }
    return JSON.parse(
      await runAsync('kubectl', ['get', 'hpa', '-n', NS, name, '-o', 'json'])
    ).status.desiredReplicas === 1
  }, { timeoutMs: 420_000, everyMs: 2000 })
    .then(() => (Date.now() - stopped) / 1000)
  scaleDown.catch(() => {}) // thrown where it is joined
  return `product 1 → ${up.desiredReplicas} replicas ${upSeconds} s into ${rate} RPS ` +
    `(the adapter's metric: ${seen} per pod, target 15)`
}

let scaleDown, adapter
/** The scale-down that rpsAutoscaling started, waited for. */
export async function scaledBack () {
  if (!scaleDown) return 'no scale-out to come back from'
  const seconds = await scaleDown
  if (adapter.most < 2) {
    e2e.problems.push(
      `prometheus-adapter answered http_requests_per_second for at most ${adapter.most} product pod(s) ` +
      'while it ran more'
    )
  }
  return `product back to 1 replica ${seconds.toFixed(0)} s after the load; ` +
    `the adapter answered for ${adapter.most} pods at most (${adapter.zeros} at 0)`
}

/**
 * A real fault: flows cut off from PostgreSQL (its Service sent to a closed port, the open connections
 * ended) under steady reads, until SuiteErrorBudgetBurnFast reaches Alertmanager; then PostgreSQL back,
 * until the alert resolves there. Seconds to fire and to resolve.
 */
export async function alertThroughAlertmanager () {
  const firing = () => proxied(
    MONITORING,
    'kube-prometheus-stack-alertmanager:9093',
    '/api/v2/alerts?active=true&silenced=false&inhibited=false'
  ).filter((a) => (
    a.labels.alertname === 'SuiteErrorBudgetBurnFast' && a.labels.job === 'flows' && a.labels.namespace === NS
  ))
  if (firing().length) throw new Error('SuiteErrorBudgetBurnFast fires for flows before the fault')
  const load = steadyLoad(INGRESS_URL, {
    rate: 20,
    // With E2E_PRIMARY_WAIT_MS flows holds each request that long before its 503: the load waits for it.
    targets: [() => ({
      host: INGRESS_HOST, path: '/flows?hour=1', expect: [200, 503], timeoutMs: PRIMARY_WAIT_MS + 10_000
    })]
  })
  const fault = DATABASE === 'cloudnative-pg' ? cutByPolicy() : cutByService()
  let fired, resolved
  try {
    await sleep(10_000)
    const faultAt = Date.now()
    fault.cut()
    await waitFor('SuiteErrorBudgetBurnFast in Alertmanager', () => firing().length > 0, {
      timeoutMs: 300_000,
      everyMs: 2000
    })
    fired = (Date.now() - faultAt) / 1000
  } finally {
    fault.restore()
  }
  const backAt = Date.now()
  await waitFor('SuiteErrorBudgetBurnFast resolved in Alertmanager', () => firing().length === 0, {
    timeoutMs: 420_000,
    everyMs: 2000
  })
  resolved = (Date.now() - backAt) / 1000
  const r = await load.stop()
  return 'flows cut off from PostgreSQL: SuiteErrorBudgetBurnFast (2m/30s window pair) reached Alertmanager ' +
    `${fired.toFixed(0)} s after the fault and resolved ${resolved.toFixed(0)} s after PostgreSQL was back ` +
    `(${r.sent} reads meanwhile, ${r.failed} not 200/503)`
}

/**
 * flows cut off from PostgreSQL by its own NetworkPolicy (enforced): its egress to the database is
 * taken out, and its connections ended; new ones are refused. The other services are untouched.
 */
function cutByPolicy () {
  const name = fullname('flows')
  const policy = kjson(['get', 'networkpolicy', name, '-n', NS])
  const patch = (egress) => kubectl([
    'patch', 'networkpolicy', name, '-n', NS, '--type', 'json',
    '-p', JSON.stringify([{ op: 'replace', path: '/spec/egress', value: egress }])
  ])
  return {
    cut () {
      patch(policy.spec.egress.filter((rule) => !rule.ports?.some((p) => p.port === 5432)))
      const primary = kjson(['get', 'cluster', CLUSTER, '-n', DATA_NS]).status.currentPrimary
      kubectl([
        'exec', '-n', DATA_NS, primary, '-c', 'postgres', '--', 'psql', '-h', '/controller/run', '-U', 'postgres',
        '-d', 'app', '-qAtc',
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name LIKE 'flows-%'"
      ])
    },
    restore: () => patch(policy.spec.egress)
  }
}

/** flows cut off from PostgreSQL by its Service: new connections refused, the open ones ended. */
function cutByService () {
  const port = kjson(['get', 'svc', 'postgres', '-n', DATA_NS]).spec.ports[0]
  const patchPort = (targetPort) => kubectl([
    'patch', 'svc', 'postgres', '-n', DATA_NS, '--type', 'json',
    '-p', JSON.stringify([{ op: 'replace', path: '/spec/ports/0/targetPort', value: targetPort }])
  ])
  return {
    cut () {
      patchPort(1) // nothing listens there: new connections are refused
      kubectl([
        'exec', '-n', DATA_NS, 'deploy/postgres', '--', 'psql', '-U', 'app', '-d', 'app', '-qAtc',
        'SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity ' +
        "WHERE usename = 'app' AND pid <> pg_backend_pid()"
      ])
    },
    restore: () => patchPort(port.targetPort)
  }
}

/**
 * A request with a known traceparent through the Ingress: its whole trace in Jaeger, its exemplar in
 * Prometheus.
 */
export async function traceAndExemplar () {
  // A pod leaving (the HPA's scale-down just before) still serves through its drain but is no longer
  // scraped: the request's exemplar would go with it.
  await waitFor('no product pod terminating', () => !kjson([
    'get', 'pods', '-n', NS, '-l', 'app.kubernetes.io/name=product,app.kubernetes.io/component=server'
  ]).items.some((p) => p.metadata.deletionTimestamp), { timeoutMs: 120_000, everyMs: 2000 })
  const traceId = randomBytes(16).toString('hex')
  const res = await http(INGRESS_URL, {
    host: INGRESS_HOST,
    path: `/products?count=3&page=${500 + Number.parseInt(randomBytes(1).toString('hex'), 16)}`,
    headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` }
  })
  if (res.status !== 200) throw new Error(`traced request: ${res.status}`)
  const spans = await waitFor(`trace ${traceId} in Jaeger`, () => {
    const body = proxied(OBSERVABILITY, 'jaeger:16686', `/api/v3/traces/${traceId}`)
    const all = (body.result?.resourceSpans ?? []).flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => ({
      ...s,
      service: rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue
    }))))
    return all.length >= 3 && all
  }, { timeoutMs: 60_000, everyMs: 2000 })
  const server = spans.find((s) => s.name === 'GET /products')
  if (!server || server.service !== 'product' || !spans.some((s) => s.parentSpanId === server.spanId)) {
    throw new Error(`trace ${traceId}: ${spans.map((s) => s.name).join(', ')}`)
  }
  const exemplar = await waitFor(`the exemplar of trace ${traceId} in Prometheus`, async () => {
    const data = await prom.api('query_exemplars', {
      query: `http_request_duration_seconds_bucket{namespace="${NS}", job="product"}`,
      start: Date.now() / 1000 - 300,
      end: Date.now() / 1000 + 60
    })
    return data.flatMap((d) => d.exemplars.map((e) => ({ ...e, series: d.seriesLabels })))
      .find((e) => e.labels.trace_id === traceId)
  }, { timeoutMs: 60_000, everyMs: 2000 })
  return `trace ${traceId.slice(0, 8)}…: ` +
    `${spans.length} spans in Jaeger (${[...new Set(spans.map((s) => s.name))].join(', ')}); ` +
    `its exemplar on ${exemplar.series.route} le=${exemplar.series.le} in Prometheus`
}

/**
 * What the monitoring stack takes on the node (`kubectl top` of its namespaces), and which of its pods
 * Pod Security "restricted" would refuse (a server-side dry-run of enforcing it on each namespace
 * lists them; Jaeger's namespace enforces it already).
 */
export function monitoringCost () {
  const refused = {}
  for (const ns of [MONITORING, OBSERVABILITY]) {
    const r = kubectl(
      ['label', '--dry-run=server', '--overwrite', 'ns', ns, 'pod-security.kubernetes.io/enforce=restricted'],
      { ok: true }
    )
    refused[ns] = [...r.stderr.matchAll(/^Warning: ([\w-]+)(?: \(and \d+ other pods?\))?: (.*)$/gm)]
      .map(([, pod, why]) => `${pod.replace(/-[a-z0-9]{5,10}(-[a-z0-9]{5})?$/, '')}: ${why}`)
  }
  e2e.notes.push(
    "Pod Security restricted, not met by the upstream charts' pods: " +
    `${Object.values(refused).flat().join('; ') || 'none'}`
  )
  const top = (ns) => run('kubectl', ['top', 'pods', '-n', ns, '--no-headers'], { ok: true })
    .stdout.trim().split('\n').filter(Boolean)
    .map((l) => l.trim().split(/\s+/))
    .map(([pod, cpu, memory]) => ({ pod, cpu: Number.parseInt(cpu), memory: Number.parseInt(memory) }))
  const pods = [...top(MONITORING), ...top(OBSERVABILITY)]
  const cpu = pods.reduce((a, p) => a + p.cpu, 0)
  const memory = pods.reduce((a, p) => a + p.memory, 0)
  return `${pods.length} pods: ${cpu} millicores, ${memory} MiB (` +
    `${pods.map((p) => `${p.pod.replace(/-[a-z0-9]{5,10}(-[a-z0-9]{5})?$/, '')} ${p.cpu}m/${p.memory}Mi`).join(', ')})`
}
