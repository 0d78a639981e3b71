// The umbrella rendered for each value set, validated by kubeconform -strict against Kubernetes 1.34
// (../shared/k8s) and checked against the policies: hardened, sized containers; probes; no password in
// a value; HPA, PDB, Service, ServiceMonitor and NetworkPolicy selecting the pods they mean; routing.
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SERVICES, charts, kubeconform, parse, podSpec, requireTools, selects, template, umbrella } from './lib.js'

before(requireTools)

const each = (setting) => SERVICES.flatMap((s) => ['--set', `${s}.${setting}`])
const VALUE_SETS = {
  defaults: [],
  'external database and Redis': [
    '--set',
    'postgresql.enabled=false,redis.enabled=false,global.externalDatabase.host=db.example.com,' +
    'global.externalDatabase.existingSecret=suite-db,global.externalRedis.host=cache.example.com,' +
    'global.externalRedis.existingSecret=suite-cache'
  ],
  'external database with a private CA': [
    '--set',
    'postgresql.enabled=false,global.externalDatabase.host=db.example.com,' +
    'global.externalDatabase.existingSecret=suite-db,global.externalDatabase.caSecret=suite-db-ca,' +
    'product.seed.enabled=true,profile.seed.enabled=true,menu.seed.enabled=true,backup.enabled=true'
  ],
  'backup on': ['--set', 'backup.enabled=true'],
  'Gateway API': ['--set', 'gateway.enabled=true,ingress.enabled=false'],
  'load tests on': ['--set', 'loadtest.enabled=true', '--set', 'loadtest.run=r1'],
  'HPA off': each('autoscaling.enabled=false'),
  'RPS autoscaling': each('autoscaling.requestsPerSecond.enabled=true'),
  'dev values': ['-f', 'values-dev.yaml'],
  'production values': ['-f', 'values-production.yaml']
}

function render (args) {
  const dir = umbrella()
  return template(dir, args.map((a, i) => (args[i - 1] === '-f' ? join(dir, a) : a)))
}

const SECRETISH = /PASSWORD|SECRET|TOKEN|CREDENTIAL|API_?KEY/i

