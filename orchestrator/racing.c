/* racing.c — racing (racing.h; the spec key is plan.c's): the pure look (the one-sided best-group test at the
 * round's alpha) and the round decision transaction.
 *
 * Design: the state of a race is the jobs table (a round's jobs are those of its seed_index range: round 1 the
 * spec's seeds 0..n0−1, round r ≥ 2 the one index n0 + r − 2), racing_rounds (one row per decided round) and
 * racing_decisions (one row per round × schedule of the family). racing_tick() derives everything from those
 * rows, as halving_tick() does: the first undecided round whose jobs are all over is decided — decision rows, the
 * next round's jobs (INSERT .. ON CONFLICT DO NOTHING on jobs(schedule_id, seed)), then the round row — so a round
 * is decided once (its row exists) and a decision interrupted before the commit leaves nothing. The fit is the
 * ranking module's (ranking_fit_compute), not a copy of it. Statements are prepared per call: a round is decided
 * a handful of times per sweep, and the check that no round is due is two short reads per finished job.
 */
#include "racing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "queue.h"
#include "ranking_read.h"
#include "stats.h"
#include "sweeps.h"

static int db_fail(store *st, char *err, size_t errlen, const char *what) {
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(st->db));
    return STORE_EIO;
}

/* ---- the pure look ------------------------------------------------------------------------------- */

/* The df the critical value is taken at: the residual df rounded down to two significant figures above 30 (490
 * for 495). q falls as df grows, so this is conservative, by < 0.1% of q above 100 df; it keeps the distinct
 * (K, df) pairs of a race few, so the studentized range quantile (a double integral) is mostly a cache hit. */
static double look_df(int df) {
    if (df <= 30) return df;
    double p = pow(10, floor(log10((double)df)) - 1);
    return floor(df / p) * p;
}

int racing_look(const ranking_obs *obs, int nobs, int nsched, unsigned char *alive, double alpha, double *critical,
                ranking_fit *fit) {
    return racing_look_screened(obs, nobs, nsched, alive, alpha, critical, fit, NULL, NULL, NULL);
}

int racing_look_screened(const ranking_obs *obs, int nobs, int nsched, unsigned char *alive, double alpha,
                         double *critical, ranking_fit *fit, unsigned char *screened, double *resid, double *thr) {
    ranking_fit f;
    *critical = NAN;
    /* the screen first (ranking.h): a diverged run is left out of this round's fit, named by the caller */
    unsigned char *so = screened ? screened : calloc((size_t)(nobs ? nobs : 1), 1);
    ranking_obs *kept = malloc((size_t)(nobs ? nobs : 1) * sizeof *kept);
    int nkept = 0;
    if (!so || !kept) { if (!screened) free(so); free(kept); return -1; }
    if (ranking_screen(obs, nobs, nsched, so, resid, thr) < 0) { if (!screened) free(so); free(kept); return -1; }
    for (int k = 0; k < nobs; k++) if (!so[k]) kept[nkept++] = obs[k];
    if (!screened) free(so);
    int rc = ranking_fit_compute(kept, nkept, nsched, &f);
    /* the fit's cell table points into kept[], freed below: dropped, so no caller can follow it */
    free(f.cell);
    f.cell = NULL;
    free(kept);
    if (rc < 0) return rc;
    int *fam = malloc((size_t)(nsched ? nsched : 1) * sizeof *fam), K = 0, out = 0;
    unsigned char *elim = calloc((size_t)(nsched ? nsched : 1), 1);
    if (!fam || !elim) { rc = -1; goto done; }
    for (int i = 0; i < nsched; i++) {
        if (alive[i] && f.r[i] > 0) fam[K++] = i;
        else alive[i] = 0;
    }
    if (K >= 2 && f.df > 0 && isfinite(f.sd)) {
        double q = stats_range_quantile(alpha, K, look_df(f.df)) / M_SQRT2;
        *critical = q;
        for (int a = 1; a < K; a++) {   /* the family by τ̂ ascending (insertion sort: K is at most the schedules) */
            int x = fam[a], b = a - 1;
            while (b >= 0 && f.tau[fam[b]] > f.tau[x]) { fam[b + 1] = fam[b]; b--; }
            fam[b + 1] = x;
        }
        /* i leaves when it is worse than some j of the family by more than q standard errors; the j below it in τ̂
         * are tried from the best up (the best is the one that usually shows it) */
        for (int a = 1; a < K; a++) {
            int i = fam[a];
            for (int b = 0; b < a; b++) {
                int j = fam[b];
                if (!(f.tau[j] < f.tau[i])) break;
                double var = ranking_fit_var(&f, i, j);
                if (isfinite(var) && f.tau[i] - f.tau[j] > q * f.sd * sqrt(var)) { elim[i] = 1; break; }
            }
        }
        for (int i = 0; i < nsched; i++) if (elim[i]) { alive[i] = 0; out++; }
    }
    rc = out;
done:
    free(fam);
    free(elim);
    if (rc >= 0 && fit) *fit = f;
    else ranking_fit_release(&f);
    return rc;
}

