// Every query answers one request in one round trip: PostgreSQL builds the whole document in the
// Atelier API's shape; the route serializes it by its response schema once and caches the text.
// Each is a prepared statement (`name`), planned once per connection.

const PRODUCT_FIELDS = `json_build_object(
  'id', p.id, 'name', p.name, 'slogan', p.slogan, 'description', p.description,
  'category', p.category, 'default_price', p.default_price::text)`

// Page P of size C is seq in ((P-1)*C, P*C]: the same rows as ORDER BY id OFFSET (P-1)*C LIMIT C
// (seq is the dense rank of id), found by index at any depth. $1, $2 are bigint: P*C can pass 2^31.
export const productPage = {
  name: 'product_page',
  text: `SELECT coalesce(json_agg(${PRODUCT_FIELDS} ORDER BY p.seq), '[]') AS json
    FROM products p WHERE p.seq > $1::bigint AND p.seq <= $2::bigint`
}

// Keyset paging: the C products after id $1.
export const productsAfter = {
  name: 'products_after',
  text: `SELECT coalesce(json_agg(${PRODUCT_FIELDS} ORDER BY p.id), '[]') AS json
    FROM (SELECT * FROM products WHERE id > $1 ORDER BY id LIMIT $2) p`
}

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'` // the format of JavaScript's toISOString, as Atelier sent

export const product = {
  name: 'product',
  text: `SELECT json_build_object(
      'id', p.id, 'campus', p.campus, 'name', p.name, 'slogan', p.slogan,
      'description', p.description, 'category', p.category, 'default_price', p.default_price::text,
      'created_at', to_char(p.created_at AT TIME ZONE 'UTC', ${ISO}),
      'updated_at', to_char(p.updated_at AT TIME ZONE 'UTC', ${ISO}),
      'features', coalesce((
        SELECT json_agg(json_build_object('feature', f.feature, 'value', f.value) ORDER BY f.id)
        FROM features f WHERE f.product_id = p.id), '[]')
    ) AS json
    FROM products p WHERE p.id = $1`
}

// Atelier's quirks, kept for its clients: product_id as a string, "default?", SKUs keyed by id,
// and a placeholder photo / SKU for a style that has none.
export const styles = {
  name: 'product_styles',
  text: `SELECT json_build_object(
      'product_id', p.id::text,
      'results', coalesce((
        SELECT json_agg(json_build_object(
          'style_id', s.id,
          'name', s.name,
          'original_price', s.original_price::text,
          'sale_price', s.sale_price::text,
          'default?', s.default_style,
          'photos', coalesce((
            SELECT json_agg(json_build_object('thumbnail_url', ph.thumbnail_url, 'url', ph.url) ORDER BY ph.id)
            FROM photos ph WHERE ph.style_id = s.id), '[{"thumbnail_url": null, "url": null}]'),
          'skus', coalesce((
            SELECT json_object_agg(k.id, json_build_object('quantity', k.quantity, 'size', k.size) ORDER BY k.id)
            FROM skus k WHERE k.style_id = s.id), '{"null": {"quantity": null, "size": null}}')
        ) ORDER BY s.id)
        FROM styles s WHERE s.product_id = p.id), '[]')
    ) AS json
    FROM products p WHERE p.id = $1`
}

export const related = {
  name: 'product_related',
  text: `SELECT coalesce((
      SELECT json_agg(r.related_product_id ORDER BY r.id) FROM related r WHERE r.product_id = p.id
    ), '[]') AS json
    FROM products p WHERE p.id = $1`
}
