/* halving.c — successive halving: the spec key, the worker's rung report and the promotion transaction.
 *
 * Design: the state of a halving sweep is the jobs table (jobs.rung, jobs.stop_at_step, the states 'paused'
 * and 'pruned'), rung_results (every val loss reported at a rung, kept for ever) and halving_decisions (one
 * row per sweep × rung × schedule). halving_tick() derives everything from those rows: it decides what is due
 * and not yet decided, inserts the decisions, then moves every paused job that has a decision — so a decision
 * happens once (its row exists) and a job paused after its schedule was decided (an admin requeue, a late
 * report) simply follows it. The ranking is the leaderboard's (ranking_build at the rung), not a copy of it.
 * This file reads and decides; every write — the rung-0 setup, the rung report's result and pause, a decision
 * row, a promotion or a pruning — is a statement of queue.c's table (queue_rung_*), beside the lease and the
 * other transitions, with the one lease check and its conflict messages. The reads are prepared per call: a
 * rung report is rare next to metrics and heartbeats.
 */
#include "halving.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobstate.h"
#include "queue.h"
#include "ranking.h"
#include "sweeps.h"

static int db_fail(store *st, char *err, size_t errlen, const char *what) {
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(st->db));
    return STORE_EIO;
}

int halving_parse(const json_t *v, long long steps, halving_cfg *cfg, char *err, size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    if (!v) return 0;
    if (!json_is_object(v)) {
        snprintf(err, errlen, "halving: must be an object {\"eta\": 3, \"rungs\": [0.111, 0.333], \"mode\": \"sync\"}");
        return -1;
    }
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x)
        if (strcmp(k, "eta") && strcmp(k, "rungs") && strcmp(k, "mode")) {
            snprintf(err, errlen, "halving.%.100s: unknown key (expected one of: eta, rungs, mode)", k);
            return -1;
        }
    json_t *eta = json_object_get(v, "eta"), *rungs = json_object_get(v, "rungs"), *mode = json_object_get(v, "mode");
    if (!json_is_integer(eta) || json_integer_value(eta) < 2 || json_integer_value(eta) > 1000) {
        snprintf(err, errlen, "halving.eta: required, an integer >= 2 (each rung keeps the best 1/eta), e.g. 3");
        return -1;
    }
    cfg->eta = (int)json_integer_value(eta);
    if (!json_is_array(rungs) || json_array_size(rungs) < 1 || json_array_size(rungs) > HALVING_MAX_RUNGS) {
        snprintf(err, errlen, "halving.rungs: required, an array of 1..%d fractions of train.steps in (0, 1), strictly "
                 "increasing, e.g. [0.111, 0.333] (the full run is the last rung)", HALVING_MAX_RUNGS);
        return -1;
    }
    if (mode && !(json_is_string(mode) && (!strcmp(json_string_value(mode), "sync") || !strcmp(json_string_value(mode), "async")))) {
        snprintf(err, errlen, "halving.mode: must be \"sync\" (decide when the whole rung reported) or \"async\" (ASHA)");
        return -1;
    }
    cfg->async = mode && !strcmp(json_string_value(mode), "async");
    cfg->nrungs = (int)json_array_size(rungs);
    for (int i = 0; i < cfg->nrungs; i++) {
        json_t *f = json_array_get(rungs, (size_t)i);
        double fr = json_is_number(f) ? json_number_value(f) : NAN;
        if (!(fr > 0 && fr < 1)) {
            snprintf(err, errlen, "halving.rungs[%d]: must be a number in (0, 1) (a fraction of train.steps)", i);
            return -1;
        }
        if (i > 0 && !(fr > cfg->frac[i - 1])) {
            snprintf(err, errlen, "halving.rungs[%d]: %g is not above halving.rungs[%d] = %g: rungs must be strictly "
                     "increasing", i, fr, i - 1, cfg->frac[i - 1]);
            return -1;
        }
        cfg->frac[i] = fr;
        long long s = (long long)floor(fr * (double)steps + 0.5);
        if (s < 1) {
            snprintf(err, errlen, "halving.rungs[%d]: %g x train.steps %lld rounds to step %lld: every rung needs at least "
                     "one step; raise the fraction or train.steps", i, fr, steps, s);
            return -1;
        }
        if (s >= steps) {
            snprintf(err, errlen, "halving.rungs[%d]: %g x train.steps %lld rounds to step %lld, the full run: lower the "
                     "fraction (the full run is always the last rung)", i, fr, steps, s);
            return -1;
        }
        if (i > 0 && s <= cfg->step[i - 1]) {
            snprintf(err, errlen, "halving.rungs[%d]: %g x train.steps %lld rounds to step %lld, the same as "
                     "halving.rungs[%d]: use fewer rungs or more train.steps", i, fr, steps, s, i - 1);
            return -1;
        }
        cfg->step[i] = s;
    }
    cfg->step[cfg->nrungs] = steps;
    cfg->enabled = 1;
    return 0;
}

