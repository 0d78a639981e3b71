// What Grafana does with a dashboard's PromQL before it reaches Prometheus, for testing dashboards
// against a real one: the panels' targets, the template variables' queries, and the substitution
// of $variables and of the built-in intervals.

/** Every PromQL target of a dashboard: [{ panel, refId, expr, instant }], rows' nested panels too. */
export function targets (dashboard) {
  const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])])
  return panels.filter((p) => p.type !== 'row').flatMap((p) => (p.targets ?? []).map((t) => ({
    panel: p.title, refId: t.refId, expr: t.expr, instant: t.instant === true
  })))
}

/** The query variables, in order (a later one may use an earlier one). */
export function queryVariables (dashboard) {
  return dashboard.templating.list.filter((v) => v.type === 'query').map((v) => ({
    name: v.name, query: typeof v.query === 'string' ? v.query : v.query.query, multi: v.multi || v.includeAll
  }))
}

const duration = (ms) => (ms % 1000 ? `${ms}ms` : `${ms / 1000}s`)

/**
 * Grafana's built-in intervals for a time range and the data source's scrape interval:
 * $__interval = range / max data points, never below the scrape interval (the Prometheus data
 * source's "min interval"); $__rate_interval = max($__interval + scrape, 4 × scrape), so a rate()
 * always spans at least four scrapes.
 */
export function builtins ({ rangeMs, scrapeMs, maxDataPoints = 1000 }) {
  const interval = Math.max(Math.ceil(rangeMs / maxDataPoints), scrapeMs)
  return {
    __interval: duration(interval),
    __interval_ms: String(interval),
    __rate_interval: duration(Math.max(interval + scrapeMs, 4 * scrapeMs)),
    __range: duration(Math.round(rangeMs / 1000) * 1000),
    __range_s: String(Math.round(rangeMs / 1000)),
    __range_ms: String(rangeMs),
    intervalMs: interval
  }
}

// The Prometheus data source escapes each value of a multi-value variable for a regex matcher.
const regexEscape = (s) => s.replace(/[\\^$*+?.()|{}[\]]/g, '\\\\$&')

/**
 * Replaces $name, ${name}, ${name:format} and [[name]] in `expr` as Grafana's Prometheus data
 * source does: a multi-value or "All" variable becomes (a|b|c) of its escaped values, a single
 * value stays as it is. An unknown variable throws: the dashboard refers to what it does not define.
 */
export function interpolate (expr, variables) {
  return expr.replace(/\$(\w+)|\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]/g, (all, a, b, c) => {
    const name = a ?? b ?? c
    if (!(name in variables)) throw new Error(`unknown variable $${name} in ${expr}`)
    const v = variables[name]
    if (!Array.isArray(v)) return v
    return v.length === 1 ? regexEscape(v[0]) : `(${v.map(regexEscape).join('|')})`
  })
}

/**
 * The values of a variable's query, as Grafana's Prometheus data source gets them:
 * label_values(label), label_values(selector, label), query_result(expr).
 * `prom` is startPrometheus()'s client; start and end are Unix seconds.
 */
export async function variableValues (prom, query, { start, end }) {
  let m = /^\s*label_values\(\s*(\w+)\s*\)\s*$/.exec(query)
  if (m) return prom.api(`label/${m[1]}/values`, { start, end })
  m = /^\s*label_values\(\s*(.+)\s*,\s*(\w+)\s*\)\s*$/.exec(query)
  if (m) {
    const series = await prom.api('series', { 'match[]': m[1], start, end })
    return [...new Set(series.map((s) => s[m[2]]).filter((v) => v !== undefined))].sort()
  }
  m = /^\s*query_result\((.+)\)\s*$/.exec(query)
  if (m) return (await prom.api('query', { query: m[1], time: end })).result.map((r) => JSON.stringify(r.metric))
  throw new Error(`not a Prometheus variable query this test knows: ${query}`)
}
