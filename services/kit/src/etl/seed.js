// A generator's rows straight into PostgreSQL: no CSV file in between and no row checks, since a
// generator's rows are valid by construction (the loader and its checks are for files from
// elsewhere). Rows come in parts (blocks of keys, each from its own seeded PRNG, so the data does
// not depend on how many streams there are); each stream is a connection of its own that takes the
// next part and sends it with binary COPY into `<table>_load`, whose indexes are then built and
// which is swapped in as a load does. PostgreSQL parses the values (jsonb above all) on as many
// backends as there are streams: with one stream, that parsing on one core is the whole bound.
import { availableParallelism } from 'node:os'
import { once } from 'node:events'
import { finished } from 'node:stream/promises'
import { buildIndexes, swap } from './load.js'
import { createProgress } from './progress.js'

const CHUNK = 1 << 18 // bytes per write to a COPY stream
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')

/**
 * @param {object} o
 * @param {() => Promise<{ query: Function, copy: Function, end: Function }>} o.connect  a new
 *   connection (pgTarget of a connected client, plus `end()`)
 * @param {{ table: string, columns: Record<string, 'int4'|'text'|'jsonb'>, sequence?: string,
 *   primaryKey?: string }} o.spec
 *   columns in the order the rows give them; a text or jsonb value is a string, a Buffer of UTF-8,
 *   or an array of those written one after another (a generator that assembles values from a
 *   pool of pre-encoded pieces spares itself joining and encoding them);
 *   null is NULL
 * @param {number} o.parts               how many parts there are
 * @param {(part: number) => Iterable<any[]>} o.rows  the rows of one part
 * @param {number} [o.streams]           connections at once (default: the machine's CPUs)
 * @param {number} [o.swapWaitSeconds]   how long the swap keeps asking for its locks (see load.js swap)
 * @returns {{ table, rows, seconds, phases }}
 */
export async function seedTable ({
  connect,
  spec,
  parts,
  rows,
  streams = availableParallelism(),
  progress = process.stderr.isTTY ? true : 'lines',
  out = process.stderr,
  swapWaitSeconds
}) {
  const started = Date.now()
  const { table } = spec
  const load = `${table}_load`
  const names = Object.keys(spec.columns)
  for (const [name, type] of Object.entries(spec.columns)) {
    if (!['int4', 'text', 'jsonb'].includes(type)) {
      throw new Error(`${table}.${name}: seedTable writes int4, text and jsonb, not ${type}`)
    }
  }
  const db = await connect()
  try {
    // Committed before the streams start, so that all of them see it (no WAL-free COPY, which needs
    // the table created in the COPY's own transaction: measured, parallel COPY gains far more).
    await db.query(`DROP TABLE IF EXISTS ${load}`)
    await db.query(`CREATE TABLE ${load} (LIKE ${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS ` +
      'INCLUDING COMPRESSION INCLUDING STORAGE)')
    const meter = progress === false
      ? null
      : createProgress({ stream: out, tty: progress === true, label: table, totalBytes: 0 })
    let next = 0
    let sent = 0
    let bytes = 0
    let partsDone = 0
    let failed = false // one stream failing stops the others at their next chunk
    const stream = async () => {
      const conn = await connect()
      try {
        const copy = conn.copy(`COPY ${load} (${names.join(', ')}) FROM STDIN (FORMAT binary)`)
        let refused = null // what the server said, when it ended this COPY early
        const copied = finished(copy).catch((err) => { refused = err; failed = true; throw err })
        copied.catch(() => {}) // awaited below; an early failure must not be an unhandled rejection
        const writer = binaryRows(Object.values(spec.columns))
        writer.header()
        try {
          for (let part = next++; part < parts; part = next++) {
            for (const row of rows(part)) {
              writer.row(row)
              sent++
              if (writer.full()) {
                if (failed) {
                  throw refused ?? Object.assign(new Error('stopped: another stream failed'), { stopped: true })
                }
                const chunk = writer.take()
                bytes += chunk.length
                if (!copy.write(chunk)) await once(copy, 'drain')
              }
            }
            partsDone++
            meter?.update(sent, bytes, (bytes / partsDone) * parts) // total: estimated from the parts so far
          }
          writer.trailer()
          copy.end(writer.take())
        } catch (err) {
          copy.destroy(err)
          throw err
        }
        await copied
      } catch (err) {
        failed = true
        throw err
      } finally {
        await conn.end()
      }
    }
    let t0 = Date.now()
    const ends = await Promise.allSettled(Array.from({ length: Math.max(1, Math.min(streams, parts)) }, stream))
    const failures = ends.filter((e) => e.status === 'rejected').map((e) => e.reason)
    if (failures.length) throw failures.find((err) => !err.stopped) ?? failures[0] // the cause, not its echoes
    meter?.done(sent, bytes)
    const phases = { copy: seconds(t0) }
    t0 = Date.now()
    await buildIndexes(db, table)
    phases.indexes = seconds(t0)
    t0 = Date.now()
    await swap(db, [spec], { swapWaitSeconds })
    phases.swap = seconds(t0)
    const summary = { table, rows: sent, seconds: seconds(started), phases }
    if (progress !== false) {
      const phaseTimes = Object.entries(phases).map(([p, s]) => `${p} ${s} s`).join(', ')
      out.write(`${table}: ${sent.toLocaleString('en-US')} rows in ${summary.seconds} s (${phaseTimes})\n`)
    }
    return summary
  } catch (err) {
    await db.query(`DROP TABLE IF EXISTS ${load}`).catch(() => {})
    throw err
  } finally {
    await db.end()
  }
}

