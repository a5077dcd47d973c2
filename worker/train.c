/* train.c — one training job: the AdamW loop over a model backend, evaluation, metrics, training-state
 * checkpoints and the result files (the data loader is loader.c's).
 *
 * Design. Data: loader.h cuts the train shards into windows of T+1 tokens and hands out micro-batch p of the
 * epoch order; its whole state is the micro-batch counter, which is what a checkpoint stores — a resumed run
 * reads exactly the batches the uninterrupted one would have. Validation always reads the first eval.batches
 * sequential batches ("all": every whole batch of the val split) and keeps each batch's mean loss, so the final
 * result carries the per-batch losses and their standard error (the same batches for every job: the ranking
 * computes the paired val-sample noise).
 * The loop: [stop?] → [eval if due] → zero_grad → grad_accum × forward_backward → finite? → update →
 * metrics row → [checkpoint]. All model memory is allocated by the backend before step 0; the loop
 * itself allocates nothing. Metrics rows are flushed to metrics.jsonl and handed to the callback as they
 * are produced. On resume, rows at or after the resumed step are dropped from metrics.jsonl first, so the
 * file ends up exactly as an uninterrupted run's.
 */
#include "jsonout.h"
#include "train.h"
#include "checkpoint.h"
#include "model.h"
#include "loader.h"
#include "evalfile.h"
#include "zeroshot.h"
#include "jobresult.h"
#include "result_check.h"
#include "point.h"
#include "util.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------------------------ */

const char *train_strerror(int code) {
    switch (code) {
    case TRAIN_OK: return "ok";
    case TRAIN_EINVAL: return "invalid job";
    case TRAIN_EDATA: return "bad data";
    case TRAIN_ENAN: return RESULT_ERR_NOT_FINITE;   /* common/result_check.h: neither fail limit counts it */
    case TRAIN_ENOMEM: return "out of memory";
    case TRAIN_ECANCELLED: return "cancelled";
    case TRAIN_EPREEMPTED: return "stopped after checkpoint";
    case TRAIN_EIO: return "i/o error";
    case TRAIN_ECHECKPOINT: return "bad checkpoint";
    case TRAIN_EDEVICE: return "device error";
    case TRAIN_EDIVERGED: return RESULT_ERR_DIVERGED;
    case TRAIN_EBACKEND: return "device unavailable";
    case TRAIN_ETRAINER: return "trainer failed";
    default: return "unknown error";
    }
}

static double lr_at(const struct job_train *t, int step) {
    if (step < t->warmup_steps) return t->lr * (step + 1) / t->warmup_steps;
    if (strcmp(t->lr_schedule, "constant") == 0) return t->lr;
    double min_lr = t->lr * t->min_lr_frac;
    int span = t->steps - t->warmup_steps;
    double ratio = span > 0 ? (double)(step - t->warmup_steps) / span : 1.0;
    return min_lr + 0.5 * (1.0 + cos(M_PI * ratio)) * (t->lr - min_lr);
}

/* ---- the run ------------------------------------------------------------------------------------ */
struct run {
    const struct job_config *job;
    const struct train_opts *o;
    const model_ops *ops;
    const struct model_backend *backend;   /* on a CUDA device: the loaded backend, and its file ("" linked in) */
    const char *backend_file;
    model *m;
    struct model_config cfg;
    struct loader train, val;
    struct evalfile *tasks;            /* (job->eval.ntasks) zero-shot eval files, checked before step 0 */
    FILE *metrics;
    float *host_p, *host_m, *host_v;   /* (nparams) host copies for init, checkpoints, model.bin */
    size_t nparams;
    char path[4096];
    char ckpt_dir[4096];
    char last_ckpt[4096];
    char *err;
    size_t errlen;
    char ebuf[1024];
    double *val_batch;                 /* (val_nb) each val batch's mean loss at the last evaluation */
    int val_nb;                        /* val batches per evaluation */
    FILE *dump;                        /* PRISM_DUMP_BATCHES: train micro-batches appended here, NULL = off */
};

/* Appends a micro-batch as B rows of T+1 uint16 tokens (inputs, then the row's last target): the bytes
 * trainers/torch/train.py writes for the same variable, so a test compares the two trainers' data order. */
static int dump_batch(struct run *r, const int *in, const int *tg, int B, int T) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t <= T; t++) {
            uint16_t v = (uint16_t)(t < T ? in[b * T + t] : tg[b * T + T - 1]);
            if (fwrite(&v, sizeof v, 1, r->dump) != 1) return -1;
        }
    return fflush(r->dump);
}

/* The backend's last message (a backend may leave .error unset). */
static const char *model_err(struct run *r) {
    const char *e = r->ops && r->ops->error && r->m ? r->ops->error(r->m) : NULL;
    return e && *e ? e : "(no detail from the backend)";
}

static int fail(struct run *r, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (r->err && r->errlen) vsnprintf(r->err, r->errlen, fmt, ap);
    va_end(ap);
    return code;
}

static int emit(struct run *r, json_t *row) {
    if (!row) return fail(r, TRAIN_ENOMEM, "out of memory building a metrics row");
    char *line = json_dumps(row, JSON_COMPACT | JSONOUT_FLAGS);
    int rc = 0;
    if (!line || fprintf(r->metrics, "%s\n", line) < 0 || fflush(r->metrics))
        rc = fail(r, TRAIN_EIO, "%s/metrics.jsonl: write failed: %s", r->o->out_dir, strerror(errno));
    free(line);
    if (!rc && r->o->on_metrics) r->o->on_metrics(r->o->ctx, row);
    json_decref(row);
    return rc;
}

