-- prism-sweep store, migration 13: a surrogate search over numeric train keys too (the spec's "search.dims",
-- orchestrator/search.c; issue #38). A candidate is then a schedule at some train values ("4,4,8,8" at lr 0.001 and
-- at lr 0.003 are two rows): schedules gains `train`, the canonical JSON of the train keys this row overrides
-- ('' for every row of a sweep without dims, so nothing else changes), and the unique key becomes
-- (sweep_id, heads, train). SQLite cannot change a table's UNIQUE constraint, so the table is rebuilt (the
-- migrations run with foreign_keys OFF, store.c, so the DROP cascades nothing) and the triggers that name it are
-- made again: migration 10's schedules_count_ins/_del (on it) and jobs_lease_ord_ins (reading it).
-- search_batches gains best_untrained_train: the predicted best untrained candidate's train values.

DROP TRIGGER jobs_lease_ord_ins;
CREATE TABLE schedules_new (
  id          INTEGER PRIMARY KEY,
  sweep_id    INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  heads       TEXT NOT NULL,                 -- canonical "3,3,6,6,8,8,12,12,12,12,12,12"
  is_baseline INTEGER NOT NULL DEFAULT 0,    -- 1 for the uniform h_base schedule (at the spec's own train values)
  ord         INTEGER NOT NULL,              -- position in the enumeration order
  train       TEXT NOT NULL DEFAULT '',      -- '' or the train keys this candidate sets, e.g. {"lr":0.0012}
  UNIQUE (sweep_id, heads, train)
);
INSERT INTO schedules_new (id, sweep_id, heads, is_baseline, ord) SELECT id, sweep_id, heads, is_baseline, ord FROM schedules;
DROP TABLE schedules;
ALTER TABLE schedules_new RENAME TO schedules;
CREATE TRIGGER schedules_count_ins AFTER INSERT ON schedules BEGIN
  UPDATE sweeps SET schedules = schedules + 1 WHERE id = new.sweep_id;
END;
CREATE TRIGGER schedules_count_del AFTER DELETE ON schedules BEGIN
  UPDATE sweeps SET schedules = schedules - 1 WHERE id = old.sweep_id;
END;
CREATE TRIGGER jobs_lease_ord_ins AFTER INSERT ON jobs BEGIN
  UPDATE jobs SET lease_ord = (SELECT (1 - sc.is_baseline) * 4294967296 + sc.ord FROM schedules sc WHERE sc.id = new.schedule_id)
    WHERE id = new.id;
END;

ALTER TABLE search_batches ADD COLUMN best_untrained_train TEXT;
