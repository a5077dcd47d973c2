/* result_check.c — what a worker's result (result.json, POST .../complete) may hold, checked against its job:
 * the server's rules, which the worker applies too before it reports a result (result_check.h).
 *
 * Design: one table, RESULT_KEYS, names every number the server stores or ranks: its key (common/jobresult.h;
 * the older aliases are gone), its kind (a number, an integer, an array of numbers), whether it is required or may be null, and
 * its bounds. A bound is either fixed (a rate, a count) or derived from the job (result_load_limits): val_loss
 * lies in [0, JOB_DIVERGED_FACTOR x ln vocab_size] — above it the run did worse than guessing uniformly and
 * is a failure, not a result (the worker's own divergence rule) — attention distances in [0, seq_len], one
 * per layer, and steps equal to train.steps. A new key is one more row. zero_shot is checked by its own
 * function: its task names must be the job's eval.tasks names (already [A-Za-z0-9._-]{1,63}), so no text a
 * worker invents reaches a CSV header or a terminal, and accuracies lie in [0, 1].
 */
#include "result_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "job.h"
#include "jobresult.h"
#include "point.h"

enum { RK_NUM, RK_INT, RK_NUM_ARRAY };
enum { RB_FIXED, RB_VAL_LOSS, RB_SEQ_LEN, RB_STEPS };
enum { RL_ANY, RL_LAYERS, RL_BATCHES };

/* The numbers the server keeps (common/jobresult.h names them; no aliases: docs/API.md lists the dropped ones). */
static const struct result_key {
    const char *key;
    int kind;
    int required;         /* 1: must be present (and not null) */
    double lo, hi;        /* RB_FIXED bounds, inclusive */
    int bound;            /* RB_*: where the upper bound comes from */
    int len;              /* arrays: RL_LAYERS = exactly n_layer elements, RL_BATCHES = at most JOB_EVAL_MAX_ALL */
} RESULT_KEYS[] = {
    {JOBRESULT_KEY_VAL_LOSS, RK_NUM, 1, 0, 0, RB_VAL_LOSS, RL_ANY},
    {JOBRESULT_KEY_TRAIN_LOSS, RK_NUM, 0, 0, 1e4, RB_FIXED, RL_ANY},
    {JOBRESULT_KEY_TOK_PER_S, RK_NUM, 0, 0, 1e12, RB_FIXED, RL_ANY},
    {JOBRESULT_KEY_WALL_S, RK_NUM, 0, 0, 1e9, RB_FIXED, RL_ANY},
    {JOBRESULT_KEY_PARAMS, RK_INT, 0, 1, 1e13, RB_FIXED, RL_ANY},
    {JOBRESULT_KEY_FLOPS_PER_TOKEN, RK_NUM, 0, 0, 1e16, RB_FIXED, RL_ANY},
    {JOBRESULT_KEY_TOKENS, RK_INT, 0, 0, (double)JOB_MAX_TOKENS, RB_FIXED, RL_ANY},
    {JOBRESULT_KEY_STEPS, RK_INT, 0, 0, 0, RB_STEPS, RL_ANY},
    {JOBRESULT_KEY_ATTN_DISTANCE, RK_NUM_ARRAY, 0, 0, 0, RB_SEQ_LEN, RL_LAYERS},
    /* the val sample's noise (the ranking's val share): each batch's mean loss may lie above the divergence
     * bound of the mean, so the batches get a fixed bound of their own */
    {JOBRESULT_KEY_VAL_LOSS_SE, RK_NUM, 0, 0, 1e3, RB_FIXED, RL_ANY},
    {JOBRESULT_KEY_VAL_BATCHES, RK_INT, 0, 1, (double)JOB_EVAL_MAX_ALL, RB_FIXED, RL_ANY},
    {JOBRESULT_KEY_VAL_LOSS_BATCHES, RK_NUM_ARRAY, 0, 0, 1e4, RB_FIXED, RL_BATCHES},
    {JOBRESULT_KEY_SETUP_S, RK_NUM, 0, 0, 1e9, RB_FIXED, RL_ANY},
};

void result_limits_from_job(const struct job_config *j, result_limits *out) {
    memset(out, 0, sizeof *out);
    out->n_layer = j->model.n_layer;
    out->vocab_size = j->model.vocab_size;
    out->seq_len = j->train.seq_len > 0 ? j->train.seq_len : j->model.seq_len;
    out->steps = j->train.steps;
    out->val_loss_max = JOB_DIVERGED_FACTOR * log((double)(j->model.vocab_size > 1 ? j->model.vocab_size : 2));
    out->ntasks = j->eval.ntasks < RESULT_MAX_TASKS ? j->eval.ntasks : RESULT_MAX_TASKS;
    for (int i = 0; i < out->ntasks; i++) snprintf(out->tasks[i], sizeof out->tasks[i], "%s", j->eval.tasks[i].name);
}