/* ---- the per-round level calibrated by simulation (racing.h, docs/STATISTICS.md "Racing") ---------- */

/* splitmix64 and Box–Muller: a fixed seed gives the same sweeps on every machine */

/* The share of replications whose largest gap exceeds the look's q at level a at some look. */
static double calib_rate(const double *gap, int reps, int nlooks, const int *df, int K, double a) {
    double q[RACING_MAX_SEEDS + 1];
    for (int l = 0; l < nlooks; l++) q[l] = stats_range_quantile(a, K, look_df(df[l])) / M_SQRT2;
    int hit = 0;
    for (int r = 0; r < reps; r++)
        for (int l = 0; l < nlooks; l++)
            if (gap[(size_t)r * nlooks + l] > q[l]) { hit++; break; }
    return (double)hit / reps;
}

int racing_calibrate(int K, int n0, int max_seeds, double alpha, int reps, unsigned long long seed, racing_calib *out) {
    memset(out, 0, sizeof *out);
    int nlooks = max_seeds - n0 + 1;
    double bonf = alpha / (nlooks > 0 ? nlooks : 1);
    out->level = bonf;
    out->simulated = out->rate = out->rate_se = NAN;
    if (K < 2 || n0 < 2 || nlooks < 1 || max_seeds > RACING_MAX_SEEDS) return 0;
    long long per_rep = 0;   /* observations fitted by one replication: Σ_n K·n */
    for (int n = n0; n <= max_seeds; n++) per_rep += (long long)K * n;
    if (reps > RACING_CALIB_REPS) reps = RACING_CALIB_REPS;
    if ((long long)reps * per_rep > RACING_CALIB_WORK) reps = (int)(RACING_CALIB_WORK / per_rep);
    if (reps < RACING_CALIB_MIN_REPS) return 0;   /* over the bound: Bonferroni, unsimulated */
    double *gap = malloc((size_t)reps * nlooks * sizeof *gap), *row = malloc((size_t)K * sizeof *row);
    int df[RACING_MAX_SEEDS + 1], rc = 0;
    if (!gap || !row) { rc = -1; goto out; }
    stats_rng g = { seed, 0, 0 };
    /* Under the global null no schedule leaves before the first elimination, so until the event every look is of
     * the complete K × n design, where the blocked fit is closed-form: τ̂_i − τ̂_j the difference of row means,
     * Var/σ² = 2/n for every pair, RSS = Σy² − Σ_i R_i²/n − Σ_j C_j²/K + T²/(Kn), df = (K−1)(n−1). racing_look
     * eliminates some schedule at level a iff (max − min row mean)/(σ̂·√(2/n)) > q_{1−a}(K, df)/√2, so that gap is
     * all a look needs (tests/unit/test_racing.c runs the races through racing_look itself at the level found). */
    for (int r = 0; r < reps; r++) {
        /* y = N(0, 1): every schedule equal; no seed effect (the fit is exactly invariant to it), σ = 1 (scale-free) */
        double ss = 0, tot = 0, colsq = 0;
        for (int i = 0; i < K; i++) row[i] = 0;
        for (int n = 1; n <= max_seeds; n++) {
            double c = 0;
            for (int i = 0; i < K; i++) {
                double y = stats_rng_gauss(&g);
                row[i] += y;
                c += y;
                ss += y * y;
            }
            tot += c;
            colsq += c * c;
            if (n < n0) continue;
            double rowsq = 0, lo = INFINITY, hi = -INFINITY;
            for (int i = 0; i < K; i++) {
                rowsq += row[i] * row[i];
                lo = fmin(lo, row[i]);
                hi = fmax(hi, row[i]);
            }
            int d = (K - 1) * (n - 1);
            double rss = ss - rowsq / n - colsq / K + tot * tot / ((double)K * n), sd = sqrt(fmax(rss, 0) / d);
            gap[(size_t)r * nlooks + n - n0] = sd > 0 ? (hi - lo) / n / (sd * sqrt(2.0 / n)) : NAN;
            df[n - n0] = d;
            out->work += (long long)K * n;
        }
    }
    /* bisection (in log α) for the largest level whose rate is ≤ alpha: the rate grows with the level */
    double lo = bonf, hi = alpha;
    if (calib_rate(gap, reps, nlooks, df, K, lo) > alpha) hi = lo;   /* the MC sample above alpha at Bonferroni already */
    else if (calib_rate(gap, reps, nlooks, df, K, hi) <= alpha) lo = hi;
    for (int it = 0; it < 24 && hi > lo * (1 + 1e-2); it++) {   /* to 1% of the level (the MC error is larger) */
        double mid = sqrt(lo * hi);
        if (calib_rate(gap, reps, nlooks, df, K, mid) <= alpha) lo = mid; else hi = mid;
    }
    out->reps = reps;
    out->simulated = lo;
    out->calibrated = lo > bonf;
    out->level = fmax(bonf, lo);
    out->rate = calib_rate(gap, reps, nlooks, df, K, out->level);
    out->rate_se = sqrt(out->rate * (1 - out->rate) / reps);
out:
    free(gap);
    free(row);
    return rc;
}

