/* sweeps.c — the store's sweeps: one transaction creates a sweep, its schedules and its jobs; counts and lists.
 *
 * Design: every insert is "INSERT ... ON CONFLICT DO NOTHING" against a UNIQUE constraint (sweeps.name,
 * schedules(sweep_id, heads), jobs(schedule_id, seed)), and sqlite3_changes() tells what was really created,
 * so creating a spec twice is a no-op by construction, and a spec that adds seeds or schedules to a sweep adds
 * only those. Jobs are inserted seed-major (every schedule's first seed, baseline first, then every second
 * seed ...), so within a priority job ids follow the lease order. All of it runs in one transaction (or a savepoint inside the caller's), so a crash or an error
 * leaves either the whole sweep or nothing. Prepared statements only; each is finalized before returning.
 */
#include "sweeps.h"
#include "schedule.h"
#include "plan.h"
#include "queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int prep(store *st, sqlite3_stmt **s, const char *sql) {
    if (sqlite3_prepare_v2(st->db, sql, -1, s, NULL) != SQLITE_OK) return store_fail(st, "prepare");
    return STORE_OK;
}

/* Same model/train/eval/data/trainer as the stored spec? The trainer (its name and args) is part of what a job is:
 * "torch" and {"name": "torch"} are the same, any other difference is not. */
static json_t *trainer_norm(json_t *t) {
    if (json_is_object(t)) {
        json_t *args = json_object_get(t, "args");
        if (!args || json_object_size(args) == 0) return json_incref(json_object_get(t, "name"));
    }
    return json_incref(t);
}

static int same_job_sections(const char *stored, const sweep_spec *sp, char *which, size_t len) {
    static const char *const keys[] = { "model", "train", "eval", "data", "trainer" };
    json_t *old = json_loads(stored, 0, NULL);
    int same = 1;
    which[0] = 0;
    for (int i = 0; i < 5; i++) {
        json_t *a = old ? json_object_get(old, keys[i]) : NULL, *b = json_object_get(sp->root, keys[i]);
        a = i == 4 ? trainer_norm(a) : json_incref(a);
        b = i == 4 ? trainer_norm(b) : json_incref(b);
        if (!(a == NULL && b == NULL) && !(a && b && json_equal(a, b))) {
            if (!same) strncat(which, ", ", len - strlen(which) - 1);
            strncat(which, keys[i], len - strlen(which) - 1);
            same = 0;
        }
        json_decref(a);
        json_decref(b);
    }
    json_decref(old);
    return same;
}

static int64_t count_rows(store *st, const char *sql, int64_t id, int *rc) {
    sqlite3_stmt *s = NULL;
    int64_t n = -1;
    if ((*rc = prep(st, &s, sql)) < 0) return -1;
    sqlite3_bind_int64(s, 1, id);
    if (sqlite3_step(s) == SQLITE_ROW) n = sqlite3_column_int64(s, 0);
    else *rc = store_fail(st, "count");
    sqlite3_finalize(s);
    return n;
}

