/* cmd_export.c — `prism-sweep export SWEEP --db FILE --format csv|jsonl|tensorboard --out DIR`: every job's
 * metric points and results of one sweep, in one pass, where researchers look at them.
 *
 * Design: a read command (the store opened read-only). The jobs of the sweep are read once into memory (id,
 * schedule, seed, state, result), then one query streams the sweep's metric points ordered by job, kind and
 * step — the curve the API serves (for a step several attempts reported, the latest attempt's point) — and
 * each format writes them as they come:
 *   csv          DIR/metrics.csv (one row per point), DIR/results.csv (one row per job) and DIR/extras.csv (an
 *                external trainer's own metrics, long format: one row per point and name)
 *   jsonl        DIR/metrics.jsonl and DIR/results.jsonl, the same rows as JSON objects (a point's "extra" with it)
 *   tensorboard  DIR/<run>/events.out.tfevents.<t>.prism-sweep, one run per job (run = job<ID>_<rle>_seed<S>, ID
 *                zero-padded to the sweep's largest id's digits so that the runs sort as the jobs),
 *                tags train/loss, train/lr, train/tok_per_s, train/grad_norm, val/loss, val/loss_se at each step, a
 *                train point's extras as extra/NAME and a val point's as val/extra/NAME, and
 *                result/val_loss, result/tok_per_s, result/attn_distance/layerNN, result/zero_shot/TASK/acc,
 *                acc_norm and acc_norm_char (when the result has it), result/extra/NAME at the job's last step
 *                (tfevents.c writes the files); for the HParams dashboard each run opens with its session_start_info
 *                (the job's hparams: tb_hparams) and ends with its session_end_info (status), and
 *                DIR/events.out.tfevents.<t>.prism-sweep holds the experiment (every hparam with the values the jobs
 *                take, the metrics: tb_experiment)
 * and every format writes DIR/sweep.json (id, name, the spec as given). Each file is written to a temporary
 * name, fsynced and renamed (util_commit_file), so DIR never holds half a file; the summary line is printed
 * after the last one is durable. Numbers in CSV use %.17g (they read back as the stored doubles).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonout.h"
#include "cli.h"
#include "commands.h"
#include "job.h"
#include "jobstate.h"
#include "point.h"
#include "store.h"
#include "sweeps.h"
#include "tfevents.h"
#include "util.h"

typedef struct xjob {
    long long id, schedule_id, seed, attempt, steps;
    int is_baseline, has_result;
    char heads[512], state[16];
    char *last_error, *attn, *result, *job;   /* malloc'd or NULL; job: the job JSON a worker trains */
    double created_at, updated_at, finished_at;   /* finished_at 0: not finished */
    json_t *hp;   /* tensorboard: the run's hparams (tb_hparams), NULL otherwise */
    double r_val, r_tps, r_wall, r_flops;
    long long r_params;
    int r_has_tps, r_has_wall, r_has_flops, r_has_params;
} xjob;

typedef struct xout {   /* one output file: temporary while written, renamed at commit */
    FILE *f;
    char path[4200], tmp[4300];
} xout;

enum { FMT_CSV, FMT_JSONL, FMT_TB };

static int out_open(xout *o, const char *dir, const char *name, char *err, size_t errlen) {
    snprintf(o->path, sizeof o->path, "%s/%s", dir, name);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", o->path, (long)getpid());
    if (!(o->f = fopen(o->tmp, "wbx"))) {
        snprintf(err, errlen, "%s: create failed: %s", o->tmp, strerror(errno));
        return -1;
    }
    return 0;
}
static int out_commit(xout *o, char *err, size_t errlen) {
    FILE *f = o->f;
    o->f = NULL;
    return f ? util_commit_file(f, o->tmp, o->path, err, errlen) : 0;
}
static void out_abort(xout *o) {
    if (o->f) { fclose(o->f); unlink(o->tmp); }
    o->f = NULL;
}

/* A CSV text field: quoted when it holds a comma, quote, CR or LF (quotes doubled). Text that comes from a worker or
 * a trainer (an error message) is not trusted: a cell starting with = + - @ TAB or CR is what a spreadsheet runs as a
 * formula, so it gets a leading ' (OWASP's CSV injection advice), and control bytes other than LF (ESC sequences
 * for a terminal that cats the file) are written as spaces. Numbers are never written through here. */
static void csv_str(FILE *f, const char *s) {
    if (!s) return;
    int formula = strchr("=+-@\t\r", *s) != NULL && *s, ctl = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) ctl |= (*p < 0x20 && *p != '\n') || *p == 0x7f;
    if (!formula && !ctl && !strpbrk(s, ",\"\r\n")) { fputs(s, f); return; }
    fputc('"', f);
    if (formula) fputc('\'', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc((*p < 0x20 && *p != '\n') || *p == 0x7f ? ' ' : *p, f);
    }
    fputc('"', f);
}
static void csv_num(FILE *f, sqlite3_stmt *s, int col) {
    if (sqlite3_column_type(s, col) == SQLITE_NULL) return;
    if (sqlite3_column_type(s, col) == SQLITE_INTEGER) fprintf(f, "%lld", (long long)sqlite3_column_int64(s, col));
    else fprintf(f, "%.17g", sqlite3_column_double(s, col));
}
static json_t *col_num(sqlite3_stmt *s, int col) {
    int t = sqlite3_column_type(s, col);
    return t == SQLITE_NULL ? json_null() : t == SQLITE_INTEGER ? json_integer(sqlite3_column_int64(s, col))
                                                                  : json_real(sqlite3_column_double(s, col));
}
static char *dup_col(sqlite3_stmt *s, int col) {
    const unsigned char *t = sqlite3_column_text(s, col);
    return t ? strdup((const char *)t) : NULL;
}