/* A val point (common/point.h): {"step", "val_loss", "val_loss_se"} (the last evaluate()'s batches' standard
 * error, when it had two or more); NULL when out of memory (emit says so). */
static json_t *val_point(const struct run *r, long long step, double val_loss) {
    metric_point p;
    point_init(&p);
    p.step = step;
    p.has_val_loss = 1;
    p.val_loss = val_loss;
    p.has_val_loss_se = jobresult_val_se(r->val_batch, r->val_nb, &p.val_loss_se);
    return point_to_json(&p);
}

/* Keeps only rows with step < keep_below (resume); creates the file when missing. */
static int metrics_open(struct run *r, int keep_below) {
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/metrics.jsonl", r->o->out_dir);
    if (keep_below <= 0) {
        r->metrics = fopen(path, "w");
        if (!r->metrics) return fail(r, TRAIN_EIO, "%s: cannot create: %s", path, strerror(errno));
        return 0;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *in = fopen(path, "r"), *out = fopen(tmp, "w");
    if (!out) { if (in) fclose(in); return fail(r, TRAIN_EIO, "%s: cannot create: %s", tmp, strerror(errno)); }
    if (in) {
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, in) > 0) {
            json_t *row = json_loads(line, 0, NULL);
            json_t *st = row ? json_object_get(row, "step") : NULL;
            if (st && json_is_integer(st) && json_integer_value(st) < keep_below) fputs(line, out);
            json_decref(row);
        }
        free(line);
        fclose(in);
    }
    char e[512];
    if (util_commit_file(out, tmp, path, e, sizeof e)) return fail(r, TRAIN_EIO, "%s: rewrite failed: %s", path, e);
    r->metrics = fopen(path, "a");
    if (!r->metrics) return fail(r, TRAIN_EIO, "%s: cannot open: %s", path, strerror(errno));
    return 0;
}

/* At job start: an explicit eval.batches must fit the val split as whole batches, so no batch wraps around and
 * counts twice ("all" takes every whole batch; run_loop refuses a split without one). TRAIN_EDATA naming the
 * split's size and the largest eval.batches that fits. */
static int val_split_check(struct run *r) {
    const struct job_config *job = r->job;
    int B = job->train.batch_size, T = job->train.seq_len, nb = job->eval.batches;
    size_t have = r->val.nwin / (size_t)B;
    if (nb == JOB_EVAL_ALL || (size_t)nb <= have) return 0;
    if (have == 0)
        return fail(r, TRAIN_EDATA, "eval.batches %d exceeds the val split: data.val (%s) holds %zu tokens = %zu windows of "
                    "seq_len+1 = %d tokens, less than one batch of batch_size %d: make the val split larger (prism-data "
                    "tokenize --val-tokens N) or lower train.batch_size", nb, job->data.val, r->val.set.total, r->val.nwin,
                    T + 1, B);
    return fail(r, TRAIN_EDATA, "eval.batches %d exceeds the val split: data.val (%s) holds %zu tokens = %zu windows of "
                "seq_len+1 = %d tokens = %zu batches of batch_size %d: set eval.batches to at most %zu (or \"all\")", nb,
                job->data.val, r->val.set.total, r->val.nwin, T + 1, have, B, have);
}

/* Mean val loss over the val_nb sequential batches (each batch's in val_batch[]); attn (L doubles) gets D_l when
 * non-NULL. */
static int evaluate(struct run *r, double *val_loss, double *attn) {
    int B = r->job->train.batch_size, T = r->job->train.seq_len, nb = r->val_nb;
    double total = 0;
    if (attn) memset(attn, 0, r->cfg.L * sizeof(double));
    for (int i = 0; i < nb; i++) {
        if (loader_batch(&r->val, (uint64_t)i, r->cfg.V, r->ebuf, sizeof r->ebuf))
            return fail(r, TRAIN_EDATA, "data.val: %s", r->ebuf);
        float loss;
        int rc = r->ops->forward_loss(r->m, r->val.inputs, r->val.targets, B, T, &loss, attn);
        if (rc) return fail(r, TRAIN_EDEVICE, "validation forward failed: %s", model_err(r));
        total += loss;
        r->val_batch[i] = loss;
    }
    if (attn) for (int l = 0; l < r->cfg.L; l++) attn[l] /= (double)nb * B;
    *val_loss = total / nb;
    return 0;
}

