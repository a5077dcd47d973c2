/* job.c — parse, default, validate and print the job JSON (see job.h for the format).
 *
 * Design: one table per section maps each key to a typed slot in struct job_config (offsetof), with the
 * bounds that make a value valid, its default (or the rule that derives it) and the arch it belongs to: job_init,
 * the parser, job_to_json and job_schema_json (`prism-worker schema --json`, which trainers/torch/prism_data.py is
 * tested against) all loop over these rows, so a key is one row. Parsing walks the object's keys (so an unknown key is found, not
 * skipped), converts through the table, then job_validate() checks what spans keys (heads vs n_layer,
 * train.seq_len vs model.seq_len). Every message starts with the dotted key it is about.
 */
#include "job.h"
#include "schedule.h"
#include "jsonout.h"
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { K_INT, K_NUM, K_BOOL, K_STR, K_U64, K_HEADS, K_CHOICE, K_TASKS, K_BATCHES };

struct key {
    const char *name;
    enum kind kind;
    size_t off, size;             /* the slot in struct job_config; size: a K_CHOICE's char array */
    double min, max;              /* inclusive bounds for K_INT / K_NUM / K_BATCHES / K_HEADS (each head) */
    int required;
    double def;                   /* job_init's value of a K_INT / K_NUM / K_BOOL / K_U64 / K_BATCHES */
    const char *const *choices;   /* K_CHOICE: the accepted strings, NULL-terminated; the first is the default */
    const char *arch;             /* only for this model.arch (naming it with another is an error); NULL: any */
    const char *derived;          /* the default follows from other keys (job_from_json sets it): the rule */
    int quiet_default;            /* job_to_json leaves it out at its default (model.arch "gpt2") */
};

#define OFF(f) offsetof(struct job_config, f)
#define INT(n, f, lo, hi, d) {.name = n, .kind = K_INT, .off = OFF(f), .min = lo, .max = hi, .def = d}
#define NUM(n, f, lo, hi, d) {.name = n, .kind = K_NUM, .off = OFF(f), .min = lo, .max = hi, .def = d}
#define BOOL(n, f, d) {.name = n, .kind = K_BOOL, .off = OFF(f), .def = d}
#define REQ(n, kd, f, lo, hi) {.name = n, .kind = kd, .off = OFF(f), .min = lo, .max = hi, .required = 1}
#define CHOICE(n, f, c) {.name = n, .kind = K_CHOICE, .off = OFF(f), .size = sizeof ((struct job_config *)0)->f, .choices = c}
static const char *const ARCHES[] = {"gpt2", "llama", NULL};
static const char *const SCHEDULES[] = {"cosine", "constant", NULL};
static const struct key model_keys[] = {
    REQ("n_layer", K_INT, model.n_layer, 1, JOB_MAX_LAYERS),
    REQ("d_model", K_INT, model.d_model, 1, 65536),
    REQ("vocab_size", K_INT, model.vocab_size, 1, 65536),
    {.name = "padded_vocab_size", .kind = K_INT, .off = OFF(model.padded_vocab_size), .min = 1, .max = 1 << 20,
     .derived = "vocab_size rounded up to a multiple of 128"},
    REQ("seq_len", K_INT, model.seq_len, 1, 1 << 20),
    REQ("heads", K_HEADS, model.heads, 1, 65536),
    {.name = "init", .kind = K_STR, .off = OFF(model.init)},
    {.name = "arch", .kind = K_CHOICE, .off = OFF(model.arch), .size = sizeof ((struct job_config *)0)->model.arch,
     .choices = ARCHES, .quiet_default = 1},
    {.name = "ffn_hidden", .kind = K_INT, .off = OFF(model.ffn_hidden), .min = 1, .max = 1 << 20, .arch = "llama",
     .derived = "8*d_model/3 rounded up to a multiple of 64"},
    {.name = "rope_theta", .kind = K_INT, .off = OFF(model.rope_theta), .min = 1, .max = 1 << 24, .arch = "llama",
     .derived = "10000"},   /* a float holds it exactly (checkpoint.h) */
    {0}};
