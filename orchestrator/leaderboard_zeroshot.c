/* leaderboard_zeroshot.c — zero-shot accuracy columns of the leaderboard (leaderboard_zeroshot.h).
 *
 * Design: one read of every finished job's result.json "zero_shot" object (json_extract in SQLite, so the rest of
 * the result is never parsed) into a flat array of (schedule, seed, task, acc, acc_norm, items) sorted by schedule;
 * each leaderboard row finds its points by binary search. Per row and task the mean ± std over seeds is plain
 * description. The comparison with uniform is the val-loss ranking's blocked model (ranking.h's fit, nothing of
 * ranking.c's own tests): per task and per metric, y = schedule + seed + ε over every cell that has the task, so
 * the noise is pooled over the whole task ((K−1)(n−1) df when complete) instead of the n−1 df of one schedule's
 * paired differences — with 3 seeds and Holm over schedules × tasks the paired test needed |t| > 66 to mark
 * anything. Cells are item-paired (every model answers the same items), so item difficulty cancels in Δ. A task
 * whose fit has no residual df, or no residual variation, gets Δ without a test and says why (method "none"):
 * an interval of width 0 is not a result. Holm runs within each metric over the whole table (every non-baseline
 * row × every task, comparisons without a test counting as p = 1), and a cell is marked only on its adjusted p.
 * Accuracies are higher-is-better, so a positive Δ favours the schedule; every surface marks "better" and "worse"
 * with the same glyphs as the val-loss column. acc_norm is llm.c's rule (the completion's mean loss per token),
 * not lm-evaluation-harness's per-character normalisation, which is described beside it (acc_norm_char: mean ±
 * std over the seeds that report it, no comparison): docs/FORMATS.md. The method: docs/STATISTICS.md.
 */
#include "leaderboard_zeroshot.h"
#include "stats.h"
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct zs_point { long long schedule, seed; int task; double acc, acc_norm; long long items; /* -1: not reported */
                  double acc_norm_char; /* lm-eval's per-character acc_norm; NAN: not reported */ };

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* ---- the pure core: the blocked comparison and Holm ------------------------------------------------ */

static void cmp_clear(leaderboard_zs_cmp *c) {
    memset(c, 0, sizeof *c);
    c->mean = c->sd = c->se = c->t = c->p = c->ci_low = c->ci_high = c->p_holm = NAN;
}

/* the common seeds of a and b in f, and the sd of their paired differences (NAN below 2) */
static int paired_sd(const ranking_fit *f, int a, int b, double *sd) {
    int n = 0;
    double sum = 0, ss = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < f->nseed; j++) {
            double x = f->y[(size_t)a * f->nseed + j], y = f->y[(size_t)b * f->nseed + j];
            if (isnan(x) || isnan(y)) continue;
            if (pass == 0) { sum += x - y; n++; }
            else ss += (x - y - sum / n) * (x - y - sum / n);
        }
    *sd = n >= 2 ? sqrt(ss / (n - 1)) : NAN;
    return n;
}

int leaderboard_zero_shot_compare(const ranking_obs *obs, int nobs, int nsched, int base, leaderboard_zs_cmp *out) {
    for (int i = 0; i < nsched; i++) cmp_clear(&out[i]);
    ranking_fit f;
    int rc = ranking_fit_compute(obs, nobs, nsched, &f);
    if (rc < 0) return rc;   /* f released */
    for (int i = 0; i < nsched && base >= 0 && base < nsched; i++) {
        leaderboard_zs_cmp *c = &out[i];
        double var = i == base ? NAN : ranking_fit_var(&f, i, base);
        if (!isfinite(var)) continue;
        c->has = 1;
        c->seeds = f.r[i];
        c->mean = f.tau[i] - f.tau[base];
        c->common = paired_sd(&f, i, base, &c->sd);
        c->df = f.df;
        if (f.df <= 0 || !isfinite(f.sd)) { c->why = LEADERBOARD_ZS_NO_DF; continue; }
        c->se = f.sd * sqrt(var);
        if (!(f.sd > LEADERBOARD_ZS_SD_ZERO)) { c->why = LEADERBOARD_ZS_SE_ZERO; continue; }
        double h = stats_t_quantile(0.975, f.df) * c->se;
        c->ci_low = c->mean - h;
        c->ci_high = c->mean + h;
        c->t = c->mean / c->se;
        c->p = stats_t_p2(c->t, f.df);
    }
    ranking_fit_release(&f);
    return 0;
}

