// The e2e's external datastores: PostgreSQL with scram-sha-256 password auth and a Redis that requires
// AUTH, as a managed database would be (their own namespace, passwords in a Secret). emptyDir data: it
// outlives a reinstall of the suite, not a restart of the pod. Works with the official images and with
// the lab's localhost/postgres:15 and localhost/redis:7 (same environment contract).
import { kubectl } from './lib.js'

/** datastores() applied in the namespace `ns`, and waited for until both are ready. */
export function startDatastores (ns, options) {
  kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: datastores(options) }) })
  kubectl(['rollout', 'status', '-n', ns, 'deploy/postgres', 'deploy/redis', '--timeout=180s'])
}

export function datastores ({ passwords, postgresImage, redisImage }) {
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
          containers: [{ name: app, imagePullPolicy: 'IfNotPresent', volumeMounts: [{ name: 'data', mountPath: container.dataPath }], ...container.spec }],
          volumes: [{ name: 'data', emptyDir: {} }]
        }
      }
    }
  })
  const service = (app, port) => ({
    apiVersion: 'v1', kind: 'Service', metadata: { name: app, labels: labels(app) }, spec: { selector: { app }, ports: [{ name: app, port, targetPort: port }] }
  })
  return [
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'datastores', labels: labels('datastores') }, stringData: passwords },
    deployment('postgres', {
      dataPath: '/var/lib/postgresql/data',
      spec: {
        image: postgresImage,
        env: [{ name: 'POSTGRES_USER', value: 'app' }, { name: 'POSTGRES_DB', value: 'app' }, { name: 'PGDATA', value: '/var/lib/postgresql/data/pgdata' },
          { name: 'POSTGRES_HOST_AUTH_METHOD', value: 'scram-sha-256' }, { name: 'POSTGRES_INITDB_ARGS', value: '--auth-host=scram-sha-256' }, secretEnv('POSTGRES_PASSWORD', 'postgres-password')],
        ports: [{ containerPort: 5432 }],
        readinessProbe: { exec: { command: ['pg_isready', '-h', '127.0.0.1', '-U', 'app', '-d', 'app'] }, periodSeconds: 2 },
        resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } }
      }
    }),
    service('postgres', 5432),
    deployment('redis', {
      dataPath: '/data',
      spec: {
        image: redisImage,
        env: [secretEnv('REDIS_PASSWORD', 'redis-password')],
        // A cache: bounded, evicting, not persisted.
        args: ['--requirepass', '$(REDIS_PASSWORD)', '--maxmemory', '96mb', '--maxmemory-policy', 'allkeys-lru', '--save', '', '--appendonly', 'no'],
        ports: [{ containerPort: 6379 }],
        readinessProbe: { exec: { command: ['sh', '-c', 'REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli ping | grep -q PONG'] }, periodSeconds: 2 },
        resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '160Mi' } }
      }
    }),
    service('redis', 6379)
  ]
}