static const struct key train_keys[] = {
    INT("batch_size", train.batch_size, 1, 1 << 16, 8),
    {.name = "seq_len", .kind = K_INT, .off = OFF(train.seq_len), .min = 1, .max = 1 << 20, .derived = "model.seq_len"},
    INT("grad_accum", train.grad_accum, 1, 1 << 16, 1),
    INT("steps", train.steps, 1, 1e9, 100),
    NUM("lr", train.lr, 0, 10, 6e-4),
    CHOICE("lr_schedule", train.lr_schedule, SCHEDULES),
    INT("warmup_steps", train.warmup_steps, 0, 1e9, 0),
    NUM("min_lr_frac", train.min_lr_frac, 0, 1, 0.1),
    NUM("beta1", train.beta1, 0, 0.999999, 0.9),
    NUM("beta2", train.beta2, 0, 0.999999999, 0.95),
    NUM("eps", train.eps, 1e-30, 1, 1e-8),
    NUM("weight_decay", train.weight_decay, 0, 10, 0.1),
    NUM("grad_clip", train.grad_clip, 0, 1e9, 1.0),
    {.name = "seed", .kind = K_U64, .off = OFF(train.seed), .def = 1337},
    BOOL("shuffle", train.shuffle, 1),
    INT("checkpoint_every", train.checkpoint_every, 0, 1e9, 0),
    {0}};
static const struct key eval_keys[] = {
    INT("every", eval.every, 0, 1e9, 0),
    {.name = "batches", .kind = K_BATCHES, .off = OFF(eval.batches), .min = 1, .max = 1e6, .def = 4},
    BOOL("attn_distance", eval.attn_distance, 0),
    {.name = "tasks", .kind = K_TASKS, .off = OFF(eval.tasks)},
    {0}};
static const struct key data_keys[] = {
    REQ("train", K_STR, data.train, 0, 0),
    REQ("val", K_STR, data.val, 0, 0),
    {0}};
static const struct { const char *name; const struct key *keys; } sections[] = {
    {"model", model_keys}, {"train", train_keys}, {"eval", eval_keys}, {"data", data_keys}};
#define NSECTIONS 4
#define SLOT(j, k, type) (*(type *)((char *)(j) + (k)->off))
#define CSLOT(j, k, type) (*(const type *)((const char *)(j) + (k)->off))

#define FAIL(...) do { if (err) snprintf(err, errlen, __VA_ARGS__); return JOB_EINVAL; } while (0)

void job_init(struct job_config *j) {
    memset(j, 0, sizeof *j);
    for (int i = 0; i < NSECTIONS; i++)
        for (const struct key *k = sections[i].keys; k->name; k++) {
            if (k->required || k->derived) continue;
            switch (k->kind) {
            case K_INT: case K_BOOL: case K_BATCHES: SLOT(j, k, int) = (int)k->def; break;
            case K_NUM: SLOT(j, k, double) = k->def; break;
            case K_U64: SLOT(j, k, uint64_t) = (uint64_t)k->def; break;
            case K_CHOICE: snprintf((char *)j + k->off, k->size, "%s", k->choices[0]); break;
            default: break;   /* strings NULL, tasks none */
            }
        }
}


static void tasks_free(struct job_eval_task *t, int n) {
    for (int i = 0; i < n && t; i++) { free(t[i].name); free(t[i].path); }
    free(t);
}

/* eval.tasks: [{"name": "hellaswag", "path": "hellaswag_val.bin"}, ...] */
static int set_tasks(struct job_config *j, const json_t *v, char *err, size_t errlen) {
    if (!json_is_array(v)) FAIL("eval.tasks: expected an array of {\"name\", \"path\"} objects");
    size_t n = json_array_size(v);
    if (n > JOB_MAX_TASKS) FAIL("eval.tasks: at most %d tasks, got %zu", JOB_MAX_TASKS, n);
    struct job_eval_task *t = calloc(n ? n : 1, sizeof *t);
    if (!t) FAIL("eval.tasks: out of memory");
    int rc = JOB_EINVAL;
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(v, i), *nm = json_object_get(o, "name"), *pa = json_object_get(o, "path");
        if (!json_is_object(o)) { if (err) snprintf(err, errlen, "eval.tasks[%zu]: expected an object {\"name\", \"path\"}, got %s", i, job_json_type(o)); goto bad; }
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)o, k, x)
            if (strcmp(k, "name") && strcmp(k, "path")) { if (err) snprintf(err, errlen, "eval.tasks[%zu].%s: unknown key (known: name path)", i, k); goto bad; }
        if (!json_is_string(nm)) { if (err) snprintf(err, errlen, "eval.tasks[%zu].name: required, a string like \"hellaswag\"", i); goto bad; }
        if (!json_is_string(pa) || !*json_string_value(pa)) { if (err) snprintf(err, errlen, "eval.tasks[%zu].path: required, the llm.c eval file (e.g. \"hellaswag_val.bin\")", i); goto bad; }
        const char *s = json_string_value(nm);
        size_t len = strlen(s);
        int ok = len >= 1 && len <= 63;
        for (size_t c = 0; c < len && ok; c++)
            ok = (s[c] >= 'a' && s[c] <= 'z') || (s[c] >= 'A' && s[c] <= 'Z') || (s[c] >= '0' && s[c] <= '9') || strchr("._-", s[c]);
        if (!ok) { if (err) snprintf(err, errlen, "eval.tasks[%zu].name: \"%.80s\" must be 1-63 of [A-Za-z0-9._-]", i, s); goto bad; }
        for (size_t p = 0; p < i; p++)
            if (strcmp(t[p].name, s) == 0) { if (err) snprintf(err, errlen, "eval.tasks[%zu].name: \"%s\" repeats eval.tasks[%zu]", i, s, p); goto bad; }
        if (strlen(json_string_value(pa)) > 4000) { if (err) snprintf(err, errlen, "eval.tasks[%zu].path: longer than 4000 characters", i); goto bad; }
        t[i].name = strdup(s);
        t[i].path = strdup(json_string_value(pa));
        if (!t[i].name || !t[i].path) { if (err) snprintf(err, errlen, "eval.tasks: out of memory"); goto bad; }
    }
    tasks_free(j->eval.tasks, j->eval.ntasks);
    j->eval.tasks = t;
    j->eval.ntasks = (int)n;
    return 0;
