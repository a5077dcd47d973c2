/* ranking_read.c — the one read of the store that feeds the ranking (ranking_read.h).
 *
 * Design: ranking.c is the method (the fit, the tests, the best group), pure over observations; this file is
 * where they come from: the sweep's row, its schedules, every job with its result (val loss, tokens/s, D_l, the
 * per-batch val losses), the rung values under halving, and halving's spend. It is its own file so the method
 * does not include the store's queries nor the plan, and ranking.c stays what the Monte Carlo tests link. The read
 * is ranking_build_from: a driver over one step per query (read_sweep, read_schedules, read_jobs, read_levels),
 * the rows' descriptions and observations (fill_rows), the caller's inputs, ranking_compute and halving's
 * settings (halving_json); every step shares one rread and leaves err set on a failure.
 */
#include "ranking_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobstate.h"
#include "plan.h"
#include "stats.h"

#define LEVELS (HALVING_MAX_RUNGS + 1)

typedef struct rjob {
    long long schedule, seed, id;
    int state;                      /* index into ranking_states, -1 unknown */
    unsigned char has[LEVELS];      /* a value at level l (rungs 0.., the final last) */
    double lv[LEVELS];
    double tok_per_s, val_se;       /* final level only; NAN when unknown */
    double *batches;                /* (nbatch) final per-batch val losses (owned) */
    int nbatch;
    double *attn;                   /* (nattn) final D_l (owned) */
    int nattn;
} rjob;

static double *json_numbers(const char *text, int *n, int cap) {
    *n = 0;
    if (!text) return NULL;
    json_t *a = json_loads(text, 0, NULL);
    double *v = NULL;
    if (json_is_array(a) && json_array_size(a) > 0 && json_array_size(a) <= (size_t)cap) {
        size_t len = json_array_size(a);
        v = malloc(len * sizeof *v);
        for (size_t i = 0; v && i < len; i++) {
            json_t *x = json_array_get(a, i);
            if (!json_is_number(x)) { free(v); v = NULL; break; }
            v[i] = json_number_value(x);
        }
        if (v) *n = (int)len;
    }
    json_decref(a);
    return v;
}

static int cmp_screened(const void *pa, const void *pb) {   /* level, then job id */
    const ranking_screened *a = pa, *b = pb;
    if (a->level != b->level) return a->level < b->level ? -1 : 1;
    return a->job_id < b->job_id ? -1 : a->job_id > b->job_id;
}

static int jobs_range(const rjob *jobs, int njob, long long id, int *end) {
    size_t e, lo = ranking_key_range(jobs, (size_t)njob, sizeof *jobs, offsetof(rjob, schedule), id, &e);
    *end = (int)e;
    return (int)lo;
}

void ranking_free(ranking *r) {
    if (!r) return;
    for (int i = 0; i < r->nrows; i++) {
        ranking_row *x = &r->rows[i];
        free(x->heads); free(x->train); free(x->seed); free(x->val); free(x->val_se);
        free(x->attn); free(x->attn_std); free(x->dattn); free(x->dattn_lo); free(x->dattn_hi);
    }
    free(r->rows);
    free(r->screened);
    ranking_fit_release(&r->fit);
    json_decref(r->halving);
    json_decref(r->racing);
    json_decref(r->search);
    free(r);
}

/* mean and sample std of v[0..n) (std NAN below 2) */
static void mean_std(const double *v, int n, double *mean, double *sd) {
    *mean = *sd = NAN;
    if (n <= 0) return;
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    *mean = s / n;
    if (n < 2) return;
    double q = 0;
    for (int i = 0; i < n; i++) q += (v[i] - *mean) * (v[i] - *mean);
    *sd = sqrt(q / (n - 1));
}