/* "3,3,6,6,12" -> "3x2-6x2-12x1": a run name without commas. */
static void heads_rle(const char *heads, char *out, size_t n) {
    size_t k = 0;
    out[0] = 0;
    const char *p = heads;
    while (*p && k + 24 < n) {
        long v = strtol(p, (char **)&p, 10), c = 1;
        while (*p == ',' && strtol(p + 1, NULL, 10) == v) { strtol(p + 1, (char **)&p, 10); c++; }
        if (*p == ',') p++;
        k += (size_t)snprintf(out + k, n - k, "%s%ldx%ld", k ? "-" : "", v, c);
    }
}

static const char JOBS_SQL[] =
    "SELECT j.id, j.schedule_id, sc.heads, sc.is_baseline, j.seed, j.state, j.attempt, j.steps, j.last_error, "
    " j.created_at, j.updated_at, r.job_id IS NOT NULL, r.val_loss, r.tok_per_s, r.wall_s, r.params, r.flops_per_token, "
    " r.attn_distance, r.result, j.job, coalesce(j.finished_at, 0) "
    "FROM jobs j JOIN schedules sc ON sc.id = j.schedule_id LEFT JOIN results r ON r.job_id = j.id "
    "WHERE j.sweep_id = ?1 ORDER BY j.id";

static const char POINTS_SQL[] =
    "SELECT m.job_id, m.kind, m.step, m.value, m.tokens, m.lr, m.tok_per_s, m.grad_norm, m.attempt, m.val_loss_se, m.extra, "
    "m.t "
    "FROM metrics m JOIN jobs j ON j.id = m.job_id WHERE j.sweep_id = ?1 AND m.attempt = "
    "(SELECT max(attempt) FROM metrics m2 WHERE m2.job_id = m.job_id AND m2.kind = m.kind AND m2.step = m.step) "
    "ORDER BY m.job_id, m.kind, m.step";
/* POINTS_SQL's columns from 3 on, in its order, which is also the CSV's and the JSONL keys' (an interface): a new
 * one is appended to both. */
static const char *const POINT_COLS[] = { "value", "tokens", "lr", "tok_per_s", "grad_norm", "attempt", "val_loss_se" };
#define N_POINT_COLS ((int)(sizeof POINT_COLS / sizeof POINT_COLS[0]))
#define POINT_EXTRA_COL (3 + N_POINT_COLS)   /* m.extra: JSON text {name: number} or NULL (sql/016_metric_extras.sql) */
#define POINT_TIME_COL (4 + N_POINT_COLS)    /* m.t: Unix seconds the point was stored, NULL before migration 19 */

/* The point's extras as stored (the server checked them: common/point.h point_extra_check), or NULL. */
static json_t *point_extra(sqlite3_stmt *s) {
    const unsigned char *t = sqlite3_column_text(s, POINT_EXTRA_COL);
    json_t *o = t ? json_loads((const char *)t, 0, NULL) : NULL;
    if (o && !json_is_object(o)) { json_decref(o); o = NULL; }
    return o;
}

static void free_jobs(xjob *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(v[i].last_error); free(v[i].attn); free(v[i].result); free(v[i].job);
        json_decref(v[i].hp);
    }
    free(v);
}

static int load_jobs(store *st, long long sweep, xjob **out, size_t *n, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    xjob *v = NULL;
    size_t k = 0, cap = 0;
    int rc;
    if (sqlite3_prepare_v2(st->db, JOBS_SQL, -1, &s, NULL) != SQLITE_OK) goto fail;
    sqlite3_bind_int64(s, 1, sweep);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (k == cap) {
            cap = cap ? cap * 2 : 64;
            xjob *nv = realloc(v, cap * sizeof *v);
            if (!nv) { snprintf(err, errlen, "out of memory"); goto out; }
            v = nv;
        }
        xjob *j = &v[k++];
        memset(j, 0, sizeof *j);
        j->id = sqlite3_column_int64(s, 0);
        j->schedule_id = sqlite3_column_int64(s, 1);
        snprintf(j->heads, sizeof j->heads, "%s", (const char *)sqlite3_column_text(s, 2));
        j->is_baseline = sqlite3_column_int(s, 3);
        j->seed = sqlite3_column_int64(s, 4);
        snprintf(j->state, sizeof j->state, "%s", (const char *)sqlite3_column_text(s, 5));
        j->attempt = sqlite3_column_int64(s, 6);
        j->steps = sqlite3_column_int64(s, 7);
        j->last_error = dup_col(s, 8);
        j->created_at = sqlite3_column_double(s, 9);
        j->updated_at = sqlite3_column_double(s, 10);
        j->has_result = sqlite3_column_int(s, 11);
        j->r_val = sqlite3_column_double(s, 12);
        if ((j->r_has_tps = sqlite3_column_type(s, 13) != SQLITE_NULL)) j->r_tps = sqlite3_column_double(s, 13);
        if ((j->r_has_wall = sqlite3_column_type(s, 14) != SQLITE_NULL)) j->r_wall = sqlite3_column_double(s, 14);
        if ((j->r_has_params = sqlite3_column_type(s, 15) != SQLITE_NULL)) j->r_params = sqlite3_column_int64(s, 15);
        if ((j->r_has_flops = sqlite3_column_type(s, 16) != SQLITE_NULL)) j->r_flops = sqlite3_column_double(s, 16);
        j->attn = dup_col(s, 17);
        j->result = dup_col(s, 18);
        j->job = dup_col(s, 19);
        j->finished_at = sqlite3_column_double(s, 20);
    }
    if (rc != SQLITE_DONE) goto fail;
    sqlite3_finalize(s);
    *out = v;
    *n = k;
    return 0;
