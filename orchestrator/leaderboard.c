/* leaderboard.c — ranking a sweep's schedules against the uniform baseline, and `prism-sweep leaderboard`.
 *
 * Design: two reads (the sweep's schedules in order; every job with its result) fill plain arrays; all
 * statistics are computed in C. Differences of a few thousandths of a nat with stds of ~0.002 are the
 * normal case (PAPER.md), so the comparison that matters is the paired one: for each seed both the schedule
 * and the baseline finished, the same seed means the same init and data order, and the per-seed difference
 * removes most of the seed-to-seed variance. Its 95% CI uses Student's t with n−1 degrees of freedom
 * (tabulated for df ≤ 30, interpolated in 1/df beyond). `prism-sweep leaderboard` prints it (cmd_leaderboard.c).
 */
#include "leaderboard.h"
#include "leaderboard_zeroshot.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halving.h"
#include "stats.h"
#include "sweeps.h"
#include "http.h"

double leaderboard_t975(int df) {
    static const double t[31] = { 0, 12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
                                  2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
                                  2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423 };
    if (df < 1) return NAN;
    if (df <= 30) return t[df];
    static const double dfs[] = { 30, 40, 60, 120, INFINITY }, ts[] = { 2.0423, 2.0211, 2.0003, 1.9799, 1.9600 };
    for (int i = 0; i < 4; i++)
        if (df <= dfs[i + 1]) {
            double x0 = 1 / dfs[i], x1 = i + 1 == 4 ? 0 : 1 / dfs[i + 1], x = 1.0 / df;
            return ts[i] + (ts[i + 1] - ts[i]) * (x0 - x) / (x0 - x1);
        }
    return 1.96;
}

#define LB_LEVELS (HALVING_MAX_RUNGS + 1)
#define LB_NSTATES 7

typedef struct lb_job {
    long long schedule, seed;
    char state[16];
    int has_result;                 /* the value at its schedule's level (below) */
    double val_loss, tok_per_s;     /* tok_per_s NAN when unknown */
    json_t *attn;                   /* array or NULL; owned */
    /* halving: the val loss at each level (rung 0.. ; the last level = the final result); one level without halving */
    unsigned char has[LB_LEVELS];
    double lv[LB_LEVELS];
} lb_job;

typedef struct lb_sched {
    long long id;
    char *heads;                    /* canonical text, malloc'd (L layers: no fixed bound) */
    int is_baseline;
    int ord;
    int counts[LB_NSTATES];
    int seeds_total, seeds_done;
    double mean, std;               /* NAN when unknown */
} lb_sched;

#define LB_ALPHA 0.05   /* family-wise error rate of the markers and of the tied-for-best group */

static const char *const STATES[LB_NSTATES] = { "queued", "leased", "done", "failed", "cancelled", "paused", "pruned" };

/* A number, or null where it is not finite (json_real refuses inf and NaN: appended to an array, the element
 * would vanish and every later one shift — a 4-layer D_l array came back with 3 entries). */
static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

size_t leaderboard_key_range(const void *base, size_t n, size_t size, size_t key_off, long long id, size_t *end) {
#define KEY(i) (*(const long long *)((const char *)base + (i) * size + key_off))
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (KEY(mid) < id) lo = mid + 1; else hi = mid;
    }
    size_t e = lo;
    while (e < n && KEY(e) == id) e++;
#undef KEY
    *end = e;
    return lo;
}

/* jobs[] is sorted by schedule id: the first of schedule id's jobs, and in *end one past its last. Keeps the
 * leaderboard O(jobs log jobs): a scan of every job per schedule stalls the server on sweeps of 10^4+ schedules. */
static int jobs_range(const lb_job *jobs, int njob, long long id, int *end) {
    size_t e, lo = leaderboard_key_range(jobs, (size_t)njob, sizeof *jobs, offsetof(lb_job, schedule), id, &e);
    *end = (int)e;
    return (int)lo;
}

static int cmp_rows(const void *pa, const void *pb) {
    const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
    long long la = json_integer_value(json_object_get(a, "_lvl")), lb = json_integer_value(json_object_get(b, "_lvl"));
    if (la != lb) return la > lb ? -1 : 1;   /* halving: the highest rung reached first */
    json_t *ka = json_object_get(a, "_key"), *kb = json_object_get(b, "_key");
    int ha = json_is_number(ka), hb = json_is_number(kb);
    if (ha != hb) return ha ? -1 : 1;
    if (ha) {
        int pa_ = json_is_true(json_object_get(a, "provisional")), pb_ = json_is_true(json_object_get(b, "provisional"));
        if (pa_ != pb_) return pa_ ? 1 : -1;
        double x = json_number_value(ka), y = json_number_value(kb);
        if (x < y) return -1;
        if (x > y) return 1;
    }
    long long oa = json_integer_value(json_object_get(a, "_ord")), ob = json_integer_value(json_object_get(b, "_ord"));
    return oa < ob ? -1 : oa > ob;
}

/* d[k] = loss(schedule a, seed) − loss(schedule b, seed) over the seeds both reached at level lvl (the final
 * result without halving), at most cap; returns the count */
