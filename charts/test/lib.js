// Helpers of the chart tests: the tools, a renderable copy of the umbrella, helm template, kubeconform.
// Offline, Helm cannot fetch the Bitnami charts (OCI) and refuses to render a chart whose listed
// dependencies are missing, even disabled ones. So the umbrella is rendered from a temporary copy
// whose Chart.yaml lists only the local charts (service, once per service; loadtest): every template of ours renders
// for real; what the copy lacks is the Bitnami charts' own objects, which kubeconform cannot check
// offline anyway. bitnami.test.js renders the real thing once `helm dependency build` has fetched them.
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments, parseDocument } from 'yaml'
import { NAMES } from '../../services/list.js'

export const root = fileURLToPath(new URL('../..', import.meta.url))
export const charts = join(root, 'charts')
/**
 * The offline Kubernetes schemas and CRDs: SUITE_K8S_DATA when set, else `../shared/k8s` beside this
 * checkout, else beside the checkout it was cloned from (a clone in a temporary folder).
 */
export const shared = findK8sData()
function findK8sData () {
  if (process.env.SUITE_K8S_DATA) return process.env.SUITE_K8S_DATA
  const beside = (dir) => join(dir, '..', 'shared', 'k8s')
  if (existsSync(beside(root))) return beside(root)
  const origin = spawnSync('git', ['config', '--get', 'remote.origin.url'], { cwd: root, encoding: 'utf8' })
    .stdout?.trim()
  if (origin && existsSync(origin) && existsSync(beside(origin))) return beside(origin)
  return beside(root) // missing: requireTools says so, naming this path
}
export const K8S_VERSION = '1.34.4'
export const SERVICES = NAMES // services/list.js
/** Every optional API the charts use, as a cluster with the add-ons would serve them. */
const API_VERSIONS = [
  'monitoring.coreos.com/v1/ServiceMonitor',
  'monitoring.coreos.com/v1/PrometheusRule',
  'gateway.networking.k8s.io/v1/HTTPRoute',
  'k6.io/v1alpha1/TestRun'
]

