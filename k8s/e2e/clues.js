// What the pods logged while a phase failed requests, printed beside its row: the server pods' warnings
// and errors, and the database instances', counted by message. Pods gone since (an old ReplicaSet's)
// say nothing; the load's own failures are in the row.
import { kubectl } from './lib.js'
import { DATABASE, DATA_NS, NS } from './context.js'

const logs = (ns, selector, since) => kubectl([
  'logs', '-n', ns, '-l', selector, '--since', since, '--prefix', '--all-containers', '--max-log-requests', '40'
], { ok: true }).stdout

/** The JSON lines of `text` (kubectl's --prefix) that `pick(entry, pod)` names, counted by that name. */
function counted (text, pick) {
  const counts = new Map()
  for (const line of text.split('\n')) {
    const m = /^\[pod\/([^/\]]+)\/[^\]]+\] (\{.*)$/.exec(line)
    if (!m) continue
    let entry
    try { entry = JSON.parse(m[2]) } catch { continue }
    const what = pick(entry, m[1])
    if (what) counts.set(what, (counts.get(what) ?? 0) + 1)
  }
  return [...counts].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([what, n]) => `  ${n} × ${what}`)
}

const short = (text) => String(text).slice(0, 140)
const podOf = (pod) => pod.replace(/-[a-z0-9]+-[a-z0-9]+$/, '') // its Deployment's name

/** Prints what the pods logged over the last `seconds`, for the phase `name`. */
export function printClues (name, seconds) {
  try {
    const since = `${Math.ceil(seconds)}s`
    const server = counted(logs(NS, 'app.kubernetes.io/component=server', since), (e, pod) =>
      e.level >= 40 && `${podOf(pod)}: ${e.msg}${e.err ? ` (${short(e.err)})` : ''}`)
    const database = DATABASE !== 'cloudnative-pg'
      ? []
      : counted(logs(DATA_NS, 'cnpg.io/cluster', since), (e, pod) => {
          const severity = e.record?.error_severity ?? ''
          return /ERROR|FATAL|PANIC|WARNING/.test(severity) && `${pod}: ${severity} ${short(e.record.message)}`
        })
    const lines = [...server, ...database]
    console.error(`${name}: warnings and errors the pods logged over its ${since}:\n${lines.join('\n') || '  none'}`)
  } catch (err) {
    console.error(`${name}: the pods' logs could not be read (${err.message})`)
  }
}
