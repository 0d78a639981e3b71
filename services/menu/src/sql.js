// One round trip per request; PostgreSQL builds the document. Prepared statements (`name`).
// `version` rides along for the cache (sendCached's ETag and never-stale reads); the response schema drops it.
const MENU = `json_build_object('id', id, 'dishes', coalesce(dishes, '[]'::jsonb), 'link', link, 'version', version)`

export const menu = {
  name: 'menu',
  text: `SELECT ${MENU} AS json FROM menus WHERE id = $1`
}

// Replace (or create) a menu; xmax = 0 tells an insert from an update (201 vs 200).
export const putMenu = {
  name: 'put_menu',
  text: `INSERT INTO menus AS m (id, dishes, link) VALUES ($1, $2::jsonb, $3)
    ON CONFLICT (id) DO UPDATE SET dishes = $2::jsonb, link = $3, version = m.version + 1, updated_at = now()
    RETURNING ${MENU} AS json, (xmax = 0) AS created`
}
