// The column types of a load's CSV files (a TableSpec's `columns`): each turns a field's text into
// the value COPY is sent, or rejects the row (load.js counts it under `invalid_<column>`).
const INT4_MAX = 2147483647

/**
 * Column types: each turns the CSV text into the COPY value, or returns REJECT.
 * A trailing `?` (e.g. `price?`) also accepts the literal `null` (and empty) as SQL NULL.
 */
export const REJECT = Symbol('reject')
const types = {
  // Kept as text, as read: COPY parses it, and a number turned back into text is garbage to collect.
  id: (s) => (isDigits(s) && +s >= 1 && +s <= INT4_MAX ? s : REJECT),
  count: (s) => (isDigits(s) && +s <= INT4_MAX ? s : REJECT),
  price: (s) => (/^\d{1,10}(\.\d+)?$/.test(s) ? s : REJECT),
  bool: (s) => (s === '1' || s === 'true' ? 't' : s === '0' || s === 'false' ? 'f' : REJECT),
  // For a json/jsonb column: a row with broken JSON is rejected here, not the whole COPY there.
  // (jsonb also refuses \u0000, which JSON.parse accepts.)
  json: (s) => (isJson(s) && !s.includes('\\u0000') ? s : REJECT),
  // PostgreSQL text cannot hold a NUL character: a row with one (binary bytes) would fail the whole COPY.
  text: (s) => (s.includes('\0') ? REJECT : s)
}
// 1 to 10 ASCII digits (what a positive int4 can be written as), without a regular expression.
function isDigits (s) {
  const n = s.length
  if (n === 0 || n > 10) return false
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c < 48 || c > 57) return false
  }
  return true
}
function isJson (s) {
  try { JSON.parse(s); return true } catch { return false }
}
/** The converter of a column type (id, count, price, bool, json, text; a trailing `?`: nullable). */
export function converter (type) {
  const nullable = type.endsWith('?')
  const base = types[nullable ? type.slice(0, -1) : type]
  if (!base) throw new Error(`unknown column type ${type}`)
  return nullable ? (s) => (s === 'null' || s === '' ? null : base(s)) : base
}
