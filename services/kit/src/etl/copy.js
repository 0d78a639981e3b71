// Writing rows into PostgreSQL with COPY (text format), through a pg client or an embedded PGlite.
import { Writable } from 'node:stream'
import { from as copyFrom } from 'pg-copy-streams'

const SPECIAL = /[\\\t\n\r]/
const ESCAPES = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' }

/** One COPY text line: tab-separated, `\N` for null, backslash escapes. */
export function copyLine (values) {
  let line = ''
  for (let i = 0; i < values.length; i++) {
    const v = values[i]
    if (i) line += '\t'
    if (v === null || v === undefined) line += '\\N'
    else if (typeof v !== 'string') line += String(v)
    else line += SPECIAL.test(v) ? v.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c]) : v
  }
  return line + '\n'
}

/**
 * The database side of a load: `query(sql, params)` and `copy(sql)`, a Writable taking COPY text.
 * A pg client streams it (pg-copy-streams).
 */
export function pgTarget (client) {
  return {
    query: (sql, params) => client.query(sql, params),
    copy: (sql) => client.query(copyFrom(sql))
  }
}

/**
 * An in-process PGlite: its wire-protocol server has no COPY FROM STDIN, so the COPY text is
 * collected and handed over as a blob. For the small sample of `npm start`, not for big loads.
 */
export function pgliteTarget (db) {
  return {
    // Without parameters, exec: it runs several statements (a migration file), as pg's simple query does.
    query: (sql, params) => (params?.length ? db.query(sql, params) : db.exec(sql).then((results) => results.at(-1))),
    copy (sql) {
      const chunks = []
      return new Writable({
        write (chunk, encoding, done) { chunks.push(chunk); done() },
        final (done) {
          const blob = new Blob(chunks)
          db.query(sql.replace(/FROM STDIN/i, "FROM '/dev/blob'"), [], { blob }).then(() => done(), done)
        }
      })
    }
  }
}