bad:
    tasks_free(t, (int)n);
    return rc;
}

void job_release(struct job_config *j) {
    if (!j) return;
    free(j->model.init);
    free(j->data.train);
    free(j->data.val);
    free(j->trainer_args);
    tasks_free(j->eval.tasks, j->eval.ntasks);
    job_init(j);
}

const char *job_json_type(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static int set_key(struct job_config *j, const char *sec, const struct key *k, const json_t *v, char *err, size_t errlen) {
    char *base = (char *)j + k->off;
    switch (k->kind) {
    case K_BATCHES:   /* a count, or "all": the whole val split (JOB_EVAL_ALL) */
        if (json_is_string(v)) {
            if (strcmp(json_string_value(v), "all")) FAIL("%s.%s: expected an integer or \"all\" (the whole val split), got \"%.40s\"", sec, k->name, json_string_value(v));
            *(int *)base = JOB_EVAL_ALL;
            return 0;
        }
        /* fall through */
    case K_INT: {
        if (!json_is_integer(v)) FAIL("%s.%s: expected an integer, got %s", sec, k->name, job_json_type(v));
        json_int_t x = json_integer_value(v);
        if (x < k->min || x > k->max) FAIL("%s.%s: must be between %.0f and %.0f, got %lld", sec, k->name, k->min, k->max, (long long)x);
        *(int *)base = (int)x;
        return 0;
    }
    case K_NUM: {
        if (!json_is_number(v)) FAIL("%s.%s: expected a number, got %s", sec, k->name, job_json_type(v));
        double x = json_number_value(v);
        if (!isfinite(x) || x < k->min || x > k->max) FAIL("%s.%s: must be between %g and %g, got %g", sec, k->name, k->min, k->max, x);
        if (strcmp(k->name, "lr") == 0 && x <= 0) FAIL("train.lr: must be > 0, got %g", x);
        *(double *)base = x;
        return 0;
    }
    case K_BOOL:
        if (!json_is_boolean(v)) FAIL("%s.%s: expected true or false, got %s", sec, k->name, job_json_type(v));
        *(int *)base = json_is_true(v);
        return 0;
    case K_U64: {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            FAIL("%s.%s: expected a non-negative integer, got %s", sec, k->name, json_is_integer(v) ? "a negative integer" : job_json_type(v));
        *(uint64_t *)base = (uint64_t)json_integer_value(v);
        return 0;
    }
    case K_STR: {
        if (!json_is_string(v)) FAIL("%s.%s: expected a string, got %s", sec, k->name, job_json_type(v));
        const char *s = json_string_value(v);
        if (!*s) FAIL("%s.%s: must not be empty", sec, k->name);
        if (strlen(s) > 4000) FAIL("%s.%s: longer than 4000 characters", sec, k->name);
        char **slot = (char **)base;
        free(*slot);
        *slot = strdup(s);
        if (!*slot) FAIL("%s.%s: out of memory", sec, k->name);
        return 0;
    }
    case K_CHOICE: {
        const char *s = json_is_string(v) ? json_string_value(v) : NULL;
        int ok = 0;
        char alts[160] = "";
        for (int c = 0; k->choices[c]; c++) {
            ok |= s && strcmp(s, k->choices[c]) == 0;
            size_t n = strlen(alts);
            snprintf(alts + n, sizeof alts - n, "%s\"%s\"", c ? " or " : "", k->choices[c]);
        }
        if (!ok) FAIL("%s.%s: expected %s, got %s%s%s", sec, k->name, alts, s ? "\"" : job_json_type(v), s ? s : "", s ? "\"" : "");
        snprintf(base, k->size, "%s", s);
        return 0;
    }
    case K_TASKS:
        return set_tasks(j, v, err, errlen);
    case K_HEADS: {
        if (!json_is_array(v)) FAIL("model.heads: expected an array of head counts, got %s", job_json_type(v));
        size_t n = json_array_size(v);
        if (n < 1 || n > JOB_MAX_LAYERS) FAIL("model.heads: expected 1 to %d entries, got %zu", JOB_MAX_LAYERS, n);
        for (size_t i = 0; i < n; i++) {
            const json_t *h = json_array_get(v, i);
            if (!json_is_integer(h) || json_integer_value(h) < 1 || json_integer_value(h) > 65536)
                FAIL("model.heads[%zu]: expected a positive integer head count", i);
            j->model.heads[i] = (int)json_integer_value(h);
        }
        for (size_t i = n; i < JOB_MAX_LAYERS; i++) j->model.heads[i] = 0;
        return 0;
    }
    }
    return 0;
}

static int heads_count(const struct job_config *j) {
    int n = 0;
    while (n < JOB_MAX_LAYERS && j->model.heads[n] > 0) n++;
    return n;
}

int job_validate(const struct job_config *j, char *err, size_t errlen) {
    const struct job_model *m = &j->model;
    if (m->n_layer < 1 || m->n_layer > JOB_MAX_LAYERS) FAIL("model.n_layer: must be between 1 and %d, got %d", JOB_MAX_LAYERS, m->n_layer);
    if (m->d_model < 1) FAIL("model.d_model: required (a positive integer)");
    if (m->vocab_size < 1 || m->vocab_size > 65536) FAIL("model.vocab_size: must be between 1 and 65536 (uint16 tokens), got %d", m->vocab_size);
    if (m->padded_vocab_size < m->vocab_size)
        FAIL("model.padded_vocab_size: must be >= model.vocab_size (%d), got %d", m->vocab_size, m->padded_vocab_size);
    if (m->seq_len < 1) FAIL("model.seq_len: required (a positive integer)");
    int nh = heads_count(j);
    if (nh != m->n_layer) FAIL("model.heads: has %d entries but model.n_layer is %d (one head count per layer)", nh, m->n_layer);
    for (int l = 0; l < nh; l++)
        if (m->d_model % m->heads[l])
            FAIL("model.heads[%d]: %d does not divide model.d_model %d (head size must be whole)", l, m->heads[l], m->d_model);
    if (strcmp(m->arch, "gpt2") && strcmp(m->arch, "llama")) FAIL("model.arch: expected \"gpt2\" or \"llama\", got \"%s\"", m->arch);
    if (strcmp(m->arch, "llama") == 0) {
        for (int l = 0; l < nh; l++)
            if ((m->d_model / m->heads[l]) % 2)
                FAIL("model.heads[%d]: %d heads give head size %d, which is odd; model.arch \"llama\" (RoPE) needs an even head size",
                     l, m->heads[l], m->d_model / m->heads[l]);
        if (m->ffn_hidden < 1) FAIL("model.ffn_hidden: must be >= 1, got %d", m->ffn_hidden);
        if (m->rope_theta < 1) FAIL("model.rope_theta: must be >= 1, got %d", m->rope_theta);
    } else if (m->ffn_hidden || m->rope_theta)
        FAIL("model.%s: only for model.arch \"llama\" (this job is \"%s\"); remove the key or set model.arch",
             m->ffn_hidden ? "ffn_hidden" : "rope_theta", m->arch);
    const struct job_train *t = &j->train;
    if (t->seq_len < 1 || t->seq_len > m->seq_len)
        FAIL("train.seq_len: must be between 1 and model.seq_len (%d), got %d", m->seq_len, t->seq_len);
    if (t->batch_size < 1) FAIL("train.batch_size: must be >= 1, got %d", t->batch_size);
    if (t->grad_accum < 1) FAIL("train.grad_accum: must be >= 1, got %d", t->grad_accum);
    if (t->steps < 1) FAIL("train.steps: must be >= 1, got %d", t->steps);
    if (!(t->lr > 0)) FAIL("train.lr: must be > 0, got %g", t->lr);
    {   /* tokens per step and in all: every count derived from them (metrics' tokens, sums) stays in range */
        long long per_step = (long long)t->batch_size * t->seq_len * t->grad_accum;
        if (per_step > JOB_MAX_STEP_TOKENS)
            FAIL("train.batch_size x train.seq_len x train.grad_accum: %d x %d x %d = %lld tokens per step, at most %lld",
                 t->batch_size, t->seq_len, t->grad_accum, per_step, (long long)JOB_MAX_STEP_TOKENS);
        if (per_step * (long long)t->steps > JOB_MAX_TOKENS)
            FAIL("train.steps: %d steps of %lld tokens is %lld tokens, at most %lld (2^48)", t->steps, per_step,
                 per_step * (long long)t->steps, (long long)JOB_MAX_TOKENS);
    }
    /* the per-key bounds of the tables above, again: CLI overrides (--lr, --weight-decay, ...) skip set_key */
    for (const struct key *k = train_keys; k->name; k++)
        if (k->kind == K_NUM) {
            double x = *(const double *)((const char *)j + k->off);
            if (!isfinite(x) || x < k->min || x > k->max) FAIL("train.%s: must be between %g and %g, got %g", k->name, k->min, k->max, x);
        }
    if (t->warmup_steps < 0) FAIL("train.warmup_steps: must be >= 0, got %d", t->warmup_steps);
    if (strcmp(t->lr_schedule, "cosine") && strcmp(t->lr_schedule, "constant"))
        FAIL("train.lr_schedule: expected \"cosine\" or \"constant\", got \"%s\"", t->lr_schedule);
    if (t->checkpoint_every < 0) FAIL("train.checkpoint_every: must be >= 0, got %d", t->checkpoint_every);
    if (j->eval.every < 0) FAIL("eval.every: must be >= 0, got %d", j->eval.every);
    if (j->eval.batches < 1 && j->eval.batches != JOB_EVAL_ALL) FAIL("eval.batches: must be >= 1 or \"all\", got %d", j->eval.batches);
    if (!j->data.train || !*j->data.train) FAIL("data.train: required (a glob of token shards)");
    if (!j->data.val || !*j->data.val) FAIL("data.val: required (a glob of token shards)");
    return 0;
}

int job_from_json(const json_t *obj, struct job_config *out, char *err, size_t errlen) {
    job_init(out);
    int rc = JOB_EINVAL;
    if (!json_is_object(obj)) { if (err) snprintf(err, errlen, "job: expected a JSON object, got %s", job_json_type(obj)); goto out; }
    const char *key;
    const json_t *sec;
    json_object_foreach((json_t *)obj, key, sec) {
        int si = -1;
        for (int i = 0; i < NSECTIONS; i++) if (strcmp(key, sections[i].name) == 0) si = i;
        if (si < 0 && strcmp(key, "trainer") == 0) {   /* the one top-level scalar: who trains the job */
            if (!json_is_string(sec) || !job_trainer_name_ok(json_string_value(sec))) {
                if (err) snprintf(err, errlen, "trainer: must be a trainer name (1-63 of [A-Za-z0-9._-], not starting "
                                  "with . or -) that workers offer with --trainer NAME=COMMAND; omit it for the built-in "
                                  "engine");
                goto out;
            }
            snprintf(out->trainer, sizeof out->trainer, "%s", json_string_value(sec));
            continue;
        }
        if (si < 0 && strcmp(key, "trainer_args") == 0) {   /* the trainer's own options, passed on untouched */
            if (job_trainer_args_check(sec, "trainer_args", err, errlen) < 0) goto out;
            free(out->trainer_args);
            out->trainer_args = json_dumps(sec, JSON_COMPACT | JSON_SORT_KEYS | JSONOUT_FLAGS);
            if (!out->trainer_args) { if (err) snprintf(err, errlen, "trainer_args: out of memory"); rc = JOB_ENOMEM; goto out; }
            continue;
        }
        if (si < 0) { if (err) snprintf(err, errlen, "%s: unknown key (a job has model, train, eval, data, trainer, trainer_args)", key); goto out; }
        if (!json_is_object(sec)) { if (err) snprintf(err, errlen, "%s: expected an object, got %s", key, job_json_type(sec)); goto out; }
        const char *k2;
        const json_t *v;
        json_object_foreach((json_t *)sec, k2, v) {
            const struct key *k = sections[si].keys;
            while (k->name && strcmp(k->name, k2)) k++;
            if (!k->name) {
                if (err) {
                    int n = snprintf(err, errlen, "%s.%s: unknown key (known:", key, k2);
                    for (const struct key *q = sections[si].keys; q->name && n > 0 && (size_t)n < errlen; q++)
                        n += snprintf(err + n, errlen - n, " %s", q->name);
                    if (n > 0 && (size_t)n < errlen) snprintf(err + n, errlen - n, ")");
                }
                goto out;
            }
            if (set_key(out, key, k, v, err, errlen)) goto out;
        }
    }
    /* required keys, then defaults that depend on other keys */
    for (int i = 0; i < NSECTIONS; i++) {
        const json_t *sec2 = json_object_get(obj, sections[i].name);
        for (const struct key *k = sections[i].keys; k->name; k++)
            if (k->required && (!sec2 || !json_object_get(sec2, k->name))) {
                if (err) snprintf(err, errlen, "%s.%s: required", sections[i].name, k->name);
                goto out;
            }
    }
    const json_t *msec = json_object_get(obj, "model");
    for (const struct key *k = model_keys; k->name; k++)
        if (k->arch && msec && json_object_get(msec, k->name) && strcmp(out->model.arch, k->arch)) {
            if (err) snprintf(err, errlen, "model.%s: only for model.arch \"%s\" (this job is \"%s\"); remove the key or set model.arch",
                              k->name, k->arch, out->model.arch);
            goto out;
        }
    if (strcmp(out->model.arch, "llama") == 0) {
        if (out->model.ffn_hidden == 0) out->model.ffn_hidden = (int)(((8L * out->model.d_model + 2) / 3 + 63) / 64 * 64);
        if (out->model.rope_theta == 0) out->model.rope_theta = 10000;
    }
    if (out->model.padded_vocab_size == 0) out->model.padded_vocab_size = (out->model.vocab_size + 127) / 128 * 128;
    if (out->train.seq_len == 0) out->train.seq_len = out->model.seq_len;
    if (out->trainer_args && !out->trainer[0]) {
        if (err) snprintf(err, errlen, "trainer_args: only for a job with a \"trainer\" (the built-in engine takes none); "
                          "remove it or name the trainer");
        goto out;
    }
    rc = job_validate(out, err, errlen);
out:
    if (rc) job_release(out);
    return rc;
}

int job_parse_json(const char *text, struct job_config *out, char *err, size_t errlen) {
    json_error_t je;
    json_t *obj = json_loads(text ? text : "", JSON_REJECT_DUPLICATES, &je);
    if (!obj) {
        job_init(out);
        if (err) snprintf(err, errlen, "job: not valid JSON at line %d column %d: %s", je.line, je.column, je.text);
        return JOB_EINVAL;
    }
    int rc = job_from_json(obj, out, err, errlen);
    json_decref(obj);
    return rc;
}

int job_load_file(const char *path, struct job_config *out, char *err, size_t errlen) {
    json_error_t je;
    json_t *obj = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!obj) {
        job_init(out);
        if (err) snprintf(err, errlen, "%s: %s (line %d column %d)", path, je.text, je.line, je.column);
        return JOB_EINVAL;
    }
    char inner[768];
    int rc = job_from_json(obj, out, inner, sizeof inner);
    json_decref(obj);
    if (rc && err) snprintf(err, errlen, "%s: %s", path, inner);
    return rc;
}

