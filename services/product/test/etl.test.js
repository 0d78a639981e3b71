// The Atelier loader on generated, quirky CSVs, into a real PostgreSQL (and an embedded PGlite).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { pgTarget, pgliteTarget, parseCsv } from '@suite/kit/etl'
import { get, databaseEnv } from '@suite/kit/testing'
import { createDatabase, redisUrl } from '@suite/kit/testing/env'
import { generate, load } from '../etl/index.js'
import { service, entry, startProduct } from './fixtures.js'
import { PGlite } from '@electric-sql/pglite'

let work, dirA, dirB, manifestA
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'atelier-'))
  dirA = join(work, 'a')
  dirB = join(work, 'b')
  manifestA = await generate({ out: dirA, products: 2000, seed: 1 })
  await generate({ out: dirB, products: 2500, seed: 2 })
})
after(() => rm(work, { recursive: true, force: true }))

async function freshDatabase () {
  const url = await createDatabase('etl')
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await migrate(client, service)
  return { url, client }
}

test('every row is loaded, rejected by its reason, or repaired, exactly as the generator says', async () => {
  const { client } = await freshDatabase()
  try {
    const rejectsFile = join(work, 'rejects-a.csv')
    const summary = await load({ db: pgTarget(client), dir: dirA, rejectsFile, progress: false })
    let rejectedTotal = 0
    for (const f of summary.files) {
      const want = manifestA.files[f.file]
      assert.equal(f.read, want.rows, `${f.file} rows read`)
      assert.deepEqual(f.reasons, want.rejects, `${f.file} rejects by reason`)
      assert.deepEqual(f.fixes, want.fixes, `${f.file} fixes`)
      const rejected = Object.values(want.rejects).reduce((a, b) => a + b, 0)
      assert.equal(f.loaded, want.rows - rejected)
      const { rows: [{ n }] } = await client.query(`SELECT count(*)::int AS n FROM ${f.table}`)
      assert.equal(n, f.loaded, `${f.table} holds what was loaded`)
      rejectedTotal += rejected
    }
    // Each quirk the generator plants is present, so none of these checks is vacuous.
    for (const reason of ['duplicate_id', 'invalid_id', 'column_count']) {
      assert.ok(manifestA.files['product.csv'].rejects[reason] >= 1, reason)
    }
    assert.ok(manifestA.files['photos.csv'].fixes.stray_column_dropped >= 1)
    assert.ok(manifestA.files['related.csv'].rejects.related_product_id_missing >= 1)

    const rejects = parseCsv(await readFile(rejectsFile, 'utf8'))
    assert.deepEqual([...rejects[0]], ['file', 'line', 'reason', 'row'])
    assert.equal(rejects.length - 1, rejectedTotal, 'one line per rejected row')
    const cut = rejects.find((r) => r[2] === 'column_count')
    assert.match(cut[3], /cut short$/, 'the raw row is kept')
  } finally {
    await client.end()
  }
})

test('the data arrives intact: seq dense in id order, null prices, quoted text, mixed sizes', async () => {
  const { client } = await freshDatabase()
  try {
    await load({ db: pgTarget(client), dir: dirA, progress: false, rejectsFile: join(work, 'r2.csv') })
    const { rows: [seq] } = await client.query(`SELECT count(*)::int AS n, min(seq) AS lo, max(seq) AS hi,
      bool_and(seq = rank) AS dense FROM (SELECT seq, row_number() OVER (ORDER BY id) AS rank FROM products) p`)
    assert.deepEqual(seq, { n: seq.hi, lo: 1, hi: seq.n, dense: true })
    const { rows: [gaps] } = await client.query('SELECT max(id) - count(*) AS missing FROM products')
    assert.ok(Number(gaps.missing) > 0, 'ids have gaps')

    const { rows: [prices] } = await client.query(
      'SELECT count(*) FILTER (WHERE sale_price IS NULL)::int AS nulls, count(*)::int AS n FROM styles'
    )
    assert.ok(prices.nulls > prices.n / 3, 'the literal null became NULL')

    // A quoted description with a comma, doubled quotes and a newline, as in the CSV.
    const csv = parseCsv(await readFile(join(dirA, 'product.csv'), 'utf8'))
    const tricky = csv.find((r) => r[3].includes('\n') && r[3].includes('"'))
    const { rows: [p] } = await client.query('SELECT description FROM products WHERE id = $1', [tricky[0]])
    assert.equal(p.description, tricky[3])

    const { rows: sizes } = await client.query('SELECT DISTINCT size FROM skus')
    const all = sizes.map((r) => r.size)
    assert.ok(all.includes('XS') && all.includes('7.5') && all.includes('One Size'))
  } finally {
    await client.end()
  }
})

