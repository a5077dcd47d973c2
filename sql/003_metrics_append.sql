-- prism-sweep store, migration: metric points in arrival order (orchestrator/queue.c's metrics route).
-- Version 1 kept metrics WITHOUT ROWID keyed by (job, attempt, step, kind): a fleet's concurrent jobs put each
-- request's points on a B-tree leaf of their own, and a leaf split every few batches, so one metrics batch of 8
-- points dirtied ≈ 2.4 pages of 4 KiB, written whole to the WAL at COMMIT and again by the checkpoint
-- (bench_fleet, docs/PERF.md). Now rows take a rowid in arrival order, so one COMMIT's points share the rightmost
-- leaves; the idempotency key (job, attempt, step, kind) is a UNIQUE index (INSERT OR IGNORE still makes a
-- resent batch a no-op), ordered (job_id, kind, step, attempt) for the per-job curve the read routes ask for.
-- Existing points are copied in their old key order.

CREATE TABLE metrics_new (
  id        INTEGER PRIMARY KEY,             -- arrival order (rowid): new points append at the table's right edge
  job_id    INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt   INTEGER NOT NULL,
  step      INTEGER NOT NULL,
  kind      TEXT NOT NULL CHECK (kind IN ('train', 'val')),
  value     REAL NOT NULL,                   -- train_loss or val_loss
  lr        REAL,
  tokens    INTEGER,
  tok_per_s REAL
);
INSERT INTO metrics_new (job_id, attempt, step, kind, value, lr, tokens, tok_per_s)
  SELECT job_id, attempt, step, kind, value, lr, tokens, tok_per_s FROM metrics ORDER BY job_id, attempt, step, kind;
DROP TABLE metrics;
ALTER TABLE metrics_new RENAME TO metrics;
CREATE UNIQUE INDEX metrics_key ON metrics (job_id, kind, step, attempt);