/* One key of j as a new JSON value; NULL when j leaves it out (a string unset, no tasks, the default arch, a key
 * of another arch) or out of memory (*oom set). */
static json_t *key_to_json(const struct job_config *j, const struct key *k, int *oom) {
    json_t *v = NULL;
    if (k->arch && strcmp(j->model.arch, k->arch)) return NULL;
    switch (k->kind) {
    case K_INT: v = json_integer(CSLOT(j, k, int)); break;
    case K_NUM: v = json_real(CSLOT(j, k, double)); break;
    case K_BOOL: v = json_boolean(CSLOT(j, k, int)); break;
    case K_U64: v = json_integer((json_int_t)CSLOT(j, k, uint64_t)); break;
    case K_BATCHES: v = CSLOT(j, k, int) == JOB_EVAL_ALL ? json_string("all") : json_integer(CSLOT(j, k, int)); break;
    case K_STR:
        if (!CSLOT(j, k, char *)) return NULL;
        v = json_string(CSLOT(j, k, char *));
        break;
    case K_CHOICE:
        if (k->quiet_default && !strcmp((const char *)j + k->off, k->choices[0])) return NULL;
        v = json_string((const char *)j + k->off);
        break;
    case K_HEADS:
        v = json_array();
        for (int l = 0; l < j->model.n_layer && v; l++)
            if (json_array_append_new(v, json_integer(j->model.heads[l])) < 0) { json_decref(v); v = NULL; }
        break;
    case K_TASKS:
        if (j->eval.ntasks <= 0) return NULL;
        v = json_array();
        for (int i = 0; i < j->eval.ntasks && v; i++)
            if (json_array_append_new(v, json_pack("{s:s, s:s}", "name", j->eval.tasks[i].name, "path", j->eval.tasks[i].path)) < 0) {
                json_decref(v);
                v = NULL;
            }
        break;
    }
    if (!v) *oom = 1;
    return v;
}

