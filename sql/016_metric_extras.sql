-- prism-sweep store, migration 16: an external trainer's own metrics (issue #40). A train or val line, and so a
-- metrics point, may carry "extra": {NAME: number} (common/point.h point_extra_check: at most 16 names of
-- [A-Za-z0-9_./-]{1,64}, finite numbers); the point's row keeps that object as compact JSON text (17 significant
-- digits), NULL when it has none — every point of the built-in engine and every point stored before this
-- migration. A JSON column rather than a table of (job, attempt, step, kind, name) rows: a batch without extras
-- writes exactly what it wrote before (queue.c inserts its rows with the statement that names no extra column),
-- and one with them writes one column more per row, not a row per name (tests/unit/test_hotpath_cost.c). The
-- idempotency key stays the row's (metrics_key): a resent batch is ignored whole, extras with it. A point with
-- both losses keeps its extra on its train row.
ALTER TABLE metrics ADD COLUMN extra TEXT;
