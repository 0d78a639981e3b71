// The kit's ETL pieces on their own: the CSV parser, COPY escaping through a real PostgreSQL and an
// embedded PGlite, the id set, a generator's rows seeded straight in.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  CsvParser, parseCsv, copyLine, pgTarget, pgliteTarget, IdSet, seedTable, loadTables, LoadRefused
} from '@suite/kit/etl'
import { createDatabase } from '@suite/kit/testing/env'
import { PGlite } from '@electric-sql/pglite'

const NASTY = '\ufeffid,name,note\r\n' +
  '1,"a, ""quoted""\nand a newline",plain\r\n' +
  '2,,\n' +
  '\n' +
  '3,"""",x\n' +
  '4,"ends with CRLF inside\r\n",y\n' +
  '5,tab\there,back\\slash\n' +
  '6,"unterminated'

const EXPECTED = [
  ['id', 'name', 'note'],
  ['1', 'a, "quoted"\nand a newline', 'plain'],
  ['2', '', ''],
  ['3', '"', 'x'],
  ['4', 'ends with CRLF inside\r\n', 'y'],
  ['5', 'tab\there', 'back\\slash'],
  ['6', 'unterminated']
]

test('the CSV parser reads quotes, doubled quotes, newlines in fields, CRLF, BOM, blank lines', () => {
  const records = parseCsv(NASTY)
  assert.deepEqual(records.map((r) => [...r]), EXPECTED)
  assert.equal(records.at(-1).unclosedQuote, true, 'a quote never closed is flagged, not swallowed')
  assert.deepEqual(parseCsv('a,b\n1,2').map((r) => [...r]), [['a', 'b'], ['1', '2']], 'no newline at the end')
  assert.deepEqual(parseCsv('a,b\n1,2\n').map((r) => [...r]), [['a', 'b'], ['1', '2']])
})

test('the CSV parser gives the same records however the input is cut into chunks', () => {
  const want = JSON.stringify(parseCsv(NASTY))
  for (let cut = 1; cut < NASTY.length; cut++) {
    for (const size of [1, 3, 7]) {
      const records = []
      const parser = new CsvParser((fields) => records.push(fields))
      parser.push(NASTY.slice(0, cut))
      for (let i = cut; i < NASTY.length; i += size) parser.push(NASTY.slice(i, i + size))
      parser.end()
      assert.equal(JSON.stringify(records), want, `cut at ${cut}, then chunks of ${size}`)
    }
  }
})

test('the CSV parser reports the line where each record starts and its raw text', () => {
  const seen = []
  const parser = new CsvParser((fields, line, raw) => seen.push([line, raw]))
  parser.push('h\n"a\nb"\nc\r\n\nd')
  parser.end()
  assert.deepEqual(seen, [[1, 'h'], [2, '"a\nb"'], [4, 'c'], [6, 'd']])
})

// Records past the bound (12 characters here): a long plain line, a long quoted field holding
// newlines and doubled quotes, and an unclosed quote running to the end; the short ones around them.
const LONG = 'id,v\n' +
  '1,short\n' +
  '2,abcdefghijklmnopqrstuvwxyz\r\n' +
  '3,"a\n""b"",\nccccccccccccccc"\n' +
  '4,"a, ""b"""\n' +
  '5,last\n' +
  '6,"never closed, and long\n7,x\n8,y\n'

test('the CSV parser rejects a record past maxRecord as tooLong, whatever the chunks, and reads on after it', () => {
  const read = (chunks) => {
    const seen = []
    const parser = new CsvParser(
      (fields, line, raw) => seen.push(fields.tooLong ? [line, 'tooLong', raw] : [line, ...fields]),
      { maxRecord: 12 }
    )
    for (const c of chunks) parser.push(c)
    parser.end()
    return seen
  }
  const want = [
    [1, 'id', 'v'],
    [2, '1', 'short'],
    [3, 'tooLong', '2,abcdefghij…'],
    [4, 'tooLong', '3,"a\n""b"",\n…'],
    [7, '4', 'a, "b"'],
    [8, '5', 'last'],
    [9, 'tooLong', '6,"never clo…']
  ]
  assert.deepEqual(read([LONG]), want)
  for (let cut = 1; cut < LONG.length; cut++) {
    for (const size of [1, 2, 5, 13]) {
      const chunks = [LONG.slice(0, cut)]
      for (let i = cut; i < LONG.length; i += size) chunks.push(LONG.slice(i, i + size))
      assert.deepEqual(read(chunks), want, `cut at ${cut}, then chunks of ${size}`)
    }
  }
  assert.deepEqual(
    read(['a,b\n"x"', '"y"', '"z', '"', ',1\n']),
    [[1, 'a', 'b'], [2, 'x"y"z', '1']],
    'doubled quotes across chunks, within the bound'
  )
})