static int paired_diffs(const lb_job *jobs, int njob, long long a, long long b, int lvl, double *d, int cap) {
    int n = 0, aend, bend, a0 = jobs_range(jobs, njob, a, &aend), b0 = jobs_range(jobs, njob, b, &bend);
    for (int k = a0; k < aend && n < cap; k++) {
        if (!jobs[k].has[lvl]) continue;
        for (int m = b0; m < bend; m++)
            if (jobs[m].seed == jobs[k].seed && jobs[m].has[lvl]) {
                d[n++] = jobs[k].lv[lvl] - jobs[m].lv[lvl];
                break;
            }
    }
    return n;
}

/* Marks rows arr[0..nranked-1] (sorted, arr[0] the best) with "tied_best" and "vs_best"; returns the size of the
 * Holm family (nranked − 1) or -1 on no memory. */
static int tied_for_best(const lb_job *jobs, int njob, const lb_sched *sc, json_t **arr, int nranked) {
    /* halving: only the schedules at the best one's rung are compared with it */
    long long best_lvl = json_integer_value(json_object_get(arr[0], "_lvl"));
    while (nranked > 1 && json_integer_value(json_object_get(arr[nranked - 1], "_lvl")) != best_lvl) nranked--;
    double *p = malloc((size_t)nranked * sizeof *p), *adj = malloc((size_t)nranked * sizeof *adj);
    stats_paired *pt = malloc((size_t)nranked * sizeof *pt);
    if (!p || !adj || !pt) { free(p); free(adj); free(pt); return -1; }
    long long best = sc[json_integer_value(json_object_get(arr[0], "_idx"))].id;
    for (int r = 0; r < nranked; r++) {
        p[r] = NAN;
        if (r == 0) continue;
        double d[4096];
        int n = paired_diffs(jobs, njob, sc[json_integer_value(json_object_get(arr[r], "_idx"))].id, best, (int)best_lvl, d, 4096);
        stats_paired_test(d, n, &pt[r]);
        if (n > 1) p[r] = pt[r].p;
    }
    int m = stats_holm(p + 1, nranked - 1, nranked - 1, adj + 1);
    json_object_set_new(arr[0], "tied_best", json_true());
    for (int r = 1; r < nranked; r++) {
        int sig = isfinite(adj[r]) && adj[r] < LB_ALPHA;
        json_object_set_new(arr[r], "tied_best", json_boolean(!sig));
        json_object_set_new(arr[r], "vs_best", json_pack("{s:i, s:o, s:o, s:o}", "n", pt[r].n, "mean", num_or_null(pt[r].mean),
                                                         "p", num_or_null(p[r]), "p_holm", num_or_null(adj[r])));
    }
    free(p);
    free(adj);
    free(pt);
    return m;
}

static int lb_build(store *st, long long sweep_id, int at_rung, json_t **out, char *err, size_t errlen);

int leaderboard_build(store *st, long long sweep_id, json_t **out, char *err, size_t errlen) {
    return lb_build(st, sweep_id, -1, out, err, errlen);
}

int leaderboard_build_at_rung(store *st, long long sweep_id, int rung, json_t **out, char *err, size_t errlen) {
    return lb_build(st, sweep_id, rung, out, err, errlen);
}