/** Runs a program; throws with its output when it cannot be started. */
export function run (cmd, args, { input, cwd = root } = {}) {
  const r = spawnSync(cmd, args, { cwd, input, encoding: 'utf8', maxBuffer: 64 << 20 })
  if (r.error) {
    const why = r.error.code === 'ENOENT'
      ? 'not found on PATH (node scripts/provision.js installs it)'
      : r.error.message
    throw new Error(`${cmd}: ${why}`)
  }
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** Fails loudly, never skips, when a tool or the offline schemas are missing. */
export function requireTools () {
  const tools = [['helm', ['version', '--short']], ['kubeconform', ['-v']], ['helm-unittest', ['--help']]]
  for (const [tool, args] of tools) {
    const r = run(tool, args)
    if (r.code !== 0) throw new Error(`${tool} does not run: ${r.stderr}`)
  }
  const schemas = join(shared, 'schemas', `v${K8S_VERSION}-standalone-strict`)
  if (!existsSync(schemas)) {
    throw new Error(`offline Kubernetes schemas missing: ${schemas} ` +
      '(../shared/k8s beside the repo, or set SUITE_K8S_DATA)')
  }
}

const umbrellaDirs = new Map()
/** A renderable copy of charts/suite (see above) of `from` (a charts/ folder), made once per test process. */
export function umbrella (from = charts) {
  if (umbrellaDirs.has(from)) return umbrellaDirs.get(from)
  const tmp = mkdtempSync(join(tmpdir(), 'suite-charts-'))
  process.on('exit', () => rmSync(tmp, { recursive: true, force: true }))
  const dir = join(tmp, 'suite')
  // charts/suite/charts (what `helm dependency build` fetched) stays out: the local charts go in as folders.
  cpSync(join(from, 'suite'), dir, { recursive: true, filter: (src) => src !== join(from, 'suite', 'charts') })
  for (const local of ['service', 'loadtest']) {
    if (!existsSync(join(from, local, 'Chart.yaml'))) {
      throw new Error(`charts/${local} is missing: charts/suite depends on it`)
    }
    // dereference: charts/loadtest/scripts is a link to loadtests/k6
    cpSync(join(from, local), join(dir, 'charts', local), { recursive: true, dereference: true })
  }
  const chart = parseDocument(readFileSync(join(dir, 'Chart.yaml'), 'utf8'))
  chart.set('dependencies', chart.get('dependencies').items.filter((d) => !d.get('repository').startsWith('oci://')))
  writeFileSync(join(dir, 'Chart.yaml'), chart.toString())
  umbrellaDirs.set(from, dir)
  return dir
}

/**
 * Fills `dir`/charts (a copy of charts/suite) with every dependency, as `helm dependency build` leaves
 * it, without the internet: the local charts of `from` (a checkout's charts/) packaged, the Bitnami
 * archives from `shared` (../shared/k8s/charts, the exact versions Chart.yaml pins). Returns the
 * archives' names.
 */
export function fillDependencies (dir, from = charts) {
  mkdirSync(join(dir, 'charts'), { recursive: true })
  for (const local of ['service', 'loadtest']) {
    const r = run('helm', ['package', join(from, local), '-d', join(dir, 'charts')])
    if (r.code !== 0) throw new Error(`helm package charts/${local}: ${r.stderr}`)
  }
  const chart = parse(readFileSync(join(dir, 'Chart.yaml'), 'utf8'))[0]
  for (const dep of chart.dependencies.filter((d) => d.repository.startsWith('oci://'))) {
    const archive = join(shared, 'charts', `${dep.name}-${dep.version}.tgz`)
    if (!existsSync(archive)) {
      throw new Error(`${archive} missing: the offline archive of ${dep.name} ${dep.version} (../shared/k8s/charts)`)
    }
    cpSync(archive, join(dir, 'charts', `${dep.name}-${dep.version}.tgz`))
  }
  return readdirSync(join(dir, 'charts')).filter((f) => f.endsWith('.tgz'))
}

let fullDir
/**
 * A copy of charts/suite with every dependency in its charts/ folder (fillDependencies): renders the
 * umbrella as a user installs it, Bitnami's objects too.
 */
export function umbrellaWithDependencies () {
  if (fullDir) return fullDir
  const tmp = mkdtempSync(join(tmpdir(), 'suite-charts-full-'))
  process.on('exit', () => rmSync(tmp, { recursive: true, force: true }))
  const dir = join(tmp, 'suite')
  cpSync(join(charts, 'suite'), dir, { recursive: true, filter: (src) => src !== join(charts, 'suite', 'charts') })
  fillDependencies(dir)
  fullDir = dir
  return dir
}

/** helm template of a chart; throws with helm's message when it fails. */
export function template (chart, args = [], { apiVersions = API_VERSIONS } = {}) {
  const r = run('helm', [
    'template', 'r', chart, '--namespace', 'suite', '--kube-version', K8S_VERSION,
    ...apiVersions.flatMap((a) => ['--api-versions', a]), ...args
  ])
  if (r.code !== 0) throw new Error(`helm template ${args.join(' ')}: ${r.stderr}`)
  return r.stdout
}

/** The objects of a multi-document YAML stream. */
export function parse (yaml) {
  // merge: YAML 1.1's `<<: *anchor`, which Helm and skaffold read (values files share blocks with it).
  return parseAllDocuments(yaml, { merge: true }).map((d) => d.toJS({ maxAliasCount: -1 })).filter((o) => o != null)
}

/**
 * kubeconform -strict against the offline schemas (`shared`); returns the parsed summary.
 * ignoreMissingSchemas: for third-party charts whose CRD kinds (Prometheus, Alertmanager…) have no
 * offline schema; every kind that has one is still validated.
 */
export function kubeconform (yaml, { ignoreMissingSchemas = false } = {}) {
  const s = join(shared, 'schemas')
  const r = run('kubeconform', [
    '-strict', '-summary', '-output', 'json', '-kubernetes-version', K8S_VERSION,
    ...(ignoreMissingSchemas ? ['-ignore-missing-schemas'] : []),
    '-schema-location',
    `${s}/{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json`,
    '-schema-location', `${s}/crds-strict/{{ .ResourceKind }}{{ .KindSuffix }}.json`, '-'
  ], { input: yaml })
  const out = JSON.parse(r.stdout)
  return {
    code: r.code,
    ...out.summary,
    problems: (out.resources ?? [])
      .filter((x) => x.status !== 'statusValid')
      .map((x) => `${x.kind}/${x.name}: ${x.msg}`)
  }
}

/** The pod specs of an object (Deployment, StatefulSet, Job, CronJob, Pod), or none. */
export function podSpec (o) {
  if (o.kind === 'Pod') return o.spec
  if (o.kind === 'CronJob') return o.spec.jobTemplate.spec.template.spec
  return o.spec?.template?.spec
}

/** Does a label selector (matchLabels) select these labels? */
export function selects (selector, labels = {}) {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v)
}