fail:
    snprintf(err, errlen, "reading the jobs: %s", sqlite3_errmsg(st->db));
out:
    sqlite3_finalize(s);
    free_jobs(v, k);
    return -1;
}

/* The sweep's row of SQL (which selects from sweeps WHERE id = ?1) in *out, stepped to it; -1 with err set. */
static int sweep_row(store *st, long long sweep, const char *sql, sqlite3_stmt **out, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK ||
        (sqlite3_bind_int64(s, 1, sweep), sqlite3_step(s)) != SQLITE_ROW) {
        snprintf(err, errlen, "reading the sweep: %s", sqlite3_errmsg(st->db));
        sqlite3_finalize(s);
        return -1;
    }
    *out = s;
    return 0;
}

static int write_sweep_json(store *st, long long sweep, const char *dir, char *err, size_t errlen) {
    sqlite3_stmt *s;
    if (sweep_row(st, sweep, "SELECT id, name, spec, created_at FROM sweeps WHERE id = ?1", &s, err, errlen) < 0) return -1;
    json_t *spec = json_loads((const char *)sqlite3_column_text(s, 2), 0, NULL);
    json_t *o = json_pack("{s:I, s:s, s:f, s:o}", "id", (json_int_t)sqlite3_column_int64(s, 0), "name",
                          (const char *)sqlite3_column_text(s, 1), "created_at", sqlite3_column_double(s, 3),
                          "spec", spec ? spec : json_null());
    sqlite3_finalize(s);
    char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSONOUT_FLAGS) : NULL;
    json_decref(o);
    if (!text) { snprintf(err, errlen, "out of memory"); return -1; }
    char path[4200];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    util_part parts[] = { { text, strlen(text) }, { "\n", 1 } };
    int rc = util_write_atomic(path, parts, 2, 0644, err, errlen);
    free(text);
    return rc;
}

static void csv_results(FILE *f, const xjob *v, size_t n) {
    fputs("job_id,schedule_id,schedule,is_baseline,seed,state,attempt,steps,val_loss,tok_per_s,wall_s,params,"
          "flops_per_token,attn_distance,last_error\n", f);
    for (size_t i = 0; i < n; i++) {
        const xjob *j = &v[i];
        fprintf(f, "%lld,%lld,", j->id, j->schedule_id);
        csv_str(f, j->heads);
        fprintf(f, ",%d,%lld,%s,%lld,%lld,", j->is_baseline, j->seed, j->state, j->attempt, j->steps);
        if (j->has_result) fprintf(f, "%.17g", j->r_val);
        fputc(',', f);
        if (j->has_result && j->r_has_tps) fprintf(f, "%.17g", j->r_tps);
        fputc(',', f);
        if (j->has_result && j->r_has_wall) fprintf(f, "%.17g", j->r_wall);
        fputc(',', f);
        if (j->has_result && j->r_has_params) fprintf(f, "%lld", j->r_params);
        fputc(',', f);
        if (j->has_result && j->r_has_flops) fprintf(f, "%.17g", j->r_flops);
        fputc(',', f);
        csv_str(f, j->attn);
        fputc(',', f);
        /* a done job's error belongs to an earlier attempt: the results say what the job is now */
        csv_str(f, strcmp(j->state, jobstate_name(JOB_DONE)) ? j->last_error : NULL);
        fputc('\n', f);
    }
}

static int jsonl_line(FILE *f, json_t *o) {
    char *t = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSONOUT_FLAGS);
    json_decref(o);
    if (!t) return -1;
    fputs(t, f);
    fputc('\n', f);
    free(t);
    return 0;
}

static json_t *job_head(const xjob *j) {
    return json_pack("{s:I, s:I, s:o, s:b, s:I}", "job_id", (json_int_t)j->id, "schedule_id", (json_int_t)j->schedule_id,
                     "heads", schedule_heads_json(j->heads), "is_baseline", j->is_baseline, "seed", (json_int_t)j->seed);
}

