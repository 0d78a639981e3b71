// values.schema.json: broken values are refused, unknown keys too; the service settings the chart
// accepts are the kit's; every value is documented in values.yaml (## @param) and charts/VALUES.md.
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { baseSchema } from '../../services/kit/src/config/config.js'
import { SERVICES, charts, parse, requireTools, template, umbrella } from './lib.js'
import { CHART_OWNED_SETTINGS } from '../../scripts/generate/reference.js'

before(requireTools)

const BROKEN = {
  'an unknown top-level key': ['--set', 'replicas=3'],
  'an unknown key of a service': ['--set', 'product.replica=3'],
  'WORKERS as a word': ['--set', 'menu.workers=two'],
  'a setting the services do not have': ['--set', 'flows.config.LOG_LEVL=info'],
  'a bad log level': ['--set', 'profile.config.LOG_LEVEL=loud'],
  'a password in a plain env value': [
    '--set', 'product.extraEnv[0].name=DB_PASSWORD,product.extraEnv[0].value=hunter2'
  ],
  'a password in a plain env value of a mixed-case name': [
    '--set', 'product.extraEnv[0].name=dbPassword,product.extraEnv[0].value=hunter2'
  ],
  'an API key in a plain env value': ['--set', 'menu.extraEnv[0].name=Upstream_ApiKey,menu.extraEnv[0].value=k-123'],
  'a URL with a password in any env value': [
    '--set', 'flows.extraEnv[0].name=ANALYTICS_DSN,flows.extraEnv[0].value=postgres://app:hunter2@db.example.com/x'
  ],
  'a password in the external database user': [
    '--set', 'global.externalDatabase.host=db.example.com,global.externalDatabase.user=app:hunter2'
  ],
  'a password in the external database options': [
    '--set',
    'global.externalDatabase.host=db.example.com,global.externalDatabase.options=sslmode=require&PassWord=hunter2'
  ],
  'an sslmode of its own beside the external database CA': [
    '--set',
    'global.externalDatabase.host=db.example.com,global.externalDatabase.caSecret=db-ca,' +
    'global.externalDatabase.options=sslmode=require'
  ],
  'a typo in the external database': ['--set', 'global.externalDatabase.hots=db.example.com'],
  'an anchored route': ['--set', 'routes.flows[0].match=PathPrefix,routes.flows[0].path=/flows$'],
  'an unknown route match': ['--set', 'routes.flows[0].match=Prefix,routes.flows[0].path=/flows'],
  'a seed with an unknown generator option': ['--set', 'product.seed.scaleOption=rows'],
  'an unknown ingress key': ['--set', 'ingress.hosts[0]=a.example.com']
}

for (const [what, args] of Object.entries(BROKEN)) {
  test(`values.schema.json refuses ${what}`, () => {
    assert.throws(() => template(umbrella(), args), /values don't meet the specifications of the schema/)
  })
}

test('the schemas close every object of ours (unknown keys are errors)', () => {
  const open = []
  const walk = (s, path) => {
    if (s.type === 'object' && s.properties && s.additionalProperties !== false) open.push(path)
    for (const [k, v] of Object.entries(s.properties ?? {})) walk(v, `${path}.${k}`)
  }
  for (const chart of ['service', 'suite', 'loadtest']) {
    const schema = JSON.parse(readFileSync(join(charts, chart, 'values.schema.json'), 'utf8'))
    assert.equal(schema.additionalProperties, false, `${chart}: top level`)
    if (chart !== 'loadtest') walk(schema, chart)
  }
  // Open on purpose: globals (shared with the Bitnami charts), and each subchart's section, which its own
  // schema checks.
  assert.deepEqual(open.sort(), [
    'service.global', 'suite.global', 'suite.global.postgresql', 'suite.global.postgresql.auth',
    'suite.global.security', 'suite.loadtest', 'suite.postgresql', 'suite.redis', ...SERVICES.map((s) => `suite.${s}`)
  ].sort())
})

// The chart's `config` schema is written from the services' settings by npm run generate
// (generate.test.js checks it is current); the settings the chart sets itself must still exist.
test('the settings the chart sets itself are settings of the services', () => {
  for (const k of CHART_OWNED_SETTINGS) {
    assert.ok(k in baseSchema.properties, `${k} is no longer a setting of the services`)
  }
  const schema = JSON.parse(readFileSync(join(charts, 'service', 'values.schema.json'), 'utf8'))
    .properties.config.properties
  for (const k of CHART_OWNED_SETTINGS) assert.ok(!(k in schema), `config takes ${k}, which the chart sets itself`)
})

// Each key of values.yaml is a `## @param` line (itself or an ancestor), and each @param is in VALUES.md.
test('every value is documented in values.yaml and charts/VALUES.md', () => {
  const readme = readFileSync(join(charts, 'VALUES.md'), 'utf8')
  for (const chart of ['service', 'suite']) {
    const text = readFileSync(join(charts, chart, 'values.yaml'), 'utf8')
    const params = [...text.matchAll(/^\s*## @param (\S+)/gm)].map((m) => m[1])
    const values = parse(text)[0]
    const undocumented = []
    const walk = (v, path) => {
      if (params.some((p) => p === path || path.startsWith(`${p}.`))) return
      if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length) {
        for (const [k, x] of Object.entries(v)) walk(x, path ? `${path}.${k}` : k)
      } else undocumented.push(path)
    }
    walk(values, '')
    assert.deepEqual(undocumented, [], `${chart}/values.yaml: keys without ## @param`)
    for (const p of params) {
      assert.ok(readme.includes(`\`${p}\``), `charts/VALUES.md does not document ${chart}'s \`${p}\``)
    }
  }
})