/* ---- the store ----------------------------------------------------------------------------------- */

/* The last decided round (0: none) and whether it ended the race (no next seed). */
static int last_round(store *st, long long sweep, int *round, int *finished, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    *round = 0;
    *finished = 0;
    if (sqlite3_prepare_v2(st->db, "SELECT round, next_seed IS NULL FROM racing_rounds WHERE sweep_id = ?1 "
                                   "ORDER BY round DESC LIMIT 1", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "racing rounds");
    sqlite3_bind_int64(s, 1, sweep);
    int step = sqlite3_step(s), rc = STORE_OK;
    if (step == SQLITE_ROW) { *round = sqlite3_column_int(s, 0); *finished = sqlite3_column_int(s, 1); }
    else if (step != SQLITE_DONE) rc = db_fail(st, err, errlen, "racing rounds");
    sqlite3_finalize(s);
    return rc;
}

/* The seed_index range of round r's jobs. */
static void round_range(const racing_cfg *cfg, int r, int *lo, int *hi) {
    if (r <= 1) { *lo = 0; *hi = cfg->seeds0 - 1; }
    else *lo = *hi = cfg->seeds0 + r - 2;
}

/* The first column of sql's first row; ?1..?3 bound to a, b, c (a statement that uses fewer ignores the rest). */
static long long count1(store *st, const char *sql, long long a, long long b, long long c, int *rc, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    long long n = -1;
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) { *rc = db_fail(st, err, errlen, "racing count"); return -1; }
    sqlite3_bind_int64(s, 1, a);
    sqlite3_bind_int64(s, 2, b);
    sqlite3_bind_int64(s, 3, c);
    if (sqlite3_step(s) == SQLITE_ROW) n = sqlite3_column_int64(s, 0);
    else *rc = db_fail(st, err, errlen, "racing count");
    sqlite3_finalize(s);
    return n;
}

typedef struct rsched {
    long long id;
    int is_baseline;
    unsigned char alive;      /* in the race going into this round */
    unsigned char family;     /* in it with a value (decided at this round) */
} rsched;

/* The next round's job of schedule id with seed: a copy of its first job with train.seed replaced. */
static int create_job(store *st, long long sweep, long long sched, long long seed, int seed_index, const halving_cfg *hv,
                      int *created, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    char *text = NULL;
    int rc = STORE_OK;
    if (sqlite3_prepare_v2(st->db, "SELECT job, priority, steps, tokens_per_step FROM jobs WHERE schedule_id = ?1 "
                                   "ORDER BY seed_index, id LIMIT 1", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "racing job template");
    sqlite3_bind_int64(s, 1, sched);
    if (sqlite3_step(s) != SQLITE_ROW) {
        sqlite3_finalize(s);
        snprintf(err, errlen, "racing: schedule %lld has no job to copy", sched);
        return STORE_EIO;
    }
    json_t *job = json_loads((const char *)sqlite3_column_text(s, 0), 0, NULL);
    int prio = sqlite3_column_int(s, 1);
    long long steps = sqlite3_column_int64(s, 2), tps = sqlite3_column_int64(s, 3);
    sqlite3_finalize(s);
    s = NULL;
    json_t *train = json_object_get(job, "train");
    if (!json_is_object(train) || json_object_set_new(train, "seed", json_integer(seed)) < 0 ||
        !(text = json_dumps(job, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)))) {
        json_decref(job);
        snprintf(err, errlen, "racing: schedule %lld: its job JSON has no train section", sched);
        return STORE_EIO;
    }
    json_decref(job);
    /* the full run at once under halving: its last rung */
    queue_new_job nj = {.sweep = sweep, .schedule = sched, .seed = seed, .seed_index = seed_index, .priority = prio,
                        .job = text, .steps = steps, .tokens_per_step = tps, .rung = hv->enabled ? hv->nrungs : -1,
                        .now = store_now()};
    int added = 0;
    rc = queue_job_add(st, &s, &nj, &added);
    sqlite3_finalize(s);
    free(text);
    if (rc < 0) {
        snprintf(err, errlen, "racing job: %s", st->err);
        return rc;
    }
    *created += added;
    return STORE_OK;
}

/* The level every round of the sweep tests at: racing_config's row, or, when there is none, a new one — calibrated
 * at round 1 with K = the family going into it, Bonferroni for a race whose round 1 was decided before migration 8
 * (a race never changes its level midway). Written in the decision's transaction. */
