// What the pods logged while a phase failed requests, printed beside its row: the server pods' warnings
// and errors, and the database instances', counted by message. The server pods of the phase's start are
// followed while it runs, so a pod a rollout replaced still tells what it answered before it went; the
// load's own failures are in the row.
import { spawn } from 'node:child_process'
import { kubectl } from './lib.js'
import { DATABASE, DATA_NS, NS } from './context.js'

const SERVER = 'app.kubernetes.io/component=server'
const MAX_FOLLOWED = 8 << 20 // bytes kept of the followed logs; a phase logs far less

const logs = (ns, selector, since) => kubectl([
  'logs', '-n', ns, '-l', selector, '--since', since, '--prefix', '--all-containers', '--max-log-requests', '40'
], { ok: true }).stdout

/** Follows the server pods there are now until stop(), which returns what they logged meanwhile. */
export function followServerLogs () {
  const child = spawn('kubectl', [
    'logs', '-n', NS, '-l', SERVER, '-f', '--since', '1s', '--prefix', '--all-containers', '--max-log-requests', '40'
  ], { stdio: ['ignore', 'pipe', 'ignore'] })
  let text = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (d) => { if (text.length < MAX_FOLLOWED) text += d })
  child.on('error', () => {}) // no kubectl: the current pods' logs alone, as before
  return { stop: () => { child.kill(); return text } }
}

// A line as kubectl's --prefix gives it: [pod/<pod>/<container>] <what it logged>.
const LINE = /^\[pod\/([^/\]]+)\/[^\]]+\] (.*)$/
const podOfLine = (line) => LINE.exec(line)?.[1]

/** The JSON lines of `text` (kubectl's --prefix) that `pick(entry, pod)` names, counted by that name. */
function counted (text, pick) {
  const counts = new Map()
  for (const line of text.split('\n')) {
    const m = LINE.exec(line)
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

/**
 * Prints what the pods logged over the last `seconds`, for the phase `name`: `followed`, the logs of
 * the pods followed since its start (followServerLogs), and the others' (the pods it started).
 */
export function printClues (name, seconds, followed = '') {
  try {
    const since = `${Math.ceil(seconds)}s`
    const seen = new Set(followed.split('\n').map(podOfLine))
    const started = logs(NS, SERVER, since).split('\n').filter((l) => !seen.has(podOfLine(l)))
    const now = new Set(kubectl(['get', 'pods', '-n', NS, '-l', SERVER, '-o', 'name']).stdout.split('\n')
      .map((n) => n.replace('pod/', '')))
    const server = counted(`${followed}\n${started.join('\n')}`, (e, pod) => e.level >= 40 &&
      `${podOf(pod)}${now.has(pod) ? '' : ' (a pod since gone)'}: ${e.msg}${e.err ? ` (${short(e.err)})` : ''}`)
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
