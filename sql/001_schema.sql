-- prism-sweep store, schema version 1 (PRAGMA user_version = 1; store.c applies it and later migrations).
-- The later migrations are sql/002_halving.sql onwards, applied in the order of their numbers (the number is the
-- user_version each brings the file to); each one's header says what it changes, so this list is not kept here.
-- One orchestrator process owns this file. WAL mode and foreign keys are set by store_open().
-- Times are Unix seconds (REAL). JSON columns hold jansson-encoded text.

CREATE TABLE sweeps (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,
  spec        TEXT NOT NULL,                 -- the sweep spec JSON as given
  state       TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'paused')),
  priority    INTEGER NOT NULL DEFAULT 0,    -- default priority of its jobs
  created_at  REAL NOT NULL
);

CREATE TABLE schedules (
  id          INTEGER PRIMARY KEY,
  sweep_id    INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  heads       TEXT NOT NULL,                 -- canonical "3,3,6,6,8,8,12,12,12,12,12,12"
  is_baseline INTEGER NOT NULL DEFAULT 0,    -- 1 for the uniform h_base schedule
  ord         INTEGER NOT NULL,              -- position in the enumeration order
  UNIQUE (sweep_id, heads)
);

CREATE TABLE workers (
  id            INTEGER PRIMARY KEY,
  name          TEXT NOT NULL,
  host          TEXT NOT NULL DEFAULT '',
  devices       TEXT NOT NULL DEFAULT '[]',  -- JSON array as registered
  registered_at REAL NOT NULL,
  last_seen_at  REAL NOT NULL
);

CREATE TABLE jobs (
  id               INTEGER PRIMARY KEY,
  sweep_id         INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  schedule_id      INTEGER NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  seed             INTEGER NOT NULL,
  seed_index       INTEGER NOT NULL,         -- 0 for the spec's first seed: all first seeds lease first
  priority         INTEGER NOT NULL DEFAULT 0,
  state            TEXT NOT NULL DEFAULT 'queued'
                   CHECK (state IN ('queued', 'leased', 'done', 'failed', 'cancelled')),  -- + 'paused', 'pruned' (002_halving.sql)
  job              TEXT NOT NULL,            -- the job JSON a worker trains (model, train, eval, data)
  attempt          INTEGER NOT NULL DEFAULT 0, -- bumped on every lease
  attempt_base     INTEGER NOT NULL DEFAULT 0, -- attempt at the last admin requeue: --max-attempts counts from here
  lease_token      TEXT,                     -- latest lease's secret (kept after it ends: repeated complete/fail is idempotent)
  lease_expires_at REAL,
  worker_id        INTEGER REFERENCES workers(id),
  device           TEXT,
  checkpoint_path  TEXT,                     -- latest checkpoint the worker reported
  checkpoint_step  INTEGER,
  step             INTEGER NOT NULL DEFAULT 0, -- progress: last train step reported
  steps            INTEGER NOT NULL DEFAULT 0, -- total steps of the job
  last_loss        REAL,
  last_error       TEXT,
  retryable        INTEGER,
  created_at       REAL NOT NULL,
  updated_at       REAL NOT NULL,
  finished_at      REAL,
  UNIQUE (schedule_id, seed)
);
CREATE INDEX jobs_queue ON jobs (state, priority DESC, seed_index, id);
CREATE INDEX jobs_sweep ON jobs (sweep_id, state);
CREATE INDEX jobs_lease ON jobs (state, lease_expires_at);

-- One row per reported point; (job, attempt, step, kind) is the idempotency key: a resent batch is a no-op.
CREATE TABLE metrics (
  job_id    INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt   INTEGER NOT NULL,
  step      INTEGER NOT NULL,
  kind      TEXT NOT NULL CHECK (kind IN ('train', 'val')),
  value     REAL NOT NULL,                   -- train_loss or val_loss
  lr        REAL,
  tokens    INTEGER,
  tok_per_s REAL,
  PRIMARY KEY (job_id, attempt, step, kind)
) WITHOUT ROWID;

CREATE TABLE results (
  job_id          INTEGER PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  attempt         INTEGER NOT NULL,
  val_loss        REAL NOT NULL,
  tok_per_s       REAL,
  wall_s          REAL,
  params          INTEGER,
  flops_per_token REAL,
  attn_distance   TEXT,                      -- JSON array D_l per layer, or NULL
  result          TEXT NOT NULL,             -- result.json as reported
  completed_at    REAL NOT NULL
);
