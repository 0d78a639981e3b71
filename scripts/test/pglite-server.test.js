// The embedded PostgreSQL of `npm start` under concurrent clients: many pg connections sending
// parameterized queries and transactions at once, each must get its own answers. And against
// clients that misbehave: bad lengths, a wrong password, an idle transaction, too many connections.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { once } from 'node:events'
import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { PGlite } from '@electric-sql/pglite'
import { readFileSync } from 'node:fs'
import { servePglite, MAX_CONNECTIONS } from '../start/pglite-server.js'

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
const startup = () => {
  const body = Buffer.concat([
    int32(196608), cstr('user'), cstr('postgres'), cstr('database'), cstr('postgres'), Buffer.from([0])
  ])
  return Buffer.concat([int32(4 + body.length), body])
}
const parse = (sql) => message('P', cstr(''), cstr(sql), int16(0))
const bind = (value) => message('B', cstr(''), cstr(''), int16(0), int16(1), int32(Buffer.byteLength(value)),
  Buffer.from(value), int16(0))
const execute = () => Buffer.concat([
  message('D', Buffer.from('P'), cstr('')),
  message('E', cstr(''), int32(0)),
  message('S')
])
const simple = (sql) => message('Q', cstr(sql))

const password = (pw) => message('p', cstr(pw))
const urlOf = (server) => `postgres://postgres:${server.password}@127.0.0.1:${server.port}/postgres`

/**
 * A raw client, logged in: write(bytes), untilReady() → the message types received up to
 * ReadyForQuery, and the text; closed → resolves when the server closes the connection.
 */
async function rawClient (port, pw) {
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  let received = Buffer.alloc(0)
  socket.on('data', (d) => { received = Buffer.concat([received, d]) })
  socket.on('error', () => {})
  // Not events.once: it rejects on 'error', and a reset after the test (the server stopping) would be
  // an unhandled rejection.
  const closed = new Promise((resolve) => socket.once('close', () => resolve(received.toString('latin1'))))
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
  while (received.length < 9) await once(socket, 'data') // AuthenticationCleartextPassword
  assert.equal(received.readInt32BE(5), 3, 'the server asks for a password')
  received = received.subarray(9)
  socket.write(password(pw))
  await untilReady()
  return { write: (b) => socket.write(b), untilReady, end: () => socket.end(), closed }
}

test('an exchange is atomic: another client\'s query sent between its Parse/Bind and its Execute/Sync ' +
  'does not break it', async () => {
  const db = await PGlite.create()
  const server = await servePglite(db)
  const [a, b] = await Promise.all([rawClient(server.port, server.password), rawClient(server.port, server.password)])
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

test('concurrent connections: every parameterized answer is its own, transactions stay apart, ' +
  'a dropped one rolls back', async () => {
  const db = await PGlite.create()
  const server = await servePglite(db)
  const url = urlOf(server)
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
    await lost.query('INSERT INTO t VALUES (99, 0)')
    lost.connection.stream.destroy()
    const { rows: [after] } = await pool.query('SELECT count(*)::int AS n FROM t WHERE conn = 99')
    assert.equal(after.n, 0)
  } finally {
    await pool.end()
    await server.close()
    await db.close()
  }
})

/**
 * The server in a process of its own (as under npm start), so that a client able to hang or bloat
 * it shows as a dead or swollen process, not a stuck test: { port, password, pid, stop() }.
 */
async function serverProcess (options = {}) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', `
    import { PGlite } from '@electric-sql/pglite'
    import { servePglite } from ${JSON.stringify(new URL('../start/pglite-server.js', import.meta.url).href)}
    const server = await servePglite(await PGlite.create(), ${JSON.stringify(options)})
    console.log(JSON.stringify({ port: server.port, password: server.password }))`],
  { stdio: ['ignore', 'pipe', 'inherit'] })
  const [line] = await once(child.stdout, 'data')
  return {
    ...JSON.parse(line),
    pid: child.pid,
    alive: () => child.exitCode === null,
    stop: () => { child.kill(); return once(child, 'exit') }
  }
}

// Resident memory of a process now, in MB (PGlite's start-up peaks far above where it settles: the
// peak says nothing).
const rssMb = (pid) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024)

test('bad lengths close the offending connection only; the server stays up and small', async () => {
  const server = await serverProcess()
  const pool = new pg.Pool({ connectionString: urlOf(server), max: 2, query_timeout: 5000 })
  try {
    assert.equal((await pool.query('SELECT 1 AS one')).rows[0].one, 1)
    const before = rssMb(server.pid)
    const bad = [
      Buffer.from([0x51, 0xff, 0xff, 0xff, 0xff]), // Query, length -1 (0xffffffff)
      Buffer.from([0x51, 0x00, 0x00, 0x00, 0x03]), // shorter than its own length field
      Buffer.from([0x51, 0x7f, 0xff, 0xff, 0xff]), // 2 GB announced: refused before any of it is kept
      Buffer.concat([
        message('P', cstr(''), cstr('SELECT 1'), int16(0)),
        Buffer.from([0x42, 0x01, 0x00, 0x00, 0x00]) // an exchange past 16 MB
      ])
    ]
    for (const bytes of bad) {
      const c = await rawClient(server.port, server.password)
      c.write(bytes)
      const last = await Promise.race([c.closed, sleep(5000).then(() => 'still open')])
      assert.match(last, /FATAL.*08P01.*invalid message length/, `${bytes.toString('hex')}: closed with a reason`)
      assert.equal((await pool.query('SELECT 2 AS two')).rows[0].two, 2, 'the others are served')
    }
    // The same before the session: a startup packet of length -1, or of 1 GB.
    for (const bytes of [Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 3, 0, 0]), Buffer.from([0x40, 0, 0, 0, 0, 3, 0, 0])]) {
      const socket = connect(server.port, '127.0.0.1')
      socket.on('error', () => {})
      let text = ''
      socket.on('data', (d) => { text += d.toString('latin1') })
      socket.write(bytes)
      await Promise.race([once(socket, 'close'), sleep(5000)])
      assert.match(text, /08P01.*invalid length of startup packet/)
    }
    assert.ok(server.alive())
    assert.equal((await pool.query('SELECT 3 AS three')).rows[0].three, 3)
    const grown = rssMb(server.pid) - before
    assert.ok(grown < 128, `the server process grew by ${grown} MB`)
  } finally {
    await pool.end()
    await server.stop()
  }
})

test('a client that sends without reading is not read any more: the server stays small, ' +
  'the others are served', async () => {
  const server = await serverProcess()
  const pool = new pg.Pool({ connectionString: urlOf(server), max: 2, query_timeout: 20_000 })
  const lost = [] // an idle pool connection that breaks: reported below, not thrown at the runner
  pool.on('error', (err) => lost.push(err.message))
  let greedy
  try {
    assert.equal((await pool.query('SELECT 1 AS one')).rows[0].one, 1)
    const before = rssMb(server.pid)
    greedy = await rawClient(server.port, server.password)
    // 4,000 queries answering 64 KB each: 256 MB of answers it never reads.
    const ask = simple("SELECT repeat('x', 65536)")
    for (let i = 0; i < 4000; i++) greedy.write(ask)
    await sleep(3000)
    assert.ok(server.alive(), 'the server process is alive')
    assert.equal((await pool.query('SELECT 2 AS two')).rows[0].two, 2, 'the others are served')
    assert.deepEqual(lost, [], 'no other connection was lost')
    const grown = rssMb(server.pid) - before
    assert.ok(grown < 128, `the server process grew by ${grown} MB`)
  } finally {
    greedy?.end()
    await pool.end()
    await server.stop()
  }
})

test('a password generated per start is required; loopback only', async () => {
  const db = await PGlite.create()
  const server = await servePglite(db)
  try {
    assert.ok(server.password.length >= 32)
    assert.notEqual((await servePglite(db).then(async (other) => { await other.close(); return other.password })),
      server.password)
    for (const wrong of ['', 'postgres', server.password.slice(1)]) {
      const client = new pg.Client({
        connectionString: `postgres://postgres@127.0.0.1:${server.port}/postgres`,
        password: wrong || 'x'
      })
      await assert.rejects(client.connect(), /password authentication failed/)
    }
    const client = new pg.Client({ connectionString: urlOf(server) })
    await client.connect()
    assert.equal((await client.query('SELECT current_user AS u')).rows[0].u, 'postgres')
    await client.end()
    await assert.rejects(servePglite(db, { host: '0.0.0.0' }), /loopback only/)
  } finally {
    await server.close()
    await db.close()
  }
})

