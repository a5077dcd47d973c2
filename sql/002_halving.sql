-- prism-sweep store, migration: successive halving (the spec key "halving", orchestrator/halving.c).
-- Adds the job states 'paused' (stopped at a rung, waiting for the promotion decision) and 'pruned' (terminal:
-- not promoted; its rung results stay), the columns jobs.stop_at_step and jobs.rung, and the tables
-- rung_results and halving_decisions. SQLite cannot widen a CHECK in place, so jobs is rebuilt (the documented
-- 12-step recipe: store.c runs migrations with foreign_keys OFF, so dropping the old table cascades nothing).

CREATE TABLE jobs_new (
  id               INTEGER PRIMARY KEY,
  sweep_id         INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  schedule_id      INTEGER NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  seed             INTEGER NOT NULL,
  seed_index       INTEGER NOT NULL,
  priority         INTEGER NOT NULL DEFAULT 0,
  state            TEXT NOT NULL DEFAULT 'queued'
                   CHECK (state IN ('queued', 'leased', 'done', 'failed', 'cancelled', 'paused', 'pruned')),
  job              TEXT NOT NULL,
  attempt          INTEGER NOT NULL DEFAULT 0,
  attempt_base     INTEGER NOT NULL DEFAULT 0,
  lease_token      TEXT,
  lease_expires_at REAL,
  worker_id        INTEGER REFERENCES workers(id),
  device           TEXT,
  checkpoint_path  TEXT,
  checkpoint_step  INTEGER,
  step             INTEGER NOT NULL DEFAULT 0,
  steps            INTEGER NOT NULL DEFAULT 0,
  last_loss        REAL,
  last_error       TEXT,
  retryable        INTEGER,
  created_at       REAL NOT NULL,
  updated_at       REAL NOT NULL,
  finished_at      REAL,
  stop_at_step     INTEGER,                  -- halving: the lease's stop_at_step (the current rung's step); NULL = run to train.steps
  rung             INTEGER,                  -- halving: index of the rung the job trains towards (last = the full run); NULL without halving
  UNIQUE (schedule_id, seed)
);
INSERT INTO jobs_new (id, sweep_id, schedule_id, seed, seed_index, priority, state, job, attempt, attempt_base,
                      lease_token, lease_expires_at, worker_id, device, checkpoint_path, checkpoint_step, step, steps,
                      last_loss, last_error, retryable, created_at, updated_at, finished_at)
  SELECT id, sweep_id, schedule_id, seed, seed_index, priority, state, job, attempt, attempt_base,
         lease_token, lease_expires_at, worker_id, device, checkpoint_path, checkpoint_step, step, steps,
         last_loss, last_error, retryable, created_at, updated_at, finished_at FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE INDEX jobs_queue ON jobs (state, priority DESC, seed_index, id);
CREATE INDEX jobs_sweep ON jobs (sweep_id, state);
CREATE INDEX jobs_lease ON jobs (state, lease_expires_at);

-- The val loss each job reported at each rung it reached (kept when the job is pruned or promoted).
CREATE TABLE rung_results (
  job_id      INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  rung        INTEGER NOT NULL,              -- 0 = the first rung
  step        INTEGER NOT NULL,              -- the rung's step (the val loss is at exactly this step)
  attempt     INTEGER NOT NULL,
  val_loss    REAL NOT NULL,
  reported_at REAL NOT NULL,
  PRIMARY KEY (job_id, rung)
) WITHOUT ROWID;

-- One decision per (sweep, rung, schedule), written in the promotion's transaction: the row's existence is
-- what makes a promotion happen exactly once.
CREATE TABLE halving_decisions (
  sweep_id    INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  rung        INTEGER NOT NULL,
  schedule_id INTEGER NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  promoted    INTEGER NOT NULL,              -- 1 promoted to rung + 1, 0 pruned
  position    INTEGER,                       -- its rank at the rung (1 = best; NULL when it had no paired value)
  delta       REAL,                          -- its mean paired delta vs uniform at the rung
  decided_at  REAL NOT NULL,
  PRIMARY KEY (sweep_id, rung, schedule_id)
) WITHOUT ROWID;
