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
export const claimKeys = {
  name: 'flows_claim_keys',
  text: `INSERT INTO flows_idempotency (key)
    SELECT k FROM unnest($1::text[]) k ORDER BY k
    ON CONFLICT (key) DO NOTHING
    RETURNING key`
}

export const pruneKeys = {
  name: 'flows_prune_keys',
  text: `DELETE FROM flows_idempotency WHERE created_at < now() - $1 * interval '1 hour'`
}

// GET /flows?hour=N: the whole answer built by PostgreSQL in one round trip, in key order, found by
// a range scan of the primary key (hour leads it). Totals are bigint, i.e. JSON numbers.
export const byHour = {
  name: 'flows_by_hour',
  text: `SELECT coalesce(json_agg(json_build_object(
      'src_app', src_app, 'dest_app', dest_app, 'vpc_id', vpc_id,
      'bytes_tx', bytes_tx, 'bytes_rx', bytes_rx, 'hour', hour
    ) ORDER BY src_app, dest_app, vpc_id), '[]') AS json
    FROM flows WHERE hour = $1`
}
