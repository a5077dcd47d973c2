/* search.c — adaptive search (search.h): the batch decision transaction and what it shows (the spec key is
 * search_spec.c).
 *
 * Design: the state of a search is the sweep's schedules and jobs plus search_batches (one row per decided batch),
 * as racing's is its rounds: search_tick() derives everything from those rows. The due check is one read (the
 * sweep's pending jobs from sweep_counts, migration 10, and its last batch row), so the hook on every completed
 * job costs the same whatever the sweep's size; only a due batch parses the stored spec and reads the results. A
 * decision writes the batch's schedules (INSERT .. ON CONFLICT DO NOTHING on schedules(sweep_id, heads, train); train holds a candidate's values of "dims"), their
 * jobs (the create path's job JSON, spec_job_json), the proposals, the predictions and last the batch row, in the
 * caller's transaction: interrupted before the commit it leaves nothing, and the row's primary key makes it once.
 * The fit is the ranking module's (ranking_screen, ranking_fit_compute) and the model the surrogate's, not copies.
 * The surrogate's fit costs O(n³) per grid point (n trained schedules): about 0.1 s at n = 150 on one core, once
 * per batch, inside the server's loop (as racing's calibration is).
 */
#include "search.h"
#include "search_spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "job.h"
#include "ranking_read.h"
#include "spec.h"
#include "surrogate.h"
#include "sweeps.h"

static int db_fail(store *st, char *err, size_t errlen, const char *what) {
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(st->db));
    return STORE_EIO;
}

static int oom(char *err, size_t errlen) {
    snprintf(err, errlen, "out of memory");
    return STORE_EIO;
}

/* ---- the decision ------------------------------------------------------------------------------- */

typedef struct ssched {
    long long id;           /* ascending */
    int is_baseline;
    int *heads;           /* (L), into the decision's heads array */
} ssched;

static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}
/* the index of id in ids[0..n) (ascending), or -1 */
static int id_index(const long long *ids, int n, long long id) {
    const long long *p = bsearch(&id, ids, (size_t)n, sizeof *ids, cmp_ll);
    return p ? (int)(p - ids) : -1;
}

static void bind_num(sqlite3_stmt *s, int i, double v) {
    if (isfinite(v)) sqlite3_bind_double(s, i, v); else sqlite3_bind_null(s, i);
}

/* The stored spec of the sweep, parsed. */
static int load_spec(store *st, long long sweep, sweep_spec *sp, search_cfg *cfg, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, "SELECT spec FROM sweeps WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "search spec");
    sqlite3_bind_int64(s, 1, sweep);
    int rc = STORE_OK;
    if (sqlite3_step(s) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(s, 0);
        char why[600];
        if (spec_parse(text, strlen(text), sp, why, sizeof why) < 0) {
            snprintf(err, errlen, "search: the sweep's stored spec no longer parses: %s", why);
            rc = STORE_EINVAL;
        } else if (search_parse(json_object_get(sp->root, "search"), json_object_get(sp->root, "train"), &sp->rules, sp->n_seeds, cfg, why, sizeof why) < 0) {
            snprintf(err, errlen, "search: %s", why);
            spec_release(sp);
            rc = STORE_EINVAL;
        }
    } else {
        snprintf(err, errlen, "no sweep %lld", sweep);
        rc = STORE_ENOTFOUND;
    }
    sqlite3_finalize(s);
    return rc;
}

/* The new schedules out[0..k) and their jobs: the create path's rows (sweeps_add_rows) over the proposals. */
static int insert_batch(store *st, long long sweep, const sweep_spec *sp, const search_cfg *cfg, const int *out,
                        const double *out_u, int k, long long *ids, int *jobs, char *err, size_t errlen) {
    sweep_spec t = *sp;   /* borrowed: nothing of t is freed but its own train_over */
    t.heads = (int *)out;
    t.n_schedules = k;
    t.train_over = NULL;
    if (cfg->naxes) {   /* each proposal's train values */
        t.train_over = json_array();
        for (int i = 0; t.train_over && i < k; i++)
            if (json_array_append_new(t.train_over, search_train_json(cfg, out_u + (size_t)i * cfg->naxes)) < 0) {
                json_decref(t.train_over);
                t.train_over = NULL;
            }
        if (!t.train_over) return oom(err, errlen);
    }
    int64_t sc = 0, jc = 0, *ids64 = malloc((size_t)(k ? k : 1) * sizeof *ids64);
    if (!ids64) { json_decref(t.train_over); return oom(err, errlen); }
    int rc = sweeps_add_rows(st, sweep, &t, ids64, &sc, &jc);
    json_decref(t.train_over);
    if (rc < 0) snprintf(err, errlen, "search batch: %s", st->err);
    for (int i = 0; i < k && rc == 0; i++) ids[i] = ids64[i];
    free(ids64);
    *jobs += (int)jc;
    return rc;
}

/* The previous batch's proposals, now trained: their realised Δ against the Δ they were proposed on. */
static int heldout(store *st, long long sweep, int batch, const long long *ids, int n, const int *tix, const double *y,
                   const double *se, double yref, int *hn, double *rmse, double *zrms, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    *hn = 0;
    *rmse = *zrms = NAN;
    if (!isfinite(yref)) return STORE_OK;
    if (sqlite3_prepare_v2(st->db, "SELECT schedule_id, pred_mean, pred_sd FROM search_proposals WHERE sweep_id = ?1 AND "
                                   "batch = ?2", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "search proposals");
    sqlite3_bind_int64(s, 1, sweep);
    sqlite3_bind_int(s, 2, batch);
    double se2 = 0, z2 = 0;
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        int i = id_index(ids, n, sqlite3_column_int64(s, 0));
        if (i < 0 || tix[i] < 0 || sqlite3_column_type(s, 1) == SQLITE_NULL) continue;
        double e = (y[tix[i]] - yref) - sqlite3_column_double(s, 1), sd = sqlite3_column_double(s, 2);
        double var = sd * sd + se[tix[i]] * se[tix[i]];
        se2 += e * e;
        z2 += var > 0 ? e * e / var : 0;
        (*hn)++;
    }
    sqlite3_finalize(s);
    if (step != SQLITE_DONE) return db_fail(st, err, errlen, "search proposals");
    if (*hn) { *rmse = sqrt(se2 / *hn); *zrms = sqrt(z2 / *hn); }
    return STORE_OK;
}