function checkPolicies (docs) {
  const named = (kind, name) => docs.find((o) => o.kind === kind && o.metadata.name === name)
  const pods = docs.filter(podSpec)

  for (const o of pods) {
    const spec = podSpec(o)
    for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
      const at = `${o.kind}/${o.metadata.name} container ${c.name}`
      const r = c.resources ?? {}
      assert.ok(r.requests?.cpu && r.requests?.memory && r.limits?.memory,
        `${at}: resources (cpu, memory requests, memory limit)`)
      assert.ok(r.requests?.['ephemeral-storage'] && r.limits?.['ephemeral-storage'],
        `${at}: ephemeral-storage request and limit`)
      const sc = c.securityContext ?? {}
      assert.equal(sc.readOnlyRootFilesystem, true, `${at}: readOnlyRootFilesystem`)
      assert.equal(sc.allowPrivilegeEscalation, false, `${at}: allowPrivilegeEscalation`)
      assert.ok(sc.capabilities?.drop?.includes('ALL'), `${at}: drop ALL`)
      assert.equal(sc.runAsNonRoot ?? spec.securityContext?.runAsNonRoot, true, `${at}: runAsNonRoot`)
      assert.equal((sc.seccompProfile ?? spec.securityContext?.seccompProfile)?.type, 'RuntimeDefault',
        `${at}: seccomp`)
      for (const e of c.env ?? []) {
        if (SECRETISH.test(e.name)) {
          assert.ok(e.valueFrom?.secretKeyRef && e.value === undefined, `${at}: ${e.name} must come from a Secret`)
        }
        if (e.value) {
          assert.doesNotMatch(e.value, /\/\/[^/@\s]*:[^/@\s]*@|[?&][a-z_]*pass(word)?=/i,
            `${at}: ${e.name} carries a password`)
        }
        // verify-full against a mounted CA: every container told so has the CA where the URL says.
        const ca = /sslrootcert=([^&]+)/.exec(c.env?.find((x) => x.name === 'DATABASE_URL')?.value ?? '')?.[1]
        if (ca) {
          assert.match(c.env.find((x) => x.name === 'DATABASE_URL').value, /[?&]sslmode=verify-full(&|$)/,
            `${at}: verify-full`)
          const mount = (c.volumeMounts ?? []).find((m) => ca.startsWith(`${m.mountPath}/`))
          assert.ok(mount?.readOnly, `${at}: ${ca} mounted read-only`)
          const volume = spec.volumes?.find((v) => v.name === mount.name)
          assert.ok(volume?.secret?.secretName, `${at}: ${ca} from a Secret`)
        }
      }
    }
  }
  for (const cm of docs.filter((o) => o.kind === 'ConfigMap')) {
    for (const key of Object.keys(cm.data ?? {})) {
      assert.doesNotMatch(key, SECRETISH, `ConfigMap/${cm.metadata.name}: ${key}`)
    }
  }
  // One Secret of ours at most: the bundled PostgreSQL's passwords, kept on uninstall with its volume.
  const secrets = docs.filter((o) => o.kind === 'Secret')
  assert.ok(secrets.length <= 1, `our charts make one Secret at most: ${secrets.map((o) => o.metadata.name)}`)
  for (const s of secrets) {
    assert.equal(s.metadata.name, 'r-postgresql-auth')
    assert.equal(s.metadata.annotations['helm.sh/resource-policy'], 'keep')
    assert.deepEqual(Object.keys(s.data).sort(), ['password', 'postgres-password'])
  }

  const deployments = docs.filter((o) => o.kind === 'Deployment')
  const others = pods.filter((o) => o.kind !== 'Deployment')
  for (const d of deployments) {
    const name = d.metadata.name
    const labels = d.spec.template.metadata.labels
    const spec = d.spec.template.spec
    const c = spec.containers[0]
    const env = Object.fromEntries(c.env.map((e) => [e.name, e.value]))
    assert.ok(selects(d.spec.selector.matchLabels, labels), `${name}: selector`)
    assert.equal(c.startupProbe?.httpGet?.path, '/healthz', `${name}: startup probe`)
    assert.equal(c.livenessProbe?.httpGet?.path, '/healthz', `${name}: liveness probe`)
    assert.equal(c.readinessProbe?.httpGet?.path, '/readyz', `${name}: readiness probe`)
    assert.match(env.WORKERS ?? '', /^[1-9]\d*$/, `${name}: WORKERS set explicitly`)
    assert.ok(spec.terminationGracePeriodSeconds * 1000 > Number(env.SHUTDOWN_DELAY_MS) + Number(env.SHUTDOWN_GRACE_MS),
      `${name}: grace period outlasts delay + grace`)
    for (const o of others) {
      assert.ok(!selects(d.spec.selector.matchLabels, podSpec(o) && (o.spec.template?.metadata ?? o.metadata).labels),
        `${name}'s selector takes ${o.kind}/${o.metadata.name}`)
    }

    const svc = named('Service', name)
    assert.ok(svc && selects(svc.spec.selector, labels), `${name}: its Service selects its pods`)
    const job = svc.metadata.labels['app.kubernetes.io/name']
    assert.ok(SERVICES.includes(job),
      `${name}: Service label app.kubernetes.io/name=${job} is a service name (Prometheus job)`)
    const sm = named('ServiceMonitor', name)
    assert.ok(sm, `${name}: ServiceMonitor`)
    assert.equal(sm.spec.jobLabel, 'app.kubernetes.io/name')
    assert.ok(selects(sm.spec.selector.matchLabels, svc.metadata.labels), `${name}: ServiceMonitor selects the Service`)
    assert.ok(svc.spec.ports.some((p) => p.name === sm.spec.endpoints[0].port), `${name}: ServiceMonitor port`)

    const hpa = docs.find((o) => o.kind === 'HorizontalPodAutoscaler' && o.spec.scaleTargetRef.name === name)
    if (hpa) {
      assert.deepEqual(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name })
      assert.ok(hpa.spec.behavior?.scaleUp && hpa.spec.behavior?.scaleDown, `${name}: HPA behaviour`)
      assert.equal(d.spec.replicas, undefined, `${name}: replicas left to the HPA`)
    } else {
      assert.ok(d.spec.replicas >= 1, `${name}: replicas without an HPA`)
    }
    const pdb = named('PodDisruptionBudget', name)
    assert.ok(!pdb || selects(pdb.spec.selector.matchLabels, labels), `${name}: PDB selects its pods`)

    const np = named('NetworkPolicy', name)
    assert.ok(np && selects(np.spec.podSelector.matchLabels, labels), `${name}: NetworkPolicy selects its pods`)
    for (const o of others) {
      assert.ok(!selects(np.spec.podSelector.matchLabels, (o.spec.template?.metadata ?? o.metadata).labels),
        `${name}'s NetworkPolicy takes ${o.kind}/${o.metadata.name}`)
    }
    const testPod = docs.find((o) => o.kind === 'Pod' && o.metadata.labels['app.kubernetes.io/name'] === job)
    assert.ok(
      np.spec.ingress[0].from.some((peer) =>
        !peer.namespaceSelector && selects(peer.podSelector.matchLabels, testPod.metadata.labels)),
      `${name}: its helm test pod may call it`
    )
    const egressPorts = np.spec.egress.flatMap((r) => r.ports.map((p) => p.port))
    const url = (n) => new URL(env[n])
    assert.ok(egressPorts.includes(Number(url('DATABASE_URL').port)), `${name}: egress to PostgreSQL's port`)
    assert.ok(egressPorts.includes(Number(url('REDIS_URL').port)), `${name}: egress to Redis' port`)
    assert.ok(egressPorts.includes(53), `${name}: egress to DNS`)
  }
  for (const hpa of docs.filter((o) => o.kind === 'HorizontalPodAutoscaler')) {
    assert.ok(named('Deployment', hpa.spec.scaleTargetRef.name),
      `HPA/${hpa.metadata.name} targets a Deployment of the release`)
  }
}