static int jsonl_results(FILE *f, const xjob *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const xjob *j = &v[i];
        json_t *o = job_head(j);
        json_t *res = j->result ? json_loads(j->result, 0, NULL) : NULL;
        json_object_set_new(o, "state", json_string(j->state));
        json_object_set_new(o, "attempt", json_integer(j->attempt));
        json_object_set_new(o, "steps", json_integer(j->steps));
        json_object_set_new(o, "val_loss", j->has_result ? json_real(j->r_val) : json_null());
        json_object_set_new(o, "last_error", j->last_error && strcmp(j->state, jobstate_name(JOB_DONE)) ? json_string(j->last_error) : json_null());
        json_object_set_new(o, "result", res ? res : json_null());
        if (jsonl_line(f, o) < 0) return -1;
    }
    return 0;
}

/* TensorBoard: one writer per job, opened at its first point (or result). */
typedef struct tbstate {
    tfevents w;
    int open;
    size_t job;
    int idw;          /* digits of the sweep's largest job id: run names are zero-padded to it, so they sort by id */
} tbstate;

/* A run's hparams for TensorBoard's HParams dashboard (its session_start_info), in this order: schedule (as the
 * schedules table spells it, "1,1,4,4"), schedule_rle (the run name's "1x2-4x2"), seed, is_baseline, state, and
 * from the job JSON (defaults filled in by the job module): arch, n_layer, d_model, vocab_size, seq_len (train's),
 * batch_size, grad_accum, steps, tokens (batch_size x seq_len x grad_accum x steps), lr, lr_schedule, warmup_steps,
 * min_lr_frac, weight_decay, grad_clip, then trainer and each trainer_args.NAME when the job has them. Numbers are
 * doubles (google.protobuf.Value's only number). A job JSON the job module refuses (an older store's) gives only the
 * first five. NULL when out of memory. */
static json_t *tb_hparams(const xjob *j) {
    char rle[400], jerr[256];
    heads_rle(j->heads, rle, sizeof rle);
    json_t *o = json_pack("{s:s, s:s, s:f, s:b, s:s}", "schedule", j->heads, "schedule_rle", rle, "seed", (double)j->seed,
                          "is_baseline", j->is_baseline, "state", j->state);
    struct job_config c;
    if (!o || !j->job || job_parse_json(j->job, &c, jerr, sizeof jerr) < 0) return o;
    const struct job_train *t = &c.train;
    json_t *more = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:s, s:f, s:f, s:f, s:f}",
                             "arch", c.model.arch[0] ? c.model.arch : "gpt2", "n_layer", (double)c.model.n_layer,
                             "d_model", (double)c.model.d_model, "vocab_size", (double)c.model.vocab_size,
                             "seq_len", (double)t->seq_len, "batch_size", (double)t->batch_size,
                             "grad_accum", (double)t->grad_accum, "steps", (double)t->steps,
                             "tokens", (double)t->batch_size * t->seq_len * t->grad_accum * t->steps, "lr", t->lr,
                             "lr_schedule", t->lr_schedule, "warmup_steps", (double)t->warmup_steps,
                             "min_lr_frac", t->min_lr_frac, "weight_decay", t->weight_decay, "grad_clip", t->grad_clip);
    int rc = more ? json_object_update(o, more) : -1;
    json_decref(more);
    if (rc == 0 && c.trainer[0]) rc = json_object_set_new(o, "trainer", json_string(c.trainer));
    json_t *args = c.trainer_args ? json_loads(c.trainer_args, 0, NULL) : NULL;
    const char *k;
    json_t *x;
    json_object_foreach(args, k, x) {   /* job_trainer_args_check: strings, finite numbers, booleans */
        char name[JOB_TRAINER_ARG_NAME_MAX + 16];
        snprintf(name, sizeof name, "trainer_args.%s", k);
        if (rc == 0) rc = json_object_set_new(o, name, json_is_integer(x) ? json_real((double)json_integer_value(x))
                                                                            : json_copy(x));
    }
    json_decref(args);
    job_release(&c);
    if (rc < 0) { json_decref(o); return NULL; }
    return o;
}

/* Orders a domain's values: booleans (false first), then numbers, then strings (bytewise). */
static int hp_rank(const json_t *x) { return json_is_boolean(x) ? 0 : json_is_number(x) ? 1 : 2; }
static int hp_cmp(const void *pa, const void *pb) {
    const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
    int ra = hp_rank(a), rb = hp_rank(b);
    if (ra != rb) return ra - rb;
    if (ra == 0) return json_is_true(a) - json_is_true(b);
    if (ra == 1) return (json_number_value(a) > json_number_value(b)) - (json_number_value(a) < json_number_value(b));
    return strcmp(json_string_value(a), json_string_value(b));
}

