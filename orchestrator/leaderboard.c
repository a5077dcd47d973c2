/* leaderboard.c — the sweep's answer rendered: JSON (the API and `prism-sweep leaderboard --format json`), CSV and
 * the terminal table, all from one ranking (ranking.c: the blocked model, the tests, the best group, what the
 * design can detect). Nothing here computes a statistic; it names, orders and formats what the ranking decided.
 * `prism-sweep leaderboard` prints it (cmd_leaderboard.c).
 */
#include "leaderboard.h"
#include "leaderboard_zeroshot.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ranking_build.h"
#include "search.h"
#include "schedule.h"
#include "buf.h"

/* A number, or null where it is not finite (json_real refuses inf and NaN: appended to an array, the element
 * would vanish and every later one shift — a 4-layer D_l array came back with 3 entries). */
static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *doubles(const double *v, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, num_or_null(v[i]));   /* never drops an element */
    return a;
}

static json_t *row_json(const ranking *rk, const ranking_row *x) {
    json_t *counts = json_object(), *vl = json_array();
    for (int q = 0; q < RANKING_NSTATES; q++) json_object_set_new(counts, jobstate_name((job_state)q), json_integer(x->counts[q]));
    for (int k = 0; k < x->nseeds; k++) {
        json_t *e = json_pack("{s:I, s:o}", "seed", (json_int_t)x->seed[k], "val_loss", num_or_null(x->val[k]));
        json_object_set_new(e, "val_loss_se", num_or_null(x->val_se[k]));
        json_array_append_new(vl, e);
    }
    json_t *row = json_pack("{s:o, s:I, s:o, s:b, s:i, s:i, s:o, s:o, s:o, s:o, s:o}",
                            "rank", x->rank > 0 ? json_integer(x->rank) : json_null(), "schedule_id", (json_int_t)x->schedule_id,
                            "heads", schedule_heads_json(x->heads), "is_baseline", x->is_baseline, "seeds_done", x->seeds_done,
                            "seeds_total", x->seeds_total, "counts", counts, "val_loss_mean", num_or_null(x->mean),
                            "val_loss_std", num_or_null(x->std), "val_losses", vl, "tok_per_s_mean", num_or_null(x->tps_mean));
    if (!row) return NULL;
    if (x->train && *x->train) {   /* a search over train keys: the values this candidate trained at */
        json_t *t = json_loads(x->train, 0, NULL);
        if (t) json_object_set_new(row, "train", t);
    }
    json_object_set_new(row, "attn_distance", x->L > 0 ? doubles(x->attn, x->L) : json_null());
    int nseed_attn = 0;
    for (int l = 0; l < x->L; l++) if (isfinite(x->attn_std[l])) nseed_attn = 1;
    json_object_set_new(row, "attn_distance_std", x->L > 0 && nseed_attn ? doubles(x->attn_std, x->L) : json_null());
    json_object_set_new(row, "tok_per_s_std", num_or_null(x->tps_std));
    if (rk->nrungs > 0) {   /* halving: the rung shown (rungs = the full run), its step, and whether it was pruned */
        json_object_set_new(row, "rung", json_integer(x->level));
        json_object_set_new(row, "rung_step", json_integer(rk->rung_step[x->level]));
        json_object_set_new(row, "pruned", json_boolean(x->pruned));
    }
    if (rk->racing) {   /* racing: survivor or the round it was eliminated at, its seeds, its Δ round by round */
        char key[32];
        snprintf(key, sizeof key, "%lld", x->schedule_id);
        json_t *h = json_object_get(json_object_get(rk->racing, "schedules"), key);
        int decided = json_integer_value(json_object_get(rk->racing, "rounds_decided")) > 0;
        json_t *o = json_pack("{s:s, s:O, s:i, s:O}", "status", h ? json_string_value(json_object_get(h, "status"))
                              : decided ? "not raced" : "survivor", "eliminated_round",
                              h ? json_object_get(h, "eliminated_round") : json_null(), "seeds_run", x->seeds_total,
                              "rounds", h ? json_object_get(h, "rounds") : json_array());
        if (!h) json_decref(json_object_get(o, "rounds"));   /* the fresh [] : O took its own reference */
        json_object_set_new(row, "racing", o);
    }
    if (rk->search) {   /* a surrogate search: the model's shrunken estimate of this trained schedule (null: none yet) */
        char key[32];
        snprintf(key, sizeof key, "%lld", x->schedule_id);
        json_t *h = json_object_get(json_object_get(rk->search, "by_schedule"), key);
        json_object_set_new(row, "surrogate", h ? json_deep_copy(h) : json_null());
    }
    json_t *delta = json_null();
    const ranking_cmp *c = &x->cmp;
    if (!x->is_baseline && c->has) {
        delta = json_pack("{s:i, s:f, s:o, s:o, s:o, s:b, s:o, s:o, s:b}", "n", c->n, "mean", c->mean, "std", num_or_null(c->sd),
                          "ci_low", num_or_null(c->ci_low), "ci_high", num_or_null(c->ci_high),
                          "excludes_zero", isfinite(c->ci_low) && (c->ci_low > 0 || c->ci_high < 0), "p", num_or_null(c->p),
                          "p_holm", num_or_null(c->p_holm), "significant", c->significant);
        json_object_set_new(delta, "se", num_or_null(c->se));
        json_object_set_new(delta, "df", num_or_null(c->df));
        json_object_set_new(delta, "method", json_string(c->method == RANKING_BLOCKED ? "blocked" : "paired"));
        if (rk->nrungs > 0) json_object_set_new(delta, "step", json_integer(rk->rung_step[x->level]));
    }
    json_object_set_new(row, "delta", delta);
    json_t *dattn = json_null(), *dci = json_null();
    if (x->dattn) {
        dattn = doubles(x->dattn, x->L);
        dci = json_array();
        for (int l = 0; l < x->L; l++)
            json_array_append_new(dci, isfinite(x->dattn_lo[l]) ? json_pack("[f, f]", x->dattn_lo[l], x->dattn_hi[l]) : json_null());
    }
    json_object_set_new(row, "delta_attn_distance", dattn);
    json_object_set_new(row, "delta_attn_distance_ci", dci);
    json_object_set_new(row, "provisional", json_boolean(x->provisional));
    /* the best group: true in it, false shown worse than a schedule of it, null not compared */
    json_object_set_new(row, "tied_best", x->best < 0 ? json_null() : json_boolean(x->best));
    json_object_set_new(row, "worse_than", x->best == 0 && x->worse_than >= 0 ? json_integer(x->worse_than) : json_null());
    json_t *vb = json_null();
    if (x->best >= 0 && isfinite(x->vs_best_mean))
        vb = json_pack("{s:i, s:f, s:o, s:o, s:b, s:o}", "n", x->vs_best_n, "mean", x->vs_best_mean, "se",
                       num_or_null(x->vs_best_se), "margin", num_or_null(x->vs_best_margin), "worse", x->best == 0,
                       "worse_than", x->best == 0 && x->worse_than >= 0 ? json_integer(x->worse_than) : json_null());
    json_object_set_new(row, "vs_best", vb);
    return row;
}