/* at_rung < 0: each schedule at the highest level it reached; else every schedule at level at_rung. */
static int lb_build(store *st, long long sweep_id, int at_rung, json_t **out, char *err, size_t errlen) {
    *out = NULL;
    int *lvl = NULL;
    sqlite3_stmt *s = NULL;
    lb_sched *sc = NULL;
    lb_job *jobs = NULL;
    int nsc = 0, njob = 0, rc = STORE_EIO;
    json_t *rows = NULL;
    char name[256] = "", arch[16] = "gpt2";
    if (sqlite3_prepare_v2(st->db, "SELECT name, json_extract(spec, '$.model.arch') FROM sweeps WHERE id = ?1", -1, &s,
                           NULL) != SQLITE_OK) goto dberr;
    sqlite3_bind_int64(s, 1, sweep_id);
    int step = sqlite3_step(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE) goto dberr;
    if (step != SQLITE_ROW) {
        snprintf(err, errlen, "no sweep %lld", sweep_id);
        rc = STORE_ENOTFOUND;
        goto out;
    }
    snprintf(name, sizeof name, "%s", (const char *)sqlite3_column_text(s, 0));
    if (sqlite3_column_type(s, 1) == SQLITE_TEXT) snprintf(arch, sizeof arch, "%s", (const char *)sqlite3_column_text(s, 1));
    sqlite3_finalize(s);
    s = NULL;

    if (sqlite3_prepare_v2(st->db, "SELECT id, heads, is_baseline, ord FROM schedules WHERE sweep_id = ?1 ORDER BY ord, id",
                           -1, &s, NULL) != SQLITE_OK) goto dberr;
    sqlite3_bind_int64(s, 1, sweep_id);
    int cap = 0;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (nsc == cap) {
            cap = cap ? cap * 2 : 64;
            lb_sched *n = realloc(sc, (size_t)cap * sizeof *sc);
            if (!n) goto nomem;
            sc = n;
        }
        lb_sched *x = &sc[nsc++];
        memset(x, 0, sizeof *x);
        x->id = sqlite3_column_int64(s, 0);
        if (!(x->heads = strdup((const char *)sqlite3_column_text(s, 1)))) goto nomem;
        x->is_baseline = sqlite3_column_int(s, 2);
        x->ord = sqlite3_column_int(s, 3);
        x->mean = x->std = NAN;
    }
    if (step != SQLITE_DONE) goto dberr;   /* a read error is not the end of the rows */
    sqlite3_finalize(s);
    s = NULL;

    if (sqlite3_prepare_v2(st->db, "SELECT j.schedule_id, j.seed, j.state, r.val_loss, r.tok_per_s, r.attn_distance "
                                   "FROM jobs j LEFT JOIN results r ON r.job_id = j.id WHERE j.sweep_id = ?1 "
                                   "ORDER BY j.schedule_id, j.seed, j.id",
                           -1, &s, NULL) != SQLITE_OK) goto dberr;
    sqlite3_bind_int64(s, 1, sweep_id);
    cap = 0;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (njob == cap) {
            cap = cap ? cap * 2 : 256;
            lb_job *n = realloc(jobs, (size_t)cap * sizeof *jobs);
            if (!n) goto nomem;
            jobs = n;
        }
        lb_job *j = &jobs[njob++];
        memset(j, 0, sizeof *j);
        j->schedule = sqlite3_column_int64(s, 0);
        j->seed = sqlite3_column_int64(s, 1);
        snprintf(j->state, sizeof j->state, "%s", (const char *)sqlite3_column_text(s, 2));
        j->has_result = strcmp(j->state, "done") == 0 && sqlite3_column_type(s, 3) != SQLITE_NULL;
        j->val_loss = sqlite3_column_double(s, 3);
        j->has[0] = (unsigned char)j->has_result;   /* moved to the final level below when the sweep has rungs */
        j->lv[0] = j->val_loss;
        j->tok_per_s = sqlite3_column_type(s, 4) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 4);
        if (sqlite3_column_type(s, 5) != SQLITE_NULL) {
            j->attn = json_loads((const char *)sqlite3_column_text(s, 5), 0, NULL);
            if (!json_is_array(j->attn)) { json_decref(j->attn); j->attn = NULL; }
        }
    }
    if (step != SQLITE_DONE) goto dberr;
    sqlite3_finalize(s);
    s = NULL;

    /* halving: levels 0..K-1 are the rungs (rung_results), level K the final result; each schedule is shown at
     * the highest level any of its seeds reached (or at at_rung) */
    halving_cfg hv;
    if (halving_load(st, sweep_id, &hv, err, errlen) == STORE_EIO) goto out_rc;
    int K = hv.enabled ? hv.nrungs : 0;
    if (at_rung > K) at_rung = K;
    if (K > 0) {
        for (int k = 0; k < njob; k++) {
            jobs[k].has[K] = jobs[k].has[0]; jobs[k].lv[K] = jobs[k].lv[0];
            jobs[k].has[0] = 0;
        }
        if (sqlite3_prepare_v2(st->db, "SELECT j.schedule_id, j.seed, rr.rung, rr.val_loss FROM rung_results rr JOIN jobs j "
                                       "ON j.id = rr.job_id WHERE j.sweep_id = ?1", -1, &s, NULL) != SQLITE_OK) goto dberr;
        sqlite3_bind_int64(s, 1, sweep_id);
        while ((step = sqlite3_step(s)) == SQLITE_ROW) {
            int r = sqlite3_column_int(s, 2), e;
            if (r < 0 || r >= K) continue;
            long long seed = sqlite3_column_int64(s, 1);
            for (int k = jobs_range(jobs, njob, sqlite3_column_int64(s, 0), &e); k < e; k++)
                if (jobs[k].seed == seed) { jobs[k].has[r] = 1; jobs[k].lv[r] = sqlite3_column_double(s, 3); }
        }
        if (step != SQLITE_DONE) goto dberr;
        sqlite3_finalize(s);
        s = NULL;
    }
    if (!(lvl = malloc((size_t)(nsc ? nsc : 1) * sizeof *lvl))) goto nomem;
    for (int i = 0; i < nsc; i++) {
        int e, k0 = jobs_range(jobs, njob, sc[i].id, &e);
        lvl[i] = at_rung >= 0 ? at_rung : K;
        if (at_rung < 0 && K > 0) {
            int top = -1;
            for (int k = k0; k < e; k++)
                for (int l = K; l > top; l--) if (jobs[k].has[l]) { top = l; break; }
            lvl[i] = top >= 0 ? top : 0;
        }
        for (int k = k0; k < e; k++) {   /* each job as seen at its schedule's level */
            jobs[k].has_result = jobs[k].has[lvl[i]];
            jobs[k].val_loss = jobs[k].lv[lvl[i]];
            if (lvl[i] != K) {   /* tokens/s and D_l come with the final result only */
                jobs[k].tok_per_s = NAN;
                json_decref(jobs[k].attn);
                jobs[k].attn = NULL;
            }
        }
    }

    /* per schedule: counts, mean ± std, tok/s, mean D_l */
    int base = -1;
    for (int i = 0; i < nsc; i++) if (sc[i].is_baseline) { base = i; break; }
    json_t **attn_mean = calloc((size_t)(nsc ? nsc : 1), sizeof *attn_mean);
    if (!attn_mean) goto nomem;
    rows = json_array();
    for (int i = 0; i < nsc; i++) {
        lb_sched *x = &sc[i];
        double sum = 0, sum2 = 0, tps = 0;
        int ntps = 0, nattn = 0;
        double acc[1024];
        int L = -1;
        json_t *vl = json_array();
        int kend, k0 = jobs_range(jobs, njob, x->id, &kend);
        for (int k = k0; k < kend; k++) {
            lb_job *j = &jobs[k];
            if (j->schedule != x->id) continue;
            x->seeds_total++;
            for (int q = 0; q < LB_NSTATES; q++) if (strcmp(j->state, STATES[q]) == 0) x->counts[q]++;
            if (!j->has_result) continue;
            x->seeds_done++;
            sum += j->val_loss;
            sum2 += j->val_loss * j->val_loss;
            json_array_append_new(vl, json_pack("{s:I, s:o}", "seed", (json_int_t)j->seed, "val_loss", num_or_null(j->val_loss)));
            if (isfinite(j->tok_per_s)) { tps += j->tok_per_s; ntps++; }
            if (j->attn) {
                int n = (int)json_array_size(j->attn);
                if (n > 1024) n = 1024;
                if (L < 0) { L = n; memset(acc, 0, sizeof acc); }
                if (n == L) {
                    for (int l = 0; l < L; l++) acc[l] += json_number_value(json_array_get(j->attn, l));
                    nattn++;
                }
            }
        }
        int n = x->seeds_done;
        if (n > 0) x->mean = sum / n;
        if (n > 1) {
            /* two-pass for accuracy */
            double ss = 0;
            for (int k = k0; k < kend; k++)
                if (jobs[k].schedule == x->id && jobs[k].has_result) ss += (jobs[k].val_loss - x->mean) * (jobs[k].val_loss - x->mean);
            x->std = sqrt(ss / (n - 1));
        }
        (void)sum2;
        json_t *attn_std = json_null();
        double tps_mean = ntps ? tps / ntps : NAN, tps_std = NAN;
        if (ntps > 1) {   /* two-pass std of tok/s */
            double q = 0;
            for (int k = k0; k < kend; k++)
                if (jobs[k].has_result && isfinite(jobs[k].tok_per_s)) q += (jobs[k].tok_per_s - tps_mean) * (jobs[k].tok_per_s - tps_mean);
            tps_std = sqrt(q / (ntps - 1));
        }
        if (nattn > 0) {
            attn_mean[i] = json_array();
            for (int l = 0; l < L; l++) json_array_append_new(attn_mean[i], num_or_null(acc[l] / nattn));
            if (nattn > 1) {   /* two-pass std of each D_l over the seeds that reported L layers */
                json_decref(attn_std);
                attn_std = json_array();
                for (int l = 0; l < L; l++) {
                    double m = acc[l] / nattn, q = 0;
                    for (int k = k0; k < kend; k++)
                        if (jobs[k].has_result && jobs[k].attn && (int)json_array_size(jobs[k].attn) == L) {
                            double v = json_number_value(json_array_get(jobs[k].attn, (size_t)l)) - m;
                            q += v * v;
                        }
                    json_array_append_new(attn_std, num_or_null(sqrt(q / (nattn - 1))));
                }
            }
        }
        json_t *counts = json_object();
        for (int q = 0; q < LB_NSTATES; q++) json_object_set_new(counts, STATES[q], json_integer(x->counts[q]));
        json_t *row = json_pack("{s:o, s:I, s:o, s:b, s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:I}",
                                "rank", json_null(), "schedule_id", (json_int_t)x->id, "heads", sweeps_heads_json(x->heads),
                                "is_baseline", x->is_baseline, "seeds_done", x->seeds_done, "seeds_total", x->seeds_total,
                                "counts", counts, "val_loss_mean", num_or_null(x->mean), "val_loss_std", num_or_null(x->std),
                                "val_losses", vl, "tok_per_s_mean", num_or_null(tps_mean),
                                "_ord", (json_int_t)x->ord);
        json_object_set(row, "attn_distance", attn_mean[i] ? attn_mean[i] : json_null());
        json_object_set_new(row, "attn_distance_std", attn_std);
        json_object_set_new(row, "tok_per_s_std", num_or_null(tps_std));
        json_object_set_new(row, "_lvl", json_integer(lvl[i]));
        if (K > 0) {   /* halving: the rung shown (K = the full run), its step, and whether the schedule was pruned */
            json_object_set_new(row, "rung", json_integer(lvl[i]));
            json_object_set_new(row, "rung_step", json_integer(hv.step[lvl[i]]));
            json_object_set_new(row, "pruned", json_boolean(x->counts[6] > 0));
        }
        json_array_append_new(rows, row);
    }
    /* paired differences and ΔD_l against the baseline; Holm over every non-baseline schedule of the sweep */
    int sweep_seeds = 0;
    for (int i = 0; i < nsc; i++) if (sc[i].seeds_total > sweep_seeds) sweep_seeds = sc[i].seeds_total;
    stats_paired *pt = calloc((size_t)(nsc ? nsc : 1), sizeof *pt);
    double *praw = malloc((size_t)(nsc ? nsc : 1) * sizeof *praw), *padj = malloc((size_t)(nsc ? nsc : 1) * sizeof *padj);
    if (!pt || !praw || !padj) { free(pt); free(praw); free(padj); goto nomem_attn; }
    for (int i = 0; i < nsc; i++) {
        pt[i].n = 0;
        praw[i] = NAN;
        if (base < 0 || i == base) continue;
        double d[4096];
        int n = paired_diffs(jobs, njob, sc[i].id, sc[base].id, lvl[i], d, 4096);
        if (n > 0) stats_paired_test(d, n, &pt[i]);
        if (n > 1) praw[i] = pt[i].p;
    }
    int comparisons = base >= 0 ? stats_holm(praw, nsc, nsc - 1, padj) : 0;
    for (int i = 0; i < nsc; i++) {
        json_t *row = json_array_get(rows, (size_t)i);
        json_t *delta = json_null(), *dattn = json_null();
        if (base >= 0 && i != base) {
            if (pt[i].n > 0) {
                int n = pt[i].n;
                int excl = n > 1 && (pt[i].ci_low > 0 || pt[i].ci_high < 0);
                json_decref(delta);
                delta = json_pack("{s:i, s:f, s:o, s:o, s:o, s:b, s:o, s:o, s:b}", "n", n, "mean", pt[i].mean,
                                  "std", num_or_null(pt[i].sd), "ci_low", num_or_null(pt[i].ci_low),
                                  "ci_high", num_or_null(pt[i].ci_high), "excludes_zero", excl, "p", num_or_null(praw[i]),
                                  "p_holm", num_or_null(padj[i]), "significant", isfinite(padj[i]) && padj[i] < LB_ALPHA);
            }
            if (attn_mean[i] && attn_mean[base] && json_array_size(attn_mean[i]) == json_array_size(attn_mean[base])) {
                json_decref(dattn);
                dattn = json_array();
                for (size_t l = 0; l < json_array_size(attn_mean[i]); l++)
                    json_array_append_new(dattn, num_or_null(json_number_value(json_array_get(attn_mean[i], l)) -
                                                           json_number_value(json_array_get(attn_mean[base], l))));
            }
        }
        json_object_set_new(row, "delta", delta);
        json_object_set_new(row, "delta_attn_distance", dattn);
        /* the ranking key: the paired mean Δ (0 for the baseline itself); without a baseline, the mean loss */
        double key = base < 0 ? sc[i].mean : i == base ? (sc[i].seeds_done > 0 ? 0.0 : NAN) : pt[i].n > 0 ? pt[i].mean : NAN;
        int prov = sc[i].seeds_done < sweep_seeds;
        json_object_set_new(row, "provisional", json_boolean(prov));
        json_object_set_new(row, "_key", num_or_null(key));
        json_object_set_new(row, "_idx", json_integer(i));
    }
    free(pt);
    free(praw);
    free(padj);
    for (int i = 0; i < nsc; i++) json_decref(attn_mean[i]);
    free(attn_mean);
    attn_mean = NULL;
    /* complete schedules by Δ, then provisional ones by Δ, then those with no Δ in schedule order */
    size_t nr = json_array_size(rows);
    json_t **arr = malloc((nr ? nr : 1) * sizeof *arr);
    if (!arr) goto nomem;
    for (size_t i = 0; i < nr; i++) arr[i] = json_incref(json_array_get(rows, i));
    qsort(arr, nr, sizeof *arr, cmp_rows);
    json_array_clear(rows);
    int rank = 0;
    for (size_t i = 0; i < nr; i++)
        if (json_is_number(json_object_get(arr[i], "_key"))) json_object_set_new(arr[i], "rank", json_integer(++rank));
    /* tied for best: the paired difference to the first-ranked schedule is not significant (Holm over the
     * other ranked schedules; one common seed or none cannot be told apart and counts as tied) */
    int tied_comparisons = rank > 0 ? tied_for_best(jobs, njob, sc, arr, rank) : 0;
    if (tied_comparisons < 0) { for (size_t i = 0; i < nr; i++) json_decref(arr[i]); free(arr); goto nomem; }
    for (size_t i = 0; i < nr; i++) {
        json_object_del(arr[i], "_ord");
        json_object_del(arr[i], "_key");
        json_object_del(arr[i], "_idx");
        json_object_del(arr[i], "_lvl");
        if (!json_object_get(arr[i], "tied_best")) json_object_set_new(arr[i], "tied_best", json_false());
        if (!json_object_get(arr[i], "vs_best")) json_object_set_new(arr[i], "vs_best", json_null());
        json_array_append_new(rows, arr[i]);
    }
    free(arr);
    *out = json_pack("{s:I, s:s, s:o, s:i, s:i, s:i, s:f, s:o}", "sweep_id", (json_int_t)sweep_id, "name", name,
                     "baseline_schedule_id", base >= 0 ? json_integer(sc[base].id) : json_null(), "seeds", sweep_seeds,
                     "comparisons", comparisons, "tied_best_comparisons", tied_comparisons, "alpha", LB_ALPHA, "rows", rows);
    rows = NULL;
    if (*out) json_object_set_new(*out, "arch", json_string(arch));   /* the spec's model.arch ("gpt2" when absent) */
    if (*out && K > 0) {   /* halving: its settings and the steps (tokens) spent against the full grid's */
        long long trained = 0, full = 0, tps = 0;
        if (halving_steps(st, sweep_id, &trained, &full, err, errlen) < 0) { json_decref(*out); *out = NULL; goto out_rc; }
        sqlite3_stmt *t = NULL;
        /* tokens per step: the jobs' column (the job model's, filled at create; the same for every job of a sweep) */
        if (sqlite3_prepare_v2(st->db, "SELECT coalesce(max(tokens_per_step), 0) FROM jobs WHERE sweep_id = ?1", -1, &t,
                               NULL) == SQLITE_OK) {
            sqlite3_bind_int64(t, 1, sweep_id);
            if (sqlite3_step(t) == SQLITE_ROW) tps = sqlite3_column_int64(t, 0);
        }
        sqlite3_finalize(t);
        json_t *fr = json_array(), *stp = json_array();
        for (int r = 0; r < K; r++) json_array_append_new(fr, num_or_null(hv.frac[r]));
        for (int r = 0; r <= K; r++) json_array_append_new(stp, json_integer(hv.step[r]));
        json_object_set_new(*out, "halving", json_pack("{s:i, s:s, s:o, s:o, s:I, s:I, s:I, s:I}", "eta", hv.eta,
                            "mode", hv.async ? "async" : "sync", "rungs", fr, "rung_steps", stp,
                            "steps_trained", (json_int_t)trained, "full_grid_steps", (json_int_t)full,
                            "tokens_spent", (json_int_t)(trained * tps), "full_grid_tokens", (json_int_t)(full * tps)));
    }
    rc = *out ? STORE_OK : STORE_EIO;
    if (rc < 0) snprintf(err, errlen, "out of memory");
    if (rc == STORE_OK && at_rung < 0 && leaderboard_add_zero_shot(st, sweep_id, *out, err, errlen) < 0) {   /* per-task accuracy columns */
        json_decref(*out);
        *out = NULL;
        rc = STORE_EIO;
    }
    goto out;