/* One batch decision's working state: the sweep's schedules, the fit's inputs, the proposals; batch_release frees it. */
typedef struct dbatch {
    int n, cap, L, P, P1, base, nobs, nscreened, nt, nx, K, np, created, have_fit;
    ssched *v;
    int *heads, *tix, *H, *excl, *prop, *best_u;
    double *uc, *U, *EU, *prop_u, *y, *se, *pm, *pv, *lm, *ls, *qm, *qv;
    double best_c[SURROGATE_MAX_AXES];   /* coordinates (dims) */
    long long *ids, *pids;
    ranking_obs *obs, *kept;
    unsigned char *scr;
    ranking_fit fit;
    surrogate_model m;
    surrogate_opts o;
    surrogate_outlook look;
} dbatch;

static void batch_release(dbatch *d) {
    if (d->have_fit) ranking_fit_release(&d->fit);
    surrogate_release(&d->m);
    free(d->v); free(d->heads); free(d->obs); free(d->kept); free(d->scr); free(d->tix); free(d->H); free(d->excl);
    free(d->y); free(d->se); free(d->prop); free(d->best_u); free(d->pm); free(d->pv); free(d->lm); free(d->ls);
    free(d->qm); free(d->qv); free(d->ids); free(d->pids); free(d->uc); free(d->U); free(d->EU); free(d->prop_u);
}

/* The sweep's schedules in id order: d->v, their heads and (with dims) their coordinates. */
static int batch_load_schedules(store *st, long long sweep, const search_cfg *cfg, dbatch *d, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    int rc = STORE_OK, step, L = d->L, P = d->P;
    if (sqlite3_prepare_v2(st->db, "SELECT id, is_baseline, heads, train FROM schedules WHERE sweep_id = ?1 ORDER BY id",
                           -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "search schedules");
    sqlite3_bind_int64(s, 1, sweep);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        int n = d->n;
        if (n == d->cap) {
            d->cap = d->cap ? d->cap * 2 : 64;
            ssched *nv = realloc(d->v, (size_t)d->cap * sizeof *d->v);
            int *nh = realloc(d->heads, (size_t)d->cap * L * sizeof *d->heads);
            double *nu = realloc(d->uc, (size_t)d->cap * d->P1 * sizeof *d->uc);
            if (nv) d->v = nv;
            if (nh) d->heads = nh;
            if (nu) d->uc = nu;
            if (!nv || !nh || !nu) { rc = oom(err, errlen); goto out; }
        }
        if (P && search_train_coords(cfg, (const char *)sqlite3_column_text(s, 3), d->uc + (size_t)n * P) != 0) {
            snprintf(err, errlen, "search: schedule %lld: its train values are not a JSON object",
                     (long long)sqlite3_column_int64(s, 0));
            rc = STORE_EIO;
            goto out;
        }
        int got = 0;
        char why[128];
        if (schedule_parse((const char *)sqlite3_column_text(s, 2), d->heads + (size_t)n * L, L, &got, why, sizeof why) != 0 ||
            got != L) {
            snprintf(err, errlen, "search: schedule %lld: its heads do not parse at L=%d", (long long)sqlite3_column_int64(s, 0), L);
            rc = STORE_EIO;
            goto out;
        }
        d->v[n].id = sqlite3_column_int64(s, 0);
        d->v[n].is_baseline = sqlite3_column_int(s, 1);
        if (d->v[n].is_baseline) d->base = n;
        d->n++;
    }
    if (step != SQLITE_DONE) { rc = db_fail(st, err, errlen, "search schedules"); goto out; }
    int n = d->n;
    for (int i = 0; i < n; i++) d->v[i].heads = d->heads + (size_t)i * L;
    d->ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *d->ids);
    if (!d->ids) { rc = oom(err, errlen); goto out; }
    for (int i = 0; i < n; i++) d->ids[i] = d->v[i].id;
out:
    sqlite3_finalize(s);
    return rc;
}

/* The leaderboard's outlier screen, then the blocked model on what it keeps (d->fit). */
static int batch_fit(store *st, long long sweep, dbatch *d, char *err, size_t errlen) {
    int rc, n = d->n, nobs;
    if ((rc = ranking_load_final(st, sweep, d->ids, n, &d->obs, &d->nobs, err, errlen)) < 0) return rc;
    nobs = d->nobs;
    d->scr = calloc((size_t)(nobs ? nobs : 1), 1);
    d->kept = malloc((size_t)(nobs ? nobs : 1) * sizeof *d->kept);
    if (!d->scr || !d->kept) return oom(err, errlen);
    int nk = 0;
    d->nscreened = nobs ? ranking_screen(d->obs, nobs, n, d->scr, NULL, NULL) : 0;
    if (d->nscreened < 0) return oom(err, errlen);
    for (int k = 0; k < nobs; k++) if (!d->scr[k]) d->kept[nk++] = d->obs[k];
    int frc = ranking_fit_compute(d->kept, nk, n, &d->fit);
    if (frc < 0) { snprintf(err, errlen, frc == -2 ? "search: too many seeds for the blocked model" : "out of memory"); return STORE_EIO; }
    d->have_fit = 1;
    return STORE_OK;
}

