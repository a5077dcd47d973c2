/* leaderboard_zeroshot.c — zero-shot accuracy columns of the leaderboard (leaderboard_zeroshot.h).
 *
 * Design: one read of every finished job's result.json "zero_shot" object (json_extract in SQLite, so the rest of
 * the result is never parsed) into a flat array of (schedule, seed, task, acc, acc_norm) sorted by schedule; then
 * per leaderboard row (its points found by binary search) and task the mean ± std over seeds and, against the
 * baseline schedule, the per-seed paired differences with the paired t-test (stats.c, the one the ranking uses).
 * Every cell's p is Holm-adjusted over the whole zero-shot table (all schedules × tasks: one family for acc_norm,
 * one for acc), and a cell is marked only on its adjusted p. Accuracies are higher-is-better, so a positive delta
 * favours the schedule; every surface marks "better" and "worse" with the same glyphs as the val-loss column.
 * acc_norm is llm.c's rule (the completion's mean loss per token), not lm-evaluation-harness's per-character
 * normalisation: docs/FORMATS.md.
 */
#include "leaderboard_zeroshot.h"
#include "leaderboard.h"
#include "stats.h"
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct zs_point { long long schedule, seed; int task; double acc, acc_norm; };

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* pts[] is sorted by schedule (the query's ORDER BY): [first, *end) are schedule id's points. O(log n), so the
 * columns stay cheap on sweeps of 10^4+ schedules. */
static size_t points_range(const struct zs_point *pts, size_t np, long long id, size_t *end) {
    return leaderboard_key_range(pts, np, sizeof *pts, offsetof(struct zs_point, schedule), id, end);
}

static int task_index(json_t *names, const char *name) {
    for (size_t i = 0; i < json_array_size(names); i++)
        if (strcmp(json_string_value(json_array_get(names, i)), name) == 0) return (int)i;
    if (json_array_append_new(names, json_string(name))) return -1;
    return (int)json_array_size(names) - 1;
}

/* A task name as the job format allows it, [A-Za-z0-9._-]{1,63}: the only text a result adds to the CSV header,
 * the terminal table and the page. Results stored before the server checked names (orchestrator/result.c) may
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

/* {"n","mean","std","ci_low","ci_high","excludes_zero","p"} of d[0..n) (p_holm and significant are added once the
 * whole table is known), or null when n == 0 */
static json_t *paired(const double *d, int n) {
    if (n <= 0) return json_null();
    stats_paired t;
    stats_paired_test(d, n, &t);
    return json_pack("{s:i, s:f, s:o, s:o, s:o, s:b, s:o}", "n", n, "mean", t.mean, "std", num_or_null(t.sd), "ci_low",
                     num_or_null(t.ci_low), "ci_high", num_or_null(t.ci_high), "excludes_zero",
                     n > 1 && (t.ci_low > 0 || t.ci_high < 0), "p", num_or_null(t.p));
}

/* Holm over every delta of one kind ("delta" = acc_norm, "delta_acc" = acc) in the table: "p_holm", "significant" */
static int holm_table(json_t *rows, json_t *tasks, const char *key) {
    size_t cap = json_array_size(rows) * json_array_size(tasks), n = 0;
    json_t **cells = malloc((cap ? cap : 1) * sizeof *cells);
    double *p = malloc((cap ? cap : 1) * sizeof *p), *adj = malloc((cap ? cap : 1) * sizeof *adj);
    if (!cells || !p || !adj) { free(cells); free(p); free(adj); return -1; }
    for (size_t r = 0; r < json_array_size(rows); r++)
        for (size_t t = 0; t < json_array_size(tasks); t++) {
            json_t *c = json_object_get(json_object_get(json_object_get(json_array_get(rows, r), "zero_shot"),
                                                        json_string_value(json_array_get(tasks, t))), key);
            if (!json_is_object(c)) continue;
            json_t *pv = json_object_get(c, "p");
            cells[n] = c;
            p[n++] = json_is_number(pv) ? json_number_value(pv) : NAN;
        }
    stats_holm(p, (int)n, (int)n, adj);
    for (size_t i = 0; i < n; i++) {
        json_object_set_new(cells[i], "p_holm", num_or_null(adj[i]));
        json_object_set_new(cells[i], "significant", json_boolean(isfinite(adj[i]) && adj[i] < 0.05));
    }
    free(cells);
    free(p);
    free(adj);
    return 0;
}

int leaderboard_add_zero_shot(store *st, long long sweep_id, json_t *lb, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    struct zs_point *pts = NULL;
    size_t np = 0, cap = 0;
    int rc = STORE_EIO, step;
    json_t *names = json_array();
    double *d1 = NULL, *d2 = NULL;
    if (!names) goto nomem;
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
                json_t *a = json_object_get(v, "acc"), *an = json_object_get(v, "acc_norm");
                if (!json_is_number(a) || !json_is_number(an) || !task_name_ok(task)) continue;
                if (np == cap) {
                    cap = cap ? cap * 2 : 256;
                    struct zs_point *n2 = realloc(pts, cap * sizeof *pts);
                    if (!n2) { json_decref(zs); goto nomem; }
                    pts = n2;
                }
                int ti = task_index(names, task);
                if (ti < 0) { json_decref(zs); goto nomem; }
                pts[np++] = (struct zs_point){sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), ti,
                                              json_number_value(a), json_number_value(an)};
            }
        json_decref(zs);
    }
    if (step != SQLITE_DONE) goto dberr;
    sqlite3_finalize(s);
    s = NULL;

    int nt = (int)json_array_size(names);
    /* the sorted order of the task names */
    json_t **sorted = malloc((size_t)(nt ? nt : 1) * sizeof *sorted);
    int *order = malloc((size_t)(nt ? nt : 1) * sizeof *order);
    if (!sorted || !order) { free(sorted); free(order); goto nomem; }
    for (int i = 0; i < nt; i++) sorted[i] = json_array_get(names, (size_t)i);
    qsort(sorted, (size_t)nt, sizeof *sorted, cmp_str);
    json_t *tasks = json_array();
    for (int i = 0; i < nt; i++) {
        json_array_append(tasks, sorted[i]);
        order[i] = task_index(names, json_string_value(sorted[i]));
    }
    free(sorted);
    json_object_set_new(lb, "zero_shot_tasks", tasks);

    json_t *bid = json_object_get(lb, "baseline_schedule_id");
    long long base = json_is_integer(bid) ? json_integer_value(bid) : -1;
    d1 = malloc((np ? np : 1) * sizeof *d1);
    d2 = malloc((np ? np : 1) * sizeof *d2);
    if (!d1 || !d2) { free(order); goto nomem; }
    json_t *rows = json_object_get(lb, "rows");
    size_t b1, b0 = points_range(pts, np, base, &b1);
    for (size_t r = 0; r < json_array_size(rows); r++) {
        json_t *row = json_array_get(rows, r), *zrow = json_object();
        long long sid = json_integer_value(json_object_get(row, "schedule_id"));
        size_t k1, k0 = points_range(pts, np, sid, &k1);
        for (int oi = 0; oi < nt; oi++) {
            int t = order[oi];
            double sa = 0, sn = 0;
            int n = 0, npair = 0;
            for (size_t k = k0; k < k1; k++)
                if (pts[k].task == t) { sa += pts[k].acc; sn += pts[k].acc_norm; n++; }
            if (n == 0) continue;
            double ma = sa / n, mn = sn / n, va = 0, vn = 0;
            for (size_t k = k0; k < k1; k++)
                if (pts[k].task == t) {
                    va += (pts[k].acc - ma) * (pts[k].acc - ma);
                    vn += (pts[k].acc_norm - mn) * (pts[k].acc_norm - mn);
                    if (sid != base)
                        for (size_t m = b0; m < b1; m++)
                            if (pts[m].task == t && pts[m].seed == pts[k].seed) {
                                d1[npair] = pts[k].acc_norm - pts[m].acc_norm;
                                d2[npair++] = pts[k].acc - pts[m].acc;
                                break;
                            }
                }
            json_t *cell = json_pack("{s:i, s:f, s:o, s:f, s:o, s:o, s:o}", "n", n, "acc_mean", ma, "acc_std",
                                     num_or_null(n > 1 ? sqrt(va / (n - 1)) : NAN), "acc_norm_mean", mn, "acc_norm_std",
                                     num_or_null(n > 1 ? sqrt(vn / (n - 1)) : NAN), "delta",
                                     sid == base ? json_null() : paired(d1, npair), "delta_acc",
                                     sid == base ? json_null() : paired(d2, npair));
            json_object_set_new(zrow, json_string_value(json_array_get(names, (size_t)t)), cell);
        }
        json_object_set_new(row, "zero_shot", zrow);
    }
    free(order);
    if (holm_table(rows, tasks, "delta") < 0 || holm_table(rows, tasks, "delta_acc") < 0) goto nomem;
    rc = STORE_OK;
    goto out;
