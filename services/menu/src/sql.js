// One round trip per request (a GET's cache misses of one turn share one); PostgreSQL builds the
// document. Prepared statements (`name`).
// `version` rides along for the cache (sendCached's ETag and never-stale reads); the response schema drops it.
const MENU = `json_build_object('id', id, 'dishes', coalesce(dishes, '[]'::jsonb), 'link', link, 'version', version)`

// The cache misses of one turn in one statement (kit batchedRows), an index probe per id.
export const menus = {
  name: 'menus_by_id',
  text: `SELECT id, ${MENU} AS json FROM menus WHERE id = ANY($1::int[])`
}

// The writes answer the new document, whether it was created, and the version before (null: no
// menu), which tells a 412 what it met. Preconditions (kit: preconditions): If-None-Match's versions
// in $4 or $5 ('{}': none; NULL: `*`, so an existing menu is never replaced — ANY(NULL) is NULL).
const ANSWER = (w) => `SELECT ${w}.json, ${w}.created, (SELECT version FROM menus WHERE id = $1) AS current
    FROM (SELECT 1) one LEFT JOIN ${w} ON true`

// Replace or create a menu (no If-Match); xmax = 0 tells an insert from an update (201 vs 200).
export const putMenu = {
  name: 'put_menu',
  text: `WITH w AS (
      INSERT INTO menus AS m (id, dishes, link) VALUES ($1, $2::jsonb, $3)
      ON CONFLICT (id) DO UPDATE SET dishes = $2::jsonb, link = $3, version = m.version + 1, updated_at = now()
      WHERE NOT coalesce(m.version = ANY($4::int[]), true)
      RETURNING ${MENU} AS json, (xmax = 0) AS created)
    ${ANSWER('w')}`
}

// With If-Match: replace only a menu whose version is listed in $4 (NULL: `*`, any existing menu);
// never create one.
export const replaceMenu = {
  name: 'replace_menu',
  text: `WITH w AS (
      UPDATE menus SET dishes = $2::jsonb, link = $3, version = version + 1, updated_at = now()
      WHERE id = $1 AND ($4::int[] IS NULL OR version = ANY($4::int[])) AND NOT coalesce(version = ANY($5::int[]), true)
      RETURNING ${MENU} AS json, false AS created)
    ${ANSWER('w')}`
}
