// What `npm run generate` writes from services/list.js: every file that names the services and cannot
// import the list. In YAML and Markdown only the marked blocks are written (the rest is hand-written);
// JSON schemas get their per-service keys.
import { DURATION_BUCKETS } from '@suite/kit'
import { SERVICES } from '../../services/list.js'
import { SLO } from '../../loadtests/k6/slo.js'
import { version } from './versions.js'
import { block, json } from './blocks.js'

// YAML flow style (JSON is valid YAML)
const inline = (v) => Array.isArray(v) ? `[${v.map((x) => JSON.stringify(x)).join(', ')}]` : JSON.stringify(v)
const withData = SERVICES.filter((s) => s.data)

// A name is a folder, an image, a chart alias, a Prometheus job and a k6 export: letters and digits.
for (const s of SERVICES) {
  if (!/^[a-z][a-z0-9]*$/.test(s.name)) {
    throw new Error(`services/list.js: "${s.name}" is not a service name (lowercase letters and digits)`)
  }
  const twin = SERVICES.find((o) => o !== s && (o.name === s.name || o.port === s.port))
  if (twin) throw new Error(`services/list.js: ${s.name} and ${twin.name} share a name or a port`)
}

// skaffold dev copies an edited file of a service's or the kit's code into the running container
// (charts/service devLoop), where node --watch restarts the service; anything else rebuilds.
// A synced file lands in the dev-loop pods' code volume (charts/service devLoop); then the restart file
// the service runs under `node --watch-path` is rewritten in place: Node's watch of a folder misses
// every change after the first to a file tar replaces, as skaffold's sync does.
const RESTART_FILE = '/app/services/.restart'
const touchRestart = `require('node:fs').writeFileSync('${RESTART_FILE}', String(Date.now()))`
const sync = (s) => [
  '  sync:',
  '    manual:',
  ...[s.name, 'kit'].flatMap((dir) => [`      - src: services/${dir}/src/**/*.js`, '        dest: /app']),
  '    hooks:',
  '      after:',
  '        - container:',
  `            command: [node, -e, "${touchRestart}"]`
]
const portForward = SERVICES.flatMap((s) => [
  '- resourceType: service',
  `  resourceName: suite-${s.name}`,
  '  namespace: suite',
  '  port: 80',
  '  address: 127.0.0.1',
  `  localPort: ${s.port}`
])

export const skaffold = (text) => [
  ['artifacts', SERVICES.flatMap((s) => [
    `- image: suite-${s.name}`,
    '  docker:',
    '    dockerfile: services/Dockerfile',
    '    buildArgs:',
    `      SERVICE: ${s.name}`,
    ...sync(s)
  ])],
  ['buildah artifacts', SERVICES.flatMap((s) => [
    `- image: suite-${s.name}`,
    '  custom:',
    '    buildCommand: bash scripts/buildah-build.sh localhost/node:24',
    // The files its image is made of (services/Dockerfile, .dockerignore); not inferred from the
    // Dockerfile, which would make skaffold fetch the base image's configuration from its registry.
    '    dependencies:',
    '      paths: [package.json, package-lock.json, .dockerignore, services/Dockerfile, services/list.js, ' +
    `services/kit/**, services/${s.name}/**]`,
    '      ignore: [services/*/test/**, services/*/testing/**, services/*/node_modules/**, services/**/*.md]',
    ...sync(s)
  ])],
  ['port forwards', portForward],
  ['images', SERVICES.flatMap((s) => {
    const v = `suite_${s.name}`
    return [
      `${s.name}.image.repository: "{{.IMAGE_REPO_${v}}}"`,
      `${s.name}.image.tag: "{{.IMAGE_TAG_${v}}}"`,
      `${s.name}.image.digest: "{{.IMAGE_DIGEST_${v}}}"`
    ]
  })]
].reduce((t, [name, lines]) => block(t, name, lines), text)

export const chartYaml = (text, read) => block(text, 'services', SERVICES.flatMap((s) => [
  '- name: service',
  `  alias: ${s.name}`,
  `  version: ${version(read)}`,
  '  repository: file://../service',
  `  condition: ${s.name}.enabled`
]))

