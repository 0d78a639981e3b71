// The e2e's settings (the environment: `npm run test:e2e -- --help`) and what its stages share.
import { dirname, join } from 'node:path'
import { root } from '../../charts/test/lib.js'
import { run } from './lib.js'
import { SERVICES as LIST, NAMES } from '../../services/list.js'

export const env = process.env
export const SERVICES = NAMES // services/list.js
export const NS = env.E2E_NAMESPACE || 'suite-e2e'
export const DATA_NS = `${NS}-data`
export const RELEASE = env.E2E_RELEASE || 'suite.e2e'
export const REGISTRY = env.E2E_REGISTRY || 'localhost'
export const INGRESS_URL = env.INGRESS_URL
export const INGRESS_HOST = 'ingress.suite.test'
export const GATEWAY_HOST = 'gateway.suite.test'
// The lab's own node: the control plane, CoreDNS, Traefik, the registry and CloudNativePG's operator;
// never drained nor lost.
export const CONTROL_NODE = env.E2E_CONTROL_NODE || 'k8s-node'
export const BUILD = env.E2E_BUILD ||
  (run('sh', ['-c', 'command -v buildah'], { ok: true }).code === 0 ? 'buildah' : 'docker')
// On the lab: into every node, its own and those k8s/lab/nodes.sh added (the lab being where its
// K8S_LAB_LOAD says).
if (env.K8S_LAB_LOAD && !env.K8S_LAB) env.K8S_LAB = dirname(env.K8S_LAB_LOAD.split(' ')[0])
export const LOAD = env.E2E_IMAGE_LOAD ?? (env.K8S_LAB_LOAD ? `${join(root, 'k8s', 'lab', 'nodes.sh')} load` : '')
export const TAG = env.E2E_TAG || `e2e-${run('git', ['-C', root, 'rev-parse', '--short', 'HEAD']).stdout.trim()}`
export const [gatewayNs, gatewayName] = (env.E2E_GATEWAY || '').split('/')
/** The hosts the steady load goes through: the Ingress's, and the HTTPRoute's where there is a Gateway. */
export const LOAD_HOSTS = gatewayName ? [INGRESS_HOST, GATEWAY_HOST] : [INGRESS_HOST]
export const ADDONS = env.E2E_ADDONS || 'installed'
// The release's PostgreSQL: a 3-instance CloudNativePG Cluster (its operator: install-addons.sh
// --cloudnative-pg, which the lab's add-ons run), or one PostgreSQL Deployment.
export const DATABASE = env.E2E_DATABASE || (ADDONS === 'lab' ? 'cloudnative-pg' : 'deployment')
// The images of the external datastores (and of the backup, which needs pg_dump).
export const POSTGRES_IMAGE = env.E2E_POSTGRES_IMAGE || 'postgres:15'
export const REDIS_IMAGE = env.E2E_REDIS_IMAGE || 'redis:7'
// The registry this machine pushes to and the nodes pull from (k8s/registry.yaml on the lab).
export const DEV_REGISTRY = env.E2E_DEV_REGISTRY ?? (ADDONS === 'lab' ? 'localhost:30500' : '')
// A second tag of the same images, for the image upgrade under load where no earlier release is
// upgraded from (release.js needs the registry).
export const TAG_B = DEV_REGISTRY ? null : `${TAG}-b`
// The names the chart gives: a dot is not allowed in a Service name, so it becomes a dash.
export const fullname = (service) => `${RELEASE.replaceAll('.', '-')}-${service}`
export const image = (service, tag = TAG) => `${REGISTRY}/suite-${service}:${tag}`

// How often Prometheus scrapes the services here: the dashboards' $__rate_interval and every wait for
// a scrape assume it, so the ServiceMonitors are given it (theirs would win over the Prometheus'). At
// 15 s, a rate over the 20 s $__rate_interval of 5 s scrapes holds two samples of a pod in only a third
// of its scrape phases, and a panel fed by two pods can have no data at all.
export const SCRAPE_SECONDS = 5