static int round_level(store *st, long long sweep, const racing_cfg *cfg, int r, int family, double *level, char *err,
                       size_t errlen) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, "SELECT alpha_round FROM racing_config WHERE sweep_id = ?1", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "racing config");
    sqlite3_bind_int64(s, 1, sweep);
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW) *level = sqlite3_column_double(s, 0);
    sqlite3_finalize(s);
    if (step == SQLITE_ROW) return STORE_OK;
    if (step != SQLITE_DONE) return db_fail(st, err, errlen, "racing config");
    racing_calib c;
    if (r == 1) {
        if (racing_calibrate(family, cfg->seeds0, cfg->max_seeds, cfg->alpha, RACING_CALIB_REPS, RACING_CALIB_SEED, &c) < 0) {
            snprintf(err, errlen, "out of memory");
            return STORE_EIO;
        }
    } else {
        memset(&c, 0, sizeof c);
        c.level = racing_round_alpha(cfg);
        c.rate = c.rate_se = NAN;
    }
    if (sqlite3_prepare_v2(st->db, "INSERT INTO racing_config (sweep_id, alpha_round, method, bonferroni, family, reps, "
                                   "null_rate, null_rate_se, work, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                           -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "racing config");
    sqlite3_bind_int64(s, 1, sweep);
    sqlite3_bind_double(s, 2, c.level);
    sqlite3_bind_text(s, 3, c.calibrated ? "calibrated" : "bonferroni", -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 4, racing_round_alpha(cfg));
    sqlite3_bind_int(s, 5, family);
    sqlite3_bind_int(s, 6, c.reps);
    if (isfinite(c.rate)) sqlite3_bind_double(s, 7, c.rate); else sqlite3_bind_null(s, 7);
    if (isfinite(c.rate_se)) sqlite3_bind_double(s, 8, c.rate_se); else sqlite3_bind_null(s, 8);
    sqlite3_bind_int64(s, 9, c.work);
    sqlite3_bind_double(s, 10, store_now());
    int rc = sqlite3_step(s) == SQLITE_DONE ? STORE_OK : db_fail(st, err, errlen, "racing config");
    sqlite3_finalize(s);
    *level = c.level;
    return rc;
}

/* One round's decision in the making: the schedules, the finished jobs, the screened fit. */
typedef struct rround {
    long long sweep;
    int r;                    /* the round decided */
    rsched *v;                /* [n] the sweep's schedules in id order (owned) */
    int n, base;              /* base: the uniform baseline's index in v, or -1 */
    ranking_obs *obs;         /* [nobs] every finished job of the sweep (owned) */
    int nobs;
    unsigned char *alive;     /* [n] in the race going into round r, then after it (owned) */
    unsigned char *scr;       /* [nobs] screened out of this round's fit (owned) */
    double *sres, *sthr;      /* [nobs] the screen's residual and threshold (owned) */
    ranking_fit fit;          /* the round's fit over the family (released when have_fit) */
    int have_fit;
    double now;
} rround;

/* The schedules, and whether each is in the race going into round r: round 1 all; later the survivors of r − 1. */
static int round_schedules(store *st, rround *d, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    int cap = 0, step;
    if (sqlite3_prepare_v2(st->db, "SELECT sc.id, sc.is_baseline, ?2 = 1 OR EXISTS (SELECT 1 FROM racing_decisions d WHERE "
                                   "d.sweep_id = ?1 AND d.round = ?2 - 1 AND d.schedule_id = sc.id AND d.eliminated = 0) "
                                   "FROM schedules sc WHERE sc.sweep_id = ?1 ORDER BY sc.id", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "racing schedules");
    sqlite3_bind_int64(s, 1, d->sweep);
    sqlite3_bind_int(s, 2, d->r);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (d->n == cap) {
            cap = cap ? cap * 2 : 64;
            rsched *nn = realloc(d->v, (size_t)cap * sizeof *d->v);
            if (!nn) { sqlite3_finalize(s); snprintf(err, errlen, "out of memory"); return STORE_EIO; }
            d->v = nn;
        }
        rsched *x = &d->v[d->n++];
        memset(x, 0, sizeof *x);
        x->id = sqlite3_column_int64(s, 0);
        x->is_baseline = sqlite3_column_int(s, 1);
        x->alive = (unsigned char)sqlite3_column_int(s, 2);
        if (x->is_baseline) d->base = d->n - 1;
    }
    int rc = step == SQLITE_DONE ? STORE_OK : db_fail(st, err, errlen, "racing schedules");
    sqlite3_finalize(s);
    return rc;
}

/* Every finished job of the sweep (eliminated schedules' too: they inform the seed effects and the noise), and the
 * round's level over the family of alive schedules with a result. */
static int round_observe(store *st, const racing_cfg *cfg, rround *d, double *alpha, char *err, size_t errlen) {
    int n = d->n, rc;
    long long *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
    if (!ids) { snprintf(err, errlen, "out of memory"); return STORE_EIO; }
    for (int i = 0; i < n; i++) ids[i] = d->v[i].id;
    rc = ranking_load_final(st, d->sweep, ids, n, &d->obs, &d->nobs, err, errlen);
    free(ids);
    if (rc < 0) return rc;
    d->alive = malloc((size_t)(n ? n : 1));
    unsigned char *has = calloc((size_t)(n ? n : 1), 1);
    if (!d->alive || !has) { free(has); snprintf(err, errlen, "out of memory"); return STORE_EIO; }
    for (int i = 0; i < n; i++) d->alive[i] = d->v[i].alive;
    int fam0 = 0;
    for (int k = 0; k < d->nobs; k++) has[d->obs[k].sched] = 1;
    for (int i = 0; i < n; i++) fam0 += d->alive[i] && has[i];
    free(has);
    return round_level(st, d->sweep, cfg, d->r, fam0, alpha, err, errlen);
}

/* Every schedule of the family, eliminated or not, with its Δ vs uniform at this round. */
static int write_decisions(store *st, const rround *d, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    const ranking_fit *fit = &d->fit;
    int base = d->base;
    if (sqlite3_prepare_v2(st->db, "INSERT OR IGNORE INTO racing_decisions (sweep_id, round, schedule_id, eliminated, seeds, "
                                   "delta, ci_low, ci_high, decided_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                           -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "racing decision");
    int rc = STORE_OK;
    for (int i = 0; i < d->n; i++) {
        if (!d->v[i].family) continue;
        double dl = NAN, lo = NAN, hi = NAN;
        if (base >= 0 && i != base && fit->r[base] > 0) {
            double var = ranking_fit_var(fit, i, base);
            if (isfinite(var)) {
                dl = fit->tau[i] - fit->tau[base];
                if (fit->df > 0 && isfinite(fit->sd)) {
                    double h = stats_t_quantile(0.975, fit->df) * fit->sd * sqrt(var);
                    lo = dl - h;
                    hi = dl + h;
                }
            }
        } else if (i == base) dl = 0;
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, d->sweep);
        sqlite3_bind_int(s, 2, d->r);
        sqlite3_bind_int64(s, 3, d->v[i].id);
        sqlite3_bind_int(s, 4, !d->alive[i]);
        sqlite3_bind_int(s, 5, fit->r[i]);
        if (isfinite(dl)) sqlite3_bind_double(s, 6, dl); else sqlite3_bind_null(s, 6);
        if (isfinite(lo)) sqlite3_bind_double(s, 7, lo); else sqlite3_bind_null(s, 7);
        if (isfinite(hi)) sqlite3_bind_double(s, 8, hi); else sqlite3_bind_null(s, 8);
        sqlite3_bind_double(s, 9, d->now);
        if (sqlite3_step(s) != SQLITE_DONE) { rc = db_fail(st, err, errlen, "racing decision"); break; }
    }
    sqlite3_finalize(s);
    return rc;
}

/* The jobs the screen left out of this round's fit; *nscreened counts them. */
static int write_screened(store *st, const rround *d, int *nscreened, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, "INSERT OR IGNORE INTO racing_screened (sweep_id, round, job_id, schedule_id, seed, "
                                   "val_loss, residual, threshold) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "racing screened");
    int rc = STORE_OK;
    for (int k = 0; k < d->nobs; k++) {
        if (!d->scr[k]) continue;
        (*nscreened)++;
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, d->sweep);
        sqlite3_bind_int(s, 2, d->r);
        sqlite3_bind_int64(s, 3, d->obs[k].job_id);
        sqlite3_bind_int64(s, 4, d->v[d->obs[k].sched].id);
        sqlite3_bind_int64(s, 5, d->obs[k].seed);
        sqlite3_bind_double(s, 6, d->obs[k].y);
        if (isfinite(d->sres[k])) sqlite3_bind_double(s, 7, d->sres[k]); else sqlite3_bind_null(s, 7);
        if (isfinite(d->sthr[k])) sqlite3_bind_double(s, 8, d->sthr[k]); else sqlite3_bind_null(s, 8);
        if (sqlite3_step(s) != SQLITE_DONE) { rc = db_fail(st, err, errlen, "racing screened"); break; }
    }
    sqlite3_finalize(s);
    return rc;
}

/* The round's row: written last, so a round is decided once its row exists. */
static int write_round_row(store *st, const rround *d, int seeds, double alpha, double q, int family, int survivors,
                           int next, long long next_seed, int created, int nscreened, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, "INSERT INTO racing_rounds (sweep_id, round, seeds, alpha, critical, family, survivors, "
                                   "next_seed, jobs_created, decided_at, screened) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                                   "?10, ?11)",
                           -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "racing round");
    sqlite3_bind_int64(s, 1, d->sweep);
    sqlite3_bind_int(s, 2, d->r);
    sqlite3_bind_int(s, 3, seeds);
    sqlite3_bind_double(s, 4, alpha);
    if (isfinite(q)) sqlite3_bind_double(s, 5, q); else sqlite3_bind_null(s, 5);
    sqlite3_bind_int(s, 6, family);
    sqlite3_bind_int(s, 7, survivors);
    if (next) sqlite3_bind_int64(s, 8, next_seed); else sqlite3_bind_null(s, 8);
    sqlite3_bind_int(s, 9, created);
    sqlite3_bind_double(s, 10, d->now);
    sqlite3_bind_int(s, 11, nscreened);
    int rc = sqlite3_step(s) == SQLITE_DONE ? STORE_OK : db_fail(st, err, errlen, "racing round");
    sqlite3_finalize(s);
    return rc;
}

