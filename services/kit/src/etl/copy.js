// Writing rows into PostgreSQL with COPY (text format), through a pg client or an embedded PGlite.
import { Writable } from 'node:stream'
import { from as copyFrom } from 'pg-copy-streams'

const SPECIAL = /[\\\t\n\r]/
const ESCAPES = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' }

/**
 * One COPY text line: tab-separated, `\N` for null, backslash escapes. Rewrites `values` in place
 * (a load makes one array per row and drops it): one native join instead of a string per field.
 */
export function copyLine (values) {
  for (let i = 0; i < values.length; i++) {
    const v = values[i]
    if (v === null || v === undefined) values[i] = '\\N'
    else if (typeof v === 'string' && SPECIAL.test(v)) values[i] = v.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c])
  }
  return values.join('\t') + '\n'
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
