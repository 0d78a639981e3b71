// Loads CSV files into PostgreSQL tables, whatever their size, in constant memory:
//   stream → parse → check each row (types, duplicate keys, references to tables loaded before)
//   → COPY into `<table>_load`, created in the same transaction (with wal_level=minimal the COPY
//   writes no WAL) → build the live table's constraints and indexes → ANALYZE (on a second
//   connection, while the next file is read and copied) → swap all tables in
//   one short transaction. Readers see the old data until the swap; running a load twice gives the
//   same state. Every row that is not loaded is written to the rejects file with its reason, and
//   every row changed on the way is counted as a fix: nothing is dropped or altered silently.
// A load whose files are not a plausible replacement (missing, empty, no header, too few rows, too
// many rejected) is refused before the swap: the live tables are never touched.
import { createReadStream, createWriteStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { once } from 'node:events'
import { finished } from 'node:stream/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { join } from 'node:path'
import { CsvParser, MAX_RECORD } from './csv.js'
import { copyLine } from './copy.js'
import { IdSet } from './idset.js'
import { createProgress } from './progress.js'
import { REJECT, converter } from './column-types.js'

const FLUSH_AT = 1 << 16 // characters of COPY text per write

/**
 * What a load accepts by default (the `load` command's --min-rows, --max-reject-ratio,
 * --max-record-length, --swap-wait).
 */
export const LOAD_DEFAULTS = {
  minRows: 1, // rows loaded from each file, at least
  maxRejectRatio: 0.01, // of the rows read from each file, at most this fraction rejected…
  maxRecord: MAX_RECORD, // characters of one CSV record
  swapWaitSeconds: 300 // how long the swap keeps trying to take its locks
}
// …beyond this many: a small file with a few bad rows is still a plausible replacement.
const REJECTS_ALLOWED = 10
// The swap asks for its locks with this lock_timeout, then lets readers run for the same time
// before it asks again: a long reader (pg_dump) delays other readers by at most this much, instead
// of making them queue behind the swap's DROP TABLE until their statement timeout.
const SWAP_LOCK_TIMEOUT_MS = 1000

/**
 * The load did not swap: its input is not a plausible replacement, or it could not take its locks.
 * Its message is one line.
 */
export class LoadRefused extends Error {}

/**
 * @typedef {object} TableSpec
 * @property {string} file        CSV file name in the folder
 * @property {string} table       live table (created by the migrations)
 * @property {Record<string,string>} columns  CSV column → type (id, count, price, bool, text, json;
 *   `?` nullable), in table order
 * @property {Record<string,string[]>} [aliases]  other header names of a column
 * @property {string} [primaryKey]  an `id` column that must be unique; other tables may reference it
 * @property {Record<string,string>} [references]  column → table whose primary keys must contain it
 * @property {string} [rank]      extra column filled with the dense 1-based rank of the primary key
 * @property {string} [sequence]  the sequence behind the primary key's default: moved past the highest
 *   loaded key in the swap, so that rows inserted later never collide with loaded ones
 * @property {(fields: string[], header: string[]) => string|null} [fix]  repairs a row whose field
 *   count is wrong (in place); returns the name of the fix, or null to reject the row
 */

/**
 * @param {{ db: object, indexDb?: object, dir: string, tables: TableSpec[], rejectsFile: string,
 *   progress?: true|'lines'|false, out?: NodeJS.WritableStream,
 *   minRows?: number, maxRejectRatio?: number, maxRecord?: number, swapWaitSeconds?: number }} o
 *   db: pgTarget(client) or pgliteTarget(pglite); indexDb: a second connection to the same database,
 *   on which each table's keys and indexes are built while the next file is copied (default: db,
 *   after each file); tables in dependency order (referenced first);
 *   progress: true a redrawn bar (a terminal), 'lines' a plain line every 5 s, false nothing;
 *   the limits: see LOAD_DEFAULTS
 * @returns summary: { files: [...], tables: string[], rejectsFile, seconds, phases }
 * @throws {LoadRefused} when a file is missing, empty or without the columns, loads fewer than minRows
 *   rows or rejects more than maxRejectRatio of them, or the swap cannot lock the tables within
 *   swapWaitSeconds; the live tables are then as they were
 */
export async function loadTables ({
  db,
  indexDb = db,
  dir,
  tables,
  rejectsFile,
  progress = process.stderr.isTTY ? true : 'lines',
  out = process.stderr,
  ...options
}) {
  const limits = { ...LOAD_DEFAULTS, ...definedOnly(options) }
  const started = Date.now()
  const phases = {}
  const keys = new Map() // table -> IdSet of its primary keys, for references
  // Every file is there before anything is read: a missing last file must not cost a whole load.
  for (const spec of tables) await statFile(dir, spec.file)
  const files = []
  // Each loaded table's keys and indexes, built on indexDb (a second connection) while the next file
  // is read and copied: PostgreSQL builds them with CPU the parsing leaves it.
  const builds = []
  try {
    const rejects = createWriteStream(rejectsFile)
    rejects.write('file,line,reason,row\n')
    try {
      for (const spec of tables) {
        const t0 = Date.now()
        const result = await copyFile({ db, dir, spec, keys, rejects, progress, out, maxRecord: limits.maxRecord })
        files.push(result)
        phases[`copy ${spec.file}`] = seconds(t0)
        plausible(result, limits)
        const build = buildIndexes(indexDb, spec.table)
        build.catch(() => {}) // awaited below
        builds.push(build)
        if (indexDb === db) await build // one connection: one statement at a time
      }
    } finally {
      rejects.end()
      await finished(rejects)
    }
    let t0 = Date.now()
    await Promise.all(builds)
    phases['indexes after the last copy'] = seconds(t0)
    t0 = Date.now()
    await swap(db, tables, limits)
    phases.swap = seconds(t0)
  } catch (err) {
    await Promise.allSettled(builds)
    // The loaded copies are of no use now (and can be large): dropped, the live tables untouched.
    for (const spec of tables) await db.query(`DROP TABLE IF EXISTS ${spec.table}_load`).catch(() => {})
    if (err instanceof LoadRefused && files.length && progress !== false) {
      out.write(formatSummary({ files, rejectsFile, seconds: seconds(started), phases }))
    }
    throw err
  }
  const summary = { files, tables: tables.map((s) => s.table), rejectsFile, seconds: seconds(started), phases }
  if (progress !== false) out.write(formatSummary(summary))
  return summary
}

const definedOnly = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined))