/* the descriptive fields of row i (its jobs [k0, k1) as seen at its level) */
static int describe_row(ranking_row *x, const rjob *jobs, int k0, int k1, int final) {
    int cnt = k1 - k0;
    x->seed = malloc((size_t)(cnt ? cnt : 1) * sizeof *x->seed);
    x->val = malloc((size_t)(cnt ? cnt : 1) * sizeof *x->val);
    x->val_se = malloc((size_t)(cnt ? cnt : 1) * sizeof *x->val_se);
    double *tps = malloc((size_t)(cnt ? cnt : 1) * sizeof *tps);
    if (!x->seed || !x->val || !x->val_se || !tps) { free(tps); return -1; }
    int ntps = 0;
    x->L = 0;
    for (int k = k0; k < k1; k++) {
        const rjob *j = &jobs[k];
        if (j->state >= 0) x->counts[j->state]++;
        if (j->state == JOB_CANCELLED) continue;   /* a cancelled job is no seed of the design */
        x->seeds_total++;
        if (!j->has[x->level]) continue;
        x->seed[x->nseeds] = j->seed;
        x->val[x->nseeds] = j->lv[x->level];
        x->val_se[x->nseeds] = final ? j->val_se : NAN;
        x->nseeds++;
        if (final && isfinite(j->tok_per_s)) tps[ntps++] = j->tok_per_s;
        if (final && j->attn && x->L == 0) x->L = j->nattn;
    }
    x->seeds_done = x->nseeds;
    mean_std(x->val, x->nseeds, &x->mean, &x->std);
    mean_std(tps, ntps, &x->tps_mean, &x->tps_std);
    free(tps);
    if (x->L > 0) {   /* D_l over the seeds that reported L layers */
        int L = x->L, na = 0;
        x->attn = calloc((size_t)L, sizeof *x->attn);
        x->attn_std = malloc((size_t)L * sizeof *x->attn_std);
        double *col = malloc((size_t)(cnt ? cnt : 1) * sizeof *col);
        if (!x->attn || !x->attn_std || !col) { free(col); return -1; }
        for (int l = 0; l < L; l++) {
            na = 0;
            for (int k = k0; k < k1; k++)
                if (jobs[k].has[x->level] && jobs[k].attn && jobs[k].nattn == L) col[na++] = jobs[k].attn[l];
            mean_std(col, na, &x->attn[l], &x->attn_std[l]);
        }
        free(col);
    }
    return 0;
}

/* ΔD_l of row x against the baseline b with the paired 95% CI per layer */
static int attn_delta(ranking_row *x, const ranking_row *b, const rjob *jobs, int x0, int x1, int b0, int b1) {
    if (x->L == 0 || b->L != x->L) return 0;
    int L = x->L;
    x->dattn = malloc((size_t)L * sizeof *x->dattn);
    x->dattn_lo = malloc((size_t)L * sizeof *x->dattn_lo);
    x->dattn_hi = malloc((size_t)L * sizeof *x->dattn_hi);
    double *d = malloc((size_t)(x1 - x0 + 1) * sizeof *d);
    if (!x->dattn || !x->dattn_lo || !x->dattn_hi || !d) { free(d); return -1; }
    for (int l = 0; l < L; l++) {
        int n = 0;
        for (int k = x0; k < x1; k++) {
            if (!jobs[k].attn || jobs[k].nattn != L || !jobs[k].has[x->level]) continue;
            for (int m = b0; m < b1; m++)
                if (jobs[m].seed == jobs[k].seed && jobs[m].attn && jobs[m].nattn == L && jobs[m].has[b->level]) {
                    d[n++] = jobs[k].attn[l] - jobs[m].attn[l];
                    break;
                }
        }
        x->dattn[l] = x->attn[l] - b->attn[l];
        x->dattn_lo[l] = x->dattn_hi[l] = NAN;
        if (n >= 2) {
            stats_paired sp;
            stats_paired_test(d, n, &sp);
            double h = stats_t_quantile(0.975, n - 1) * sp.sd / sqrt((double)n);
            x->dattn_lo[l] = x->dattn[l] - h;
            x->dattn_hi[l] = x->dattn[l] + h;
        }
    }
    free(d);
    return 0;
}

/* the read in progress: what ranking_build_from's steps share */
typedef struct rread {
    store *st;
    long long sweep_id;
    ranking *r;
    int design_seeds;               /* the spec's seeds per schedule (0: none stated: the most jobs) */
    rjob *jobs;                     /* (njob) by schedule, seed, id (owned, with their batches and attn) */
    int njob;
    halving_cfg hv;                 /* the sweep's halving policy (plan.h) */
    int K;                          /* halving rungs (0 without): levels 0..K-1 the rungs, level K the final result */
    ranking_obs *obs[LEVELS];       /* (nobs[l]) the observations at level l (owned) */
    int nobs[LEVELS];
    char *err;
    size_t errlen;
} rread;