/* The jobs the outlier screen left out (ranking.screened, issue #37), each with its schedule's heads, and the
 * count of each row's (its "screened"). */
static json_t *screened_json(const ranking *rk, json_t *rows) {
    json_t *a = json_array();
    for (int k = 0; a && k < rk->nscreened; k++) {
        const ranking_screened *x = &rk->screened[k];
        const ranking_row *row = NULL;
        for (int i = 0; i < rk->nrows; i++) if (rk->rows[i].schedule_id == x->schedule_id) row = &rk->rows[i];
        json_t *e = json_pack("{s:I, s:I, s:o, s:I, s:i, s:o, s:o, s:o, s:s}", "job_id", (json_int_t)x->job_id,
                              "schedule_id", (json_int_t)x->schedule_id, "heads", row ? schedule_heads_json(row->heads) : json_null(),
                              "seed", (json_int_t)x->seed, "level", x->level, "val_loss", num_or_null(x->y),
                              "residual", num_or_null(x->residual), "threshold", num_or_null(x->threshold), "reason", x->reason);
        if (!e || json_array_append_new(a, e)) { json_decref(a); return NULL; }
        for (size_t i = 0; row && i < json_array_size(rows); i++) {
            json_t *r = json_array_get(rows, i);
            if (json_integer_value(json_object_get(r, "schedule_id")) == x->schedule_id)
                json_object_set_new(r, "screened", json_integer(json_integer_value(json_object_get(r, "screened")) + 1));
        }
    }
    return a;
}

json_t *leaderboard_from_ranking(const ranking *rk) {
    json_t *rows = json_array();
    for (int i = 0; i < rk->nrows; i++) {
        json_t *row = row_json(rk, &rk->rows[i]);
        if (row) json_object_set_new(row, "screened", json_integer(0));   /* counted by screened_json */
        if (!row || json_array_append_new(rows, row)) { json_decref(rows); return NULL; }
    }
    json_t *scr = screened_json(rk, rows);
    if (!scr) { json_decref(rows); return NULL; }
    json_t *lb = json_pack("{s:I, s:s, s:o, s:i, s:i, s:i, s:f, s:o}", "sweep_id", (json_int_t)rk->sweep_id, "name", rk->name,
                           "baseline_schedule_id", rk->baseline_id >= 0 ? json_integer(rk->baseline_id) : json_null(),
                           "seeds", rk->seeds, "comparisons", rk->comparisons,
                           "tied_best_comparisons", rk->best_family > 0 ? rk->best_family - 1 : 0, "alpha", RANKING_ALPHA,
                           "rows", rows);
    if (!lb) { json_decref(scr); return NULL; }
    json_object_set_new(lb, "arch", json_string(rk->arch));   /* the spec's model.arch ("gpt2" when absent) */
    json_object_set_new(lb, "analysis", ranking_analysis_json(rk));
    json_object_set_new(lb, "screened", scr);
    if (rk->halving) json_object_set(lb, "halving", rk->halving);
    if (rk->racing) {   /* the race's settings and spend; each schedule's rounds are in its row */
        json_t *rc = json_deep_copy(rk->racing);
        json_object_del(rc, "schedules");
        json_object_set_new(lb, "racing", rc);
    }
    if (rk->search) {   /* the search's settings and progress; each schedule's posterior is in its row */
        json_t *sc = json_deep_copy(rk->search);
        json_object_del(sc, "by_schedule");
        json_object_set_new(lb, "search", sc);
    }
    return lb;
}