nomem:
    snprintf(err, errlen, "out of memory");
    rc = STORE_EIO;
    goto out;
dberr:
    snprintf(err, errlen, "leaderboard zero-shot: %s", sqlite3_errmsg(st->db));
    rc = STORE_EIO;
out:
    sqlite3_finalize(s);
    free(pts);
    free(d1);
    free(d2);
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
        char h[512];
        snprintf(h, sizeof h, ",%s_acc_mean,%s_acc_norm_mean,%s_acc_norm_std,%s_delta_mean,%s_delta_ci_low,%s_delta_ci_high,"
                 "%s_delta_p,%s_delta_p_holm,%s_delta_significant", t, t, t, t, t, t, t, t, t);
        if (put(b, h)) return -1;
    }
    return 0;
}

int leaderboard_zero_shot_csv_row(const json_t *lb, const json_t *row, buf *b) {
    json_t *tasks = json_object_get(lb, "zero_shot_tasks"), *zs = json_object_get(row, "zero_shot");
    for (size_t i = 0; i < json_array_size(tasks); i++) {
        json_t *c = json_object_get(zs, json_string_value(json_array_get(tasks, i))), *d = json_object_get(c, "delta");
        char a[32], m[32], s[32], dm[32], lo[32], hi[32], p[32], ph[32], cell[320];
        fmt(a, sizeof a, json_object_get(c, "acc_mean"), "%.6f");
        fmt(m, sizeof m, json_object_get(c, "acc_norm_mean"), "%.6f");
        fmt(s, sizeof s, json_object_get(c, "acc_norm_std"), "%.6f");
        fmt(dm, sizeof dm, json_object_get(d, "mean"), "%.6f");
        fmt(lo, sizeof lo, json_object_get(d, "ci_low"), "%.6f");
        fmt(hi, sizeof hi, json_object_get(d, "ci_high"), "%.6f");
        fmt(p, sizeof p, json_object_get(d, "p"), "%.6g");
        fmt(ph, sizeof ph, json_object_get(d, "p_holm"), "%.6g");
        snprintf(cell, sizeof cell, ",%s,%s,%s,%s,%s,%s,%s,%s,%s", a, m, s, dm, lo, hi, p, ph,
                 json_is_object(d) ? (json_is_true(json_object_get(d, "significant")) ? "true" : "false") : "");
        if (put(b, cell)) return -1;
    }
    return 0;
}