async function statFile (dir, file) {
  const path = join(dir, file)
  let st
  try {
    st = await stat(path)
  } catch (err) {
    throw new LoadRefused(`${file}: ${err.code === 'ENOENT' ? 'not found' : 'cannot be read'} in ${dir}`)
  }
  if (!st.isFile()) throw new LoadRefused(`${file}: not a file, in ${dir}`)
  return st
}

// A file is a plausible replacement of its table when it loaded at least minRows rows and rejected
// no more than maxRejectRatio of the rows read (or no more than REJECTS_ALLOWED).
function plausible (f, { minRows, maxRejectRatio }) {
  const n = (x) => x.toLocaleString('en-US')
  const why = Object.entries(f.reasons)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([r, c]) => `${r} ${n(c)}`)
    .join(', ')
  if (f.loaded < minRows) {
    const rejected = f.rejected ? `, ${n(f.rejected)} rejected: ${why}` : ''
    throw new LoadRefused(`${f.file}: ${n(f.loaded)} rows loaded (${n(f.read)} read${rejected}), ` +
      `fewer than --min-rows ${n(minRows)}`)
  }
  if (f.rejected > REJECTS_ALLOWED && f.rejected > maxRejectRatio * f.read) {
    throw new LoadRefused(`${f.file}: ${n(f.rejected)} of ${n(f.read)} rows rejected (${why}), ` +
      `more than --max-reject-ratio ${maxRejectRatio}`)
  }
}

// A header or a record shown in a message: one line, printable, short.
const shown = (text) => JSON.stringify(text.length > 80 ? text.slice(0, 80) + '…' : text)

const seconds = (since) => Math.round((Date.now() - since) / 100) / 10