int halving_check_rungs(const halving_cfg *cfg, int warmup_steps, char *warn, size_t warnlen, char *err, size_t errlen) {
    if (warn && warnlen) warn[0] = 0;
    if (!cfg->enabled) return 0;
    long long steps = cfg->step[cfg->nrungs];
    double least = fmax(HALVING_WARN_FRACTION, (double)(2 * warmup_steps + 1) / (double)steps);
    char fix[200];
    if (least < 1) snprintf(fix, sizeof fix, "move it later, e.g. halving.rungs[0] = %.3f", least);
    else snprintf(fix, sizeof fix, "train.warmup_steps (%d) leaves no room for a rung in train.steps (%lld): shorten "
                  "the warmup or train longer", warmup_steps, steps);
    for (int i = 0; i < cfg->nrungs; i++) {
        const char *where = NULL;
        if (cfg->step[i] <= warmup_steps) where = "at or before train.warmup_steps";
        else if (cfg->step[i] <= 2LL * warmup_steps && cfg->frac[i] < HALVING_WARN_FRACTION)
            where = "below 20% of the run and within twice train.warmup_steps (the learning rate has just peaked)";
        if (where) {
            snprintf(err, errlen, "halving.rungs[%d]: %g x train.steps %lld is step %lld, %s (%d): a rung there ranks "
                     "schedules by how fast they warm up, not by where they end (one such rung reversed the final "
                     "order); %s", i, cfg->frac[i], steps, cfg->step[i], where, warmup_steps, fix);
            return -1;
        }
    }
    if (warn && cfg->frac[0] < HALVING_WARN_FRACTION)
        snprintf(warn, warnlen, "halving.rungs[0]: %g of train.steps (step %lld) is below %.0f%% of the run: early val losses "
                 "rank schedules poorly (docs/STATISTICS.md has the rank correlations the halving bench measured); "
                 "consider a first rung of at least %.2f", cfg->frac[0], cfg->step[0], 100 * HALVING_WARN_FRACTION,
                 HALVING_WARN_FRACTION);
    return 0;
}

