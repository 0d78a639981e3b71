// The Bitnami dependencies: pinned, on images that still exist, and wired as the services expect,
// rendered with the real charts (the archives of ../shared/k8s/charts, the versions Chart.yaml pins).
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SERVICES, charts, kubeconform, parse, requireTools, template, umbrellaWithDependencies } from './lib.js'

before(requireTools)

const chart = parse(readFileSync(join(charts, 'suite', 'Chart.yaml'), 'utf8'))[0]
const values = parse(readFileSync(join(charts, 'suite', 'values.yaml'), 'utf8'))[0]
const bitnami = chart.dependencies.filter((d) => d.repository.startsWith('oci://'))

test('PostgreSQL and Redis come from Bitnami\'s OCI charts at exact versions, each behind its condition', () => {
  assert.deepEqual(bitnami.map((d) => [d.name, d.repository, d.condition]), [
    ['postgresql', 'oci://registry-1.docker.io/bitnamicharts', 'postgresql.enabled'],
    ['redis', 'oci://registry-1.docker.io/bitnamicharts', 'redis.enabled']
  ])
  for (const d of bitnami) assert.match(d.version, /^\d+\.\d+\.\d+$/, `${d.name}: exact version`)
  const aliases = chart.dependencies.filter((d) => d.name === 'service').map((d) => [d.alias, d.repository, d.condition])
  assert.deepEqual(aliases, SERVICES.map((s) => [s, 'file://../service', `${s}.enabled`]), 'one generic chart, one alias per service')
  const loadtest = chart.dependencies.find((d) => d.name === 'loadtest')
  assert.deepEqual([loadtest.repository, loadtest.condition], ['file://../loadtest', 'loadtest.enabled'])
  assert.equal(values.loadtest.enabled, false)
})

test('every Bitnami image comes from bitnamilegacy (the 2025 catalog move), which the charts must be told to allow', () => {
  const repos = []
  const walk = (v, path) => {
    if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, `${path}.${k}`)
    else if (path.endsWith('.image.repository')) repos.push([path, v])
  }
  walk({ postgresql: values.postgresql, redis: values.redis }, '')
  assert.ok(repos.length >= 9)
  for (const [path, repo] of repos) assert.match(repo, /^bitnamilegacy\//, path)
  assert.equal(values.global.security.allowInsecureImages, true)
})

test('with the Bitnami charts: their Secrets, Services and pods are the ones the services use, and a reinstall keeps the password', () => {
  const yaml = template(umbrellaWithDependencies())
  const kc = kubeconform(yaml)
  assert.deepEqual(kc.problems, [])
  const docs = parse(yaml)
  const find = (kind, name) => docs.find((o) => o.kind === kind && o.metadata.name === name)
  for (const s of SERVICES) {
    const env = find('Deployment', `r-${s}`).spec.template.spec.containers[0].env
    for (const e of env.filter((x) => x.valueFrom?.secretKeyRef)) {
      const { name, key } = e.valueFrom.secretKeyRef
      assert.ok(find('Secret', name)?.data?.[key], `${s}: ${e.name} from Secret ${name} key ${key}`)
    }
    for (const n of ['DATABASE_URL', 'REDIS_URL']) {
      const host = new URL(env.find((e) => e.name === n).value).hostname
      assert.ok(find('Service', host), `${s}: ${n} host ${host} is a Service`)
    }
    const np = find('NetworkPolicy', `r-${s}`)
    for (const rule of np.spec.egress.filter((r) => r.to?.[0]?.podSelector)) {
      const sts = docs.filter((o) => o.kind === 'StatefulSet' && Object.entries(rule.to[0].podSelector.matchLabels).every(([k, v]) => o.spec.template.metadata.labels[k] === v))
      if (rule.ports[0].port !== 53) assert.equal(sts.length, 1, `${s}: egress on ${rule.ports[0].port} selects the Bitnami pods`)
    }
  }
  // PostgreSQL opens its data directory with the passwords of the umbrella's kept Secret, the same
  // one the services read: Bitnami makes no Secret of its own that a reinstall would replace.
  const pg = docs.find((o) => o.kind === 'StatefulSet' && o.metadata.labels['app.kubernetes.io/name'] === 'postgresql')
  const spec = pg.spec.template.spec
  const pgSecrets = [...spec.containers[0].env.filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.valueFrom.secretKeyRef.name),
    ...spec.volumes.filter((v) => v.secret).map((v) => v.secret.secretName)]
  assert.ok(pgSecrets.length >= 1 && pgSecrets.every((n) => n === 'r-postgresql-auth'), `PostgreSQL reads ${pgSecrets}`)
  assert.equal(find('Secret', 'r-postgresql')?.data?.password, undefined, 'no Bitnami-made PostgreSQL password')
  assert.equal(find('Secret', 'r-postgresql-auth').metadata.annotations['helm.sh/resource-policy'], 'keep')
})
