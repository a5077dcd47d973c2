-- prism-sweep store, migration 18: preemptions counted apart from failures, and a val point's standard error
-- (issue #40).
--
-- jobs.preemptions: the attempts of the job that ended preempted (the worker's /fail with "preempted": true, or an
-- error starting "preempted:" from a worker before it). A preempted attempt does not use up `serve
-- --max-attempts` (queue.c moves attempt_base past it); it counts here against `serve --max-preemptions`, over
-- the job's whole life (a requeue does not reset it). Shown on the job (docs/API.md). No trigger reads it: the
-- sweep counters (migrations 10, 12, 14) do not change; the worker's fail route sets rev itself.
--
-- metrics.val_loss_se: a val point's standard error over its val batches (a trainer's val line, the built-in's
-- val point when it computes one), as grad_norm (migration 6) is a train point's. NULL for train points and for
-- points stored before this migration.
ALTER TABLE jobs ADD COLUMN preemptions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE metrics ADD COLUMN val_loss_se REAL;