const seconds = (since) => Math.round((Date.now() - since) / 100) / 10

/**
 * PostgreSQL's binary COPY format, written row by row into a chunk: a 2-byte field count, then each
 * field as a 4-byte length (-1: NULL) and its bytes. int4 is 4 bytes big-endian; text is UTF-8;
 * jsonb is a version byte (1) and the JSON text, which the server parses.
 */
function binaryRows (types) {
  let buf = Buffer.allocUnsafe(CHUNK)
  let at = 0
  const room = (n) => {
    if (at + n <= buf.length) return
    const bigger = Buffer.allocUnsafe(Math.max(buf.length * 2, at + n))
    buf.copy(bigger, 0, 0, at)
    buf = bigger
  }
  const piece = (p) => {
    if (typeof p === 'string') {
      room(3 * p.length) // a UTF-16 unit is at most 3 bytes of UTF-8
      at += buf.write(p, at)
    } else {
      room(p.length)
      at += p.copy(buf, at)
    }
  }
  const bytes = (value, version) => {
    room(5)
    const lengthAt = at
    at += 4
    if (version) buf[at++] = version
    if (Array.isArray(value)) for (const p of value) piece(p)
    else piece(value)
    buf.writeInt32BE(at - lengthAt - 4, lengthAt)
  }
  return {
    header () {
      room(19)
      at += SIGNATURE.copy(buf, at)
      buf.writeInt32BE(0, at) // flags
      buf.writeInt32BE(0, at + 4) // header extension length
      at += 8
    },
    row (values) {
      room(2)
      buf.writeInt16BE(types.length, at)
      at += 2
      for (let i = 0; i < types.length; i++) {
        const v = values[i]
        if (v === null || v === undefined) {
          room(4)
          buf.writeInt32BE(-1, at)
          at += 4
        } else if (types[i] === 'int4') {
          room(8)
          buf.writeInt32BE(4, at)
          buf.writeInt32BE(v, at + 4)
          at += 8
        } else {
          bytes(v, types[i] === 'jsonb' ? 1 : 0)
        }
      }
    },
    trailer () {
      room(2)
      buf.writeInt16BE(-1, at)
      at += 2
    },
    full: () => at >= CHUNK - 4096,
    /** The bytes written since the last take, as a buffer of their own. */
    take () {
      const chunk = buf.subarray(0, at)
      buf = Buffer.allocUnsafe(CHUNK)
      at = 0
      return chunk
    }
  }
}
