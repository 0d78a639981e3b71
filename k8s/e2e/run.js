#!/usr/bin/env node
// The cluster e2e (`npm run test:e2e`): builds the images from services/Dockerfile, installs the
// add-ons (the monitoring stack, prometheus-adapter, Jaeger) and the umbrella chart as a user would,
// into a namespace that enforces Pod Security "restricted", and proves it on a real cluster: helm
// test, every route through the Ingress and the HTTPRoute, /metrics, the ServiceMonitors scraped,
// the previous release and this one signed, verified before install (a tampered one refused), an
// upgrade from the previous release, a rollback and an upgrade again under steady load, then a config
// change and a pod deletion, each with zero failed requests, a container of each service killed
// (SIGKILL, and the kernel's OOM killer) costing no more than its in-flight requests, every
// NetworkPolicy rule tried both ways where they are enforced, a CloudNativePG database failed over and
// switched over under load without an acknowledged write lost, the HPA scaling
// on requests per second, every dashboard query and rule with data, an alert through Alertmanager
// under a real fault, a trace and its exemplar, TestRuns accepted by the API server, a backup
// restored into a fresh database, an uninstall that leaves nothing behind but the backups, a
// reinstall from the OCI registry on the restored database that finds every write, and
// skaffold's run, dev loop (a synced and a rebuilt edit, timed) and delete. Any cluster: see `--help`
// and k8s/README.md.
import { parseArgs } from 'node:util'
import { kubectl, run, table } from './lib.js'
import { DATABASE, DATA_NS, INGRESS_URL, NS, RELEASE, e2e } from './context.js'
import { images } from './images.js'
import {
  bundledDryRun, chart, helmTest, install, namespaces, preflight, reinstall, testRuns, uninstall
} from './install.js'
import { metrics, routesAll } from './traffic.js'
import { PHASE_COLUMNS, disruptions, phases } from './disruptions.js'
import { crashes } from './crashes.js'
import { FAILOVER_COLUMNS, databaseFailover, failoverPhases } from './failover.js'
import { POLICY_COLUMNS, networkPolicies, policyRows } from './policies.js'
import { CHART_DATABASE_NS, chartDatabase, chartDatabaseRemoved } from './chart-database.js'
import { drain, nodeBack, nodeLost, severalNodes, spread } from './nodes.js'
import { devEdits, devRun, ociCharts } from './devloop.js'
import { releases, upgradePath } from './release.js'
import { RESTORED_NS, backupAndRestore } from './backup.js'
import { ADDONS } from './context.js'
import {
  addons, alertThroughAlertmanager, monitoringCost, queriesWithData, rpsAutoscaling, scaledBack, scraped,
  traceAndExemplar
} from './monitoring.js'
import { provisionFor } from '../../scripts/provision.js'

