// The SQL of the flows service. Each statement is prepared once per connection (`name`).

// One flush of the group-commit writer: the pre-aggregated rows of every request of the group, as
// six parallel arrays (one round trip whatever the row count). GROUP BY merges keys that JavaScript
// saw as different but PostgreSQL stores as equal (strings with lone surrogates), so ON CONFLICT never
// meets one key twice in a statement. ORDER BY is the lock order: every transaction, on every worker
// and replica, locks the rows it updates in the same order, so two flushes sharing keys queue behind
// each other instead of deadlocking (the original deadlocked at 40 connections).
export const upsert = {
  name: 'flows_upsert',
  text: `INSERT INTO flows AS f (hour, src_app, dest_app, vpc_id, bytes_tx, bytes_rx)
    SELECT hour, src_app, dest_app, vpc_id, sum(bytes_tx)::bigint, sum(bytes_rx)::bigint
    FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[])
      AS t(hour, src_app, dest_app, vpc_id, bytes_tx, bytes_rx)
    GROUP BY hour, src_app, dest_app, vpc_id
    ORDER BY hour, src_app, dest_app, vpc_id
    ON CONFLICT (hour, src_app, dest_app, vpc_id) DO UPDATE
    SET bytes_tx = f.bytes_tx + EXCLUDED.bytes_tx, bytes_rx = f.bytes_rx + EXCLUDED.bytes_rx`
}

// Claims Idempotency-Keys (in key order: the same lock-order argument). Returns the keys that were
// new; a key already there belongs to a committed request. A key being inserted by a concurrent,
// uncommitted transaction makes this wait for it: committed → the key is a replay, rolled back →
// it is new. So a retry racing its original still counts once.
// Each key is stored with the fingerprint of its batch ($2), so that a later request with the same key
// and another batch is refused instead of answered as a replay.
export const claimKeys = {
  name: 'flows_claim_keys',
  text: `INSERT INTO flows_idempotency (key, fingerprint)
    SELECT k, f FROM unnest($1::text[], $2::bytea[]) AS t(k, f) ORDER BY k
    ON CONFLICT (key) DO NOTHING
    RETURNING key`
}

// The fingerprints of keys that were already there (a new statement: it sees what committed since).
export const keyFingerprints = {
  name: 'flows_key_fingerprints',
  text: 'SELECT key, fingerprint FROM flows_idempotency WHERE key = ANY($1::text[])'
}

export const pruneKeys = {
  name: 'flows_prune_keys',
  text: `DELETE FROM flows_idempotency WHERE created_at < now() - $1 * interval '1 hour'`
}

// GET /flows?hour=N, one page: the first $5 keys after ($2, $3, $4) in key order, found by a range
// scan of the primary key (hour leads it; the row comparison uses its C collation), so a page costs
// the same at any depth. The route asks for one key more than the page to know whether another page
// follows. Totals are bigint, sent as text: exact past 2^53.
// Plain rows, serialized by the route's response schema: building the JSON in PostgreSQL
// (json_build_object per row, json_agg) cost it more than the scan itself for a page of keys, and the
// worker then parsed that JSON only to serialize it again.
export const page = {
  name: 'flows_page',
  text: `SELECT src_app, dest_app, vpc_id, bytes_tx::text AS bytes_tx, bytes_rx::text AS bytes_rx, hour
    FROM flows WHERE hour = $1 AND (hour, src_app, dest_app, vpc_id) > ($1, $2, $3, $4)
    ORDER BY src_app, dest_app, vpc_id LIMIT $5`
}
