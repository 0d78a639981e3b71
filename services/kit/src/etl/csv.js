// A streaming RFC 4180 CSV parser, written for speed: text is fed in chunks of any size and each
// complete record is handed to a callback at once, so memory holds one chunk and one partial record.
// Quoted fields may hold commas, doubled quotes and newlines; lines end in LF or CRLF; a leading BOM
// is dropped; a last record without a newline still counts.
// A record longer than `maxRecord` characters (an unclosed quote, a file that is not CSV) is handed
// over as `fields.tooLong` with the first RAW_KEPT characters of its text, and the rest of it is
// skipped by a scan that keeps no text: time stays linear and memory bounded whatever the input.

const COMMA = 44
const LF = 10
const CR = 13
const QUOTE = 34

/** Default bound on a record's length, in characters: 4 Mi (a 1 MiB menu, its quotes doubled, fits). */
export const MAX_RECORD = 4 * 1024 * 1024
/** Characters of a too-long record kept as its raw text (for the rejects file). */
const RAW_KEPT = 1000

// States of the scan that skips a too-long record (the grammar of parse(), without the text).
const FIELD_START = 0
const UNQUOTED = 1
const QUOTED = 2
const QUOTE_SEEN = 3 // a quote inside a quoted field: closing, or the first of a doubled pair

export class CsvParser {
  /**
   * @param {(fields: string[], line: number, raw: string) => void} onRecord  line: where the record starts
   * @param {{ maxRecord?: number }} [options]  maxRecord: the longest record, in characters
   */
  constructor (onRecord, { maxRecord = MAX_RECORD } = {}) {
    this.onRecord = onRecord
    this.maxRecord = maxRecord
    this.rest = ''
    this.line = 1
    this.first = true
    this.skipping = null // while skipping a too-long record: { state, newlines }
  }

  push (chunk) {
    if (this.skipping) {
      const end = this.skip(chunk, 0)
      if (end === -1) return
      chunk = chunk.slice(end)
    }
    let s = this.rest ? this.rest + chunk : chunk
    if (this.first) {
      if (s.charCodeAt(0) === 0xfeff) s = s.slice(1)
      this.first = false
    }
    this.rest = s.slice(this.parse(s, false))
    // What is left is one incomplete record: past the bound, it is rejected without waiting for its
    // end (+ 1: the CR of a CRLF whose LF is still to come is not part of the record).
    if (this.rest.length > this.maxRecord + 1) {
      const rest = this.rest
      this.rest = ''
      this.tooLong(rest)
      this.skipping = { state: FIELD_START, newlines: 0 }
      const end = this.skip(rest, 0)
      if (end !== -1) throw new Error('CsvParser: a record left over by parse() has an end') // cannot happen
    }
  }

  end () {
    if (this.rest) this.parse(this.rest, true)
    this.rest = ''
    this.skipping = null // a too-long record that runs to the end of the input: already reported
  }

  // Hands over a record that is too long: its fields are not read, its text only in part.
  tooLong (raw) {
    const fields = []
    fields.tooLong = true
    this.onRecord(fields, this.line, raw.slice(0, Math.min(RAW_KEPT, this.maxRecord)) + '…')
  }

  // Scans s from `from` for the end of the record being skipped, counting its newlines; returns the
  // position after its final LF, or -1 when s ends inside it. Keeps only the state, never the text.
  skip (s, from) {
    const k = this.skipping
    const n = s.length
    let i = from
    let lf = -2 // the next LF at or after i, once looked up (-1: none left in s)
    while (i < n) {
      if (k.state === QUOTED) {
        // Inside quotes only a quote matters: jump to it, counting the newlines passed.
        const q = s.indexOf('"', i)
        const stop = q === -1 ? n : q
        if (lf !== -1 && lf < i) lf = s.indexOf('\n', i)
        for (; lf !== -1 && lf < stop; lf = s.indexOf('\n', lf + 1)) k.newlines++
        if (q === -1) return -1
        k.state = QUOTE_SEEN
        i = q + 1
        continue
      }
      const c = s.charCodeAt(i++)
      if (c === LF) {
        this.line += 1 + k.newlines
        this.skipping = null
        return i
      } else if (c === COMMA) {
        k.state = FIELD_START
      } else if (c === QUOTE) {
        k.state = k.state === FIELD_START || k.state === QUOTE_SEEN ? QUOTED : UNQUOTED
      } else {
        k.state = UNQUOTED
      }
    }
    return -1
  }