const USAGE = `usage: npm run test:e2e [-- --keep] [-- --help]

Installs the suite on the cluster of KUBECONFIG and checks it end to end. Settings (environment):
  KUBECONFIG           the cluster (kubectl's default when unset)
  INGRESS_URL          where this machine reaches the ingress controller (required), e.g. http://127.0.0.1:30080
  E2E_IMAGE_LOAD       command that loads an image archive into the cluster's nodes; the archive's path is
                       appended (kind: "kind load image-archive --name suite", k3d: "k3d image import -c suite",
                       the lab: "k8s/lab/nodes.sh load", into each of its nodes, the default where K8S_LAB_LOAD is
                       set). Empty with E2E_BUILD=none: images are there
  E2E_CONTROL_NODE     the node never drained nor lost (the lab's own, k8s-node: its control plane, Traefik, the
                       registry and CloudNativePG's operator); the datastores' Redis runs there when it exists
  E2E_BUILD            buildah (default when installed) | docker | none (images already built and loaded)
  E2E_TAG              tag of the images (default: e2e-<commit>; without a registry, the image upgrade uses <tag>-b)
  E2E_NODE_IMAGE       base image of services/Dockerfile (its NODE_IMAGE build argument)
  E2E_REGISTRY         registry part of the image names (default: localhost)
  E2E_POSTGRES_IMAGE   PostgreSQL image of the external datastores (default: postgres:15)
  E2E_DATABASE         cloudnative-pg: the datastores' PostgreSQL is a CloudNativePG Cluster of 3 instances, and
                       the e2e fails it over under load (the lab's default: its add-ons install the operator);
                       deployment: one PostgreSQL Deployment (the default elsewhere)
  E2E_REDIS_IMAGE      Redis image of the external datastores (default: redis:7)
  E2E_GATEWAY          <namespace>/<name> of a Gateway: the HTTPRoute attaches to it and every route is sent
                       through it too (default: none, the Gateway API path is then only rendered)
  E2E_VALUES           more values files for this cluster, comma-separated (e.g. k8s/lab/suite.yaml)
  E2E_NAMESPACE        namespace of the release (default: suite-e2e; <namespace>-data holds the datastores)
  E2E_RELEASE          release name (default: suite.e2e, a dotted name on purpose)
  E2E_CONTAINER_KILL   command that kills a container with SIGKILL on its node, for the crash phases: {id} is the
                       container's ID (appended when absent), {node} its node (kind: "docker exec {node} ctr -n
                       k8s.io tasks kill -s SIGKILL"); the lab's default: its containerd's ctr. Unset elsewhere:
                       no crash phases
  E2E_DEV_REGISTRY     host:port of a registry this machine pushes to and the nodes pull from over plain HTTP:
                       the previous release and this one are released there (signed with a key made for the
                       run), verified and installed from it, the charts pushed there too, and skaffold's lab
                       profile runs the dev loop against it (the lab's default: localhost:30500,
                       k8s/registry.yaml). Unset elsewhere: none of these (cosign and crane are needed)
  E2E_ADDONS           lab: install the add-ons with k8s/install-addons.sh --lab (images built here, charts from
                       ../shared/k8s/charts); installed (default): they are there already (install-addons.sh)
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
// helm 4 and the other pinned tools first on PATH, built where missing.
provisionFor('e2e', 'test:e2e')
if (!INGRESS_URL) {
  console.error(`test:e2e: INGRESS_URL is not set\n\n${USAGE}`)
  process.exit(2)
}

const report = []
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

let failed = false
try {
  await stage('preflight', preflight)
  // The add-ons install while the images build: their install mostly waits for pods, the builds
  // mostly compute. Nothing before the registry's first use (the OCI charts) needs them.
  const addonsInstalled = ADDONS === 'lab'
    ? stage('add-ons (beside the images)', addons)
    : null
  // The datastores start once the add-ons are in (the database's operator is one), still beside the
  // images: a database cluster mostly waits for its instances to start and join.
  const dataReady = (addonsInstalled ?? Promise.resolve())
    .then(() => stage('namespaces, datastores, CRDs (beside the images)', namespaces))
  // Their failures are thrown by the awaits below, not as unhandled rejections meanwhile.
  addonsInstalled?.catch(() => {})
  dataReady.catch(() => {})
  await stage('images', images)
  await stage('chart with its dependencies', chart)
  // The releases build and push once the registry answers, beside the rest of the add-ons and the
  // datastores; the chart's own database installs once the datastores' Redis is ready, beside their
  // database's instances. The builds compute, the installs mostly wait. The install takes the previous
  // release as soon as it is verified, while this tree's is made.
  let previousReady
  const previousReleased = new Promise((resolve) => { previousReady = resolve })
  const releasesDone = stage(
    'releases: the previous and this one, pushed, signed, verified; a tampered one refused ' +
    '(beside the datastores and the install)',
    () => releases({ previousReady })
  )
  releasesDone.catch(() => {})
  await addonsInstalled
  const chartDatabaseDone = DATABASE === 'cloudnative-pg'
    ? stage('the chart\'s own CloudNativePG database (beside the datastores and the releases)', chartDatabase)
    : null
  chartDatabaseDone?.catch(() => {})
  await dataReady
  await stage('charts in the OCI registry', ociCharts)
  await stage('bundled mode: server-side dry-run under restricted', bundledDryRun)
  await Promise.race([previousReleased, releasesDone]) // releasesDone: skipped, or failed before it
  await chartDatabaseDone
  const chartDatabaseGone = chartDatabaseDone
    ? stage('the chart\'s own CloudNativePG database uninstalled (beside the install)', chartDatabaseRemoved)
    : null
  chartDatabaseGone?.catch(() => {})
  await stage('install', install)
  await chartDatabaseGone
  await releasesDone
  await stage('upgrade from the previous release, rollback, upgrade again, under load', upgradePath)
  await stage('helm test', helmTest)
  await stage('routes', routesAll)
  await stage('metrics', metrics)
  await stage('NetworkPolicies: who reaches what', networkPolicies)
  // Before the disruptions: their flows writes are what the dashboards' write panels show later.
  await stage('ServiceMonitors scraped, counters equal', scraped)
  await stage('disruptions under load', disruptions)
  await stage('HPA on requests per second', rpsAutoscaling)
  await stage('a trace and its exemplar', traceAndExemplar)
  await stage('dashboards and rules with data', queriesWithData)
  await stage('an alert through Alertmanager', alertThroughAlertmanager)
  await stage('the monitoring stack\'s cost', monitoringCost)
  await stage('HPA back to 1 replica after the load', scaledBack)
  await stage('crashes under load: SIGKILL and OOM', crashes)
  if (DATABASE === 'cloudnative-pg') {
    await stage('the database under load: a replica, a switchover, the primary deleted and killed', databaseFailover)
  }
  const several = await severalNodes()
  if (several) {
    await stage('several nodes: the pods and the database\'s instances spread', spread)
    await stage('a node drained under load (the primary\'s)', drain)
    await stage('a node lost under load (the primary\'s), without warning', nodeLost)
  }
  // On several nodes the dev loop's release fits beside the suite's: skaffold run (builds, pushes,
  // installs) runs beside the lost node's return, the backup, the uninstall and the reinstall, which
  // mostly wait, and skaffold dev follows it at once: its first deploy (untimed) meets the reinstall,
  // its timed edits wait for the reinstall's end. On one node the dev loop runs between the uninstall
  // and the reinstall, when the suite's release is not there. --keep keeps the reinstalled release.
  let reinstalled
  const alone = several ? new Promise((resolve) => { reinstalled = resolve }) : null
  const devEdited = () => stage('the dev loop: skaffold dev (sync, rebuild), delete', () => devEdits({ alone }))
  const devDone = several
    ? stage('the dev loop: skaffold run (beside the node\'s return, the backup, the uninstall, the reinstall)', devRun)
        .then(devEdited)
    : null
  devDone?.catch(() => {})
  try {
    if (several) await stage('the lost node back', nodeBack)
    await stage('TestRuns', testRuns)
    await stage('backup, and its restore into a fresh database', backupAndRestore)
    await stage('uninstall', uninstall)
    if (!several) {
      await stage('the dev loop: skaffold run', devRun)
      await devEdited()
    }
    await stage('reinstall', reinstall)
  } finally {
    reinstalled?.()
  }
  await devDone
  // The uninstall above proved that nothing is left; this one only cleans up, without waiting for
  // the pods' drain (SHUTDOWN_DELAY_MS and more, which would only add to the run).
  if (!opts.keep) {
    await stage('clean up', () => {
      run('helm', ['uninstall', RELEASE, '-n', NS])
      return 'helm uninstall (not waited for)'
    })
  }
  if (e2e.problems.length) throw new Error(e2e.problems.join('; '))
} catch (err) {
  failed = true
  console.error(`\ne2e FAILED: ${err.stack ?? err.message}`)
  console.error(kubectl(['get', 'pods,jobs', '-n', NS, '-o', 'wide'], { ok: true }).stdout)
  console.error(kubectl(['get', 'events', '-n', NS, '--sort-by=.lastTimestamp'], { ok: true }).stdout
    .split('\n').slice(-30).join('\n'))
}
e2e.notes.push(
  'bundled PostgreSQL/Redis (Bitnami): server-side dry-run only; their images cannot be pulled without a registry'
)
console.log(`\n## e2e ${failed ? 'FAILED' : 'passed'} in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`)
console.log(table(['stage', 'time', 'result'], report))
if (phases.length) console.log(`\n${table(PHASE_COLUMNS, phases)}`)
if (failoverPhases.length) console.log(`\n${table(FAILOVER_COLUMNS, failoverPhases)}`)
if (policyRows.length) console.log(`\n${table(POLICY_COLUMNS, policyRows)}`)
console.log(`\nNot proven on this cluster:\n${e2e.notes.map((n) => `- ${n}`).join('\n')}`)
if (!opts.keep && !failed) {
  for (const ns of [NS, DATA_NS, `${NS}-bundled`, RESTORED_NS, CHART_DATABASE_NS]) {
    kubectl(['delete', 'ns', ns, '--wait=false'], { ok: true })
  }
}
process.exit(failed ? 1 : 0)