int leaderboard_trainer_identities(store *st, long long sweep_id, json_t **out, char *note, size_t notelen, char *err,
                                   size_t errlen) {
    sqlite3_stmt *s = NULL;
    *out = NULL;
    if (notelen) note[0] = 0;
    if (sqlite3_prepare_v2(st->db, "SELECT r.trainer_command, r.trainer_version, count(*) FROM results r "
                           "JOIN jobs j ON j.id = r.job_id WHERE j.sweep_id = ?1 AND j.state = 'done' "
                           "GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2", -1, &s, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "trainer identities: %s", sqlite3_errmsg(st->db));
        return STORE_EIO;
    }
    sqlite3_bind_int64(s, 1, sweep_id);
    json_t *a = json_array();
    int step;
    while (a && (step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *cmd = (const char *)sqlite3_column_text(s, 0), *ver = (const char *)sqlite3_column_text(s, 1);
        json_t *o = json_pack("{s:o, s:o, s:I}", "command", cmd ? json_string(cmd) : json_null(),
                              "version", ver ? json_string(ver) : json_null(), "jobs", (json_int_t)sqlite3_column_int64(s, 2));
        if (!o || json_array_append_new(a, o) < 0) { json_decref(a); a = NULL; }
    }
    if (a && step != SQLITE_DONE) {
        snprintf(err, errlen, "trainer identities: %s", sqlite3_errmsg(st->db));
        json_decref(a);
        sqlite3_finalize(s);
        return STORE_EIO;
    }
    sqlite3_finalize(s);
    if (!a) { snprintf(err, errlen, "out of memory"); return STORE_EIO; }
    size_t n = json_array_size(a), i;
    json_t *x;
    int w = n > 1 ? snprintf(note, notelen, "results from %zu trainer identities (one ranking mixes them):", n) : 0;
    json_array_foreach(a, i, x) {
        if (n < 2 || w < 0 || (size_t)w >= notelen) break;
        const char *cmd = json_string_value(json_object_get(x, "command"));
        const char *ver = json_string_value(json_object_get(x, "version"));
        w += snprintf(note + w, notelen - w, "%s %lld job(s) by %s%.200s%s%s%.60s", i ? ";" : "",
                      (long long)json_integer_value(json_object_get(x, "jobs")), cmd ? "'" : "",
                      cmd ? cmd : "the built-in engine", cmd ? "'" : "", ver ? " version " : "", ver ? ver : "");
    }
    *out = a;
    return STORE_OK;
}

int leaderboard_build(store *st, long long sweep_id, json_t **out, char *err, size_t errlen) {
    *out = NULL;
    ranking *rk = NULL;
    int rc = ranking_build(st, sweep_id, -1, &rk, err, errlen);
    if (rc < 0) return rc;
    *out = leaderboard_from_ranking(rk);
    ranking_free(rk);
    if (!*out) { snprintf(err, errlen, "out of memory"); return STORE_EIO; }
    if (leaderboard_add_zero_shot(st, sweep_id, *out, err, errlen) < 0) {   /* per-task accuracy columns */
        json_decref(*out);
        *out = NULL;
        return STORE_EIO;
    }
    json_t *ids = NULL;   /* who trained the results: more than one (command, version) is said at the top */
    char note[1024];
    if (leaderboard_trainer_identities(st, sweep_id, &ids, note, sizeof note, err, errlen) < 0) {
        json_decref(*out);
        *out = NULL;
        return STORE_EIO;
    }
    json_object_set_new(*out, "trainer_identities", ids);
    if (note[0]) json_object_set_new(*out, "trainer_note", json_string(note));
    return STORE_OK;
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

/* heads_runs, then a search candidate's train values: "4×2 8×2 lr=0.0012 warmup_steps=40" */
static void row_label(const json_t *r, char *out, size_t n) {
    heads_runs(json_object_get(r, "heads"), out, n);
    size_t o = strlen(out);
    search_train_words(json_object_get(r, "train"), "", out + o, n - o);
}

static void fmt_num(char *out, size_t n, const json_t *v, const char *f) {
    if (json_is_number(v)) snprintf(out, n, f, json_number_value(v));
    else out[0] = 0;
}

/* the layers of D_l in this leaderboard (the first row that has them) */
static size_t lb_layers(const json_t *lb) {
    json_t *rows = json_object_get(lb, "rows");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *a = json_object_get(json_array_get(rows, i), "attn_distance");
        if (json_is_array(a)) return json_array_size(a);
    }
    return 0;
}

static int put(buf *b, const char *s) { return buf_append(b, s, strlen(s), BUF_MAX) < 0 ? -1 : 0; }

/* the cells after the zero-shot ones: delta_se, delta_df, method, D1..DL, dD1..dDL, dD1_ci_low.., dD1_ci_high.. */
static int csv_tail(const json_t *r, size_t L, buf *b) {
    json_t *d = json_object_get(r, "delta"), *a = json_object_get(r, "attn_distance"), *da = json_object_get(r, "delta_attn_distance"),
           *dci = json_object_get(r, "delta_attn_distance_ci");
    char cell[96], se[32] = "", df[32] = "";
    fmt_num(se, sizeof se, json_object_get(d, "se"), "%.6g");
    fmt_num(df, sizeof df, json_object_get(d, "df"), "%.0f");
    snprintf(cell, sizeof cell, ",%s,%s,%s", se, df, json_is_object(d) ? json_string_value(json_object_get(d, "method")) : "");
    if (put(b, cell)) return -1;
    for (int part = 0; part < 4; part++)
        for (size_t l = 0; l < L; l++) {
            json_t *v = part == 0 ? json_array_get(a, l) : part == 1 ? json_array_get(da, l)
                      : json_array_get(json_array_get(dci, l), part == 2 ? 0 : 1);
            char x[40];
            fmt_num(x, sizeof x, v, "%.6f");
            snprintf(cell, sizeof cell, ",%s", x);
            if (put(b, cell)) return -1;
        }
    return 0;
}

char *leaderboard_csv(const json_t *lb) {
    buf b = {0};
    const char *hdr = "rank,heads,is_baseline,seeds_done,seeds_total,val_loss_mean,val_loss_std,tok_per_s_mean,"
                      "delta_n,delta_mean,delta_ci_low,delta_ci_high,excludes_zero,p,p_holm,significant,provisional,tied_best,"
                      "tok_per_s_std\n";
    size_t L = lb_layers(lb);
    int with_train = 0;   /* a search over train keys: one more cell, the row's train values as JSON */
    for (size_t i = 0; i < json_array_size(json_object_get(lb, "rows")); i++)
        with_train |= json_object_get(json_array_get(json_object_get(lb, "rows"), i), "train") != NULL;
    if (buf_append(&b, hdr, strlen(hdr) - 1, BUF_MAX) < 0 ||
        (json_object_get(lb, "halving") && buf_append(&b, ",rung,pruned", 12, BUF_MAX) < 0) ||
        (json_object_get(lb, "racing") && put(&b, ",race_status,eliminated_round,seeds_run") < 0) ||
        (with_train && put(&b, ",train") < 0) ||
        leaderboard_zero_shot_csv_header(lb, &b) < 0 || put(&b, ",delta_se,delta_df,method")) { buf_free(&b); return NULL; }
    static const char *const part[4] = { "D", "dD", "dD%zu_ci_low", "dD%zu_ci_high" };
    for (int k = 0; k < 4; k++)
        for (size_t l = 1; l <= L; l++) {
            char h[48], name[40];
            if (k < 2) snprintf(name, sizeof name, "%s%zu", part[k], l); else snprintf(name, sizeof name, part[k], l);
            snprintf(h, sizeof h, ",%s", name);
            if (put(&b, h)) { buf_free(&b); return NULL; }
        }
    if (put(&b, ",screened\n")) { buf_free(&b); return NULL; }   /* the last column: the row's screened jobs */
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
        json_t *tb = json_object_get(r, "tied_best");   /* empty: not compared (pruned, or no value) */
        char hv[512] = "";   /* halving sweeps: two more cells, rung and pruned */
        if (json_object_get(lb, "halving"))
            snprintf(hv, sizeof hv, ",%lld,%s", (long long)json_integer_value(json_object_get(r, "rung")),
                     json_is_true(json_object_get(r, "pruned")) ? "true" : "false");
        if (json_object_get(lb, "racing")) {   /* racing sweeps: three more cells */
            json_t *rr = json_object_get(r, "racing"), *er = json_object_get(rr, "eliminated_round");
            char e[24] = "";
            if (json_is_integer(er)) snprintf(e, sizeof e, "%lld", (long long)json_integer_value(er));
            size_t u = strlen(hv);
            snprintf(hv + u, sizeof hv - u, ",%s,%s,%lld", json_string_value(json_object_get(rr, "status")), e,
                     (long long)json_integer_value(json_object_get(rr, "seeds_run")));
        }
        if (with_train) {   /* {"lr":0.001} as a CSV cell: quoted, its quotes doubled */
            char *t = json_object_get(r, "train") ? json_dumps(json_object_get(r, "train"), JSON_COMPACT | JSON_SORT_KEYS) : NULL;
            size_t u = strlen(hv);
            if (u + 2 < sizeof hv) hv[u++] = ',';
            if (t) {
                if (u + 1 < sizeof hv) hv[u++] = '"';
                for (const char *c = t; *c && u + 3 < sizeof hv; c++) { if (*c == '"') hv[u++] = '"'; hv[u++] = *c; }
                if (u + 1 < sizeof hv) hv[u++] = '"';
            }
            hv[u] = 0;
            free(t);
        }
        char line[8192];
        int n = snprintf(line, sizeof line, "%s,\"%s\",%s,%lld,%lld,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s%s", rank, heads,
                         json_is_true(json_object_get(r, "is_baseline")) ? "true" : "false",
                         (long long)json_integer_value(json_object_get(r, "seeds_done")),
                         (long long)json_integer_value(json_object_get(r, "seeds_total")), m, s, t, dn, dm, lo, hi, ex,
                         p, ph, sig, json_is_true(json_object_get(r, "provisional")) ? "true" : "false",
                         json_is_boolean(tb) ? (json_is_true(tb) ? "true" : "false") : "", ts, hv);
        if (n < 0 || buf_append(&b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), BUF_MAX) < 0 ||
            leaderboard_zero_shot_csv_row(lb, r, &b) < 0 || csv_tail(r, L, &b) < 0 ||
            (snprintf(line, sizeof line, ",%lld\n", (long long)json_integer_value(json_object_get(r, "screened"))), put(&b, line))) {
            buf_free(&b);
            return NULL;
        }
    }
    return b.data;
}

