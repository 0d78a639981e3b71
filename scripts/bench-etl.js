// `npm run bench:etl`: a service's generator and loader at full scale, each as its own process
// (`<service> generate`, `<service> load`), timed, with its peak memory (VmHWM), against the targets:
//   product  the Atelier set (1,000,011 products, 26.8M rows, 2.2 GB) loaded in ≤ 120 s, ≤ 256 MB RSS
//   menu     10M menus generated and loaded in ≤ 180 s, in constant memory
//   profile  10M restaurants, in constant memory
//   npm run bench:etl [-- --service product|profile|menu] [--size N] [--regenerate]
// The CSVs are generated once into .data/<service>-<N>/ and reused (--regenerate: again, timed). The
// PostgreSQL is set up for bulk loads: wal_level=minimal, so a COPY into a table created in its own
// transaction writes no WAL; fsync stays on.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { fileURLToPath } from 'node:url'
import { startPostgres } from '@suite/kit/testing'

const SERVICES = {
  product: { count: 'products', full: 1_000_011, targets: { load: 120 }, memoryMb: 256 },
  menu: { count: 'menus', full: 10_000_000, targets: { total: 180 }, memoryMb: 256 },
  profile: { count: 'restaurants', full: 10_000_000, targets: {}, memoryMb: 256 }
}
const { values: opts } = parseArgs({
  options: { service: { type: 'string', default: 'product' }, size: { type: 'string' }, regenerate: { type: 'boolean', default: false } }
})
const spec = SERVICES[opts.service]
if (!spec) throw new Error(`--service must be one of ${Object.keys(SERVICES).join(', ')}`)
const size = Number(opts.size ?? spec.full)
const root = fileURLToPath(new URL('..', import.meta.url))
const cli = `${root}services/${opts.service}/src/cli.js`
const dir = `${root}.data/${opts.service}-${size}`
const say = (m) => process.stderr.write(`bench:etl ${opts.service}: ${m}\n`)
const n = (x) => x.toLocaleString('en-US')

/** Runs `node cli ...args`; resolves to { seconds, peakMb } (peak resident set, sampled from /proc). */
async function timed (args, env = {}) {
  const t0 = Date.now()
  const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'inherit', 'inherit'] })
  let peakKb = 0
  const sample = setInterval(() => {
    try {
      peakKb = Math.max(peakKb, Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0))
    } catch {}
  }, 100)
  const code = await new Promise((resolve) => child.on('exit', resolve))
  clearInterval(sample)
  if (code !== 0) throw new Error(`${args[0]} exited with ${code}`)
  return { seconds: (Date.now() - t0) / 1000, peakMb: peakKb / 1024 }
}

const manifestFile = `${dir}/manifest.json`
let generated = null
if (opts.regenerate || !existsSync(manifestFile) || JSON.parse(readFileSync(manifestFile, 'utf8'))[spec.count] !== size) {
  await rm(dir, { recursive: true, force: true })
  say(`generating ${n(size)} ${spec.count} into ${dir}`)
  generated = await timed(['generate', '--out', dir, `--${spec.count}`, String(size)])
}
const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'))

const pgServer = await startPostgres({
  settings: {
    wal_level: 'minimal',
    max_wal_senders: 0,
    shared_buffers: '1GB',
    maintenance_work_mem: '1GB',
    max_parallel_maintenance_workers: 2,
    max_wal_size: '16GB',
    checkpoint_timeout: '30min'
  }
})
try {
  const url = await pgServer.createDatabase('etl')
  say('loading')
  const loaded = await timed(['load', '--dir', dir], { DATABASE_URL: url })
  const rows = Object.values(manifest.files).reduce((a, f) => a + f.rows, 0)
  const bytes = Object.keys(manifest.files).reduce((a, f) => a + statSync(`${dir}/${f}`).size, 0)
  console.log(`\n${n(size)} ${spec.count}: ${n(rows)} rows, ${(bytes / 1e9).toFixed(2)} GB of CSV\n`)
  console.log('| step | time | rows/s | MB/s | peak RSS |')
  console.log('| --- | ---: | ---: | ---: | ---: |')
  const line = (step, r) => console.log(`| ${step} | ${r.seconds.toFixed(1)} s | ${n(Math.round(rows / r.seconds))} | ${(bytes / 1e6 / r.seconds).toFixed(0)} | ${r.peakMb.toFixed(0)} MB |`)
  if (generated) line('generate', generated)
  else console.log('| generate | (reused; --regenerate to time it) | | | |')
  line('load', loaded)
  if (size !== spec.full) process.exit(0)
  const checks = [[`peak RSS ≤ ${spec.memoryMb} MB`, Math.max(loaded.peakMb, generated?.peakMb ?? 0) <= spec.memoryMb]]
  if (spec.targets.load) checks.push([`load ≤ ${spec.targets.load} s`, loaded.seconds <= spec.targets.load])
  if (spec.targets.total) {
    checks.push(generated
      ? [`generate + load ≤ ${spec.targets.total} s (${(generated.seconds + loaded.seconds).toFixed(1)} s)`, generated.seconds + loaded.seconds <= spec.targets.total]
      : [`generate + load ≤ ${spec.targets.total} s: run with --regenerate to time both`, false])
  }
  console.log('\n| target | met |\n| --- | --- |')
  for (const [name, met] of checks) console.log(`| ${name} | ${met ? 'yes' : 'NO'} |`)
} finally {
  await pgServer.stop()
}
