// Request validation for every route. Querystrings, params and headers are text, so their values are
// coerced to the schema's types ("5" → 5) — but an integer must be written as one: plain decimal
// digits, so `0x7d0`, `1e3`, `+1`, `01` and ` 1` never name row 2000 or 1. JSON bodies are validated
// as sent: coercing them would store `"bytes_tx": null` as 0 or `"7"` as 7.
import Ajv from 'ajv'
import addFormats from 'ajv-formats'

// Text that PostgreSQL can store and that is Unicode: no NUL (a text column cannot hold it: a pattern
// every tool reads alike) and no unpaired UTF-16 surrogate (not a character: the driver would store
// U+FFFD, so two different names would become one). Surrogates have no spelling in most regexp
// engines (Rust's, Python's JSON Schema validators), so that half is the format `unicode`, defined
// here for ajv; to other tools an unknown format is a note, and they cannot send a lone surrogate anyway.
const TEXT_PATTERN = '^[^\\u0000]*$'
const TEXT_RULE = 'must not contain NUL (\\u0000) or an unpaired surrogate (\\uD800-\\uDFFF)'

/** A string schema for free text: `text({ minLength: 1, maxLength: 200 })`. */
export const text = (schema = {}) => ({ type: 'string', pattern: TEXT_PATTERN, format: 'unicode', ...schema })

/** Adds the `unicode` format (well-formed UTF-16: no unpaired surrogate) to an ajv instance. */
export const withUnicodeFormat = (ajv) => ajv.addFormat('unicode', (s) => s.isWellFormed())

/** An absolute http(s) URL (a picture, a menu link): never `javascript:`, `data:` or `file:`. */
export const httpUrl = (maxLength, schema = {}) => ({
  type: 'string',
  format: 'uri',
  pattern: '^https?://',
  maxLength,
  ...schema
})

export const INT4_MAX = 2147483647
/** A path id naming a row of an int4 column: 1…2147483647, in plain digits (`^[1-9][0-9]*$`). */
export const id = (description) => ({ type: 'integer', minimum: 1, maximum: INT4_MAX, description })

// How an integer is written in a path, query or header: what `^[1-9][0-9]*$` allows, plus 0 and a
// minus sign (the schema's minimum then says whether they are in range).
const CANONICAL_INTEGER = /^(0|-?[1-9][0-9]*)$/

// useDefaults: a missing value takes the schema's default (page=1, count=5), as with Fastify's own ajv.
const options = { allErrors: false, strict: false, useDefaults: true }
const strict = withUnicodeFormat(addFormats(new Ajv({ ...options, coerceTypes: false })))
const coercing = withUnicodeFormat(addFormats(new Ajv({ ...options, coerceTypes: 'array' })))

/** Fastify's validatorCompiler. */
export function validatorCompiler ({ schema, httpPart }) {
  if (httpPart === 'body') return namingTheField(strict.compile(schema))
  const integers = Object.keys(schema.properties ?? {}).filter((k) => schema.properties[k].type === 'integer')
  return canonicalIntegers(integers, namingTheField(coercing.compile(schema)))
}

// Checks the text of integer properties before ajv coerces it (`+"0x7d0"` is 2000).
function canonicalIntegers (names, validate) {
  if (!names.length) return validate
  const wrapped = (data) => {
    for (const name of names) {
      const v = data?.[name]
      if (typeof v === 'string' && !CANONICAL_INTEGER.test(v)) {
        wrapped.errors = [{
          keyword: 'type',
          instancePath: `/${name}`,
          params: { type: 'integer' },
          message: 'must be integer'
        }]
        return false
      }
    }
    const ok = validate(data)
    wrapped.errors = validate.errors
    return ok
  }
  return wrapped
}

// ajv reports a missing or an unknown property at its parent (`body/3 must have required property
// 'hour'`, `body must NOT have additional properties`); this names it as a path like every other
// error: `body/3/hour is required`, `body/owner is not allowed`. The text rule gets words, not its regexp.
function namingTheField (validate) {
  const wrapped = (data) => {
    const ok = validate(data)
    wrapped.errors = validate.errors?.map((e) => {
      if (e.keyword === 'required') {
        return { ...e, instancePath: `${e.instancePath}/${e.params.missingProperty}`, message: 'is required' }
      }
      if (e.keyword === 'additionalProperties') {
        return { ...e, instancePath: `${e.instancePath}/${e.params.additionalProperty}`, message: 'is not allowed' }
      }
      if ((e.keyword === 'pattern' && e.params.pattern === TEXT_PATTERN) ||
        (e.keyword === 'format' && e.params.format === 'unicode')) {
        return { ...e, message: TEXT_RULE }
      }
      return e
    })
    return ok
  }
  return wrapped
}