/* The surrogate's inputs: every schedule with a value (τ̂, √(s̃²/r)); the rest of the sweep is never proposed again. */
static int batch_inputs(dbatch *d, char *err, size_t errlen) {
    int n = d->n, n1 = n ? n : 1, L = d->L, P = d->P;
    d->tix = malloc((size_t)n1 * sizeof *d->tix);
    d->H = malloc((size_t)n1 * L * sizeof *d->H);
    d->excl = malloc((size_t)n1 * L * sizeof *d->excl);
    d->y = malloc((size_t)n1 * sizeof *d->y);
    d->se = malloc((size_t)n1 * sizeof *d->se);
    d->U = malloc((size_t)n1 * d->P1 * sizeof *d->U);
    d->EU = malloc((size_t)n1 * d->P1 * sizeof *d->EU);
    if (!d->tix || !d->H || !d->excl || !d->y || !d->se || !d->U || !d->EU) return oom(err, errlen);
    const ranking_fit *fit = &d->fit;
    for (int i = 0; i < n; i++) {
        d->tix[i] = -1;
        if (fit->r[i] > 0 && isfinite(fit->tau[i])) {
            double e = sqrt(fit->s2m[i] / fit->r[i]);
            if (!isfinite(e)) e = isfinite(fit->sd) ? fit->sd / sqrt(fit->r[i]) : 0;
            memcpy(d->H + (size_t)d->nt * L, d->v[i].heads, (size_t)L * sizeof *d->H);
            if (P) memcpy(d->U + (size_t)d->nt * P, d->uc + (size_t)i * P, (size_t)P * sizeof *d->U);
            d->y[d->nt] = fit->tau[i];
            d->se[d->nt] = e;
            d->tix[i] = d->nt++;
        } else {
            if (P) memcpy(d->EU + (size_t)d->nx * P, d->uc + (size_t)i * P, (size_t)P * sizeof *d->EU);
            memcpy(d->excl + (size_t)d->nx++ * L, d->v[i].heads, (size_t)L * sizeof *d->excl);
        }
    }
    return STORE_OK;
}

/* The surrogate fitted on the inputs and its proposals for batch b (d->prop[0..np)), with *stop the reason for none. */
static int batch_propose(const sweep_spec *sp, const search_cfg *cfg, int b, dbatch *d, const char **stop,
                         char *err, size_t errlen) {
    int nt = d->nt, L = d->L, P = d->P;
    d->o = search_opts(cfg, b);
    d->o.exclude = d->excl;
    d->o.nexclude = d->nx;
    d->o.u = P ? d->U : NULL;
    d->o.exclude_u = P ? d->EU : NULL;
    int src = surrogate_fit(&d->m, &sp->rules, d->H, d->y, d->se, nt, &d->o);
    if (src < 0) { snprintf(err, errlen, "search: the surrogate's fit failed (error %d)", src); return src == SURROGATE_ENOMEM ? oom(err, errlen) : STORE_EIO; }
    int K = cfg->budget - d->n;
    if (K > cfg->batch) K = cfg->batch;
    if (K < 0) K = 0;
    int K1 = K ? K : 1;
    d->K = K;
    d->prop = malloc((size_t)K1 * L * sizeof *d->prop);
    d->best_u = malloc((size_t)L * sizeof *d->best_u);
    d->pm = malloc((size_t)nt * sizeof *d->pm);
    d->pv = malloc((size_t)nt * sizeof *d->pv);
    d->lm = malloc((size_t)nt * sizeof *d->lm);
    d->ls = malloc((size_t)nt * sizeof *d->ls);
    d->qm = malloc((size_t)K1 * sizeof *d->qm);
    d->qv = malloc((size_t)K1 * sizeof *d->qv);
    d->pids = malloc((size_t)K1 * sizeof *d->pids);
    d->prop_u = malloc((size_t)K1 * d->P1 * sizeof *d->prop_u);
    if (!d->prop || !d->best_u || !d->pm || !d->pv || !d->lm || !d->ls || !d->qm || !d->qv || !d->pids || !d->prop_u)
        return oom(err, errlen);
    d->o.out_u = P ? d->prop_u : NULL;
    d->o.best_u = P ? d->best_c : NULL;
    d->np = surrogate_propose(&d->m, K, &d->o, K ? d->prop : NULL, &d->look, d->best_u);
    if (d->np < 0) { snprintf(err, errlen, "search: the surrogate's proposal failed (error %d)", d->np); return STORE_EIO; }
    *stop = NULL;
    if (K == 0) *stop = "budget";
    else if (d->np == 0) *stop = "space";
    else if (isfinite(cfg->stop_p) && isfinite(d->look.p_beat) && d->look.p_beat < cfg->stop_p) { *stop = "p_beat"; d->np = 0; }
    return STORE_OK;
}

/* The proposals' rows (their predicted Δ against the baseline's posterior ref). */
static int write_proposals(store *st, long long sweep, int b, const dbatch *d, double ref, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    int rc = STORE_OK;
    if (sqlite3_prepare_v2(st->db, "INSERT INTO search_proposals (sweep_id, schedule_id, batch, pos, pred_mean, pred_sd) "
                                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "search proposals");
    for (int i = 0; i < d->np; i++) {
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, sweep);
        sqlite3_bind_int64(s, 2, d->pids[i]);
        sqlite3_bind_int(s, 3, b);
        sqlite3_bind_int(s, 4, i);
        bind_num(s, 5, d->qm[i] - ref);
        bind_num(s, 6, sqrt(d->qv[i]));
        if (sqlite3_step(s) != SQLITE_DONE) { rc = db_fail(st, err, errlen, "search proposals"); break; }
    }
    sqlite3_finalize(s);
    return rc;
}

