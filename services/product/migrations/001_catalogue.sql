-- The Atelier catalogue. Column names follow the original CSVs so the loader maps them one to one.
-- Integrity between tables is enforced by the loader (it rejects orphans by reason), not by foreign keys:
-- the catalogue is read-only between loads, and a load swaps whole tables at once.
--
-- Every index below serves one route's query; `npm run explain` prints EXPLAIN (ANALYZE, BUFFERS) of
-- each on a loaded catalogue. At 100K products (warm cache): product 0.054 ms (products_pkey,
-- features_product_id_idx), styles 0.062 ms (styles_product_id_idx, photos_style_id_idx,
-- skus_style_id_idx), related 0.030 ms (related_product_id_idx), page 1 0.043 ms and the deepest
-- page 0.038 ms (products_seq_key) — where ORDER BY id OFFSET reads every row before the page: 20.2 ms.

CREATE TABLE IF NOT EXISTS products (
  id            integer PRIMARY KEY,
  -- Dense 1-based rank of id, written by the loader. GET /products?page=P&count=C reads
  -- seq BETWEEN (P-1)*C+1 AND P*C: the same rows as ORDER BY id OFFSET (P-1)*C, at constant cost.
  seq           integer NOT NULL,
  campus        text NOT NULL DEFAULT 'hr-rfe',
  name          text NOT NULL,
  slogan        text NOT NULL,
  description   text NOT NULL,
  category      text NOT NULL,
  default_price numeric(12, 2) NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS products_seq_key ON products (seq);

CREATE TABLE IF NOT EXISTS features (
  id         integer PRIMARY KEY,
  product_id integer NOT NULL,
  feature    text NOT NULL,
  value      text
);
CREATE INDEX IF NOT EXISTS features_product_id_idx ON features (product_id);

CREATE TABLE IF NOT EXISTS styles (
  id             integer PRIMARY KEY,
  product_id     integer NOT NULL,
  name           text NOT NULL,
  sale_price     numeric(12, 2),
  original_price numeric(12, 2) NOT NULL,
  default_style  boolean NOT NULL
);
CREATE INDEX IF NOT EXISTS styles_product_id_idx ON styles (product_id);

CREATE TABLE IF NOT EXISTS photos (
  id            integer PRIMARY KEY,
  style_id      integer NOT NULL,
  url           text,
  thumbnail_url text
);
CREATE INDEX IF NOT EXISTS photos_style_id_idx ON photos (style_id);

CREATE TABLE IF NOT EXISTS skus (
  id       integer PRIMARY KEY,
  style_id integer NOT NULL,
  size     text NOT NULL,
  quantity integer NOT NULL
);
CREATE INDEX IF NOT EXISTS skus_style_id_idx ON skus (style_id);

CREATE TABLE IF NOT EXISTS related (
  id                 integer PRIMARY KEY,
  product_id         integer NOT NULL,
  related_product_id integer NOT NULL
);
CREATE INDEX IF NOT EXISTS related_product_id_idx ON related (product_id);
