// k8s/: the add-ons script (order, pinned versions, values files), and that the add-ons and the charts
// agree: ServiceMonitor selection, dashboard sidecar labels, NetworkPolicy peers, the RPS metric, kind.
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { findBinary } from '@suite/kit/testing'
import { K8S_VERSION, charts, kubeconform, parse, requireTools, root, run, selects, shared } from './lib.js'
import { ADDON_IMAGES } from '../../k8s/e2e/addon-images.js'

before(requireTools)

const k8s = join(root, 'k8s')
const yaml = (file) => parse(readFileSync(file, 'utf8'))[0]
const script = readFileSync(join(k8s, 'install-addons.sh'), 'utf8')
// install <release> <chart> <version> <namespace>
const installs = [...script.matchAll(/^\s*install (\S+) (\S+) (\S+) (\S+)$/gm)]
  .map(([, release, chart, version, namespace]) => ({ release, chart, version, namespace }))
const addon = (name) => installs.find((i) => i.release === name)
const service = yaml(join(charts, 'service', 'values.yaml'))
const suite = yaml(join(charts, 'suite', 'values.yaml'))

test('install-addons.sh installs in order, each at a pinned version with its values file', () => {
  assert.equal(run('bash', ['-n', join(k8s, 'install-addons.sh')]).code, 0)
  assert.deepEqual(installs.map((i) => i.release), [
    'ingress-nginx', 'traefik', 'kube-prometheus-stack', 'k6-operator', 'metrics-server', 'prometheus-adapter'
  ])
  assert.match(script, new RegExp(
    'elif \\$ingress_nginx; then\\n\\s+install ingress-nginx .*\\n' +
    'else\\n\\s+install traefik .*\\n\\s+kubectl apply -f ingressclass-nginx.yaml\\nfi'
  ), 'Traefik by default, ingress-nginx only when asked')
  // The lab overlays name only images built on the machine, and their releases exist.
  for (const file of ['kube-prometheus-stack', 'prometheus-adapter']) {
    assert.ok(addon(file), `k8s/lab/${file}.yaml overlays a release the script installs`)
    const images = []
    const walk = (o) => {
      for (const [k, v] of Object.entries(o ?? {})) {
        if (k === 'image') images.push(v)
        else if (v && typeof v === 'object') walk(v)
      }
    }
    walk(yaml(join(k8s, 'lab', `${file}.yaml`)))
    assert.ok(images.length > 0, file)
    for (const i of images) {
      assert.ok(i.registry === 'localhost' || i.repository.startsWith('localhost/'), `${file}: ${JSON.stringify(i)}`)
    }
  }
  for (const i of installs) {
    assert.match(i.version, /^\d+\.\d+\.\d+$/, `${i.release}: exact version`)
    assert.ok(existsSync(join(k8s, `${i.release}.yaml`)), `k8s/${i.release}.yaml`)
    yaml(join(k8s, `${i.release}.yaml`))
  }
  for (const overlay of ['ingress-nginx', 'traefik', 'metrics-server']) yaml(join(k8s, 'kind', `${overlay}.yaml`))
})

test('skaffold\'s add-on releases are the script\'s, at the same versions', () => {
  const config = yaml(join(root, 'skaffold.yaml'))
  const releases = config.profiles.flatMap((p) => (p.patches ?? []).map((x) => x.value)).filter((v) => v?.remoteChart)
  assert.ok(releases.length >= 4)
  for (const r of releases) {
    const i = addon(r.name)
    assert.ok(i, r.name)
    assert.equal(
      `${r.version} ${r.namespace} ${r.remoteChart}`,
      `${i.version} ${i.namespace} ${i.chart.split('/')[1]}`,
      r.name
    )
    assert.equal(r.valuesFiles[0], `k8s/${r.name}.yaml`)
    for (const overlay of r.valuesFiles.slice(1)) {
      assert.match(overlay, new RegExp(`^k8s/(kind|loadtest)/${r.name}\\.yaml$`),
        `${r.name}: only kind and loadtest overlays come after its own values`)
    }
  }
  // On kind, metrics-server must trust the kubelets' self-signed certificates, or the HPAs get no CPU metric.
  const onKind = config.profiles.find((p) => p.name === 'monitoring-kind').patches.map((x) => x.value)
    .find((v) => v?.name === 'metrics-server')
  assert.ok(onKind.valuesFiles.includes('k8s/kind/metrics-server.yaml'))
  assert.ok(yaml(join(k8s, 'kind', 'metrics-server.yaml')).args.includes('--kubelet-insecure-tls'))
})