int leaderboard_zero_shot_holm(leaderboard_zs_cmp *const *cells, int n, int m) {
    double *p = malloc((size_t)(n ? n : 1) * sizeof *p), *adj = malloc((size_t)(n ? n : 1) * sizeof *adj);
    int rc = -1;
    if (!p || !adj) goto out;
    for (int i = 0; i < n; i++) p[i] = cells[i]->why == LEADERBOARD_ZS_TESTED ? cells[i]->p : NAN;
    rc = stats_holm(p, n, m, adj);
    for (int i = 0; i < n; i++) {
        cells[i]->p_holm = adj[i];
        cells[i]->significant = isfinite(adj[i]) && adj[i] < RANKING_ALPHA;
    }
out:
    free(p);
    free(adj);
    return rc;
}

const char *leaderboard_zero_shot_method(leaderboard_zs_why why) { return why == LEADERBOARD_ZS_TESTED ? "blocked" : "none"; }

const char *leaderboard_zero_shot_reason(leaderboard_zs_why why) {
    switch (why) {
    case LEADERBOARD_ZS_NO_DF: return "no residual df: the task's cells leave nothing to estimate the noise from (one seed per schedule?)";
    case LEADERBOARD_ZS_SE_ZERO: return "no residual variation: the task's cells fit schedule + seed exactly (SE 0), so there is no noise to test against";
    default: return NULL;
    }
}

/* ---- reading the store ----------------------------------------------------------------------------- */

/* pts[] is sorted by schedule (the query's ORDER BY): [first, *end) are schedule id's points. O(log n), so the
 * columns stay cheap on sweeps of 10^4+ schedules. */
static size_t points_range(const struct zs_point *pts, size_t np, long long id, size_t *end) {
    return ranking_key_range(pts, np, sizeof *pts, offsetof(struct zs_point, schedule), id, end);
}

static int task_index(json_t *names, const char *name) {
    for (size_t i = 0; i < json_array_size(names); i++)
        if (strcmp(json_string_value(json_array_get(names, i)), name) == 0) return (int)i;
    if (json_array_append_new(names, json_string(name))) return -1;
    return (int)json_array_size(names) - 1;
}

/* A task name as the job format allows it, [A-Za-z0-9._-]{1,63}: the only text a result adds to the CSV header,
 * the terminal table and the page. Results stored before the server checked names (common/result_check.c) may
 * hold anything (newlines, =HYPERLINK(...), ANSI escapes): such a task is left out of every surface. */
static int task_name_ok(const char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') ||
              s[n] == '.' || s[n] == '_' || s[n] == '-'))
            return 0;
    return n >= 1 && n <= 63;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* every finished job's zero-shot scores, sorted by schedule; task names into names (first-seen order). STORE_OK or
 * STORE_EIO with err set (SQLite's message, or no memory) */
static int read_points(store *st, long long sweep_id, json_t *names, struct zs_point **out, size_t *np, char *err,
                       size_t errlen) {
    sqlite3_stmt *s = NULL;
    size_t cap = 0;
    int step, rc = STORE_EIO;
    *out = NULL;
    *np = 0;
    if (sqlite3_prepare_v2(st->db, "SELECT j.schedule_id, j.seed, json_extract(r.result, '$.zero_shot') FROM jobs j "
                                   "JOIN results r ON r.job_id = j.id WHERE j.sweep_id = ?1 AND j.state = 'done' "
                                   "AND json_valid(r.result) ORDER BY j.schedule_id, j.seed",
                           -1, &s, NULL) != SQLITE_OK) goto dberr;
    sqlite3_bind_int64(s, 1, sweep_id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (sqlite3_column_type(s, 2) == SQLITE_NULL) continue;
        json_t *zs = json_loads((const char *)sqlite3_column_text(s, 2), 0, NULL);
        const char *task;
        json_t *v;
        if (json_is_object(zs))
            json_object_foreach(zs, task, v) {
                json_t *a = json_object_get(v, "acc"), *an = json_object_get(v, "acc_norm"), *n = json_object_get(v, "n");
                json_t *ac = json_object_get(v, "acc_norm_char");
                if (!json_is_number(a) || !json_is_number(an) || !task_name_ok(task)) continue;
                if (*np == cap) {
                    cap = cap ? cap * 2 : 256;
                    struct zs_point *n2 = realloc(*out, cap * sizeof **out);
                    if (!n2) { json_decref(zs); goto nomem; }
                    *out = n2;
                }
                int ti = task_index(names, task);
                if (ti < 0) { json_decref(zs); goto nomem; }
                (*out)[(*np)++] = (struct zs_point){sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), ti,
                                                    json_number_value(a), json_number_value(an),
                                                    json_is_integer(n) && json_integer_value(n) >= 0 ? json_integer_value(n) : -1,
                                                    json_is_number(ac) ? json_number_value(ac) : NAN};
            }
        json_decref(zs);
    }
    if (step == SQLITE_DONE) { rc = STORE_OK; goto out; }
dberr:
    snprintf(err, errlen, "leaderboard zero-shot: %s", sqlite3_errmsg(st->db));
    goto out;
nomem:
    snprintf(err, errlen, "out of memory");
out:
    sqlite3_finalize(s);
    return rc;
}

