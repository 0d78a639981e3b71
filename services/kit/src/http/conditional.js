// Conditional requests (RFC 9110 §13). A versioned document's ETag is `"<version>"` (strong).
// If-Match and If-None-Match are `*` or a list of entity-tags (`"3", W/"4"`); If-Match compares
// strongly (a weak tag never matches), If-None-Match weakly (W/"3" matches "3"). A value that is not
// that (`3`, `"3`) names no entity-tag, so it matches none: If-Match then fails (412), If-None-Match
// holds — as for any tag that is not current. It is not refused with a 400: a precondition is a
// question about the current version, and a malformed one has the answer "no match".
import { INT4_MAX } from './validation.js'

const TAG = '(W/)?"[!#-~]*"'
// OWS is spaces and tabs; HTTP already trimmed the ends of the value.
const LIST = new RegExp(`^(${TAG}([ \\t]*,[ \\t]*${TAG})*)$`)

const GRAMMAR = '`*` or entity-tags (`"3"`, `"3", W/"4"`); anything else matches no ETag'
export const ifMatchHeader = {
  type: 'string',
  description: `${GRAMMAR}. The write happens only if the current ETag is listed (strong comparison: a W/ tag ` +
    'never matches), or with `*` if it exists; else 412'
}
export const ifNoneMatchHeader = {
  type: 'string',
  description: `${GRAMMAR}. On GET, 304 when the current ETag is listed (weak comparison) or \`*\` and it exists; ` +
    'on a write, 412 instead'
}

/** The entity-tags of a header: undefined (absent), '*', or [{ weak, tag }] ([] when it is not a list of them). */
function entityTags (header) {
  if (header === undefined) return undefined
  const value = header.trim()
  if (value === '*') return '*'
  if (!LIST.test(value)) return []
  return [...value.matchAll(/(W\/)?"([^"]*)"/g)].map((m) => ({ weak: m[1] !== undefined, tag: m[2] }))
}

// The version a tag names, or null when it names none of ours (then it can never match).
const versionOf = (tag) => (/^[1-9][0-9]{0,9}$/.test(tag) && +tag <= INT4_MAX ? +tag : null)

/**
 * The preconditions of a write, as versions: `ifMatch` undefined (absent), '*', or the versions the
 * list names strongly; `ifNoneMatch` undefined, '*', or the versions it names (weakly). A list that
 * names no version of ours is [] (it never matches).
 */
export function preconditions (headers) {
  const versions = (tags, strong) => tags
    .filter((t) => !(strong && t.weak))
    .map((t) => versionOf(t.tag))
    .filter((v) => v !== null)
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
