-- Restaurant profiles. `version` is bumped by every write: it is the cache version and the ETag.
-- The id default is a free-standing sequence, not an identity column or an OWNED BY sequence: the kit's
-- loader builds a copy with LIKE … INCLUDING DEFAULTS and drops the old table, which would lose an
-- identity and drop an owned sequence. The loader moves it past the highest loaded id (etl/tables.js).
CREATE SEQUENCE IF NOT EXISTS restaurants_id_seq AS integer;

CREATE TABLE IF NOT EXISTS restaurants (
  id          integer PRIMARY KEY DEFAULT nextval('restaurants_id_seq'),
  name        text NOT NULL CHECK (name <> ''),
  address     text NOT NULL,
  phone       text NOT NULL,
  picture     text NOT NULL,
  cuisine     text NOT NULL,
  price_range smallint NOT NULL CHECK (price_range BETWEEN 1 AND 4), -- 1 = "$" … 4 = "$$$$"
  stars       numeric(2, 1) NOT NULL CHECK (stars BETWEEN 0 AND 5),
  quality     smallint NOT NULL CHECK (quality BETWEEN 0 AND 100),
  delivery    smallint NOT NULL CHECK (delivery BETWEEN 0 AND 100),
  accuracy    smallint NOT NULL CHECK (accuracy BETWEEN 0 AND 100),
  version     integer NOT NULL DEFAULT 1,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
