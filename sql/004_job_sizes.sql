-- prism-sweep store, migration: the job model's tokens per step as a column of jobs.
-- jobs.steps (train.steps) and jobs.tokens_per_step (train.batch_size x seq_len x grad_accum, with the job
-- format's defaults) are filled when a sweep creates its jobs, by the one job model (common/jobmodel.h), so
-- the lease, the metrics route, the sweep summary and halving read columns instead of re-deriving them from
-- the job JSON. Existing rows are filled by the same C code right after this statement, in the same
-- transaction (orchestrator/store.c); a row whose JSON is not a valid job keeps 0 (nothing derived from it).

ALTER TABLE jobs ADD COLUMN tokens_per_step INTEGER NOT NULL DEFAULT 0;
