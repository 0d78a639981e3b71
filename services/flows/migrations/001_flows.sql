-- Traffic totals per (hour, src_app, dest_app, vpc_id), written by many workers and replicas at once
-- through INSERT … ON CONFLICT DO UPDATE (src/sql.js). Acknowledged rows are committed rows.

CREATE TABLE IF NOT EXISTS flows (
  -- Hours since whatever epoch the collectors use; int4 (a 400 above 2147483647) keeps the key small.
  hour     integer NOT NULL CHECK (hour >= 0),
  -- COLLATE "C": byte order. Comparisons in the key are cheaper than under a linguistic collation,
  -- and the order of GET /flows (and of the lock order of the upserts) is the same on every server.
  src_app  text COLLATE "C" NOT NULL,
  dest_app text COLLATE "C" NOT NULL,
  vpc_id   text COLLATE "C" NOT NULL,
  bytes_tx bigint NOT NULL DEFAULT 0 CHECK (bytes_tx >= 0),
  bytes_rx bigint NOT NULL DEFAULT 0 CHECK (bytes_rx >= 0),
  -- The one index is the primary key: it is the ON CONFLICT arbiter, and its leading column answers
  -- GET /flows?hour=N as an index range scan.
  -- EXPLAIN ANALYZE of sql.byHour, 200,000 rows over 100 hours (2,000 keys an hour), PostgreSQL 15:
  --   Aggregate (actual time=7.3..7.3 rows=1)
  --     ->  Bitmap Heap Scan on flows (actual time=0.09..0.24 rows=2000)  Heap Blocks: exact=25
  --           ->  Bitmap Index Scan on flows_pkey (actual time=0.08..0.08 rows=2000)  Index Cond: (hour = 42)
  --   Execution Time: 7.35 ms  (the rest is json_build_object and the ordered json_agg of 2,000 rows)
  -- Without it, a Seq Scan reads all 200,000 rows: 16 ms to find the rows, 23.9 ms in all, and
  -- growing with the table. A second index on hour alone would cost every upsert an index write
  -- and save nothing.
  PRIMARY KEY (hour, src_app, dest_app, vpc_id)
) WITH (fillfactor = 70);
-- fillfactor 70: an upsert hit rewrites the row; free room on its page lets PostgreSQL make that a
-- HOT update (no new index entry), which keeps the primary key from bloating under hot keys.

-- Idempotency-Key of each POST that carried one: a retry after a lost answer finds its key here and
-- is answered without counting twice. Pruned after FLOWS_IDEMPOTENCY_TTL_HOURS (by created_at).
CREATE TABLE IF NOT EXISTS flows_idempotency (
  key        text COLLATE "C" PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS flows_idempotency_created_at_idx ON flows_idempotency (created_at);