int halving_load(store *st, long long sweep_id, halving_cfg *cfg, char *err, size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    sqlite3_stmt *s = NULL;
    /* train.steps: the jobs' steps column (the job model's, filled at create; every job of a sweep has the same) */
    if (sqlite3_prepare_v2(st->db, "SELECT json_extract(spec, '$.halving'), "
                                   "(SELECT coalesce(max(steps), 0) FROM jobs WHERE sweep_id = sweeps.id) "
                                   "FROM sweeps WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "halving config");
    sqlite3_bind_int64(s, 1, sweep_id);
    int rc = sqlite3_step(s), out = STORE_OK;
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_TEXT) {
        json_t *v = json_loads((const char *)sqlite3_column_text(s, 0), 0, NULL);
        if (halving_parse(v, sqlite3_column_int64(s, 1), cfg, err, errlen) < 0) out = STORE_EINVAL;
        json_decref(v);
    } else if (rc == SQLITE_DONE) {
        snprintf(err, errlen, "no sweep %lld", sweep_id);
        out = STORE_ENOTFOUND;
    } else if (rc != SQLITE_ROW) out = db_fail(st, err, errlen, "halving config");
    sqlite3_finalize(s);
    return out;
}

int halving_init_jobs(store *st, long long sweep_id, char *err, size_t errlen) {
    halving_cfg cfg;
    int rc = halving_load(st, sweep_id, &cfg, err, errlen);
    if (rc < 0 || !cfg.enabled) return rc;
    queue q;   /* the create path has no server's queue: a short-lived one for its statement */
    queue_init(&q, st, 0, 0);
    if ((rc = queue_rung_setup(&q, sweep_id, cfg.step[0])) < 0) snprintf(err, errlen, "%s", q.err);
    queue_release(&q);
    return rc;
}

/* The queue's error (q->err) as this file's err. */
static int from_queue(const queue *q, int rc, char *err, size_t errlen) {
    snprintf(err, errlen, "%s", q->err);
    return rc;
}

/* ---- promotion ----------------------------------------------------------------------------------- */

typedef struct sched_at {
    long long id;
    int is_baseline;
    int pending, paused, other;   /* jobs at the rung: queued/leased, paused, failed/cancelled */
    int decided, promoted;        /* a decision row exists; its value */
    int pos;                      /* 0-based position in the rung's ranking among ranked schedules, -1 unranked */
    double delta;
} sched_at;

static sched_at *find_sched(sched_at *v, int n, long long id) {
    for (int i = 0; i < n; i++) if (v[i].id == id) return &v[i];
    return NULL;
}

/* Reads the rung's schedules: those with jobs at rung r, and those already decided at r. */
static int rung_scheds(store *st, long long sweep, int r, sched_at **out, int *n, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    sched_at *v = NULL;
    int nv = 0, cap = 0, rc = STORE_OK;
    /* One pass over the sweep's schedules, each joined to its jobs at the rung through the (schedule_id, seed)
     * index. (Three correlated counts per schedule let SQLite pick the jobs_lease index for state = 'paused':
     * every paused job read once per schedule, 20 s per rung report at 3,000 schedules.) */
    const char *sql =
        "SELECT sc.id, sc.is_baseline, coalesce(sum(j.state IN ('queued', 'leased')), 0), "
        " coalesce(sum(j.state = 'paused'), 0), coalesce(sum(j.state IN ('failed', 'cancelled')), 0), d.promoted "
        "FROM schedules sc LEFT JOIN jobs j ON j.schedule_id = sc.id AND j.rung = ?2 "
        "LEFT JOIN halving_decisions d ON d.sweep_id = sc.sweep_id AND d.rung = ?2 AND d.schedule_id = sc.id "
        "WHERE sc.sweep_id = ?1 GROUP BY sc.id HAVING d.schedule_id IS NOT NULL OR count(j.id) > 0 ORDER BY sc.ord, sc.id";
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) return db_fail(st, err, errlen, "rung schedules");
    sqlite3_bind_int64(s, 1, sweep);
    sqlite3_bind_int(s, 2, r);
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (nv == cap) {
            cap = cap ? cap * 2 : 64;
            sched_at *nn = realloc(v, (size_t)cap * sizeof *v);
            if (!nn) { rc = STORE_EIO; snprintf(err, errlen, "out of memory"); goto out; }
            v = nn;
        }
        sched_at *x = &v[nv++];
        memset(x, 0, sizeof *x);
        x->id = sqlite3_column_int64(s, 0);
        x->is_baseline = sqlite3_column_int(s, 1);
        x->pending = sqlite3_column_int(s, 2);
        x->paused = sqlite3_column_int(s, 3);
        x->other = sqlite3_column_int(s, 4);
        x->decided = sqlite3_column_type(s, 5) != SQLITE_NULL;
        x->promoted = sqlite3_column_int(s, 5);
        x->pos = -1;
        x->delta = NAN;
    }
    if (step != SQLITE_DONE) rc = db_fail(st, err, errlen, "rung schedules");
out:
    sqlite3_finalize(s);
    if (rc < 0) { free(v); v = NULL; nv = 0; }
    *out = v;
    *n = nv;
    return rc;
}

/* Positions of the rung's schedules in the ranking at rung r; *base_ranked: the uniform baseline has a value there. */
static int rank_at(store *st, long long sweep, int r, sched_at *v, int n, int *base_ranked, char *err, size_t errlen) {
    ranking *rk = NULL;
    int rc = ranking_build(st, sweep, r, &rk, err, errlen);
    if (rc < 0) return rc;
    int pos = 0;
    *base_ranked = 0;
    for (int i = 0; i < rk->nrows; i++) {
        const ranking_row *row = &rk->rows[i];
        if (row->is_baseline && row->seeds_done > 0) *base_ranked = 1;
        if (row->rank == 0) continue;
        sched_at *x = find_sched(v, n, row->schedule_id);
        if (!x) continue;
        x->pos = pos++;
        x->delta = x->is_baseline ? 0.0 : row->cmp.has ? row->cmp.mean : NAN;
    }
    ranking_free(rk);
    return STORE_OK;
}

static int insert_decision(queue *q, long long sweep, int r, sched_at *x, int promoted, char *err, size_t errlen) {
    int rc = queue_rung_decide(q, sweep, r, x->id, promoted, x->pos >= 0 ? x->pos + 1 : 0, x->delta);
    if (rc < 0) return from_queue(q, rc, err, errlen);
    x->decided = 1;
    x->promoted = promoted;
    return STORE_OK;
}

