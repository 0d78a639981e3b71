// The backup and its restore drill. The chart's CronJob (backup.enabled) is turned on for the live
// release and run once; the dump is restored into a fresh PostgreSQL in a new namespace by a Job made
// from the CronJob's own template (README.md, "Upgrades and backups", does the same with jq); the
// reinstall stage then installs the release on that database and finds every acknowledged write.
// Reports the dump's size and the backup's and the restore's seconds: what a user plans RPO and RTO on.
import { chownSync, mkdirSync, rmSync } from 'node:fs'
import { startDatastores } from './datastores.js'
import { kjson, kubectl, runAsync } from './lib.js'
import { ADDONS, NS, POSTGRES_IMAGE, REDIS_IMAGE, RELEASE, e2e } from './context.js'

export const RESTORED_NS = `${NS}-restored`
const base = RELEASE.replaceAll('.', '-')
// the chart's suite.fullname, -backup
export const BACKUP_CLAIM = `${base.includes('suite') ? base : `${base}-suite`}-backup`
const NAME = BACKUP_CLAIM // the CronJob's name too
const PV = `${NS}-backups`
const PV_DIR = `/var/tmp/${PV}`
const RUN_AS = 999 // the official postgres image's user (and the lab's localhost/postgres:15)

/**
 * Where the backup claim binds: the cluster's default StorageClass, or on the lab (no provisioner;
 * its node is this machine) a hostPath volume made here, as an administrator would.
 */
function storage () {
  const classes = kjson(['get', 'storageclass']).items
  if (classes.some((c) => c.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'] === 'true')) return []
  if (ADDONS !== 'lab') return null
  rmSync(PV_DIR, { recursive: true, force: true })
  mkdirSync(PV_DIR, { recursive: true })
  chownSync(PV_DIR, RUN_AS, RUN_AS)
  kubectl(['delete', 'pv', PV, '--ignore-not-found', '--wait=true'])
  kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: PV, labels: { 'app.kubernetes.io/part-of': 'suite-e2e' } },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        storageClassName: PV,
        hostPath: { path: PV_DIR, type: 'Directory' }
      }
    })
  })
  return ['--set', `backup.persistence.storageClass=${PV}`, '--set', 'backup.persistence.size=1Gi']
}

async function jobDone (name) {
  const started = Date.now()
  await runAsync('kubectl', ['wait', '-n', NS, `job/${name}`, '--for=condition=complete', '--timeout=300s'])
    .catch((err) => {
      throw new Error(
        `job ${name} did not complete: ${err.message}\n` +
        `${kubectl(['logs', '-n', NS, `job/${name}`, '--tail=20'], { ok: true }).stdout}`
      )
    })
  return { seconds: (Date.now() - started) / 1000, log: kubectl(['logs', '-n', NS, `job/${name}`]).stdout.trim() }
}