int sweeps_add_rows(store *st, int64_t sweep_id, const sweep_spec *sp, int64_t *ids, int64_t *schedules_created,
                    int64_t *jobs_created) {
    sqlite3_stmt *ins_sched = NULL, *get_sched = NULL, *ins_job = NULL, *max_ord = NULL;
    char *canon = NULL;
    int64_t *sched_ids = NULL;
    int rc, L = sp->n_layer;
    double now = store_now();
    if ((rc = prep(st, &ins_sched, "INSERT INTO schedules (sweep_id, heads, is_baseline, ord, train) VALUES (?1, ?2, ?3, "
                                   "?4, ?5) ON CONFLICT (sweep_id, heads, train) DO NOTHING")) < 0 ||
        (rc = prep(st, &get_sched, "SELECT id FROM schedules WHERE sweep_id = ?1 AND heads = ?2 AND train = ?3")) < 0 ||
        (rc = prep(st, &max_ord, "SELECT coalesce(max(ord), -1) FROM schedules WHERE sweep_id = ?1")) < 0)
        goto out;
    sqlite3_bind_int64(max_ord, 1, sweep_id);
    if (sqlite3_step(max_ord) != SQLITE_ROW) { rc = store_fail(st, "max ord"); goto out; }
    int next_ord = sqlite3_column_int(max_ord, 0) + 1;   /* a new sweep's schedules take ord 0, 1, ...: the spec's order */
    size_t cap = (size_t)L * 12 + 16;
    canon = malloc(cap);
    sched_ids = ids ? ids : malloc(sizeof(int64_t) * (sp->n_schedules ? sp->n_schedules : 1));
    if (!canon || !sched_ids) { snprintf(st->err, sizeof st->err, "out of memory"); rc = STORE_EIO; goto out; }
    for (int i = 0; i < sp->n_schedules; i++) {
        schedule_format(sp->heads + (size_t)i * L, L, canon, cap);
        char *tt = spec_train_text(sp, i);   /* this schedule's train values: both statements bind it */
        if (!tt) { snprintf(st->err, sizeof st->err, "out of memory"); rc = STORE_EIO; goto out; }
        sqlite3_reset(ins_sched);
        sqlite3_bind_text(ins_sched, 5, tt, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(ins_sched, 1, sweep_id);
        sqlite3_bind_text(ins_sched, 2, canon, -1, SQLITE_STATIC);
        sqlite3_bind_int(ins_sched, 3, spec_is_baseline(sp, i));
        sqlite3_bind_int(ins_sched, 4, next_ord);
        if (sqlite3_step(ins_sched) != SQLITE_DONE) { free(tt); rc = store_fail(st, "insert schedule"); goto out; }
        if (sqlite3_changes(st->db) > 0) { (*schedules_created)++; next_ord++; }
        sqlite3_reset(get_sched);
        sqlite3_bind_int64(get_sched, 1, sweep_id);
        sqlite3_bind_text(get_sched, 2, canon, -1, SQLITE_STATIC);
        sqlite3_bind_text(get_sched, 3, tt, -1, SQLITE_TRANSIENT);
        free(tt);
        if (sqlite3_step(get_sched) != SQLITE_ROW) { rc = store_fail(st, "find schedule"); goto out; }
        sched_ids[i] = sqlite3_column_int64(get_sched, 0);
    }
    /* jobs seed-major (every schedule's first seed, then the second ...): job ids follow the lease order */
    for (int j = 0; j < sp->n_seeds; j++)
        for (int i = 0; i < sp->n_schedules; i++) {
            json_t *job = spec_job_json(sp, i, j);
            char *text = job ? json_dumps(job, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) : NULL;
            json_decref(job);
            if (!text) { snprintf(st->err, sizeof st->err, "out of memory"); rc = STORE_EIO; goto out; }
            /* the job model's numbers (spec.c); the rung is halving's, set when it starts (halving.c) */
            queue_new_job nj = {.sweep = sweep_id, .schedule = sched_ids[i], .seed = sp->seeds[j], .seed_index = j,
                                .priority = sp->priority, .job = text, .steps = sp->steps,
                                .tokens_per_step = sp->tokens_per_step, .rung = -1, .now = now};
            int added = 0;
            rc = queue_job_add(st, &ins_job, &nj, &added);
            free(text);
            if (rc < 0) goto out;
            *jobs_created += added;
        }
    rc = STORE_OK;
out:
    sqlite3_finalize(ins_sched);
    sqlite3_finalize(get_sched);
    sqlite3_finalize(max_ord);
    sqlite3_finalize(ins_job);
    free(canon);
    if (sched_ids != ids) free(sched_ids);
    return rc;
}

static int create_rows(store *st, const sweep_spec *sp, const char *spec_text, sweeps_created *out) {
    sqlite3_stmt *ins_sweep = NULL, *get_sweep = NULL;
    char *dumped = NULL;
    int rc;
    double now = store_now();
    if (!spec_text) {
        dumped = json_dumps(sp->root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (!dumped) { snprintf(st->err, sizeof st->err, "out of memory"); return STORE_EIO; }
        spec_text = dumped;
    }
    if ((rc = prep(st, &ins_sweep, "INSERT INTO sweeps (name, spec, priority, created_at) VALUES (?1, ?2, ?3, ?4) "
                                   "ON CONFLICT (name) DO NOTHING")) < 0 ||
        (rc = prep(st, &get_sweep, "SELECT id, spec FROM sweeps WHERE name = ?1")) < 0)
        goto out;
    sqlite3_bind_text(ins_sweep, 1, sp->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins_sweep, 2, spec_text, -1, SQLITE_STATIC);
    sqlite3_bind_int(ins_sweep, 3, sp->priority);
    sqlite3_bind_double(ins_sweep, 4, now);
    if (sqlite3_step(ins_sweep) != SQLITE_DONE) { rc = store_fail(st, "insert sweep"); goto out; }
    out->sweep_is_new = sqlite3_changes(st->db) > 0;
    sqlite3_bind_text(get_sweep, 1, sp->name, -1, SQLITE_STATIC);
    if (sqlite3_step(get_sweep) != SQLITE_ROW) { rc = store_fail(st, "find sweep"); goto out; }
    out->sweep_id = sqlite3_column_int64(get_sweep, 0);
    if (!out->sweep_is_new) {
        char which[64];
        if (!same_job_sections((const char *)sqlite3_column_text(get_sweep, 1), sp, which, sizeof which)) {
            snprintf(st->err, sizeof st->err, "sweep \"%s\" (id %lld) already exists with a different %s: its jobs "
                     "would not be comparable; give this spec another \"name\"", sp->name,
                     (long long)out->sweep_id, which);
            rc = STORE_ECONFLICT;
            goto out;
        }
    }
    if ((rc = sweeps_add_rows(st, out->sweep_id, sp, NULL, &out->schedules_created, &out->jobs_created)) < 0) goto out;
    if (!out->sweep_is_new && out->jobs_created > 0) {
        /* a sweep whose own decisions add its jobs may not be grown from outside: racing's rounds pick their seeds
         * (above the spec's) and schedules (the survivors), so an added job would collide with a round's seed or sit
         * in no round; a surrogate search's batches choose the schedules */
        const char *strat = json_string_value(json_object_get(json_object_get(sp->root, "search"), "strategy"));
        int racing = json_object_get(sp->root, "racing") != NULL, search = strat && strcmp(strat, "surrogate") == 0;
        if (racing)
            snprintf(st->err, sizeof st->err, "sweep \"%s\" (id %lld) races (spec key \"racing\"): its rounds add seeds "
                     "to the surviving schedules themselves, so re-creating it may not add jobs (this spec adds %lld: new "
                     "seeds or schedules); give this spec another \"name\" for a new sweep, or raise racing.max_seeds there",
                     sp->name, (long long)out->sweep_id, (long long)out->jobs_created);
        else if (search)
            snprintf(st->err, sizeof st->err, "sweep \"%s\" (id %lld) is a surrogate search (spec key \"search\"): its "
                     "batches choose the schedules, so re-creating it may not add jobs (this spec adds %lld: another "
                     "initial design or new seeds); give this spec another \"name\" for a new search",
                     sp->name, (long long)out->sweep_id, (long long)out->jobs_created);
        if (racing || search) { rc = STORE_ECONFLICT; goto out; }
    }
    if ((rc = halving_init_jobs(st, out->sweep_id, st->err, sizeof st->err)) < 0) goto out;   /* rung 0 with "halving" */
    out->schedules_total = count_rows(st, "SELECT count(*) FROM schedules WHERE sweep_id = ?1", out->sweep_id, &rc);
    if (rc < 0) goto out;
    out->jobs_total = count_rows(st, "SELECT count(*) FROM jobs WHERE sweep_id = ?1", out->sweep_id, &rc);
    if (rc < 0) goto out;
    rc = STORE_OK;
out:
    sqlite3_finalize(ins_sweep);
    sqlite3_finalize(get_sweep);
    free(dumped);
    return rc;
}

int sweeps_create(store *st, const sweep_spec *sp, const char *spec_text, sweeps_created *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", sp->name);
    out->n_seeds = sp->n_seeds;
    int own = sqlite3_get_autocommit(st->db), rc;
    if (own) rc = store_begin(st);
    else rc = store_exec(st, "SAVEPOINT sweeps_create");
    if (rc < 0) return rc;
    rc = create_rows(st, sp, spec_text, out);
    if (rc < 0) {
        char why[sizeof st->err];
        snprintf(why, sizeof why, "%s", st->err);
        if (own) store_rollback(st);
        else {
            sqlite3_exec(st->db, "ROLLBACK TO sweeps_create", NULL, NULL, NULL);
            sqlite3_exec(st->db, "RELEASE sweeps_create", NULL, NULL, NULL);
        }
        snprintf(st->err, sizeof st->err, "%s", why);
        int64_t keep = rc == STORE_ECONFLICT ? out->sweep_id : 0;
        memset(out, 0, sizeof *out);
        out->sweep_id = keep;
        return rc;
    }
    rc = own ? store_commit(st) : store_exec(st, "RELEASE sweeps_create");
    if (rc < 0) {
        if (own) store_rollback(st);
        memset(out, 0, sizeof *out);
    }
    return rc;
}

int sweeps_create_json(store *st, const char *text, size_t len, sweeps_created *out, char *err, size_t errlen) {
    int too_big = 0;
    return sweeps_create_json_max(st, text, len, SPEC_MAX_JOBS, &too_big, out, err, errlen);
}

int sweeps_create_json_max(store *st, const char *text, size_t len, long long max_jobs, int *too_big,
                           sweeps_created *out, char *err, size_t errlen) {
    sweep_spec sp;
    memset(out, 0, sizeof *out);
    *too_big = 0;
    int rc = spec_parse_max(text, len, max_jobs, &sp, err, errlen);
    if (rc == SPEC_ETOOBIG) *too_big = 1;
    if (rc < 0) return rc == SPEC_ENOMEM ? STORE_EIO : STORE_EINVAL;
    char *copy = malloc(len + 1);
    if (!copy) { spec_release(&sp); snprintf(err, errlen, "out of memory"); return STORE_EIO; }
    memcpy(copy, text, len);
    copy[len] = 0;
    rc = sweeps_create(st, &sp, copy, out);
    if (rc < 0) snprintf(err, errlen, "%s", st->err);
    free(copy);
    spec_release(&sp);
    return rc;
}

int sweeps_find(store *st, const char *id_or_name, int64_t *id) {
    sqlite3_stmt *s = NULL;
    int rc;
    char *end = NULL;
    long long n = strtoll(id_or_name, &end, 10);
    int numeric = *id_or_name && !*end && n > 0;
    if ((rc = prep(st, &s, "SELECT id FROM sweeps WHERE id = ?1 OR name = ?2 ORDER BY id LIMIT 2")) < 0)
        return rc;
    sqlite3_bind_int64(s, 1, numeric ? n : -1);
    sqlite3_bind_text(s, 2, id_or_name, -1, SQLITE_STATIC);
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
        *id = sqlite3_column_int64(s, 0);
        rc = STORE_OK;
        if ((step = sqlite3_step(s)) == SQLITE_ROW) {   /* one sweep's id, another's name (made before names were checked) */
            long long a = *id, b = sqlite3_column_int64(s, 0), by_name = a == n ? b : a;
            snprintf(st->err, sizeof st->err, "\"%s\" is the id of sweep %lld and the name of sweep %lld: give %lld for "
                     "sweep %lld, or sweep %lld's name for sweep %lld", id_or_name, n, by_name, by_name, by_name, n, n);
            rc = STORE_EINVAL;
        }
        step = SQLITE_ROW;
    } else if (step == SQLITE_DONE) {
        snprintf(st->err, sizeof st->err, "no sweep with id or name \"%s\"", id_or_name);
        rc = STORE_ENOTFOUND;
    } else rc = store_fail(st, "find sweep");
    sqlite3_finalize(s);
    return rc;
}

int sweeps_count_states(store *st, int64_t sweep_id, sweeps_counts *c) {
    sqlite3_stmt *s = NULL;
    int rc, step;
    memset(c, 0, sizeof *c);
    /* the per-sweep counters (sql/010_sweep_counts.sql), not a count of every job */
    if ((rc = prep(st, &s, "SELECT state, sum(n) FROM sweep_counts WHERE ?1 = 0 OR sweep_id = ?1 GROUP BY state")) < 0)
        return rc;
    sqlite3_bind_int64(s, 1, sweep_id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *state = (const char *)sqlite3_column_text(s, 0);
        int64_t n = sqlite3_column_int64(s, 1);
        job_state js;
        if (jobstate_parse(state, &js) == 0) c->n[js] = n;
        c->total += n;
    }
    rc = step == SQLITE_DONE ? STORE_OK : store_fail(st, "count jobs");
    sqlite3_finalize(s);
    return rc;
}

/* One row per sweep: counts per state, steps done and in total, jobs done since ?2. Steps are the jobs.steps
 * column (the job model's train.steps, filled at create); a job counts at most its own steps, a pruned one ends at
 * its rung, a cancelled one counts nothing. The counts and the steps of every job not leased are the sweep's
 * counters (sql/010_sweep_counts.sql, a row per state); the leased jobs' steps (they move with every heartbeat) and
 * the jobs done since ?2 are read through the jobs_sweep index: as many rows as run now or finished lately. */
static const char SUMMARY_SQL[] =
    "SELECT s.id, s.name, s.state, s.priority, s.created_at, s.schedules, "
    " coalesce(sum(c.n) FILTER (WHERE c.state = 'queued'), 0), coalesce(sum(c.n) FILTER (WHERE c.state = 'leased'), 0), "
    " coalesce(sum(c.n) FILTER (WHERE c.state = 'done'), 0), coalesce(sum(c.n) FILTER (WHERE c.state = 'failed'), 0), "
    " coalesce(sum(c.n) FILTER (WHERE c.state = 'cancelled'), 0), coalesce(sum(c.n) FILTER (WHERE c.state = 'paused'), 0), "
    " coalesce(sum(c.n) FILTER (WHERE c.state = 'pruned'), 0), coalesce(sum(c.n), 0), "
    " coalesce(sum(c.steps_done), 0) + (SELECT CAST(total(min(j.step, coalesce(nullif(j.steps, 0), j.step))) AS INTEGER) "
    "   FROM jobs j WHERE j.sweep_id = s.id AND j.state = 'leased'), "
    " coalesce(sum(c.steps_total), 0) + (SELECT CAST(total(j.steps) AS INTEGER) FROM jobs j WHERE j.sweep_id = s.id AND "
    "   j.state = 'leased'), "
    " (SELECT count(*) FROM jobs j WHERE j.sweep_id = s.id AND j.state = 'done' AND j.finished_at > ?2) "
    "FROM sweeps s LEFT JOIN sweep_counts c ON c.sweep_id = s.id WHERE (?1 = 0 OR s.id = ?1) GROUP BY s.id ORDER BY s.id";

int sweeps_counts_verify(store *st, char *err, size_t errlen) {
    /* every (sweep, state) whose counter row differs from the jobs themselves, either way; a sweep whose results
     * counter differs from its results (sql/014_job_changes.sql: the count exact, the seconds within rounding); a
     * change cursor (rev) two jobs of a sweep share */
    static const char sql[] =
        "WITH j AS (SELECT sweep_id, state, count(*) AS n, "
        "   CAST(total(CASE state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'pruned' THEN step ELSE steps END) AS INTEGER) AS t, "
        "   CAST(total(CASE state WHEN 'leased' THEN 0 WHEN 'cancelled' THEN 0 WHEN 'done' THEN steps "
        "     ELSE min(step, coalesce(nullif(steps, 0), step)) END) AS INTEGER) AS d, "
        "   coalesce(sum(CASE state WHEN 'leased' THEN 0 ELSE min(step, coalesce(nullif(steps, 0), step)) * tokens_per_step END), 0) "
        "     AS k FROM jobs GROUP BY sweep_id, state), "
        " c AS (SELECT sweep_id, state, n, steps_total AS t, steps_done AS d, tokens AS k FROM sweep_counts WHERE n != 0 "
        "   OR steps_total != 0 OR steps_done != 0 OR tokens != 0), "
        " r AS (SELECT j.sweep_id, count(r.wall_s) AS timed, total(r.wall_s) AS wall_s, total(r.setup_s) AS setup_s "
        "   FROM results r JOIN jobs j ON j.id = r.job_id "
        "   GROUP BY j.sweep_id) "
        "SELECT 'jobs', * FROM (SELECT * FROM j EXCEPT SELECT * FROM c) UNION ALL "
        "SELECT 'counters', * FROM (SELECT * FROM c EXCEPT SELECT * FROM j) UNION ALL "
        "SELECT 'schedules', id, '', schedules, (SELECT count(*) FROM schedules WHERE sweep_id = sweeps.id), 0, 0 FROM sweeps "
        "WHERE schedules != (SELECT count(*) FROM schedules WHERE sweep_id = sweeps.id) UNION ALL "
        "SELECT 'results', s.id, '', coalesce(sr.timed, 0), coalesce(r.timed, 0), CAST(coalesce(sr.wall_s, 0) AS INTEGER), "
        "   CAST(coalesce(r.wall_s, 0) AS INTEGER) FROM sweeps s LEFT JOIN sweep_results sr ON sr.sweep_id = s.id "
        "   LEFT JOIN r ON r.sweep_id = s.id WHERE coalesce(sr.timed, 0) != coalesce(r.timed, 0) "
        "   OR abs(coalesce(sr.wall_s, 0) - coalesce(r.wall_s, 0)) > 1e-6 * max(1, abs(coalesce(r.wall_s, 0))) "
        "   OR abs(coalesce(sr.setup_s, 0) - coalesce(r.setup_s, 0)) > 1e-6 * max(1, abs(coalesce(r.setup_s, 0))) UNION ALL "
        "SELECT 'rev', sweep_id, min(id), rev, count(*), 0, 0 FROM jobs GROUP BY sweep_id, rev HAVING count(*) > 1 OR rev < 1 "
        "LIMIT 1";
    sqlite3_stmt *s = NULL;
    int rc = prep(st, &s, sql);
    if (rc < 0) { snprintf(err, errlen, "%s", st->err); return rc; }
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
        snprintf(err, errlen, "sweep %lld state/job %s: %s says %lld %lld %lld %lld (n, steps_total, steps_done, tokens; "
                 "results: counted, actual, seconds counted, actual; rev: rev, jobs), the other side differs",
                 (long long)sqlite3_column_int64(s, 1), (const char *)sqlite3_column_text(s, 2),
                 (const char *)sqlite3_column_text(s, 0), (long long)sqlite3_column_int64(s, 3),
                 (long long)sqlite3_column_int64(s, 4), (long long)sqlite3_column_int64(s, 5),
                 (long long)sqlite3_column_int64(s, 6));
        rc = STORE_ECONFLICT;
    } else if (step != SQLITE_DONE) {
        rc = store_fail(st, "verify counters");
        snprintf(err, errlen, "%s", st->err);
    }
    sqlite3_finalize(s);
    return rc;
}