nomem_attn:
    for (int i = 0; i < nsc; i++) json_decref(attn_mean[i]);
    free(attn_mean);
nomem:
    snprintf(err, errlen, "out of memory");
    rc = STORE_EIO;
    goto out;
dberr:
    snprintf(err, errlen, "leaderboard: database read failed: %s (%s)", sqlite3_errmsg(st->db), st->path);
out_rc:
    rc = STORE_EIO;
out:
    free(lvl);
    sqlite3_finalize(s);
    json_decref(rows);
    for (int k = 0; k < njob; k++) json_decref(jobs[k].attn);
    free(jobs);
    for (int i = 0; i < nsc; i++) free(sc[i].heads);
    free(sc);
    return rc;
}

/* ---- text renderings ----------------------------------------------------------------------------- */

static void heads_csv(const json_t *h, char *out, size_t n) {
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < json_array_size(h) && o + 8 < n; i++)
        o += (size_t)snprintf(out + o, n - o, "%s%lld", i ? "," : "", (long long)json_integer_value(json_array_get(h, i)));
}

/* "3×2 6×2 8×2 12×6" */
static void heads_runs(const json_t *h, char *out, size_t n) {
    size_t o = 0, len = json_array_size(h);
    out[0] = 0;
    for (size_t i = 0; i < len && o + 16 < n;) {
        long long v = json_integer_value(json_array_get(h, i));
        size_t j = i;
        while (j < len && json_integer_value(json_array_get(h, j)) == v) j++;
        o += (size_t)snprintf(out + o, n - o, "%s%lld\xc3\x97%zu", i ? " " : "", v, j - i);
        i = j;
    }
}

