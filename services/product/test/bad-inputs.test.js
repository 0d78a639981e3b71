// The load command against a corpus of bad inputs: each one either loads what is valid within the
// reject budget, or is refused in one line with exit 1 and the live tables exactly as they were;
// never a stack trace, never more than 256 MB of memory (a 200 MB unclosed quote included).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { cp, mkdtemp, readFile, rm, truncate, unlink, writeFile, open, stat } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { watchMemory } from '@suite/kit/testing'
import { generate } from '../etl/index.js'
import { entry, catalogueDatabase } from './fixtures.js'

const TABLES = ['products', 'styles', 'photos', 'skus', 'features', 'related']
const MEMORY_MB = 256

let work, good, manifest
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'bad-inputs-'))
  good = join(work, 'good')
  manifest = await generate({ out: good, products: 300, seed: 1 })
})
after(() => rm(work, { recursive: true, force: true }))

/** A copy of the good set named `name`, with `change(dir)` applied to it. */
async function variant (name, change) {
  const dir = join(work, name)
  await cp(good, dir, { recursive: true })
  await change(dir)
  return dir
}

/** `product load --dir dir`: resolves to { code, stderr, peakMb }. */
function load (url, dir, ...args) {
  const child = spawn(process.execPath, [entry, 'load', '--dir', dir, ...args], {
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  const memory = watchMemory(child.pid)
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr, peakMb: memory.stop() })))
}

/** Every live table's row count and a hash of its rows, and any `_load` table left behind. */
async function state (url) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const tables = {}
    for (const t of TABLES) {
      const { rows: [r] } = await client.query(
        `SELECT count(*)::int AS n, coalesce(sum(hashtext(t::text)), 0)::text AS hash FROM ${t} t`
      )
      tables[t] = r
    }
    const { rows } = await client.query("SELECT relname FROM pg_class WHERE relname LIKE '%\\_load'")
    return { tables, leftovers: rows.map((r) => r.relname) }
  } finally {
    await client.end()
  }
}

/** Runs a load that must be refused: exit 1, one line naming `reason`, no stack, live tables untouched. */
async function refused (dir, reason, ...args) {
  const url = await catalogueDatabase()
  const before = await state(url)
  const r = await load(url, dir, ...args)
  assert.equal(r.code, 1, r.stderr)
  const last = r.stderr.trim().split('\n').at(-1)
  assert.match(last, /^product load: /)
  assert.match(last, reason)
  assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace')
  assert.deepEqual(await state(url), before, 'the live tables are as they were, nothing left behind')
  assert.ok(r.peakMb <= MEMORY_MB, `peak RSS ${r.peakMb} MB`)
  return r
}

/** Runs a load that must succeed: the new data is live; returns the rejects file's text and the tables. */
async function loads (dir, want, ...args) {
  const url = await catalogueDatabase()
  const r = await load(url, dir, ...args)
  assert.equal(r.code, 0, r.stderr)
  assert.ok(r.peakMb <= MEMORY_MB, `peak RSS ${r.peakMb} MB`)
  const after = await state(url)
  assert.deepEqual(after.leftovers, [])
  for (const [table, n] of Object.entries(want)) assert.equal(after.tables[table].n, n, table)
  return { rejects: await readFile(join(dir, 'rejects.csv'), 'utf8'), tables: after.tables, peakMb: r.peakMb }
}

const rows = (file) => manifest.files[file].rows -
  Object.values(manifest.files[file].rejects).reduce((a, b) => a + b, 0)

test('a missing file: refused before anything is read', async () => {
  const dir = await variant('missing', (d) => unlink(join(d, 'skus.csv')))
  await refused(dir, /skus\.csv: not found in /)
  await refused(join(work, 'no-such-dir'), /product\.csv: not found in /)
})

test('an empty file, a header only: refused, nothing swapped', async () => {
  await refused(await variant('empty', (d) => writeFile(join(d, 'product.csv'), '')),
    /product\.csv: empty, not even a header/)
  const header = await variant('header-only',
    (d) => writeFile(join(d, 'product.csv'), 'id,name,slogan,description,category,default_price\n'))
  await refused(header, /product\.csv: 0 rows loaded \(0 read\), fewer than --min-rows 1/)
  // --min-rows raises the bar: a file that loads fine is refused when it has fewer rows than that.
  await refused(good, /product\.csv: [\d,]+ rows loaded .*fewer than --min-rows 1,000,000/, '--min-rows', '1000000')
})

