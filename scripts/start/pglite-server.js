// The PostgreSQL wire protocol on a loopback port, in front of one embedded PGlite (for `npm start`),
// so that the services run their ordinary `pg` code against it.
// PGlite is a single session that every client connection shares. Two rules keep them apart:
//   - a connection's messages reach PGlite one whole exchange at a time: everything up to a Sync
//     (Parse, Bind, Describe, Execute, Sync) or a simple Query. Forwarding message by message lets
//     another connection's unnamed statement or portal land in between — under concurrent load,
//     "unnamed prepared statement does not exist", or worse, another client's rows;
//   - while a transaction is open, only the connection that opened it is served; if it goes away,
//     its transaction is rolled back.
// And a few bounds keep one client from harming the others or the launcher: every length is
// checked (a bad one closes that connection only); a client that sends faster than it reads is not
// read any more (MAX_QUEUED exchanges waiting, or answers it has not taken) until it catches up; a
// connection idle inside a transaction — which holds every other client — is ended after
// idleInTransactionMs; and a password generated for this server is required. Loopback only.
import { createServer } from 'node:net'
import { once } from 'node:events'
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

const SSL_REQUEST = 80877103
const CANCEL_REQUEST = 80877102
const ENDS_EXCHANGE = new Set(['S', 'Q']) // Sync, Query
const TERMINATE = 'X'
const PASSWORD_MESSAGE = 'p'

/** Bytes of a startup message, at most (PostgreSQL's own limit). */
const MAX_STARTUP = 10_000
/** Bytes of one exchange (all messages up to a Sync, or one Query), at most. */
const MAX_EXCHANGE = 16 * 1024 * 1024
/** Client connections at once, at most. */
export const MAX_CONNECTIONS = 100
/** Exchanges of one connection waiting for PGlite, at most: past that its socket is not read. */
const MAX_QUEUED = 16
/** A connection idle this long inside a transaction (every other client waits for it) is ended. */
const IDLE_IN_TRANSACTION_MS = 5000
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost'])

/** A simple-protocol Query message. */
function query (sql) {
  const text = Buffer.from(sql + '\0')
  const msg = Buffer.alloc(5 + text.length)
  msg.write('Q', 0)
  msg.writeInt32BE(4 + text.length, 1)
  text.copy(msg, 5)
  return msg
}

/** A backend message: type byte, length, body. */
function backend (type, body) {
  const head = Buffer.alloc(5)
  head.write(type, 0)
  head.writeInt32BE(4 + body.length, 1)
  return Buffer.concat([head, body])
}

/** An ErrorResponse that ends the connection (severity FATAL). */
function fatal (code, message) {
  const field = (tag, value) => Buffer.from(`${tag}${value}\0`)
  return backend('E', Buffer.concat([
    field('S', 'FATAL'), field('V', 'FATAL'), field('C', code), field('M', message), Buffer.from([0])
  ]))
}

const AUTH_CLEARTEXT = backend('R', Buffer.from([0, 0, 0, 3]))
const digest = (s) => createHash('sha256').update(s).digest()

/**
 * Serves `db` (a PGlite) on host:port, loopback only. Resolves to { port, password, close() }:
 * clients must give `password` (generated here unless given), which only this process knows.
 */