/* one row of the terminal table */
static void table_row(buf *b, const json_t *r, int halving) {
    json_t *d = json_object_get(r, "delta");
    char runs[2048], rank[16] = "-", loss[64] = "-", delta[200] = "", tps[64] = "-", seeds[64], line[8192];
    row_label(r, runs, sizeof runs);
    json_t *tb = json_object_get(r, "tied_best");
    if (json_is_integer(json_object_get(r, "rank")))
        snprintf(rank, sizeof rank, "%lld%s", (long long)json_integer_value(json_object_get(r, "rank")), json_is_true(tb) ? "=" : "");
    json_t *m = json_object_get(r, "val_loss_mean"), *s = json_object_get(r, "val_loss_std");
    if (json_is_number(m)) {
        if (json_is_number(s)) snprintf(loss, sizeof loss, "%.4f ± %.4f", json_number_value(m), json_number_value(s));
        else snprintf(loss, sizeof loss, "%.4f", json_number_value(m));
    }
    if (json_is_true(json_object_get(r, "is_baseline"))) snprintf(delta, sizeof delta, "(uniform baseline)");
    else if (json_is_object(d)) {
        json_t *lo = json_object_get(d, "ci_low"), *hi = json_object_get(d, "ci_high"), *ph = json_object_get(d, "p_holm");
        double mean = json_number_value(json_object_get(d, "mean"));
        const char *mark = json_is_true(json_object_get(d, "significant")) ? (mean < 0 ? " ▲" : " ▼") : "";
        char at[40] = "";
        if (halving && json_is_integer(json_object_get(d, "step")))
            snprintf(at, sizeof at, " @%lld", (long long)json_integer_value(json_object_get(d, "step")));
        if (json_is_number(lo))
            snprintf(delta, sizeof delta, "%+.4f [%+.4f, %+.4f] n=%lld p_holm=%.3g%s%s", mean, json_number_value(lo),
                     json_number_value(hi), (long long)json_integer_value(json_object_get(d, "n")),
                     json_is_number(ph) ? json_number_value(ph) : NAN, mark, at);
        else
            snprintf(delta, sizeof delta, "%+.4f n=%lld (no test)%s", mean, (long long)json_integer_value(json_object_get(d, "n")), at);
    }
    json_t *t = json_object_get(r, "tok_per_s_mean"), *ts = json_object_get(r, "tok_per_s_std");
    if (json_is_number(t)) {
        if (json_is_number(ts)) snprintf(tps, sizeof tps, "%.0f ± %.0f", json_number_value(t), json_number_value(ts));
        else snprintf(tps, sizeof tps, "%.0f", json_number_value(t));
    }
    snprintf(seeds, sizeof seeds, "%lld/%lld%s", (long long)json_integer_value(json_object_get(r, "seeds_done")),
             (long long)json_integer_value(json_object_get(r, "seeds_total")),
             json_is_true(json_object_get(r, "provisional")) && json_is_integer(json_object_get(r, "rank")) &&
             !json_is_integer(json_object_get(json_object_get(r, "racing"), "eliminated_round")) ? " prov" : "");
    if (json_object_get(r, "rung")) {   /* halving: the rung the row is at, and pruned schedules */
        size_t used = strlen(seeds);
        snprintf(seeds + used, sizeof seeds - used, " r%lld%s", (long long)json_integer_value(json_object_get(r, "rung")),
                 json_is_true(json_object_get(r, "pruned")) ? " pruned" : "");
    }
    json_t *race = json_object_get(r, "racing");
    if (json_is_integer(json_object_get(race, "eliminated_round"))) {   /* racing: the round it left the race */
        size_t used = strlen(seeds);
        snprintf(seeds + used, sizeof seeds - used, " out@%lld", (long long)json_integer_value(json_object_get(race, "eliminated_round")));
    }
    /* pad the run-length, loss and delta columns by display width (×, ±, ▲, ▼ are 2–3 bytes, 1 column) */
    int extra = 0, dextra = 0;
    for (const char *p = runs; *p; p++) if ((unsigned char)*p == 0xc3) extra++;
    for (const char *p = delta; *p; p++) if ((unsigned char)*p == 0xe2) dextra += 2;
    int n = snprintf(line, sizeof line, "%-4s  %-*s %-9s %-*s %-*s %s\n", rank, 28 + extra, runs, seeds,
                     22 + (json_is_number(s) ? 1 : 0), loss, 60 + dextra, delta, tps);
    buf_append(b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), BUF_MAX);
}