/* Moves every paused job of rung r whose schedule has a decision: promoted → queued at r + 1, else pruned. */
static int apply_decisions(queue *q, long long sweep, int r, const halving_cfg *cfg, int *moved, char *err, size_t errlen) {
    int promoted = 0, pruned = 0;
    *moved = 0;
    int rc = queue_rung_promote(q, sweep, r, r + 1 < cfg->nrungs ? cfg->step[r + 1] : -1, &promoted);
    if (rc < 0) return from_queue(q, rc, err, errlen);
    if (promoted > 0) store_fault_point("PRISM_FAULT_PROMOTION", "a promotion");   /* half of the promotion written, nothing committed */
    if ((rc = queue_rung_prune(q, sweep, r, &pruned)) < 0) return from_queue(q, rc, err, errlen);
    *moved = promoted + pruned;
    return STORE_OK;
}

static int tick_rung(queue *q, long long sweep, int r, const halving_cfg *cfg, int *decided, char *err, size_t errlen) {
    sched_at *v = NULL;
    int n = 0, rc = rung_scheds(q->st, sweep, r, &v, &n, err, errlen);
    if (rc < 0) return rc;
    int pending = 0, undecided = 0, ncomplete = 0;
    for (int i = 0; i < n; i++) {
        pending += v[i].pending;
        if (!v[i].decided && v[i].paused + v[i].other > 0) undecided++;
        if (v[i].pending == 0) ncomplete++;
    }
    int rung_complete = pending == 0;
    if (undecided > 0 && (rung_complete || cfg->async)) {
        int base_ranked = 0;
        if ((rc = rank_at(q->st, sweep, r, v, n, &base_ranked, err, errlen)) < 0) goto out;
        /* no baseline value at the rung: every Δ is unknown, so nothing is decided (the rung is held; the sweep's
         * status says why, halving_held) */
        if (!base_ranked) goto apply;
        int k = (n + cfg->eta - 1) / cfg->eta;
        if (cfg->async) {
            /* ASHA: a complete schedule in the top ⌊c/eta⌋ of the c complete ones is promoted at once */
            int top = ncomplete / cfg->eta;
            for (int i = 0; i < n; i++) {
                sched_at *x = &v[i];
                if (x->decided || x->pending > 0 || x->paused == 0) continue;
                int better = 0;   /* complete schedules ranked above x */
                for (int j = 0; j < n; j++)
                    if (j != i && v[j].pending == 0 && v[j].pos >= 0 && (x->pos < 0 || v[j].pos < x->pos)) better++;
                if (x->is_baseline || (x->pos >= 0 && better < top)) {
                    if ((rc = insert_decision(q, sweep, r, x, 1, err, errlen)) < 0) goto out;
                    (*decided)++;
                }
            }
            if (rung_complete)   /* the rest are pruned */
                for (int i = 0; i < n; i++)
                    if (!v[i].decided && v[i].paused + v[i].other > 0) {
                        if ((rc = insert_decision(q, sweep, r, &v[i], v[i].is_baseline && v[i].paused > 0, err, errlen)) < 0) goto out;
                        (*decided)++;
                    }
        } else {
            for (int i = 0; i < n; i++) {
                sched_at *x = &v[i];
                if (x->decided || x->paused + x->other == 0) continue;
                int promote = x->paused > 0 && (x->is_baseline || (x->pos >= 0 && x->pos < k));
                if ((rc = insert_decision(q, sweep, r, x, promote, err, errlen)) < 0) goto out;
                (*decided)++;
            }
        }
    }
apply:;
    int moved = 0;
    rc = apply_decisions(q, sweep, r, cfg, &moved, err, errlen);
out:
    free(v);
    return rc;
}

int halving_tick(queue *q, long long sweep_id, int *decided, char *err, size_t errlen) {
    halving_cfg cfg;
    int rc = halving_load(q->st, sweep_id, &cfg, err, errlen);
    if (rc < 0 || !cfg.enabled) return rc == STORE_EINVAL ? STORE_OK : rc;
    for (int r = 0; r < cfg.nrungs; r++)
        if ((rc = tick_rung(q, sweep_id, r, &cfg, decided, err, errlen)) < 0) return rc;
    return STORE_OK;
}

/* halving_tick_all's visit of one sweep */
struct tick_all { queue *q; int *decided; char *err; size_t errlen; };
static int tick_one(void *ctx, long long sweep) {
    struct tick_all *t = ctx;
    return halving_tick(t->q, sweep, t->decided, t->err, t->errlen);
}