// Each service's SLOs for its alerts, from the load tests' SLO: the share of requests allowed to fail,
// and the p99 latency (a bucket bound of the request-duration histogram, or no ratio can be read).
if (!DURATION_BUCKETS.includes(SLO.p99Ms / 1000)) {
  throw new Error(`loadtests/k6/scenarios.js: SLO.p99Ms ${SLO.p99Ms} is no bucket of the request-duration ` +
    `histogram (${DURATION_BUCKETS.join(', ')} s)`)
}
const slos = (text) => block(text, 'slos', [
  ...SERVICES.flatMap((s) => [
    `## @param alerts.slos.${s.name}.availability Share of the ${s.name} service's requests answered without a 5xx`,
    `## @param alerts.slos.${s.name}.latencySeconds The ${s.name} service's latency threshold: ` +
    "a bound of the request-duration histogram's buckets",
    `## @param alerts.slos.${s.name}.latencyTarget Share of the ${s.name} service's requests answered ` +
    'within latencySeconds'
  ]),
  'slos:',
  ...SERVICES.map((s) =>
    `  ${s.name}: { availability: ${1 - SLO.errorRate}, latencySeconds: ${SLO.p99Ms / 1000}, latencyTarget: 0.99 }`)
])

const noSeed = (s) => s.data ? '' : ' (it has no generator: no seed)'
export const suiteValues = (text) => slos(block(block(text, 'services', SERVICES.flatMap((s) => [
  ...(s.data ? [`## @param ${s.name}.seed.scaleOption The ${s.name} generator's size option`] : []),
  ...(s.data?.direct
    ? [`## @param ${s.name}.seed.direct Seeded straight into PostgreSQL by the seed command (no CSV scratch volume)`]
    : []),
  `## @param ${s.name}.tests.paths Paths \`helm test\` calls on ${s.name}${noSeed(s)}`,
  `${s.name}:`,
  ...(s.data ? ['  seed:', `    scaleOption: ${s.data.option}`, ...(s.data.direct ? ['    direct: true'] : [])] : []),
  '  tests:',
  `    paths: ${inline(s.checks)}`
])), 'routes', [
  'routes:',
  ...SERVICES.flatMap((s) => [
    `  ${s.name}:`,
    ...s.routes.map((r) => `    - { match: ${r.match}, path: ${inline(r.path)} }`)
  ])
]))

// Per-service keys of a JSON schema's `properties` (or another object), in the list's order, after
// the keys of `keep` that come before them.
function withServices (properties, make, { before = [] } = {}) {
  const rest = Object.entries(properties)
    .filter(([k]) => !SERVICES.some((s) => s.name === k) && !before.includes(k))
  const first = Object.entries(properties).filter(([k]) => before.includes(k))
  return Object.fromEntries([...first, ...SERVICES.map((s) => [s.name, make(s, properties[s.name])]), ...rest])
}

export function suiteSchema (text) {
  const schema = JSON.parse(text)
  schema.properties = withServices(schema.properties, (s) => ({
    type: 'object',
    description: `The ${s.name} service: charts/service values (validated by that chart's schema)`,
    properties: { enabled: { type: 'boolean', description: `Deploy ${s.name}` } }
  }), { before: ['$schema', 'global'] })
  const slo = {
    type: 'object',
    additionalProperties: false,
    required: ['availability', 'latencySeconds', 'latencyTarget'],
    properties: {
      availability: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
      latencySeconds: {
        type: 'number',
        enum: DURATION_BUCKETS,
        description: 'a bucket bound of http_request_duration_seconds'
      },
      latencyTarget: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 }
    }
  }
  schema.properties.alerts.properties.slos.properties = Object.fromEntries(SERVICES.map((s) =>
    [s.name, { ...slo, description: `The ${s.name} service's SLOs` }]))
  schema.properties.alerts.properties.slos.additionalProperties = false
  const routes = schema.properties.routes.properties
  const route = Object.values(routes)[0]
  schema.properties.routes.properties = Object.fromEntries(SERVICES.map((s) =>
    [s.name, { ...route, description: `Paths routed to ${s.name}` }]))
  return json(schema)
}

export function serviceSchema (text) {
  const schema = JSON.parse(text)
  schema.properties.seed.properties.scaleOption.enum = ['', ...withData.map((s) => s.data.option)]
  return json(schema)
}

