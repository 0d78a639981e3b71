-- The fingerprint (sha256) of the batch each Idempotency-Key was committed with: the same key sent
-- with another batch is refused (422) instead of being answered as a replay of the first.
-- Keys stored before this column have none and keep being treated as replays.
ALTER TABLE flows_idempotency ADD COLUMN IF NOT EXISTS fingerprint bytea;