static void round_release(rround *d) {
    free(d->scr);
    free(d->sres);
    free(d->sthr);
    if (d->have_fit) ranking_fit_release(&d->fit);
    free(d->v);
    free(d->obs);
    free(d->alive);
}

/* Decides round r (its jobs are all over). */
static int decide_round(store *st, long long sweep, const racing_cfg *cfg, int r, char *err, size_t errlen) {
    rround d;
    memset(&d, 0, sizeof d);
    d.sweep = sweep;
    d.r = r;
    d.base = -1;
    int rc, nscreened = 0;
    sweep_plan plan;
    if ((rc = plan_load(st, sweep, &plan, err, errlen)) == STORE_EIO) return rc;
    halving_cfg hv = plan.halving;
    double alpha, q = NAN;
    if ((rc = round_schedules(st, &d, err, errlen)) < 0 || (rc = round_observe(st, cfg, &d, &alpha, err, errlen)) < 0) goto out;
    int nobs = d.nobs, n = d.n;
    d.scr = calloc((size_t)(nobs ? nobs : 1), 1);
    d.sres = malloc((size_t)(nobs ? nobs : 1) * sizeof *d.sres);
    d.sthr = malloc((size_t)(nobs ? nobs : 1) * sizeof *d.sthr);
    if (!d.scr || !d.sres || !d.sthr) { rc = STORE_EIO; snprintf(err, errlen, "out of memory"); goto out; }
    int lrc = racing_look_screened(d.obs, nobs, n, d.alive, alpha, &q, &d.fit, d.scr, d.sres, d.sthr);
    if (lrc < 0) { rc = STORE_EIO; snprintf(err, errlen, lrc == -2 ? "racing: too many seeds for the blocked model" : "out of memory"); goto out; }
    d.have_fit = 1;
    int family = 0, survivors = 0;
    for (int i = 0; i < n; i++) {
        d.v[i].family = d.v[i].alive && d.fit.r[i] > 0;
        family += d.v[i].family;
        survivors += d.alive[i];
    }
    d.now = store_now();
    if ((rc = write_decisions(st, &d, err, errlen)) < 0 || (rc = write_screened(st, &d, &nscreened, err, errlen)) < 0) goto out;
    /* the next round: one new seed for every survivor and the uniform baseline (same seed: the design stays paired) */
    int seeds = cfg->seeds0 + r - 1, created = 0, next = survivors > 1 && seeds < cfg->max_seeds;
    long long next_seed = racing_round_seed(cfg, r + 1);
    if (next) {
        int lo, hi;
        round_range(cfg, r + 1, &lo, &hi);
        for (int i = 0; i < n; i++) {
            if (!d.alive[i] && i != d.base) continue;
            if ((rc = create_job(st, sweep, d.v[i].id, next_seed, lo, &hv, &created, err, errlen)) < 0) goto out;
        }
    }
    store_fault_point("PRISM_FAULT_RACING", "a racing decision");   /* the decisions and the next round's jobs written, the round row not: nothing committed */
    rc = write_round_row(st, &d, seeds, alpha, q, family, survivors, next, next_seed, created, nscreened, err, errlen);
out:
    round_release(&d);
    return rc;
}