/* The trained schedules' rows: their estimate (Δ vs yref) and the posterior (Δ vs ref). */
static int write_predictions(store *st, long long sweep, int b, const dbatch *d, double ref, double yref,
                             char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    int rc = STORE_OK;
    if (sqlite3_prepare_v2(st->db, "INSERT INTO search_predictions (sweep_id, batch, schedule_id, estimate, estimate_se, mean, sd) "
                                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "search predictions");
    for (int i = 0; i < d->n; i++) {
        int t = d->tix[i];
        if (t < 0) continue;
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, sweep);
        sqlite3_bind_int(s, 2, b);
        sqlite3_bind_int64(s, 3, d->v[i].id);
        bind_num(s, 4, d->y[t] - yref);
        bind_num(s, 5, d->se[t]);
        sqlite3_bind_double(s, 6, d->pm[t] - ref);
        sqlite3_bind_double(s, 7, sqrt(fmax(0, d->pv[t])));
        if (sqlite3_step(s) != SQLITE_DONE) { rc = db_fail(st, err, errlen, "search predictions"); break; }
    }
    sqlite3_finalize(s);
    return rc;
}

/* What the batch row records beside the decision: the fit's quality and the held-out check. */
typedef struct batch_quality {
    const char *stop;
    double ref, l2, z2, hr, hz;
    int hn, best_est;
} batch_quality;

/* The batch row, last: its primary key makes the decision once. */
static int write_batch_row(store *st, long long sweep, const search_cfg *cfg, int b, const dbatch *d,
                           const batch_quality *q, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    const surrogate_outlook *look = &d->look;
    int L = d->L, nt = d->nt, rc = STORE_OK;
    double ref = q->ref, now = store_now();
    long long rec_id = -1, est_id = -1;
    for (int i = 0; i < d->n; i++) {
        if (d->tix[i] == look->best_trained) rec_id = d->v[i].id;
        if (d->tix[i] == q->best_est) est_id = d->v[i].id;
    }
    char *bu = NULL;
    if (isfinite(look->best_mean)) {
        bu = malloc((size_t)L * 12 + 16);
        if (!bu) return oom(err, errlen);
        schedule_format(d->best_u, L, bu, (size_t)L * 12 + 16);
    }
    if (sqlite3_prepare_v2(st->db, "INSERT INTO search_batches (sweep_id, batch, schedules, trained, proposed, jobs_created, "
                                   "stop_reason, recommended_id, recommended_mean, recommended_sd, best_estimate_id, "
                                   "best_untrained, best_untrained_mean, best_untrained_sd, p_beat, delta, candidates, "
                                   "exhaustive, loo_rmse, loo_z_rms, heldout_n, heldout_rmse, heldout_z_rms, screened, mu, "
                                   "sf2, ell, sg2, loglik, decided_at, best_untrained_train) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                                   "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, "
                                   "?25, ?26, ?27, ?28, ?29, ?30, ?31)", -1, &s, NULL) != SQLITE_OK) {
        free(bu);
        return db_fail(st, err, errlen, "search batch");
    }
    sqlite3_bind_int64(s, 1, sweep);
    sqlite3_bind_int(s, 2, b);
    sqlite3_bind_int(s, 3, d->n);
    sqlite3_bind_int(s, 4, nt);
    sqlite3_bind_int(s, 5, d->np);
    sqlite3_bind_int(s, 6, d->created);
    if (q->stop) sqlite3_bind_text(s, 7, q->stop, -1, SQLITE_STATIC); else sqlite3_bind_null(s, 7);
    if (rec_id > 0) sqlite3_bind_int64(s, 8, rec_id); else sqlite3_bind_null(s, 8);
    bind_num(s, 9, look->best_trained_mean - ref);
    bind_num(s, 10, look->best_trained_sd);
    if (est_id > 0) sqlite3_bind_int64(s, 11, est_id); else sqlite3_bind_null(s, 11);
    if (bu) sqlite3_bind_text(s, 12, bu, -1, free); else sqlite3_bind_null(s, 12);
    bind_num(s, 13, look->best_mean - ref);
    bind_num(s, 14, look->best_sd);
    bind_num(s, 15, look->p_beat);
    sqlite3_bind_double(s, 16, cfg->delta);
    sqlite3_bind_int(s, 17, look->ncand);
    sqlite3_bind_int(s, 18, look->exhaustive);
    bind_num(s, 19, sqrt(q->l2 / nt));
    bind_num(s, 20, sqrt(q->z2 / nt));
    sqlite3_bind_int(s, 21, q->hn);
    bind_num(s, 22, q->hr);
    bind_num(s, 23, q->hz);
    sqlite3_bind_int(s, 24, d->nscreened);
    bind_num(s, 25, d->m.mu);
    bind_num(s, 26, d->m.sf2);
    bind_num(s, 27, d->m.ell);
    bind_num(s, 28, d->m.sg2);
    bind_num(s, 29, d->m.loglik);
    sqlite3_bind_double(s, 30, now);
    char *bt = NULL;
    if (d->P && isfinite(look->best_mean)) {
        json_t *t = search_train_json(cfg, d->best_c);
        bt = t ? json_dumps(t, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(15)) : NULL;
        json_decref(t);
        if (!bt) { rc = oom(err, errlen); goto out; }
    }
    if (bt) sqlite3_bind_text(s, 31, bt, -1, free); else sqlite3_bind_null(s, 31);
    if (sqlite3_step(s) != SQLITE_DONE) rc = db_fail(st, err, errlen, "search batch");
out:
    sqlite3_finalize(s);
    return rc;
}