test('Traefik serves both routing paths: the Gateway the HTTPRoute attaches to, and the Ingress class the ' +
  'Ingress names, both retrying a refused connection', () => {
  const traefik = yaml(join(k8s, 'traefik.yaml'))
  assert.equal(traefik.providers.kubernetesGateway.enabled, true)
  assert.equal(traefik.providers.kubernetesIngressNginx.enabled, true)
  const cls = yaml(join(k8s, 'ingressclass-nginx.yaml'))
  assert.equal(cls.metadata.name, suite.ingress.className)
  assert.equal(cls.spec.controller, traefik.providers.kubernetesIngressNginx.controllerClass)
  assert.equal(traefik.providers.kubernetesIngressNginx.ingressClass, suite.ingress.className)
  assert.deepEqual(suite.gateway.parentRefs, [{ name: traefik.gateway.name, namespace: addon('traefik').namespace }])
  assert.deepEqual(traefik.gateway.listeners.web.namespacePolicy, { from: 'All' },
    'routes from the suite\'s namespace are allowed')
  // The entry point's retry middleware (the Ingress's only retry on Traefik) is the Middleware the
  // release makes, and retries as the chart's own does.
  const [ref] = traefik.ports.web.middlewares
  const middleware = traefik.extraObjects.find((o) =>
    o.kind === 'Middleware' && ref === `${o.metadata.namespace}-${o.metadata.name}@kubernetescrd`)
  assert.ok(middleware, `${ref}: no such Middleware in extraObjects`)
  assert.equal(middleware.metadata.namespace, addon('traefik').namespace)
  assert.deepEqual(middleware.spec.retry, {
    attempts: suite.retries.attempts,
    initialInterval: suite.retries.traefik.initialInterval
  })
  assert.equal(traefik.providers.kubernetesCRD.enabled, true, 'Traefik reads its Middleware')
  const kindOverlay = yaml(join(k8s, 'kind', 'traefik.yaml'))
  assert.deepEqual([kindOverlay.ports.web.hostPort, kindOverlay.ports.websecure.hostPort], [80, 443])
})

test('Prometheus selects the charts\' ServiceMonitors; Grafana loads their dashboards', () => {
  const kps = yaml(join(k8s, 'kube-prometheus-stack.yaml'))
  const spec = kps.prometheus.prometheusSpec
  assert.ok(selects(spec.serviceMonitorSelector.matchLabels, service.serviceMonitor.labels),
    'serviceMonitorSelector matches charts/service serviceMonitor.labels')
  assert.deepEqual(spec.serviceMonitorNamespaceSelector, {}, 'in every namespace')
  const sidecar = kps.grafana.sidecar.dashboards
  assert.deepEqual({ [sidecar.label]: sidecar.labelValue }, suite.dashboards.labels)
  assert.equal(sidecar.folderAnnotation, suite.dashboards.folderAnnotation)
  assert.equal(sidecar.searchNamespace, 'ALL')
})

