// The release's life: the namespaces and the external datastores, the chart, a dry-run of the bundled
// mode, install, helm test, the TestRuns, uninstall with nothing left, and a reinstall on the same data.
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { shared, umbrellaWithDependencies } from '../../charts/test/lib.js'
import { startDatastores } from './datastores.js'
import { CHART_DATABASE_NS } from './chart-database.js'
import { BACKUP_CLAIM, RESTORED_NS, backupKept, restoredValues } from './backup.js'
import { kjson, kubectl, run, runAsync, waitFor } from './lib.js'
import {
  API_VERSIONS, CONTROL_NODE, DATABASE, DATA_NS, INGRESS_HOST, NS, POSTGRES_IMAGE, REDIS_IMAGE, RELEASE, SERVICES, e2e,
  helmValues
} from './context.js'
import { flows, flowTotal, routes, served } from './traffic.js'

export function preflight () {
  const nodes = kjson(['get', 'nodes']).items
  const ready = nodes.filter((n) => n.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'))
  if (!ready.length) throw new Error('no Ready node')
  const version = kjson(['version']).serverVersion.gitVersion
  const cpu = nodes.reduce((s, n) => s + Number.parseFloat(n.status.allocatable.cpu), 0)
  console.error(`cluster ${version}, ${ready.length} node(s) ready, ${cpu} CPU allocatable; ` +
    `helm ${run('helm', ['version', '--short']).stdout.trim()}`)
  return `${version}, ${ready.length} node(s), ${cpu} CPU`
}
/**
 * The release's namespaces and its datastores. e2e.redis resolves once their Redis is ready (the chart's
 * own database stage starts then, beside the database's instances) and rejects if they fail.
 */
export async function namespaces () {
  let up
  e2e.redis = new Promise((resolve, reject) => { up = { resolve, reject } })
  e2e.redis.catch(() => {}) // thrown by this stage too, and to whoever awaits it
  return namespacesAndDatastores(up.resolve).then((done) => {
    up.resolve()
    return done
  }, (err) => {
    up.reject(err)
    throw err
  })
}

async function namespacesAndDatastores (onRedis) {
  for (const ns of [NS, DATA_NS, `${NS}-bundled`, RESTORED_NS]) {
    if (kubectl(['get', 'ns', ns], { ok: true }).code === 0) {
      run('helm', ['uninstall', RELEASE, '-n', ns, '--wait', '--ignore-not-found'], { ok: true })
      kubectl(['delete', 'ns', ns, '--wait=true', '--timeout=180s'])
    }
  }
  // The release's namespace enforces Pod Security "restricted" (and warns, which is what a dry-run
  // of a Deployment or StatefulSet gets); the datastores, like a managed database, live elsewhere.
  for (const ns of [NS, `${NS}-bundled`]) {
    kubectl(['create', 'ns', ns])
    kubectl([
      'label', 'ns', ns,
      'pod-security.kubernetes.io/enforce=restricted',
      'pod-security.kubernetes.io/warn=restricted',
      'pod-security.kubernetes.io/audit=restricted'
    ])
  }
  kubectl(['create', 'ns', DATA_NS])
  const passwords = {
    'postgres-password': randomBytes(18).toString('base64url'),
    'redis-password': randomBytes(18).toString('base64url')
  }
  // The operator's Secret in the release's namespace, as for any external database.
  kubectl([
    'create', 'secret', 'generic', 'suite-datastores', '-n', NS,
    ...Object.entries(passwords).map(([k, v]) => `--from-literal=${k}=${v}`)
  ])
  const redisNode = kubectl(['get', 'node', CONTROL_NODE], { ok: true }).code === 0 ? CONTROL_NODE : null
  await startDatastores(DATA_NS, {
    passwords,
    postgresImage: POSTGRES_IMAGE,
    redisImage: REDIS_IMAGE,
    clients: [NS, CHART_DATABASE_NS],
    ...(DATABASE === 'cloudnative-pg' && { cloudnativePg: { instances: 3 } }),
    redisNode
  }, onRedis)
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
  const postgres = DATABASE === 'cloudnative-pg' ? 'PostgreSQL a CloudNativePG Cluster of 3 instances' : 'PostgreSQL'
  const redis = redisNode ? `Redis on ${redisNode}` : 'Redis'
  return `${NS} (restricted), datastores in ${DATA_NS} (${postgres}, ${redis})` +
    `${installed.length ? `; CRDs installed: ${installed.join(', ')}` : ''}`
}
/** charts/suite with its dependencies, as after `helm dependency build` (offline: ../shared/k8s/charts). */
export function chart () {
  e2e.chartDir = umbrellaWithDependencies()
  return readdirSync(join(e2e.chartDir, 'charts')).join(', ')
}
/**
 * Every object of the bundled mode (Bitnami's PostgreSQL and Redis included) passes a server-side
 * dry-run under "restricted".
 */
export function bundledDryRun () {
  // A release name without a dot: the Bitnami charts cannot take one (the chart refuses it).
  const yaml = run('helm', [
    'template', 'suite', e2e.chartDir, '-n', `${NS}-bundled`, ...API_VERSIONS,
    '--set', 'loadtest.enabled=true', '--set', 'loadtest.run=e2e'
  ]).stdout
  const r = kubectl(['apply', '--dry-run=server', '-n', `${NS}-bundled`, '-f', '-'], { input: yaml, ok: true })
  const violations = r.stderr.split('\n').filter((l) => /PodSecurity/.test(l))
  if (r.code !== 0 || violations.length) {
    throw new Error(
      `bundled mode, server-side dry-run in a restricted namespace:\n${violations.join('\n') || r.stderr}`
    )
  }
  return `${r.stdout.trim().split('\n').length} objects accepted, 0 Pod Security warnings`
}
export async function install () {
  const started = Date.now()
  // The previous release, verified, when there is one (release.js): upgradePath takes it from there.
  const from = e2e.releases?.previous
  await runAsync('helm', [
    'install', RELEASE, from?.chart ?? e2e.chartDir, '-n', NS, '--wait', '--timeout', '10m',
    ...helmValues([], { released: Boolean(from) })
  ])
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  // The seed Jobs are part of the release; the services answer while they run, and swap the data in at the end.
  await waitFor('seed Jobs complete', () => {
    const jobs = kjson(['get', 'jobs', '-n', NS, '-l', 'app.kubernetes.io/component=seed']).items
    const failed = jobs.find((j) => j.status.failed >= (j.spec.backoffLimit ?? 6) + 1)
    if (failed) throw new Error(`seed Job ${failed.metadata.name} failed`)
    return jobs.length === 3 && jobs.every((j) => j.status.succeeded >= 1)
  }, { timeoutMs: 300_000, everyMs: 2000 })
  return `${from ? `release ${from.version}: ` : ''}helm install --wait: ${seconds} s; ` +
    `3 seed Jobs complete after ${((Date.now() - started) / 1000).toFixed(1)} s`
}

/**
 * `helm test` of a release: a test pod for each service, every one Succeeded; or an error with what the
 * failed ones printed.
 */
export async function helmTest ({ release = RELEASE, ns = NS, env } = {}) {
  let out
  let ok = true
  try {
    out = await runAsync('helm', ['test', release, '-n', ns, '--timeout', '5m'], { env })
  } catch (err) {
    out = err.message
    ok = false
  }
  const suites = [...out.matchAll(/TEST SUITE:\s+(\S+)\n.*\n.*\n\s*Phase:\s+(\S+)/g)]
    .map(([, name, phase]) => `${name} ${phase}`)
  if (!ok) {
    // A failed test pod is kept (hook-delete-policy: hook-succeeded): what it printed says which URL
    // answered what (or that it could not connect).
    const failed = [...out.matchAll(/TEST SUITE:\s+(\S+)\n.*\n.*\n\s*Phase:\s+Failed/g)].map(([, name]) => name)
    const logs = failed
      .map((pod) => `--- ${pod}:\n${kubectl(['logs', '-n', ns, `pod/${pod}`], { ok: true }).stdout.trim()}`)
      .join('\n')
    throw new Error(`helm test failed:\n${out}${logs}`)
  }
  if (suites.length !== SERVICES.length) {
    throw new Error(`helm test: ${suites.length} test pods ran for ${SERVICES.length} services:\n${out}`)
  }
  return `${suites.filter((s) => s.endsWith('Succeeded')).length}/${suites.length} Succeeded`
}
/**
 * The TestRun of each mode is valid for the installed k6-operator CRD (nothing runs it here), and the
 * release makes none until a run is asked for.
 */
export function testRuns () {
  const template = (...sets) => run('helm', [
    'template', RELEASE, e2e.chartDir, '-n', NS, ...API_VERSIONS,
    ...helmValues(['--set', 'loadtest.enabled=true', ...sets.flatMap((s) => ['--set', s])])
  ]).stdout
  if (/^kind: TestRun$/m.test(template())) throw new Error('a TestRun is rendered without loadtest.run')
  const accepted = []
  for (const mode of ['steady', 'ladder', 'matrix']) {
    const yaml = template(`loadtest.mode=${mode}`, 'loadtest.run=e2e').split(/^---$/m)
      .filter((doc) => /^kind: TestRun$/m.test(doc))
    if (yaml.length !== 1) throw new Error(`${mode}: ${yaml.length} TestRuns rendered, 1 expected`)
    const r = kubectl(['apply', '--dry-run=server', '-n', NS, '-f', '-'], { input: yaml[0] })
    accepted.push(r.stdout.trim().replace(/^testrun\.k6\.io\//, '').replace(/ created \(server dry run\)$/, ''))
  }
  e2e.notes.push('k6 TestRuns: accepted by the API server (dry-run) only; no k6-operator or k6 runner image here')
  return `none without loadtest.run; one per run in each mode, accepted (server-side dry-run): ${accepted.join(', ')}`
}
/** helm uninstall leaves nothing of the release: no Pods, Jobs, Secrets, ConfigMaps… */
export async function uninstall () {
  await runAsync('helm', ['uninstall', RELEASE, '-n', NS, '--wait', '--timeout', '5m'])
  const kinds = 'pods,jobs,deployments,replicasets,services,configmaps,secrets,serviceaccounts,' +
    'persistentvolumeclaims,horizontalpodautoscalers,poddisruptionbudgets,networkpolicies,ingresses'
  const extra = [
    'servicemonitors.monitoring.coreos.com',
    'prometheusrules.monitoring.coreos.com',
    'httproutes.gateway.networking.k8s.io',
    'middlewares.traefik.io',
    'testruns.k6.io'
  ].filter((k) => kubectl(['get', k, '-n', NS], { ok: true }).code === 0)
  const left = await waitFor('nothing of the release left', () => {
    const items = kjson(['get', [kinds, ...extra].join(','), '-n', NS]).items
      .filter((o) => o.metadata.name !== 'suite-datastores' &&
        !(o.kind === 'ConfigMap' && o.metadata.name === 'kube-root-ca.crt') &&
        !(o.kind === 'ServiceAccount' && o.metadata.name === 'default'))
      // kept on purpose: backupKept()
      .filter((o) => !(o.kind === 'PersistentVolumeClaim' && o.metadata.name === BACKUP_CLAIM && e2e.restored))
    return items.length === 0
      ? []
      : (console.error(`left: ${items.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`), false)
  }, { timeoutMs: 120_000, everyMs: 3000 })
  return `${left.length} objects left${backupKept()}`
}
/**
 * Installed again: on the database the backup was restored into (backup.js), or else on the same one
 * (its Secret kept by its owner). Every acknowledged write is there.
 */
export async function reinstall () {
  // From the registry when the charts were pushed there (devloop.js: ociCharts), as users install.
  await runAsync('helm', [
    'install', RELEASE, ...(e2e.chartRef ?? [e2e.chartDir]), '-n', NS, '--wait', '--timeout', '10m',
    ...helmValues(restoredValues())
  ])
  // Polled: until the proxy routes the host to the new release, another that takes every host (the dev
  // loop's, beside this stage on several nodes) may answer it.
  let kept
  await waitFor('the acknowledged flows writes in the totals', async () => {
    kept = await flowTotal().catch(() => undefined)
    return kept === flows.acknowledged
  }, { timeoutMs: 120_000, everyMs: 1000 }).catch(() => {
    throw new Error(`after reinstall: ${kept} flows in the totals, ${flows.acknowledged} acknowledged before`)
  })
  const waited = await served(INGRESS_HOST)
  await routes(INGRESS_HOST)
  return `${e2e.chartRef ? `from ${e2e.chartRef[0]}: ` : ''}routed ${waited.toFixed(1)} s after helm --wait; ` +
    'installed again on ' +
    `${e2e.restored ? `the database restored from the backup (${RESTORED_NS})` : 'the same database'}: ` +
    `the ${kept} acknowledged writes are there, every route answers`
}