json_t *job_to_json(const struct job_config *j) {
    json_t *o = json_object();
    int oom = !o;
    for (int i = 0; i < NSECTIONS && !oom; i++) {
        json_t *sec = json_object();
        if (!sec || json_object_set_new(o, sections[i].name, sec) < 0) { oom = 1; break; }
        for (const struct key *k = sections[i].keys; k->name && !oom; k++) {
            json_t *v = key_to_json(j, k, &oom);
            if (v && json_object_set_new(sec, k->name, v) < 0) oom = 1;
        }
    }
    if (!oom && j->trainer[0] && json_object_set_new(o, "trainer", json_string(j->trainer)) < 0) oom = 1;
    if (!oom && j->trainer_args) {
        json_t *a = json_loads(j->trainer_args, 0, NULL);
        if (!a || json_object_set_new(o, "trainer_args", a) < 0) oom = 1;
    }
    if (oom) { json_decref(o); return NULL; }
    return o;
}

static int str_same(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

int job_equal(const struct job_config *a, const struct job_config *b) {
    for (int i = 0; i < NSECTIONS; i++)
        for (const struct key *k = sections[i].keys; k->name; k++) {
            int same = 1;
            switch (k->kind) {
            case K_INT: case K_BOOL: case K_BATCHES: same = CSLOT(a, k, int) == CSLOT(b, k, int); break;
            case K_NUM: same = CSLOT(a, k, double) == CSLOT(b, k, double); break;
            case K_U64: same = CSLOT(a, k, uint64_t) == CSLOT(b, k, uint64_t); break;
            case K_STR: same = str_same(CSLOT(a, k, char *), CSLOT(b, k, char *)); break;
            case K_CHOICE: same = strcmp((const char *)a + k->off, (const char *)b + k->off) == 0; break;
            case K_HEADS: same = memcmp(a->model.heads, b->model.heads, sizeof a->model.heads) == 0; break;
            case K_TASKS:
                same = a->eval.ntasks == b->eval.ntasks;
                for (int t = 0; same && t < a->eval.ntasks; t++)
                    same = str_same(a->eval.tasks[t].name, b->eval.tasks[t].name) &&
                           str_same(a->eval.tasks[t].path, b->eval.tasks[t].path);
                break;
            }
            if (!same) return 0;
        }
    return strcmp(a->trainer, b->trainer) == 0 && str_same(a->trainer_args, b->trainer_args);
}

json_t *job_schema_json(void) {
    static const char *const kinds[] = {"int", "num", "bool", "str", "u64", "heads", "one of", "tasks", "batches"};
    json_t *a = json_array();
    for (int i = 0; i < NSECTIONS && a; i++)
        for (const struct key *k = sections[i].keys; k->name && a; k++) {
            json_t *r = json_pack("{s:s, s:s, s:s, s:b}", "section", sections[i].name, "key", k->name, "kind",
                                  kinds[k->kind], "required", k->required);
            int bounded = k->kind == K_INT || k->kind == K_NUM || k->kind == K_BATCHES || k->kind == K_HEADS;
            if (r && bounded) { json_object_set_new(r, "min", json_real(k->min)); json_object_set_new(r, "max", json_real(k->max)); }
            if (r && k->choices) {
                json_t *c = json_array();
                for (int n = 0; c && k->choices[n]; n++) json_array_append_new(c, json_string(k->choices[n]));
                json_object_set_new(r, "choices", c);
            }
            if (r && !k->required && !k->derived) {   /* job_init's value */
                json_t *d = k->kind == K_NUM ? json_real(k->def) : k->kind == K_BOOL ? json_boolean(k->def != 0)
                          : k->kind == K_CHOICE ? json_string(k->choices[0]) : k->kind == K_TASKS ? json_array()
                          : k->kind == K_STR ? json_null() : json_integer((json_int_t)k->def);
                json_object_set_new(r, "default", d);
            }
            if (r && k->derived) json_object_set_new(r, "derived", json_string(k->derived));
            if (r && k->arch) json_object_set_new(r, "arch", json_string(k->arch));
            if (!r || json_array_append_new(a, r) < 0) { json_decref(a); a = NULL; }
        }
    static const char *const top[][2] = {{"trainer", "str"}, {"trainer_args", "object"}};   /* job_from_json's own */
    for (int i = 0; i < 2 && a; i++)
        if (json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:b, s:n}", "section", "", "key", top[i][0], "kind",
                                               top[i][1], "required", 0, "default")) < 0) { json_decref(a); a = NULL; }
    return a;
}