static int checkpoint(struct run *r, int step, uint64_t data_pos) {
    if (!r->host_m) {
        r->host_m = malloc(r->nparams * sizeof(float));
        r->host_v = malloc(r->nparams * sizeof(float));
        if (!r->host_m || !r->host_v) return fail(r, TRAIN_ENOMEM, "out of memory for checkpoint buffers");
    }
    if (r->ops->get_params(r->m, r->host_p) || r->ops->get_opt_state(r->m, r->host_m, r->host_v))
        return fail(r, TRAIN_EDEVICE, "reading the model state failed: %s", model_err(r));
    const struct job_train *t = &r->job->train;
    struct ckpt_state st = {.step = step, .data_pos = data_pos, .rng = util_mix64(t->seed), .seed = t->seed,
                            .B = t->batch_size, .T = t->seq_len, .grad_accum = t->grad_accum};
    char path[4200];
    snprintf(path, sizeof path, "%s/ckpt_%d.bin", r->ckpt_dir, step);
    if (ckpt_write_state(path, &r->cfg, &st, r->host_p, r->host_m, r->host_v, r->ebuf, sizeof r->ebuf))
        return fail(r, TRAIN_EIO, "checkpoint: %s", r->ebuf);
    if (r->last_ckpt[0] && strcmp(r->last_ckpt, path)) unlink(r->last_ckpt);
    snprintf(r->last_ckpt, sizeof r->last_ckpt, "%.4000s", path);
    if (r->o->result) snprintf(r->o->result->checkpoint, sizeof r->o->result->checkpoint, "%.4000s", path);
    if (r->o->on_checkpoint) r->o->on_checkpoint(r->o->ctx, step, path);
    return 0;
}

static void fmt_dur(char *b, size_t n, double s) {
    if (!(s >= 0) || s > 1e8) { snprintf(b, n, "?"); return; }
    long x = (long)(s + 0.5);
    if (x >= 3600) snprintf(b, n, "%ldh%02ldm", x / 3600, x / 60 % 60);
    else if (x >= 60) snprintf(b, n, "%ldm%02lds", x / 60, x % 60);
    else snprintf(b, n, "%lds", x);
}

static void progress(struct run *r, const struct train_progress *p) {
    const struct train_opts *o = r->o;
    if (o->on_progress) { o->on_progress(o->ctx, p); return; }
    if (o->quiet) return;
    char eta[32];
    fmt_dur(eta, sizeof eta, p->eta_s);
    if (isatty(2)) {
        fprintf(stderr, "\rstep %d/%d | loss %.4f | %.0f tok/s | ETA %s   ", p->step + 1, p->steps, p->loss,
                p->tok_per_s, eta);
        if (p->step + 1 == p->steps) fputc('\n', stderr);
    } else {
        int every = o->progress_every > 0 ? o->progress_every : 10;
        if ((p->step + 1) % every == 0 || p->step + 1 == p->steps || p->step == 0)
            fprintf(stderr, "{\"event\":\"progress\",\"step\":%d,\"steps\":%d,\"loss\":%.6f,\"tok_per_s\":%.1f,\"eta_s\":%.1f}\n",
                    p->step + 1, p->steps, p->loss, p->tok_per_s, p->eta_s);
    }
}

static int fail_diverged(struct run *r, int step, double val_loss, double limit) {
    return fail(r, TRAIN_EDIVERGED, "step %d: validation loss %g is above %g (%.1f x ln %d, guessing uniformly) after "
                "warmup: the run diverged; lower train.lr or raise train.warmup_steps", step, val_loss, limit,
                TRAIN_DIVERGED_FACTOR, r->cfg.V);
}

static int write_result(struct run *r, double val_loss, double train_loss, double tps, double wall, long long tokens,
                        const double *attn, json_t *zero_shot) {
    json_t *backend = NULL;
    if (r->backend)   /* which CUDA backend object trained it (kernels/model.h) */
        backend = json_pack("{s:s, s:s, s:i, s:s}", "name", r->backend->name, "precision", r->backend->precision, "abi",
                            (int)r->backend->abi, "file", *r->backend_file ? r->backend_file : "(linked in)");
    job_result jr = {   /* common/jobresult.h */
        .val_loss = val_loss, .train_loss = train_loss,   /* NAN (null) after resuming at the end */
        .tok_per_s = tps, .wall_s = wall, .params = (long long)r->nparams,
        .flops_per_token = model_flops_per_token(&r->cfg, r->job->train.seq_len), .steps = r->job->train.steps,
        .tokens = tokens, .heads = r->cfg.heads, .n_layer = r->cfg.L, .device = r->ops->name,
        .arch = model_arch_name(r->cfg.arch), .attn_distance = attn, .val_batch = r->val_batch, .val_nb = r->val_nb,
        .backend = backend, .zero_shot = zero_shot,
    };
    json_t *res = jobresult_to_json(&jr);
    json_decref(backend);
    if (!res) return fail(r, TRAIN_ENOMEM, "out of memory building result.json");
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/result.json", r->o->out_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) { json_decref(res); return fail(r, TRAIN_EIO, "%s: cannot create: %s", tmp, strerror(errno)); }
    int rc = json_dumpf(res, f, JSON_INDENT(2) | JSON_SORT_KEYS | JSONOUT_FLAGS);
    json_decref(res);
    char e[512];
    if (rc) { fclose(f); unlink(tmp); return fail(r, TRAIN_EIO, "%s: write failed", tmp); }
    if (util_commit_file(f, tmp, path, e, sizeof e)) return fail(r, TRAIN_EIO, "%s", e);
    return 0;
}

/* Whether a data glob or model.init path stays inside root: relative without a ".." component, or
 * absolute under root. Returns 0, or TRAIN_EDATA with err naming the key and the fix. */