/* STORE_EIO with "out of memory" in err; s (NULL: none) finalized */
static int read_nomem(rread *rd, sqlite3_stmt *s) {
    snprintf(rd->err, rd->errlen, "out of memory");
    sqlite3_finalize(s);
    return STORE_EIO;
}

/* STORE_EIO with SQLite's message in err; s (NULL: none) finalized after the message is read */
static int read_dberr(rread *rd, sqlite3_stmt *s) {
    snprintf(rd->err, rd->errlen, "ranking: database read failed: %s (%s)", sqlite3_errmsg(rd->st->db), rd->st->path);
    sqlite3_finalize(s);
    return STORE_EIO;
}

/* the sweep's name, architecture and the spec's seeds: STORE_OK, STORE_ENOTFOUND or STORE_EIO */
static int read_sweep(rread *rd) {
    ranking *r = rd->r;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(rd->st->db, "SELECT name, json_extract(spec, '$.model.arch'), "
                           "coalesce(json_array_length(spec, '$.seeds'), 0) FROM sweeps WHERE id = ?1", -1, &s,
                           NULL) != SQLITE_OK) return read_dberr(rd, s);
    sqlite3_bind_int64(s, 1, rd->sweep_id);
    int step = sqlite3_step(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE) return read_dberr(rd, s);
    if (step != SQLITE_ROW) {
        snprintf(rd->err, rd->errlen, "no sweep %lld", rd->sweep_id);
        sqlite3_finalize(s);
        return STORE_ENOTFOUND;
    }
    snprintf(r->name, sizeof r->name, "%s", (const char *)sqlite3_column_text(s, 0));
    rd->design_seeds = sqlite3_column_int(s, 2);   /* the spec's seeds per schedule (0: none stated: the most jobs) */
    r->seeds = rd->design_seeds > 0 ? rd->design_seeds : 0;
    if (sqlite3_column_type(s, 1) == SQLITE_TEXT) snprintf(r->arch, sizeof r->arch, "%s", (const char *)sqlite3_column_text(s, 1));
    sqlite3_finalize(s);
    return STORE_OK;
}

/* one row per schedule, in the sweep's order, with no value yet: STORE_OK or STORE_EIO */
static int read_schedules(rread *rd) {
    ranking *r = rd->r;
    sqlite3_stmt *s = NULL;
    int cap = 0, step;
    if (sqlite3_prepare_v2(rd->st->db, "SELECT id, heads, is_baseline, ord, train FROM schedules WHERE sweep_id = ?1 ORDER BY ord, id",
                           -1, &s, NULL) != SQLITE_OK) return read_dberr(rd, s);
    sqlite3_bind_int64(s, 1, rd->sweep_id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (r->nrows == cap) {
            cap = cap ? cap * 2 : 64;
            ranking_row *nn = realloc(r->rows, (size_t)cap * sizeof *nn);
            if (!nn) return read_nomem(rd, s);
            r->rows = nn;
        }
        ranking_row *x = &r->rows[r->nrows++];
        memset(x, 0, sizeof *x);
        x->schedule_id = sqlite3_column_int64(s, 0);
        if (!(x->heads = strdup((const char *)sqlite3_column_text(s, 1)))) return read_nomem(rd, s);
        if (!(x->train = strdup((const char *)sqlite3_column_text(s, 4)))) return read_nomem(rd, s);
        x->is_baseline = sqlite3_column_int(s, 2);
        x->ord = sqlite3_column_int(s, 3);
        x->mean = x->std = x->tps_mean = x->tps_std = NAN;
        ranking_cmp_clear(&x->cmp);   /* no comparison yet (ranking_compute fills it) */
    }
    if (step != SQLITE_DONE) return read_dberr(rd, s);   /* a read error is not the end of the rows */
    sqlite3_finalize(s);
    return STORE_OK;
}