static int arg_name_ok(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > JOB_TRAINER_ARG_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '.' || s[i] == '_' || s[i] == '-')) return 0;
    return 1;
}

int job_trainer_args_check(const json_t *args, const char *what, char *err, size_t errlen) {
    if (!json_is_object(args))
        FAIL("%s: must be an object of the trainer's options ({\"dropout\": 0.1, ...}), got %s", what, job_json_type(args));
    if (json_object_size(args) > JOB_TRAINER_ARGS_MAX)
        FAIL("%s: %zu keys, at most %d; pass the rest in a config file the trainer reads", what, json_object_size(args),
             JOB_TRAINER_ARGS_MAX);
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)args, k, v) {
        if (!arg_name_ok(k))
            FAIL("%s: key \"%.80s\" is not a name: 1-%d characters of [A-Za-z0-9_.-]; rename it", what, k,
                 JOB_TRAINER_ARG_NAME_MAX);
        if (json_is_string(v)) {
            if (json_string_length(v) > JOB_TRAINER_ARG_STR_MAX)
                FAIL("%s.%s: a string of %zu bytes, at most %d; pass a path to a file instead", what, k,
                     json_string_length(v), JOB_TRAINER_ARG_STR_MAX);
        } else if (json_is_number(v)) {
            if (!isfinite(json_number_value(v))) FAIL("%s.%s: must be a finite number", what, k);
        } else if (!json_is_boolean(v))
            FAIL("%s.%s: must be a string, a number or a boolean, got %s (nest no objects, arrays or null: give each "
                 "option its own key)", what, k, job_json_type(v));
    }
    return 0;
}

