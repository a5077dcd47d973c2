-- prism-sweep store, migration 7: racing (the spec key "racing", orchestrator/racing.c).
-- racing_rounds: one row per decided round of a racing sweep, written in the decision's transaction together with
-- its racing_decisions rows and the next round's jobs: the row's existence is what makes a round decided once.
-- Round 1 is the spec's seeds; round r >= 2 trains the one seed next_seed of round r - 1.

CREATE TABLE racing_rounds (
  sweep_id    INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  round       INTEGER NOT NULL,              -- 1 = the spec's seeds
  seeds       INTEGER NOT NULL,              -- seeds per schedule of the race at this round
  alpha       REAL NOT NULL,                 -- the alpha spent at this round (racing.alpha / looks)
  critical    REAL,                          -- q of the one-sided best-group test; NULL when no test was possible
  family      INTEGER NOT NULL,              -- schedules in the race at this round (with a value)
  survivors   INTEGER NOT NULL,              -- of them, not eliminated
  next_seed   INTEGER,                       -- the seed of round + 1's jobs; NULL: the race is over
  jobs_created INTEGER NOT NULL,             -- jobs this decision created (survivors + the baseline)
  decided_at  REAL NOT NULL,
  PRIMARY KEY (sweep_id, round)
) WITHOUT ROWID;

-- One row per (sweep, round, schedule of the family): eliminated at this round or not, and its delta vs uniform
-- with the 95% CI at this round (the page draws the survivors' intervals narrowing round by round).
CREATE TABLE racing_decisions (
  sweep_id    INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  round       INTEGER NOT NULL,
  schedule_id INTEGER NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  eliminated  INTEGER NOT NULL,              -- 1 eliminated at this round, 0 survives it
  seeds       INTEGER NOT NULL,              -- its seeds with a value at this round
  delta       REAL,                          -- blocked delta vs uniform at this round (NULL: no baseline value)
  ci_low      REAL,
  ci_high     REAL,
  decided_at  REAL NOT NULL,
  PRIMARY KEY (sweep_id, round, schedule_id)
) WITHOUT ROWID;
