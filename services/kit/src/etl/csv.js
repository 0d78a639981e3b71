// A streaming RFC 4180 CSV parser, written for speed: text is fed in chunks of any size and each
// complete record is handed to a callback at once, so memory holds one chunk and one partial record.
// Quoted fields may hold commas, doubled quotes and newlines; lines end in LF or CRLF; a leading BOM
// is dropped; a last record without a newline still counts.

const COMMA = 44
const LF = 10
const CR = 13
const QUOTE = 34

export class CsvParser {
  /** @param {(fields: string[], line: number, raw: string) => void} onRecord  line: where the record starts */
  constructor (onRecord) {
    this.onRecord = onRecord
    this.rest = ''
    this.line = 1
    this.first = true
  }

  push (chunk) {
    let s = this.rest ? this.rest + chunk : chunk
    if (this.first) {
      if (s.charCodeAt(0) === 0xfeff) s = s.slice(1)
      this.first = false
    }
    this.rest = s.slice(this.parse(s, false))
  }

  end () {
    if (this.rest) this.parse(this.rest, true)
    this.rest = ''
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
        if (raw !== '') this.onRecord(raw.split(','), this.line, raw)
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
      if (!(fields.length === 1 && fields[0] === '')) this.onRecord(fields, this.line, raw)
      this.line += 1 + newlines
      pos = i
      if (done) break
    }
    return pos
  }

  // An opening quote never closed before the end of input: the rest is one malformed record.
  finishBroken (s, pos, fields, i) {
    fields.push(s.slice(i + 1))
    fields.unclosedQuote = true
    this.onRecord(fields, this.line, s.slice(pos))
    return s.length
  }
}

/** Parses a whole string; for tests and small inputs. */
export function parseCsv (text) {
  const records = []
  const p = new CsvParser((fields, line) => records.push(fields))
  p.push(text)
  p.end()
  return records
}