// kube-prometheus-stack as install-addons.sh renders it, with the loadtest overlay or without.
const renderStack = (loadtest) => parse(run('helm', [
  'template', 'kube-prometheus-stack',
  join(shared, 'charts', `kube-prometheus-stack-${addon('kube-prometheus-stack').version}.tgz`),
  '--namespace', addon('kube-prometheus-stack').namespace, '-f', join(k8s, 'kube-prometheus-stack.yaml'),
  ...(loadtest ? ['-f', join(k8s, 'loadtest', 'kube-prometheus-stack.yaml')] : [])
]).stdout)

test('Prometheus takes remote writes only with the load-test set-up (--loadtest, skaffold -p loadtest), and ' +
  'only the k6 runners besides Grafana and the adapter reach it', () => {
  const receiver = (objects) => objects.find((o) => o.kind === 'Prometheus').spec.enableRemoteWriteReceiver === true
  const plain = renderStack(false)
  const loadtest = renderStack(true)
  assert.equal(receiver(plain), false, 'no receiver by default')
  assert.equal(receiver(loadtest), true, 'the receiver with the loadtest overlay')
  // install-addons.sh: the overlay and the k6-operator only with --loadtest.
  assert.match(script,
    /if \$loadtest && \[ -f "loadtest\/\$release\.yaml" \]; then values\+=\(-f "loadtest\/\$release\.yaml"\); fi/)
  assert.match(script, /if \$loadtest; then\n\s+install k6-operator /)
  // skaffold: the loadtest profiles have the overlay and the k6-operator; the monitoring ones neither.
  const profiles = yaml(join(root, 'skaffold.yaml')).profiles
  for (const p of profiles.filter((x) => /^(monitoring|loadtest)/.test(x.name))) {
    const releases = p.patches.map((x) => x.value).filter((v) => v?.remoteChart)
    const stack = releases.find((r) => r.name === 'kube-prometheus-stack')
    const isLoadtest = p.name.startsWith('loadtest')
    assert.equal(stack.valuesFiles.includes('k8s/loadtest/kube-prometheus-stack.yaml'), isLoadtest, p.name)
    assert.equal(releases.some((r) => r.name === 'k6-operator'), isLoadtest, p.name)
  }

  // The NetworkPolicy: every Prometheus pod, ingress from Grafana, the adapter, Prometheus and k6 runners only.
  for (const objects of [plain, loadtest]) {
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy' && selects(o.spec.podSelector.matchLabels, {
      'app.kubernetes.io/name': 'prometheus',
      'operator.prometheus.io/name': 'kube-prometheus-stack-prometheus'
    }))
    assert.equal(policies.length, 1)
    const [np] = policies
    assert.deepEqual(np.spec.policyTypes.sort(), ['Egress', 'Ingress'])
    assert.deepEqual(np.spec.egress, [{}], 'scrapes go anywhere')
    const peers = np.spec.ingress.flatMap((rule) => rule.from.map((from) => ({ from, ports: rule.ports })))
    const monitoring = { 'kubernetes.io/metadata.name': addon('kube-prometheus-stack').namespace }
    const grafana = objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-grafana'))
      .spec.template.metadata.labels
    const adapter = parse(run('helm', [
      'template', 'prometheus-adapter',
      join(shared, 'charts', `prometheus-adapter-${addon('prometheus-adapter').version}.tgz`),
      '-f', join(k8s, 'prometheus-adapter.yaml')
    ]).stdout)
      .find((o) => o.kind === 'Deployment').spec.template.metadata.labels
    const runner = service.networkPolicy.loadTestRunners.podLabels // k6-operator's runner pod labels
    const admitted = (labels, namespaceLabels) => peers.filter(({ from }) =>
      (from.namespaceSelector === undefined
        ? selects(namespaceLabels, monitoring) && selects(monitoring, namespaceLabels)
        : selects(from.namespaceSelector.matchLabels, namespaceLabels)) &&
        selects(from.podSelector?.matchLabels, labels))
    for (const [who, labels, ns] of [
      ['Grafana', grafana, monitoring],
      ['prometheus-adapter', adapter, monitoring],
      ['a k6 runner', runner, { 'kubernetes.io/metadata.name': 'suite' }]
    ]) {
      const rules = admitted(labels, ns)
      assert.ok(rules.length, `${who} reaches Prometheus`)
      for (const r of rules) assert.deepEqual(r.ports, [{ port: 9090, protocol: 'TCP' }], `${who}: port 9090 only`)
    }
    // Anything else — a service's pod, any pod in monitoring — does not.
    for (const [labels, ns] of [
      [{ 'app.kubernetes.io/name': 'product' }, { 'kubernetes.io/metadata.name': 'suite' }],
      [{ app: 'k6' }, { 'kubernetes.io/metadata.name': 'suite' }],
      [{ 'app.kubernetes.io/name': 'kube-state-metrics' }, monitoring]
    ]) {
      assert.deepEqual(admitted(labels, ns), [], `${JSON.stringify(labels)} must not reach Prometheus`)
    }
  }
})