/* the comparisons of every row with the baseline row on task t, metric m (0 acc_norm, 1 acc): out[0..nrows) */
static int task_compare(const struct zs_point *pts, const size_t *r0, const size_t *r1, int nrows, int base, int t,
                        int m, ranking_obs *obs, leaderboard_zs_cmp *out) {
    int n = 0;
    for (int r = 0; r < nrows; r++)
        for (size_t k = r0[r]; k < r1[r]; k++)
            if (pts[k].task == t) obs[n++] = (ranking_obs){r, pts[k].seed, m ? pts[k].acc : pts[k].acc_norm, NULL, 0, 0};
    int rc = leaderboard_zero_shot_compare(obs, n, nrows, base, out);
    return rc == -2 ? 0 : rc;   /* over RANKING_MAX_SEEDS seeds: no comparison (every delta null) */
}

static json_t *delta_json(const leaderboard_zs_cmp *c, long long items) {
    if (!c->has) return json_null();
    const char *why = leaderboard_zero_shot_reason(c->why);
    return json_pack("{s:i, s:i, s:o, s:f, s:o, s:o, s:i, s:o, s:o, s:o, s:b, s:o, s:o, s:b, s:s, s:o}", "n", c->common,
                     "seeds", c->seeds, "items", items >= 0 ? json_integer(items) : json_null(), "mean", c->mean, "std",
                     num_or_null(c->sd), "se", num_or_null(c->se), "df", (int)c->df, "t", num_or_null(c->t), "ci_low",
                     num_or_null(c->ci_low), "ci_high", num_or_null(c->ci_high), "excludes_zero",
                     c->why == LEADERBOARD_ZS_TESTED && (c->ci_low > 0 || c->ci_high < 0), "p", num_or_null(c->p),
                     "p_holm", num_or_null(c->p_holm), "significant", c->significant, "method",
                     leaderboard_zero_shot_method(c->why), "reason", why ? json_string(why) : json_null());
}

/* one row's cell for task t: the description over its seeds and both comparisons */
static json_t *cell_json(const struct zs_point *pts, size_t k0, size_t k1, int t, const leaderboard_zs_cmp *dn,
                         const leaderboard_zs_cmp *da) {
    double sa = 0, sn = 0, va = 0, vn = 0, sc = 0, vc = 0;
    int n = 0, nc = 0;
    long long lo = -1, hi = -1;
    for (size_t k = k0; k < k1; k++)
        if (pts[k].task == t) {
            sa += pts[k].acc; sn += pts[k].acc_norm; n++;
            if (!isnan(pts[k].acc_norm_char)) { sc += pts[k].acc_norm_char; nc++; }
            if (pts[k].items >= 0 && (lo < 0 || pts[k].items < lo)) lo = pts[k].items;
            if (pts[k].items > hi) hi = pts[k].items;
        }
    if (n == 0) return NULL;
    double ma = sa / n, mn = sn / n, mc = nc ? sc / nc : NAN;
    for (size_t k = k0; k < k1; k++)
        if (pts[k].task == t) {
            va += (pts[k].acc - ma) * (pts[k].acc - ma); vn += (pts[k].acc_norm - mn) * (pts[k].acc_norm - mn);
            if (!isnan(pts[k].acc_norm_char)) vc += (pts[k].acc_norm_char - mc) * (pts[k].acc_norm_char - mc);
        }
    /* acc_norm_char over the seeds that reported it (results stored before it, and files without character
     * counts, have none): null without any */
    return json_pack("{s:i, s:o, s:o, s:f, s:o, s:f, s:o, s:o, s:o, s:i, s:o, s:o}", "n", n, "items", lo >= 0 ? json_integer(lo) : json_null(),
                     "items_max", hi >= 0 ? json_integer(hi) : json_null(), "acc_mean", ma, "acc_std",
                     num_or_null(n > 1 ? sqrt(va / (n - 1)) : NAN), "acc_norm_mean", mn, "acc_norm_std",
                     num_or_null(n > 1 ? sqrt(vn / (n - 1)) : NAN), "delta", delta_json(dn, lo), "delta_acc", delta_json(da, lo),
                     "acc_norm_char_n", nc, "acc_norm_char_mean", num_or_null(mc), "acc_norm_char_std",
                     num_or_null(nc > 1 ? sqrt(vc / (nc - 1)) : NAN));
}