/* {name: [each distinct value the runs' hparams take, sorted]}, names in first-seen order; NULL when out of memory. */
static json_t *tb_domains(const xjob *v, size_t n) {
    json_t *seen = json_object(), *domains = json_object();   /* seen: name -> {value's JSON text: true} */
    int rc = seen && domains ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *k;
        json_t *x;
        json_object_foreach(v[i].hp, k, x) {
            json_t *set = json_object_get(seen, k);
            if (!set && (json_object_set_new(seen, k, set = json_object()) < 0 ||
                         json_object_set_new(domains, k, json_array()) < 0)) { rc = -1; break; }
            char *text = json_dumps(x, JSON_ENCODE_ANY | JSONOUT_FLAGS);
            if (!text) { rc = -1; break; }
            if (!json_object_get(set, text) && (json_object_set_new(set, text, json_true()) < 0 ||
                                                json_array_append(json_object_get(domains, k), x) < 0)) rc = -1;
            free(text);
            if (rc < 0) break;
        }
    }
    json_decref(seen);
    const char *k;
    json_t *arr;
    json_object_foreach(domains, k, arr) {
        size_t m = json_array_size(arr);
        json_t **xs = rc == 0 ? malloc((m ? m : 1) * sizeof *xs) : NULL;
        if (!xs) { rc = -1; break; }
        for (size_t i = 0; i < m; i++) xs[i] = json_incref(json_array_get(arr, i));
        qsort(xs, m, sizeof *xs, hp_cmp);
        json_array_clear(arr);
        for (size_t i = 0; i < m; i++) if (json_array_append_new(arr, xs[i]) < 0) rc = -1;
        free(xs);
    }
    if (rc < 0) { json_decref(domains); return NULL; }
    return domains;
}

/* The metrics the HParams dashboard shows for each run: the session's own scalar tags (group "": the run itself). */
static const tfevents_metric TB_METRICS[] = {
    { "", "result/val_loss", TFEVENTS_DATASET_VALIDATION }, { "", "result/tok_per_s", TFEVENTS_DATASET_UNKNOWN },
    { "", "val/loss", TFEVENTS_DATASET_VALIDATION }, { "", "train/loss", TFEVENTS_DATASET_TRAINING },
};

/* DIR/events.out.tfevents.<sweep's creation>.prism-sweep: the experiment summary (every hparam with its values, the
 * metrics) that TensorBoard reads from the top folder, the "empty run". */
static int tb_experiment(store *st, long long sweep, const char *dir, const xjob *v, size_t n, char *err, size_t errlen) {
    sqlite3_stmt *s;
    if (sweep_row(st, sweep, "SELECT name, created_at FROM sweeps WHERE id = ?1", &s, err, errlen) < 0) return -1;
    char desc[600], path[4400];
    double created = sqlite3_column_double(s, 1);
    snprintf(desc, sizeof desc, "prism-sweep sweep %.500s (id %lld)", (const char *)sqlite3_column_text(s, 0), sweep);
    sqlite3_finalize(s);
    json_t *domains = tb_domains(v, n);
    if (!domains) { snprintf(err, errlen, "out of memory"); return -1; }
    snprintf(path, sizeof path, "%s/events.out.tfevents.%lld.prism-sweep", dir, (long long)created);
    tfevents w;
    int rc = tfevents_open(&w, path, created);
    if (rc == 0) rc = tfevents_hparams_experiment(&w, created, desc, created, domains, TB_METRICS,
                                                  sizeof TB_METRICS / sizeof TB_METRICS[0]);
    if (rc < 0) tfevents_abort(&w);
    else rc = tfevents_close(&w);
    if (rc < 0) snprintf(err, errlen, "%s", w.err);
    json_decref(domains);
    return rc;
}

/* The HParams plugin's status of a job in STATE: done succeeded, failed failed, leased runs; the others (queued,
 * paused, cancelled, pruned) are unknown to it (the state hparam says which). */
static int tb_status(const char *state) {
    return !strcmp(state, jobstate_name(JOB_DONE)) ? TFEVENTS_STATUS_SUCCESS
         : !strcmp(state, jobstate_name(JOB_FAILED)) ? TFEVENTS_STATUS_FAILURE
         : !strcmp(state, jobstate_name(JOB_LEASED)) ? TFEVENTS_STATUS_RUNNING : TFEVENTS_STATUS_UNKNOWN;
}

static int tb_begin(tbstate *t, const char *dir, const xjob *j, char *err, size_t errlen) {
    char rle[400], run[4200], path[4400];
    heads_rle(j->heads, rle, sizeof rle);
    snprintf(run, sizeof run, "%s/job%0*lld_%s_seed%lld", dir, t->idw, j->id, rle, j->seed);
    if (util_mkdir_p(run, 0755) < 0) { snprintf(err, errlen, "%s: mkdir failed: %s", run, strerror(errno)); return -1; }
    struct stat sb;   /* a run folder is ours: one planted as a symlink would take the writes outside --out */
    if (lstat(run, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: is a symlink or not a folder (export did not make it): remove it, or export into an "
                 "empty --out", run);
        return -1;
    }
    snprintf(path, sizeof path, "%s/events.out.tfevents.%lld.prism-sweep", run, (long long)j->created_at);
    if (tfevents_open(&t->w, path, j->created_at) < 0 || tfevents_hparams_start(&t->w, j->created_at, j->hp, j->created_at) < 0) {
        snprintf(err, errlen, "%s", t->w.err);
        tfevents_abort(&t->w);
        return -1;
    }
    t->open = 1;
    return 0;
}
/* The result's scalars beyond val_loss and tok_per_s, at the job's last step: the attention distance of each layer
 * (result/attn_distance/layerNN), each zero-shot task's acc, acc_norm and acc_norm_char when present
 * (result/zero_shot/TASK/acc...), and the
 * trainer's own result metrics (result/extra/NAME). -1 on a write failure. */