test('loading is idempotent, and readers see the old tables until the swap', async () => {
  const { client, url } = await freshDatabase()
  const reader = new pg.Client({ connectionString: url })
  await reader.connect()
  try {
    const a = await load({ db: pgTarget(client), dir: dirA, progress: false, rejectsFile: join(work, 'r3.csv') })
    const again = await load({ db: pgTarget(client), dir: dirA, progress: false, rejectsFile: join(work, 'r4.csv') })
    assert.deepEqual(again.files.map((f) => [f.loaded, f.rejected]), a.files.map((f) => [f.loaded, f.rejected]))
    const count = async () => (await reader.query('SELECT count(*)::int AS n FROM products')).rows[0].n
    const before = await count()
    const seen = new Set()
    let loading = true
    const reading = (async () => { while (loading) seen.add(await count()) })()
    const b = await load({ db: pgTarget(client), dir: dirB, progress: false, rejectsFile: join(work, 'r5.csv') })
    loading = false
    await reading
    const afterwards = await count()
    assert.equal(afterwards, b.files[0].loaded)
    assert.notEqual(before, afterwards)
    for (const n of seen) {
      assert.ok(n === before || n === afterwards, `a reader saw ${n}: neither the old nor the new table`)
    }
    const { rows: leftovers } = await client.query("SELECT tablename FROM pg_tables WHERE tablename LIKE '%\\_load'")
    assert.deepEqual(leftovers, [])
  } finally {
    await reader.end()
    await client.end()
  }
})

test('the load command clears the cache: the API answers with the new data at once', async () => {
  const url = await createDatabase('reload')
  const env = { ...process.env, ...databaseEnv(url), REDIS_URL: `${redisUrl}/2` }
  const run = (dir) => {
    const r = spawnSync(process.execPath, [entry, 'load', '--dir', dir], { env, encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr + r.stdout)
    return r
  }
  run(dirA)
  const svc = await startProduct({ DATABASE_URL: url, REDIS_URL: `${redisUrl}/2` })
  try {
    const first = await get(svc.url, '/products/1')
    assert.equal((await get(svc.url, '/products/1')).body.name, first.body.name) // now cached
    const out = run(dirB)
    assert.match(out.stdout, /cached answers cleared/)
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    const { rows: [row] } = await client.query('SELECT name FROM products WHERE id = 1')
    await client.end()
    assert.notEqual(row.name, first.body.name, 'the two data sets differ on product 1')
    assert.equal((await get(svc.url, '/products/1')).body.name, row.name)
  } finally {
    await svc.stop()
  }
})

test('the same loader fills an embedded PGlite', async () => {
  const db = await PGlite.create()
  const small = join(work, 'small')
  const manifest = await generate({ out: small, products: 150, seed: 3 })
  try {
    await migrate(pgliteTarget(db), service)
    const summary = await load({ db: pgliteTarget(db), dir: small, progress: false, rejectsFile: join(work, 'r6.csv') })
    for (const f of summary.files) assert.deepEqual(f.reasons, manifest.files[f.file].rejects, f.file)
    const { rows: [{ n }] } = await db.query('SELECT count(*)::int AS n FROM products')
    assert.equal(n, summary.files[0].loaded)
  } finally {
    await db.close()
  }
})