static void fmt_num(char *out, size_t n, const json_t *v, const char *f) {
    if (json_is_number(v)) snprintf(out, n, f, json_number_value(v));
    else out[0] = 0;
}

char *leaderboard_csv(const json_t *lb) {
    http_buf b = {0};
    const char *hdr = "rank,heads,is_baseline,seeds_done,seeds_total,val_loss_mean,val_loss_std,tok_per_s_mean,"
                      "delta_n,delta_mean,delta_ci_low,delta_ci_high,excludes_zero,p,p_holm,significant,provisional,tied_best,"
                      "tok_per_s_std\n";
    if (http_buf_append(&b, hdr, strlen(hdr) - 1, SIZE_MAX / 2) < 0 ||
        (json_object_get(lb, "halving") && http_buf_append(&b, ",rung,pruned", 12, SIZE_MAX / 2) < 0) ||
        leaderboard_zero_shot_csv_header(lb, &b) < 0 ||
        http_buf_append(&b, "\n", 1, SIZE_MAX / 2) < 0) { http_buf_free(&b); return NULL; }
    json_t *rows = json_object_get(lb, "rows");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i), *d = json_object_get(r, "delta");
        char heads[4096], rank[32] = "", m[32], s[32], t[32], dn[16] = "", dm[32] = "", lo[32] = "", hi[32] = "", ex[8] = "";
        char p[32] = "", ph[32] = "", sig[8] = "", ts[32];
        heads_csv(json_object_get(r, "heads"), heads, sizeof heads);
        if (json_is_integer(json_object_get(r, "rank"))) snprintf(rank, sizeof rank, "%lld", (long long)json_integer_value(json_object_get(r, "rank")));
        fmt_num(m, sizeof m, json_object_get(r, "val_loss_mean"), "%.6f");
        fmt_num(s, sizeof s, json_object_get(r, "val_loss_std"), "%.6f");
        fmt_num(t, sizeof t, json_object_get(r, "tok_per_s_mean"), "%.1f");
        if (json_is_object(d)) {
            snprintf(dn, sizeof dn, "%lld", (long long)json_integer_value(json_object_get(d, "n")));
            fmt_num(dm, sizeof dm, json_object_get(d, "mean"), "%.6f");
            fmt_num(lo, sizeof lo, json_object_get(d, "ci_low"), "%.6f");
            fmt_num(hi, sizeof hi, json_object_get(d, "ci_high"), "%.6f");
            snprintf(ex, sizeof ex, "%s", json_is_true(json_object_get(d, "excludes_zero")) ? "true" : "false");
            fmt_num(p, sizeof p, json_object_get(d, "p"), "%.6g");
            fmt_num(ph, sizeof ph, json_object_get(d, "p_holm"), "%.6g");
            snprintf(sig, sizeof sig, "%s", json_is_true(json_object_get(d, "significant")) ? "true" : "false");
        }
        fmt_num(ts, sizeof ts, json_object_get(r, "tok_per_s_std"), "%.1f");
        char hv[64] = "";   /* halving sweeps: two more cells, rung and pruned */
        if (json_object_get(lb, "halving"))
            snprintf(hv, sizeof hv, ",%lld,%s", (long long)json_integer_value(json_object_get(r, "rung")),
                     json_is_true(json_object_get(r, "pruned")) ? "true" : "false");
        char line[8192];
        int n = snprintf(line, sizeof line, "%s,\"%s\",%s,%lld,%lld,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s%s\n", rank, heads,
                         json_is_true(json_object_get(r, "is_baseline")) ? "true" : "false",
                         (long long)json_integer_value(json_object_get(r, "seeds_done")),
                         (long long)json_integer_value(json_object_get(r, "seeds_total")), m, s, t, dn, dm, lo, hi, ex,
                         p, ph, sig, json_is_true(json_object_get(r, "provisional")) ? "true" : "false",
                         json_is_true(json_object_get(r, "tied_best")) ? "true" : "false", ts, hv);
        if (n > 0 && n < (int)sizeof line) n--;   /* the zero-shot cells go before the newline */
        if (n < 0 || http_buf_append(&b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), SIZE_MAX / 2) < 0 ||
            leaderboard_zero_shot_csv_row(lb, r, &b) < 0 || http_buf_append(&b, "\n", 1, SIZE_MAX / 2) < 0) {
            http_buf_free(&b);
            return NULL;
        }
    }
    return b.data;
}