static void fill_info(sqlite3_stmt *s, sweeps_info *info) {
    memset(info, 0, sizeof *info);
    info->id = sqlite3_column_int64(s, 0);
    snprintf(info->name, sizeof info->name, "%s", (const char *)sqlite3_column_text(s, 1));
    snprintf(info->state, sizeof info->state, "%s", (const char *)sqlite3_column_text(s, 2));
    info->priority = sqlite3_column_int(s, 3);
    info->created_at = sqlite3_column_double(s, 4);
    info->n_schedules = sqlite3_column_int64(s, 5);
    sweeps_counts *c = &info->counts;
    for (int k = 0; k < JOB_NSTATES; k++) c->n[k] = sqlite3_column_int64(s, 6 + k);   /* in job_state's order */
    int64_t *const col[] = { &c->total, &info->steps_done, &info->steps_total, &info->jobs_done_since };
    for (int k = 0; k < (int)(sizeof col / sizeof col[0]); k++) *col[k] = sqlite3_column_int64(s, 6 + JOB_NSTATES + k);
}

int sweeps_summary(store *st, int64_t sweep_id, double done_since, sweeps_info **out, int *n) {
    sqlite3_stmt *s = NULL;
    sweeps_info *v = NULL;
    int rc, cap = 0, k = 0, step;
    *out = NULL;
    *n = 0;
    if ((rc = prep(st, &s, SUMMARY_SQL)) < 0) return rc;
    sqlite3_bind_int64(s, 1, sweep_id);
    sqlite3_bind_double(s, 2, done_since);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (k == cap) {
            cap = cap ? cap * 2 : 16;
            sweeps_info *nv = realloc(v, sizeof *v * cap);
            if (!nv) { snprintf(st->err, sizeof st->err, "out of memory"); rc = STORE_EIO; goto out; }
            v = nv;
        }
        fill_info(s, &v[k++]);
    }
    if (step != SQLITE_DONE) { rc = store_fail(st, "sweeps"); goto out; }
    *out = v;
    *n = k;
    v = NULL;
    rc = STORE_OK;
