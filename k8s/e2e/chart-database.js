// The umbrella's own CloudNativePG database (global.database=cloudnative-pg), installed for real in a
// namespace of its own under Pod Security "restricted": the operator accepts its Cluster, makes the
// owner's Secret the services read, every service migrates and answers through the -rw Service under
// the chart's NetworkPolicies (helm test), and helm uninstall takes the Cluster and its volume away
// (beside the suite's install, which does not need it gone).
// One instance, no seed: what is proven is the chart's wiring, the failover is failover.js's.
import { helmTest } from './install.js'
import { kjson, kubectl, runAsync, waitFor } from './lib.js'
import { DATA_NS, NS, POSTGRES_IMAGE, SERVICES, TAG, env, e2e } from './context.js'
import { join } from 'node:path'
import { root } from '../../charts/test/lib.js'

export const CHART_DATABASE_NS = `${NS}-cnpg`
const RELEASE = 'suite-cnpg'

/** Run once the datastores' Redis is ready (e2e.redis), beside their database's start. */
export async function chartDatabase () {
  await e2e.redis
  const started = Date.now()
  const ns = CHART_DATABASE_NS
  kubectl(['delete', 'ns', ns, '--ignore-not-found', '--wait=true', '--timeout=180s'])
  kubectl(['create', 'ns', ns])
  kubectl(['label', 'ns', ns, 'pod-security.kubernetes.io/enforce=restricted'])
  // The datastores' Redis (datastores.js admits this namespace), with its password.
  const redisPassword = Buffer.from(
    kjson(['get', 'secret', 'suite-datastores', '-n', NS]).data['redis-password'], 'base64'
  ).toString()
  kubectl(['create', 'secret', 'generic', 'redis', '-n', ns, `--from-literal=redis-password=${redisPassword}`])
  await runAsync('helm', [
    'install', RELEASE, e2e.chartDir, '-n', ns, '--wait', '--timeout', '6m',
    ...(env.E2E_VALUES || '').split(',').filter(Boolean).flatMap((f) => ['-f', join(root, f)]),
    '--set', 'postgresql.enabled=false', '--set', 'redis.enabled=false',
    '--set', 'global.database=cloudnative-pg', '--set', 'global.externalDatabase.host=null',
    '--set', 'cloudnativePg.instances=1', '--set', `cloudnativePg.imageName=${POSTGRES_IMAGE}`,
    // Debian's postgres user, as the lab's image has it (CloudNativePG's own images: 26).
    '--set', 'cloudnativePg.postgresUID=999', '--set', 'cloudnativePg.postgresGID=999',
    '--set', 'cloudnativePg.storage.size=1Gi',
    '--set', `global.externalRedis.host=redis.${DATA_NS}.svc.cluster.local`,
    '--set', 'global.externalRedis.existingSecret=redis',
    '--set', 'global.externalRedis.existingSecretPasswordKey=redis-password',
    '--set', 'global.suite.imageRegistry=localhost',
    ...SERVICES.flatMap((s) => [
      '--set', `${s}.image.tag=${TAG}`, '--set', `${s}.autoscaling.enabled=false`, '--set', `${s}.replicaCount=1`
    ])
  ])
  const installed = (Date.now() - started) / 1000
  const cluster = kjson(['get', 'cluster', `${RELEASE}-postgresql`, '-n', ns])
  const secret = kjson(['get', 'secret', `${RELEASE}-postgresql-app`, '-n', ns])
  if (!secret.data.password) throw new Error(`the operator's Secret ${secret.metadata.name} has no password`)
  const tests = await helmTest({ release: RELEASE, ns })
  return `installed in ${installed.toFixed(0)} s: Cluster ${cluster.metadata.name} ` +
    `(${cluster.status.readyInstances}/${cluster.spec.instances} ready, ${cluster.status.phase}), the services ` +
    `on its -rw Service with the operator's Secret; helm test ${tests}`
}

/** After chartDatabase(): helm uninstall takes the Cluster, its pods and its volume away. */
export async function chartDatabaseRemoved () {
  const ns = CHART_DATABASE_NS
  const started = Date.now()
  await runAsync('helm', ['uninstall', RELEASE, '-n', ns, '--wait', '--timeout', '3m'])
  await waitFor('the Cluster, its pods and its volume gone', () => kjson([
    'get', 'clusters.postgresql.cnpg.io,pods,persistentvolumeclaims', '-n', ns
  ]).items.length === 0, { timeoutMs: 120_000, everyMs: 2000 })
  kubectl(['delete', 'ns', ns, '--wait=false'])
  return `uninstalled, nothing left after ${((Date.now() - started) / 1000).toFixed(0)} s`
}