test('another delimiter: in the header, refused naming it; in the rows only, refused by the reject ' +
  'budget', async () => {
  const semicolons = async (d) => {
    const text = await readFile(join(d, 'product.csv'), 'utf8')
    await writeFile(join(d, 'product.csv'), text.replace(/,(?=(?:[^"]*"[^"]*")*[^"]*$)/gm, ';'))
  }
  await refused(await variant('semicolons', semicolons),
    /product\.csv: no column id in the header "id;name;.*" \(";"-separated\? the columns must be separated by commas\)/)
  const rowsOnly = await variant('semicolon-rows', async (d) => {
    const file = join(d, 'styles.csv')
    const [head, ...rest] = (await readFile(file, 'utf8')).split('\n')
    await writeFile(file, [head, ...rest.map((line) => line.replaceAll(',', ';'))].join('\n'))
  })
  await refused(rowsOnly,
    /styles\.csv: 0 rows loaded \([\d,]+ read, [\d,]+ rejected: column_count [\d,]+\), fewer than --min-rows 1/)
  // A few broken rows in a file: loaded when within the budget, refused when the budget is lower.
  const someRows = await variant('some-rows', async (d) => {
    const file = join(d, 'skus.csv')
    const lines = (await readFile(file, 'utf8')).split('\n')
    // 60 rows that would load (not those the generator planted to be rejected), one in ten
    const fine = lines.map((line, i) => i)
      .filter((i) => i > 0 && i % 10 === 0 && /^\d+,\d+,[^,]+,\d+$/.test(lines[i])).slice(0, 60)
    for (const i of fine) lines[i] = lines[i].replaceAll(',', ';')
    await writeFile(file, lines.join('\n'))
  })
  await refused(someRows,
    /skus\.csv: 6\d of [\d,]+ rows rejected \(column_count 60.*\), more than --max-reject-ratio 0\.01/)
  const { rejects, tables } = await loads(someRows, { products: rows('product.csv') }, '--max-reject-ratio', '0.05')
  assert.equal(rejects.match(/^skus\.csv,\d+,column_count,/gm).length, 60)
  assert.equal(tables.skus.n, manifest.files['skus.csv'].rows - rejects.match(/^skus\.csv,/gm).length)
})

test('truncated mid-record: the cut record is rejected, the rest loads', async () => {
  const dir = await variant('truncated', async (d) => {
    const file = join(d, 'related.csv')
    const text = await readFile(file, 'utf8')
    await truncate(file, text.lastIndexOf('\n', text.length - 2) + 3) // two characters into the last record
  })
  const { rejects } = await loads(dir, { products: rows('product.csv'), related: rows('related.csv') - 1 })
  assert.match(rejects, /^related\.csv,\d+,column_count,"\d+,?"$/m)
})

test('binary bytes: a file of them is refused at its header; NUL bytes in a few rows are rejected rows', async () => {
  const binary = await variant('binary', (d) => writeFile(join(d, 'product.csv'), randomBytes(1 << 20)))
  const r = await refused(binary, /product\.csv: no column id in the header ".*"/)
  // eslint-disable-next-line no-control-regex -- control characters are what must not be printed
  assert.doesNotMatch(r.stderr.trim().split('\n').at(-1), /[\x00-\x08\x0e-\x1f]/, 'the header is shown escaped')
  const nul = await variant('nul', async (d) => {
    const file = join(d, 'features.csv')
    const lines = (await readFile(file, 'utf8')).split('\n')
    for (const i of [3, 30, 60]) lines[i] = lines[i].replace(/,([^,]*)$/, ',\0bin\x01ary')
    await writeFile(file, lines.join('\n'))
  })
  const { rejects } = await loads(nul, { features: rows('features.csv') - 3 })
  assert.equal(rejects.match(/^features\.csv,\d+,invalid_value,/gm).length, 3)
})

test('a 200 MB unclosed quote: one record_too_long, the rows before it load, in linear time and ' +
  'under 256 MB', async (t) => {
  const dir = await variant('unclosed', async (d) => {
    const fh = await open(join(d, 'product.csv'), 'a')
    try {
      await fh.write('999999,"a quote that never closes')
      const mb = Buffer.alloc(1 << 20, 'lorem ipsum, dolor sit amet\n')
      for (let i = 0; i < 200; i++) await fh.write(mb)
    } finally {
      await fh.close()
    }
  })
  assert.ok((await stat(join(dir, 'product.csv'))).size > 200e6)
  const started = Date.now()
  const { rejects, peakMb } = await loads(dir, { products: rows('product.csv') })
  t.diagnostic(`200 MB unclosed quote: loaded in ${Date.now() - started} ms, peak RSS ${peakMb} MB`)
  assert.ok(Date.now() - started < 90_000, `${Date.now() - started} ms`)
  assert.match(rejects, /^product\.csv,\d+,record_too_long,"999999,""a quote that never closes/m)
  // The bound is the command's: a smaller one rejects more records, a file's worth refuses it.
  await refused(good, /product\.csv: .*record_too_long [\d,]+/, '--max-record-length', '60')
})
