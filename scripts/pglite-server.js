// The PostgreSQL wire protocol on a loopback port, in front of one embedded PGlite (for `npm start`),
// so that the services run their ordinary `pg` code against it.
// PGlite is a single session that every client connection shares. Two rules keep them apart:
//   - a connection's messages reach PGlite one whole exchange at a time: everything up to a Sync
//     (Parse, Bind, Describe, Execute, Sync) or a simple Query. Forwarding message by message lets
//     another connection's unnamed statement or portal land in between — under concurrent load,
//     "unnamed prepared statement does not exist", or worse, another client's rows;
//   - while a transaction is open, only the connection that opened it is served; if it goes away,
//     its transaction is rolled back.
import { createServer } from 'node:net'
import { once } from 'node:events'

const SSL_REQUEST = 80877103
const CANCEL_REQUEST = 80877102
const ENDS_EXCHANGE = new Set(['S', 'Q']) // Sync, Query
const TERMINATE = 'X'

/** A simple-protocol Query message. */
function query (sql) {
  const text = Buffer.from(sql + '\0')
  const msg = Buffer.alloc(5 + text.length)
  msg.write('Q', 0)
  msg.writeInt32BE(4 + text.length, 1)
  text.copy(msg, 5)
  return msg
}

/** Serves `db` (a PGlite) on host:port; resolves to { port, close() }. */
export async function servePglite (db, { host = '127.0.0.1', port = 0 } = {}) {
  const queue = [] // { conn, bytes }: whole exchanges, in arrival order
  let owner = null // the connection whose transaction is open
  let running = false

  async function drain () {
    if (running) return
    running = true
    try {
      for (;;) {
        const i = owner ? queue.findIndex((job) => job.conn === owner) : 0
        if (i === -1 || queue.length === 0) break // the transaction's owner has sent nothing yet
        const [job] = queue.splice(i, 1)
        const reply = await db.runExclusive(() => db.execProtocolRaw(job.bytes))
        owner = db.isInTransaction() ? job.conn : null
        if (!job.conn.destroyed) job.conn.write(reply)
        if (owner?.destroyed) queue.push({ conn: owner, bytes: query('ROLLBACK') })
      }
    } finally {
      running = false
    }
  }

  const server = createServer((conn) => {
    let buffer = Buffer.alloc(0)
    let started = false
    let exchange = []
    const send = (bytes) => { queue.push({ conn, bytes }); drain() }
    conn.setNoDelay(true)
    conn.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk])
      for (;;) {
        if (!started) {
          // Before the session: SSLRequest, CancelRequest or StartupMessage, none with a type byte.
          if (buffer.length < 8) return
          const length = buffer.readInt32BE(0)
          const code = buffer.readInt32BE(4)
          if (code === SSL_REQUEST) { conn.write('N'); buffer = buffer.subarray(8); continue }
          if (buffer.length < length) return
          const message = buffer.subarray(0, length)
          buffer = buffer.subarray(length)
          if (code === CANCEL_REQUEST) continue // not supported: the query runs to its end
          started = true
          send(Buffer.from(message))
          continue
        }
        if (buffer.length < 5) return
        const length = 1 + buffer.readInt32BE(1)
        if (buffer.length < length) return
        const type = String.fromCharCode(buffer[0])
        const message = buffer.subarray(0, length)
        buffer = buffer.subarray(length)
        if (type === TERMINATE) { conn.end(); return }
        exchange.push(message)
        if (ENDS_EXCHANGE.has(type)) {
          send(Buffer.concat(exchange))
          exchange = []
        }
      }
    })
    conn.on('error', () => {})
    conn.on('close', () => {
      for (let i = queue.length - 1; i >= 0; i--) if (queue[i].conn === conn) queue.splice(i, 1)
      if (owner === conn) send(query('ROLLBACK'))
    })
  })
  server.listen(port, host)
  await once(server, 'listening')
  return {
    port: server.address().port,
    close: () => new Promise((resolve) => server.close(resolve))
  }
}