for (const [name, args] of Object.entries(VALUE_SETS)) {
  test(`${name}: valid for Kubernetes 1.34 (kubeconform -strict) and within the policies`, (t) => {
    const yaml = render(args)
    const kc = kubeconform(yaml)
    assert.deepEqual(kc.problems, [])
    assert.equal(kc.code, 0)
    assert.ok(kc.valid > 20 && kc.invalid === 0 && kc.errors === 0 && kc.skipped === 0, JSON.stringify(kc))
    t.diagnostic(`${kc.valid} manifests valid`)
    checkPolicies(parse(yaml))
  })
}

test('seed Jobs are named after their pod template: the same values keep the Job, a new image makes a new one', () => {
  const seedJobs = (args) => parse(render(['-f', 'values-dev.yaml', ...args]))
    .filter((o) => o.kind === 'Job' && o.metadata.labels['app.kubernetes.io/component'] === 'seed')
    .map((o) => o.metadata.name).sort()
  const first = seedJobs([])
  assert.equal(first.length, 3)
  assert.deepEqual(seedJobs([]), first,
    'rendered again with the same values: the same Jobs (an upgrade leaves them be)')
  const upgraded = seedJobs(['--set', 'product.image.tag=v2'])
  assert.deepEqual(upgraded.filter((n) => !first.includes(n)).map((n) => n.replace(/-[0-9a-f]{8}$/, '')),
    ['r-product-seed'], 'a new product image: a new product seed Job only')
})

test('external database and Redis: every service gets their URLs and the user\'s Secrets; ' +
  'the migration hook runs before the install', () => {
  const docs = parse(render(VALUE_SETS['external database and Redis']))
  for (const s of SERVICES) {
    const env = docs.find((o) => o.kind === 'Deployment' && o.metadata.name === `r-${s}`)
      .spec.template.spec.containers[0].env
    assert.deepEqual(env.find((e) => e.name === 'DATABASE_URL').value, 'postgres://suite@db.example.com:5432/suite')
    assert.deepEqual(env.find((e) => e.name === 'DATABASE_PASSWORD').valueFrom, {
      secretKeyRef: { name: 'suite-db', key: 'password' }
    })
    assert.deepEqual(env.find((e) => e.name === 'REDIS_PASSWORD').valueFrom, {
      secretKeyRef: { name: 'suite-cache', key: 'redis-password' }
    })
    const hook = docs.find((o) => o.kind === 'Job' && o.metadata.name === `r-${s}-migrate`)
    assert.equal(hook.metadata.annotations['helm.sh/hook'], 'pre-install,pre-upgrade')
  }
})