int leaderboard_add_zero_shot(store *st, long long sweep_id, json_t *lb, char *err, size_t errlen) {
    struct zs_point *pts = NULL;
    size_t np = 0;
    int rc;
    json_t *names = json_array(), *rows = json_object_get(lb, "rows");
    int nrows = (int)json_array_size(rows), nt = 0, base = -1;
    size_t *r0 = NULL, *r1 = NULL;
    int *order = NULL;
    json_t **sorted = NULL;
    ranking_obs *obs = NULL;
    leaderboard_zs_cmp *cmp = NULL, **fam = NULL;
    if (!names) goto nomem;
    if ((rc = read_points(st, sweep_id, names, &pts, &np, err, errlen)) != STORE_OK) goto out;

    nt = (int)json_array_size(names);
    sorted = malloc((size_t)(nt ? nt : 1) * sizeof *sorted);   /* the sorted order of the task names */
    order = malloc((size_t)(nt ? nt : 1) * sizeof *order);
    r0 = malloc((size_t)(nrows ? nrows : 1) * sizeof *r0);
    r1 = malloc((size_t)(nrows ? nrows : 1) * sizeof *r1);
    obs = malloc((np ? np : 1) * sizeof *obs);
    /* cmp[(t·2 + metric)·nrows + row] */
    cmp = malloc((size_t)(nt ? nt : 1) * 2 * (size_t)(nrows ? nrows : 1) * sizeof *cmp);
    fam = malloc((size_t)(nt ? nt : 1) * (size_t)(nrows ? nrows : 1) * sizeof *fam);
    json_t *tasks = json_array();
    if (!sorted || !order || !r0 || !r1 || !obs || !cmp || !fam || !tasks) { json_decref(tasks); goto nomem; }
    for (int i = 0; i < nt; i++) sorted[i] = json_array_get(names, (size_t)i);
    qsort(sorted, (size_t)nt, sizeof *sorted, cmp_str);
    for (int i = 0; i < nt; i++) {
        json_array_append(tasks, sorted[i]);
        order[i] = task_index(names, json_string_value(sorted[i]));
    }
    json_object_set_new(lb, "zero_shot_tasks", tasks);

    json_t *bid = json_object_get(lb, "baseline_schedule_id");
    for (int r = 0; r < nrows; r++) {
        long long sid = json_integer_value(json_object_get(json_array_get(rows, (size_t)r), "schedule_id"));
        r0[r] = points_range(pts, np, sid, &r1[r]);
        if (json_is_integer(bid) && sid == json_integer_value(bid)) base = r;
    }
    for (int t = 0; t < nt; t++)
        for (int m = 0; m < 2; m++)
            if (task_compare(pts, r0, r1, nrows, base, t, m, obs, cmp + ((size_t)t * 2 + m) * nrows) < 0) goto nomem;
    /* Holm per metric over every non-baseline row × task (the family counts cells without a comparison) */
    int family = base >= 0 ? (nrows - 1) * nt : 0;
    for (int m = 0; m < 2; m++) {
        int n = 0;
        for (int t = 0; t < nt; t++)
            for (int r = 0; r < nrows; r++) {
                leaderboard_zs_cmp *c = cmp + ((size_t)t * 2 + m) * nrows + r;
                if (c->has) fam[n++] = c;
            }
        if (leaderboard_zero_shot_holm(fam, n, family) < 0) goto nomem;
    }
    json_object_set_new(lb, "zero_shot_comparisons", json_integer(family));

    for (int r = 0; r < nrows; r++) {
        json_t *zrow = json_object();
        if (!zrow) goto nomem;
        for (int oi = 0; oi < nt; oi++) {
            int t = order[oi];
            json_t *cell = cell_json(pts, r0[r], r1[r], t, cmp + ((size_t)t * 2) * nrows + r, cmp + ((size_t)t * 2 + 1) * nrows + r);
            if (cell) json_object_set_new(zrow, json_string_value(json_array_get(names, (size_t)t)), cell);
        }
        json_object_set_new(json_array_get(rows, (size_t)r), "zero_shot", zrow);
    }
    rc = STORE_OK;
    goto out;
nomem:
    snprintf(err, errlen, "out of memory");
    rc = STORE_EIO;
out:
    free(pts);
    free(sorted);
    free(order);
    free(r0);
    free(r1);
    free(obs);
    free(cmp);
    free(fam);
    json_decref(names);
    return rc;
}

