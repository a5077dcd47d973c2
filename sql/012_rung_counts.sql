-- prism-sweep store, migration 12: per-rung counters, so a halving rung report costs the same whatever the sweep's
-- size (issue #39). halving_tick (orchestrator/halving.c) used to aggregate every schedule's jobs at every rung on
-- every report; with these rows it reads, per rung, how many of its jobs are still to report (queued or leased) and
-- how many wait for the decision (paused), and skips a rung where nothing can be decided or applied.
--
-- halving_rung_counts: one row per (sweep, rung) that ever held a job: pending = its jobs in 'queued' or 'leased',
-- paused = in 'paused'. The triggers below keep it in the same statement, hence the same transaction, as every
-- change of a job's state or rung (lease, rung report, promotion, prune, fail, expiry, requeue, cancel, racing's and
-- halving's new jobs, a sweep deleted); a job without a rung (no halving) costs the triggers their WHEN test only.
-- A later migration that rebuilds jobs (DROP TABLE) must create these triggers again.

CREATE TABLE halving_rung_counts (
  sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  rung     INTEGER NOT NULL,
  pending  INTEGER NOT NULL DEFAULT 0,
  paused   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (sweep_id, rung)
) WITHOUT ROWID;

INSERT INTO halving_rung_counts (sweep_id, rung, pending, paused)
  SELECT sweep_id, rung, total(state IN ('queued', 'leased')), total(state = 'paused')
  FROM jobs WHERE rung IS NOT NULL GROUP BY sweep_id, rung;

CREATE TRIGGER jobs_rung_ins AFTER INSERT ON jobs WHEN new.rung IS NOT NULL BEGIN
  INSERT INTO halving_rung_counts (sweep_id, rung, pending, paused)
    VALUES (new.sweep_id, new.rung, new.state IN ('queued', 'leased'), new.state = 'paused')
    ON CONFLICT (sweep_id, rung) DO UPDATE SET pending = pending + excluded.pending, paused = paused + excluded.paused;
END;

CREATE TRIGGER jobs_rung_del AFTER DELETE ON jobs WHEN old.rung IS NOT NULL BEGIN
  UPDATE halving_rung_counts SET pending = pending - (old.state IN ('queued', 'leased')), paused = paused - (old.state = 'paused')
    WHERE sweep_id = old.sweep_id AND rung = old.rung;
END;

CREATE TRIGGER jobs_rung_upd AFTER UPDATE OF state, rung, sweep_id ON jobs
  WHEN (old.rung IS NOT NULL OR new.rung IS NOT NULL)
   AND (old.state IS NOT new.state OR old.rung IS NOT new.rung OR old.sweep_id IS NOT new.sweep_id) BEGIN
  UPDATE halving_rung_counts SET pending = pending - (old.state IN ('queued', 'leased')), paused = paused - (old.state = 'paused')
    WHERE old.rung IS NOT NULL AND sweep_id = old.sweep_id AND rung = old.rung;
  INSERT INTO halving_rung_counts (sweep_id, rung, pending, paused)
    SELECT new.sweep_id, new.rung, new.state IN ('queued', 'leased'), new.state = 'paused' WHERE new.rung IS NOT NULL
    ON CONFLICT (sweep_id, rung) DO UPDATE SET pending = pending + excluded.pending, paused = paused + excluded.paused;
END;
