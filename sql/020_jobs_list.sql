-- prism-sweep store, migration 20: the jobs list read a page at a time in the lease order (issue #44). GET
-- /api/v1/sweeps/{id}/jobs answered every job of the sweep in one answer, sorted at each request: 46.7 MB and
-- 2.2-3.5 s of the event loop for 100,000 jobs, polled by the page. It now answers pages (at most
-- VIEWS_JOBS_PAGE jobs) and goes on after the last job of a page (?after=ID), each page a range of one of these
-- indexes in the lease order itself (jobs.lease_ord stands for the schedule's is_baseline and ord: migration 10):
--   jobs_list        (sweep_id, priority DESC, seed_index, lease_ord, id)          every job of a sweep
--   jobs_list_state  (sweep_id, state, priority DESC, seed_index, lease_ord, id)   ?state=
-- Neither moves on a metrics batch or a heartbeat (no column of theirs changes there); jobs_list_state moves on a
-- change of state, as jobs_sweep already does.

CREATE INDEX jobs_list ON jobs (sweep_id, priority DESC, seed_index, lease_ord, id);
CREATE INDEX jobs_list_state ON jobs (sweep_id, state, priority DESC, seed_index, lease_ord, id);