/* ---- text renderings ----------------------------------------------------------------------------- */

static int put(buf *b, const char *s) { return buf_append(b, s, strlen(s), BUF_MAX) < 0 ? -1 : 0; }

static void fmt(char *out, size_t n, const json_t *v, const char *f) {
    if (json_is_number(v)) snprintf(out, n, f, json_number_value(v));
    else out[0] = 0;
}

int leaderboard_zero_shot_csv_header(const json_t *lb, buf *b) {
    json_t *tasks = json_object_get(lb, "zero_shot_tasks");
    for (size_t i = 0; i < json_array_size(tasks); i++) {
        const char *t = json_string_value(json_array_get(tasks, i));
        char h[1024];
        snprintf(h, sizeof h, ",%s_acc_mean,%s_acc_norm_mean,%s_acc_norm_std,%s_delta_mean,%s_delta_ci_low,%s_delta_ci_high,"
                 "%s_delta_p,%s_delta_p_holm,%s_delta_significant,%s_delta_items,%s_delta_seeds,%s_delta_df,%s_delta_method,"
                 "%s_acc_norm_char_mean,%s_acc_norm_char_std", t, t, t, t, t, t, t, t, t, t, t, t, t, t, t);
        if (put(b, h)) return -1;
    }
    return 0;
}

int leaderboard_zero_shot_csv_row(const json_t *lb, const json_t *row, buf *b) {
    json_t *tasks = json_object_get(lb, "zero_shot_tasks"), *zs = json_object_get(row, "zero_shot");
    for (size_t i = 0; i < json_array_size(tasks); i++) {
        json_t *c = json_object_get(zs, json_string_value(json_array_get(tasks, i))), *d = json_object_get(c, "delta");
        char a[32], m[32], s[32], dm[32], lo[32], hi[32], p[32], ph[32], it[32], se[32], df[32], cm[32], cs[32], cell[560];
        fmt(a, sizeof a, json_object_get(c, "acc_mean"), "%.6f");
        fmt(m, sizeof m, json_object_get(c, "acc_norm_mean"), "%.6f");
        fmt(s, sizeof s, json_object_get(c, "acc_norm_std"), "%.6f");
        fmt(dm, sizeof dm, json_object_get(d, "mean"), "%.6f");
        fmt(lo, sizeof lo, json_object_get(d, "ci_low"), "%.6f");
        fmt(hi, sizeof hi, json_object_get(d, "ci_high"), "%.6f");
        fmt(p, sizeof p, json_object_get(d, "p"), "%.6g");
        fmt(ph, sizeof ph, json_object_get(d, "p_holm"), "%.6g");
        fmt(it, sizeof it, json_object_get(d, "items"), "%.0f");
        fmt(se, sizeof se, json_object_get(d, "seeds"), "%.0f");
        fmt(df, sizeof df, json_object_get(d, "df"), "%.0f");
        fmt(cm, sizeof cm, json_object_get(c, "acc_norm_char_mean"), "%.6f");   /* empty: no seed reported it */
        fmt(cs, sizeof cs, json_object_get(c, "acc_norm_char_std"), "%.6f");
        const char *method = json_string_value(json_object_get(d, "method"));
        snprintf(cell, sizeof cell, ",%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s", a, m, s, dm, lo, hi, p, ph,
                 json_is_object(d) ? (json_is_true(json_object_get(d, "significant")) ? "true" : "false") : "", it, se, df,
                 method ? method : "", cm, cs);
        if (put(b, cell)) return -1;
    }
    return 0;
}