int job_trainer_name_ok(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n >= JOB_TRAINER_MAX || s[0] == '.' || s[0] == '-') return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '.' || s[i] == '_' || s[i] == '-')) return 0;
    return 1;
}

int job_copy(struct job_config *dst, const struct job_config *src) {
    *dst = *src;
    dst->model.init = src->model.init ? strdup(src->model.init) : NULL;
    dst->data.train = src->data.train ? strdup(src->data.train) : NULL;
    dst->data.val = src->data.val ? strdup(src->data.val) : NULL;
    dst->trainer_args = src->trainer_args ? strdup(src->trainer_args) : NULL;
    dst->eval.tasks = NULL;
    dst->eval.ntasks = 0;
    int task_oom = 0;
    if (src->eval.ntasks > 0) {
        dst->eval.tasks = calloc((size_t)src->eval.ntasks, sizeof *dst->eval.tasks);
        if (!dst->eval.tasks) task_oom = 1;
        else {
            dst->eval.ntasks = src->eval.ntasks;
            for (int i = 0; i < src->eval.ntasks; i++) {
                dst->eval.tasks[i].name = strdup(src->eval.tasks[i].name);
                dst->eval.tasks[i].path = strdup(src->eval.tasks[i].path);
                if (!dst->eval.tasks[i].name || !dst->eval.tasks[i].path) task_oom = 1;
            }
        }
    }
    if (task_oom || (src->model.init && !dst->model.init) || (src->data.train && !dst->data.train) ||
        (src->data.val && !dst->data.val) ||
        (src->trainer_args && !dst->trainer_args)) {
        job_release(dst);
        return JOB_ENOMEM;
    }
    return 0;
}

int job_parse_heads(const char *s, int *heads, int max, char *err, size_t errlen) {
    char why[200];
    int L = 0;
    if (schedule_parse(s, heads, max, &L, why, sizeof why) < 0) FAIL("heads \"%.80s\": %s", s ? s : "", why);
    return L;
}

void job_format_heads(const struct job_config *j, char *buf, size_t len) {
    size_t n = 0;
    if (len) buf[0] = 0;
    for (int l = 0; l < j->model.n_layer && n < len; l++) {
        int w = snprintf(buf + n, len - n, l ? ",%d" : "%d", j->model.heads[l]);
        if (w < 0) break;
        n += (size_t)w;
    }
}
