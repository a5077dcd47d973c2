-- prism-sweep store, migration 14: the page's polling in O(what changed) (issue #39). The leaderboard page polls
-- GET /api/v1/sweeps/{id}/jobs every 2 s (46.7 MB for 100,000 jobs) and GET /api/v1/sweeps/{id}, whose `cost`
-- summed every job and result of the sweep.
--
-- jobs.rev: a change cursor per sweep. A job inserted or changed gets rev = its sweep's largest rev + 1 (a seek to
-- the end of the sweep's range of the jobs_rev index: O(log n)), so the sweep's cursor is its largest rev and
-- GET /api/v1/sweeps/{id}/jobs?since=CURSOR reads the jobs_rev index from CURSOR on: as many rows as changed.
-- The worker routes' statements (orchestrator/queue.c: lease, progress, checkpoint, complete, fail, the rung's
-- pause) set rev themselves in the same UPDATE (no second write of the row); every other change of a job the jobs
-- route shows (state, lease, progress, error, checkpoint, priority: every column of docs/API.md's job but
-- lease_expires_at and updated_at, which a lease renewal alone moves, and created_at, which never does), whichever
-- module makes it (queue.c's admin paths, halving.c, racing.c, search.c, sweeps.c), is caught by jobs_rev_upd,
-- which fires only when the statement left rev as it was. Its inner UPDATE changes rev alone: nothing fires again.
-- jobs_lease_ord_ins (migration 10) is created again to set rev too, in the one UPDATE an inserted job costs.
--
-- sweep_counts.tokens: the tokens the sweep's jobs in that state have trained (min(step, steps) x tokens_per_step,
-- the formula of the sweep's `cost`), 0 for 'leased' (its steps move with each heartbeat: read live, as steps_done,
-- from the jobs_sweep index: as many rows as the sweep's running jobs). Migration 10's three triggers are created
-- again with the column (SQLite has no ALTER TRIGGER: they restate migration 10's; one INSTEAD OF trigger on a view
-- holding the rules once cost each state change 112 more VM steps, measured); jobs_count_upd also fires when
-- tokens_per_step changes.
--
-- sweep_results: per sweep, the results that report a device time (timed) and its sum (wall_s, seconds): the
-- `cost`'s jobs_timed and device_hours, kept by the triggers on results (queue.c writes a result with an UPSERT, so
-- a result reported again fires the update trigger; a REPLACE would delete the old row without firing any).
--
-- sweeps_counts_verify (sweeps.h) checks the counters against the jobs and results themselves, and that no two jobs
-- of a sweep share a rev. A later migration that rebuilds jobs or results (DROP TABLE) must create these triggers again.

ALTER TABLE jobs ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET rev = id;   -- ids grow: each sweep's jobs in the order they were made
CREATE INDEX jobs_rev ON jobs (sweep_id, rev);

DROP TRIGGER jobs_lease_ord_ins;
CREATE TRIGGER jobs_lease_ord_ins AFTER INSERT ON jobs BEGIN
  UPDATE jobs SET lease_ord = (SELECT (1 - sc.is_baseline) * 4294967296 + sc.ord FROM schedules sc WHERE sc.id = new.schedule_id),
                  rev = (SELECT coalesce(max(j2.rev), 0) + 1 FROM jobs j2 WHERE j2.sweep_id = new.sweep_id)
    WHERE id = new.id;
END;

CREATE TRIGGER jobs_rev_upd AFTER UPDATE OF sweep_id, schedule_id, seed, seed_index, priority, state, attempt,
  worker_id, device, checkpoint_step, step, steps, last_loss, last_error, finished_at ON jobs
  WHEN new.rev IS old.rev AND (new.state IS NOT old.state OR new.step IS NOT old.step OR new.last_loss IS NOT old.last_loss
    OR new.attempt IS NOT old.attempt OR new.worker_id IS NOT old.worker_id OR new.device IS NOT old.device
    OR new.priority IS NOT old.priority OR new.last_error IS NOT old.last_error
    OR new.checkpoint_step IS NOT old.checkpoint_step OR new.finished_at IS NOT old.finished_at
    OR new.steps IS NOT old.steps OR new.sweep_id IS NOT old.sweep_id OR new.schedule_id IS NOT old.schedule_id
    OR new.seed IS NOT old.seed OR new.seed_index IS NOT old.seed_index) BEGIN
  UPDATE jobs SET rev = (SELECT max(j2.rev) + 1 FROM jobs j2 WHERE j2.sweep_id = new.sweep_id) WHERE id = new.id;
END;

ALTER TABLE sweep_counts ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;   -- their tokens trained (0 for 'leased')
UPDATE sweep_counts SET tokens = coalesce((SELECT sum(min(j.step, coalesce(nullif(j.steps, 0), j.step)) * j.tokens_per_step)
  FROM jobs j WHERE j.sweep_id = sweep_counts.sweep_id AND j.state = sweep_counts.state), 0) WHERE state != 'leased';

DROP TRIGGER jobs_count_ins;
DROP TRIGGER jobs_count_del;
DROP TRIGGER jobs_count_upd;

