// The embedded PostgreSQL of `npm start` under concurrent clients: many pg connections sending
// parameterized queries and transactions at once, each must get its own answers.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { PGlite } from '@electric-sql/pglite'
import { servePglite } from './pglite-server.js'

// Raw protocol messages, to send an exchange in two halves with another client's query between.
const cstr = (s) => Buffer.from(s + '\0')
const message = (type, ...parts) => {
  const body = Buffer.concat(parts)
  const head = Buffer.alloc(5)
  head.write(type, 0)
  head.writeInt32BE(4 + body.length, 1)
  return Buffer.concat([head, body])
}
const int16 = (n) => { const b = Buffer.alloc(2); b.writeInt16BE(n); return b }
const int32 = (n) => { const b = Buffer.alloc(4); b.writeInt32BE(n); return b }
const startup = () => { const body = Buffer.concat([int32(196608), cstr('user'), cstr('postgres'), cstr('database'), cstr('postgres'), Buffer.from([0])]); return Buffer.concat([int32(4 + body.length), body]) }
const parse = (sql) => message('P', cstr(''), cstr(sql), int16(0))
const bind = (value) => message('B', cstr(''), cstr(''), int16(0), int16(1), int32(Buffer.byteLength(value)), Buffer.from(value), int16(0))
const execute = () => Buffer.concat([message('D', Buffer.from('P'), cstr('')), message('E', cstr(''), int32(0)), message('S')])
const simple = (sql) => message('Q', cstr(sql))

/** A raw client: write(bytes), and untilReady() → the message types received up to ReadyForQuery, and the text. */
async function rawClient (port) {
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  let received = Buffer.alloc(0)
  socket.on('data', (d) => { received = Buffer.concat([received, d]) })
  const untilReady = async () => {
    for (;;) {
      const types = []
      for (let at = 0; at + 5 <= received.length;) {
        const length = 1 + received.readInt32BE(at + 1)
        if (at + length > received.length) break
        types.push(String.fromCharCode(received[at]))
        if (received[at] === 0x5a) { // 'Z' ReadyForQuery
          const text = received.subarray(0, at + length).toString('latin1')
          received = received.subarray(at + length)
          return { types, text }
        }
        at += length
      }
      await once(socket, 'data')
    }
  }
  socket.write(startup())
  await untilReady()
  return { write: (b) => socket.write(b), untilReady, end: () => socket.end() }
}

test('an exchange is atomic: another client\'s query sent between its Parse/Bind and its Execute/Sync does not break it', async () => {
  const db = await PGlite.create()
  const server = await servePglite(db)
  const [a, b] = await Promise.all([rawClient(server.port), rawClient(server.port)])
  try {
    a.write(Buffer.concat([parse('SELECT $1::int * 6 AS n'), bind('7')]))
    await sleep(100)
    b.write(simple('SELECT 1')) // a simple query destroys the session's unnamed statement and portal
    assert.ok(!(await b.untilReady()).types.includes('E'))
    a.write(execute())
    const answer = await a.untilReady()
    assert.ok(!answer.types.includes('E'), answer.text) // message by message: "portal does not exist"
    assert.ok(answer.types.includes('D'))
    assert.match(answer.text, /42/)
  } finally {
    a.end()
    b.end()
    await server.close()
    await db.close()
  }
})

test('concurrent connections: every parameterized answer is its own, transactions stay apart, a dropped one rolls back', async () => {
  const db = await PGlite.create()
  const server = await servePglite(db)
  const url = `postgres://postgres@127.0.0.1:${server.port}/postgres`
  const pool = new pg.Pool({ connectionString: url, max: 12 })
  try {
    await pool.query('CREATE TABLE t (conn int, n int)')

    // Unnamed statements and portals from 12 connections at once, 600 queries.
    const answers = await Promise.all(Array.from({ length: 600 }, async (_, i) =>
      (await pool.query('SELECT $1::int AS n, repeat($2, $1 % 50) AS pad', [i, 'x'])).rows[0]))
    answers.forEach((row, i) => assert.deepEqual(row, { n: i, pad: 'x'.repeat(i % 50) }))

    // 12 transactions interleaving their statements: each sees its own rows only until it commits.
    await Promise.all(Array.from({ length: 12 }, async (_, c) => {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        for (let n = 0; n < 5; n++) await client.query('INSERT INTO t VALUES ($1, $2)', [c, n])
        const { rows: [mine] } = await client.query('SELECT count(*)::int AS n FROM t WHERE conn = $1', [c])
        assert.equal(mine.n, 5)
        if (c % 3 === 0) await client.query('ROLLBACK')
        else await client.query('COMMIT')
      } finally {
        client.release()
      }
    }))
    const { rows: [kept] } = await pool.query('SELECT count(*)::int AS n FROM t')
    assert.equal(kept.n, 8 * 5) // 4 of the 12 rolled back

    // A client that goes away inside a transaction: rolled back, and the others are served again.
    const lost = new pg.Client({ connectionString: url })
    lost.on('error', () => {}) // the termination below is the point
    await lost.connect()
    await lost.query('BEGIN')
    await lost.query("INSERT INTO t VALUES (99, 0)")
    lost.connection.stream.destroy()
    const { rows: [after] } = await pool.query('SELECT count(*)::int AS n FROM t WHERE conn = 99')
    assert.equal(after.n, 0)
  } finally {
    await pool.end()
    await server.close()
    await db.close()
  }
})