test('an unclosed quote of 64 MB: one tooLong record, memory bounded, time linear', () => {
  const maxRecord = 1 << 20
  const seen = []
  const parser = new CsvParser(
    (fields, line, raw) => seen.push([line, fields.tooLong ?? false, raw.length]),
    { maxRecord }
  )
  parser.push('id,v\n1,"open')
  const chunk = 'x'.repeat(1 << 16) + '\n' + '""'.repeat(100)
  const started = Date.now()
  let longest = 0
  for (let i = 0; i < 1024; i++) {
    parser.push(chunk)
    longest = Math.max(longest, parser.rest.length)
  }
  parser.end()
  assert.ok(longest <= maxRecord + 1, `the parser held ${longest} characters of one record`)
  assert.deepEqual(seen, [[1, false, 4], [2, true, 1001]])
  // Re-scanning the record on every chunk (quadratic) takes minutes; one pass takes well under a second.
  assert.ok(Date.now() - started < 15_000, `${Date.now() - started} ms`)
})

const AWKWARD = [
  'plain', 'tab\there', 'new\nline', 'cr\rhere', 'back\\slash', '\\N', '', null, 'ünïcødé 🧥', 'quote " and , comma'
]

test('COPY text round-trips every awkward value through a real PostgreSQL', async () => {
  const client = new pg.Client({ connectionString: await createDatabase('copy') })
  await client.connect()
  try {
    await client.query('CREATE TABLE t (i int, v text)')
    const target = pgTarget(client)
    await pipeline(Readable.from(AWKWARD.map((v, i) => copyLine([i, v]))), target.copy('COPY t (i, v) FROM STDIN'))
    const { rows } = await client.query('SELECT v FROM t ORDER BY i')
    assert.deepEqual(rows.map((r) => r.v), AWKWARD)
  } finally {
    await client.end()
  }
})

test('the same COPY text loads into an embedded PGlite', async () => {
  const db = await PGlite.create()
  try {
    await db.query('CREATE TABLE t (i int, v text)')
    await pipeline(
      Readable.from(AWKWARD.map((v, i) => copyLine([i, v]))),
      pgliteTarget(db).copy('COPY t (i, v) FROM STDIN')
    )
    const { rows } = await db.query('SELECT v FROM t ORDER BY i')
    assert.deepEqual(rows.map((r) => r.v), AWKWARD)
  } finally {
    await db.close()
  }
})

// A table like a service's: primary key, a default, a check, an index, lz4 on its jsonb.
const SEEDED = `CREATE TABLE s (id integer PRIMARY KEY, doc jsonb COMPRESSION lz4, note text,
  version integer NOT NULL DEFAULT 1, CHECK (doc IS NOT NULL OR note IS NOT NULL));
  CREATE INDEX s_note_idx ON s (note)`
// A database with table s holding one old row; returns { url, client } (end the client).
async function withOldRow (prefix) {
  const url = await createDatabase(prefix)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query(SEEDED)
  await client.query("INSERT INTO s (id, note) VALUES (1, 'old')")
  return { url, client }
}
const seedInto = (url, rows, extra = {}) => seedTable({
  connect: async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    return { ...pgTarget(client), end: () => client.end() }
  },
  spec: { table: 's', columns: { id: 'int4', doc: 'jsonb', note: 'text' }, primaryKey: 'id' },
  parts: 7,
  rows: (part) => Array.from({ length: 100 }, (_, i) => rows(part * 100 + i + 1)),
  streams: 3,
  progress: false,
  ...extra
})

test('seedTable: parts over parallel binary COPY streams, every value intact (strings or pieces), ' +
  'indexes, defaults and lz4 kept', async () => {
  const { url, client } = await withOldRow('seed')
  try {
    const doc = (id) => ({ id, name: AWKWARD[id % AWKWARD.length], nested: [1.5, null, true, { ключ: 'значение' }] })
    // Values as strings, and (even ids) as pieces: a Buffer then a string.
    const json = (id) => id % 2
      ? JSON.stringify(doc(id))
      : [Buffer.from(JSON.stringify(doc(id)).slice(0, 6)), JSON.stringify(doc(id)).slice(6)]
    const summary = await seedInto(url, (id) => [id, id % 5 ? json(id) : null, AWKWARD[id % AWKWARD.length] ?? 'none'])
    assert.equal(summary.rows, 700)
    const { rows } = await client.query('SELECT id, doc, note, version FROM s ORDER BY id')
    assert.equal(rows.length, 700, 'the old rows are gone: the seeded table was swapped in')
    for (const r of rows) {
      assert.deepEqual(r, {
        id: r.id,
        doc: r.id % 5 ? doc(r.id) : null,
        note: AWKWARD[r.id % AWKWARD.length] ?? 'none',
        version: 1
      })
    }
    const { rows: [t] } = await client.query(`SELECT
      (SELECT attcompression FROM pg_attribute WHERE attrelid = 's'::regclass AND attname = 'doc') AS compression,
      (SELECT array_agg(indexname::text ORDER BY indexname) FROM pg_indexes WHERE tablename = 's') AS indexes,
      (SELECT count(*)::int FROM pg_class WHERE relname LIKE 's_load%') AS leftovers`)
    assert.deepEqual(t, { compression: 'l', indexes: ['s_note_idx', 's_pkey'], leftovers: 0 })
  } finally {
    await client.end()
  }
})