/* The jobs the outlier screen left out, and how to train them again; nothing when there are none. */
static void screened_table(const json_t *lb, buf *b) {
    json_t *scr = json_object_get(lb, "screened"), *x;
    size_t i;
    if (json_array_size(scr) == 0) return;
    char line[1024], runs[2048], sweep[300];
    int n = snprintf(line, sizeof line, "\nscreened: %zu job%s left out of the fit as outliers (not in any estimate above):\n"
                     "  %-8s %-28s %-6s %-10s %-9s %s\n", json_array_size(scr), json_array_size(scr) == 1 ? "" : "s",
                     "job", "schedule", "seed", "val loss", "residual", "reason");
    buf_append(b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), BUF_MAX);
    json_array_foreach(scr, i, x) {
        heads_runs(json_object_get(x, "heads"), runs, sizeof runs);
        int extra = 0;
        for (const char *p = runs; *p; p++) if ((unsigned char)*p == 0xc3) extra++;
        char v[32] = "", r[32] = "";
        fmt_num(v, sizeof v, json_object_get(x, "val_loss"), "%.4f");
        fmt_num(r, sizeof r, json_object_get(x, "residual"), "%+.2f");
        n = snprintf(line, sizeof line, "  %-8lld %-*s %-6lld %-10s %-9s %s\n", (long long)json_integer_value(json_object_get(x, "job_id")),
                     28 + extra, runs, (long long)json_integer_value(json_object_get(x, "seed")), v, r,
                     json_string_value(json_object_get(x, "reason")));
        buf_append(b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), BUF_MAX);
    }
    snprintf(sweep, sizeof sweep, "%s", json_string_value(json_object_get(lb, "name")));
    n = snprintf(line, sizeof line, "  to train them again (the old result is kept): prism-sweep requeue %s --state screened\n", sweep);
    buf_append(b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), BUF_MAX);
}

