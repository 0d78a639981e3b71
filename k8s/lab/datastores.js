#!/usr/bin/env node
// PostgreSQL and Redis for the suite on a cluster that cannot pull Bitnami's images (the lab), as the
// e2e runs them (k8s/e2e/datastores.js): in a namespace of their own, password auth, passwords made
// once and kept in its Secret `datastores`; then the Secret `suite-datastores` the release reads
// (k8s/lab/suite.yaml) written beside the release. skaffold's lab profile runs it before each deploy;
// a second run changes nothing.
//   node k8s/lab/datastores.js [RELEASE_NAMESPACE] [DATA_NAMESPACE]   (default: suite suite-data)
// Images: POSTGRES_IMAGE, REDIS_IMAGE (default: the lab's localhost/postgres:15, localhost/redis:7).
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { datastores } from '../e2e/datastores.js'

const [releaseNs = 'suite', dataNs = 'suite-data'] = process.argv.slice(2)

function kubectl (args, input) {
  const r = spawnSync('kubectl', args, { input, encoding: 'utf8' })
  if (r.error) throw new Error(`kubectl: ${r.error.code === 'ENOENT' ? 'not found on PATH' : r.error.message}`)
  return r
}
const must = (args, input) => {
  const r = kubectl(args, input)
  if (r.status !== 0) {
    console.error(`datastores: kubectl ${args.slice(0, 3).join(' ')}: ${r.stderr.trim()}`)
    process.exit(1)
  }
  return r.stdout
}
const ensureNamespace = (ns) => must(
  ['apply', '-f', '-'],
  JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
)

ensureNamespace(dataNs)
const existing = kubectl(['get', 'secret', 'datastores', '-n', dataNs, '-o', 'json'])
const passwords = existing.status === 0
  ? Object.fromEntries(Object.entries(JSON.parse(existing.stdout).data)
      .map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]))
  : {
      'postgres-password': randomBytes(18).toString('base64url'),
      'redis-password': randomBytes(18).toString('base64url')
    }
const objects = datastores({
  passwords,
  clients: [releaseNs],
  postgresImage: process.env.POSTGRES_IMAGE || 'localhost/postgres:15',
  redisImage: process.env.REDIS_IMAGE || 'localhost/redis:7'
})
must(['apply', '-n', dataNs, '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }))
ensureNamespace(releaseNs)
must(['apply', '-n', releaseNs, '-f', '-'], JSON.stringify({
  apiVersion: 'v1', kind: 'Secret', metadata: { name: 'suite-datastores' }, stringData: passwords
}))
must(['rollout', 'status', '-n', dataNs, 'deploy/postgres', 'deploy/redis', '--timeout=180s'])
console.error(`datastores: PostgreSQL and Redis ready in ${dataNs}; Secret suite-datastores in ${releaseNs}`)