int racing_tick(store *st, long long sweep_id, int *decided, char *err, size_t errlen) {
    sweep_plan plan;
    int rc = plan_load(st, sweep_id, &plan, err, errlen);
    racing_cfg cfg = plan.racing;
    if (rc < 0 || !cfg.enabled) return rc == STORE_EINVAL ? STORE_OK : rc;
    for (;;) {
        int last, finished;
        if ((rc = last_round(st, sweep_id, &last, &finished, err, errlen)) < 0) return rc;
        if (finished || last >= cfg.looks) return STORE_OK;
        int r = last + 1, lo, hi;
        round_range(&cfg, r, &lo, &hi);
        /* due when none of the round's jobs is queued, leased or paused at a halving rung */
        long long pending = count1(st, "SELECT count(*) FROM jobs WHERE sweep_id = ?1 AND seed_index BETWEEN ?2 AND ?3 "
                                       "AND state IN ('queued', 'leased', 'paused')", sweep_id, lo, hi, &rc, err, errlen);
        if (rc < 0) return rc;
        if (pending > 0) return STORE_OK;
        if ((rc = decide_round(st, sweep_id, &cfg, r, err, errlen)) < 0) return rc;
        (*decided)++;
    }
}

int racing_job_done(store *st, long long job, int *decided, char *err, size_t errlen) {
    int rc = STORE_OK;
    long long sweep = count1(st, "SELECT sweep_id FROM jobs WHERE id = ?1", job, 0, 0, &rc, err, errlen);
    if (rc < 0 || sweep <= 0) return rc;
    return racing_tick(st, sweep, decided, err, errlen);
}