static int data_path_confined(const char *what, const char *p, const char *root, char *err, size_t errlen) {
    if (!p || !*p) return 0;
    for (const char *c = p; *c;) {
        const char *e = strchr(c, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len == 2 && c[0] == '.' && c[1] == '.') {
            snprintf(err, errlen, "%s: %.400s has a \"..\" component: data paths stay inside the data root %.400s "
                     "(prism-worker --allow-data-outside-root lifts this)", what, p, root);
            return TRAIN_EDATA;
        }
        if (!e) break;
        c = e + 1;
    }
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/') rl--;
    if (p[0] == '/' && (strncmp(p, root, rl) != 0 || p[rl] != '/')) {
        snprintf(err, errlen, "%s: %.400s is outside the data root %.400s (use a path relative to --data-root, or "
                 "prism-worker --allow-data-outside-root)", what, p, root);
        return TRAIN_EDATA;
    }
    return 0;
}

/* eval.tasks: every file read and checked before step 0 (a bad one fails the job before any training) */
static int tasks_open(struct run *r) {
    const struct job_eval *ev = &r->job->eval;
    if (ev->ntasks == 0) return 0;
    if (!(r->tasks = calloc((size_t)ev->ntasks, sizeof *r->tasks))) return fail(r, TRAIN_ENOMEM, "out of memory for eval.tasks");
    for (int i = 0; i < ev->ntasks; i++) {
        char path[8300];
        const char *p = ev->tasks[i].path, *root = r->o->data_root;
        if (p[0] != '/' && root && *root) snprintf(path, sizeof path, "%s/%s", root, p);
        else snprintf(path, sizeof path, "%s", p);
        int rc = evalfile_open(path, r->cfg.V, &r->tasks[i], r->ebuf, sizeof r->ebuf);
        if (rc == EVALFILE_ENOMEM) return fail(r, TRAIN_ENOMEM, "eval.tasks[%d] (%s): %s", i, ev->tasks[i].name, r->ebuf);
        if (rc) return fail(r, TRAIN_EDATA, "eval.tasks[%d] (%s): %s", i, ev->tasks[i].name, r->ebuf);
    }
    return 0;
}

/* Whether the file at path resolves (symlinks followed) inside root_real. With missing_ok, a file that does
 * not exist is left to its reader, which names it. Returns 0, or TRAIN_EDATA with err naming the key and the fix. */
static int file_confined(const char *what, const char *path, int missing_ok, const char *root_real, char *err,
                         size_t errlen) {
    size_t rl = strlen(root_real);
    char real[PATH_MAX];
    int ok = realpath(path, real) != NULL;
    if (!ok && missing_ok && errno == ENOENT) return 0;
    if (!ok || strncmp(real, root_real, rl) != 0 || (real[rl] != '/' && rl > 1)) {
        snprintf(err, errlen, "%s: %.400s resolves outside the data root %.400s (a symlink out of it; "
                 "prism-worker --allow-data-outside-root lifts this)", what, path, root_real);
        return TRAIN_EDATA;
    }
    return 0;
}

/* Every file a loader opened resolves (symlinks followed) inside root_real. */
static int data_files_confined(const char *what, const struct loader *ld, const char *root_real, char *err,
                               size_t errlen) {
    for (int i = 0; i < ld->set.n; i++) {
        int rc = file_confined(what, ld->set.shards[i].path, 0, root_real, err, errlen);
        if (rc) return rc;
    }
    return 0;
}

/* A job path as the worker opens it: relative ones against the data root. */
static const char *job_path(char *buf, size_t n, const char *p, const char *root) {
    if (p[0] != '/' && root && *root) { snprintf(buf, n, "%s/%s", root, p); return buf; }
    return p;
}

/* Scores every task on the final model: {"name": {"acc", "acc_norm", "n", "truncated"[, "acc_norm_char"]}, ...} in
 * *out (acc_norm_char when the task's file has character counts). */
static int zero_shot(struct run *r, json_t **out) {
    *out = NULL;
    const struct job_eval *ev = &r->job->eval;
    if (ev->ntasks == 0) return 0;
    json_t *zs = json_object();
    if (!zs) return fail(r, TRAIN_ENOMEM, "out of memory building zero_shot");
    for (int i = 0; i < ev->ntasks; i++) {
        struct zeroshot_result res;
        int rc = zeroshot_score(r->ops, r->m, r->job->train.batch_size, r->job->train.seq_len, &r->tasks[i], &res,
                                r->ebuf, sizeof r->ebuf);
        if (rc) {
            json_decref(zs);
            if (rc == -2) return fail(r, TRAIN_ENOMEM, "eval.tasks[%d] (%s): %s", i, ev->tasks[i].name, r->ebuf);
            return fail(r, rc == -3 ? TRAIN_EDEVICE : TRAIN_EDATA, "eval.tasks[%d] (%s): %s", i,
                        ev->tasks[i].name, r->ebuf);
        }
        json_t *o = json_pack("{s:f, s:f, s:i, s:i}", "acc", res.acc, "acc_norm", res.acc_norm, "n", res.n,
                              "truncated", res.truncated);
        if (o && res.has_char) json_object_set_new(o, "acc_norm_char", json_real(res.acc_norm_char));   /* lm-eval's */
        json_object_set_new(zs, ev->tasks[i].name, o);
        if (!r->o->quiet && !r->o->on_progress) {
            char ch[48] = "";
            if (res.has_char) snprintf(ch, sizeof ch, " acc_norm_char %.4f", res.acc_norm_char);
            fprintf(stderr, "zero-shot %s: acc %.4f acc_norm %.4f%s over %d examples (%d with the context cut to T=%d)\n",
                    ev->tasks[i].name, res.acc, res.acc_norm, ch, res.n, res.truncated, r->job->train.seq_len);
        }
    }
    *out = zs;
    return 0;
}