static int tb_result_more(tbstate *t, const xjob *j, int64_t last) {
    char tag[256];
    json_t *a = j->attn ? json_loads(j->attn, 0, NULL) : NULL, *r = j->result ? json_loads(j->result, 0, NULL) : NULL;
    int rc = 0;
    for (size_t l = 0; rc == 0 && l < json_array_size(a); l++) {
        json_t *v = json_array_get(a, l);
        if (!json_is_number(v)) continue;
        snprintf(tag, sizeof tag, "result/attn_distance/layer%02zu", l);
        rc = tfevents_scalar(&t->w, j->updated_at, last, tag, (float)json_number_value(v));
    }
    const char *task, *k;
    json_t *o, *v;
    json_object_foreach(json_object_get(r, "zero_shot"), task, o) {
        static const char *const keys[] = { "acc", "acc_norm", "acc_norm_char" };
        for (int i = 0; rc == 0 && i < 3; i++) {
            if (!json_is_number(v = json_object_get(o, keys[i]))) continue;
            snprintf(tag, sizeof tag, "result/zero_shot/%.100s/%s", task, keys[i]);
            rc = tfevents_scalar(&t->w, j->updated_at, last, tag, (float)json_number_value(v));
        }
    }
    json_object_foreach(json_object_get(r, "extra"), k, v) {
        if (rc || !json_is_number(v)) continue;
        snprintf(tag, sizeof tag, "result/extra/%.100s", k);
        rc = tfevents_scalar(&t->w, j->updated_at, last, tag, (float)json_number_value(v));
    }
    json_decref(a);
    json_decref(r);
    return rc < 0 ? -1 : 0;
}

static int tb_end(tbstate *t, const xjob *j, char *err, size_t errlen) {
    if (!t->open) return 0;
    int64_t last = j->steps;
    if ((j->has_result &&
         (tfevents_scalar(&t->w, j->updated_at, last, "result/val_loss", (float)j->r_val) < 0 ||
          (j->r_has_tps && tfevents_scalar(&t->w, j->updated_at, last, "result/tok_per_s", (float)j->r_tps) < 0) ||
          tb_result_more(t, j, last) < 0)) ||
        tfevents_hparams_end(&t->w, j->updated_at, tb_status(j->state), j->finished_at) < 0) {
        snprintf(err, errlen, "%s", t->w.err);
        tfevents_abort(&t->w);
        t->open = 0;
        return -1;
    }
    t->open = 0;
    if (tfevents_close(&t->w) < 0) { snprintf(err, errlen, "%s", t->w.err); return -1; }
    return 0;
}

/* The job's run ends: its result scalars, then the file made durable. A job with a result but no points still
 * gets its run (opened here). */
static int tb_finish(tbstate *t, const char *dir, const xjob *j, char *err, size_t errlen) {
    if (!t->open && j->has_result && tb_begin(t, dir, j, err, errlen) < 0) return -1;
    return tb_end(t, j, err, errlen);
}

/* One point as a metrics.csv row, and its extras as extras.csv rows. */
static void csv_point(xout *mo, xout *eo, const xjob *j, sqlite3_stmt *s, const char *kind, long long step) {
    fprintf(mo->f, "%lld,", j->id);
    csv_str(mo->f, j->heads);
    fprintf(mo->f, ",%lld,%s,%lld,", j->seed, kind, step);
    for (int c = 0; c < N_POINT_COLS; c++) {
        csv_num(mo->f, s, 3 + c);
        fputc(c + 1 < N_POINT_COLS ? ',' : '\n', mo->f);
    }
    json_t *ex = point_extra(s);
    const char *name;
    json_t *v;
    json_object_foreach(ex, name, v) {   /* names are [A-Za-z0-9_./-]: nothing to quote */
        fprintf(eo->f, "%lld,", j->id);
        csv_str(eo->f, j->heads);
        fprintf(eo->f, ",%lld,%s,%lld,%s,%.17g\n", j->seed, kind, step, name, json_number_value(v));
    }
    json_decref(ex);
}

/* One point as a metrics.jsonl line. Returns 0, or -1 out of memory. */
static int jsonl_point(xout *mo, const xjob *j, sqlite3_stmt *s, const char *kind, long long step) {
    json_t *o = job_head(j);
    json_object_set_new(o, "kind", json_string(kind));
    json_object_set_new(o, "step", json_integer(step));
    for (int c = 0; c < N_POINT_COLS; c++) json_object_set_new(o, POINT_COLS[c], col_num(s, 3 + c));
    json_t *ex = point_extra(s);
    if (ex) json_object_set_new(o, "extra", ex);
    return jsonl_line(mo->f, o);
}