/* Decides batch b. *skipped = 1 (nothing written) while fewer than 2 schedules have a value. */
static int decide_batch(store *st, long long sweep, const sweep_spec *sp, const search_cfg *cfg, int b, int *skipped,
                        char *err, size_t errlen) {
    dbatch d;
    memset(&d, 0, sizeof d);
    d.L = sp->n_layer;
    d.P = cfg->naxes;
    d.P1 = d.P ? d.P : 1;
    d.base = -1;
    batch_quality q;
    memset(&q, 0, sizeof q);
    int rc, P = d.P;
    *skipped = 0;
    if ((rc = batch_load_schedules(st, sweep, cfg, &d, err, errlen)) < 0) goto out;
    if ((rc = batch_fit(st, sweep, &d, err, errlen)) < 0) goto out;
    if ((rc = batch_inputs(&d, err, errlen)) < 0) goto out;
    if (d.nt < 2) { *skipped = 1; goto out; }
    if ((rc = batch_propose(sp, cfg, b, &d, &q.stop, err, errlen)) < 0) goto out;
    /* the trained schedules' posterior, Δ vs the baseline's posterior (the baseline is always in the design) */
    if (surrogate_predict_at(&d.m, d.H, d.o.u, d.nt, d.pm, d.pv) < 0 || surrogate_loo(&d.m, d.lm, d.ls) < 0) { rc = oom(err, errlen); goto out; }
    double refv;
    if (d.base >= 0 && surrogate_predict_at(&d.m, d.v[d.base].heads, P ? d.uc + (size_t)d.base * P : NULL, 1, &q.ref, &refv) < 0) {
        rc = oom(err, errlen);
        goto out;
    }
    double yref = d.base >= 0 && d.tix[d.base] >= 0 ? d.y[d.tix[d.base]] : NAN;
    for (int t = 0; t < d.nt; t++) {
        double e = d.y[t] - d.lm[t];
        q.l2 += e * e;
        q.z2 += d.ls[t] > 0 ? e * e / (d.ls[t] * d.ls[t]) : 0;
        if (d.y[t] < d.y[q.best_est]) q.best_est = t;
    }
    if ((rc = heldout(st, sweep, b - 1, d.ids, d.n, d.tix, d.y, d.se, yref, &q.hn, &q.hr, &q.hz, err, errlen)) < 0) goto out;
    if (d.np > 0) {
        if (surrogate_predict_at(&d.m, d.prop, d.o.out_u, d.np, d.qm, d.qv) < 0) { rc = oom(err, errlen); goto out; }
        if ((rc = insert_batch(st, sweep, sp, cfg, d.prop, d.prop_u, d.np, d.pids, &d.created, err, errlen)) < 0) goto out;
    }
    store_fault_point("PRISM_FAULT_SEARCH", "a search decision");   /* the batch's schedules and jobs written, its row not: nothing committed */
    if ((rc = write_proposals(st, sweep, b, &d, q.ref, err, errlen)) < 0) goto out;
    if ((rc = write_predictions(st, sweep, b, &d, q.ref, yref, err, errlen)) < 0) goto out;
    rc = write_batch_row(st, sweep, cfg, b, &d, &q, err, errlen);
out:
    batch_release(&d);
    return rc;
}

