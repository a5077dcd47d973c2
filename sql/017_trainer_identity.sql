-- prism-sweep store, migration 17: who trained a result, and the device time before its first step (issue #40).
--
-- results.setup_s: an external trainer's start-up (imports, data loading, torch.compile) before its first step,
-- seconds: result.setup_s as the trainer reported it, or as its worker measured it (spawn to the first train
-- line). It is device time no wall_s holds, so the sweep's `cost`.device_hours is (wall_s + setup_s) / 3600.
-- results.trainer_command, results.trainer_version: the worker's --trainer NAME=COMMAND (the COMMAND as given) and
-- the version string the trainer declared in its start line, both NULL for the built-in engine; the leaderboard
-- says when a sweep's results come from more than one (command, version).
-- All three are copies of the result JSON's keys (result.setup_s, result.trainer_command, result.trainer_version),
-- filled here for the results stored before this migration.
--
-- sweep_results.setup_s: their sum per sweep, kept by migration 14's triggers, created again with it.

ALTER TABLE results ADD COLUMN setup_s REAL;
ALTER TABLE results ADD COLUMN trainer_command TEXT;
ALTER TABLE results ADD COLUMN trainer_version TEXT;
UPDATE results SET setup_s = CASE WHEN json_type(result, '$.setup_s') IN ('integer', 'real')
                                  THEN json_extract(result, '$.setup_s') END,
                   trainer_command = CASE WHEN json_type(result, '$.trainer_command') = 'text'
                                          THEN json_extract(result, '$.trainer_command') END,
                   trainer_version = CASE WHEN json_type(result, '$.trainer_version') = 'text'
                                          THEN json_extract(result, '$.trainer_version') END
  WHERE json_valid(result);

ALTER TABLE sweep_results ADD COLUMN setup_s REAL NOT NULL DEFAULT 0;   -- the sum of its results' setup_s, seconds
UPDATE sweep_results SET setup_s = coalesce((SELECT total(r.setup_s) FROM results r JOIN jobs j ON j.id = r.job_id
                                              WHERE j.sweep_id = sweep_results.sweep_id), 0);

DROP TRIGGER results_cost_ins;
DROP TRIGGER results_cost_del;
DROP TRIGGER results_cost_upd;

CREATE TRIGGER results_cost_ins AFTER INSERT ON results BEGIN
  INSERT INTO sweep_results (sweep_id, timed, wall_s, setup_s)
    SELECT sweep_id, new.wall_s IS NOT NULL, coalesce(new.wall_s, 0), coalesce(new.setup_s, 0) FROM jobs WHERE id = new.job_id
    ON CONFLICT (sweep_id) DO UPDATE SET timed = timed + excluded.timed, wall_s = wall_s + excluded.wall_s,
                                         setup_s = setup_s + excluded.setup_s;
END;

CREATE TRIGGER results_cost_del AFTER DELETE ON results BEGIN
  UPDATE sweep_results SET timed = timed - (old.wall_s IS NOT NULL), wall_s = wall_s - coalesce(old.wall_s, 0),
                           setup_s = setup_s - coalesce(old.setup_s, 0)
    WHERE sweep_id = (SELECT sweep_id FROM jobs WHERE id = old.job_id);
END;

CREATE TRIGGER results_cost_upd AFTER UPDATE OF job_id, wall_s, setup_s ON results
  WHEN new.job_id IS NOT old.job_id OR new.wall_s IS NOT old.wall_s OR new.setup_s IS NOT old.setup_s BEGIN
  UPDATE sweep_results SET timed = timed - (old.wall_s IS NOT NULL), wall_s = wall_s - coalesce(old.wall_s, 0),
                           setup_s = setup_s - coalesce(old.setup_s, 0)
    WHERE sweep_id = (SELECT sweep_id FROM jobs WHERE id = old.job_id);
  INSERT INTO sweep_results (sweep_id, timed, wall_s, setup_s)
    SELECT sweep_id, new.wall_s IS NOT NULL, coalesce(new.wall_s, 0), coalesce(new.setup_s, 0) FROM jobs WHERE id = new.job_id
    ON CONFLICT (sweep_id) DO UPDATE SET timed = timed + excluded.timed, wall_s = wall_s + excluded.wall_s,
                                         setup_s = setup_s + excluded.setup_s;
END;