test('seedTable: a row PostgreSQL refuses fails the seed loudly and leaves the live table as it was', async () => {
  const { url, client } = await withOldRow('seedfail')
  try {
    // Parts of ~1 MB (several chunks each), the broken row early in the second: whichever stream
    // notices first, the seed fails with the server's error, not with another stream's stop.
    const note = 'x'.repeat(500)
    await assert.rejects(seedInto(url, null, {
      parts: 40,
      rows: function * (part) {
        for (let id = part * 2000 + 1; id <= (part + 1) * 2000; id++) {
          yield [id, id === 2100 ? '{"broken":' : '{}', note]
        }
      }
    }), /invalid input syntax for type json/)
    const { rows } = await client.query('SELECT id, note FROM s')
    assert.deepEqual(rows, [{ id: 1, note: 'old' }])
    const { rows: [left] } = await client.query("SELECT count(*)::int AS n FROM pg_class WHERE relname = 's_load'")
    assert.equal(left.n, 0, 'the half-filled table is dropped')
  } finally {
    await client.end()
  }
})

test('IdSet: membership, duplicates, growth and very large ids', () => {
  const ids = new IdSet()
  for (const id of [1, 7, 8, 1_000_000, 2 ** 27 + 5, 2147483647]) assert.equal(ids.add(id), true)
  assert.equal(ids.add(7), false)
  assert.equal(ids.add(2147483647), false)
  assert.equal(ids.size, 6)
  for (const id of [1, 7, 8, 1_000_000, 2 ** 27 + 5, 2147483647]) assert.ok(ids.has(id))
  for (const id of [2, 6, 9, 999_999, 2 ** 27 + 4, 2147483646]) assert.ok(!ids.has(id))
})

// The swap against a long reader (a pg_dump, a report): one client holds a read lock on the live
// table in an open transaction while a load finishes and other clients keep reading.
async function withLongReader (prefix, body) {
  const url = await createDatabase(prefix)
  const dir = await mkdtemp(join(tmpdir(), 'swap-'))
  const clients = [0, 1, 2].map(() => new pg.Client({ connectionString: url }))
  const [loader, holder, reader] = clients
  try {
    for (const c of clients) await c.connect()
    await loader.query('CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL)')
    await loader.query("INSERT INTO items SELECT i, 'old ' || i FROM generate_series(1, 10) i")
    await writeFile(
      join(dir, 'items.csv'),
      'id,name\n' + Array.from({ length: 500 }, (_, i) => `${i + 1},new ${i + 1}\n`).join('')
    )
    await holder.query('BEGIN')
    await holder.query('SELECT count(*) FROM items')
    // The services' setting: a query queued behind the swap for longer than this fails.
    await reader.query('SET statement_timeout = 3000')
    const count = async () => (await reader.query('SELECT count(*)::int AS n FROM items')).rows[0].n
    const load = (swapWaitSeconds) => loadTables({
      db: pgTarget(loader),
      dir,
      tables: [{ file: 'items.csv', table: 'items', columns: { id: 'id', name: 'text' }, primaryKey: 'id' }],
      rejectsFile: join(dir, 'rejects.csv'),
      progress: false,
      swapWaitSeconds
    })
    await body({ holder, count, load, loader })
  } finally {
    for (const c of clients) await c.end().catch(() => {})
    await rm(dir, { recursive: true, force: true })
  }
}

test('the swap waits for a long reader with a short lock_timeout and retries: ' +
  'other readers are never queued behind it', async () => {
  await withLongReader('swapwait', async ({ holder, count, load }) => {
    let done = false
    const loading = load(60).finally(() => { done = true })
    // For 4 s the swap tries and backs off; every other read in the meantime answers, and in time.
    const until = Date.now() + 4000
    let reads = 0
    while (Date.now() < until) {
      const t0 = Date.now()
      assert.equal(await count(), 10, 'the old table until the swap')
      assert.ok(Date.now() - t0 < 2500, `a read waited ${Date.now() - t0} ms behind the swap`)
      reads++
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.equal(done, false, 'the swap waits while the long reader holds the table')
    assert.ok(reads > 5)
    await holder.query('COMMIT')
    await loading
    assert.equal(await count(), 500)
  })
})

test('the swap gives up after --swap-wait: LoadRefused in one line, the live table and nothing else left', async () => {
  await withLongReader('swapgiveup', async ({ count, load, loader }) => {
    const started = Date.now()
    await assert.rejects(load(2), (err) => {
      assert.ok(err instanceof LoadRefused)
      assert.match(
        err.message,
        /^swap: could not lock items in \d+ tries over 2 s \(--swap-wait\): a long transaction is reading them$/
      )
      return true
    })
    assert.ok(Date.now() - started < 10_000)
    assert.equal(await count(), 10)
    const { rows } = await loader.query("SELECT count(*)::int AS n FROM pg_class WHERE relname = 'items_load'")
    assert.equal(rows[0].n, 0, 'the loaded copy is dropped')
  })
})
