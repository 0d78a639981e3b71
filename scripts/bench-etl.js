// `npm run bench:etl`: a service's data commands at full scale, each as its own process, timed, with
// its peak memory (VmHWM), against the targets:
//   product  the Atelier set (1,000,011 products, 26.8M rows, 2.2 GB) loaded in ≤ 120 s, the load
//            ≤ 128 MB RSS (every step ≤ 256 MB) (`generate` into files, then `load`: the loader is what is timed)
//   menu     10M menus generated and loaded in ≤ 180 s, in constant memory (`seed`: generated straight
//            into PostgreSQL; --files also times the path through CSV files, generate + load)
//   profile  10M restaurants, in constant memory (generate + load)
// A load is also measured against PostgreSQL's own COPY of the same rows (those the load loaded,
// exported from its tables) into the same tables, built the same way (created in their transaction,
// FREEZE, then the same keys, indexes and ANALYZE): a load at ≤ 1.25× of it.
//   npm run bench:etl [-- --service product|profile|menu] [--size N] [--regenerate] [--files] [--streams K]
// (--streams: the seed's COPY connections, default one per CPU; 1 shows what parallel parsing gains;
// `npm run bench:etl -- --help` for all of it)
// The CSVs are generated once into .data/<service>-<N>/ and reused (--regenerate: again, timed). The
// PostgreSQL is set up for bulk loads: wal_level=minimal, so a COPY into a table created in its own
// transaction writes no WAL; fsync stays on.
import { spawn } from 'node:child_process'
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { from as copyFrom, to as copyTo } from 'pg-copy-streams'
import { startPostgres, watchMemory } from '@suite/kit/testing'
import { buildIndexes } from '@suite/kit/etl'
import { imageNodeArgs } from './bench/harness.js'
import { commandLine, oneOf, wholeNumber } from '@suite/kit/args'

const OF_COPY = 1.25 // a load's time, at most, over PostgreSQL's own COPY of its rows
const SERVICES = {
  product: { count: 'products', full: 1_000_011, targets: { load: 120 }, memoryMb: 256, loadMemoryMb: 128 },
  menu: { count: 'menus', full: 10_000_000, seed: true, targets: { seed: 180 }, memoryMb: 256 },
  profile: { count: 'restaurants', full: 10_000_000, targets: {}, memoryMb: 256 }
}
const usage = {
  usage: 'npm run bench:etl -- [options]   (or node scripts/bench-etl.js [options])',
  summary: 'Times a service\'s data commands at full scale, each as its own process, with its peak memory, ' +
    'against the targets: the Atelier set (product) loaded in ≤ 120 s with ≤ 256 MB; ' +
    '10M menus generated and loaded (seed) in ≤ 180 s; 10M restaurants in constant memory. ' +
    'CSVs are generated once into .data/<service>-<N>/ and reused; ' +
    'PostgreSQL is set up for bulk loads (wal_level=minimal, fsync on).',
  options: {
    service: { type: 'string', value: 'NAME', default: 'product', help: Object.keys(SERVICES).join(', ') },
    size: {
      type: 'string',
      value: 'N',
      help: 'rows of the main table (default: the full scale; targets are checked only there)'
    },
    regenerate: { type: 'boolean', default: false, help: 'generate the CSVs again, timed' },
    files: { type: 'boolean', default: false, help: 'menu: also time the path through CSV files (generate + load)' },
    streams: { type: 'string', value: 'K', help: 'menu seed: COPY connections at once (default: one per CPU)' }
  },
  examples: [
    'npm run bench:etl',
    'npm run bench:etl -- --service menu',
    'npm run bench:etl -- --service menu --size 1000000 --streams 1'
  ]
}
const { opts, spec, size } = commandLine('bench:etl', usage, (opts) => {
  const spec = SERVICES[oneOf(opts, 'service', Object.keys(SERVICES))]
  if (opts.streams !== undefined) wholeNumber(opts, 'streams', { min: 1 })
  return { opts, spec, size: opts.size === undefined ? spec.full : wholeNumber(opts, 'size', { min: 1 }) }
})
const root = fileURLToPath(new URL('..', import.meta.url))
const cli = `${root}services/${opts.service}/src/cli.js`
const dir = `${root}.data/${opts.service}-${size}`
const say = (m) => process.stderr.write(`bench:etl ${opts.service}: ${m}\n`)
const n = (x) => x.toLocaleString('en-US')

/** Runs `fn(client)` on a connection to `url`. */
async function withClient (url, fn) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

/**
 * PostgreSQL's own COPY of the rows a load loaded into `loadedUrl`: exported to files (untimed), then
 * copied into a freshly migrated database's tables as the loader builds them — each created in the
 * transaction of its COPY (FREEZE; no WAL at wal_level=minimal), then the same keys and indexes and
 * ANALYZE (the loader's own buildIndexes). Resolves to { seconds, copy, indexes }.
 */