/* Is a batch due? One read: a surrogate search at all, its last batch, whether it ended, and the pending jobs. */
static int due(store *st, long long sweep, int *is_search, int *last, int *is_due, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    *is_search = *last = *is_due = 0;
    if (sqlite3_prepare_v2(st->db, "SELECT instr(spec, '\"surrogate\"') > 0, "
                                   "(SELECT coalesce(max(batch), 0) FROM search_batches WHERE sweep_id = ?1), "
                                   "(SELECT stop_reason IS NOT NULL FROM search_batches WHERE sweep_id = ?1 ORDER BY batch "
                                   "DESC LIMIT 1), "
                                   "(SELECT coalesce(sum(n), 0) FROM sweep_counts WHERE sweep_id = ?1 AND state IN ('queued', "
                                   "'leased', 'paused')) FROM sweeps WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "search state");
    sqlite3_bind_int64(s, 1, sweep);
    int step = sqlite3_step(s), rc = STORE_OK;
    if (step == SQLITE_ROW) {
        *is_search = sqlite3_column_int(s, 0);
        *last = sqlite3_column_int(s, 1);
        *is_due = *is_search && !sqlite3_column_int(s, 2) && sqlite3_column_int64(s, 3) == 0;
    } else if (step != SQLITE_DONE) rc = db_fail(st, err, errlen, "search state");
    sqlite3_finalize(s);
    return rc;
}

int search_tick(store *st, long long sweep_id, int *decided, char *err, size_t errlen) {
    int is_search, last, is_due;
    int rc = due(st, sweep_id, &is_search, &last, &is_due, err, errlen);
    if (rc < 0 || !is_due) return rc;
    sweep_spec sp;
    search_cfg cfg;
    if ((rc = load_spec(st, sweep_id, &sp, &cfg, err, errlen)) < 0) return rc;
    int skipped = 0;
    if (cfg.enabled) {
        rc = decide_batch(st, sweep_id, &sp, &cfg, last + 1, &skipped, err, errlen);
        if (rc == STORE_OK && !skipped) (*decided)++;
    }
    spec_release(&sp);
    return rc;
}

int search_job_done(store *st, long long job, int *decided, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, "SELECT sweep_id FROM jobs WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "search job");
    sqlite3_bind_int64(s, 1, job);
    long long sweep = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_finalize(s);
    return sweep > 0 ? search_tick(st, sweep, decided, err, errlen) : STORE_OK;
}

int search_tick_all(store *st, int *decided, char *err, size_t errlen) {
    return sweeps_tick_each(st, "search", search_tick, decided, err, errlen);
}

/* ---- what it shows ------------------------------------------------------------------------------ */

static json_t *col_num(sqlite3_stmt *s, int c) {
    return sqlite3_column_type(s, c) == SQLITE_NULL ? json_null() : json_real(sqlite3_column_double(s, c));
}
static json_t *col_text(sqlite3_stmt *s, int c) {
    return sqlite3_column_type(s, c) == SQLITE_NULL ? json_null() : json_string((const char *)sqlite3_column_text(s, c));
}
static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

int search_summary_json(store *st, long long sweep_id, json_t **out, char *err, size_t errlen) {
    *out = NULL;
    int is_search, last, is_due;
    int rc = due(st, sweep_id, &is_search, &last, &is_due, err, errlen);
    if (rc < 0 || !is_search) return rc;
    sweep_spec sp;
    search_cfg cfg;
    if ((rc = load_spec(st, sweep_id, &sp, &cfg, err, errlen)) < 0) return rc == STORE_EINVAL ? STORE_OK : rc;
    spec_release(&sp);
    if (!cfg.enabled) return STORE_OK;
    sqlite3_stmt *s = NULL;
    json_t *o = json_object(), *batches = json_array();
    if (!o || !batches) { json_decref(o); json_decref(batches); return oom(err, errlen); }
    json_object_set_new(o, "strategy", json_string("surrogate"));
    json_object_set_new(o, "budget", json_integer(cfg.budget));
    json_object_set_new(o, "batch", json_integer(cfg.batch));
    json_object_set_new(o, "init", json_integer(cfg.init));
    json_object_set_new(o, "delta", json_real(cfg.delta));
    json_object_set_new(o, "stop_p", num_or_null(cfg.stop_p));
    json_object_set_new(o, "space", json_integer(cfg.space));
    if (cfg.naxes) {   /* the train keys searched too: {"lr": {"min", "max", "scale", "integer", "baseline"}} */
        json_t *dims = json_object();
        for (int k = 0; k < cfg.naxes; k++)
            json_object_set_new(dims, cfg.keys[k], json_pack("{s:f, s:f, s:s, s:b, s:f}", "min", cfg.axes[k].lo, "max",
                                                             cfg.axes[k].hi, "scale", cfg.axes[k].log ? "log" : "linear",
                                                             "integer", cfg.axes[k].integer, "baseline", cfg.base[k]));
        json_object_set_new(o, "dims", dims);
    }
    /* the sweep's schedules and those with a finished job (the fit's candidates) */
    if (sqlite3_prepare_v2(st->db, "SELECT (SELECT count(*) FROM schedules WHERE sweep_id = ?1), (SELECT count(DISTINCT "
                                   "j.schedule_id) FROM jobs j JOIN results r ON r.job_id = j.id WHERE j.sweep_id = ?1 AND "
                                   "j.state = 'done')", -1, &s, NULL) != SQLITE_OK) {
        json_decref(o); json_decref(batches);
        return db_fail(st, err, errlen, "search counts");
    }
    sqlite3_bind_int64(s, 1, sweep_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        json_object_set_new(o, "schedules", json_integer(sqlite3_column_int64(s, 0)));
        json_object_set_new(o, "trained", json_integer(sqlite3_column_int64(s, 1)));
    }
    sqlite3_finalize(s);
    s = NULL;
    if (sqlite3_prepare_v2(st->db, "SELECT b.batch, b.schedules, b.trained, b.proposed, b.stop_reason, rs.heads, "
                                   "b.recommended_mean, b.recommended_sd, es.heads, b.best_untrained, b.best_untrained_mean, "
                                   "b.best_untrained_sd, b.p_beat, b.loo_rmse, b.loo_z_rms, b.heldout_n, b.heldout_rmse, "
                                   "b.heldout_z_rms, b.candidates, b.exhaustive, b.decided_at, b.screened, b.jobs_created, "
                                   "rs.train, es.train, b.best_untrained_train FROM search_batches b LEFT JOIN schedules rs ON rs.id = b.recommended_id LEFT JOIN "
                                   "schedules es ON es.id = b.best_estimate_id WHERE b.sweep_id = ?1 ORDER BY b.batch",
                           -1, &s, NULL) != SQLITE_OK) {
        json_decref(o); json_decref(batches);
        return db_fail(st, err, errlen, "search batches");
    }
    sqlite3_bind_int64(s, 1, sweep_id);
    int step, finished = 0;
    json_t *lastb = NULL;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        json_t *e = json_object();
        json_object_set_new(e, "batch", json_integer(sqlite3_column_int(s, 0)));
        json_object_set_new(e, "schedules", json_integer(sqlite3_column_int(s, 1)));
        json_object_set_new(e, "trained", json_integer(sqlite3_column_int(s, 2)));
        json_object_set_new(e, "proposed", json_integer(sqlite3_column_int(s, 3)));
        json_object_set_new(e, "jobs_created", json_integer(sqlite3_column_int(s, 22)));
        json_object_set_new(e, "stop_reason", col_text(s, 4));
        json_object_set_new(e, "recommended", col_text(s, 5));
        json_object_set_new(e, "recommended_mean", col_num(s, 6));
        json_object_set_new(e, "recommended_sd", col_num(s, 7));
        json_object_set_new(e, "best_estimate", col_text(s, 8));
        json_object_set_new(e, "best_untrained", col_text(s, 9));
        json_object_set_new(e, "best_untrained_mean", col_num(s, 10));
        json_object_set_new(e, "best_untrained_sd", col_num(s, 11));
        json_object_set_new(e, "p_beat", col_num(s, 12));
        json_object_set_new(e, "loo_rmse", col_num(s, 13));
        json_object_set_new(e, "loo_z_rms", col_num(s, 14));
        json_object_set_new(e, "heldout_n", json_integer(sqlite3_column_int(s, 15)));
        json_object_set_new(e, "heldout_rmse", col_num(s, 16));
        json_object_set_new(e, "heldout_z_rms", col_num(s, 17));
        json_object_set_new(e, "candidates", json_integer(sqlite3_column_int(s, 18)));
        json_object_set_new(e, "exhaustive", json_boolean(sqlite3_column_int(s, 19)));
        json_object_set_new(e, "decided_at", json_real(sqlite3_column_double(s, 20)));
        json_object_set_new(e, "screened", json_integer(sqlite3_column_int(s, 21)));
        if (cfg.naxes) {   /* with dims each candidate also names its train values */
            static const char *const tk[3] = { "recommended_train", "best_estimate_train", "best_untrained_train" };
            for (int c = 0; c < 3; c++) {
                const char *t = (const char *)sqlite3_column_text(s, 23 + c);
                json_t *tj = t && *t ? json_loads(t, 0, NULL) : NULL;
                json_object_set_new(e, tk[c], tj ? tj : json_null());
            }
        }
        finished = sqlite3_column_type(s, 4) != SQLITE_NULL;
        json_array_append_new(batches, e);
        lastb = e;
    }
    sqlite3_finalize(s);
    if (step != SQLITE_DONE) { json_decref(o); json_decref(batches); return db_fail(st, err, errlen, "search batches"); }
    json_object_set_new(o, "batches_decided", json_integer(json_array_size(batches)));
    json_object_set_new(o, "finished", json_boolean(finished));
    json_object_set_new(o, "stop_reason", lastb ? json_incref(json_object_get(lastb, "stop_reason")) : json_null());
    if (lastb) {
        json_object_set_new(o, "as_of_batch", json_incref(json_object_get(lastb, "batch")));
        json_t *rec = json_pack("{s:O, s:O, s:O}", "heads", json_object_get(lastb, "recommended"), "mean",
                                json_object_get(lastb, "recommended_mean"), "sd", json_object_get(lastb, "recommended_sd"));
        json_t *pbu = json_is_null(json_object_get(lastb, "best_untrained")) ? json_null() :
                      json_pack("{s:O, s:O, s:O}", "heads", json_object_get(lastb, "best_untrained"), "mean",
                                json_object_get(lastb, "best_untrained_mean"), "sd", json_object_get(lastb, "best_untrained_sd"));
        if (cfg.naxes) {
            json_object_set(rec, "train", json_object_get(lastb, "recommended_train"));
            if (json_is_object(pbu)) json_object_set(pbu, "train", json_object_get(lastb, "best_untrained_train"));
        }
        json_object_set_new(o, "recommended", rec);
        json_object_set_new(o, "predicted_best_untrained", pbu);
        json_object_set_new(o, "p_beat", json_incref(json_object_get(lastb, "p_beat")));
        json_object_set_new(o, "fit", json_pack("{s:O, s:O, s:O, s:O, s:O}", "n", json_object_get(lastb, "trained"),
                                                "loo_rmse", json_object_get(lastb, "loo_rmse"), "loo_z_rms",
                                                json_object_get(lastb, "loo_z_rms"), "heldout_n", json_object_get(lastb, "heldout_n"),
                                                "heldout_rmse", json_object_get(lastb, "heldout_rmse")));
    } else {
        json_object_set_new(o, "as_of_batch", json_null());
        json_object_set_new(o, "recommended", json_null());
        json_object_set_new(o, "predicted_best_untrained", json_null());
        json_object_set_new(o, "p_beat", json_null());
        json_object_set_new(o, "fit", json_null());
    }
    json_object_set_new(o, "batches", batches);
    *out = o;
    return STORE_OK;
}

int search_annotate(store *st, ranking *r, char *err, size_t errlen) {
    json_t *o = NULL;
    int rc = search_summary_json(st, r->sweep_id, &o, err, errlen);
    if (rc < 0 || !o) return rc;
    json_t *by = json_object();
    sqlite3_stmt *s = NULL;
    if (!by) { json_decref(o); return oom(err, errlen); }
    if (sqlite3_prepare_v2(st->db, "SELECT schedule_id, mean, sd, estimate, estimate_se, batch FROM search_predictions WHERE "
                                   "sweep_id = ?1 AND batch = (SELECT max(batch) FROM search_batches WHERE sweep_id = ?1)",
                           -1, &s, NULL) != SQLITE_OK) {
        json_decref(o); json_decref(by);
        return db_fail(st, err, errlen, "search predictions");
    }
    sqlite3_bind_int64(s, 1, r->sweep_id);
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        char key[32];
        double mean = sqlite3_column_double(s, 1), sd = sqlite3_column_double(s, 2);
        snprintf(key, sizeof key, "%lld", (long long)sqlite3_column_int64(s, 0));
        json_object_set_new(by, key, json_pack("{s:f, s:f, s:f, s:f, s:o, s:o, s:i}", "mean", mean, "sd", sd, "lo",
                                               mean - 1.959963984540054 * sd, "hi", mean + 1.959963984540054 * sd,
                                               "estimate", col_num(s, 3), "estimate_se", col_num(s, 4), "batch",
                                               sqlite3_column_int(s, 5)));
    }
    sqlite3_finalize(s);
    if (step != SQLITE_DONE) { json_decref(o); json_decref(by); return db_fail(st, err, errlen, "search predictions"); }
    json_object_set_new(o, "by_schedule", by);
    json_decref(r->search);
    r->search = o;
    return STORE_OK;
}