CREATE TRIGGER jobs_count_ins AFTER INSERT ON jobs BEGIN
  INSERT INTO sweep_counts (sweep_id, state, n, steps_total, steps_done, tokens)
    VALUES (new.sweep_id, new.state, 1,
            CASE new.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'pruned' THEN new.step ELSE new.steps END,
            CASE new.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'done' THEN new.steps
                           ELSE min(new.step, coalesce(nullif(new.steps, 0), new.step)) END,
            CASE new.state WHEN 'leased' THEN 0
                           ELSE min(new.step, coalesce(nullif(new.steps, 0), new.step)) * new.tokens_per_step END)
    ON CONFLICT (sweep_id, state) DO UPDATE SET n = n + 1, steps_total = steps_total + excluded.steps_total,
                                                steps_done = steps_done + excluded.steps_done,
                                                tokens = tokens + excluded.tokens;
END;

CREATE TRIGGER jobs_count_del AFTER DELETE ON jobs BEGIN
  UPDATE sweep_counts SET n = n - 1,
    steps_total = steps_total - CASE old.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'pruned' THEN old.step
                                               ELSE old.steps END,
    steps_done = steps_done - CASE old.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'done' THEN old.steps
                                             ELSE min(old.step, coalesce(nullif(old.steps, 0), old.step)) END,
    tokens = tokens - CASE old.state WHEN 'leased' THEN 0
                                     ELSE min(old.step, coalesce(nullif(old.steps, 0), old.step)) * old.tokens_per_step END
    WHERE sweep_id = old.sweep_id AND state = old.state;
END;

CREATE TRIGGER jobs_count_upd AFTER UPDATE OF state, sweep_id, step, steps, tokens_per_step ON jobs
  WHEN new.state IS NOT old.state OR new.sweep_id IS NOT old.sweep_id OR
       (new.state != 'leased' AND (new.step IS NOT old.step OR new.steps IS NOT old.steps OR
                                   new.tokens_per_step IS NOT old.tokens_per_step)) BEGIN
  UPDATE sweep_counts SET n = n - 1,
    steps_total = steps_total - CASE old.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'pruned' THEN old.step
                                               ELSE old.steps END,
    steps_done = steps_done - CASE old.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'done' THEN old.steps
                                             ELSE min(old.step, coalesce(nullif(old.steps, 0), old.step)) END,
    tokens = tokens - CASE old.state WHEN 'leased' THEN 0
                                     ELSE min(old.step, coalesce(nullif(old.steps, 0), old.step)) * old.tokens_per_step END
    WHERE sweep_id = old.sweep_id AND state = old.state;
  INSERT INTO sweep_counts (sweep_id, state, n, steps_total, steps_done, tokens)
    VALUES (new.sweep_id, new.state, 1,
            CASE new.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'pruned' THEN new.step ELSE new.steps END,
            CASE new.state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'done' THEN new.steps
                           ELSE min(new.step, coalesce(nullif(new.steps, 0), new.step)) END,
            CASE new.state WHEN 'leased' THEN 0
                           ELSE min(new.step, coalesce(nullif(new.steps, 0), new.step)) * new.tokens_per_step END)
    ON CONFLICT (sweep_id, state) DO UPDATE SET n = n + 1, steps_total = steps_total + excluded.steps_total,
                                                steps_done = steps_done + excluded.steps_done,
                                                tokens = tokens + excluded.tokens;
END;

CREATE TABLE sweep_results (
  sweep_id INTEGER PRIMARY KEY REFERENCES sweeps(id) ON DELETE CASCADE,
  timed    INTEGER NOT NULL DEFAULT 0,   -- results of the sweep's jobs with a wall_s
  wall_s   REAL NOT NULL DEFAULT 0       -- their sum, seconds
);
INSERT INTO sweep_results (sweep_id, timed, wall_s)
  SELECT j.sweep_id, count(r.wall_s), total(r.wall_s) FROM results r JOIN jobs j ON j.id = r.job_id GROUP BY j.sweep_id;

CREATE TRIGGER results_cost_ins AFTER INSERT ON results BEGIN
  INSERT INTO sweep_results (sweep_id, timed, wall_s)
    SELECT sweep_id, new.wall_s IS NOT NULL, coalesce(new.wall_s, 0) FROM jobs WHERE id = new.job_id
    ON CONFLICT (sweep_id) DO UPDATE SET timed = timed + excluded.timed, wall_s = wall_s + excluded.wall_s;
END;

CREATE TRIGGER results_cost_del AFTER DELETE ON results BEGIN
  UPDATE sweep_results SET timed = timed - (old.wall_s IS NOT NULL), wall_s = wall_s - coalesce(old.wall_s, 0)
    WHERE sweep_id = (SELECT sweep_id FROM jobs WHERE id = old.job_id);
END;

CREATE TRIGGER results_cost_upd AFTER UPDATE OF job_id, wall_s ON results
  WHEN new.job_id IS NOT old.job_id OR new.wall_s IS NOT old.wall_s BEGIN
  UPDATE sweep_results SET timed = timed - (old.wall_s IS NOT NULL), wall_s = wall_s - coalesce(old.wall_s, 0)
    WHERE sweep_id = (SELECT sweep_id FROM jobs WHERE id = old.job_id);
  INSERT INTO sweep_results (sweep_id, timed, wall_s)
    SELECT sweep_id, new.wall_s IS NOT NULL, coalesce(new.wall_s, 0) FROM jobs WHERE id = new.job_id
    ON CONFLICT (sweep_id) DO UPDATE SET timed = timed + excluded.timed, wall_s = wall_s + excluded.wall_s;
END;