int halving_tick_all(queue *q, int *decided, char *err, size_t errlen) {
    struct tick_all t = { q, decided, err, errlen };
    return sweeps_each_with_key(q->st, "halving", tick_one, &t, err, errlen);
}

/* ---- the worker's rung report -------------------------------------------------------------------- */

int halving_report(queue *q, long long job, const char *token, long long step, double val_loss, const char **state,
                   char *state_buf, char *err, size_t errlen) {
    *state = NULL;
    long long sweep = 0;
    int repeated = 0, decided = 0;
    int rc = queue_rung_report(q, job, token, step, val_loss, &sweep, &repeated);
    if (rc == STORE_ECONFLICT) snprintf(state_buf, 16, "%s", q->state);
    if (rc < 0) return from_queue(q, rc, err, errlen);
    if (!repeated && (rc = halving_tick(q, sweep, &decided, err, errlen)) < 0) return rc;
    job_state js;
    if ((rc = queue_job_state(q, job, &js)) < 0) return from_queue(q, rc, err, errlen);
    *state = jobstate_name(js);
    return STORE_OK;
}

int halving_held(store *st, long long sweep_id, char *why, size_t whylen, char *err, size_t errlen) {
    halving_cfg cfg;
    int rc = halving_load(st, sweep_id, &cfg, err, errlen);
    if (rc < 0 || !cfg.enabled) return rc == STORE_EINVAL ? 0 : rc;
    sqlite3_stmt *s = NULL;
    /* the baseline's jobs at rung r: pending (queued/leased), and whether any reported a value there */
    const char *sql =
        "SELECT (SELECT count(*) FROM jobs j JOIN schedules sc ON sc.id = j.schedule_id WHERE j.sweep_id = ?1 AND "
        "sc.is_baseline = 1 AND j.rung = ?2 AND j.state IN ('queued', 'leased')), "
        "(SELECT count(*) FROM rung_results rr JOIN jobs j ON j.id = rr.job_id JOIN schedules sc ON sc.id = j.schedule_id "
        "WHERE j.sweep_id = ?1 AND sc.is_baseline = 1 AND rr.rung = ?2), "
        "(SELECT count(*) FROM jobs j WHERE j.sweep_id = ?1 AND j.rung = ?2 AND j.state = 'paused' AND NOT EXISTS "
        "(SELECT 1 FROM halving_decisions d WHERE d.sweep_id = ?1 AND d.rung = ?2 AND d.schedule_id = j.schedule_id))";
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) return db_fail(st, err, errlen, "halving held");
    int held = 0;
    for (int r = 0; r < cfg.nrungs && !held; r++) {
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, sweep_id);
        sqlite3_bind_int(s, 2, r);
        if (sqlite3_step(s) != SQLITE_ROW) { rc = db_fail(st, err, errlen, "halving held"); break; }
        int pending = sqlite3_column_int(s, 0), valued = sqlite3_column_int(s, 1), waiting = sqlite3_column_int(s, 2);
        if (pending == 0 && valued == 0 && waiting > 0) {
            held = 1;
            snprintf(why, whylen, "halving rung %d (step %lld) is held: the uniform baseline has no val loss there (its "
                     "jobs failed or were cancelled), so no schedule can be compared and none is promoted or pruned; "
                     "requeue the baseline's jobs to continue (%d paused jobs wait)", r, cfg.step[r], waiting);
        }
    }
    sqlite3_finalize(s);
    return rc < 0 ? rc : held;
}

int halving_steps(store *st, long long sweep_id, long long *trained, long long *full, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    *trained = *full = 0;
    if (sqlite3_prepare_v2(st->db, "SELECT coalesce(sum(CASE WHEN state = 'done' THEN steps ELSE max(step, coalesce("
                                   "(SELECT max(rr.step) FROM rung_results rr WHERE rr.job_id = jobs.id), 0)) END), 0), "
                                   "coalesce(sum(steps), 0) FROM jobs WHERE sweep_id = ?1", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "steps trained");
    sqlite3_bind_int64(s, 1, sweep_id);
    int rc = sqlite3_step(s) == SQLITE_ROW ? STORE_OK : db_fail(st, err, errlen, "steps trained");
    if (rc == STORE_OK) { *trained = sqlite3_column_int64(s, 0); *full = sqlite3_column_int64(s, 1); }
    sqlite3_finalize(s);
    return rc;
}