char *leaderboard_table(const json_t *lb) {
    http_buf b = {0};
    char line[8192];
    const char *arch = json_string_value(json_object_get(lb, "arch"));
    int n = snprintf(line, sizeof line, "leaderboard of sweep %lld (%s, %s): ranked by the paired mean delta = schedule - uniform "
                                        "over the seeds both finished (95%% CI, Student t); %lld seeds per schedule\n"
                                        "%lld comparisons against uniform, p Holm-adjusted (p_holm); %lld comparisons "
                                        "against the best for the tied-for-best group (=)\n"
                                        "%-4s  %-28s %-9s %-22s %-52s %s\n",
                     (long long)json_integer_value(json_object_get(lb, "sweep_id")),
                     json_string_value(json_object_get(lb, "name")), arch ? arch : "gpt2", (long long)json_integer_value(json_object_get(lb, "seeds")),
                     (long long)json_integer_value(json_object_get(lb, "comparisons")),
                     (long long)json_integer_value(json_object_get(lb, "tied_best_comparisons")), "rank", "schedule", "seeds",
                     "val loss (mean ± std)", "delta vs uniform [95% CI] p_holm", "tok/s (mean ± std)");
    http_buf_append(&b, line, (size_t)n, SIZE_MAX / 2);
    json_t *rows = json_object_get(lb, "rows");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i), *d = json_object_get(r, "delta");
        char runs[2048], rank[16] = "-", loss[64] = "-", delta[160] = "", tps[64] = "-", seeds[48];
        heads_runs(json_object_get(r, "heads"), runs, sizeof runs);
        if (json_is_integer(json_object_get(r, "rank")))
            snprintf(rank, sizeof rank, "%lld%s", (long long)json_integer_value(json_object_get(r, "rank")),
                     json_is_true(json_object_get(r, "tied_best")) ? "=" : "");
        json_t *m = json_object_get(r, "val_loss_mean"), *s = json_object_get(r, "val_loss_std");
        if (json_is_number(m)) {
            if (json_is_number(s)) snprintf(loss, sizeof loss, "%.4f ± %.4f", json_number_value(m), json_number_value(s));
            else snprintf(loss, sizeof loss, "%.4f", json_number_value(m));
        }
        if (json_is_true(json_object_get(r, "is_baseline"))) snprintf(delta, sizeof delta, "(uniform baseline)");
        else if (json_is_object(d)) {
            json_t *lo = json_object_get(d, "ci_low"), *hi = json_object_get(d, "ci_high"), *ph = json_object_get(d, "p_holm");
            if (json_is_number(lo))
                snprintf(delta, sizeof delta, "%+.4f [%+.4f, %+.4f] n=%lld p_holm=%.3g%s", json_number_value(json_object_get(d, "mean")),
                         json_number_value(lo), json_number_value(hi), (long long)json_integer_value(json_object_get(d, "n")),
                         json_is_number(ph) ? json_number_value(ph) : NAN,
                         json_is_true(json_object_get(d, "significant")) ? " *" : "");
            else
                snprintf(delta, sizeof delta, "%+.4f n=1 (no test)", json_number_value(json_object_get(d, "mean")));
        }
        json_t *t = json_object_get(r, "tok_per_s_mean"), *ts = json_object_get(r, "tok_per_s_std");
        if (json_is_number(t)) {
            if (json_is_number(ts)) snprintf(tps, sizeof tps, "%.0f ± %.0f", json_number_value(t), json_number_value(ts));
            else snprintf(tps, sizeof tps, "%.0f", json_number_value(t));
        }
        snprintf(seeds, sizeof seeds, "%lld/%lld%s", (long long)json_integer_value(json_object_get(r, "seeds_done")),
                 (long long)json_integer_value(json_object_get(r, "seeds_total")),
                 json_is_true(json_object_get(r, "provisional")) && json_is_integer(json_object_get(r, "rank")) ? " prov" : "");
        if (json_object_get(r, "rung")) {   /* halving: the rung the row is at, and pruned schedules */
            size_t used = strlen(seeds);
            snprintf(seeds + used, sizeof seeds - used, " r%lld%s", (long long)json_integer_value(json_object_get(r, "rung")),
                     json_is_true(json_object_get(r, "pruned")) ? " pruned" : "");
        }
        /* pad the run-length and loss columns by display width (× and ± are 2 bytes, 1 column) */
        int extra = 0;
        for (const char *p = runs; *p; p++) if ((unsigned char)*p == 0xc3) extra++;
        n = snprintf(line, sizeof line, "%-4s  %-*s %-9s %-*s %-52s %s\n", rank, 28 + extra, runs, seeds,
                     22 + (json_is_number(s) ? 1 : 0), loss, delta, tps);
        http_buf_append(&b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), SIZE_MAX / 2);
    }
    leaderboard_zero_shot_table(lb, &b);
    json_t *hvj = json_object_get(lb, "halving");
    if (hvj) {   /* successive halving: what was spent against the full grid */
        long long tr = json_integer_value(json_object_get(hvj, "steps_trained")), fu = json_integer_value(json_object_get(hvj, "full_grid_steps"));
        n = snprintf(line, sizeof line, "halving (eta %lld, %s): ranked by the highest rung reached (rN; the full run is r%lld), "
                     "then by delta at that rung; tokens spent: %lld of the full grid's %lld (steps %lld of %lld, %.1f%%)\n",
                     (long long)json_integer_value(json_object_get(hvj, "eta")), json_string_value(json_object_get(hvj, "mode")),
                     (long long)json_array_size(json_object_get(hvj, "rungs")),
                     (long long)json_integer_value(json_object_get(hvj, "tokens_spent")),
                     (long long)json_integer_value(json_object_get(hvj, "full_grid_tokens")), tr, fu, fu > 0 ? 100.0 * tr / fu : 0.0);
        http_buf_append(&b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), SIZE_MAX / 2);
    }
    const char *foot = "* p_holm < 0.05 (paired t-test against uniform, Holm-adjusted over every schedule of the sweep); "
                       "= tied for best (not significantly different from rank 1, Holm); prov = provisional: fewer "
                       "finished seeds than the sweep's, listed after the complete schedules\n";
    http_buf_append(&b, foot, strlen(foot), SIZE_MAX / 2);
    return b.data;
}