double train_eta_s(int step, int steps, int every, double step_s, double eval_s) {
    double left = (double)(steps - step - 1) * step_s;
    if (eval_s < 0) return left;
    long evals = 1;   /* the final one */
    if (every > 0 && steps > 1) evals += (long)((steps - 1) / every) - (long)(step / every);
    return left + (double)evals * eval_s;
}

/* ---- run_loop's sections ------------------------------------------------------------------------ */

/* The loop's running totals, from the first step to the result files. */
struct loop_acc {
    int start;                 /* first step (the resumed one, else 0) */
    uint64_t data_pos;         /* next train micro-batch */
    int paused;                /* 1: stopped at a halving rung (o->stop_at_step) */
    double t_begin, train_time, val_loss, diverged_at;
    double eval_time;          /* seconds in the evaluations of the loop so far, */
    int evals;                 /* and how many (the ETA's cost of one) */
    long long tokens_run, tokens_per_step;
    float train_loss;
};

/* Backend: the device's model ops, and the model configuration from the job. */
static int run_open_backend(struct run *r, int *dev) {
    const struct job_config *job = r->job;
    const struct train_opts *o = r->o;
    *dev = -1;
    r->ops = model_ops_for_device(o->device ? o->device : "cpu", dev, r->ebuf, sizeof r->ebuf);
    if (!r->ops) return fail(r, TRAIN_EBACKEND, "%s", r->ebuf);
    if (*dev >= 0) {
        r->backend = model_backend_load(&r->backend_file, NULL, 0);   /* already loaded: says which */
        if (!o->quiet && !o->on_progress && r->backend)
            fprintf(stderr, "device %d: CUDA backend %s (%s) from %s\n", *dev, r->backend->name, r->backend->precision,
                    *r->backend_file ? r->backend_file : "this binary");
    }
    struct model_config *cfg = &r->cfg;
    cfg->L = job->model.n_layer; cfg->C = job->model.d_model; cfg->V = job->model.vocab_size;
    cfg->Vp = job->model.padded_vocab_size; cfg->maxT = job->model.seq_len;
    cfg->B = job->train.batch_size; cfg->T = job->train.seq_len;
    memcpy(cfg->heads, job->model.heads, cfg->L * sizeof(int));
    if (strcmp(job->model.arch, "llama") == 0) {
        cfg->arch = MODEL_ARCH_LLAMA; cfg->H = job->model.ffn_hidden; cfg->rope_theta = (float)job->model.rope_theta;
    }
    r->ops = model_ops_for_arch(r->ops, cfg->arch);
    r->nparams = model_num_params(cfg);
    return 0;
}

/* Data first: a wrong path should fail before any big allocation; a job from the network reads only
 * below the data root. */
static int run_open_data(struct run *r) {
    const struct job_config *job = r->job;
    const struct train_opts *o = r->o;
    const struct job_train *tr = &job->train;
    int B = tr->batch_size, T = tr->seq_len, rc;
    char root_path[4200];
    const char *root = o->data_root;
    char root_real[PATH_MAX] = "";
    if (o->confine_data) {
        char cwd[PATH_MAX];
        const char *rr = root && *root ? root : getcwd(cwd, sizeof cwd);
        if (!rr || !realpath(rr, root_real)) return fail(r, TRAIN_EDATA, "data root %s: %s", rr ? rr : ".", strerror(errno));
        if ((rc = data_path_confined("data.train", job->data.train, root_real, r->ebuf, sizeof r->ebuf)) ||
            (rc = data_path_confined("data.val", job->data.val, root_real, r->ebuf, sizeof r->ebuf)) ||
            (rc = data_path_confined("model.init", job->model.init, root_real, r->ebuf, sizeof r->ebuf)))
            return fail(r, rc, "%s", r->ebuf);
    }
    if ((rc = loader_init(&r->train, "data.train", job->data.train, root, B, T, tr->shuffle, tr->seed,
                          r->ebuf, sizeof r->ebuf)))
        return fail(r, rc, "%s", r->ebuf);
    if ((rc = loader_init(&r->val, "data.val", job->data.val, root, B, T, 0, 0, r->ebuf, sizeof r->ebuf)))
        return fail(r, rc, "%s", r->ebuf);
    if ((rc = val_split_check(r))) return rc;
    /* "all": every whole batch of B windows in the val split */
    r->val_nb = job->eval.batches == JOB_EVAL_ALL ? (int)(r->val.nwin / (size_t)B > JOB_EVAL_MAX_ALL ? JOB_EVAL_MAX_ALL : r->val.nwin / (size_t)B)
                                                  : job->eval.batches;
    if (r->val_nb < 1)
        return fail(r, TRAIN_EDATA, "data.val: %zu windows of %d tokens make no whole batch of %d: eval.batches \"all\" "
                    "needs at least one; add val data or lower train.batch_size", r->val.nwin, T + 1, B);
    if (!(r->val_batch = malloc((size_t)r->val_nb * sizeof *r->val_batch))) return fail(r, TRAIN_ENOMEM, "out of memory");
    if (o->confine_data &&
        ((rc = data_files_confined("data.train", &r->train, root_real, r->ebuf, sizeof r->ebuf)) ||
         (rc = data_files_confined("data.val", &r->val, root_real, r->ebuf, sizeof r->ebuf))))
        return fail(r, rc, "%s", r->ebuf);
    if (o->confine_data)
        for (int t = 0; t < job->eval.ntasks; t++) {
            char what[64];
            snprintf(what, sizeof what, "eval.tasks[%d].path", t);
            if ((rc = data_path_confined(what, job->eval.tasks[t].path, root_real, r->ebuf, sizeof r->ebuf)) ||
                (rc = file_confined(what, job_path(root_path, sizeof root_path, job->eval.tasks[t].path, root), 1,
                                    root_real, r->ebuf, sizeof r->ebuf)))
                return fail(r, rc, "%s", r->ebuf);
        }
    if (o->confine_data && job->model.init &&
        (rc = file_confined("model.init", job_path(root_path, sizeof root_path, job->model.init, root), 1, root_real,
                            r->ebuf, sizeof r->ebuf)))
        return fail(r, rc, "%s", r->ebuf);
    return tasks_open(r);
}

