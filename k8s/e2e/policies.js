// The NetworkPolicies, enforced (on the lab: kube-router, k8s/lab/kube-router.yaml): who reaches what,
// tried for real from probe pods and from a service's own pod, each connection refused or timed out
// within PROBE_TIMEOUT_MS counted as blocked. Printed as a table of source, destination, expected,
// seen; a row that differs fails the run at its end.
import { http, kjson, kubectl, table, waitFor } from './lib.js'
import { DATABASE, DATA_NS, INGRESS_HOST, INGRESS_URL, NS, SERVICES, e2e, env, fullname } from './context.js'
import { prom } from './monitoring.js'

const PROBE_TIMEOUT_MS = 3000
const PROBE_NS = `${NS}-probe`
export const POLICY_COLUMNS = ['source', 'destination', 'expected', 'seen']
export const policyRows = []

// Run inside a pod by node: each target { name, host, port } connected to, or only resolved
// ({ dns: true }); prints [{ name, seen }] as JSON.
const PROBE = `
const net = require('node:net'); const dns = require('node:dns').promises
const targets = JSON.parse(process.argv[1])
const one = (t) => t.dns
  ? dns.lookup(t.host).then(() => 'resolved', (e) => e.code)
  : new Promise((resolve) => {
    const s = net.connect({ host: t.host, port: t.port })
    const done = (seen) => { s.destroy(); resolve(seen) }
    s.setTimeout(${PROBE_TIMEOUT_MS}, () => done('timed out'))
    s.on('connect', () => done('connected'))
    s.on('error', (e) => done(e.code))
  })
Promise.all(targets.map(async (t) => ({ name: t.name, seen: await one(t) })))
  .then((r) => console.log(JSON.stringify(r)))
`

/** Whether NetworkPolicies are enforced here: the lab's enforcer runs, or the operator says so. */
export const enforced = () => env.E2E_NETWORK_POLICIES === 'enforced' ||
  kubectl(['get', 'daemonset', 'kube-router', '-n', 'kube-system'], { ok: true }).code === 0

function probePod (ns, name, image) {
  kubectl(['apply', '-n', ns, '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels: { 'app.kubernetes.io/name': 'e2e-probe' } },
      spec: {
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [{
          name: 'probe',
          image,
          imagePullPolicy: 'IfNotPresent',
          command: ['sleep', '3600'],
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '96Mi' } }
        }]
      }
    })
  })
  kubectl(['wait', '-n', ns, `pod/${name}`, '--for=condition=Ready', '--timeout=120s'])
}

const probe = (ns, pod, targets, container = []) => JSON.parse(kubectl([
  'exec', '-n', ns, pod, ...container, '--', 'node', '-e', PROBE, JSON.stringify(targets)
]).stdout)

const expect = (source, want, results) => {
  for (const { name, seen } of results) {
    const open = seen === 'connected' || seen === 'resolved'
    policyRows.push([source, name, want ? 'answers' : 'blocked', open ? seen : `blocked: ${seen}`])
    if (open !== want) e2e.problems.push(`NetworkPolicy: ${source} → ${name}: ${open ? 'reached' : seen}`)
  }
}

export async function networkPolicies () {
  if (!enforced()) {
    e2e.notes.push('NetworkPolicy: not enforced on this cluster (no kube-router, E2E_NETWORK_POLICIES unset): ' +
      'reachability not checked')
    return 'not enforced here: skipped'
  }
  const data = `${DATA_NS}.svc.cluster.local`
  const postgresHost = `${DATABASE === 'cloudnative-pg' ? 'postgres-rw' : 'postgres'}.${data}`
  const postgres = { name: 'PostgreSQL', host: postgresHost, port: 5432 }
  const redis = { name: 'Redis', host: `redis.${data}`, port: 6379 }
  const server = (s) => ({ name: `${s} (Service)`, host: `${fullname(s)}.${NS}.svc.cluster.local`, port: 80 })
  const running = (s) => kjson([
    'get', 'pods', '-n', NS, '-l', `app.kubernetes.io/name=${s},app.kubernetes.io/component=server`
  ]).items.find((p) => p.status.phase === 'Running' && !p.metadata.deletionTimestamp)
  const podIp = (s) => running(s).status.podIP
  const pod = (s) => ({ name: `${s} pod :3000 (/, /metrics)`, host: podIp(s), port: 3000 })
  const image = running('product').spec.containers[0].image

  // A namespace of no standing, and a pod of the release's namespace without the labels the policies admit.
  kubectl(['delete', 'ns', PROBE_NS, '--ignore-not-found', '--wait=true'])
  kubectl(['create', 'ns', PROBE_NS])
  kubectl(['label', 'ns', PROBE_NS, 'pod-security.kubernetes.io/enforce=restricted'])
  probePod(PROBE_NS, 'probe', image)
  probePod(NS, 'e2e-probe', image)
  try {
    expect(`namespace ${PROBE_NS}`, false, probe(PROBE_NS, 'probe', [
      postgres, redis, ...SERVICES.flatMap((s) => [server(s), pod(s)])
    ]))
    expect(`${NS}, a pod without the service labels`, false, probe(NS, 'e2e-probe', SERVICES.map(pod)))

    // From a service's pod: what its egress admits, and nothing else.
    const product = running('product').metadata.name
    const tracing = { name: 'the OTLP endpoint (Jaeger)', host: 'jaeger.observability.svc.cluster.local', port: 4318 }
    expect('a product pod', true, probe(NS, product, [
      { name: 'DNS', host: 'kubernetes.default.svc.cluster.local', dns: true }, postgres, redis, tracing
    ]))
    expect('a product pod', false, probe(NS, product, [
      server('profile'), pod('menu'),
      { name: 'the API server (kubernetes.default:443)', host: 'kubernetes.default.svc.cluster.local', port: 443 }
    ]))
  } finally {
    kubectl(['delete', 'ns', PROBE_NS, '--wait=false'])
    kubectl(['delete', 'pod', 'e2e-probe', '-n', NS, '--wait=false'])
  }

  // The admitted sources, seen in what they did: the ingress controller's requests answered, and
  // Prometheus' scrapes of every pod up.
  for (const s of SERVICES) {
    const path = { product: '/products/1', profile: '/restaurants/1', menu: '/menu/1', flows: '/flows?hour=1' }[s]
    const res = await http(INGRESS_URL, { host: INGRESS_HOST, path })
    const open = res.status < 500
    const seen = open ? `answered ${res.status}` : `${res.status}`
    policyRows.push(['the ingress controller (Traefik)', `${s} pod :3000`, 'answers', seen])
    if (!open) e2e.problems.push(`NetworkPolicy: the ingress controller → ${s}: ${res.status}`)
  }
  await waitFor('Prometheus scraping every pod', async () => {
    const { activeTargets } = await prom.api('targets', { state: 'active' })
    const up = (s) => activeTargets.some((t) => t.labels.job === s && t.labels.namespace === NS && t.health === 'up')
    return SERVICES.every(up)
  }, { timeoutMs: 60_000, everyMs: 2000 })
  for (const s of SERVICES) policyRows.push(['Prometheus', `${s} pod :3000 /metrics`, 'answers', 'scraped (target up)'])
  console.error(table(POLICY_COLUMNS, policyRows))
  const wrong = policyRows.filter((r) => (r[2] === 'answers') === r[3].startsWith('blocked'))
  return `${policyRows.length} connections tried, ${wrong.length} not as expected`
}
