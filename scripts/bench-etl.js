// `npm run bench:etl`: the product loader on the full-scale Atelier set (or --products N).
// Generates the CSVs once into .data/atelier-<N>/ (reused), starts a throwaway PostgreSQL set up for
// bulk loads (wal_level=minimal so a COPY into a table created in its transaction writes no WAL;
// fsync stays on), runs `product load` as its own process, and reports its time per phase and its
// peak memory (VmHWM) against the targets: full scale in ≤ 120 s with ≤ 256 MB RSS.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { fileURLToPath } from 'node:url'
import { startPostgres } from '@suite/kit/testing'
import { generate } from '../services/product/etl/index.js'

const { values: opts } = parseArgs({ options: { products: { type: 'string', default: '1000011' } } })
const PRODUCTS = Number(opts.products)
const root = fileURLToPath(new URL('..', import.meta.url))
const dir = `${root}.data/atelier-${PRODUCTS === 1000011 ? 'full' : PRODUCTS}`
const say = (m) => process.stderr.write(`bench:etl: ${m}\n`)

const manifestFile = `${dir}/manifest.json`
const fresh = !existsSync(manifestFile) || JSON.parse(readFileSync(manifestFile, 'utf8')).products !== PRODUCTS
if (fresh) {
  say(`generating ${PRODUCTS.toLocaleString('en-US')} products into ${dir}`)
  const t0 = Date.now()
  await generate({ out: dir, products: PRODUCTS, seed: 1 })
  say(`generated in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
}
const manifest = JSON.parse(await readFile(manifestFile, 'utf8'))

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
  say('loading (product load, its own process)')
  const t0 = Date.now()
  const child = spawn(process.execPath, [`${root}services/product/src/cli.js`, 'load', '--dir', dir], {
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit']
  })
  // VmHWM is the peak resident set so far; the last reading before exit is the peak of the run.
  let peakKb = 0
  const sample = setInterval(() => {
    try {
      const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0)
      peakKb = Math.max(peakKb, kb)
    } catch {}
  }, 100)
  const code = await new Promise((resolve) => child.on('exit', resolve))
  clearInterval(sample)
  const secs = (Date.now() - t0) / 1000
  if (code !== 0) throw new Error(`load exited with ${code}`)
  const rows = Object.values(manifest.files).reduce((a, f) => a + f.rows, 0)
  const bytes = Object.keys(manifest.files).reduce((a, f) => a + statSync(`${dir}/${f}`).size, 0)
  const peakMb = peakKb / 1024
  console.log(`\n| data set | rows | size | load time | rows/s | MB/s | peak RSS |`)
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
  console.log(`| ${PRODUCTS.toLocaleString('en-US')} products | ${rows.toLocaleString('en-US')} | ${(bytes / 1e9).toFixed(2)} GB | ${secs.toFixed(1)} s | ${Math.round(rows / secs).toLocaleString('en-US')} | ${(bytes / 1e6 / secs).toFixed(0)} | ${peakMb.toFixed(0)} MB |`)
  if (PRODUCTS >= 1000011) {
    console.log(`\ntarget ≤ 120 s: ${secs <= 120 ? 'met' : 'NOT met'}; target ≤ 256 MB RSS: ${peakMb <= 256 ? 'met' : 'NOT met'}`)
  }
} finally {
  await pgServer.stop()
}