/* every job of the sweep with its final result (at level 0 until read_levels moves it): STORE_OK or STORE_EIO */
static int read_jobs(rread *rd) {
    sqlite3_stmt *s = NULL;
    int cap = 0, step;
    if (sqlite3_prepare_v2(rd->st->db, "SELECT j.schedule_id, j.seed, j.state, r.val_loss, r.tok_per_s, r.attn_distance, "
                                       "json_extract(r.result, '$.val_loss_se'), json_extract(r.result, '$.val_loss_batches'), j.id "
                                       "FROM jobs j LEFT JOIN results r ON r.job_id = j.id WHERE j.sweep_id = ?1 "
                                       "ORDER BY j.schedule_id, j.seed, j.id",
                           -1, &s, NULL) != SQLITE_OK) return read_dberr(rd, s);
    sqlite3_bind_int64(s, 1, rd->sweep_id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (rd->njob == cap) {
            cap = cap ? cap * 2 : 256;
            rjob *nn = realloc(rd->jobs, (size_t)cap * sizeof *nn);
            if (!nn) return read_nomem(rd, s);
            rd->jobs = nn;
        }
        rjob *j = &rd->jobs[rd->njob++];
        memset(j, 0, sizeof *j);
        j->schedule = sqlite3_column_int64(s, 0);
        j->seed = sqlite3_column_int64(s, 1);
        j->id = sqlite3_column_int64(s, 8);
        j->state = -1;
        const char *stt = (const char *)sqlite3_column_text(s, 2);
        job_state js;
        if (jobstate_parse(stt, &js) == 0) j->state = (int)js;
        j->has[0] = j->state == JOB_DONE && sqlite3_column_type(s, 3) != SQLITE_NULL;   /* moved to the final level below */
        j->lv[0] = sqlite3_column_double(s, 3);
        j->tok_per_s = sqlite3_column_type(s, 4) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 4);
        j->attn = json_numbers((const char *)sqlite3_column_text(s, 5), &j->nattn, 4096);
        j->val_se = sqlite3_column_type(s, 6) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 6);
        j->batches = json_numbers((const char *)sqlite3_column_text(s, 7), &j->nbatch, 1 << 20);
    }
    if (step != SQLITE_DONE) return read_dberr(rd, s);
    sqlite3_finalize(s);
    return STORE_OK;
}

/* halving: levels 0..K-1 are the rungs (rung_results), level K the final result. STORE_OK or STORE_EIO */
static int read_levels(rread *rd) {
    ranking *r = rd->r;
    sweep_plan plan;
    if (plan_load(rd->st, rd->sweep_id, &plan, rd->err, rd->errlen) == STORE_EIO) return STORE_EIO;
    rd->hv = plan.halving;
    const halving_cfg *hv = &rd->hv;
    int K = rd->K = hv->enabled ? hv->nrungs : 0;
    r->nrungs = K;
    for (int l = 0; l <= K && l < 17; l++) r->rung_step[l] = hv->enabled ? hv->step[l] : 0;
    if (K == 0) return STORE_OK;
    rjob *jobs = rd->jobs;
    for (int k = 0; k < rd->njob; k++) {
        jobs[k].has[K] = jobs[k].has[0]; jobs[k].lv[K] = jobs[k].lv[0];
        jobs[k].has[0] = 0;
    }
    sqlite3_stmt *s = NULL;
    int step;
    if (sqlite3_prepare_v2(rd->st->db, "SELECT j.schedule_id, j.seed, rr.rung, rr.val_loss FROM rung_results rr JOIN jobs j "
                                       "ON j.id = rr.job_id WHERE j.sweep_id = ?1", -1, &s, NULL) != SQLITE_OK) return read_dberr(rd, s);
    sqlite3_bind_int64(s, 1, rd->sweep_id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        int rg = sqlite3_column_int(s, 2), e;
        if (rg < 0 || rg >= K) continue;
        long long seed = sqlite3_column_int64(s, 1);
        for (int k = jobs_range(jobs, rd->njob, sqlite3_column_int64(s, 0), &e); k < e; k++)
            if (jobs[k].seed == seed) { jobs[k].has[rg] = 1; jobs[k].lv[rg] = sqlite3_column_double(s, 3); }
    }
    if (step != SQLITE_DONE) return read_dberr(rd, s);
    sqlite3_finalize(s);
    return STORE_OK;
}

