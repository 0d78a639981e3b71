// The kit's ETL pieces on their own: the CSV parser, COPY escaping through a real PostgreSQL and an
// embedded PGlite, the id set.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import { CsvParser, parseCsv, copyLine, pgTarget, pgliteTarget, IdSet } from '@suite/kit/etl'
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

test('IdSet: membership, duplicates, growth and very large ids', () => {
  const ids = new IdSet()
  for (const id of [1, 7, 8, 1_000_000, 2 ** 27 + 5, 2147483647]) assert.equal(ids.add(id), true)
  assert.equal(ids.add(7), false)
  assert.equal(ids.add(2147483647), false)
  assert.equal(ids.size, 6)
  for (const id of [1, 7, 8, 1_000_000, 2 ** 27 + 5, 2147483647]) assert.ok(ids.has(id))
  for (const id of [2, 6, 9, 999_999, 2 ** 27 + 4, 2147483646]) assert.ok(!ids.has(id))
})
