// A small catalogue with every shape the Atelier API has, in a fresh database, and the service on it.
import { fileURLToPath } from 'node:url'
import { startService } from '@suite/kit/testing'
import { migratedDatabase } from '@suite/kit/testing/env'
import service from '../src/service.js'
export { get, metric } from '@suite/kit/testing'

export const entry = fileURLToPath(new URL('../src/cli.js', import.meta.url))
export { service }

// Products 1..700 except multiples of 7 (gaps), plus two far-away ids: 602 rows in all.
export const PRODUCT_COUNT = 700 - 100 + 2
export const TRICKY_NAME = 'Ünïcødé "quoted", comma; \'apostrophe\' 🧥'

const SEED_SQL = `
INSERT INTO products (id, seq, name, slogan, description, category, default_price, created_at, updated_at)
SELECT id, row_number() OVER (ORDER BY id), 'Product ' || id, 'Slogan ' || id,
       'Description of ' || id || E',\\nwith a comma and a newline', 'Category ' || (id % 5), 10 + id % 1000,
       '2021-08-13T14:38:44.509Z', '2021-08-13T14:38:44.509Z'
FROM (SELECT id FROM generate_series(1, 700) id WHERE id % 7 <> 0 UNION ALL VALUES (1000000), (2147483647)) ids;

UPDATE products SET name = $1, default_price = 140 WHERE id = 1;
INSERT INTO features (id, product_id, feature, value) VALUES (1, 1, 'Fabric', 'Canvas'), (2, 1, 'Buttons', NULL);
INSERT INTO styles (id, product_id, name, sale_price, original_price, default_style) VALUES
  (1, 1, 'Forest Green & Black', NULL, 140, true),
  (2, 1, 'Desert Brown & Tan', 100, 140, false),
  (3, 3, 'Ocean Blue', NULL, 40.5, true);
INSERT INTO photos (id, style_id, url, thumbnail_url) VALUES
  (1, 1, 'https://images.example/1.jpg', 'https://images.example/1t.jpg'),
  (2, 1, 'https://images.example/2.jpg', 'https://images.example/2t.jpg');
INSERT INTO skus (id, style_id, size, quantity) VALUES (1, 1, 'XS', 8), (2, 1, '7.5', 16), ` +
  `(3, 1, 'One Size', 0), (4, 3, '7', 2);
INSERT INTO related (id, product_id, related_product_id) VALUES (1, 1, 2), (2, 1, 3), (3, 1, 8), (4, 3, 1);
`

/** A migrated database holding the fixture catalogue; returns its URL. */
export function catalogueDatabase () {
  // Multi-statement text cannot take parameters: the tricky name goes in as a literal.
  return migratedDatabase(service, (client) => client.query(SEED_SQL.replace('$1', client.escapeLiteral(TRICKY_NAME))))
}

export function startProduct (env) {
  return startService({ entry, env: { WORKERS: '1', ...env } })
}
