// The suite's one version, package.json's "version", written everywhere a version is stated (the
// workspaces' manifests and lock entries, the charts' version and appVersion, the umbrella's
// dependencies), and the umbrella's Artifact Hub annotations from CHANGELOG.md's section of that
// version. `npm run release -- <version>` changes package.json and runs these.
import { NAMES } from '../../services/list.js'
import { block } from './blocks.js'

const WORKSPACES = ['kit', ...NAMES]
// Keep a Changelog's kinds of change, as Artifact Hub's `artifacthub.io/changes` names them.
const KINDS = {
  Added: 'added',
  Changed: 'changed',
  Deprecated: 'deprecated',
  Removed: 'removed',
  Fixed: 'fixed',
  Security: 'security'
}
export const LICENSE = 'Apache-2.0'

/** The suite's version, as this generate run sees package.json. */
export const version = (read) => JSON.parse(read('package.json')).version

const line = (text, key, value) => text.replace(new RegExp(`^${key}: .*$`, 'm'), `${key}: ${value}`)

/** A workspace's package.json: its version, and the kit's version range it depends on. */
export const workspaceManifest = (text, read) => {
  const v = version(read)
  return text
    .replace(/^ {2}"version": "[^"]*"/m, `  "version": "${v}"`)
    .replace(/"@suite\/kit": "[^"]*"/, `"@suite/kit": "^${v}"`)
}

/** package-lock.json: the root's and the workspaces' entries. */
export const lock = (text, read) => {
  const v = version(read)
  const l = JSON.parse(text)
  l.version = v
  l.packages[''].version = v
  for (const w of WORKSPACES) {
    const entry = l.packages[`services/${w}`]
    if (!entry) continue // a workspace npm install has not added yet: it takes the manifest's version
    entry.version = v
    if (entry.dependencies?.['@suite/kit']) entry.dependencies['@suite/kit'] = `^${v}`
  }
  return JSON.stringify(l, null, 2) + '\n'
}

/** charts/service/Chart.yaml: the chart and the services' images share the suite's version. */
export const serviceChart = (text, read) =>
  line(line(text, 'version', version(read)), 'appVersion', `"${version(read)}"`)

/** charts/loadtest/Chart.yaml: its version (its appVersion is k6's). */
export const loadtestChart = (text, read) => line(text, 'version', version(read))

/** The changes of one version's section of CHANGELOG.md: [{ kind, description }]; throws when there is no section. */
export function changes (changelog, v) {
  const start = changelog.search(new RegExp(`^## \\[${v.replaceAll('.', '\\.')}\\]`, 'm'))
  if (start < 0) throw new Error(`CHANGELOG.md has no section "## [${v}]"`)
  const section = changelog.slice(start).split(/^## /m)[1]
  const out = []
  let kind = null
  for (const l of section.split('\n')) {
    const heading = /^### (\w+)/.exec(l)
    if (heading) kind = KINDS[heading[1]] ?? null
    else if (kind && l.startsWith('- ')) out.push({ kind, description: l.slice(2).trim() })
    else if (kind && /^ {2}\S/.test(l) && out.length) out.at(-1).description += ` ${l.trim()}`
  }
  return out
}

/**
 * charts/suite/Chart.yaml: version, appVersion, the versions of the dependencies in this repository,
 * and the annotations Artifact Hub reads (changes, images, license).
 */
export const suiteChart = (text, read) => {
  const v = version(read)
  let t = serviceChart(text, read)
  // The load test chart is released with the suite (the services' entries: services.js chartYaml).
  t = t.replace(/(- name: loadtest\n {4}version: )\S+/, `$1${v}`)
  const quote = (s) => JSON.stringify(s)
  return block(t, 'annotations', [
    `artifacthub.io/license: ${LICENSE}`,
    'artifacthub.io/changes: |',
    ...changes(read('CHANGELOG.md'), v).flatMap((c) => [
      `  - kind: ${c.kind}`,
      `    description: ${quote(c.description)}`
    ]),
    'artifacthub.io/images: |',
    ...NAMES.flatMap((n) => [`  - name: ${n}`, `    image: suite-${n}:${v}`])
  ], { from: 'package.json and CHANGELOG.md' })
}

/** The generated files of this module, for generate.js's FILES. */
export const VERSION_FILES = {
  'package-lock.json': lock,
  'charts/service/Chart.yaml': serviceChart,
  'charts/loadtest/Chart.yaml': loadtestChart,
  ...Object.fromEntries(WORKSPACES.map((w) => [`services/${w}/package.json`, workspaceManifest]))
}