static double jnum(const json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

const char *search_train_words(const json_t *t, const char *lead, char *out, size_t n) {
    const char *k;
    json_t *v;
    size_t o = 0;
    out[0] = 0;
    json_object_foreach((json_t *)t, k, v) {
        if (o + 48 >= n) break;
        if (json_is_integer(v)) o += (size_t)snprintf(out + o, n - o, "%s %s=%lld", o ? "" : lead, k, (long long)json_integer_value(v));
        else o += (size_t)snprintf(out + o, n - o, "%s %s=%.3g", o ? "" : lead, k, json_number_value(v));
    }
    return out;
}
static const char *train_words(const json_t *t, char *out, size_t n) { return search_train_words(t, " at", out, n); }

int search_summary_text(const json_t *o, buf *b, size_t max) {
    if (!o) return 0;
    char tw[256];
    const char *stop = json_string_value(json_object_get(o, "stop_reason"));
    int rc = buf_printf(b, max, "search (surrogate; budget %lld schedules, init %lld, batch %lld; %lld valid schedules): %lld "
                        "batch(es) decided, %lld schedules in the sweep, %lld with a value%s%s%s\n",
                        (long long)json_integer_value(json_object_get(o, "budget")), (long long)json_integer_value(json_object_get(o, "init")),
                        (long long)json_integer_value(json_object_get(o, "batch")), (long long)json_integer_value(json_object_get(o, "space")),
                        (long long)json_integer_value(json_object_get(o, "batches_decided")),
                        (long long)json_integer_value(json_object_get(o, "schedules")),
                        (long long)json_integer_value(json_object_get(o, "trained")), stop ? "; finished (" : "",
                        stop ? (!strcmp(stop, "budget") ? "the budget is spent" : !strcmp(stop, "space") ? "no untrained schedule left"
                                : "no untrained schedule is likely to beat the recommended: stop_p") : "", stop ? ")" : "");
    json_t *rec = json_object_get(o, "recommended"), *bu = json_object_get(o, "predicted_best_untrained"), *fit = json_object_get(o, "fit");
    const char *dk;
    json_t *dv;
    json_object_foreach(json_object_get(o, "dims"), dk, dv)
        rc |= buf_printf(b, max, "  searched with the schedule: train.%s in [%g, %g] (%s scale; the baseline at %g)\n", dk,
                         jnum(dv, "min"), jnum(dv, "max"), json_string_value(json_object_get(dv, "scale")), jnum(dv, "baseline"));
    if (json_is_object(rec))
        rc |= buf_printf(b, max, "  recommended (lowest model mean among the trained, as of batch %lld): %s, delta vs uniform %+.5f "
                         "± %.5f (the model's)\n", (long long)json_integer_value(json_object_get(o, "as_of_batch")),
                         json_string_value(json_object_get(rec, "heads")), jnum(rec, "mean"), jnum(rec, "sd"));
    if (json_is_object(json_object_get(rec, "train")))
        rc |= buf_printf(b, max, "    (trained%s)\n", train_words(json_object_get(rec, "train"), tw, sizeof tw));
    else rc |= buf_printf(b, max, "  no batch decided yet: the first comes when the initial design's jobs are over\n");
    if (json_is_object(bu))
        rc |= buf_printf(b, max, "  predicted best untrained: %s, %+.5f ± %.5f; P(an untrained schedule beats the recommended by "
                         "more than %g) = %.2f (a model's belief, not a test)\n", json_string_value(json_object_get(bu, "heads")),
                         jnum(bu, "mean"), jnum(bu, "sd"), jnum(o, "delta"), jnum(o, "p_beat"));
    if (json_is_object(bu) && json_is_object(json_object_get(bu, "train")))
        rc |= buf_printf(b, max, "    (untrained%s)\n", train_words(json_object_get(bu, "train"), tw, sizeof tw));
    if (json_is_object(fit)) {
        rc |= buf_printf(b, max, "  fit: leave-one-out RMSE %.5f (z rms %.2f; about 1 when calibrated) over %lld schedules",
                         jnum(fit, "loo_rmse"), jnum(fit, "loo_z_rms"), (long long)json_integer_value(json_object_get(fit, "n")));
        if (json_integer_value(json_object_get(fit, "heldout_n")) > 0)
            rc |= buf_printf(b, max, "; held out (the previous batch's %lld, predicted before they were trained) RMSE %.5f",
                             (long long)json_integer_value(json_object_get(fit, "heldout_n")), jnum(fit, "heldout_rmse"));
        rc |= buf_printf(b, max, "\n");
    }
    json_t *bs = json_object_get(o, "batches");
    if (json_array_size(bs)) rc |= buf_printf(b, max, "  %-5s %-7s %-8s %-11s %-8s %s\n", "batch", "trained", "proposed",
                                              "rec. delta", "P(beat)", "recommended");
    for (size_t i = 0; i < json_array_size(bs); i++) {
        json_t *e = json_array_get(bs, i);
        rc |= buf_printf(b, max, "  %-5lld %-7lld %-8lld %+-11.5f %-8.2f %s%s\n", (long long)json_integer_value(json_object_get(e, "batch")),
                         (long long)json_integer_value(json_object_get(e, "trained")),
                         (long long)json_integer_value(json_object_get(e, "proposed")), jnum(e, "recommended_mean"),
                         jnum(e, "p_beat"), json_is_string(json_object_get(e, "recommended")) ?
                         json_string_value(json_object_get(e, "recommended")) : "-",
                         train_words(json_object_get(e, "recommended_train"), tw, sizeof tw));
    }
    return rc ? -1 : 0;
}