async function copyBaseline (loadedUrl) {
  const { tables } = await import(`${root}services/${opts.service}/etl/index.js`)
  const out = `${dir}/copy`
  mkdirSync(out, { recursive: true })
  const columns = (t) => [...Object.keys(t.columns), ...(t.rank ? [t.rank] : [])].join(', ')
  await withClient(loadedUrl, async (c) => {
    for (const t of tables) {
      await pipeline(c.query(copyTo(`COPY ${t.table} (${columns(t)}) TO STDOUT`)),
        createWriteStream(`${out}/${t.table}.tsv`))
    }
  })
  const url = await pgServer.createDatabase('copy')
  await timed(['migrate'], { DATABASE_URL: url })
  return withClient(url, async (c) => {
    const t0 = Date.now()
    for (const t of tables) {
      await c.query('BEGIN')
      await c.query(`CREATE TABLE ${t.table}_load (LIKE ${t.table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS ` +
        'INCLUDING COMPRESSION INCLUDING STORAGE)')
      await pipeline(createReadStream(`${out}/${t.table}.tsv`, { highWaterMark: 1 << 20 }),
        c.query(copyFrom(`COPY ${t.table}_load (${columns(t)}) FROM STDIN WITH (FREEZE)`)))
      await c.query('COMMIT')
    }
    const t1 = Date.now()
    for (const t of tables) await buildIndexes(c, t.table)
    const t2 = Date.now()
    await rm(out, { recursive: true, force: true })
    return { seconds: (t2 - t0) / 1000, copy: (t1 - t0) / 1000, indexes: (t2 - t1) / 1000 }
  })
}

/**
 * Runs `node cli ...args` as in its pod (the image's node flags); resolves to { seconds, peakMb } (peak
 * resident set, sampled from /proc).
 */
async function timed (args, env = {}) {
  const t0 = Date.now()
  const child = spawn(process.execPath, [...imageNodeArgs(root), cli, ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'inherit', 'inherit']
  })
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
  if (opts.regenerate || !existsSync(manifestFile) ||
    JSON.parse(readFileSync(manifestFile, 'utf8'))[spec.count] !== size) {
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
    const seeded = await timed(['seed', `--${spec.count}`, String(size), ...streams],
      { DATABASE_URL: await pgServer.createDatabase('seed') })
    steps.push([`seed (generate straight into PostgreSQL${opts.streams ? `, ${opts.streams} streams` : ''})`,
      seeded, size, null])
  }
  let loaded = null
  let baseline = null
  if (viaFiles) {
    say('loading')
    const etlUrl = await pgServer.createDatabase('etl')
    loaded = await timed(['load', '--dir', dir], { DATABASE_URL: etlUrl })
    say('PostgreSQL\'s own COPY of the loaded rows into the same tables and indexes')
    baseline = await copyBaseline(etlUrl)
    const rows = Object.values(manifest.files).reduce((a, f) => a + f.rows, 0)
    const bytes = Object.keys(manifest.files).reduce((a, f) => a + statSync(`${dir}/${f}`).size, 0)
    console.log(`\n${n(size)} ${spec.count} as files: ${n(rows)} rows, ${(bytes / 1e9).toFixed(2)} GB of CSV`)
    steps.push(generated
      ? ['generate (CSV files)', generated, rows, bytes]
      : ['generate (CSV files): reused; --regenerate to time it'])
    steps.push(['load (the CSV files)', loaded, rows, bytes])
  }
  if (baseline) {
    console.log('\n| the same rows into the same tables and indexes | time |\n| --- | ---: |')
    console.log(`| load (read, check, COPY, indexes, swap) | ${loaded.seconds.toFixed(1)} s |`)
    console.log(`| PostgreSQL's own COPY (${baseline.copy.toFixed(1)} s) + ` +
      `indexes and ANALYZE (${baseline.indexes.toFixed(1)} s) | ${baseline.seconds.toFixed(1)} s |`)
    console.log(`| load / COPY | ${(loaded.seconds / baseline.seconds).toFixed(2)}× |`)
  }
  console.log(`\n${n(size)} ${spec.count}\n\n| step | time | rows/s | MB/s | peak RSS |\n` +
    '| --- | ---: | ---: | ---: | ---: |')
  for (const [step, r, rows, bytes] of steps) {
    console.log(r
      ? (`| ${step} | ${r.seconds.toFixed(1)} s | ${n(Math.round(rows / r.seconds))} | ` +
        `${bytes ? (bytes / 1e6 / r.seconds).toFixed(0) : ''} | ${r.peakMb.toFixed(0)} MB |`)
      : `| ${step} | | | | |`)
  }
  // The targets are for the full set only. (No process.exit here: the finally must stop PostgreSQL.)
  if (size === spec.full) {
    const timedSteps = steps.filter(([, r]) => r)
    const checks = [
      [`peak RSS ≤ ${spec.memoryMb} MB, every step`, timedSteps.every(([, r]) => r.peakMb <= spec.memoryMb)]
    ]
    if (spec.loadMemoryMb) {
      checks.push([`peak RSS of the load ≤ ${spec.loadMemoryMb} MB`, loaded.peakMb <= spec.loadMemoryMb])
    }
    if (spec.targets.load) checks.push([`load ≤ ${spec.targets.load} s`, loaded.seconds <= spec.targets.load])
    if (baseline) {
      checks.push([`load ≤ ${OF_COPY}× PostgreSQL's own COPY of its rows`,
        loaded.seconds <= OF_COPY * baseline.seconds])
    }
    if (spec.targets.seed) {
      checks.push([`generated and loaded (seed) ≤ ${spec.targets.seed} s`, steps[0][1].seconds <= spec.targets.seed])
    }
    console.log('\n| target | met |\n| --- | --- |')
    for (const [name, met] of checks) console.log(`| ${name} | ${met ? 'yes' : 'NO'} |`)
  }
} finally {
  await pgServer.stop()
}
