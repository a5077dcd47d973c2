-- prism-sweep store, migration 15: the leaderboard's poll in O(1) when nothing it shows changed (issue #39).
--
-- GET /api/v1/sweeps/{id}/leaderboard ranks every job and result of the sweep (ranking.c: 4.6M VM steps at 100,000
-- jobs), and the page polls it every 2 s. sweep_ranking.rev is a per-sweep counter that moves whenever anything the
-- ranking reads moves: a job inserted, deleted, or changed in a column the leaderboard shows (state, schedule, seed,
-- steps, the halving rung, tokens per step); a result or rung result written, changed or removed; a schedule; the
-- sweep's name or spec; the halving, racing and search tables the ranking annotates with. The server (lbcache.c)
-- keeps the last answer per sweep with the rev it was built at and answers it again while the rev is the same
-- (a bounded age aside, for the halving total of steps trained, which heartbeats move: docs/API.md).
--
-- Every trigger is an UPDATE of the sweep's one row (no INSERT: a child row deleted by a sweep's cascade must not
-- reinsert a row for the sweep being deleted); a sweep's row is made by sweeps_rank_ins. A heartbeat or a metrics
-- batch changes none of the watched columns, so the hot routes write nothing more; a lease, complete, fail or
-- pause writes this one row (the same page for every job of the sweep).

CREATE TABLE sweep_ranking (
  sweep_id INTEGER PRIMARY KEY REFERENCES sweeps(id) ON DELETE CASCADE,
  rev      INTEGER NOT NULL DEFAULT 0   -- moves on every change the leaderboard shows
);
INSERT INTO sweep_ranking (sweep_id, rev) SELECT id, 1 FROM sweeps;

CREATE TRIGGER sweeps_rank_ins AFTER INSERT ON sweeps BEGIN
  INSERT INTO sweep_ranking (sweep_id, rev) VALUES (new.id, 1);
END;
CREATE TRIGGER sweeps_rank_upd AFTER UPDATE OF name, spec ON sweeps
  WHEN new.name IS NOT old.name OR new.spec IS NOT old.spec BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = new.id;
END;

CREATE TRIGGER jobs_rank_ins AFTER INSERT ON jobs BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = new.sweep_id;
END;
CREATE TRIGGER jobs_rank_del AFTER DELETE ON jobs BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = old.sweep_id;
END;
CREATE TRIGGER jobs_rank_upd AFTER UPDATE OF state, sweep_id, schedule_id, seed, seed_index, steps, rung, tokens_per_step ON jobs
  WHEN new.state IS NOT old.state OR new.sweep_id IS NOT old.sweep_id OR new.schedule_id IS NOT old.schedule_id
    OR new.seed IS NOT old.seed OR new.seed_index IS NOT old.seed_index OR new.steps IS NOT old.steps
    OR new.rung IS NOT old.rung OR new.tokens_per_step IS NOT old.tokens_per_step BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id IN (old.sweep_id, new.sweep_id);
END;

-- results and rung results name their job: one seek for its sweep
CREATE TRIGGER results_rank_ins AFTER INSERT ON results BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = (SELECT sweep_id FROM jobs WHERE id = new.job_id);
END;
CREATE TRIGGER results_rank_upd AFTER UPDATE ON results BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id IN (SELECT sweep_id FROM jobs WHERE id IN (old.job_id, new.job_id));
END;
CREATE TRIGGER results_rank_del AFTER DELETE ON results BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = (SELECT sweep_id FROM jobs WHERE id = old.job_id);
END;
CREATE TRIGGER rung_results_rank_ins AFTER INSERT ON rung_results BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = (SELECT sweep_id FROM jobs WHERE id = new.job_id);
END;
CREATE TRIGGER rung_results_rank_upd AFTER UPDATE ON rung_results BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id IN (SELECT sweep_id FROM jobs WHERE id IN (old.job_id, new.job_id));
END;
CREATE TRIGGER rung_results_rank_del AFTER DELETE ON rung_results BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = (SELECT sweep_id FROM jobs WHERE id = old.job_id);
END;