char *leaderboard_table(const json_t *lb) {
    buf b = {0};
    char line[8192];
    const char *arch = json_string_value(json_object_get(lb, "arch"));
    json_t *an = json_object_get(lb, "analysis"), *eq = json_object_get(an, "equal_variance"), *bg = json_object_get(an, "best_group");
    const char *method = json_string_value(json_object_get(an, "method"));
    int blocked = method && strcmp(method, "blocked") == 0;
    char sd[32] = "-", eqs[160] = "equal variances not testable (fewer than 3 schedules with 2+ seeds)";
    fmt_num(sd, sizeof sd, json_object_get(an, "pooled_sd"), "%.5f");
    if (json_is_object(eq))
        snprintf(eqs, sizeof eqs, "Bartlett's test of equal variances p = %.3g (%s)", json_number_value(json_object_get(eq, "p")),
                 json_is_true(json_object_get(eq, "passed")) ? "passed" : "rejected: each schedule carries its own variance");
    const char *cmp = json_string_value(json_object_get(an, "comparison"));
    int moderated = cmp && strstr(cmp, "moderated");
    double qp = json_number_value(json_object_get(bg, "permutation_critical")), qt = json_number_value(json_object_get(bg, "tukey_critical"));
    char bgs[160];
    snprintf(bgs, sizeof bgs, "not shown worse than any other (studentized range, 95%%%s)",
             json_is_number(json_object_get(bg, "permutation_critical")) && qp > qt
             ? "; critical value raised by permutation to the data's tails" : "");
    int n = snprintf(line, sizeof line,
                     "leaderboard of sweep %lld (%s, %s): %lld seeds per schedule\n"
                     "method: %s; residual df %lld, pooled sd %s; %s%s%s\n"
                     "delta = schedule - uniform (negative = lower loss), 95%% CI; %lld comparisons against uniform, Holm-adjusted "
                     "(p_holm); best group (=) over %lld schedules: %s\n",
                     (long long)json_integer_value(json_object_get(lb, "sweep_id")), json_string_value(json_object_get(lb, "name")),
                     arch ? arch : "gpt2", (long long)json_integer_value(json_object_get(lb, "seeds")),
                     !blocked ? "paired t-tests per schedule (fallback)" : moderated
                     ? "blocked model val_loss ~ schedule + seed over every finished job, moderated t per schedule (Satterthwaite df)"
                     : "blocked model val_loss ~ schedule + seed over every finished job, pooled t",
                     (long long)json_integer_value(json_object_get(an, "residual_df")), sd, eqs,
                     json_is_string(json_object_get(an, "fallback_reason")) ? "; fallback: " : "",
                     json_is_string(json_object_get(an, "fallback_reason")) ? json_string_value(json_object_get(an, "fallback_reason")) : "",
                     (long long)json_integer_value(json_object_get(lb, "comparisons")),
                     (long long)json_integer_value(json_object_get(bg, "family")),
                     blocked ? bgs : "not shown worse than any other (paired, Bonferroni)");
    buf_append(&b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), BUF_MAX);
    const char *note = json_string_value(json_object_get(an, "note"));
    if (note) { put(&b, note); put(&b, "\n"); }
    const char *tnote = json_string_value(json_object_get(lb, "trainer_note"));
    if (tnote) { put(&b, "WARNING: "); put(&b, tnote); put(&b, "\n"); }
    json_t *vn = json_object_get(an, "val_noise");
    if (json_is_object(vn)) {
        n = snprintf(line, sizeof line, "val sample: %lld batches; its share of a paired delta's variance %.0f%% (sd %.5f vs "
                     "seed-to-seed %.5f), of a seed-averaged delta's %.0f%% (sd %.5f vs the seeds' %.5f)%s\n",
                     (long long)json_integer_value(json_object_get(vn, "batches")), 100 * json_number_value(json_object_get(vn, "share")),
                     json_number_value(json_object_get(vn, "sd")), json_number_value(json_object_get(vn, "seed_sd")),
                     100 * json_number_value(json_object_get(vn, "share_mean")), json_number_value(json_object_get(vn, "sd_mean")),
                     json_number_value(json_object_get(vn, "seed_sd_mean")),
                     json_is_true(json_object_get(vn, "warn")) ? "  WARNING: more than a third of the seeds' sd" : "");
        buf_append(&b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), BUF_MAX);
    }
    json_t *hvj = json_object_get(lb, "halving"), *rows = json_object_get(lb, "rows");
    n = snprintf(line, sizeof line, "%-4s  %-28s %-9s %-22s %-60s %s\n", "rank", "schedule", "seeds", "val loss (mean ± std)",
                 "delta vs uniform [95% CI] p_holm", "tok/s (mean ± std)");
    buf_append(&b, line, (size_t)n, BUF_MAX);
    /* with halving: the survivors (compared with each other), then the pruned (each at the step it was pruned); with
     * racing the eliminated ones after those (each with the seeds it had when it left: out@round) */
    json_t *rcj = json_object_get(lb, "racing");
    for (int sec = 0; sec < 3; sec++) {
        if (sec == 1 && !hvj) continue;
        if (sec == 2 && !rcj) continue;
        if (sec == 1) put(&b, "pruned (not compared with the survivors; each delta measured at the step after @):\n");
        if (sec == 2) put(&b, "eliminated by racing (not compared with the survivors; out@R: eliminated at round R):\n");
        for (size_t i = 0; i < json_array_size(rows); i++) {
            json_t *r = json_array_get(rows, i);
            int out = rcj && json_is_integer(json_object_get(json_object_get(r, "racing"), "eliminated_round"));
            int pr = hvj && json_is_true(json_object_get(r, "pruned"));
            if ((sec == 2) != out || (!out && (sec == 1) != pr)) continue;
            table_row(&b, r, hvj != NULL);
        }
    }
    size_t L = lb_layers(lb);
    if (L > 0) {   /* attention distance: D_l per layer, and ΔD_l vs uniform with its paired 95% CI */
        put(&b, "\nattention distance D_l (mean over seeds; query positions T/2..T-1) and delta vs uniform [95% CI]:\n");
        for (size_t i = 0; i < json_array_size(rows); i++) {
            json_t *r = json_array_get(rows, i), *a = json_object_get(r, "attn_distance"), *da = json_object_get(r, "delta_attn_distance"),
                   *ci = json_object_get(r, "delta_attn_distance_ci");
            if (!json_is_array(a)) continue;
            char runs[2048];
            row_label(r, runs, sizeof runs);
            n = snprintf(line, sizeof line, "  %s:", runs);
            for (size_t l = 0; l < json_array_size(a) && n < (int)sizeof line - 96; l++) {
                n += snprintf(line + n, sizeof line - (size_t)n, " %.2f", json_number_value(json_array_get(a, l)));
                if (json_is_array(da)) {
                    json_t *c = json_array_get(ci, l);
                    if (json_is_array(c))
                        n += snprintf(line + n, sizeof line - (size_t)n, " (%+.2f [%+.2f, %+.2f])", json_number_value(json_array_get(da, l)),
                                      json_number_value(json_array_get(c, 0)), json_number_value(json_array_get(c, 1)));
                    else n += snprintf(line + n, sizeof line - (size_t)n, " (%+.2f)", json_number_value(json_array_get(da, l)));
                }
            }
            if (n < (int)sizeof line - 1) line[n++] = '\n';
            buf_append(&b, line, (size_t)n, BUF_MAX);
        }
    }
    leaderboard_zero_shot_table(lb, &b);
    screened_table(lb, &b);
    if (hvj) {   /* successive halving: what was spent against the full grid */
        long long tr = json_integer_value(json_object_get(hvj, "steps_trained")), fu = json_integer_value(json_object_get(hvj, "full_grid_steps"));
        n = snprintf(line, sizeof line, "halving (eta %lld, %s): ranked by the highest rung reached (rN; the full run is r%lld), "
                     "then by delta at that rung; tokens spent: %lld of the full grid's %lld (steps %lld of %lld, %.1f%%)\n",
                     (long long)json_integer_value(json_object_get(hvj, "eta")), json_string_value(json_object_get(hvj, "mode")),
                     (long long)json_array_size(json_object_get(hvj, "rungs")),
                     (long long)json_integer_value(json_object_get(hvj, "tokens_spent")),
                     (long long)json_integer_value(json_object_get(hvj, "full_grid_tokens")), tr, fu, fu > 0 ? 100.0 * tr / fu : 0.0);
        buf_append(&b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), BUF_MAX);
    }
    if (rcj) {   /* racing: what was spent against the fixed design */
        long long sp = json_integer_value(json_object_get(rcj, "seeds_spent")), fx = json_integer_value(json_object_get(rcj, "fixed_design_seeds"));
        n = snprintf(line, sizeof line, "racing (max_seeds %lld, alpha %g over all rounds, %.4g per round): %lld round(s) "
                     "decided%s, %lld survivor(s), %lld eliminated; seeds spent %lld of the fixed design's %lld "
                     "(max_seeds x schedules, %.1f%%)\n",
                     (long long)json_integer_value(json_object_get(rcj, "max_seeds")), json_number_value(json_object_get(rcj, "alpha")),
                     json_is_number(json_object_get(rcj, "alpha_round")) ? json_number_value(json_object_get(rcj, "alpha_round"))
                                                                         : json_number_value(json_object_get(rcj, "alpha_per_round")),
                     (long long)json_integer_value(json_object_get(rcj, "rounds_decided")),
                     json_is_true(json_object_get(rcj, "finished")) ? " (finished)" : "",
                     (long long)json_integer_value(json_object_get(rcj, "survivors")),
                     (long long)json_integer_value(json_object_get(rcj, "eliminated")), sp, fx, fx > 0 ? 100.0 * sp / fx : 0.0);
        buf_append(&b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), BUF_MAX);
    }
    if (json_is_object(json_object_get(lb, "search")))   /* a surrogate search: its recommendation and progress */
        search_summary_text(json_object_get(lb, "search"), &b, BUF_MAX);
    const char *foot = "▲ significantly better than uniform, ▼ significantly worse (p_holm < 0.05), in every column; "
                       "= in the best group: not shown to be worse than any other schedule (it is not a claim of equality); "
                       "prov = provisional: fewer finished seeds than the sweep's, listed after the complete schedules\n";
    put(&b, foot);
    return b.data;
}