out:
    free(v);
    sqlite3_finalize(s);
    return rc;
}

int sweeps_get(store *st, int64_t sweep_id, sweeps_info *info) {
    sweeps_info *v = NULL;
    int n = 0, rc = sweeps_summary(st, sweep_id > 0 ? sweep_id : -1, store_now() - SWEEPS_DONE_WINDOW_S, &v, &n);
    if (rc == STORE_OK && n == 0) {
        snprintf(st->err, sizeof st->err, "no sweep with id %lld", (long long)sweep_id);
        rc = STORE_ENOTFOUND;
    }
    if (rc == STORE_OK) *info = v[0];
    free(v);
    return rc;
}

int sweeps_list(store *st, sweeps_info **out, int *n) {
    return sweeps_summary(st, 0, store_now() - SWEEPS_DONE_WINDOW_S, out, n);
}

json_t *sweeps_states_json(const sweeps_counts *c) {
    json_t *o = json_object();
    if (!o) return NULL;
    for (int k = 0; k < JOB_NSTATES; k++) json_object_set_new(o, jobstate_name((job_state)k), json_integer(c->n[k]));
    return o;
}

json_t *sweeps_counts_json(const sweeps_counts *c) {
    json_t *o = sweeps_states_json(c);
    if (o) json_object_set_new(o, "total", json_integer(c->total));
    return o;
}

