-- prism-sweep store, migration: a worker's failure streak, so a failure storm stops at the server too.
-- workers.fail_streak counts the jobs this worker failed in a row without retry (retryable: false); a complete
-- or a rung report sets it back to 0. When it reaches `prism-sweep serve --worker-fail-limit N` (default 3),
-- workers.stopped_reason says why, and the lease route answers 409 to that worker (nothing more is leased to it)
-- until it registers again (POST /api/v1/workers/register clears both).

ALTER TABLE workers ADD COLUMN fail_streak INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN stopped_reason TEXT;