/* display columns of s[0..n): its UTF-8 code points (the table's ± × ▲ are one column each) */
static int cols_of(const char *s, size_t n) {
    int c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

char *leaderboard_wrap(const char *text, int width) {
    buf b = {0};
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
        if (width <= 0 || cols_of(p, (size_t)(end - p)) <= width) {
            if (buf_append(&b, p, (size_t)(end - p), BUF_MAX) < 0) goto nomem;
        } else {
            const char *q = p;   /* the rest of the line */
            int first = 1;
            while (q < end) {
                int room = first ? width : width - 6, used = 0;
                const char *cut = NULL, *x = q;
                for (; x < end; x++) {   /* the last space that keeps the piece within room */
                    if (((unsigned char)*x & 0xC0) != 0x80 && ++used > room) break;
                    if (*x == ' ' && x > q) cut = x;
                }
                if (x >= end) cut = end;
                else if (!cut) {   /* one word wider than the room: up to its end */
                    cut = x;
                    while (cut < end && *cut != ' ') cut++;
                }
                const char *e = cut;
                while (e > q && e[-1] == ' ') e--;   /* no trailing blanks */
                if ((!first && buf_append(&b, "      ", 6, BUF_MAX) < 0) || buf_append(&b, q, (size_t)(e - q), BUF_MAX) < 0)
                    goto nomem;
                q = cut;
                while (q < end && *q == ' ') q++;
                if (q < end && buf_append(&b, "\n", 1, BUF_MAX) < 0) goto nomem;
                first = 0;
            }
        }
        if (nl && buf_append(&b, "\n", 1, BUF_MAX) < 0) goto nomem;
        p = nl ? nl + 1 : end;
    }
    if (buf_append(&b, "", 1, BUF_MAX) < 0) goto nomem;   /* the terminator */
    return b.data;
nomem:
    buf_free(&b);
    return NULL;
}