json_t *sweeps_info_json(const sweeps_info *i) {
    return json_pack("{s:I, s:s, s:s, s:i, s:f, s:I, s:o}", "id", (json_int_t)i->id, "name", i->name, "state",
                     i->state, "priority", i->priority, "created_at", i->created_at, "schedules",
                     (json_int_t)i->n_schedules, "jobs", sweeps_counts_json(&i->counts));
}

int sweeps_each_with_key(store *st, const char *key, int (*fn)(void *ctx, long long sweep), void *ctx, char *err,
                         size_t errlen) {
    char path[72];
    snprintf(path, sizeof path, "$.%s", key);
    long long ids[256], after = 0;
    for (;;) {
        sqlite3_stmt *s = NULL;
        int n = 0, step, rc = STORE_OK;
        if (sqlite3_prepare_v2(st->db, "SELECT id FROM sweeps WHERE id > ?1 AND json_extract(spec, ?2) IS NOT NULL "
                                       "ORDER BY id LIMIT 256", -1, &s, NULL) != SQLITE_OK) {
            snprintf(err, errlen, "%s sweeps: %s", key, sqlite3_errmsg(st->db));
            return STORE_EIO;
        }
        sqlite3_bind_int64(s, 1, after);
        sqlite3_bind_text(s, 2, path, -1, SQLITE_STATIC);
        while ((step = sqlite3_step(s)) == SQLITE_ROW) ids[n++] = sqlite3_column_int64(s, 0);
        if (step != SQLITE_DONE) snprintf(err, errlen, "%s sweeps: %s", key, sqlite3_errmsg(st->db));
        sqlite3_finalize(s);
        if (step != SQLITE_DONE) return STORE_EIO;
        for (int i = 0; i < n; i++)
            if ((rc = fn(ctx, ids[i])) < 0) return rc;
        if (n < 256) return STORE_OK;
        after = ids[n - 1];
    }
}

struct tick_each { store *st; int (*tick)(store *, long long, int *, char *, size_t); int *decided; char *err; size_t errlen; };
static int tick_one(void *ctx, long long sweep) {
    struct tick_each *t = ctx;
    return t->tick(t->st, sweep, t->decided, t->err, t->errlen);
}

int sweeps_tick_each(store *st, const char *key, int (*tick)(store *, long long, int *, char *, size_t), int *decided,
                     char *err, size_t errlen) {
    struct tick_each t = { st, tick, decided, err, errlen };
    return sweeps_each_with_key(st, key, tick_one, &t, err, errlen);
}
