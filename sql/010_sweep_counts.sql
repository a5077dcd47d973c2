-- prism-sweep store, migration 10: per-sweep counters, so the hot path costs the same whatever the sweep's size
-- (issue #39). The heartbeat's sweep progress, /metrics' jobs per state, `prism-sweep status` and the page's sweep
-- summaries read these rows instead of counting every job of a sweep.
--
-- sweep_counts: one row per (sweep, state) that ever held a job: n jobs in that state and, for every state but
-- 'leased' (whose steps move with each heartbeat), the sum of their steps in total and trained (the formulas of
-- orchestrator/sweeps.c's summary: a cancelled job counts none, a pruned one up to its rung, a done one its
-- train.steps); the leased jobs' share is read live (jobs_sweep index: as many rows as the sweep's running jobs).
-- The triggers below keep it in the same statement, hence the same transaction, as every change of a job's state
-- (lease, complete, fail, expiry, requeue, cancel, halving's pause/promote/prune, racing's new jobs, a sweep
-- created or deleted): each fires once per changed job and touches one row by its primary key, O(1) per change.
-- jobs_count_upd fires only when the state, the sweep or (outside 'leased') the steps change: a heartbeat's UPDATE
-- of a leased job costs it the WHEN test, nothing more. sweeps_counts_verify (sweeps.h) checks it against
-- count(*) GROUP BY state. A later migration that rebuilds jobs (DROP TABLE) must create these triggers again.
--
-- sweeps.schedules: the sweep's schedules, kept by the triggers on schedules. The index jobs_sweep gains
-- finished_at (jobs done in the last minutes: a range, not a scan of every done job).
--
-- jobs.lease_ord: the job's place among its seed level, (1 - is_baseline) * 2^32 + its schedule's ord, set when the
-- job is inserted (jobs_lease_ord_ins; a schedule's ord and is_baseline never change). jobs_queue becomes
-- (state, priority DESC, seed_index, lease_ord, id), the lease order itself: the lease's pick reads the first
-- queued job of an active sweep instead of sorting the whole first seed level (every queued job of it) per lease.

ALTER TABLE jobs ADD COLUMN lease_ord INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET lease_ord = (SELECT (1 - sc.is_baseline) * 4294967296 + sc.ord FROM schedules sc WHERE sc.id = jobs.schedule_id);
CREATE TRIGGER jobs_lease_ord_ins AFTER INSERT ON jobs BEGIN
  UPDATE jobs SET lease_ord = (SELECT (1 - sc.is_baseline) * 4294967296 + sc.ord FROM schedules sc WHERE sc.id = new.schedule_id)
    WHERE id = new.id;
END;
DROP INDEX jobs_queue;
CREATE INDEX jobs_queue ON jobs (state, priority DESC, seed_index, lease_ord, id);

CREATE TABLE sweep_counts (
  sweep_id    INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  state       TEXT NOT NULL,
  n           INTEGER NOT NULL DEFAULT 0,    -- jobs of the sweep in this state
  steps_total INTEGER NOT NULL DEFAULT 0,    -- their steps to train (0 for 'leased': read live)
  steps_done  INTEGER NOT NULL DEFAULT 0,    -- their steps trained (0 for 'leased': read live)
  PRIMARY KEY (sweep_id, state)
) WITHOUT ROWID;

INSERT INTO sweep_counts (sweep_id, state, n, steps_total, steps_done)
  SELECT sweep_id, state, count(*),
         CASE WHEN state = 'leased' THEN 0 ELSE total(CASE WHEN state = 'cancelled' THEN 0 WHEN state = 'pruned' THEN step
                                                        ELSE steps END) END,
         CASE WHEN state = 'leased' THEN 0 ELSE total(CASE WHEN state = 'cancelled' THEN 0 WHEN state = 'done' THEN steps
                                                        ELSE min(step, coalesce(nullif(steps, 0), step)) END) END
  FROM jobs GROUP BY sweep_id, state;

CREATE TRIGGER jobs_count_ins AFTER INSERT ON jobs BEGIN
  INSERT INTO sweep_counts (sweep_id, state, n, steps_total, steps_done)
    VALUES (new.sweep_id, new.state, 1,
            CASE new.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'pruned' THEN new.step ELSE new.steps END,
            CASE new.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'done' THEN new.steps
                           ELSE min(new.step, coalesce(nullif(new.steps, 0), new.step)) END)
    ON CONFLICT (sweep_id, state) DO UPDATE SET n = n + 1, steps_total = steps_total + excluded.steps_total,
                                                steps_done = steps_done + excluded.steps_done;
END;

CREATE TRIGGER jobs_count_del AFTER DELETE ON jobs BEGIN
  UPDATE sweep_counts SET n = n - 1,
    steps_total = steps_total - CASE old.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'pruned' THEN old.step
                                               ELSE old.steps END,
    steps_done = steps_done - CASE old.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'done' THEN old.steps
                                             ELSE min(old.step, coalesce(nullif(old.steps, 0), old.step)) END
    WHERE sweep_id = old.sweep_id AND state = old.state;
END;

CREATE TRIGGER jobs_count_upd AFTER UPDATE OF state, sweep_id, step, steps ON jobs
  WHEN new.state IS NOT old.state OR new.sweep_id IS NOT old.sweep_id OR
       (new.state != 'leased' AND (new.step IS NOT old.step OR new.steps IS NOT old.steps)) BEGIN
  UPDATE sweep_counts SET n = n - 1,
    steps_total = steps_total - CASE old.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'pruned' THEN old.step
                                               ELSE old.steps END,
    steps_done = steps_done - CASE old.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'done' THEN old.steps
                                             ELSE min(old.step, coalesce(nullif(old.steps, 0), old.step)) END
    WHERE sweep_id = old.sweep_id AND state = old.state;
  INSERT INTO sweep_counts (sweep_id, state, n, steps_total, steps_done)
    VALUES (new.sweep_id, new.state, 1,
            CASE new.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'pruned' THEN new.step ELSE new.steps END,
            CASE new.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'done' THEN new.steps
                           ELSE min(new.step, coalesce(nullif(new.steps, 0), new.step)) END)
    ON CONFLICT (sweep_id, state) DO UPDATE SET n = n + 1, steps_total = steps_total + excluded.steps_total,
                                                steps_done = steps_done + excluded.steps_done;
END;

ALTER TABLE sweeps ADD COLUMN schedules INTEGER NOT NULL DEFAULT 0;
UPDATE sweeps SET schedules = (SELECT count(*) FROM schedules WHERE sweep_id = sweeps.id);
CREATE TRIGGER schedules_count_ins AFTER INSERT ON schedules BEGIN
  UPDATE sweeps SET schedules = schedules + 1 WHERE id = new.sweep_id;
END;
CREATE TRIGGER schedules_count_del AFTER DELETE ON schedules BEGIN
  UPDATE sweeps SET schedules = schedules - 1 WHERE id = old.sweep_id;
END;

DROP INDEX jobs_sweep;
CREATE INDEX jobs_sweep ON jobs (sweep_id, state, finished_at);
