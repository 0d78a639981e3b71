-- One row per restaurant menu. A menu is unstructured: either its dishes (a JSONB array of
-- {dishType, subType, dish, price, ingredients}) or a link to the restaurant's own menu, never both.
-- version is bumped on every write; the cache uses it so a read after a write is never stale.
CREATE TABLE IF NOT EXISTS menus (
  id          integer PRIMARY KEY,
  dishes      jsonb,
  link        text,
  version     integer NOT NULL DEFAULT 1,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT menus_dishes_xor_link CHECK ((dishes IS NULL) <> (link IS NULL))
);