/* One point as scalars of the job's TensorBoard run (opened on its first point). Returns 0, or -1 with err set. */
static int tb_point(tbstate *tb, const char *dir, const xjob *j, sqlite3_stmt *s, const char *kind, long long step,
                    char *err, size_t errlen) {
    if (!tb->open && tb_begin(tb, dir, j, err, errlen) < 0) return -1;
    int train = !strcmp(kind, "train");
    /* the point's own time; a point stored before migration 19 has none: the job's last update */
    double wall = sqlite3_column_type(s, POINT_TIME_COL) == SQLITE_NULL ? j->updated_at
                : (double)sqlite3_column_int64(s, POINT_TIME_COL);
    struct tag { const char *tag; int col; };   /* col: POINTS_SQL's */
    static const struct tag train_tags[] = {
        { "train/loss", 3 }, { "train/lr", 5 }, { "train/tok_per_s", 6 }, { "train/grad_norm", 7 },
    }, val_tags[] = { { "val/loss", 3 }, { "val/loss_se", 9 } };
    const struct tag *tags = train ? train_tags : val_tags;
    int ntags = train ? 4 : 2;
    for (int t = 0; t < ntags; t++) {
        if (sqlite3_column_type(s, tags[t].col) == SQLITE_NULL) continue;
        if (tfevents_scalar(&tb->w, wall, step, tags[t].tag, (float)sqlite3_column_double(s, tags[t].col)) < 0) {
            snprintf(err, errlen, "%s", tb->w.err);
            return -1;
        }
    }
    json_t *ex = point_extra(s);
    const char *name;
    json_t *v;
    int rc = 0;
    json_object_foreach(ex, name, v) {
        char tag[POINT_EXTRA_NAME_MAX + 16];
        snprintf(tag, sizeof tag, "%sextra/%s", train ? "" : "val/", name);
        if (tfevents_scalar(&tb->w, wall, step, tag, (float)json_number_value(v)) < 0) {
            snprintf(err, errlen, "%s", tb->w.err);
            rc = -1;
            break;
        }
    }
    json_decref(ex);
    return rc;
}

/* The export's files and their heads: metrics and results (and extras.csv for csv) opened with their headers and
 * the results written, or the TensorBoard experiment with each job's hparams. Returns 0, or -1 with err set (what
 * was opened is left to the caller's out_abort / free_jobs). */
