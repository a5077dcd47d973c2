-- prism-sweep store, migration 9: the result a screened job had before it was requeued (issue #37).
-- A done job that the leaderboard's outlier screen leaves out (ranking.h: ranking_screen) can be trained again
-- (POST /api/v1/jobs/{id}/requeue, or a sweep's {"state": "screened"}; orchestrator/queue.c:
-- queue_requeue_screened). The same transaction that puts it back in the queue moves its results row here, so
-- the old value is never lost and never counted in the new run's ranking (ranking reads results only).
CREATE TABLE requeued_results (
  job_id       INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt      INTEGER NOT NULL,               -- the attempt that reported it
  val_loss     REAL NOT NULL,
  tok_per_s    REAL,
  result       TEXT NOT NULL,                  -- result.json as reported
  completed_at REAL NOT NULL,                  -- when it was reported
  requeued_at  REAL NOT NULL,
  reason       TEXT NOT NULL,                  -- the screen's one line (ranking_screened.reason)
  PRIMARY KEY (job_id, attempt)
) WITHOUT ROWID;