/* Output folders, the host parameter copy and the backend's model. */
static int run_open_model(struct run *r, int dev) {
    const struct train_opts *o = r->o;
    if (util_mkdir_p(o->out_dir, 0755)) return fail(r, TRAIN_EIO, "%s: cannot create output directory: %s", o->out_dir, strerror(errno));
    snprintf(r->ckpt_dir, sizeof r->ckpt_dir, "%s", o->checkpoint_dir ? o->checkpoint_dir : o->out_dir);
    if (util_mkdir_p(r->ckpt_dir, 0755)) return fail(r, TRAIN_EIO, "%s: cannot create checkpoint directory: %s", r->ckpt_dir, strerror(errno));

    r->host_p = malloc(r->nparams * sizeof(float));
    if (!r->host_p) return fail(r, TRAIN_ENOMEM, "out of memory: %zu parameters", r->nparams);
    int rc = r->ops->create(&r->cfg, dev, &r->m, r->ebuf, sizeof r->ebuf);
    if (rc == MODEL_ENOMEM) return fail(r, TRAIN_ENOMEM, "%s", r->ebuf);
    if (rc == MODEL_EINVAL) return fail(r, TRAIN_EINVAL, "%s", r->ebuf);
    if (rc) return fail(r, TRAIN_EDEVICE, "%s", r->ebuf);
    return 0;
}

/* Initial state: resume > init file > GPT-2 init from the seed. */
static int run_initial_state(struct run *r, int *start, uint64_t *data_pos) {
    const struct job_config *job = r->job;
    const struct train_opts *o = r->o;
    const struct job_train *tr = &job->train;
    struct model_config *cfg = &r->cfg;
    const char *root = o->data_root;
    char root_path[4200];
    *start = 0;
    *data_pos = 0;
    if (o->resume) {
        r->host_m = malloc(r->nparams * sizeof(float));
        r->host_v = malloc(r->nparams * sizeof(float));
        if (!r->host_m || !r->host_v) return fail(r, TRAIN_ENOMEM, "out of memory loading %s", o->resume);
        struct ckpt_state want = {.seed = tr->seed, .B = tr->batch_size, .T = tr->seq_len, .grad_accum = tr->grad_accum}, got;
        if (ckpt_read_state(o->resume, cfg, &want, &got, r->host_p, r->host_m, r->host_v, r->ebuf, sizeof r->ebuf))
            return fail(r, TRAIN_ECHECKPOINT, "resume: %s", r->ebuf);
        if (got.step > tr->steps) return fail(r, TRAIN_ECHECKPOINT, "resume: %s is at step %d, past train.steps %d", o->resume, got.step, tr->steps);
        if (r->ops->set_params(r->m, r->host_p) || r->ops->set_opt_state(r->m, r->host_m, r->host_v))
            return fail(r, TRAIN_EDEVICE, "loading the checkpoint into the model failed: %s", model_err(r));
        *start = got.step;
        *data_pos = got.data_pos;
    } else if (job->model.init) {
        const char *ip = job->model.init;
        if (ip[0] != '/' && root && *root) { snprintf(root_path, sizeof root_path, "%s/%s", root, ip); ip = root_path; }
        if (ckpt_read_model(ip, cfg, r->host_p, r->ebuf, sizeof r->ebuf))
            return fail(r, TRAIN_ECHECKPOINT, "model.init: %s", r->ebuf);
        if (r->ops->set_params(r->m, r->host_p)) return fail(r, TRAIN_EDEVICE, "%s", model_err(r));
    } else {
        model_init_params(cfg, tr->seed, r->host_p);
        if (r->ops->set_params(r->m, r->host_p)) return fail(r, TRAIN_EDEVICE, "%s", model_err(r));
    }
    return 0;
}