int result_load_limits(const char *job_text, result_limits *out, char *err, size_t errlen) {
    struct job_config j;
    memset(out, 0, sizeof *out);
    if (!job_text || job_parse_json(job_text, &j, err, errlen) != 0) {
        if (!job_text) snprintf(err, errlen, "the job has no job JSON");
        return -1;
    }
    result_limits_from_job(&j, out);
    job_release(&j);
    return 0;
}

int result_diverged(const json_t *result, const result_limits *lim) {
    json_t *v = json_object_get(result, JOBRESULT_KEY_VAL_LOSS);
    return json_is_number(v) && isfinite(json_number_value(v)) && json_number_value(v) > lim->val_loss_max;
}

/* error begins with prefix followed by ':' */
static int result_has_prefix(const char *error, const char *prefix) {
    size_t n = strlen(prefix);
    return strncmp(error, prefix, n) == 0 && error[n] == ':';
}

int result_error_is_outcome(const char *error) {
    return error && (result_has_prefix(error, RESULT_ERR_DIVERGED) || result_has_prefix(error, RESULT_ERR_NOT_FINITE));
}

int result_check_val_loss(const result_limits *lim, const char *what, double v, char *err, size_t errlen) {
    if (isfinite(v) && v >= 0 && v <= lim->val_loss_max) return 0;
    if (isfinite(v) && v > lim->val_loss_max)
        snprintf(err, errlen, "%s: %g is above %g (%.1f x ln %d, guessing uniformly): the run diverged; report it "
                 "with POST .../fail, it is not a result to rank", what, v, lim->val_loss_max, JOB_DIVERGED_FACTOR,
                 lim->vocab_size);
    else
        snprintf(err, errlen, "%s: %g is not a loss a model can produce (a finite number >= 0)", what, v);
    return -1;
}

/* Checks one number of key k (element i of an array when i >= 0). */
static int check_num(const struct result_key *k, const result_limits *lim, const json_t *v, long i, char *err,
                     size_t errlen) {
    char what[96];
    if (i >= 0) snprintf(what, sizeof what, "result.%s[%ld]", k->key, i);
    else snprintf(what, sizeof what, "result.%s", k->key);
    int want_int = k->kind == RK_INT;
    if (want_int ? !json_is_integer(v) : !json_is_number(v)) {
        snprintf(err, errlen, "%s: must be %s", what, want_int ? "an integer" : "a number");
        return -1;
    }
    double x = json_number_value(v);
    if (k->bound == RB_VAL_LOSS) return result_check_val_loss(lim, what, x, err, errlen);
    if (k->bound == RB_STEPS) {
        if (lim->steps > 0 && json_integer_value(v) != lim->steps) {
            snprintf(err, errlen, "%s: %lld is not the job's train.steps %lld: a result is the full run's", what,
                     (long long)json_integer_value(v), lim->steps);
            return -1;
        }
        return 0;
    }
    double hi = k->bound == RB_SEQ_LEN ? (double)lim->seq_len : k->hi;
    if (!(x >= k->lo && x <= hi)) {
        snprintf(err, errlen, "%s: %g is outside [%g, %g], more than a model of this job can produce", what, x, k->lo, hi);
        return -1;
    }
    return 0;
}

int result_check_scores(const json_t *v, const char *what, int capped, char *err, size_t errlen) {
    static const char *const acc[2] = { "acc", "acc_norm" }, *const cnt[2] = { "n", "truncated" };
    for (int a = 0; a < 2; a++) {
        json_t *x = json_object_get(v, acc[a]);
        if (!json_is_number(x) || !(json_number_value(x) >= 0 && json_number_value(x) <= 1)) {
            snprintf(err, errlen, "%s.%s: must be a number in [0, 1]", what, acc[a]);
            return -1;
        }
        x = json_object_get(v, cnt[a]);   /* the items scored and cut: counts, as the worker's engine writes them */
        if (x && !json_is_null(x) && (!json_is_integer(x) || json_integer_value(x) < 0 ||
                                      (capped && json_integer_value(x) > 1000000000))) {
            snprintf(err, errlen, capped ? "%s.%s: must be an integer in [0, 1e9]" : "%s.%s: must be an integer >= 0",
                     what, cnt[a]);
            return -1;
        }
    }
    /* lm-eval's acc_norm (per character): optional, absent from results stored before it and from tasks whose
     * eval file has no character counts */
    json_t *x = json_object_get(v, "acc_norm_char");
    if (x && !json_is_null(x) && (!json_is_number(x) || !(json_number_value(x) >= 0 && json_number_value(x) <= 1))) {
        snprintf(err, errlen, "%s.acc_norm_char: must be a number in [0, 1] (or absent)", what);
        return -1;
    }
    return 0;
}

