// The e2e's external datastores: PostgreSQL with scram-sha-256 password auth and a Redis that requires
// AUTH, as a managed database would be (their own namespace, passwords in a Secret). emptyDir data: it
// outlives a reinstall of the suite, not a restart of the pod. Works with the official images and with
// the lab's localhost/postgres:15 and localhost/redis:7 (same environment contract). Like a managed
// database behind its firewall, they admit connections from the namespaces named as their clients
// (and their own) only: a NetworkPolicy, enforced where the cluster enforces them.
import { kubectl, runAsync } from './lib.js'

/** The CloudNativePG Cluster of the datastores (cloudnativePg options): its Services are postgres-rw… */
export const CLUSTER = 'postgres'

/**
 * datastores() applied in the namespace `ns`, and waited for until both are ready. With a CloudNativePG
 * Cluster, `onRedis()` is called once Redis is ready, before the Cluster is.
 */
export async function startDatastores (ns, options, onRedis = () => {}) {
  kubectl(['apply', '-n', ns, '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: datastores(options) })
  })
  // Waited for without blocking: the image builds may run meanwhile.
  if (options.cloudnativePg) {
    await runAsync('kubectl', ['rollout', 'status', '-n', ns, 'deploy/redis', '--timeout=180s'])
    onRedis()
    await runAsync('kubectl', ['wait', '-n', ns, `cluster/${CLUSTER}`, '--for=condition=Ready', '--timeout=600s'])
  } else {
    await runAsync('kubectl', ['rollout', 'status', '-n', ns, 'deploy/postgres', 'deploy/redis', '--timeout=180s'])
  }
}

/**
 * The objects: Redis, and PostgreSQL as a Deployment or, with `cloudnativePg` ({ instances }), a
 * CloudNativePG Cluster `postgres` of that many instances with quorum replication (its Services
 * postgres-rw, -ro, -r), scraped by a PodMonitor; each admitting only the `clients` namespaces.
 * `redisNode`: the node Redis runs on (none: wherever the scheduler puts it).
 */
export function datastores ({ passwords, postgresImage, redisImage, clients = [], cloudnativePg, redisNode }) {
  const labels = (app) => ({ app, 'app.kubernetes.io/part-of': 'suite-e2e-datastores' })
  const secretEnv = (name, key) => ({ name, valueFrom: { secretKeyRef: { name: 'datastores', key } } })
  const deployment = (app, container) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: app, labels: labels(app) },
    spec: {
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: { app } },
      template: {
        metadata: { labels: labels(app) },
        spec: {
          securityContext: { runAsNonRoot: true, runAsUser: 999, runAsGroup: 999, fsGroup: 999 },
          ...(container.nodeSelector && { nodeSelector: container.nodeSelector }),
          containers: [{
            name: app,
            imagePullPolicy: 'IfNotPresent',
            volumeMounts: [{ name: 'data', mountPath: container.dataPath }],
            ...container.spec
          }],
          volumes: [{ name: 'data', emptyDir: {} }]
        }
      }
    }
  })
  const service = (app, port) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: app, labels: labels(app) },
    spec: { selector: { app }, ports: [{ name: app, port, targetPort: port }] }
  })
  const fromClients = clients.map((ns) => ({
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } }
  }))
  const postgres = cloudnativePg
    ? cluster({ ...cloudnativePg, postgresImage, password: passwords['postgres-password'], fromClients, labels })
    : [
        deployment('postgres', {
          dataPath: '/var/lib/postgresql/data',
          spec: {
            image: postgresImage,
            env: [
              { name: 'POSTGRES_USER', value: 'app' },
              { name: 'POSTGRES_DB', value: 'app' },
              { name: 'PGDATA', value: '/var/lib/postgresql/data/pgdata' },
              { name: 'POSTGRES_HOST_AUTH_METHOD', value: 'scram-sha-256' },
              { name: 'POSTGRES_INITDB_ARGS', value: '--auth-host=scram-sha-256' },
              secretEnv('POSTGRES_PASSWORD', 'postgres-password')
            ],
            ports: [{ containerPort: 5432 }],
            readinessProbe: {
              exec: { command: ['pg_isready', '-h', '127.0.0.1', '-U', 'app', '-d', 'app'] },
              periodSeconds: 2
            },
            resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } }
          }
        }),
        service('postgres', 5432)
      ]
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'datastores', labels: labels('datastores') },
      stringData: passwords
    },
    ...postgres,
    deployment('redis', {
      dataPath: '/data',
      // One replica, unpersisted, as a managed cache stands outside the cluster's nodes: on the node the
      // e2e never drains nor loses, so a phase that moves the suite's pods does not empty the cache too.
      ...(redisNode && { nodeSelector: { 'kubernetes.io/hostname': redisNode } }),
      spec: {
        image: redisImage,
        env: [secretEnv('REDIS_PASSWORD', 'redis-password')],
        // A cache: bounded, evicting, not persisted.
        args: [
          '--requirepass', '$(REDIS_PASSWORD)', '--maxmemory', '96mb', '--maxmemory-policy', 'allkeys-lru',
          '--save', '', '--appendonly', 'no'
        ],
        ports: [{ containerPort: 6379 }],
        readinessProbe: {
          exec: { command: ['sh', '-c', 'REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli ping | grep -q PONG'] },
          periodSeconds: 2
        },
        resources: { requests: { cpu: '150m', memory: '64Mi' }, limits: { memory: '160Mi' } } // see cluster()
      }
    }),
    service('redis', 6379),
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'datastores', labels: labels('datastores') },
      spec: {
        podSelector: { matchLabels: { 'app.kubernetes.io/part-of': 'suite-e2e-datastores' } },
        policyTypes: ['Ingress'],
        ingress: [{
          from: [{ podSelector: {} }, ...fromClients], // this namespace's own pods too (a restore Job)
          ports: [{ port: 5432, protocol: 'TCP' }, { port: 6379, protocol: 'TCP' }]
        }]
      }
    }
  ]
}