// The monitoring stage's values: scrapes every SCRAPE_SECONDS, traces to Jaeger (k8s/jaeger.yaml),
// product scaled on requests per second alone (not CPU) and back down within a minute, and page alerts
// on windows short enough to fire and resolve within the run.
const MONITORING_VALUES = [
  ...SERVICES.flatMap((s) => [
    '--set', `${s}.serviceMonitor.interval=${SCRAPE_SECONDS}s`,
    '--set', `${s}.serviceMonitor.scrapeTimeout=${SCRAPE_SECONDS - 1}s`
  ]),
  '--set', 'global.tracing.endpoint=http://jaeger.observability:4318',
  '--set', 'product.autoscaling.targetCPUUtilizationPercentage=0',
  '--set', 'product.autoscaling.requestsPerSecond.enabled=true',
  '--set-string', 'product.autoscaling.requestsPerSecond.averageValue=15',
  '--set', 'product.autoscaling.behavior.scaleDown.stabilizationWindowSeconds=30',
  '--set-json', 'alerts.burnRate.page=[{"long":"2m","short":"30s","factor":1}]',
  '--set', 'alerts.pageFor=0s'
]

// helm template knows no cluster: the optional APIs the CRDs above (and the lab's Gateway API) serve.
export const API_VERSIONS = [
  'monitoring.coreos.com/v1/ServiceMonitor',
  'monitoring.coreos.com/v1/PrometheusRule',
  'k6.io/v1alpha1/TestRun',
  'gateway.networking.k8s.io/v1/HTTPRoute'
].flatMap((a) => ['--api-versions', a])

// E2E_PRIMARY_WAIT_MS: the services' PG_PRIMARY_WAIT_MS on the e2e's CloudNativePG (0: not set).
export const PRIMARY_WAIT_MS = Number(env.E2E_PRIMARY_WAIT_MS || 0)

/**
 * The e2e's values; `released: true` for a released chart, which pins its images (registry and digests)
 * and whose schema may not know this chart's newer keys.
 */
export function helmValues (extra = [], { released = false } = {}) {
  const images = !released
  const data = `${DATA_NS}.svc.cluster.local`
  const args = [
    '--set', 'postgresql.enabled=false', '--set', 'redis.enabled=false',
    ...(images ? ['--set', `global.suite.imageRegistry=${REGISTRY}`] : []),
    '--set', `global.externalDatabase.host=${DATABASE === 'cloudnative-pg' ? 'postgres-rw' : 'postgres'}.${data}`,
    '--set', 'global.externalDatabase.user=app',
    '--set', 'global.externalDatabase.database=app', '--set', 'global.externalDatabase.existingSecret=suite-datastores',
    '--set', 'global.externalDatabase.existingSecretPasswordKey=postgres-password',
    '--set', `global.externalRedis.host=redis.${data}`, '--set', 'global.externalRedis.existingSecret=suite-datastores',
    '--set', 'global.externalRedis.existingSecretPasswordKey=redis-password',
    '--set', `ingress.host=${INGRESS_HOST}`,
    // One service scales from a single replica, for the HPA phase; the others keep the default two.
    '--set', 'product.autoscaling.minReplicas=1',
    ...MONITORING_VALUES,
    ...LIST.filter((s) => s.data).flatMap((s) => [
      '--set', `${s.name}.seed.enabled=true`, '--set', `${s.name}.seed.scale=200`
    ]),
    ...(images ? SERVICES.flatMap((s) => ['--set', `${s}.image.tag=${TAG}`]) : [])
  ]
  if (DATABASE === 'cloudnative-pg' && !released) {
    // The release's database alerts watch the Cluster the e2e runs (datastores.js), not one of its own.
    args.push(
      '--set', 'alerts.database.cluster=postgres', '--set', `alerts.database.namespace=${DATA_NS}`,
      '--set', 'alerts.database.instances=3'
    )
    for (const s of PRIMARY_WAIT_MS ? SERVICES : []) {
      args.push('--set', `${s}.config.PG_PRIMARY_WAIT_MS=${PRIMARY_WAIT_MS}`)
    }
  }
  if (gatewayName) {
    args.push(
      '--set', 'gateway.enabled=true',
      '--set', `gateway.parentRefs[0].name=${gatewayName}`,
      '--set', `gateway.parentRefs[0].namespace=${gatewayNs}`,
      '--set', `gateway.hostnames[0]=${GATEWAY_HOST}`
    )
  }
  for (const f of (env.E2E_VALUES || '').split(',').filter(Boolean)) args.push('-f', join(root, f))
  return [...args, ...extra]
}

/** What the stages share: the chart they install, and what they found to tell at the end. */
export const e2e = {
  chartDir: null, // charts/suite with its dependencies (install.js: chart())
  releases: null, // { previous, current }: { version, chart (verified archive), images } (release.js)
  redis: null, // resolves once the datastores' Redis is ready (install.js: namespaces())
  notes: [], // what this cluster could not show
  problems: [] // failures found by a stage that lets the run go on; the run fails at the end
}