async function copyFile ({ db, dir, spec, keys, rejects, progress, out, maxRecord }) {
  const path = join(dir, spec.file)
  const { size } = await statFile(dir, spec.file)
  const names = Object.keys(spec.columns)
  const convert = names.map((n) => converter(spec.columns[n]))
  const pkIndex = spec.primaryKey ? names.indexOf(spec.primaryKey) : -1
  const refs = Object.entries(spec.references ?? {}).map(([col, table]) => {
    if (!keys.has(table)) throw new Error(`${spec.table}.${col} references ${table}, which is not loaded before it`)
    return { index: names.indexOf(col), ids: keys.get(table), reason: `${col}_missing` }
  })
  const ids = new IdSet()
  if (pkIndex !== -1) keys.set(spec.table, ids)

  const result = {
    file: spec.file,
    table: spec.table,
    read: 0,
    loaded: 0,
    rejected: 0,
    reasons: {},
    fixes: {},
    bytes: size
  }
  const meter = progress === false
    ? null
    : createProgress({ stream: out, tty: progress === true, label: spec.file, totalBytes: size })
  let order = null // CSV position of each column, from the header
  let header
  let lastKey = 0
  let outOfOrder = false
  let buffer = ''

  const reject = (reason, line, raw) => {
    result.rejected++
    result.reasons[reason] = (result.reasons[reason] ?? 0) + 1
    rejects.write(`${spec.file},${line},${reason},"${raw.replaceAll('"', '""')}"\n`)
  }
  const onRecord = (fields, line, raw) => {
    if (!order) {
      if (fields.tooLong) {
        throw new LoadRefused(`${spec.file}: the header is longer than --max-record-length ${maxRecord}: ` +
          'not a CSV file?')
      }
      header = fields.map((h) => h.trim())
      order = names.map((n) => {
        const at = header.findIndex((h) => h === n || spec.aliases?.[n]?.includes(h))
        if (at === -1) {
          const other = header.length === 1 && [';', '\t', '|'].find((d) => raw.includes(d))
          throw new LoadRefused(`${spec.file}: no column ${n} in the header ${shown(raw)}` +
            (other ? ` (${JSON.stringify(other)}-separated? the columns must be separated by commas)` : ''))
        }
        return at
      })
      return
    }
    result.read++
    if (fields.tooLong) return reject('record_too_long', line, raw)
    if (fields.unclosedQuote) return reject('unclosed_quote', line, raw)
    if (fields.length !== header.length) {
      const fix = spec.fix?.(fields, header)
      if (!fix) return reject('column_count', line, raw)
      result.fixes[fix] = (result.fixes[fix] ?? 0) + 1
    }
    const values = new Array(names.length)
    for (let i = 0; i < names.length; i++) {
      const v = convert[i](fields[order[i]])
      if (v === REJECT) return reject(`invalid_${names[i]}`, line, raw)
      values[i] = v
    }
    for (const ref of refs) if (!ref.ids.has(+values[ref.index])) return reject(ref.reason, line, raw)
    if (pkIndex !== -1) {
      const key = +values[pkIndex]
      if (!ids.add(key)) return reject('duplicate_id', line, raw)
      if (key < lastKey) outOfOrder = true
      lastKey = key
    }
    if (spec.rank) values.push(result.loaded + 1)
    result.loaded++
    buffer += copyLine(values)
  }

  const load = `${spec.table}_load`
  const columns = spec.rank ? [...names, spec.rank] : names
  await db.query(`DROP TABLE IF EXISTS ${load}`)
  await db.query('BEGIN')
  let copy
  try {
    await db.query(`CREATE TABLE ${load} (LIKE ${spec.table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS ` +
      'INCLUDING COMPRESSION INCLUDING STORAGE)')
    copy = db.copy(`COPY ${load} (${columns.join(', ')}) FROM STDIN WITH (FREEZE)`)
    const copied = finished(copy)
    copied.catch(() => {}) // awaited below; an early failure must not be an unhandled rejection
    const parser = new CsvParser(onRecord, { maxRecord })
    let bytes = 0
    // 64 KiB chunks: a chunk's text, the record left over and the substrings cut from them stay in
    // V8's young generation (larger chunks took more time and more memory).
    for await (const chunk of createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 16 })) {
      bytes += Buffer.byteLength(chunk) // progress in bytes of the file, not characters
      parser.push(chunk)
      if (buffer.length >= FLUSH_AT) {
        const more = copy.write(buffer)
        buffer = ''
        if (!more) await once(copy, 'drain')
      }
      meter?.update(result.read, bytes)
    }
    parser.end()
    if (!order) throw new LoadRefused(`${spec.file}: empty, not even a header`)
    if (buffer) copy.write(buffer)
    buffer = ''
    copy.end()
    await copied
    if (spec.rank && outOfOrder) {
      // Ids came out of order: rank them in SQL (a rewrite of the table, so only when needed).
      await db.query(`UPDATE ${load} t SET ${spec.rank} = r.rank
        FROM (SELECT ${spec.primaryKey} AS key, row_number() OVER (ORDER BY ${spec.primaryKey}) AS rank FROM ${load}) r
        WHERE t.${spec.primaryKey} = r.key`)
    }
    await db.query('COMMIT')
    meter?.done(result.read, size)
  } catch (err) {
    if (copy && !copy.writableFinished) copy.destroy(err) // ends COPY mode, so ROLLBACK can run
    await db.query('ROLLBACK').catch(() => {})
    throw err
  }
  return result
}

// The live table's primary key, unique constraints and indexes, built again on the loaded table.
export async function buildIndexes (db, table) {
  const load = `${table}_load`
  const { rows: constraints } = await db.query(
    `SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
     WHERE conrelid = $1::regclass AND contype IN ('p', 'u') ORDER BY contype`, [table])
  for (const c of constraints) await db.query(`ALTER TABLE ${load} ADD CONSTRAINT ${c.conname}_load ${c.def}`)
  for (const index of await plainIndexes(db, table)) {
    const def = index.def.replace(/^(CREATE (?:UNIQUE )?INDEX )(\S+)( ON (?:ONLY )?)(\S+)/,
      (all, create, name, on, target) => `${create}${name}_load${on}${target.replace(/[^.]+$/, load)}`)
    await db.query(def)
  }
  await db.query(`ANALYZE ${load}`)
}