static int check_zero_shot(const json_t *zs, const result_limits *lim, char *err, size_t errlen) {
    if (!json_is_object(zs)) { snprintf(err, errlen, "result.zero_shot: must be an object {task: {acc, acc_norm}}"); return -1; }
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)zs, name, v) {
        int known = 0;
        for (int i = 0; i < lim->ntasks && !known; i++) known = strcmp(lim->tasks[i], name) == 0;
        if (!known) {
            char shown[80];
            size_t o = 0;   /* the name as printable ASCII only: it may be anything */
            for (const char *p = name; *p && o + 5 < sizeof shown; p++)
                o += (size_t)snprintf(shown + o, sizeof shown - o, (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f &&
                                      *p != '"' && *p != '\\' ? "%c" : "\\x%02x", (unsigned char)*p);
            snprintf(err, errlen, "result.zero_shot.\"%s\": not one of the job's eval.tasks names", shown);
            return -1;
        }
        if (!json_is_object(v)) { snprintf(err, errlen, "result.zero_shot.%s: must be an object {acc, acc_norm}", name); return -1; }
        char what[96];
        snprintf(what, sizeof what, "result.zero_shot.%s", name);
        if (result_check_scores(v, what, 1, err, errlen)) return -1;
        const char *vk;
        json_t *vv;
        json_object_foreach(v, vk, vv)
            if (strcmp(vk, "acc") && strcmp(vk, "acc_norm") && strcmp(vk, "acc_norm_char") && strcmp(vk, "n") &&
                strcmp(vk, "truncated")) {
                snprintf(err, errlen, "result.zero_shot.%s: unknown key (expected acc, acc_norm, acc_norm_char, n, truncated)", name);
                return -1;
            }
    }
    return 0;
}

int result_check(const json_t *result, const result_limits *lim, char *err, size_t errlen) {
    if (!json_is_object(result)) { snprintf(err, errlen, "result: must be an object (result.json)"); return -1; }
    for (size_t n = 0; n < sizeof RESULT_KEYS / sizeof RESULT_KEYS[0]; n++) {
        const struct result_key *k = &RESULT_KEYS[n];
        json_t *v = json_object_get(result, k->key);
        if (!v || json_is_null(v)) {
            if (k->required) {
                snprintf(err, errlen, "result.%s: required, %s", k->key, k->kind == RK_INT ? "an integer" : "a number");
                return -1;
            }
            continue;
        }
        if (k->kind != RK_NUM_ARRAY) {
            if (check_num(k, lim, v, -1, err, errlen)) return -1;
            continue;
        }
        if (!json_is_array(v)) { snprintf(err, errlen, "result.%s: must be an array of numbers", k->key); return -1; }
        if (k->len == RL_BATCHES && json_array_size(v) > JOB_EVAL_MAX_ALL) {
            snprintf(err, errlen, "result.%s: %zu elements, at most %d (eval.batches \"all\" reads at most that many)",
                     k->key, json_array_size(v), JOB_EVAL_MAX_ALL);
            return -1;
        }
        if (k->len == RL_LAYERS && lim->n_layer > 0 && json_array_size(v) != (size_t)lim->n_layer) {
            snprintf(err, errlen, "result.%s: %zu elements, the job's model.n_layer is %d (one per layer)", k->key,
                     json_array_size(v), lim->n_layer);
            return -1;
        }
        struct result_key ek = *k;
        ek.kind = RK_NUM;
        for (size_t i = 0; i < json_array_size(v); i++)
            if (check_num(&ek, lim, json_array_get(v, i), (long)i, err, errlen)) return -1;
    }
    json_t *zs = json_object_get(result, JOBRESULT_KEY_ZERO_SHOT);
    if (zs && !json_is_null(zs) && check_zero_shot(zs, lim, err, errlen)) return -1;
    json_t *ex = json_object_get(result, POINT_KEY_EXTRA);   /* an external trainer's own metrics: the points' rule */
    if (ex && !json_is_null(ex) && point_extra_check(ex, "result", err, errlen)) return -1;
    return 0;
}
