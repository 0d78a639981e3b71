// Conditional requests (RFC 9110 §13). A versioned document's ETag is `"<version>"` (strong).
// If-Match and If-None-Match are `*` or a list of entity-tags (`"3", W/"4"`); If-Match compares
// strongly (a weak tag never matches), If-None-Match weakly (W/"3" matches "3").
import { INT4_MAX } from './validation.js'

const TAG = '(W/)?"[!#-~]*"'
/** Their syntax; a header that does not follow it is a 400 naming it. */
export const ETAG_LIST_PATTERN = `^\\s*(\\*|${TAG}(\\s*,\\s*${TAG})*)\\s*$`

/** Header schemas for a route's `headers`: `{ ...conditionalHeaders }`. */
export const ifMatchHeader = {
  type: 'string',
  pattern: ETAG_LIST_PATTERN,
  description: '`*` or ETags (`"3"`, `"3", "4"`): the write happens only if the current ETag is one of them (strong comparison: a W/ tag never matches); else 412'
}
export const ifNoneMatchHeader = {
  type: 'string',
  pattern: ETAG_LIST_PATTERN,
  description: '`*` or ETags (weak comparison): on GET, 304 when the current ETag is listed (or `*` and it exists); on a write, 412 instead'
}

/** The entity-tags of a header: undefined (absent), '*', or [{ weak, tag }]. */
export function entityTags (header) {
  if (header === undefined) return undefined
  if (header.trim() === '*') return '*'
  return [...header.matchAll(/(W\/)?"([^"]*)"/g)].map((m) => ({ weak: m[1] !== undefined, tag: m[2] }))
}

// The version a tag names, or null when it names none of ours (then it can never match).
const versionOf = (tag) => (/^[1-9][0-9]{0,9}$/.test(tag) && +tag <= INT4_MAX ? +tag : null)

/**
 * The preconditions of a write, as versions: `ifMatch` undefined (absent), '*', or the versions the
 * list names strongly; `ifNoneMatch` undefined, '*', or the versions it names (weakly). A list that
 * names no version of ours is [] (it never matches).
 */
export function preconditions (headers) {
  const versions = (tags, strong) => tags.filter((t) => !(strong && t.weak)).map((t) => versionOf(t.tag)).filter((v) => v !== null)
  const m = entityTags(headers['if-match'])
  const n = entityTags(headers['if-none-match'])
  return {
    ifMatch: Array.isArray(m) ? versions(m, true) : m,
    ifNoneMatch: Array.isArray(n) ? versions(n, false) : n
  }
}

/** Whether If-None-Match names the current `etag` of an existing document (a GET then answers 304). */
export function noneMatchHolds (header, etag) {
  const tags = entityTags(header)
  if (tags === undefined) return false
  return tags === '*' || tags.some((t) => `"${t.tag}"` === etag)
}