/**
 * A CloudNativePG Cluster as a managed database: `instances` PostgreSQL pods of `postgresImage` (uid
 * 999: the lab's, Debian's), the owner `app` of database `app` with `password`, quorum replication
 * that acknowledges a commit once a standby has it and fails over only to a standby that has every
 * acknowledged commit; a switchover for an update of the primary. Scraped by a PodMonitor, reached
 * by the `fromClients` namespaces' pods, the other instances, the operator and Prometheus only.
 */
function cluster ({ instances, postgresImage, password, fromClients, labels }) {
  const peer = (ns, podLabels) => ({
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
    podSelector: { matchLabels: podLabels }
  })
  const instance = { podSelector: { matchLabels: { 'cnpg.io/cluster': CLUSTER } } }
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/basic-auth',
      metadata: { name: 'postgres-app', labels: labels('postgres') },
      stringData: { username: 'app', password }
    },
    {
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      metadata: { name: CLUSTER, labels: labels('postgres') },
      spec: {
        instances,
        imageName: postgresImage,
        postgresUID: 999,
        postgresGID: 999,
        primaryUpdateStrategy: 'unsupervised',
        primaryUpdateMethod: 'switchover',
        // A stopping instance disconnects its clients at once: pooled connections never leave on their
        // own, so a smart shutdown would hold a deleted primary, and its failover, for the whole timeout.
        smartShutdownTimeout: 0,
        // As the chart's (cloudnativePg.primaryLease): a crashed primary's lease expires within 6 s.
        primaryLease: { leaseDurationSeconds: 6, renewDeadlineSeconds: 4, retryPeriodSeconds: 1 },
        bootstrap: { initdb: { database: 'app', owner: 'app', secret: { name: 'postgres-app' } } },
        postgresql: {
          // As the chart's: a standby retries its primary every second (after a failover: the new one).
          parameters: { max_connections: '300', wal_retrieve_retry_interval: '1s' },
          ...(instances > 1 && {
            synchronous: { method: 'any', number: 1, dataDurability: 'required', failoverQuorum: true }
          })
        },
        storage: { size: '1Gi' },
        affinity: {
          enablePodAntiAffinity: true, topologyKey: 'kubernetes.io/hostname', podAntiAffinityType: 'preferred'
        },
        // More CPU weight than a starting service pod's (100m): a rollout starts several on the lab's
        // two shared cores, and a standby starved meanwhile acknowledges commits late, while every
        // flows write waits for that acknowledgement holding its row's lock.
        resources: { requests: { cpu: '250m', memory: '160Mi' }, limits: { memory: '512Mi' } }
      }
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'postgres', labels: labels('postgres') },
      spec: {
        podSelector: { matchLabels: { 'cnpg.io/cluster': CLUSTER } },
        policyTypes: ['Ingress'],
        ingress: [
          { from: [instance, ...fromClients], ports: [{ port: 5432, protocol: 'TCP' }] },
          {
            from: [instance, peer('cnpg-system', { 'app.kubernetes.io/name': 'cloudnative-pg' })],
            ports: [{ port: 8000, protocol: 'TCP' }]
          },
          {
            from: [peer('monitoring', { 'app.kubernetes.io/name': 'prometheus' })],
            ports: [{ port: 9187, protocol: 'TCP' }]
          }
        ]
      }
    },
    {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PodMonitor',
      metadata: { name: 'postgres', labels: { ...labels('postgres'), release: 'kube-prometheus-stack' } },
      spec: { selector: { matchLabels: { 'cnpg.io/cluster': CLUSTER } }, podMetricsEndpoints: [{ port: 'metrics' }] }
    }
  ]
}
