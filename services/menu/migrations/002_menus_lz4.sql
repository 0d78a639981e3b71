-- A dish menu's jsonb is over PostgreSQL's ~2 KB TOAST threshold, so it is compressed on every write
-- and decompressed on every uncached read. lz4 does both several times faster than the default
-- pglz, for about the same size. A server built without lz4 (the embedded PGlite of `npm start`)
-- keeps pglz.
DO $$
BEGIN
  ALTER TABLE menus ALTER COLUMN dishes SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'this server has no lz4: menus.dishes stays pglz';
END
$$;