const scenarioSettings = (s) => Object.keys(s.scenario).join(', ') || 'none by default'
export const loadtestValues = (text) => block(block(text, 'targets', [
  ...SERVICES.map((s, i) => `## @param targets.${s.name} URL of the ${s.name} service; ` +
    `empty: \`http://<release>-${s.name}\`${i ? '' : ', the umbrella\'s Service'}`),
  'targets:',
  ...SERVICES.map((s) => `  ${s.name}: ""`)
]), 'scenarios', [
  ...SERVICES.flatMap((s) => [
    `## @param scenarios.${s.name}.enabled Run the ${s.name} scenario`,
    `## @param scenarios.${s.name}.rate Arrival rate of the steady run, iterations per second`,
    `## @param scenarios.${s.name}.duration Duration of the steady run`,
    `## @param scenarios.${s.name}.env Script settings ` +
    `(loadtests/k6/${s.name}.js lists them; set here: ${scenarioSettings(s)})`
  ]),
  'scenarios:',
  ...SERVICES.flatMap((s) => [
    `  ${s.name}:`,
    '    enabled: true',
    '    rate: 100',
    '    duration: 5m',
    ...(Object.keys(s.scenario).length
      ? ['    env:', ...Object.entries(s.scenario).map(([k, v]) => `      ${k}: ${inline(v)}`)]
      : ['    env: {}'])
  ])
])

export function loadtestSchema (text) {
  const schema = JSON.parse(text)
  const { targets, scenarios } = schema.properties
  const target = Object.values(targets.properties)[0]
  targets.properties = Object.fromEntries(SERVICES.map((s) =>
    [s.name, { ...target, description: `URL of the ${s.name} service` }]))
  const scenario = Object.values(scenarios.properties)[0]
  scenarios.properties = Object.fromEntries(SERVICES.map((s) => [s.name, {
    ...scenario,
    properties: {
      ...scenario.properties,
      env: { ...scenario.properties.env, description: `Script settings (loadtests/k6/${s.name}.js lists them)` }
    },
    description: `The ${s.name} scenario (loadtests/k6/${s.name}.js)`
  }]))
  return json(schema)
}

export const testRuns = (text) => block(text, 'services',
  [`{{- $services := list ${SERVICES.map((s) => inline(s.name)).join(' ')} }}`], { open: '{{- /*', close: ' */}}' })

const K6_NOTE = '// Generated by npm run generate from services/list.js: edit that, not this. The k6 scripts import'
export const k6Services = () => `${K6_NOTE}
// it (a TestRun has only the files of this folder).
export const SERVICES = [${SERVICES.map((s) => `'${s.name}'`).join(', ')}]
// npm start's ports: a script's default BASE_URL
export const PORTS = { ${SERVICES.map((s) => `${s.name}: ${s.port}`).join(', ')} }
`

// Values files that set every service alike: the service holding the YAML anchor is written by
// hand, every other one refers to it.
function others (text, anchor) {
  const holder = new RegExp(`^([a-z0-9]+): &${anchor}$`, 'm').exec(text)?.[1]
  if (!holder) throw new Error(`no service holds the anchor &${anchor}`)
  return SERVICES.filter((s) => s.name !== holder)
}
export const devValues = (text) => block(text, 'services', others(text, 'dev').flatMap((s) => [
  `${s.name}:`,
  '  <<: *dev',
  '  seed:',
  ...(s.data ? ['    enabled: true', `    scaleOption: ${s.data.option}`, '    scale: 1000'] : ['    enabled: false'])
]))
export const aliasValues = (anchor) => (text) =>
  block(text, 'services', others(text, anchor).map((s) => `${s.name}: *${anchor}`))

// A scenario per service (loadtests/k6/<name>.js), all in one k6 process.
export const k6Suite = (text) =>
  block(text, 'scenarios', SERVICES.map((s) => `export { ${s.name} } from './${s.name}.js'`), { open: '//' })

// The scenarios of the load tests, one per service (each defined above the block, by hand).
export const k6Scenarios = (text) =>
  block(text, 'scenarios', [`const SCENARIOS = { ${SERVICES.map((s) => s.name).join(', ')} }`], { open: '//' })

export const readme = (text) => block(text, 'services', [
  '| service | what | port under `npm start` |',
  '| --- | --- | --- |',
  ...SERVICES.map((s) => `| \`${s.name}\` | ${s.summary} | ${s.port} |`)
], { open: '<!--', close: ' -->' })

// What the helm-unittest suites expect from the list: every scenario in the run's SCENARIOS, one
// Ingress path per route.
export const testRunsTest = (text) => block(text, 'scenarios', [
  `content: { name: SCENARIOS, value: "${SERVICES.map((s) => s.name).join(',')}" }`
])
export const routingTest = (text) => block(text, 'route count', [
  `- lengthEqual: { path: "spec.rules[0].http.paths", count: ${SERVICES.flatMap((s) => s.routes).length} }`
])