/* the level row x is shown at (its jobs [k0, k1)): at_rung, or without it the highest any of its jobs reached */
static int row_level(const rread *rd, int k0, int k1, int at_rung) {
    int K = rd->K;
    if (at_rung >= 0 || K == 0) return at_rung >= 0 ? at_rung : K;
    int top = -1;
    for (int k = k0; k < k1; k++)
        for (int l = K; l > top; l--) if (rd->jobs[k].has[l]) { top = l; break; }
    return top >= 0 ? top : 0;
}

/* row i's jobs [k0, k1) as observations at every level they have a value at */
static void add_obs(rread *rd, int i, int k0, int k1) {
    const rjob *jobs = rd->jobs;
    int K = rd->K;
    for (int k = k0; k < k1; k++)
        for (int l = 0; l <= K; l++)
            if (jobs[k].has[l]) {
                ranking_obs *o = &rd->obs[l][rd->nobs[l]++];
                o->sched = i;
                o->seed = jobs[k].seed;
                o->job_id = jobs[k].id;
                o->y = jobs[k].lv[l];
                o->batches = l == K ? jobs[k].batches : NULL;
                o->nbatch = l == K ? jobs[k].nbatch : 0;
            }
}

/* each schedule's level, its descriptive fields, the per-level observations and ΔD_l against the baseline (row
 * *base, -1 without). STORE_OK or STORE_EIO (no memory) */
static int fill_rows(rread *rd, int at_rung, int *base) {
    ranking *r = rd->r;
    const rjob *jobs = rd->jobs;
    int njob = rd->njob, K = rd->K;
    *base = -1;
    for (int i = 0; i < r->nrows; i++) if (r->rows[i].is_baseline) { *base = i; r->baseline_id = r->rows[i].schedule_id; break; }
    for (int l = 0; l <= K; l++)
        if (!(rd->obs[l] = malloc((size_t)(njob ? njob : 1) * sizeof *rd->obs[l]))) return read_nomem(rd, NULL);
    for (int i = 0; i < r->nrows; i++) {
        ranking_row *x = &r->rows[i];
        int e, k0 = jobs_range(jobs, njob, x->schedule_id, &e);
        x->level = row_level(rd, k0, e, at_rung);
        if (describe_row(x, jobs, k0, e, x->level == K) < 0) return read_nomem(rd, NULL);
        x->pruned = x->counts[JOB_PRUNED] > 0;
        if (rd->design_seeds <= 0 && x->seeds_total > r->seeds) r->seeds = x->seeds_total;
        add_obs(rd, i, k0, e);
    }
    for (int i = 0; i < r->nrows; i++) {
        ranking_row *x = &r->rows[i];
        x->provisional = x->seeds_done < r->seeds;
        if (*base >= 0 && i != *base) {
            int xe, x0 = jobs_range(jobs, njob, x->schedule_id, &xe), be, b0 = jobs_range(jobs, njob, r->baseline_id, &be);
            if (attn_delta(x, &r->rows[*base], jobs, x0, xe, b0, be) < 0) return read_nomem(rd, NULL);
        }
    }
    return STORE_OK;
}

/* halving: its settings and the steps (tokens) spent against the full grid's, into r->halving. STORE_OK or
 * STORE_EIO */
static int halving_json(rread *rd) {
    const halving_cfg *hv = &rd->hv;
    int K = rd->K;
    long long trained = 0, full = 0, tps = 0;
    if (halving_steps(rd->st, rd->sweep_id, &trained, &full, rd->err, rd->errlen) < 0) return STORE_EIO;
    /* tokens per step: the jobs' column (the job model's, filled at create; the same for every job of a sweep) */
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(rd->st->db, "SELECT coalesce(max(tokens_per_step), 0) FROM jobs WHERE sweep_id = ?1", -1, &s,
                           NULL) != SQLITE_OK) return read_dberr(rd, s);
    sqlite3_bind_int64(s, 1, rd->sweep_id);
    if (sqlite3_step(s) == SQLITE_ROW) tps = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    json_t *fr = json_array(), *stp = json_array();
    for (int g = 0; g < K; g++) json_array_append_new(fr, json_real(hv->frac[g]));
    for (int g = 0; g <= K; g++) json_array_append_new(stp, json_integer(hv->step[g]));
    rd->r->halving = json_pack("{s:i, s:s, s:o, s:o, s:I, s:I, s:I, s:I}", "eta", hv->eta, "mode", hv->async ? "async" : "sync",
                               "rungs", fr, "rung_steps", stp, "steps_trained", (json_int_t)trained,
                               "full_grid_steps", (json_int_t)full, "tokens_spent", (json_int_t)(trained * tps),
                               "full_grid_tokens", (json_int_t)(full * tps));
    return rd->r->halving ? STORE_OK : read_nomem(rd, NULL);
}

