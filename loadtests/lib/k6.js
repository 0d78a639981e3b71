// Runs k6 as a child process and reads its end-of-test summary.
import { spawn } from 'node:child_process'
import { readFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const SCRIPTS = fileURLToPath(new URL('../k6/', import.meta.url))
export const scriptOf = (scenario) => resolve(SCRIPTS, `${scenario}.js`)

/**
 * `k6 run` of `script` with `env` (settings and K6_* options), `tags` (--tag) and `outputs` (-o).
 * `html`: a file for the web dashboard's self-contained report (no server is opened).
 * Resolves to { code, summary, output }; code 99 means thresholds were crossed, which is a
 * result, not a failure — any other non-zero code rejects.
 */
export async function runK6 ({ script, env = {}, tags = {}, outputs = [], html, k6 = process.env.K6 ?? 'k6' }) {
  const dir = await mkdtemp(join(tmpdir(), 'k6-summary-'))
  const summaryFile = join(dir, 'summary.json')
  const args = ['run', '--no-usage-report', '--quiet', '--no-color', '--summary-export', summaryFile]
  for (const o of outputs) args.push('-o', o)
  for (const [k, v] of Object.entries(tags)) args.push('--tag', `${k}=${v}`)
  args.push(script)
  const dashboard = html
    ? { K6_WEB_DASHBOARD: 'true', K6_WEB_DASHBOARD_PORT: '-1', K6_WEB_DASHBOARD_PERIOD: '1s', K6_WEB_DASHBOARD_EXPORT: html }
    : {}
  try {
    const child = spawn(k6, args, { env: { ...process.env, ...dashboard, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d) => { output += d })
    child.stderr.on('data', (d) => { output += d })
    const code = await new Promise((resolve, reject) => {
      child.on('error', (err) => reject(err.code === 'ENOENT' ? new Error(`${k6} not found: run bash scripts/tools.sh and put its directory on PATH`) : err))
      child.on('exit', (c, signal) => resolve(c ?? signal))
    })
    if (code !== 0 && code !== 99) throw new Error(`k6 exited with ${code}:\n${output}`)
    return { code, summary: JSON.parse(await readFile(summaryFile, 'utf8')), output }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** The figures of a summary: requests, RPS, p50/p95/p99 (ms), error rate, dropped iterations. */
export function figures (summary) {
  const m = summary.metrics
  const d = m.http_req_duration ?? {}
  return {
    requests: m.http_reqs?.count ?? 0,
    rps: m.http_reqs?.rate ?? 0,
    p50: d.med ?? NaN,
    p95: d['p(95)'] ?? NaN,
    p99: d['p(99)'] ?? NaN,
    // The legacy summary's Rate: `value` is the share of true samples (failed requests).
    errorRate: m.http_req_failed?.value ?? 0,
    iterations: m.iterations?.count ?? 0,
    dropped: m.dropped_iterations?.count ?? 0
  }
}