int leaderboard_zero_shot_table(const json_t *lb, buf *b) {
    json_t *tasks = json_object_get(lb, "zero_shot_tasks"), *rows = json_object_get(lb, "rows");
    for (size_t i = 0; i < json_array_size(tasks); i++) {
        const char *t = json_string_value(json_array_get(tasks, i));
        char line[1024];
        snprintf(line, sizeof line, "\nzero-shot %s: acc_norm (llm.c's per-token rule; mean ± std over seeds), acc, delta acc_norm vs uniform "
                 "[95%% CI] (positive = better) p_holm over the zero-shot table\n%-4s  %-40s %-22s %-8s %s\n", t, "rank", "schedule", "acc_norm", "acc", "delta vs uniform");
        if (put(b, line)) return -1;
        for (size_t r = 0; r < json_array_size(rows); r++) {
            json_t *row = json_array_get(rows, r), *c = json_object_get(json_object_get(row, "zero_shot"), t);
            if (!json_is_object(c)) continue;
            char heads[512] = "", rank[16] = "-", an[64], acc[16], delta[192] = "";
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
                if (json_is_number(lo))
                {
                    double dm = json_number_value(json_object_get(d, "mean"));
                    snprintf(delta, sizeof delta, "%+.4f [%+.4f, %+.4f] n=%lld p_holm=%.3g%s", dm, json_number_value(lo),
                             json_number_value(hi), (long long)json_integer_value(json_object_get(d, "n")),
                             json_number_value(json_object_get(d, "p_holm")),
                             json_is_true(json_object_get(d, "significant")) ? (dm > 0 ? " ▲" : " ▼") : "");
                }
                else snprintf(delta, sizeof delta, "%+.4f n=1 (no CI)", json_number_value(json_object_get(d, "mean")));
            }
            snprintf(line, sizeof line, "%-4s  %-40s %-*s %-8s %s\n", rank, heads, 22 + (json_is_number(sd) ? 1 : 0), an, acc, delta);
            if (put(b, line)) return -1;
        }
    }
    return 0;
}