/** The backup run once, then restored into a fresh database in RESTORED_NS. Sets e2e.restored. */
export async function backupAndRestore () {
  const claim = storage()
  if (!claim) {
    e2e.notes.push('backup and restore: the cluster has no default StorageClass for the backup claim')
    return 'skipped: no storage for the backup claim'
  }
  // The datastores' PostgreSQL image has pg_dump (and the lab can pull no other).
  const [, repository, tag = ''] = /^(.*?)(?::([^:/]+))?$/.exec(POSTGRES_IMAGE)
  const image = [
    '--set', 'backup.image.registry=',
    '--set', `backup.image.repository=${repository}`,
    '--set-string', `backup.image.tag=${tag}`
  ]
  // The backup's NetworkPolicy takes its DNS rule from product's networkPolicy.dns: the ports the
  // DNS pods listen on, as this cluster runs them (the lab's values give the services theirs with
  // extraEgress, a key the previous release knows too, and which is theirs alone).
  const dnsPorts = [...new Set(kjson(['get', 'pods', '-n', 'kube-system', '-l', 'k8s-app=kube-dns']).items
    .flatMap((p) => p.spec.containers.flatMap((c) => c.ports ?? []))
    .filter((p) => p.protocol === 'UDP').map((p) => p.containerPort))]
  const dns = dnsPorts.length ? ['--set-json', `product.networkPolicy.dns.ports=${JSON.stringify(dnsPorts)}`] : []
  // Not --wait: a claim of a StorageClass that binds at its first consumer (local-path, most clouds'
  // default) stays Pending until the backup's first pod, and helm would wait for it to bind. Values of
  // the same chart and images: no migration to run (no hooks).
  await runAsync('helm', [
    'upgrade', RELEASE, e2e.chartDir, '-n', NS, '--reuse-values', '--no-hooks',
    '--set', 'backup.enabled=true', ...claim, ...image, ...dns
  ])

  kubectl(['create', 'job', 'backup-drill', '-n', NS, `--from=cronjob/${NAME}`])
  const backup = await jobDone('backup-drill')
  const [, file, bytes] = /backup: (\S+), (\d+) bytes/.exec(backup.log) ?? []
  if (!file) throw new Error(`the backup said: ${backup.log}`)

  // A fresh PostgreSQL and Redis in a new namespace, with the passwords the release's Secret has.
  const secret = kjson(['get', 'secret', 'suite-datastores', '-n', NS]).data
  const passwords = Object.fromEntries(Object.entries(secret).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]))
  kubectl(['delete', 'ns', RESTORED_NS, '--ignore-not-found', '--wait=true', '--timeout=180s'])
  kubectl(['create', 'ns', RESTORED_NS])
  await startDatastores(RESTORED_NS, {
    passwords, postgresImage: POSTGRES_IMAGE, redisImage: REDIS_IMAGE, clients: [NS]
  })

  // The restore: the CronJob's Job, its command pg_restore of the newest dump, its database the new one.
  const template = kjson(['get', 'cronjob', NAME, '-n', NS]).spec.jobTemplate
  const c = template.spec.template.spec.containers[0]
  c.command = [
    'sh', '-c',
    'set -eu; file=$(ls -1t /backups/suite-*.dump | head -n 1); ' +
    // as the backup: a new pod's first connections may be refused until its NetworkPolicy admits it
    'for i in $(seq 30); do pg_isready --dbname="$DATABASE_URL" --timeout=2 > /dev/null && break; sleep 2; done; ' +
    'pg_restore --exit-on-error --single-transaction --no-owner --dbname="$DATABASE_URL" "$file"; ' +
    'echo "restored: $file"'
  ]
  c.env = c.env.map((e) => (e.name === 'DATABASE_URL'
    ? { name: e.name, value: `postgresql://app@postgres.${RESTORED_NS}.svc.cluster.local:5432/app` }
    : e))
  kubectl(['apply', '-n', NS, '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'restore-drill', labels: template.metadata?.labels },
      spec: template.spec
    })
  })
  const restore = await jobDone('restore-drill')
  // not the release's: it would outlive the uninstall
  kubectl(['delete', 'job', 'restore-drill', '-n', NS, '--cascade=foreground'])
  e2e.restored = { host: (s) => `${s}.${RESTORED_NS}.svc.cluster.local` }
  return `backup ${file}: ${(Number(bytes) / 1024).toFixed(0)} KiB in ${backup.seconds.toFixed(1)} s; ` +
    `restored into a fresh PostgreSQL in ${RESTORED_NS} in ${restore.seconds.toFixed(1)} s`
}

/**
 * After the uninstall: the backup claim was kept (helm.sh/resource-policy: keep), as it must be;
 * removed now.
 */
export function backupKept () {
  if (!e2e.restored) return ''
  if (kubectl(['get', 'pvc', BACKUP_CLAIM, '-n', NS], { ok: true }).code !== 0) {
    throw new Error(`the backup claim ${BACKUP_CLAIM} did not outlive the uninstall`)
  }
  kubectl(['delete', 'pvc', BACKUP_CLAIM, '-n', NS, '--wait=false'])
  kubectl(['delete', 'pv', PV, '--ignore-not-found', '--wait=false'], { ok: true })
  return `; the backup claim ${BACKUP_CLAIM} kept, as it must be`
}

/** The values that point a reinstall at the restored datastores. */
export const restoredValues = () => (e2e.restored
  ? [
      '--set', `global.externalDatabase.host=${e2e.restored.host('postgres')}`,
      '--set', `global.externalRedis.host=${e2e.restored.host('redis')}`
    ]
  : [])