/* One optimizer step: zero_grad → grad_accum × forward_backward → finite? → update → metrics row. */
static int run_step(struct run *r, struct loop_acc *a, struct adamw_params *hp, int step) {
    const struct train_opts *o = r->o;
    const struct job_train *tr = &r->job->train;
    int B = tr->batch_size, T = tr->seq_len, accum = tr->grad_accum, steps = tr->steps, rc;
    double t0 = util_now_s();
    if (r->ops->zero_grad(r->m)) return fail(r, TRAIN_EDEVICE, "%s", model_err(r));
    double loss_sum = 0;
    for (int k = 0; k < accum; k++) {
        if (loader_batch(&r->train, a->data_pos++, r->cfg.V, r->ebuf, sizeof r->ebuf))
            return fail(r, TRAIN_EDATA, "data.train: %s", r->ebuf);
        if (r->dump && dump_batch(r, r->train.inputs, r->train.targets, B, T))
            return fail(r, TRAIN_EIO, "PRISM_DUMP_BATCHES: write failed: %s", strerror(errno));
        float l;
        if (r->ops->forward_backward(r->m, r->train.inputs, r->train.targets, B, T, 1.0f / accum, &l))
            return fail(r, TRAIN_EDEVICE, "step %d: forward/backward failed: %s", step, model_err(r));
        loss_sum += l;
    }
    a->train_loss = (float)(loss_sum / accum);
    if (!isfinite(a->train_loss)) return fail(r, TRAIN_ENAN, "step %d: train loss is %g (not finite); lower train.lr or enable train.grad_clip", step, a->train_loss);
    double lr = lr_at(tr, step);
    hp->lr = (float)lr;
    float gnorm = 0;
    if (r->ops->update(r->m, hp, step + 1, &gnorm))
        return fail(r, TRAIN_EDEVICE, "step %d: update failed: %s", step, model_err(r));
    if (!isfinite(gnorm))   /* (JSON has no inf: the row below could not be written either) */
        return fail(r, TRAIN_ENAN, "step %d: gradient norm is %g (not finite); lower train.lr or enable train.grad_clip", step, (double)gnorm);
    double dt = util_now_s() - t0;
    a->train_time += dt;
    a->tokens_run += a->tokens_per_step;
    double tps = a->tokens_run / (a->train_time > 0 ? a->train_time : 1e-9);
    metric_point tp = {.step = step, .has_train_loss = 1, .train_loss = (double)a->train_loss, .has_lr = 1, .lr = lr,
                       .has_grad_norm = 1, .grad_norm = (double)gnorm, .has_tokens = 1,
                       .tokens = (long long)(step + 1) * a->tokens_per_step, .has_tok_per_s = 1,
                       .tok_per_s = a->tokens_per_step / (dt > 0 ? dt : 1e-9)};
    if ((rc = emit(r, point_to_json(&tp)))) return rc;
    struct train_progress p = {.step = step, .steps = steps, .loss = a->train_loss, .tok_per_s = tps,
                               .eta_s = train_eta_s(step, steps, r->job->eval.every, a->train_time / (step + 1 - a->start),
                                                    a->evals > 0 ? a->eval_time / a->evals : -1)};
    progress(r, &p);
    if (o->result) o->result->steps_done = step + 1;
    return 0;
}

/* The steps: [stop?] → [eval if due] → [halving rung: checkpoint, stop] → run_step → [checkpoint]. */
static int run_steps(struct run *r, struct loop_acc *a) {
    const struct job_config *job = r->job;
    const struct train_opts *o = r->o;
    const struct job_train *tr = &job->train;
    int steps = tr->steps, rc;
    struct adamw_params hp = {.beta1 = (float)tr->beta1, .beta2 = (float)tr->beta2, .eps = (float)tr->eps,
                              .weight_decay = (float)tr->weight_decay, .grad_clip = (float)tr->grad_clip};
    for (int step = a->start; step < steps; step++) {
        int stop = o->stop ? *o->stop : 0;
        if (stop == 1) return fail(r, TRAIN_ECANCELLED, "cancelled at step %d", step);
        if (stop == 2) {
            if ((rc = checkpoint(r, step, a->data_pos))) return rc;
            return fail(r, TRAIN_EPREEMPTED, "stopped at step %d after writing %s", step, r->last_ckpt);
        }
        int at_rung = o->stop_at_step > 0 && step == o->stop_at_step;
        if (step == 0 || (job->eval.every > 0 && step % job->eval.every == 0) || at_rung) {
            double te = util_now_s();
            if ((rc = evaluate(r, &a->val_loss, NULL))) return rc;
            a->eval_time += util_now_s() - te;
            a->evals++;
            /* (JSON has no NaN/inf: check before building the row) */
            if (!isfinite(a->val_loss)) return fail(r, TRAIN_ENAN, "step %d: validation loss is %g (not finite)", step, a->val_loss);
            if ((rc = emit(r, val_point(r, step, a->val_loss)))) return rc;
            if (step > tr->warmup_steps && a->val_loss > a->diverged_at) return fail_diverged(r, step, a->val_loss, a->diverged_at);
        }
        if (at_rung) {
            /* a halving rung: val loss at exactly this step (above), a training-state checkpoint, stop */
            if ((rc = checkpoint(r, step, a->data_pos))) return rc;
            if (o->result) { o->result->paused_at = step; o->result->val_loss = a->val_loss; o->result->steps_done = step; }
            a->paused = 1;
            return 0;
        }
        if ((rc = run_step(r, a, &hp, step))) return rc;
        if (tr->checkpoint_every > 0 && (step + 1) % tr->checkpoint_every == 0 && step + 1 < steps)
            if ((rc = checkpoint(r, step + 1, a->data_pos))) return rc;
    }
    return 0;
}