test('a client idle inside a transaction is ended after the bound; the others, new ones included, go on', async () => {
  const db = await PGlite.create()
  const server = await servePglite(db, { idleInTransactionMs: 1000 })
  const url = urlOf(server)
  const idle = new pg.Client({ connectionString: url })
  idle.on('error', () => {}) // its termination is the point
  const busy = new pg.Client({ connectionString: url })
  try {
    await idle.connect()
    await busy.connect()
    await idle.query('CREATE TABLE t (n int)')
    // A transaction that works longer than the bound, statement by statement, is not idle.
    await busy.query('BEGIN')
    for (let i = 0; i < 4; i++) await busy.query('SELECT pg_sleep(0.4)')
    await busy.query('COMMIT')

    await idle.query('BEGIN')
    await idle.query('INSERT INTO t VALUES (1)')
    const started = Date.now()
    const late = new pg.Client({ connectionString: url }) // a new connection while the transaction holds PGlite
    await late.connect()
    assert.deepEqual((await late.query('SELECT count(*)::int AS n FROM t')).rows, [{ n: 0 }], 'rolled back')
    const waited = Date.now() - started
    assert.ok(waited >= 800 && waited < 10_000, `the others waited ${waited} ms`)
    await late.end()
    await assert.rejects(idle.query('SELECT 1'), 'the idle client was disconnected')
  } finally {
    await busy.end()
    await idle.end().catch(() => {})
    await server.close()
    await db.close()
  }
})

test('too many connections: the one past the bound is refused, the others stay', async () => {
  const db = await PGlite.create()
  const server = await servePglite(db)
  const sockets = []
  try {
    for (let i = 0; i < MAX_CONNECTIONS; i++) {
      const s = connect(server.port, '127.0.0.1')
      s.on('error', () => {})
      sockets.push(s)
      await once(s, 'connect')
    }
    const client = new pg.Client({ connectionString: urlOf(server) })
    await assert.rejects(client.connect(), /too many clients/)
    sockets.pop().destroy()
    for (let i = 0; ; i++) { // as soon as the server has seen that one close
      const ok = new pg.Client({ connectionString: urlOf(server) })
      try {
        await ok.connect()
        await ok.end()
        break
      } catch (err) {
        if (i === 20) throw err
        await sleep(100)
      }
    }
  } finally {
    for (const s of sockets) s.destroy()
    await server.close()
    await db.close()
  }
})
