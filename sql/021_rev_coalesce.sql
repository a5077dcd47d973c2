-- prism-sweep store, migration 21: a running job's progress moves its change cursor at most every few seconds
-- (issue #39). Migration 14's jobs_rev_upd moved jobs.rev on every change of a job the jobs route shows, so every
-- metrics batch and heartbeat that moved a leased job's step moved its jobs_rev index entry too (one more index
-- leaf written per request: 25.6 KiB written per request at 2,000 boxes x 8 against 22.0 before migration 14).
-- Now a leased job's step and last_loss are left to the worker routes' own UPDATE (orchestrator/queue.c,
-- S_PROGRESS), which moves rev for them at most once per queue.rev_every_s (10 s) per job: the page's
-- ?since=CURSOR poll shows a running job's step up to that much late (and a step reported after the last move, by a
-- worker that then goes silent, at the next change of its state: done, failed, expired). Every other change the
-- jobs route shows (state, lease, error, checkpoint, priority, ...; step and last_loss of a job not leased) moves
-- rev as before. The trigger restates migration 14's with that one change (SQLite has no ALTER TRIGGER).

DROP TRIGGER jobs_rev_upd;
CREATE TRIGGER jobs_rev_upd AFTER UPDATE OF sweep_id, schedule_id, seed, seed_index, priority, state, attempt,
  worker_id, device, checkpoint_step, step, steps, last_loss, last_error, finished_at ON jobs
  WHEN new.rev IS old.rev AND (new.state IS NOT old.state
    OR ((new.step IS NOT old.step OR new.last_loss IS NOT old.last_loss) AND new.state IS NOT 'leased')
    OR new.attempt IS NOT old.attempt OR new.worker_id IS NOT old.worker_id OR new.device IS NOT old.device
    OR new.priority IS NOT old.priority OR new.last_error IS NOT old.last_error
    OR new.checkpoint_step IS NOT old.checkpoint_step OR new.finished_at IS NOT old.finished_at
    OR new.steps IS NOT old.steps OR new.sweep_id IS NOT old.sweep_id OR new.schedule_id IS NOT old.schedule_id
    OR new.seed IS NOT old.seed OR new.seed_index IS NOT old.seed_index) BEGIN
  UPDATE jobs SET rev = (SELECT max(j2.rev) + 1 FROM jobs j2 WHERE j2.sweep_id = new.sweep_id) WHERE id = new.id;
END;