int ranking_build_from(store *st, long long sweep_id, int at_rung, const ranking_input *inputs, int ninputs,
                       ranking **out, char *err, size_t errlen) {
    *out = NULL;
    rread rd = {.st = st, .sweep_id = sweep_id, .err = err, .errlen = errlen};
    int rc, base = -1;
    if (!(rd.r = calloc(1, sizeof *rd.r))) { rc = read_nomem(&rd, NULL); goto out; }
    rd.r->sweep_id = sweep_id;
    rd.r->baseline_id = -1;
    snprintf(rd.r->arch, sizeof rd.r->arch, "gpt2");
    if ((rc = read_sweep(&rd)) != STORE_OK || (rc = read_schedules(&rd)) != STORE_OK || (rc = read_jobs(&rd)) != STORE_OK ||
        (rc = read_levels(&rd)) != STORE_OK)
        goto out;
    if (at_rung > rd.K) at_rung = rd.K;
    if ((rc = fill_rows(&rd, at_rung, &base)) != STORE_OK) goto out;
    rc = STORE_EIO;
    for (int i = 0; i < ninputs; i++)   /* the caller's inputs: racing's eliminations, a search's posteriors */
        if (inputs[i](st, rd.r, err, errlen) < 0) goto out;
    if (ranking_compute(rd.r, rd.obs, rd.nobs, rd.K + 1, base) < 0) { rc = read_nomem(&rd, NULL); goto out; }
    if (rd.r->nscreened > 1) qsort(rd.r->screened, (size_t)rd.r->nscreened, sizeof *rd.r->screened, cmp_screened);
    if (rd.K > 0 && (rc = halving_json(&rd)) != STORE_OK) goto out;
    *out = rd.r;
    rd.r = NULL;
    rc = STORE_OK;
out:
    for (int k = 0; k < rd.njob; k++) { free(rd.jobs[k].batches); free(rd.jobs[k].attn); }
    free(rd.jobs);
    for (int l = 0; l < LEVELS; l++) free(rd.obs[l]);
    ranking_free(rd.r);
    return rc;
}

int ranking_load_final(store *st, long long sweep_id, const long long *ids, int n, ranking_obs **obs, int *nobs,
                       char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    ranking_obs *v = NULL;
    int cap = 0, k = 0, step;
    *obs = NULL;
    *nobs = 0;
    if (sqlite3_prepare_v2(st->db, "SELECT j.schedule_id, j.seed, r.val_loss, j.id FROM jobs j JOIN results r ON r.job_id = j.id "
                                   "WHERE j.sweep_id = ?1 AND j.state = 'done' AND r.val_loss IS NOT NULL", -1, &s, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "results: %s", sqlite3_errmsg(st->db));
        return STORE_EIO;
    }
    sqlite3_bind_int64(s, 1, sweep_id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        long long id = sqlite3_column_int64(s, 0);
        int lo = 0, hi = n;   /* ids[] ascending */
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (ids[mid] < id) lo = mid + 1; else hi = mid;
        }
        if (lo >= n || ids[lo] != id) continue;
        if (k == cap) {
            cap = cap ? cap * 2 : 256;
            ranking_obs *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) { free(v); sqlite3_finalize(s); snprintf(err, errlen, "out of memory"); return STORE_EIO; }
            v = nv;
        }
        v[k++] = (ranking_obs){ lo, sqlite3_column_int64(s, 1), sqlite3_column_double(s, 2), NULL, 0, sqlite3_column_int64(s, 3) };
    }
    if (step != SQLITE_DONE) snprintf(err, errlen, "results: %s", sqlite3_errmsg(st->db));
    sqlite3_finalize(s);
    if (step != SQLITE_DONE) { free(v); return STORE_EIO; }
    *obs = v;
    *nobs = k;
    return STORE_OK;
}
