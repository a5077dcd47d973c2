-- prism-sweep store, migration 6: the worker's grad_norm (the gradient's global L2 norm before clipping) kept
-- with each train point. The worker has always sent it in its metrics.jsonl rows (worker/train.c); before this
-- migration the server dropped it. NULL for points stored before it and for val points.
ALTER TABLE metrics ADD COLUMN grad_norm REAL;