/* "n=ITEMS×SEEDS" (ITEMS "A–B" when the schedule's seeds scored different counts, "?" when none said) */
static void items_text(const json_t *c, const json_t *d, char *out, size_t n) {
    json_t *lo = json_object_get(c, "items"), *hi = json_object_get(c, "items_max");
    long long seeds = json_integer_value(json_object_get(d, "seeds"));
    if (!json_is_integer(lo)) snprintf(out, n, "n=?×%lld", seeds);
    else if (json_integer_value(hi) != json_integer_value(lo))
        snprintf(out, n, "n=%lld–%lld×%lld", (long long)json_integer_value(lo), (long long)json_integer_value(hi), seeds);
    else snprintf(out, n, "n=%lld×%lld", (long long)json_integer_value(lo), seeds);
}

int leaderboard_zero_shot_table(const json_t *lb, buf *b) {
    json_t *tasks = json_object_get(lb, "zero_shot_tasks"), *rows = json_object_get(lb, "rows");
    for (size_t i = 0; i < json_array_size(tasks); i++) {
        const char *t = json_string_value(json_array_get(tasks, i));
        char line[1280];
        snprintf(line, sizeof line, "\nzero-shot %s: acc_norm (llm.c's per-token rule; mean ± std over seeds), acc, delta acc_norm vs uniform "
                 "[95%% CI] (positive = better; blocked model schedule + seed per task; n = items × seeds) p_holm over the zero-shot table (%lld comparisons)\n%-4s  %-40s %-22s %-8s %s\n", t,
                 (long long)json_integer_value(json_object_get(lb, "zero_shot_comparisons")), "rank", "schedule", "acc_norm", "acc", "delta vs uniform");
        if (put(b, line)) return -1;
        for (size_t r = 0; r < json_array_size(rows); r++) {
            json_t *row = json_array_get(rows, r), *c = json_object_get(json_object_get(row, "zero_shot"), t);
            if (!json_is_object(c)) continue;
            char heads[512] = "", rank[16] = "-", an[64], acc[16], delta[320] = "";
            json_t *h = json_object_get(row, "heads");
            size_t o = 0;
            for (size_t k = 0; k < json_array_size(h) && o + 8 < sizeof heads; k++)
                o += (size_t)snprintf(heads + o, sizeof heads - o, "%s%lld", k ? "," : "", (long long)json_integer_value(json_array_get(h, k)));
            if (json_is_integer(json_object_get(row, "rank"))) snprintf(rank, sizeof rank, "%lld", (long long)json_integer_value(json_object_get(row, "rank")));
            json_t *sd = json_object_get(c, "acc_norm_std"), *d = json_object_get(c, "delta");
            if (json_is_number(sd)) snprintf(an, sizeof an, "%.4f ± %.4f", json_number_value(json_object_get(c, "acc_norm_mean")), json_number_value(sd));
            else snprintf(an, sizeof an, "%.4f", json_number_value(json_object_get(c, "acc_norm_mean")));
            snprintf(acc, sizeof acc, "%.4f", json_number_value(json_object_get(c, "acc_mean")));
            if (json_is_true(json_object_get(row, "is_baseline"))) snprintf(delta, sizeof delta, "(uniform baseline)");
            else if (json_is_object(d)) {
                json_t *lo = json_object_get(d, "ci_low"), *hi = json_object_get(d, "ci_high");
                double dm = json_number_value(json_object_get(d, "mean"));
                char n[64];
                items_text(c, d, n, sizeof n);
                if (json_is_number(lo))
                    snprintf(delta, sizeof delta, "%+.4f [%+.4f, %+.4f] %s df=%lld p_holm=%.3g%s", dm, json_number_value(lo),
                             json_number_value(hi), n, (long long)json_integer_value(json_object_get(d, "df")),
                             json_number_value(json_object_get(d, "p_holm")),
                             json_is_true(json_object_get(d, "significant")) ? (dm > 0 ? " ▲" : " ▼") : "");
                else snprintf(delta, sizeof delta, "%+.4f %s (no test: %s)", dm, n,
                              json_string_value(json_object_get(d, "reason")) ? json_string_value(json_object_get(d, "reason")) : "none");
            }
            snprintf(line, sizeof line, "%-4s  %-40s %-*s %-8s %s\n", rank, heads, 22 + (json_is_number(sd) ? 1 : 0), an, acc, delta);
            if (put(b, line)) return -1;
        }
    }
    return 0;
}