static int export_begin(store *st, int64_t sweep, int format, const char *dir, xjob *jobs, size_t njobs, xout *mo,
                        xout *ro, xout *eo, char *err, size_t errlen) {
    if (format == FMT_TB) {
        for (size_t i = 0; i < njobs; i++)
            if (!(jobs[i].hp = tb_hparams(&jobs[i]))) { snprintf(err, errlen, "out of memory"); return -1; }
        return tb_experiment(st, sweep, dir, jobs, njobs, err, errlen);
    }
    const char *ext = format == FMT_CSV ? "csv" : "jsonl";
    char name[32];
    snprintf(name, sizeof name, "metrics.%s", ext);
    if (out_open(mo, dir, name, err, errlen) < 0) return -1;
    snprintf(name, sizeof name, "results.%s", ext);
    if (out_open(ro, dir, name, err, errlen) < 0) return -1;
    if (format == FMT_CSV) {
        fputs("job_id,schedule,seed,kind,step", mo->f);
        for (int c = 0; c < N_POINT_COLS; c++) fprintf(mo->f, ",%s", POINT_COLS[c]);
        fputc('\n', mo->f);
        csv_results(ro->f, jobs, njobs);
        if (out_open(eo, dir, "extras.csv", err, errlen) < 0) return -1;
        fputs("job_id,schedule,seed,kind,step,name,value\n", eo->f);
    } else if (jsonl_results(ro->f, jobs, njobs) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Every point of the sweep in one pass (points and jobs both in job id order), each written in the format; the
 * TensorBoard runs finished job by job. Counts the points into *npoints. Returns 0, or -1 with err set. */
static int export_points(store *st, int64_t sweep, int format, const char *dir, xjob *jobs, size_t njobs, xout *mo,
                         xout *eo, tbstate *tb, long long *npoints, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    int rc;
    if (sqlite3_prepare_v2(st->db, POINTS_SQL, -1, &s, NULL) != SQLITE_OK) goto sqlfail;
    sqlite3_bind_int64(s, 1, sweep);
    size_t ji = 0;   /* the job of the current point: points and jobs are both ordered by job id */
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        long long job = sqlite3_column_int64(s, 0);
        while (ji < njobs && jobs[ji].id < job) {
            if (format == FMT_TB && tb_finish(tb, dir, &jobs[ji], err, errlen) < 0) goto fail;
            ji++;
        }
        if (ji == njobs || jobs[ji].id != job) continue;   /* cannot happen: the join is on the same jobs */
        const xjob *j = &jobs[ji];
        const char *kind = (const char *)sqlite3_column_text(s, 1);
        long long step = sqlite3_column_int64(s, 2);
        (*npoints)++;
        if (format == FMT_CSV) {
            csv_point(mo, eo, j, s, kind, step);
        } else if (format == FMT_JSONL) {
            if (jsonl_point(mo, j, s, kind, step) < 0) { snprintf(err, errlen, "out of memory"); goto fail; }
        } else if (tb_point(tb, dir, j, s, kind, step, err, errlen) < 0) {
            goto fail;
        }
    }
    if (rc != SQLITE_DONE) goto sqlfail;
    if (format == FMT_TB)
        for (; ji < njobs; ji++)   /* the last job with points, and any after it */
            if (tb_finish(tb, dir, &jobs[ji], err, errlen) < 0) goto fail;
    sqlite3_finalize(s);
    return 0;
sqlfail:
    snprintf(err, errlen, "reading the metrics: %s", sqlite3_errmsg(st->db));
fail:
    sqlite3_finalize(s);
    return -1;
}

int cmd_export(int argc, char **argv) {
    const char *db = "prism.db", *fmt = "csv", *dir = "";
    cli_flag flags[] = {
        { "--db", CLI_STR, &db, "prism.db", "the SQLite store (must exist)", 0, 0, NULL, 0 },
        { "--format", CLI_CHOICE, &fmt, "csv", "csv (metrics.csv, results.csv, extras.csv), jsonl (metrics.jsonl, results.jsonl) "
          "or tensorboard (one event-file run per job)", 0, 0, "csv|jsonl|tensorboard", 0 },
        { "--out", CLI_STR, &dir, "", "the folder to write (created; files of the same name are replaced)", 0, 0, NULL, 0 },
        { 0 },
    };
    cli_cmd cmd = { "export", "SWEEP --db FILE --format csv|jsonl|tensorboard --out DIR",
                    "Write every job's metric points (train loss, lr, tok/s, grad_norm, val loss; per step, the latest\n"
                    "attempt's) and results of SWEEP (an id or a name) to DIR, in one pass, plus DIR/sweep.json (the spec).\n"
                    "--format tensorboard writes one run per job for `tensorboard --logdir DIR` or W&B's TensorBoard sync.",
                    flags, NULL };
    char *pos[1];
    int npos = 0, prc = cli_parse(&cmd, argc, argv, pos, 1, &npos);
    if (prc != CLI_OK) return prc == CLI_HELP ? 0 : 2;
    if (npos != 1) return cli_error("export", "name the sweep to export: prism-sweep export SWEEP --out DIR (SWEEP = id or name; "
                                    "prism-sweep status --db %s lists them)", db);
    if (!dir[0]) return cli_error("export", "--out DIR is required: the folder to write the export to");
    struct stat sb;
    if (stat(db, &sb) != 0) return cli_error("export", "--db %s: no such file (create a sweep first)", db);
    int format = !strcmp(fmt, "csv") ? FMT_CSV : !strcmp(fmt, "jsonl") ? FMT_JSONL : FMT_TB;
    char err[4800] = "";
    store *st = NULL;
    if (store_open_readonly(db, &st, err, sizeof err) < 0) {
        fprintf(stderr, "prism-sweep export: --db %s: %s\n", db, err);
        return 2;
    }
    int status = 1;
    int64_t sweep = 0;
    xjob *jobs = NULL;
    size_t njobs = 0;
    long long npoints = 0;
    xout mo = { 0 }, ro = { 0 }, eo = { 0 };
    tbstate tb = { 0 };
    int rc = sweeps_find(st, pos[0], &sweep);
    if (rc < 0) {
        fprintf(stderr, "prism-sweep export: %s%s\n", st->err, rc == STORE_ENOTFOUND ? " (prism-sweep status lists the sweeps)" : "");
        status = rc == STORE_ENOTFOUND || rc == STORE_EINVAL ? 2 : 1;
        goto out;
    }
    if (util_mkdir_p(dir, 0755) < 0) {
        status = cli_error("export", "--out %s: cannot create it: %s", dir, strerror(errno));
        goto out;
    }
    if (load_jobs(st, sweep, &jobs, &njobs, err, sizeof err) < 0 || write_sweep_json(st, sweep, dir, err, sizeof err) < 0) goto fail;
    for (long long m = njobs ? jobs[njobs - 1].id : 0; m > 0; m /= 10) tb.idw++;   /* jobs are in id order */
    if (export_begin(st, sweep, format, dir, jobs, njobs, &mo, &ro, &eo, err, sizeof err) < 0 ||
        export_points(st, sweep, format, dir, jobs, njobs, &mo, &eo, &tb, &npoints, err, sizeof err) < 0) goto fail;
    if (format != FMT_TB && (out_commit(&mo, err, sizeof err) < 0 || out_commit(&ro, err, sizeof err) < 0 ||
                             out_commit(&eo, err, sizeof err) < 0)) goto fail;
    printf("exported sweep %lld: %zu jobs, %lld metric points, as %s, to %s\n", (long long)sweep, njobs, npoints, fmt, dir);
    status = 0;
    goto out;
fail:
    fprintf(stderr, "prism-sweep export: %s (nothing of this file was written; earlier files of DIR are complete)\n", err);
    status = 1;
out:
    if (tb.open) tfevents_abort(&tb.w);
    out_abort(&mo);
    out_abort(&ro);
    out_abort(&eo);
    free_jobs(jobs, njobs);
    store_close(st);
    return status;
}
