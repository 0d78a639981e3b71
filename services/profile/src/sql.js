// One round trip per request (a GET's cache misses of one turn share one). Reads return the
// document PostgreSQL builds plus its version; writes check If-Match in the statement itself and
// say, from the same snapshot, whether the row existed, so 404 and 412 are told apart without a
// second query.

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`
const DOC = (r) => `json_build_object(
  'id', ${r}.id, 'name', ${r}.name, 'address', ${r}.address, 'phone', ${r}.phone, 'picture', ${r}.picture,
  'cuisine', ${r}.cuisine, 'price_range', ${r}.price_range, 'stars', ${r}.stars::float8,
  'quality', ${r}.quality, 'delivery', ${r}.delivery, 'accuracy', ${r}.accuracy,
  'created_at', to_char(${r}.created_at AT TIME ZONE 'UTC', ${ISO}),
  'updated_at', to_char(${r}.updated_at AT TIME ZONE 'UTC', ${ISO}))`

// Reads: the cache misses of one turn in one statement (kit batchedRows), an index probe per id.
export const read = {
  name: 'restaurants_by_id',
  text: `SELECT r.id, r.version, ${DOC('r')} AS doc FROM restaurants r WHERE r.id = ANY($1::int[])`
}

// $1 is the whole body as jsonb: one statement for any subset of fields, values always parameters.
const COLUMNS = [
  'name', 'address', 'phone', 'picture', 'cuisine', 'price_range', 'stars', 'quality', 'delivery', 'accuracy'
]
const CAST = {
  price_range: 'smallint', stars: 'numeric', quality: 'smallint', delivery: 'smallint', accuracy: 'smallint'
}
const value = (c) => `($1::jsonb->>'${c}')${CAST[c] ? '::' + CAST[c] : ''}`

export const create = {
  name: 'restaurant_create',
  text: `INSERT INTO restaurants AS r (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(value).join(', ')})
    RETURNING r.version, ${DOC('r')} AS doc`
}

// The preconditions of a write (kit: preconditions): $m the versions If-Match lists (NULL: no
// If-Match, or `*` — the row must exist, which WHERE id does), $n those If-None-Match lists ('{}': none;
// NULL: `*`, i.e. fail whenever the row exists). ANY(NULL) is NULL, so coalesce(…, true) makes `*` match.
const PRECONDITIONS = (m, n) =>
  `($${m}::int[] IS NULL OR version = ANY($${m}::int[])) AND NOT coalesce(version = ANY($${n}::int[]), true)`

// An update's SET: a field the body has takes its value, one it lacks keeps the row's.
const SET_FIELDS = COLUMNS.map((c) => `${c} = CASE WHEN $1::jsonb ? '${c}' THEN ${value(c)} ELSE r.${c} END`)
  .join(',\n        ')

// $2 id, $3 and $4 the preconditions. `current` is the version before this statement (null: no row).
export const update = {
  name: 'restaurant_update',
  text: `WITH u AS (
      UPDATE restaurants AS r SET
        ${SET_FIELDS},
        version = r.version + 1, updated_at = now()
      WHERE r.id = $2 AND ${PRECONDITIONS(3, 4)}
      RETURNING r.version, ${DOC('r')} AS doc)
    SELECT u.version, u.doc, (SELECT version FROM restaurants WHERE id = $2) AS current
    FROM (SELECT 1) one LEFT JOIN u ON true`
}

// $1 id, $2 and $3 the preconditions.
export const remove = {
  name: 'restaurant_delete',
  text: `WITH d AS (DELETE FROM restaurants WHERE id = $1 AND ${PRECONDITIONS(2, 3)} RETURNING version)
    SELECT d.version, (SELECT version FROM restaurants WHERE id = $1) AS current
    FROM (SELECT 1) one LEFT JOIN d ON true`
}
