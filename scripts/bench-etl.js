// `npm run bench:etl`: a service's data commands at full scale, each as its own process, timed, with
// its peak memory (VmHWM), against the targets:
//   product  the Atelier set (1,000,011 products, 26.8M rows, 2.2 GB) loaded in ≤ 120 s, ≤ 256 MB RSS
//            (`generate` into files, then `load`: the loader is what is timed)
//   menu     10M menus generated and loaded in ≤ 180 s, in constant memory (`seed`: generated straight
//            into PostgreSQL; --files also times the path through 12.8 GB of CSV, generate + load)
//   profile  10M restaurants, in constant memory (generate + load)
//   npm run bench:etl [-- --service product|profile|menu] [--size N] [--regenerate] [--files] [--streams K]
// (--streams: the seed's COPY connections, default one per CPU; 1 shows what parallel parsing gains)
// The CSVs are generated once into .data/<service>-<N>/ and reused (--regenerate: again, timed). The
// PostgreSQL is set up for bulk loads: wal_level=minimal, so a COPY into a table created in its own
// transaction writes no WAL; fsync stays on.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { fileURLToPath } from 'node:url'
import { startPostgres, watchMemory } from '@suite/kit/testing'

const SERVICES = {
  product: { count: 'products', full: 1_000_011, targets: { load: 120 }, memoryMb: 256 },
  menu: { count: 'menus', full: 10_000_000, seed: true, targets: { seed: 180 }, memoryMb: 256 },
  profile: { count: 'restaurants', full: 10_000_000, targets: {}, memoryMb: 256 }
}
const { values: opts } = parseArgs({
  options: { service: { type: 'string', default: 'product' }, size: { type: 'string' }, regenerate: { type: 'boolean', default: false }, files: { type: 'boolean', default: false }, streams: { type: 'string' } }
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
  const memory = watchMemory(child.pid)
  const code = await new Promise((resolve) => child.on('exit', resolve))
  const peakMb = memory.stop()
  if (code !== 0) throw new Error(`${args[0]} exited with ${code}`)
  return { seconds: (Date.now() - t0) / 1000, peakMb }
}

const viaFiles = !spec.seed || opts.files
let generated = null
let manifest = null
if (viaFiles) {
  const manifestFile = `${dir}/manifest.json`
  if (opts.regenerate || !existsSync(manifestFile) || JSON.parse(readFileSync(manifestFile, 'utf8'))[spec.count] !== size) {
    await rm(dir, { recursive: true, force: true })
    say(`generating ${n(size)} ${spec.count} into ${dir}`)
    generated = await timed(['generate', '--out', dir, `--${spec.count}`, String(size)])
  }
  manifest = JSON.parse(readFileSync(manifestFile, 'utf8'))
}

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
  const steps = [] // [name, { seconds, peakMb }, rows, bytes]
  if (spec.seed) {
    say('seeding: generating straight into PostgreSQL')
    const streams = opts.streams ? ['--streams', opts.streams] : []
    const seeded = await timed(['seed', `--${spec.count}`, String(size), ...streams], { DATABASE_URL: await pgServer.createDatabase('seed') })
    steps.push([`seed (generate straight into PostgreSQL${opts.streams ? `, ${opts.streams} streams` : ''})`, seeded, size, null])
  }
  let loaded = null
  if (viaFiles) {
    say('loading')
    loaded = await timed(['load', '--dir', dir], { DATABASE_URL: await pgServer.createDatabase('etl') })
    const rows = Object.values(manifest.files).reduce((a, f) => a + f.rows, 0)
    const bytes = Object.keys(manifest.files).reduce((a, f) => a + statSync(`${dir}/${f}`).size, 0)
    console.log(`\n${n(size)} ${spec.count} as files: ${n(rows)} rows, ${(bytes / 1e9).toFixed(2)} GB of CSV`)
    steps.push(generated ? ['generate (CSV files)', generated, rows, bytes] : ['generate (CSV files): reused; --regenerate to time it'])
    steps.push(['load (the CSV files)', loaded, rows, bytes])
  }
  console.log(`\n${n(size)} ${spec.count}\n\n| step | time | rows/s | MB/s | peak RSS |\n| --- | ---: | ---: | ---: | ---: |`)
  for (const [step, r, rows, bytes] of steps) {
    console.log(r
      ? `| ${step} | ${r.seconds.toFixed(1)} s | ${n(Math.round(rows / r.seconds))} | ${bytes ? (bytes / 1e6 / r.seconds).toFixed(0) : ''} | ${r.peakMb.toFixed(0)} MB |`
      : `| ${step} | | | | |`)
  }
  // The targets are for the full set only. (No process.exit here: the finally must stop PostgreSQL.)
  if (size === spec.full) {
    const timedSteps = steps.filter(([, r]) => r)
    const checks = [[`peak RSS ≤ ${spec.memoryMb} MB, every step`, timedSteps.every(([, r]) => r.peakMb <= spec.memoryMb)]]
    if (spec.targets.load) checks.push([`load ≤ ${spec.targets.load} s`, loaded.seconds <= spec.targets.load])
    if (spec.targets.seed) checks.push([`generated and loaded (seed) ≤ ${spec.targets.seed} s`, steps[0][1].seconds <= spec.targets.seed])
    console.log('\n| target | met |\n| --- | --- |')
    for (const [name, met] of checks) console.log(`| ${name} | ${met ? 'yes' : 'NO'} |`)
  }
} finally {
  await pgServer.stop()
}
