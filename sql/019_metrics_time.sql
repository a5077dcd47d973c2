-- prism-sweep store, migration 19: when each metric point was stored (issue #41). The TensorBoard export wrote every
-- point of a job at the job's last update time, so TensorBoard's relative and wall-time axes were flat.
--
-- metrics.t: Unix seconds (an integer: 4 bytes of the record, about 7% of a point) at which the server stored the
-- point's batch (queue.c, the metrics route's insert; every point of one batch shares it). NULL for points stored
-- before this migration: the export falls back to the job's updated_at for those.

ALTER TABLE metrics ADD COLUMN t INTEGER;
