// `npm run bench:start`: the memory `npm start` takes once every service is ready (the embedded
// PostgreSQL, the sample data, every service with its workers): RSS and PSS of the launcher (which
// holds PGlite and runs the services) and of any process it started, and their sums. PSS counts a
// page shared by several processes (Node's own code) once in all; RSS counts it in each. Then it
// stops the suite.
//   npm run bench:start [-- --sample-size N] [--workers N]
import { spawn } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePortBlock, childrenOf } from '@suite/kit/testing'
import { commandLine, wholeNumber } from '@suite/kit/args'
import { PORT_OFFSETS } from '../services/list.js'
import { launcherCommand } from './start/command.js'

const values = commandLine('bench:start', {
  usage: 'npm run bench:start [-- --sample-size N] [--workers N]',
  summary: 'The memory (RSS and PSS) npm start takes once every service is ready, per process and in all.',
  options: {
    'sample-size': {
      type: 'string',
      value: 'N',
      default: '2000',
      help: 'products, restaurants and menus generated (npm start\'s SAMPLE_SIZE)'
    },
    workers: { type: 'string', value: 'N', help: 'WORKERS of each service (default: npm start\'s)' }
  },
  examples: ['npm run bench:start', 'npm run bench:start -- --workers 1']
}, (v) => {
  wholeNumber(v, 'sample-size', { min: 1 })
  if (v.workers !== undefined) wholeNumber(v, 'workers', { min: 1 })
  return v
})

const kb = (pid, file, field) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/${file}`, 'utf8'))?.[1] ?? 0)
const mb = (k) => (k / 1024).toFixed(0)
// Any process the launcher left running (it starts none once ready): by its command line.
const nameOf = (pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, 2).join(' ')

const port = await freePortBlock(PORT_OFFSETS)
const { DATABASE_URL, DATABASE_PASSWORD, REDIS_URL, ...env } = process.env
const [node, ...launcher] = launcherCommand()
const child = spawn(node, launcher, {
  env: {
    ...env,
    PORT: String(port),
    SAMPLE_SIZE: values['sample-size'],
    LOG_LEVEL: 'warn',
    ...(values.workers && { WORKERS: values.workers })
  },
  stdio: ['ignore', 'pipe', 'inherit']
})
let out = ''
child.stdout.on('data', (d) => { out += d })
const started = Date.now()
while (!out.includes('Ctrl-C stops')) {
  if (child.exitCode !== null) { console.error(out); process.exit(1) }
  await sleep(100)
}
const readyAfter = (Date.now() - started) / 1000
await sleep(2000) // what start-up allocated and let go is collected; ready means serving, not settled
const rows = [child.pid, ...childrenOf(child.pid)].map((pid) => ({
  process: pid === child.pid ? 'launcher (PGlite, the four services)' : nameOf(pid),
  rss: kb(pid, 'status', 'VmRSS'),
  pss: kb(pid, 'smaps_rollup', 'Pss'),
  threads: readdirSync(`/proc/${pid}/task`).length
}))
child.kill('SIGTERM')
await new Promise((resolve) => child.on('exit', resolve))

console.log(`\nnpm start, SAMPLE_SIZE ${values['sample-size']}, ` +
  `WORKERS ${values.workers ?? 'npm start\'s default'}: ready in ${readyAfter.toFixed(1)} s\n`)
console.log('| process | RSS MB | PSS MB | threads |\n| --- | ---: | ---: | ---: |')
for (const r of rows) console.log(`| ${r.process} | ${mb(r.rss)} | ${mb(r.pss)} | ${r.threads} |`)
const sum = (k) => mb(rows.reduce((s, r) => s + r[k], 0))
console.log(`| **all** | **${sum('rss')}** | **${sum('pss')}** | |`)
