// Reference text written from its one source: the settings tables from the config schemas (the kit's
// and each service's own), the charts' values tables from their `## @param` lines, and the service
// chart's `config` schema from the same settings. A description is written once, where the thing is.
import { parseDocument } from 'yaml'
import { baseSchema, COMPUTED_DEFAULTS } from '@suite/kit'
import { SERVICES } from '../../services/list.js'
import { json, markdownBlock } from './blocks.js'

// Each service's definition (its own settings in `config`), by path: the list names the services.
const definitions = Object.fromEntries(await Promise.all(SERVICES.map(async (s) =>
  [s.name, (await import(`../../services/${s.name}/src/service.js`)).default])))

/**
 * The settings the service chart sets itself (from its values), which its `config` value must not
 * take.
 */
export const CHART_OWNED_SETTINGS = [
  'HOST', 'PORT', 'WORKERS', 'DATABASE_URL', 'DATABASE_PASSWORD', 'REDIS_URL', 'REDIS_PASSWORD',
  'SHUTDOWN_DELAY_MS', 'SHUTDOWN_IDLE_MS', 'SHUTDOWN_GRACE_MS',
  // global.tracing
  'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_TRACES_SAMPLER', 'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_SERVICE_NAME', 'OTEL_RESOURCE_ATTRIBUTES'
]

const code = (v) => `\`${v}\``
const cell = (text) => String(text).replaceAll('|', '\\|').replaceAll('\n', ' ')

/** A settings table: each variable, its default, its description. */
function settingsTable (properties, required = []) {
  return [
    '| variable | default | meaning |',
    '| --- | --- | --- |',
    ...Object.entries(properties).map(([name, s]) => {
      const def = required.includes(name)
        ? 'required'
        : COMPUTED_DEFAULTS.includes(name) ? 'computed at start' : s.default === undefined ? 'unset' : code(s.default)
      return `| ${code(name)} | ${def} | ${cell(s.description ?? '')} |`
    })
  ]
}

const SETTINGS_FROM = 'services/kit/src/config/config.js'
/** services/README.md: the settings every service has. */
export const kitSettings = (text) =>
  markdownBlock(text, 'configuration', settingsTable(baseSchema.properties, baseSchema.required), SETTINGS_FROM)

/** services/<name>/README.md of a service with settings of its own. */
export const serviceSettings = (name) => (text) => markdownBlock(
  text,
  'configuration',
  settingsTable(definitions[name].config.properties, definitions[name].config.required),
  `services/${name}/src/service.js`
)
export const SERVICES_WITH_SETTINGS = SERVICES.filter((s) => definitions[s.name].config?.properties).map((s) => s.name)

/**
 * charts/service/values.schema.json's `config`: every setting the chart does not set itself, with its
 * type, bounds and description.
 */
export function chartConfigSchema (text) {
  const schema = JSON.parse(text)
  const settings = { ...baseSchema.properties }
  for (const s of SERVICES) Object.assign(settings, definitions[s.name].config?.properties)
  const own = Object.entries(settings).filter(([k]) => !CHART_OWNED_SETTINGS.includes(k))
  schema.properties.config.properties = Object.fromEntries(own.map(([k, s]) => {
    const { type, enum: values, minimum, maximum, pattern, description } = s
    const kept = { type, enum: values, minimum, maximum, pattern, description }
    return [k, Object.fromEntries(Object.entries(kept).filter(([, v]) => v !== undefined))]
  }))
  return json(schema)
}

/**
 * The values table of a chart from its values.yaml: `## @section Title` starts a group, `## @param key
 * description` (continued on the `##` lines right after it) documents a key, whose default is read
 * from the file itself.
 */
export function valuesTable (yamlText, heading = '####') {
  const values = parseDocument(yamlText, { merge: true }).toJS()
  const at = (path) => path.split('.').reduce((o, k) => (o === undefined || o === null ? undefined : o[k]), values)
  const out = []
  let param = null
  const flush = () => {
    if (!param) return
    const v = at(param.key)
    const shown = typeof v === 'string' && v !== '' ? v : JSON.stringify(v)
    const def = v === undefined ? '' : shown.length > 60 ? '(see values.yaml)' : code(shown)
    out.push(`| ${code(param.key)} | ${def} | ${cell(param.text.join(' '))} |`)
    param = null
  }
  for (const line of yamlText.split('\n')) {
    const m = /^\s*## @(section|param) (\S+)(?: (.*))?$/.exec(line)
    if (m?.[1] === 'section') {
      flush()
      const title = line.trim().slice('## @section '.length)
      out.push('', `${heading} ${title}`, '', '| value | default | meaning |', '| --- | --- | --- |')
    } else if (m?.[1] === 'param') {
      flush()
      param = { key: m[2], text: [m[3] ?? ''] }
      if (!out.length) out.push('| value | default | meaning |', '| --- | --- | --- |')
    } else if (param && /^\s*## /.test(line) && !/^\s*## @/.test(line)) {
      param.text.push(line.trim().slice(3))
    } else {
      flush()
    }
  }
  flush()
  while (out[0] === '') out.shift()
  return out
}

/** A chart README's values block, from `chart`/values.yaml (read(path): its text as this run makes it). */
export const chartValues = (name, chart, heading) => (text, read) =>
  markdownBlock(text, name, valuesTable(read(`${chart}/values.yaml`), heading), `${chart}/values.yaml`)
