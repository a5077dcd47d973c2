/* halving.c — successive halving: the worker's rung report and the promotion transaction (the spec key: plan.c).
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
#include "ranking_build.h"
#include "sweeps.h"

static int db_fail(store *st, char *err, size_t errlen, const char *what) {
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(st->db));
    return STORE_EIO;
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

/* 1 when rung r has nothing to decide or apply now, by its counters (migration 12) and whether any schedule was
 * decided there: no paused job (nothing to promote or prune) while jobs are still to report or the rung was decided,
 * or, in sync mode, jobs still to report and no decision yet (sync decides only a complete rung). One indexed read,
 * whatever the rung's size; the full pass (rung_scheds, the ranking) runs only when this says 0. A rung that never
 * held a job is skipped too. */
static int rung_idle(store *st, long long sweep, int r, const halving_cfg *cfg, int *idle, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    *idle = 0;
    if (sqlite3_prepare_v2(st->db, "SELECT c.pending, c.paused, EXISTS (SELECT 1 FROM halving_decisions d WHERE d.sweep_id = ?1 "
                                   "AND d.rung = ?2) FROM halving_rung_counts c WHERE c.sweep_id = ?1 AND c.rung = ?2", -1, &s,
                           NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "rung counts");
    sqlite3_bind_int64(s, 1, sweep);
    sqlite3_bind_int(s, 2, r);
    int step = sqlite3_step(s), rc = STORE_OK;
    if (step == SQLITE_ROW) {
        long long pending = sqlite3_column_int64(s, 0), paused = sqlite3_column_int64(s, 1);
        int any = sqlite3_column_int(s, 2);
        *idle = (paused == 0 && (pending > 0 || any)) || (!cfg->async && pending > 0 && !any);
    } else if (step == SQLITE_DONE) *idle = 1;
    else rc = db_fail(st, err, errlen, "rung counts");
    sqlite3_finalize(s);
    return rc;
}

static int tick_rung(queue *q, long long sweep, int r, const halving_cfg *cfg, int *decided, char *err, size_t errlen) {
    sched_at *v = NULL;
    int idle, n = 0, rc = rung_idle(q->st, sweep, r, cfg, &idle, err, errlen);
    if (rc < 0 || idle) return rc;
    rc = rung_scheds(q->st, sweep, r, &v, &n, err, errlen);
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
    sweep_plan plan;
    int rc = plan_load(q->st, sweep_id, &plan, err, errlen);
    halving_cfg cfg = plan.halving;
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
    sweep_plan plan;
    int rc = plan_load(st, sweep_id, &plan, err, errlen);
    halving_cfg cfg = plan.halving;
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