async function plainIndexes (db, table) {
  const { rows } = await db.query(
    `SELECT i.relname AS name, pg_get_indexdef(i.oid) AS def FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
     WHERE x.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)`,
    [table]
  )
  return rows
}

/**
 * One short transaction: readers switch from the old tables to the new ones all at once. Its locks
 * are asked for with a short lock_timeout (SWAP_LOCK_TIMEOUT_MS) and asked for again until
 * `swapWaitSeconds` have passed; then LoadRefused (the new tables stay `<table>_load`).
 */
export async function swap (db, specs, {
  swapWaitSeconds = LOAD_DEFAULTS.swapWaitSeconds,
  lockTimeoutMs = SWAP_LOCK_TIMEOUT_MS
} = {}) {
  const deadline = Date.now() + swapWaitSeconds * 1000
  for (let attempt = 1; ; attempt++) {
    try {
      return await swapOnce(db, specs, lockTimeoutMs)
    } catch (err) {
      if (err.code !== '55P03') throw err // lock_not_available: a reader holds a table longer than the lock_timeout
      if (Date.now() + lockTimeoutMs >= deadline) {
        throw new LoadRefused(`swap: could not lock ${specs.map((s) => s.table).join(', ')} in ${attempt} tries ` +
          `over ${swapWaitSeconds} s (--swap-wait): a long transaction is reading them`)
      }
      await sleep(lockTimeoutMs)
    }
  }
}

async function swapOnce (db, specs, lockTimeoutMs) {
  await db.query('BEGIN')
  try {
    await db.query(`SET LOCAL lock_timeout = ${Math.round(lockTimeoutMs)}`)
    // Every lock first, in one statement: the rest of the transaction then waits on nothing.
    await db.query(`LOCK TABLE ${specs.map((s) => s.table).join(', ')} IN ACCESS EXCLUSIVE MODE`)
    for (const { table, sequence, primaryKey } of specs) {
      const { rows: constraints } = await db.query(
        "SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype IN ('p', 'u')", [table])
      const indexes = await plainIndexes(db, table)
      await db.query(`DROP TABLE ${table}`)
      await db.query(`ALTER TABLE ${table}_load RENAME TO ${table}`)
      for (const c of constraints) {
        await db.query(`ALTER TABLE ${table} RENAME CONSTRAINT ${c.conname}_load TO ${c.conname}`)
      }
      for (const i of indexes) await db.query(`ALTER INDEX ${i.name}_load RENAME TO ${i.name}`)
      if (sequence) {
        await db.query(
          `SELECT setval($1::regclass, coalesce(max(${primaryKey}), 1), max(${primaryKey}) IS NOT NULL) FROM ${table}`,
          [sequence]
        )
      }
    }
    await db.query('COMMIT')
  } catch (err) {
    await db.query('ROLLBACK').catch(() => {})
    throw err
  }
}

function formatSummary ({ files, rejectsFile, seconds, phases }) {
  const n = (x) => x.toLocaleString('en-US')
  const lines = ['', 'file            read        loaded      rejected  rejected by reason / fixed']
  for (const f of files) {
    const why = Object.entries(f.reasons).map(([r, c]) => `${r}: ${n(c)}`)
    const fixed = Object.entries(f.fixes).map(([r, c]) => `fixed ${r}: ${n(c)}`)
    const counts = `${n(f.read).padStart(11)} ${n(f.loaded).padStart(11)} ${n(f.rejected).padStart(11)}`
    lines.push(`${f.file.padEnd(15)} ${counts}  ${[...why, ...fixed].join(', ') || '-'}`)
  }
  const total = files.reduce((a, f) => ({
    read: a.read + f.read,
    loaded: a.loaded + f.loaded,
    rejected: a.rejected + f.rejected
  }), { read: 0, loaded: 0, rejected: 0 })
  const totalCounts = `${n(total.read).padStart(11)} ${n(total.loaded).padStart(11)} ${n(total.rejected).padStart(11)}`
  lines.push(`${'total'.padEnd(15)} ${totalCounts}`)
  const phaseTimes = Object.entries(phases).map(([p, s]) => `${p} ${s} s`).join(', ')
  lines.push(`${seconds} s (${phaseTimes}); rejected rows: ${rejectsFile}`, '')
  return lines.join('\n')
}