/* Final evaluation (with attention distance when asked), zero-shot, model.bin and the result files. */
static int run_finish(struct run *r, struct loop_acc *a) {
    const struct job_config *job = r->job;
    const struct train_opts *o = r->o;
    struct model_config *cfg = &r->cfg;
    int steps = job->train.steps, rc;
    double val_loss = a->val_loss;
    double *attn = NULL, attn_buf[MODEL_MAX_LAYERS];
    if (job->eval.attn_distance) attn = attn_buf;
    if ((rc = evaluate(r, &val_loss, attn))) return rc;
    if (!isfinite(val_loss)) return fail(r, TRAIN_ENAN, "step %d: validation loss is %g (not finite)", steps, val_loss);
    if (val_loss > a->diverged_at) {   /* the final result, warmup or not */
        if ((rc = emit(r, val_point(r, steps, val_loss)))) return rc;
        return fail_diverged(r, steps, val_loss, a->diverged_at);
    }
    json_t *zs = NULL;
    if ((rc = zero_shot(r, &zs))) return rc;
    json_t *last = val_point(r, steps, val_loss);
    if (last && zs) json_object_set(last, "zero_shot", zs);
    if ((rc = emit(r, last))) { json_decref(zs); return rc; }

    if (r->ops->get_params(r->m, r->host_p)) return fail(r, TRAIN_EDEVICE, "%s", model_err(r));
    snprintf(r->path, sizeof r->path, "%s/model.bin", o->out_dir);
    if (ckpt_write_model(r->path, cfg, r->host_p, r->ebuf, sizeof r->ebuf)) { json_decref(zs); return fail(r, TRAIN_EIO, "%s", r->ebuf); }
    double wall = util_now_s() - a->t_begin, tps = a->tokens_run / (a->train_time > 0 ? a->train_time : 1e-9);
    rc = write_result(r, val_loss, a->train_loss, tps, wall, (long long)steps * a->tokens_per_step, attn, zs);
    json_decref(zs);
    if (rc) return rc;
    if (o->result) {
        struct train_result *res = o->result;
        res->val_loss = val_loss; res->train_loss = a->train_loss; res->tok_per_s = tps; res->wall_s = wall;
        res->flops_per_token = model_flops_per_token(cfg, job->train.seq_len); res->params = (long long)r->nparams;
        res->tokens = (long long)steps * a->tokens_per_step; res->steps_done = steps;
    }
    return 0;
}

static int run_loop(struct run *r) {
    const struct job_train *tr = &r->job->train;
    const struct train_opts *o = r->o;
    int dev, rc;
    struct loop_acc a = {.val_loss = NAN, .train_loss = NAN,
                         .tokens_per_step = (long long)tr->batch_size * tr->seq_len * tr->grad_accum};
    if ((rc = run_open_backend(r, &dev)) || (rc = run_open_data(r)) || (rc = run_open_model(r, dev)) ||
        (rc = run_initial_state(r, &a.start, &a.data_pos)))
        return rc;
    if (o->result) { o->result->resumed_from = a.start; o->result->steps_done = a.start; }
    if ((rc = metrics_open(r, a.start))) return rc;
    const char *dump = getenv("PRISM_DUMP_BATCHES");   /* a test hook (see dump_batch) */
    if (dump && *dump && !(r->dump = fopen(dump, "ab"))) return fail(r, TRAIN_EIO, "PRISM_DUMP_BATCHES %s: %s", dump, strerror(errno));
    a.t_begin = util_now_s();
    /* diverged: an evaluation after warmup, or the final one, worse than guessing uniformly by
     * TRAIN_DIVERGED_FACTOR (a run fine at step 5 and at 2,863 at the end is not a result) */
    a.diverged_at = TRAIN_DIVERGED_FACTOR * log((double)r->cfg.V);
    if ((rc = run_steps(r, &a)) || a.paused) return rc;
    return run_finish(r, &a);
}

int train_run(const struct job_config *job, const struct train_opts *opts) {
    struct run r;
    memset(&r, 0, sizeof r);
    r.job = job; r.o = opts; r.err = opts->err; r.errlen = opts->errlen;
    if (opts->err && opts->errlen) opts->err[0] = 0;
    if (opts->result) memset(opts->result, 0, sizeof *opts->result);
    int rc;
    if (!opts->out_dir || !*opts->out_dir) return fail(&r, TRAIN_EINVAL, "no output directory given");
    if (job_validate(job, r.ebuf, sizeof r.ebuf)) return fail(&r, TRAIN_EINVAL, "%s", r.ebuf);
    if (opts->stop_at_step < 0 || (opts->stop_at_step > 0 && opts->stop_at_step >= job->train.steps))
        return fail(&r, TRAIN_EINVAL, "stop_at_step: %d must be in 1..train.steps-1 (%d), or 0 for the full run",
                    opts->stop_at_step, job->train.steps - 1);
    if (opts->threads > 0) omp_set_num_threads(opts->threads);
    rc = run_loop(&r);
    if (r.metrics) fclose(r.metrics);
    if (r.dump) fclose(r.dump);
    if (r.m) r.ops->free(r.m);
    loader_release(&r.train);
    loader_release(&r.val);
    free(r.val_batch);
    for (int i = 0; r.tasks && i < job->eval.ntasks; i++) evalfile_close(&r.tasks[i]);
    free(r.tasks);
    free(r.host_p); free(r.host_m); free(r.host_v);
    return rc;
}