test('the NetworkPolicy defaults name the add-ons where the script puts them', () => {
  const np = service.networkPolicy
  assert.equal(np.ingressController.namespace, addon('traefik').namespace)
  assert.deepEqual(np.ingressController.podLabels, { 'app.kubernetes.io/name': 'traefik' })
  assert.equal(np.prometheus.namespace, addon('kube-prometheus-stack').namespace)
  assert.deepEqual(np.prometheus.podLabels, { 'app.kubernetes.io/name': 'prometheus' })
  assert.deepEqual(np.loadTestRunners.podLabels, { app: 'k6', runner: 'true' }, 'k6-operator runner pod labels')
})

test('prometheus-adapter serves the metric the HPAs ask for, from the stack\'s Prometheus', () => {
  const adapter = yaml(join(k8s, 'prometheus-adapter.yaml'))
  assert.equal(adapter.prometheus.url,
    `http://${addon('kube-prometheus-stack').release}-prometheus.${addon('kube-prometheus-stack').namespace}.svc`)
  assert.deepEqual(adapter.rules.custom.map((r) => r.name.as), [service.autoscaling.requestsPerSecond.metricName])
  assert.match(adapter.rules.custom[0].seriesQuery, /^http_request_duration_seconds_count\{/)
})

// promtool evaluates the adapter's query as the adapter sends it for an HPA's pods, on series as a
// ServiceMonitor scrape writes them: p-1 serves 2 requests a second besides its probes, p-2 was added by a
// scale-out and has answered only probes, p-3's scrape fails. Without p-2's 0 an HPA whose every serving
// pod left (a scale-down keeps the new pods) gets no metric and holds its replicas.
test('prometheus-adapter: a pod that has served only probes is 0 requests per second, ' +
  'a pod not scraped is missing', () => {
  const [rule] = yaml(join(k8s, 'prometheus-adapter.yaml')).rules.custom
  const pods = ['p-1', 'p-2', 'p-3']
  const query = rule.metricsQuery.replaceAll('<<.Series>>', 'http_request_duration_seconds_count')
    .replaceAll('<<.LabelMatchers>>', `namespace="suite",pod=~"${pods.join('|')}"`).replaceAll('<<.GroupBy>>', 'pod')
  const series = (name, pod, labels, values) => ({ series: `${name}{namespace="suite",pod="${pod}"${labels}}`, values })
  const count = (pod, route, values) =>
    series('http_request_duration_seconds_count', pod, `,method="GET",route="${route}",status_code="200"`, values)
  const dir = mkdtempSync(join(tmpdir(), 'suite-adapter-'))
  try {
    writeFileSync(join(dir, 'test.yaml'), JSON.stringify({
      rule_files: [],
      tests: [{
        interval: '5s',
        input_series: [
          count('p-1', '/products', '0+10x24'), count('p-1', '/readyz', '0+2x24'), series('up', 'p-1', '', '1x24'),
          count('p-2', '/readyz', '0+2x24'), count('p-2', '/metrics', '0+1x24'), series('up', 'p-2', '', '1x24'),
          series('up', 'p-3', '', '0x24')
        ],
        promql_expr_test: [{
          expr: query,
          eval_time: '2m',
          exp_samples: [{ labels: '{pod="p-1"}', value: 2 }, { labels: '{pod="p-2"}', value: 0 }]
        }]
      }]
    }))
    const unit = spawnSync(findBinary('promtool'), ['test', 'rules', join(dir, 'test.yaml')], { encoding: 'utf8' })
    assert.equal(unit.status, 0, unit.stdout + unit.stderr)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

// The add-on values against the exact chart archives install-addons.sh pins (../shared/k8s/charts, as
// `helm pull` would fetch them), rendered and validated: a value the chart does not read, or a renamed
// key that breaks a template, fails here instead of at install time. Traefik's chart is not among the
// offline archives: its values are checked by the test above and by the cluster e2e, which runs Traefik.
test('the add-on values render against the pinned chart archives, ' +
  'with and without the kind and loadtest overlays', () => {
  const rendered = []
  for (const i of installs.filter((x) => x.release !== 'traefik')) {
    const archive = join(shared, 'charts', `${i.chart.split('/')[1]}-${i.version}.tgz`)
    assert.ok(existsSync(archive), `${archive}: the pinned archive of ${i.release}`)
    const overlays = [[], ...['kind', 'loadtest'].filter((o) => existsSync(join(k8s, o, `${i.release}.yaml`)))
      .map((o) => ['-f', join(k8s, o, `${i.release}.yaml`)])]
    for (const overlay of overlays) {
      const r = run('helm', [
        'template', i.release, archive, '--namespace', i.namespace, '--kube-version', K8S_VERSION,
        '-f', join(k8s, `${i.release}.yaml`), ...overlay
      ])
      assert.equal(r.code, 0, `${i.release} ${overlay.join(' ')}: ${r.stderr}`)
      const kc = kubeconform(r.stdout, { ignoreMissingSchemas: true })
      assert.deepEqual(kc.problems, [], `${i.release}`)
      assert.ok(kc.valid > 0, `${i.release}: ${JSON.stringify(kc)}`)
      rendered.push(`${i.release}${overlay.length ? ` (${overlay[1].split('/').at(-2)})` : ''}: ${kc.valid} valid`)
    }
  }
  assert.ok(rendered.length >= 6, rendered.join('; '))
})

test('kind: ports 80 and 443 reach the ingress controller\'s node, 30500 the registry\'s NodePort; ' +
  'node images pinned', () => {
  const kind = yaml(join(k8s, 'kind.yaml'))
  const ingressNode = kind.nodes.find((n) => n.extraPortMappings)
  assert.deepEqual(ingressNode.extraPortMappings.map((m) => [m.containerPort, m.hostPort]),
    [[80, 80], [443, 443], [30500, 30500]])
  const overlay = yaml(join(k8s, 'kind', 'ingress-nginx.yaml'))
  assert.ok(selects(overlay.controller.nodeSelector, ingressNode.labels), 'the controller lands on the mapped node')
  assert.equal(overlay.controller.hostPort.enabled, true)
  assert.ok(selects(yaml(join(k8s, 'kind', 'traefik.yaml')).nodeSelector, ingressNode.labels),
    'Traefik lands on the mapped node')
  for (const n of kind.nodes) assert.match(n.image, /^kindest\/node:v1\.\d+\.\d+/)
})

test('the trace path: Jaeger (k8s/jaeger.yaml) valid and restricted, the chart\'s tracing values point at it, ' +
  'Prometheus stores exemplars, Grafana links them to Jaeger', async () => {
  assert.match(script, /kubectl apply -n observability -f jaeger\.yaml/)
  const manifest = parse(readFileSync(join(k8s, 'jaeger.yaml'), 'utf8'))
  const kc = kubeconform(readFileSync(join(k8s, 'jaeger.yaml'), 'utf8'))
  assert.equal(kc.code, 0, kc.problems.join('\n'))
  const pod = manifest.find((o) => o.kind === 'Deployment').spec.template.spec
  assert.equal(pod.securityContext.runAsNonRoot, true)
  assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault')
  assert.deepEqual(pod.containers[0].securityContext.capabilities.drop, ['ALL'])
  assert.equal(pod.containers[0].securityContext.allowPrivilegeEscalation, false)
  const config = parse(manifest.find((o) => o.kind === 'ConfigMap').data['config.yaml'])[0]
  assert.equal(config.receivers.otlp.protocols.http.endpoint, '0.0.0.0:4318')
  const svc = manifest.find((o) => o.kind === 'Service')
  assert.ok(svc.spec.ports.some((p) => p.port === 4318) && svc.spec.ports.some((p) => p.port === 16686))
  const kps = yaml(join(k8s, 'kube-prometheus-stack.yaml'))
  assert.ok(kps.prometheus.prometheusSpec.enableFeatures.includes('exemplar-storage'))
  const jaeger = kps.grafana.additionalDataSources.find((d) => d.type === 'jaeger')
  assert.equal(jaeger.url, `http://${svc.metadata.name}.observability:16686`)
  assert.equal(kps.grafana.sidecar.datasources.exemplarTraceIdDestinations.datasourceUid, jaeger.uid)
  assert.equal(kps.grafana.sidecar.datasources.exemplarTraceIdDestinations.traceIdLabelName, 'trace_id',
    'the exemplar label the kit writes')
  // The rendered stack: Grafana's Prometheus data source names Jaeger for exemplars; the PrometheusRule is selected.
  const stack = renderStack(false)
  const datasources = stack.filter((o) => o.kind === 'ConfigMap' && o.data?.['datasource.yaml'])
    .map((o) => o.data['datasource.yaml']).join('\n')
  assert.match(datasources, /exemplarTraceIdDestinations:\s*\n\s*- datasourceUid: jaeger\s*\n\s*name: trace_id/)
  assert.ok(selects(kps.prometheus.prometheusSpec.ruleSelector.matchLabels, suite.alerts.labels),
    'ruleSelector matches the umbrella\'s alerts.labels')
})

test('the lab\'s own add-ons (kube-router, local-path-provisioner) and CloudNativePG\'s operator run the images ' +
  'built on the machine, at the versions built', () => {
  for (const [file, name] of [['kube-router.yaml', 'kube-router'], ['local-path.yaml', 'local-path-provisioner']]) {
    const text = readFileSync(join(k8s, 'lab', file), 'utf8')
    const kc = kubeconform(text)
    assert.equal(kc.code, 0, kc.problems.join('\n'))
    const images = [...text.matchAll(/image: (\S+)/g)].map(([, i]) => i)
    assert.ok(images.includes(`localhost/${name}:${ADDON_IMAGES[name].tag}`), `${file}: ${images}`)
    for (const i of images) assert.match(i, /^localhost\//, `${file}: ${i} would be pulled`)
  }
  // kube-router as the policy controller alone, on the lab's Service range.
  const router = parse(readFileSync(join(k8s, 'lab', 'kube-router.yaml'), 'utf8'))
    .find((o) => o.kind === 'DaemonSet').spec.template.spec.containers[0].args
  for (const arg of ['--run-firewall=true', '--run-router=false', '--run-service-proxy=false']) {
    assert.ok(router.includes(arg), arg)
  }
  assert.match(script, /kubectl apply -f lab\/kube-router\.yaml -f lab\/local-path\.yaml/)
  // The operator from its release manifest, its image swapped for the one built here.
  assert.match(script, new RegExp(`s#ghcr.io/cloudnative-pg/cloudnative-pg:1.30.0#localhost/cloudnative-pg:${
    ADDON_IMAGES['cloudnative-pg'].tag}#`))
})
