// The kit's ETL pieces on their own: the CSV parser, COPY escaping through a real PostgreSQL and an
// embedded PGlite, the id set, a generator's rows seeded straight in.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import { CsvParser, parseCsv, copyLine, pgTarget, pgliteTarget, IdSet, seedTable } from '@suite/kit/etl'
import { createDatabase } from '@suite/kit/testing/env'

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

const AWKWARD = ['plain', 'tab\there', 'new\nline', 'cr\rhere', 'back\\slash', '\\N', '', null, 'ünïcødé 🧥', 'quote " and , comma']

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
  const { PGlite } = await import('@electric-sql/pglite')
  const db = await PGlite.create()
  try {
    await db.query('CREATE TABLE t (i int, v text)')
    await pipeline(Readable.from(AWKWARD.map((v, i) => copyLine([i, v]))), pgliteTarget(db).copy('COPY t (i, v) FROM STDIN'))
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

test('seedTable: parts over parallel binary COPY streams, every value intact (strings or pieces), indexes, defaults and lz4 kept', async () => {
  const { url, client } = await withOldRow('seed')
  try {
    const doc = (id) => ({ id, name: AWKWARD[id % AWKWARD.length], nested: [1.5, null, true, { 'ключ': 'значение' }] })
    // Values as strings, and (even ids) as pieces: a Buffer then a string.
    const json = (id) => id % 2 ? JSON.stringify(doc(id)) : [Buffer.from(JSON.stringify(doc(id)).slice(0, 6)), JSON.stringify(doc(id)).slice(6)]
    const summary = await seedInto(url, (id) => [id, id % 5 ? json(id) : null, AWKWARD[id % AWKWARD.length] ?? 'none'])
    assert.equal(summary.rows, 700)
    const { rows } = await client.query('SELECT id, doc, note, version FROM s ORDER BY id')
    assert.equal(rows.length, 700, 'the old rows are gone: the seeded table was swapped in')
    for (const r of rows) {
      assert.deepEqual(r, { id: r.id, doc: r.id % 5 ? doc(r.id) : null, note: AWKWARD[r.id % AWKWARD.length] ?? 'none', version: 1 })
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
        for (let id = part * 2000 + 1; id <= (part + 1) * 2000; id++) yield [id, id === 2100 ? '{"broken":' : '{}', note]
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