  // Parses whole records from s; returns where the first incomplete one starts.
  parse (s, last) {
    const n = s.length
    let pos = 0
    let nextQuote = s.indexOf('"')
    while (pos < n) {
      // Fast path, nearly every record: a whole line without quotes is split natively.
      if (nextQuote !== -1 && nextQuote < pos) nextQuote = s.indexOf('"', pos)
      const lf = s.indexOf('\n', pos)
      if (lf !== -1 && (nextQuote === -1 || nextQuote > lf)) {
        const raw = s.charCodeAt(lf - 1) === CR ? s.slice(pos, lf - 1) : s.slice(pos, lf)
        if (raw.length > this.maxRecord) this.tooLong(raw)
        else if (raw !== '') this.onRecord(raw.split(','), this.line, raw)
        this.line++
        pos = lf + 1
        continue
      }
      if (lf === -1 && !last) return pos
      const fields = []
      let i = pos
      let newlines = 0
      let done = false
      for (;;) {
        if (i >= n) {
          if (!last) return pos
          done = true
          break
        }
        let value = ''
        if (s.charCodeAt(i) === QUOTE) {
          // Quoted field: runs to a quote not followed by another quote.
          let j = i + 1
          for (;;) {
            const q = s.indexOf('"', j)
            if (q === -1 || (q + 1 >= n && !last)) return last ? this.finishBroken(s, pos, fields, i) : pos
            if (s.charCodeAt(q + 1) === QUOTE) {
              value += s.slice(j, q + 1)
              j = q + 2
              continue
            }
            value += s.slice(j, q)
            i = q + 1
            break
          }
          for (let k = value.indexOf('\n'); k !== -1; k = value.indexOf('\n', k + 1)) newlines++
        }
        // Up to the delimiter; after a closing quote this text is kept too: `"a"b` reads as `ab`.
        let c = i
        while (c < n) {
          const ch = s.charCodeAt(c)
          if (ch === COMMA || ch === LF) break
          c++
        }
        if (c >= n && !last) return pos
        let end = c
        if (end > i && s.charCodeAt(end - 1) === CR) end--
        fields.push(end > i ? value + s.slice(i, end) : value)
        i = c
        if (i >= n) { done = true; break }
        if (s.charCodeAt(i) === COMMA) {
          i++
          if (i >= n && last) { fields.push(''); done = true; break }
          continue
        }
        i++ // LF: the record is complete
        break
      }
      const raw = s.slice(pos, s.charCodeAt(i - 1) === LF ? i - 1 : i).replace(/\r$/, '')
      // A blank line is not a record.
      if (raw.length > this.maxRecord) this.tooLong(raw)
      else if (!(fields.length === 1 && fields[0] === '')) this.onRecord(fields, this.line, raw)
      this.line += 1 + newlines
      pos = i
      if (done) break
    }
    return pos
  }

  // An opening quote never closed before the end of input: the rest is one malformed record.
  finishBroken (s, pos, fields, i) {
    if (s.length - pos > this.maxRecord) {
      this.tooLong(s.slice(pos))
      return s.length
    }
    fields.push(s.slice(i + 1))
    fields.unclosedQuote = true
    this.onRecord(fields, this.line, s.slice(pos))
    return s.length
  }
}

/** Parses a whole string; for tests and small inputs. */
export function parseCsv (text, options) {
  const records = []
  const p = new CsvParser((fields, line) => records.push(fields), options)
  p.push(text)
  p.end()
  return records
}