test('load tests on: the scripts ship with the release, and a TestRun only once a run is asked for', () => {
  const runs = parse(render(VALUE_SETS['load tests on'])).filter((o) => o.kind === 'TestRun')
  assert.deepEqual(runs.map((o) => o.metadata.name), ['r-steady-r1'])
  const enabledOnly = parse(render(['--set', 'loadtest.enabled=true']))
  assert.ok(enabledOnly.some((o) => o.kind === 'ConfigMap' && o.metadata.name === 'r-loadtest-scripts'), 'the scripts')
  assert.ok(!enabledOnly.some((o) => o.kind === 'TestRun'), 'no TestRun without loadtest.run')
  assert.ok(!parse(render([])).some((o) => o.kind === 'TestRun' || o.metadata.name === 'r-loadtest-scripts'),
    'nothing of the load tests by default')
})

// Paths of the original APIs and the service each must reach; and paths no service must get.
const ROUTED = {
  '/products': 'product',
  '/products/1': 'product',
  '/products/1/styles': 'product',
  '/products/1/related': 'product',
  '/restaurants': 'profile',
  '/restaurants/42': 'profile',
  '/restaurants/42/profile': 'profile',
  '/restaurants/42/menu': 'menu',
  '/menu/42': 'menu',
  '/flows': 'flows'
}
const UNROUTED = [
  '/', '/metrics', '/healthz', '/readyz', '/docs', '/productsx', '/restaurants/42/menu/x', '/restaurants/4/2/profile',
  '/menus/1'
]

// ingress-nginx with use-regex: `location ~* "^<path>"`, tried in order of length. Each path must be
// matched by exactly one location, so the order never decides.
test('Ingress: each original path reaches exactly one service, the right one', () => {
  const ingress = parse(render([])).find((o) => o.kind === 'Ingress')
  const paths = ingress.spec.rules[0].http.paths
  const match = (url) => paths.filter((p) => new RegExp(`^${p.path}`, 'i').test(url)).map((p) => p.backend.service.name)
  for (const [url, service] of Object.entries(ROUTED)) assert.deepEqual(match(url), [`r-${service}`], url)
  for (const url of UNROUTED) assert.deepEqual(match(url), [], url)
})

// Gateway API: Exact, PathPrefix (whole segments) and RegularExpression (anchored): again exactly one rule.
test('HTTPRoute: each original path reaches exactly one service, the right one', () => {
  const route = parse(render(VALUE_SETS['Gateway API'])).find((o) => o.kind === 'HTTPRoute')
  const hit = ({ type, value }, url) =>
    type === 'Exact'
      ? url === value
      : type === 'PathPrefix' ? url === value || url.startsWith(`${value}/`) : new RegExp(value).test(url)
  const match = (url) => route.spec.rules.filter((r) => r.matches.some((m) => hit(m.path, url)))
    .map((r) => r.backendRefs[0].name)
  for (const [url, service] of Object.entries(ROUTED)) assert.deepEqual(match(url), [`r-${service}`], url)
  for (const url of UNROUTED) assert.deepEqual(match(url), [], url)
})

test('a cluster without the prometheus-operator gets no ServiceMonitor; ' +
  'without the Gateway API, gateway.enabled fails clearly', () => {
  const docs = parse(template(umbrella(), [], { apiVersions: [] }))
  assert.ok(docs.some((o) => o.kind === 'Deployment'))
  assert.ok(!docs.some((o) => o.kind === 'ServiceMonitor'))
  assert.throws(() => template(umbrella(), ['--set', 'gateway.enabled=true'], { apiVersions: [] }),
    /gateway.networking.k8s.io\/v1\/HTTPRoute/)
})

test('dashboards: one ConfigMap per file of charts/suite/dashboards for the Grafana sidecar', () => {
  const files = readdirSync(join(charts, 'suite', 'dashboards')).filter((f) => f.endsWith('.json'))
  const maps = parse(render([])).filter((o) => o.kind === 'ConfigMap' && o.metadata.labels?.grafana_dashboard === '1')
  assert.equal(maps.length, files.length)
  for (const file of files) {
    const map = maps.find((m) => file in m.data)
    assert.ok(map, file)
    assert.equal(map.metadata.annotations.grafana_folder, 'Suite')
    assert.deepEqual(JSON.parse(map.data[file]),
      JSON.parse(readFileSync(join(charts, 'suite', 'dashboards', file), 'utf8')))
  }
})
