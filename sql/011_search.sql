-- prism-sweep store, migration 11: adaptive search (the spec key "search", orchestrator/search.c; issue #38).
-- A search sweep is created with its initial design (the uniform baseline + maximin); every later schedule was
-- proposed by the surrogate in a decided batch. search_batches: one row per decided batch, written in the decision's
-- transaction together with the batch's schedules, their jobs, search_proposals and search_predictions: the row's
-- existence is what makes a batch decided once. The last row of a finished search proposes nothing and names why
-- it stopped (stop_reason). Means are Δ vs the uniform baseline on the val-loss scale (the surrogate's posterior of
-- each schedule's latent effect minus the baseline's), sds the latent's marginal posterior sd.

CREATE TABLE search_batches (
  sweep_id        INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  batch           INTEGER NOT NULL,          -- 1 = the first batch after the initial design
  schedules       INTEGER NOT NULL,          -- schedules in the sweep when it was decided
  trained         INTEGER NOT NULL,          -- of them, with a value in the blocked model (the fit's inputs)
  proposed        INTEGER NOT NULL,          -- schedules this batch added (0: the search is over)
  jobs_created    INTEGER NOT NULL,
  stop_reason     TEXT,                      -- NULL, or 'budget' | 'space' | 'p_beat' (the batch that ends the search)
  recommended_id  INTEGER,                   -- the trained schedule with the lowest posterior mean
  recommended_mean REAL,
  recommended_sd  REAL,
  best_estimate_id INTEGER,                  -- the trained schedule with the lowest blocked-model estimate
  best_untrained  TEXT,                      -- the predicted best untrained schedule (canonical heads), NULL if none
  best_untrained_mean REAL,
  best_untrained_sd REAL,
  p_beat          REAL,                      -- P(some untrained beats the recommended by more than delta)
  delta           REAL NOT NULL,
  candidates      INTEGER NOT NULL,          -- untrained candidates scored
  exhaustive      INTEGER NOT NULL,          -- 1: they were the whole valid set
  loo_rmse        REAL,                      -- leave-one-out over the trained schedules: RMS error of the held-out mean
  loo_z_rms       REAL,                      --   and RMS of (error / predictive sd): about 1 when the model is calibrated
  heldout_n       INTEGER NOT NULL DEFAULT 0, -- the previous batch's proposals with a value now (predicted before trained)
  heldout_rmse    REAL,
  heldout_z_rms   REAL,
  screened        INTEGER NOT NULL DEFAULT 0, -- jobs the outlier screen left out of this fit
  mu REAL, sf2 REAL, ell REAL, sg2 REAL, loglik REAL,   -- the fitted surrogate
  decided_at      REAL NOT NULL,
  PRIMARY KEY (sweep_id, batch)
) WITHOUT ROWID;

-- The schedules a batch proposed, with the prediction they were proposed on (the held-out check of the next batch).
CREATE TABLE search_proposals (
  sweep_id    INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  schedule_id INTEGER NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  batch       INTEGER NOT NULL,
  pos         INTEGER NOT NULL,              -- its place in the batch (the Thompson draw that chose it)
  pred_mean   REAL,
  pred_sd     REAL,
  PRIMARY KEY (sweep_id, schedule_id)
) WITHOUT ROWID;

-- Every trained schedule's posterior at a batch's fit (the leaderboard shows the latest batch's).
CREATE TABLE search_predictions (
  sweep_id    INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  batch       INTEGER NOT NULL,
  schedule_id INTEGER NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  estimate    REAL,                          -- its blocked-model Δ vs uniform (the fit's input, shifted)
  estimate_se REAL,
  mean        REAL NOT NULL,
  sd          REAL NOT NULL,
  PRIMARY KEY (sweep_id, batch, schedule_id)
) WITHOUT ROWID;