int racing_tick_all(store *st, int *decided, char *err, size_t errlen) {
    return sweeps_tick_each(st, "racing", racing_tick, decided, err, errlen);
}

/* ---- what the race spent ------------------------------------------------------------------------- */

int racing_summarize(store *st, long long sweep_id, racing_summary *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    sweep_plan plan;
    int rc = plan_load(st, sweep_id, &plan, err, errlen);
    racing_cfg cfg = plan.racing;
    if (rc < 0 || !cfg.enabled) return rc;
    out->enabled = 1;
    out->max_seeds = cfg.max_seeds;
    out->seeds0 = cfg.seeds0;
    out->looks = cfg.looks;
    out->alpha = cfg.alpha;
    out->alpha_bonferroni = racing_round_alpha(&cfg);
    out->alpha_round = out->calib_rate = out->calib_rate_se = NAN;
    {
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(st->db, "SELECT alpha_round, method, reps, null_rate, null_rate_se FROM racing_config WHERE "
                                       "sweep_id = ?1", -1, &s, NULL) != SQLITE_OK)
            return db_fail(st, err, errlen, "racing config");
        sqlite3_bind_int64(s, 1, sweep_id);
        int step = sqlite3_step(s);
        if (step == SQLITE_ROW) {
            out->alpha_round = sqlite3_column_double(s, 0);
            snprintf(out->alpha_round_method, sizeof out->alpha_round_method, "%s", (const char *)sqlite3_column_text(s, 1));
            out->calib_reps = sqlite3_column_int(s, 2);
            if (sqlite3_column_type(s, 3) != SQLITE_NULL) out->calib_rate = sqlite3_column_double(s, 3);
            if (sqlite3_column_type(s, 4) != SQLITE_NULL) out->calib_rate_se = sqlite3_column_double(s, 4);
        }
        sqlite3_finalize(s);
        if (step != SQLITE_ROW && step != SQLITE_DONE) return db_fail(st, err, errlen, "racing config");
    }
    if ((rc = last_round(st, sweep_id, &out->rounds_decided, &out->finished, err, errlen)) < 0) return rc;
    long long nsched = count1(st, "SELECT count(*) FROM schedules WHERE sweep_id = ?1", sweep_id, 0, 0, &rc, err, errlen);
    out->jobs = count1(st, "SELECT count(*) FROM jobs WHERE sweep_id = ?1", sweep_id, 0, 0, &rc, err, errlen);
    out->jobs_done = count1(st, "SELECT count(*) FROM jobs WHERE sweep_id = ?1 AND state = 'done'", sweep_id, 0, 0,
                            &rc, err, errlen);
    out->eliminated = (int)count1(st, "SELECT count(DISTINCT schedule_id) FROM racing_decisions WHERE sweep_id = ?1 AND "
                                      "eliminated = 1", sweep_id, 0, 0, &rc, err, errlen);
    out->survivors = out->rounds_decided == 0 ? (int)nsched
                   : (int)count1(st, "SELECT survivors FROM racing_rounds WHERE sweep_id = ?1 AND round = ?2",
                                 sweep_id, out->rounds_decided, 0, &rc, err, errlen);
    out->fixed_jobs = (long long)cfg.max_seeds * nsched;
    return rc;
}

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }
static json_t *col_num(sqlite3_stmt *s, int c) {
    return sqlite3_column_type(s, c) == SQLITE_NULL ? json_null() : json_real(sqlite3_column_double(s, c));
}