export async function servePglite (db, {
  host = '127.0.0.1',
  port = 0,
  password = randomBytes(24).toString('base64url'),
  idleInTransactionMs = IDLE_IN_TRANSACTION_MS
} = {}) {
  if (!LOOPBACK.has(host)) throw new Error(`servePglite listens on loopback only, not on ${host}`)
  const expected = digest(password)
  const queue = [] // { conn, bytes }: whole exchanges, in arrival order
  let owner = null // the connection whose transaction is open
  let running = null // the connection whose exchange PGlite is running
  let idle = null // { conn, timer }: the owner, sending nothing

  async function drain () {
    if (running) return
    try {
      for (;;) {
        const i = owner ? queue.findIndex((job) => job.conn === owner) : 0
        if (i === -1 || queue.length === 0) break // the transaction's owner has sent nothing yet
        const [job] = queue.splice(i, 1)
        job.conn.queued--
        running = job.conn
        let reply
        try {
          reply = await db.runExclusive(() => db.execProtocolRaw(job.bytes))
        } catch {
          // PGlite could not take this exchange at all: the connection that sent it goes, not the server.
          reply = null
          drop(job.conn, fatal('08P01', 'protocol error'))
        }
        owner = db.isInTransaction() ? job.conn : null
        if (reply && !job.conn.dropped) job.conn.write(reply)
        job.conn.throttle()
        // Gone while its exchange ran: its transaction is rolled back next.
        if (owner?.dropped && !queue.some((j) => j.conn === owner)) {
          queue.push({ conn: owner, bytes: query('ROLLBACK') })
        }
        running = null
        watchIdle()
      }
    } finally {
      running = null
    }
  }

  // While a transaction's owner sends nothing, every other client waits: it gets idleInTransactionMs
  // from the end of its last exchange.
  function watchIdle () {
    const waiting = owner && !owner.dropped && running !== owner && !queue.some((job) => job.conn === owner)
      ? owner
      : null
    if (idle?.conn === waiting) return // still the same wait: its clock runs on
    clearTimeout(idle?.timer)
    idle = waiting && {
      conn: waiting,
      timer: setTimeout(() => {
        drop(waiting, fatal('25P03', 'terminating connection due to idle-in-transaction timeout'))
      }, idleInTransactionMs).unref()
    }
  }

  // Ends one connection (with a last message, if any): its queued exchanges are forgotten and its
  // open transaction rolled back. The others go on.
  function drop (conn, last) {
    if (conn.dropped) return
    conn.dropped = true
    for (let i = queue.length - 1; i >= 0; i--) if (queue[i].conn === conn) queue.splice(i, 1)
    hangUp(conn, last)
    if (owner === conn) {
      queue.push({ conn, bytes: query('ROLLBACK') })
      drain()
    }
  }

  // Sends a last message and closes; after a second, closes anyway (a client that does not read it).
  function hangUp (conn, last) {
    if (conn.destroyed) return
    conn.end(last)
    setTimeout(() => conn.destroy(), 1000)
  }

  let connections = 0
  const server = createServer((conn) => {
    if (connections >= MAX_CONNECTIONS) return hangUp(conn, fatal('53300', 'sorry, too many clients already'))
    connections++
    conn.on('close', () => connections--)
    // Bytes received and not yet used, kept as chunks: joined once a whole message is in.
    let chunks = []
    let size = 0
    const first = (n) => {
      if (chunks[0].length < n) chunks = [Buffer.concat(chunks, size)]
      return chunks[0].subarray(0, n)
    }
    const take = (n) => {
      const bytes = Buffer.from(first(n)) // a copy: the chunk it came from is not kept alive
      chunks[0] = chunks[0].subarray(n)
      if (!chunks[0].length) chunks.shift()
      size -= n
      return bytes
    }
    let state = 'startup' // then 'password', then 'ready'
    let startup = null
    let exchange = []
    let exchangeSize = 0
    const send = (bytes) => {
      queue.push({ conn, bytes })
      conn.queued++
      watchIdle()
      drain()
    }
    // Backpressure: this client is read only while few of its exchanges wait and it takes its answers.
    conn.queued = 0
    const flowing = () => !conn.dropped && conn.queued < MAX_QUEUED && !conn.writableNeedDrain
    const pump = () => { while (flowing() && next()); } // the messages already received, as far as allowed
    conn.throttle = () => {
      pump()
      if (flowing()) conn.resume()
      else conn.pause()
    }
    conn.on('drain', conn.throttle)
    const refuse = (code, message) => { drop(conn, fatal(code, message)); return false }

    // Handles the next whole message, if it is in; returns false when it must wait for more bytes.
    function next () {
      if (state === 'startup') {
        // Before the session: SSLRequest, CancelRequest or StartupMessage, none with a type byte.
        if (size < 8) return false
        const head = first(8)
        const length = head.readInt32BE(0)
        const code = head.readInt32BE(4)
        if (length < 8 || length > MAX_STARTUP) return refuse('08P01', 'invalid length of startup packet')
        if (size < length) return false
        const message = take(length)
        if (code === SSL_REQUEST) { conn.write('N'); return true }
        // A cancel request is refused: the query runs to its end.
        if (code === CANCEL_REQUEST) return refuse('0A000', 'cancel requests are not supported')
        startup = message
        state = 'password'
        conn.write(AUTH_CLEARTEXT) // loopback only: the password never leaves this machine
        return true
      }
      if (size < 5) return false
      const head = first(5)
      const type = String.fromCharCode(head[0])
      const length = head.readInt32BE(1) // signed: 0xffffffff is -1
      if (length < 4 || length + exchangeSize > MAX_EXCHANGE) return refuse('08P01', `invalid message length ${length}`)
      if (size < 1 + length) return false
      const message = take(1 + length)
      if (state === 'password') {
        const end = message.indexOf(0, 5)
        const given = message.subarray(5, end === -1 ? message.length : end)
        if (type !== PASSWORD_MESSAGE || !timingSafeEqual(digest(given), expected)) {
          return refuse('28P01', 'password authentication failed')
        }
        state = 'ready'
        send(startup) // PGlite answers AuthenticationOk and the session's parameters
        startup = null
        return true
      }
      if (type === TERMINATE) { drop(conn); return false }
      exchange.push(message)
      exchangeSize += message.length
      if (ENDS_EXCHANGE.has(type)) {
        send(Buffer.concat(exchange, exchangeSize))
        exchange = []
        exchangeSize = 0
      }
      return true
    }

    conn.setNoDelay(true)
    conn.on('data', (chunk) => {
      if (conn.dropped) return
      chunks.push(chunk)
      size += chunk.length
      conn.throttle()
    })
    conn.on('error', () => {})
    conn.on('close', () => drop(conn))
  })
  server.listen(port, host)
  await once(server, 'listening')
  return {
    port: server.address().port,
    password,
    close: () => new Promise((resolve) => server.close(resolve))
  }
}