-- the tables that carry sweep_id themselves
CREATE TRIGGER schedules_rank_ins AFTER INSERT ON schedules BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = new.sweep_id;
END;
CREATE TRIGGER schedules_rank_upd AFTER UPDATE ON schedules BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id IN (old.sweep_id, new.sweep_id);
END;
CREATE TRIGGER schedules_rank_del AFTER DELETE ON schedules BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = old.sweep_id;
END;
CREATE TRIGGER halving_decisions_rank_ins AFTER INSERT ON halving_decisions BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = new.sweep_id;
END;
CREATE TRIGGER halving_decisions_rank_upd AFTER UPDATE ON halving_decisions BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id IN (old.sweep_id, new.sweep_id);
END;
CREATE TRIGGER halving_decisions_rank_del AFTER DELETE ON halving_decisions BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = old.sweep_id;
END;
CREATE TRIGGER racing_rounds_rank_ins AFTER INSERT ON racing_rounds BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = new.sweep_id;
END;
CREATE TRIGGER racing_rounds_rank_upd AFTER UPDATE ON racing_rounds BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id IN (old.sweep_id, new.sweep_id);
END;
CREATE TRIGGER racing_rounds_rank_del AFTER DELETE ON racing_rounds BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = old.sweep_id;
END;
CREATE TRIGGER racing_decisions_rank_ins AFTER INSERT ON racing_decisions BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = new.sweep_id;
END;
CREATE TRIGGER racing_decisions_rank_upd AFTER UPDATE ON racing_decisions BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id IN (old.sweep_id, new.sweep_id);
END;
CREATE TRIGGER racing_decisions_rank_del AFTER DELETE ON racing_decisions BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = old.sweep_id;
END;
CREATE TRIGGER racing_config_rank_ins AFTER INSERT ON racing_config BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = new.sweep_id;
END;
CREATE TRIGGER racing_config_rank_upd AFTER UPDATE ON racing_config BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id IN (old.sweep_id, new.sweep_id);
END;
CREATE TRIGGER racing_config_rank_del AFTER DELETE ON racing_config BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = old.sweep_id;
END;
CREATE TRIGGER racing_screened_rank_ins AFTER INSERT ON racing_screened BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = new.sweep_id;
END;
CREATE TRIGGER racing_screened_rank_upd AFTER UPDATE ON racing_screened BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id IN (old.sweep_id, new.sweep_id);
END;
CREATE TRIGGER racing_screened_rank_del AFTER DELETE ON racing_screened BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = old.sweep_id;
END;
CREATE TRIGGER search_batches_rank_ins AFTER INSERT ON search_batches BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = new.sweep_id;
END;
CREATE TRIGGER search_batches_rank_upd AFTER UPDATE ON search_batches BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id IN (old.sweep_id, new.sweep_id);
END;
CREATE TRIGGER search_batches_rank_del AFTER DELETE ON search_batches BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = old.sweep_id;
END;
CREATE TRIGGER search_proposals_rank_ins AFTER INSERT ON search_proposals BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = new.sweep_id;
END;
CREATE TRIGGER search_proposals_rank_upd AFTER UPDATE ON search_proposals BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id IN (old.sweep_id, new.sweep_id);
END;
CREATE TRIGGER search_proposals_rank_del AFTER DELETE ON search_proposals BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = old.sweep_id;
END;
CREATE TRIGGER search_predictions_rank_ins AFTER INSERT ON search_predictions BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = new.sweep_id;
END;
CREATE TRIGGER search_predictions_rank_upd AFTER UPDATE ON search_predictions BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id IN (old.sweep_id, new.sweep_id);
END;
CREATE TRIGGER search_predictions_rank_del AFTER DELETE ON search_predictions BEGIN
  UPDATE sweep_ranking SET rev = rev + 1 WHERE sweep_id = old.sweep_id;
END;