json_t *racing_summary_json(store *st, long long sweep_id, const racing_summary *x, char *err, size_t errlen) {
    json_t *rounds = json_array();
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, "SELECT round, seeds, alpha, critical, family, survivors, next_seed, jobs_created, screened "
                                   "FROM racing_rounds WHERE sweep_id = ?1 ORDER BY round", -1, &s, NULL) != SQLITE_OK) {
        db_fail(st, err, errlen, "racing rounds");
        json_decref(rounds);
        return NULL;
    }
    sqlite3_bind_int64(s, 1, sweep_id);
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        json_t *o = json_pack("{s:i, s:i, s:f, s:o, s:i, s:i, s:i}", "round", sqlite3_column_int(s, 0), "seeds",
                              sqlite3_column_int(s, 1), "alpha", sqlite3_column_double(s, 2), "critical", col_num(s, 3),
                              "family", sqlite3_column_int(s, 4), "survivors", sqlite3_column_int(s, 5),
                              "jobs_created", sqlite3_column_int(s, 7));
        json_object_set_new(o, "next_seed", sqlite3_column_type(s, 6) == SQLITE_NULL ? json_null()
                                            : json_integer(sqlite3_column_int64(s, 6)));
        json_object_set_new(o, "screened", json_integer(sqlite3_column_int(s, 8)));
        json_array_append_new(rounds, o);
    }
    sqlite3_finalize(s);
    if (step != SQLITE_DONE) { db_fail(st, err, errlen, "racing rounds"); json_decref(rounds); return NULL; }
    /* the jobs the screen left out, round by round */
    json_t *scr = json_array();
    if (sqlite3_prepare_v2(st->db, "SELECT round, job_id, schedule_id, seed, val_loss, residual, threshold FROM racing_screened "
                                   "WHERE sweep_id = ?1 ORDER BY round, job_id", -1, &s, NULL) != SQLITE_OK) {
        db_fail(st, err, errlen, "racing screened");
        json_decref(rounds);
        json_decref(scr);
        return NULL;
    }
    sqlite3_bind_int64(s, 1, sweep_id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW)
        json_array_append_new(scr, json_pack("{s:i, s:I, s:I, s:I, s:f, s:o, s:o}", "round", sqlite3_column_int(s, 0),
                                             "job_id", (json_int_t)sqlite3_column_int64(s, 1), "schedule_id",
                                             (json_int_t)sqlite3_column_int64(s, 2), "seed", (json_int_t)sqlite3_column_int64(s, 3),
                                             "val_loss", sqlite3_column_double(s, 4), "residual", col_num(s, 5),
                                             "threshold", col_num(s, 6)));
    sqlite3_finalize(s);
    if (step != SQLITE_DONE) { db_fail(st, err, errlen, "racing screened"); json_decref(rounds); json_decref(scr); return NULL; }
    json_t *o = json_pack("{s:i, s:f, s:f, s:i, s:i, s:i, s:b, s:i, s:i, s:I, s:I, s:I, s:o}", "max_seeds", x->max_seeds,
                          "alpha", x->alpha, "alpha_per_round", x->alpha_bonferroni, "looks", x->looks, "first_round_seeds",
                          x->seeds0, "rounds_decided", x->rounds_decided, "finished", x->finished, "survivors",
                          x->survivors, "eliminated", x->eliminated, "seeds_spent", (json_int_t)x->jobs, "seeds_done",
                          (json_int_t)x->jobs_done, "fixed_design_seeds", (json_int_t)x->fixed_jobs, "rounds", rounds);
    if (o) json_object_set_new(o, "screened", scr); else json_decref(scr);
    if (o) {
        json_object_set_new(o, "alpha_round", num_or_null(x->alpha_round));
        json_object_set_new(o, "alpha_round_method", x->alpha_round_method[0] ? json_string(x->alpha_round_method) : json_null());
        json_object_set_new(o, "alpha_round_reps", json_integer(x->calib_reps));
        json_object_set_new(o, "alpha_round_null_rate", num_or_null(x->calib_rate));
        json_object_set_new(o, "alpha_round_null_rate_se", num_or_null(x->calib_rate_se));
    }
    if (o) json_object_set_new(o, "spent_fraction", num_or_null(x->fixed_jobs > 0 ? (double)x->jobs / x->fixed_jobs : NAN));
    return o;
}

int racing_annotate(store *st, ranking *r, char *err, size_t errlen) {
    racing_summary sm;
    int rc = racing_summarize(st, r->sweep_id, &sm, err, errlen);
    if (rc < 0) return rc == STORE_EINVAL ? STORE_OK : rc;
    if (!sm.enabled) return STORE_OK;
    json_t *o = racing_summary_json(st, r->sweep_id, &sm, err, errlen), *by = json_object();
    if (!o || !by) { json_decref(o); json_decref(by); return STORE_EIO; }
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, "SELECT schedule_id, round, eliminated, seeds, delta, ci_low, ci_high FROM racing_decisions "
                                   "WHERE sweep_id = ?1 ORDER BY schedule_id, round", -1, &s, NULL) != SQLITE_OK) {
        json_decref(o); json_decref(by);
        return db_fail(st, err, errlen, "racing decisions");
    }
    sqlite3_bind_int64(s, 1, r->sweep_id);
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)sqlite3_column_int64(s, 0));
        json_t *h = json_object_get(by, key);
        if (!h) { h = json_pack("{s:s, s:n, s:[]}", "status", "survivor", "eliminated_round", "rounds"); json_object_set_new(by, key, h); }
        int round = sqlite3_column_int(s, 1), el = sqlite3_column_int(s, 2);
        json_t *e = json_pack("{s:i, s:i, s:b, s:o, s:o, s:o}", "round", round, "seeds", sqlite3_column_int(s, 3),
                              "eliminated", el, "delta", col_num(s, 4), "ci_low", col_num(s, 5), "ci_high", col_num(s, 6));
        json_array_append_new(json_object_get(h, "rounds"), e);
        if (el) {
            json_object_set_new(h, "status", json_string("eliminated"));
            json_object_set_new(h, "eliminated_round", json_integer(round));
            for (int i = 0; i < r->nrows; i++) if (r->rows[i].schedule_id == sqlite3_column_int64(s, 0)) r->rows[i].race_round = round;
        }
    }
    sqlite3_finalize(s);
    if (step != SQLITE_DONE) { json_decref(o); json_decref(by); return db_fail(st, err, errlen, "racing decisions"); }
    json_object_set_new(o, "schedules", by);
    json_decref(r->racing);
    r->racing = o;
    return STORE_OK;
}
