// The Bitnami dependencies: pinned, on images that still exist, and wired as the services expect,
// rendered with the real charts (the archives of ../shared/k8s/charts, the versions Chart.yaml pins).
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { freePort } from '@suite/kit/testing'
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
  const aliases = chart.dependencies.filter((d) => d.name === 'service')
    .map((d) => [d.alias, d.repository, d.condition])
  assert.deepEqual(aliases, SERVICES.map((s) => [s, 'file://../service', `${s}.enabled`]),
    'one generic chart, one alias per service')
  const loadtest = chart.dependencies.find((d) => d.name === 'loadtest')
  assert.deepEqual([loadtest.repository, loadtest.condition], ['file://../loadtest', 'loadtest.enabled'])
  assert.equal(values.loadtest.enabled, false)
})

test('every Bitnami image comes from bitnamilegacy (the 2025 catalog move), ' +
  'which the charts must be told to allow', () => {
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

test('with the Bitnami charts: their Secrets, Services and pods are the ones the services use, ' +
  'and a reinstall keeps the password', () => {
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
      const sts = docs.filter((o) => o.kind === 'StatefulSet' &&
        Object.entries(rule.to[0].podSelector.matchLabels).every(([k, v]) => o.spec.template.metadata.labels[k] === v))
      if (rule.ports[0].port !== 53) {
        assert.equal(sts.length, 1, `${s}: egress on ${rule.ports[0].port} selects the Bitnami pods`)
      }
    }
  }
  // PostgreSQL opens its data directory with the passwords of the umbrella's kept Secret, the same
  // one the services read: Bitnami makes no Secret of its own that a reinstall would replace.
  const pg = docs.find((o) => o.kind === 'StatefulSet' && o.metadata.labels['app.kubernetes.io/name'] === 'postgresql')
  const spec = pg.spec.template.spec
  const pgSecrets = [
    ...spec.containers[0].env.filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.valueFrom.secretKeyRef.name),
    ...spec.volumes.filter((v) => v.secret).map((v) => v.secret.secretName)
  ]
  assert.ok(pgSecrets.length >= 1 && pgSecrets.every((n) => n === 'r-postgresql-auth'), `PostgreSQL reads ${pgSecrets}`)
  assert.equal(find('Secret', 'r-postgresql')?.data?.password, undefined, 'no Bitnami-made PostgreSQL password')
  assert.equal(find('Secret', 'r-postgresql-auth').metadata.annotations['helm.sh/resource-policy'], 'keep')
})

// The bundled Redis is a cache: the umbrella rendered with the pinned Bitnami chart, and the redis.conf
// it makes loaded by a real redis-server.
test('the bundled Redis is a cache: maxmemory below its memory limit, LRU eviction, ' +
  'no AOF, no RDB, no volume', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'suite-redis-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const docs = parse(template(umbrellaWithDependencies()))
  const conf = docs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'r-redis-configuration').data
  const master = docs.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'r-redis-master')
  assert.equal(master.spec.volumeClaimTemplates, undefined, 'no PersistentVolumeClaim')
  const limit = master.spec.template.spec.containers.find((c) => c.name === 'redis').resources.limits.memory
  assert.equal(limit, '512Mi')

  // The two files the chart's start script includes, as Redis reads them.
  const masterConf = conf['master.conf'].replace(/^dir .*$/m, `dir ${dir}`)
  writeFileSync(join(dir, 'redis.conf'), `${conf['redis.conf']}\n${masterConf}\n`)
  const port = await freePort()
  const server = spawn('redis-server', [join(dir, 'redis.conf'), '--port', String(port), '--bind', '127.0.0.1'], {
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.after(() => server.kill())
  let out = ''
  server.stdout.on('data', (d) => { out += d })
  for (let i = 0; i < 100 && !out.includes('Ready to accept connections'); i++) await sleep(50)
  assert.match(out, /Ready to accept connections/, 'redis-server takes the rendered configuration')
  const client = new Redis({ port, host: '127.0.0.1' })
  t.after(() => client.disconnect())
  const get = async (name) => (await client.config('GET', name))[1]
  const maxmemory = Number(await get('maxmemory'))
  assert.equal(maxmemory, 384 * 2 ** 20)
  assert.ok(maxmemory < 0.8 * 512 * 2 ** 20, 'room for buffers and fragmentation below the container limit')
  assert.equal(await get('maxmemory-policy'), 'allkeys-lru')
  assert.equal(await get('appendonly'), 'no')
  assert.equal(await get('save'), '')
  server.kill()
  await once(server, 'exit')
})
