-- prism-sweep store, migration 8: racing's per-round level calibrated by simulation, and the outlier screen's
-- record in a race (issue #37; orchestrator/racing.c).
-- racing_config: one row per racing sweep, written by the transaction that decides round 1 (a sweep whose round 1
-- was decided before this migration gets a "bonferroni" row at its next decision, so a race never changes level
-- midway). Every later round, and a restarted server, reads alpha_round from it instead of computing it again.
CREATE TABLE racing_config (
  sweep_id    INTEGER PRIMARY KEY REFERENCES sweeps(id) ON DELETE CASCADE,
  alpha_round REAL NOT NULL,                 -- the level every round of the race tests at
  method      TEXT NOT NULL,                 -- 'calibrated' (the simulated level, above alpha / looks) or 'bonferroni'
  bonferroni  REAL NOT NULL,                 -- alpha / looks
  family      INTEGER NOT NULL,              -- K the simulation used (round 1's family)
  reps        INTEGER NOT NULL,              -- replications simulated (0: none, bonferroni)
  null_rate   REAL,                          -- the simulated rate of eliminating any schedule at alpha_round
  null_rate_se REAL,                         -- its Monte Carlo standard error
  work        INTEGER NOT NULL,              -- observations fitted by the simulation (the cost bound's unit)
  created_at  REAL NOT NULL
);

-- One row per job the outlier screen (ranking_screen) left out of a round's fit: it is in no estimate of that
-- round; racing_rounds.screened counts them.
CREATE TABLE racing_screened (
  sweep_id    INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  round       INTEGER NOT NULL,
  job_id      INTEGER NOT NULL,
  schedule_id INTEGER NOT NULL,
  seed        INTEGER NOT NULL,
  val_loss    REAL NOT NULL,
  residual    REAL,                          -- its deleted studentized residual when screened
  threshold   REAL,                          -- the |residual| it exceeded
  PRIMARY KEY (sweep_id, round, job_id)
) WITHOUT ROWID;
ALTER TABLE racing_rounds ADD COLUMN screened INTEGER NOT NULL DEFAULT 0;
