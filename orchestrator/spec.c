/* spec.c — sweep specs: validation with JSON paths in every message, expansion to the ordered list of
 * schedules, and the per-(schedule, seed) job JSON.
 *
 * Design: the spec-level parts (name, rules, schedules/include/exclude/sample, seeds) are checked here; the
 * sections a worker consumes (model, train, eval, data) are checked by the job module itself (common/job.h)
 * on a job built from them, so the orchestrator can never accept a spec whose jobs a worker would refuse, and
 * the two programs share one definition of the job format. Schedules are kept as one int array
 * [n_schedules][n_layer]; a jansson object keyed by the canonical text serves as the set for duplicates.
 */
#include "spec.h"
#include "plan.h"
#include "search_spec.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "jobmodel.h"

_Static_assert(SEARCH_MAX_BUDGET == SPEC_MAX_SCHEDULES, "search.budget's bound is a sweep's schedules");

typedef struct builder {
    sweep_spec *sp;
    json_t *seen;          /* canonical text -> index */
    int cap;
    char *text;            /* scratch for schedule_format */
    size_t textcap;
} builder;

static int err_at(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int err_at(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return SPEC_EINVAL;
}

static int check_keys(json_t *obj, const char *path, const char *const *keys, char *err, size_t errlen) {
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        int ok = 0;
        for (int i = 0; keys[i]; i++) ok |= strcmp(k, keys[i]) == 0;
        if (!ok) {
            char list[512] = "";
            for (int i = 0; keys[i]; i++) {
                strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
                strncat(list, keys[i], sizeof list - strlen(list) - 1);
            }
            return err_at(err, errlen, "%s%s%s: unknown key (expected one of: %s)", path, *path ? "." : "", k, list);
        }
    }
    return SPEC_OK;
}

/* an integer member in [lo, hi]; absent -> *out unchanged and returns 0 unless required */
static int get_int(json_t *obj, const char *path, const char *key, int required, long long lo, long long hi,
                   long long *out, char *err, size_t errlen) {
    json_t *v = json_object_get(obj, key);
    const char *dot = *path ? "." : "";
    if (!v) {
        if (required)
            return err_at(err, errlen, "%s%s%s: required (an integer in %lld..%lld)", path, dot, key, lo, hi);
        return SPEC_OK;
    }
    if (!json_is_integer(v))
        return err_at(err, errlen, "%s%s%s: must be an integer in %lld..%lld", path, dot, key, lo, hi);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return err_at(err, errlen, "%s%s%s: must be in %lld..%lld (got %lld)", path, dot, key, lo, hi, x);
    *out = x;
    return SPEC_OK;
}

/* "3,3,6,6" or [3,3,6,6] into heads[cap] */
static int parse_schedule_item(json_t *v, const char *path, int *heads, int cap, int *L, char *err, size_t errlen) {
    char why[256];
    if (json_is_string(v)) {
        if (schedule_parse(json_string_value(v), heads, cap, L, why, sizeof why) < 0)
            return err_at(err, errlen, "%s: %s", path, why);
        return SPEC_OK;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        if (json_array_size(v) == 0 || json_array_size(v) > (size_t)cap)
            return err_at(err, errlen, "%s: must hold 1..%d head counts", path, cap);
        json_array_foreach(v, i, e) {
            if (!json_is_integer(e) || json_integer_value(e) < 1 || json_integer_value(e) > SCHEDULE_MAX_DMODEL)
                return err_at(err, errlen, "%s[%zu]: must be a positive integer head count", path, i);
            heads[i] = (int)json_integer_value(e);
        }
        *L = (int)json_array_size(v);
        return SPEC_OK;
    }
    return err_at(err, errlen, "%s: a schedule is a string \"3,3,6,6,12x8\" or an array of head counts", path);
}

static int builder_add(builder *b, const int *heads, int *added) {
    sweep_spec *sp = b->sp;
    int L = sp->n_layer;
    *added = 0;
    schedule_format(heads, L, b->text, b->textcap);
    if (json_object_get(b->seen, b->text)) return SPEC_OK;
    if (sp->n_schedules >= SPEC_MAX_SCHEDULES) return SPEC_EINVAL;
    if (sp->n_schedules == b->cap) {
        int ncap = b->cap ? b->cap * 2 : 64;
        int *nh = realloc(sp->heads, sizeof(int) * (size_t)ncap * L);
        if (!nh) return SPEC_ENOMEM;
        sp->heads = nh;
        b->cap = ncap;
    }
    memcpy(sp->heads + (size_t)sp->n_schedules * L, heads, sizeof(int) * L);
    if (json_object_set_new(b->seen, b->text, json_integer(sp->n_schedules)) < 0) return SPEC_ENOMEM;
    sp->n_schedules++;
    *added = 1;
    return SPEC_OK;
}

static int add_cb(const int *heads, int L, void *ctx) {
    int added;
    int rc = builder_add(ctx, heads, &added);
    return rc < 0 ? rc : 0;
}

/* rules object -> resolved rules, messages say "rules.KEY" */
static const char *rules_path(schedule_field f) {
    switch (f) {
    case SCHEDULE_F_L: return "model.n_layer";
    case SCHEDULE_F_DMODEL: return "model.d_model";
    case SCHEDULE_F_HBASE: return "rules.h_base";
    case SCHEDULE_F_MAX_HEAD_DIM: return "rules.max_head_dim";
    case SCHEDULE_F_POW2: return "rules.pow2";
    case SCHEDULE_F_HEADS: return "rules.heads";
    case SCHEDULE_F_MIN_BLOCK: return "rules.min_block";
    case SCHEDULE_F_MAX_BLOCK: return "rules.max_block";
    case SCHEDULE_F_MIN_BASELINE: return "rules.min_baseline";
    default: return "rules";
    }
}

static int parse_rules(json_t *rules, sweep_spec *sp, char *err, size_t errlen) {
    static const char *const keys[] = { "h_base", "max_head_dim", "pow2", "heads", "min_block", "max_block",
                                        "min_baseline", NULL };
    schedule_rules *r = &sp->rules;
    long long x;
    int rc;
    if (rules) {
        if (!json_is_object(rules)) return err_at(err, errlen, "rules: must be an object");
        if ((rc = check_keys(rules, "rules", keys, err, errlen)) < 0) return rc;
        if (json_object_get(rules, "h_base")) {
            if ((rc = get_int(rules, "rules", "h_base", 1, 1, SCHEDULE_MAX_DMODEL, &x, err, errlen)) < 0) return rc;
            r->h_base = (int)x;
        }
        x = r->max_head_dim;
        if ((rc = get_int(rules, "rules", "max_head_dim", 0, 0, SCHEDULE_MAX_DMODEL, &x, err, errlen)) < 0) return rc;
        r->max_head_dim = (int)x;
        x = r->min_block;
        if ((rc = get_int(rules, "rules", "min_block", 0, 1, SCHEDULE_MAX_L, &x, err, errlen)) < 0) return rc;
        r->min_block = (int)x;
        x = r->max_block;
        if ((rc = get_int(rules, "rules", "max_block", 0, 0, SCHEDULE_MAX_L, &x, err, errlen)) < 0) return rc;
        r->max_block = (int)x;
        json_t *v = json_object_get(rules, "pow2");
        if (v) {
            if (!json_is_boolean(v)) return err_at(err, errlen, "rules.pow2: must be true or false");
            r->pow2 = json_is_true(v);
        }
        v = json_object_get(rules, "min_baseline");
        if (v) {
            if (!json_is_number(v)) return err_at(err, errlen, "rules.min_baseline: must be a number in 0..1");
            r->min_baseline = json_number_value(v);
        }
        v = json_object_get(rules, "heads");
        if (v) {
            size_t i;
            json_t *e;
            if (!json_is_array(v) || json_array_size(v) > SCHEDULE_MAX_ALLOWED)
                return err_at(err, errlen, "rules.heads: must be an array of at most %d head counts",
                              SCHEDULE_MAX_ALLOWED);
            json_array_foreach(v, i, e) {
                if (!json_is_integer(e) || json_integer_value(e) < 1 || json_integer_value(e) > SCHEDULE_MAX_DMODEL)
                    return err_at(err, errlen, "rules.heads[%zu]: must be a positive integer", i);
                r->heads[i] = (int)json_integer_value(e);
            }
            r->n_heads = (int)json_array_size(v);
        }
    }
    char msg[300];
    schedule_field f;
    if (schedule_rules_resolve(r, &f, msg, sizeof msg) < 0) return err_at(err, errlen, "%s: %s", rules_path(f), msg);
    return SPEC_OK;
}

/* a list of schedules (schedules / include / exclude), each checked against the hard rules */
static int each_listed(json_t *list, const char *key, sweep_spec *sp, int *heads,
                       int (*fn)(builder *, const int *, const char *, char *, size_t), builder *b, char *err,
                       size_t errlen) {
    size_t i;
    json_t *v;
    if (!json_is_array(list)) return err_at(err, errlen, "%s: must be an array of schedules", key);
    json_array_foreach(list, i, v) {
        char path[64];
        int L, rc;
        snprintf(path, sizeof path, "%s[%zu]", key, i);
        if ((rc = parse_schedule_item(v, path, heads, SCHEDULE_MAX_L, &L, err, errlen)) < 0) return rc;
        schedule_report rep;   /* ~14 KB on the stack; no static state (the server may call this anywhere) */
        int n = schedule_validate_hard(&sp->rules, heads, L, &rep);
        if (n != 0) return err_at(err, errlen, "%s: %s%s", path, rep.n ? rep.v[0].msg : "invalid schedule",
                                  n > 1 ? " (and more)" : "");
        if ((rc = fn(b, heads, path, err, errlen)) < 0) return rc;
    }
    return SPEC_OK;
}

static int listed_add(builder *b, const int *heads, const char *path, char *err, size_t errlen) {
    int added, rc = builder_add(b, heads, &added);
    if (rc == SPEC_EINVAL) return err_at(err, errlen, "%s: more than %d schedules in one sweep", path,
                                         SPEC_MAX_SCHEDULES);
    if (rc < 0) return err_at(err, errlen, "out of memory");
    return SPEC_OK;
}

static int listed_add_strict(builder *b, const int *heads, const char *path, char *err, size_t errlen) {
    schedule_format(heads, b->sp->n_layer, b->text, b->textcap);
    json_t *prev = json_object_get(b->seen, b->text);
    if (prev) return err_at(err, errlen, "%s: %s is listed twice", path, b->text);
    return listed_add(b, heads, path, err, errlen);
}

/* an explicit list: duplicates are mistakes, except the baseline (already first) */
static int listed_add_list(builder *b, const int *heads, const char *path, char *err, size_t errlen) {
    if (schedule_is_uniform(heads, b->sp->n_layer)) return SPEC_OK;
    return listed_add_strict(b, heads, path, err, errlen);
}

static int listed_mark_exclude(builder *b, const int *heads, const char *path, char *err, size_t errlen) {
    schedule_format(heads, b->sp->n_layer, b->text, b->textcap);
    json_t *idx = json_object_get(b->seen, b->text);
    if (!idx) return err_at(err, errlen, "%s: %s is not in the sweep's schedules (nothing to exclude)", path, b->text);
    if (schedule_is_uniform(heads, b->sp->n_layer))
        return err_at(err, errlen, "%s: the uniform baseline cannot be excluded (every schedule is compared with it)",
                      path);
    json_integer_set(idx, -1);
    return SPEC_OK;
}

static int valid_name(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > 127) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-') return 0;
    return 1;
}

static int spec_from_json_max(json_t *root, long long max_jobs, sweep_spec *sp, char *err, size_t errlen);

int spec_from_json(json_t *root, sweep_spec *sp, char *err, size_t errlen) {
    return spec_from_json_max(root, SPEC_MAX_JOBS, sp, err, errlen);
}

static int too_many_jobs(char *err, size_t errlen, long long schedules, long long seeds, long long max_jobs) {
    err_at(err, errlen, "%lld schedules x %lld seeds = %lld jobs, more than %lld at once: use fewer seeds, \"sample\" "
           "fewer schedules, or split the sweep (over HTTP: run prism-sweep create SPEC.json --db DB on the server's "
           "machine, which does not stop the server)", schedules, seeds, schedules * seeds, max_jobs);
    return SPEC_ETOOBIG;
}

/* ---- spec_from_json_max's sections -------------------------------------------------------------- */

/* name, description, priority. */
static int spec_parse_head(json_t *root, sweep_spec *sp, char *err, size_t errlen) {
    long long x = 0;
    int rc;
    json_t *v = json_object_get(root, "name");
    if (!json_is_string(v) || !valid_name(json_string_value(v)))
        return err_at(err, errlen, "name: required, 1..127 characters of A-Z a-z 0-9 . _ -");
    const char *nm = json_string_value(v);
    if (strspn(nm, "0123456789") == strlen(nm))   /* every command takes SWEEP as an id or a name */
        return err_at(err, errlen, "name: \"%s\" is a number, which every command would read as a sweep id; give a "
                      "name with a letter, e.g. \"sweep-%s\"", nm, nm);
    snprintf(sp->name, sizeof sp->name, "%s", json_string_value(v));
    if ((v = json_object_get(root, "description")) && !json_is_string(v))
        return err_at(err, errlen, "description: must be a string");
    if ((rc = get_int(root, "", "priority", 0, -1000000, 1000000, &x, err, errlen)) < 0) return rc;
    sp->priority = (int)x;
    return 0;
}

/* model: the shape the schedules are for; the job module checks the rest. */
static int spec_parse_model(json_t *root, sweep_spec *sp, char *err, size_t errlen) {
    long long x;
    int rc;
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) return err_at(err, errlen, "model: required object {n_layer, d_model, vocab_size, "
                                              "padded_vocab_size, seq_len}");
    if (json_object_get(model, "heads"))
        return err_at(err, errlen, "model.heads: the heads come from \"rules\" or \"schedules\"; remove this key");
    /* a job holds at most JOB_MAX_LAYERS layers: refuse deeper models before enumerating (which could take
     * gigabytes for a spec the job check below would refuse anyway) */
    if ((rc = get_int(model, "model", "n_layer", 1, 1, JOB_MAX_LAYERS, &x, err, errlen)) < 0) return rc;
    sp->n_layer = (int)x;
    if ((rc = get_int(model, "model", "d_model", 1, 1, SCHEDULE_MAX_DMODEL, &x, err, errlen)) < 0) return rc;
    sp->d_model = (int)x;
    return 0;
}

/* rules (also used for the hard checks of listed schedules). */
static int spec_parse_rules(json_t *root, sweep_spec *sp, char *err, size_t errlen) {
    if (json_object_get(root, "sample") && json_object_get(root, "schedules"))
        return err_at(err, errlen, "sample: only applies to \"rules\" (it draws from the enumerated set)");
    schedule_rules_default(&sp->rules);
    sp->rules.L = sp->n_layer;
    sp->rules.d_model = sp->d_model;
    return parse_rules(json_object_get(root, "rules"), sp, err, errlen);
}

/* A search with dims: its initial design's points (schedule and train values) as sp's schedules and train_over (the
 * first one the baseline, at the spec's values; a repeated point is kept once). */
static int design_with_dims(sweep_spec *sp, const search_cfg *cfg, const int *design, const double *du, int got) {
    int L = sp->n_layer, n = 0;
    sp->heads = malloc(sizeof(int) * (size_t)got * L);
    sp->train_over = json_array();
    sp->train_base = search_train_json(cfg, NULL);
    if (!sp->heads || !sp->train_over || !sp->train_base) return SPEC_ENOMEM;
    for (int i = 0; i < got; i++) {
        json_t *t = i == 0 ? json_deep_copy(sp->train_base) : search_train_json(cfg, du + (size_t)i * cfg->naxes);
        if (!t) return SPEC_ENOMEM;
        int dup = 0;
        for (int q = 0; q < n && !dup; q++)
            dup = !memcmp(sp->heads + (size_t)q * L, design + (size_t)i * L, sizeof(int) * L) &&
                  json_equal(json_array_get(sp->train_over, (size_t)q), t);
        if (dup) { json_decref(t); continue; }
        memcpy(sp->heads + (size_t)n * L, design + (size_t)i * L, sizeof(int) * L);
        if (json_array_append_new(sp->train_over, t) < 0) return SPEC_ENOMEM;
        n++;
    }
    sp->n_schedules = n;
    return SPEC_OK;
}

/* The schedules: the baseline always first, then the listed ones, a sample of the rules' set, or all of it. */
static int spec_enumerate(json_t *root, long long max_jobs, sweep_spec *sp, builder *b, int *heads, char *err,
                          size_t errlen) {
    json_t *list = json_object_get(root, "schedules"), *sample = json_object_get(root, "sample");
    /* the seeds' count bounds the schedules before any is drawn (checked in full by spec_parse_seeds) */
    json_t *seeds_arr = json_object_get(root, "seeds");
    long long nseeds_asked = json_is_array(seeds_arr) && json_array_size(seeds_arr) > 0 ? (long long)json_array_size(seeds_arr) : 1;
    int rc = 0, added;
    search_cfg scfg;   /* a surrogate search: its initial design (the baseline first), not the rules' whole set */
    if (search_parse(json_object_get(root, "search"), json_object_get(root, "train"), &sp->rules, (int)nseeds_asked,
                     &scfg, err, errlen) < 0)
        return SPEC_EINVAL;
    if (scfg.enabled) {
        static const char *const alone[] = { "schedules", "sample", "include", "exclude", "racing", "halving", NULL };
        for (int k = 0; alone[k]; k++)
            if (json_object_get(root, alone[k]))
                return err_at(err, errlen, "search: a surrogate search proposes its own schedules from the rules' whole "
                              "valid set and is not combined with \"%s\" (not supported yet): remove \"%s\", or "
                              "\"search\" for a grid", alone[k], alone[k]);
        if ((long long)scfg.init * nseeds_asked > max_jobs) return too_many_jobs(err, errlen, scfg.init, nseeds_asked, max_jobs);
        int *design = malloc(sizeof(int) * (size_t)scfg.init * sp->n_layer);
        double *du = malloc(sizeof(double) * (size_t)scfg.init * (scfg.naxes ? scfg.naxes : 1));
        if (!design || !du) { free(design); free(du); return err_at(err, errlen, "out of memory"); }
        int got = search_initial_design(&scfg, &sp->rules, design, du, err, errlen);
        if (scfg.naxes && got > 0) rc = design_with_dims(sp, &scfg, design, du, got);
        else for (int i = 0; i < got && rc >= 0; i++) rc = builder_add(b, design + (size_t)i * sp->n_layer, &added);
        free(design);
        free(du);
        if (got < 0) return SPEC_EINVAL;
        if (rc < 0) { err_at(err, errlen, "out of memory"); return rc; }
        return 0;
    }
    for (int i = 0; i < sp->n_layer; i++) heads[i] = sp->rules.h_base;
    if ((rc = builder_add(b, heads, &added)) < 0) { err_at(err, errlen, "out of memory"); return rc; }

    if (list) return each_listed(list, "schedules", sp, heads, listed_add_list, b, err, errlen);
    if (sample) {
        static const char *const skeys[] = { "n", "seed", NULL };
        long long n = 0, seed = 0;
        schedule_count_t total;
        if (!json_is_object(sample)) return err_at(err, errlen, "sample: must be an object {\"n\": N, \"seed\": S}");
        if ((rc = check_keys(sample, "sample", skeys, err, errlen)) < 0) return rc;
        if (schedule_count(&sp->rules, &total) < 0) total = ~(schedule_count_t)0;
        long long maxn = total > SPEC_MAX_SCHEDULES ? SPEC_MAX_SCHEDULES : (long long)total;
        if ((rc = get_int(sample, "sample", "n", 1, 1, maxn, &n, err, errlen)) < 0) return rc;
        if ((rc = get_int(sample, "sample", "seed", 0, 0, 9007199254740991LL, &seed, err, errlen)) < 0) return rc;
        if (n * nseeds_asked > max_jobs) return too_many_jobs(err, errlen, n, nseeds_asked, max_jobs);
        rc = schedule_sample(&sp->rules, (uint64_t)n, (uint64_t)seed, add_cb, b);
        if (rc < 0) return err_at(err, errlen, "sample: cannot draw %lld schedules (error %d)", n, rc);
        return 0;
    }
    schedule_count_t total;
    int crc = schedule_count(&sp->rules, &total);
    if (crc < 0 || total > SPEC_MAX_SCHEDULES) {
        char num[64];
        return err_at(err, errlen, "rules: %s schedules, more than %d in one sweep: tighten the rules or add "
                      "\"sample\": {\"n\": N, \"seed\": S}", crc < 0 ? "over 2^128" :
                      schedule_count_str(total, num, sizeof num), SPEC_MAX_SCHEDULES);
    }
    if ((long long)total * nseeds_asked > max_jobs)
        return too_many_jobs(err, errlen, (long long)total, nseeds_asked, max_jobs);
    if ((rc = schedule_enumerate(&sp->rules, add_cb, b)) < 0) { err_at(err, errlen, "out of memory"); return rc; }
    return 0;
}

/* include (added) and exclude (dropped, keeping the order of the rest). */
static int spec_include_exclude(json_t *root, sweep_spec *sp, builder *b, int *heads, char *err, size_t errlen) {
    json_t *inc = json_object_get(root, "include"), *exc = json_object_get(root, "exclude");
    int rc;
    if (inc && (rc = each_listed(inc, "include", sp, heads, listed_add, b, err, errlen)) < 0) return rc;
    if (!exc) return 0;
    if ((rc = each_listed(exc, "exclude", sp, heads, listed_mark_exclude, b, err, errlen)) < 0) return rc;
    int k = 0, L = sp->n_layer;
    for (int i = 0; i < sp->n_schedules; i++) {
        schedule_format(sp->heads + (size_t)i * L, L, b->text, b->textcap);
        if (json_integer_value(json_object_get(b->seen, b->text)) < 0) continue;
        memmove(sp->heads + (size_t)k * L, sp->heads + (size_t)i * L, sizeof(int) * L);
        k++;
    }
    sp->n_schedules = k;
    return 0;
}

/* seeds: 1..SPEC_MAX_SEEDS distinct non-negative integers, within max_jobs with the schedules. */
static int spec_parse_seeds(json_t *root, long long max_jobs, sweep_spec *sp, char *err, size_t errlen) {
    json_t *seeds = json_object_get(root, "seeds");
    if (!json_is_array(seeds) || json_array_size(seeds) < 1 || json_array_size(seeds) > SPEC_MAX_SEEDS)
        return err_at(err, errlen, "seeds: required, an array of 1..%d distinct integers, e.g. [1337, 1338, 1339]",
                      SPEC_MAX_SEEDS);
    sp->n_seeds = (int)json_array_size(seeds);
    if ((long long)sp->n_schedules * sp->n_seeds > max_jobs)
        return too_many_jobs(err, errlen, sp->n_schedules, sp->n_seeds, max_jobs);
    sp->seeds = malloc(sizeof(int64_t) * sp->n_seeds);
    if (!sp->seeds) return err_at(err, errlen, "out of memory");
    for (int i = 0; i < sp->n_seeds; i++) {
        json_t *s = json_array_get(seeds, i);
        if (!json_is_integer(s) || json_integer_value(s) < 0)
            return err_at(err, errlen, "seeds[%d]: must be a non-negative integer", i);
        sp->seeds[i] = json_integer_value(s);
        for (int j = 0; j < i; j++)
            if (sp->seeds[j] == sp->seeds[i])
                return err_at(err, errlen, "seeds[%d]: %lld repeats seeds[%d] (each seed is one run per schedule)", i,
                              (long long)sp->seeds[i], j);
    }
    return 0;
}

/* train/eval/data: the job module's checks on a real job (first schedule, first seed); then halving's and
 * racing's sections against it. */
static int spec_check_job(json_t *root, sweep_spec *sp, char *err, size_t errlen) {
    json_t *train = json_object_get(root, "train");
    if (!json_is_object(train)) return err_at(err, errlen, "train: required object (the job's train section)");
    if (json_object_get(train, "seed"))
        return err_at(err, errlen, "train.seed: each job's seed comes from the top-level \"seeds\" list; remove it");
    if (!json_is_object(json_object_get(root, "data")))
        return err_at(err, errlen, "data: required object {\"train\": glob, \"val\": glob}");
    if (json_object_get(root, "eval") && !json_is_object(json_object_get(root, "eval")))
        return err_at(err, errlen, "eval: must be an object {every, batches, attn_distance, tasks}");
    if (sp->train_over) {   /* a search over train keys: a job at either end of every range is a valid job */
        search_cfg sc;
        char why0[400];
        if (search_parse(json_object_get(root, "search"), train, &sp->rules, sp->n_seeds, &sc, why0, sizeof why0) < 0)
            return err_at(err, errlen, "%s", why0);
        for (int end = 0; end < 2; end++) {
            double u[SURROGATE_MAX_AXES];
            for (int k = 0; k < sc.naxes; k++) u[k] = end;
            json_t *t = search_train_json(&sc, u), *job = t ? spec_job_json(sp, 0, 0) : NULL;
            if (!job) { json_decref(t); return err_at(err, errlen, "out of memory"); }
            json_object_update(json_object_get(job, "train"), t);
            json_decref(t);
            struct job_config jc;
            int jrc = job_from_json(job, &jc, why0, sizeof why0);
            json_decref(job);
            if (jrc < 0) return err_at(err, errlen, "search.dims: a job at the ranges' %s is not valid: %s",
                                       end ? "maxima" : "minima", why0);
            job_release(&jc);
        }
    }
    json_t *job = spec_job_json(sp, 0, 0);
    if (!job) return err_at(err, errlen, "out of memory");
    struct job_config cfg;
    char why[400];
    int jrc = job_from_json(job, &cfg, why, sizeof why);
    json_decref(job);
    if (jrc < 0) return err_at(err, errlen, "%s", why);
    job_sizes sizes;   /* every job of the spec shares its train section, so these are every job's */
    jobmodel_sizes(&cfg, &sizes);
    sp->steps = sizes.steps;
    sp->tokens_per_step = sizes.tokens_per_step;
    int warmup = cfg.train.warmup_steps;
    job_release(&cfg);
    halving_cfg hv;   /* successive halving: its rungs must round to distinct steps of this train.steps */
    if (halving_parse(json_object_get(root, "halving"), sp->steps, &hv, err, errlen) < 0) return SPEC_EINVAL;
    if (halving_check_rungs(&hv, warmup, sp->warn, sizeof sp->warn, err, errlen) < 0) return SPEC_EINVAL;
    racing_cfg rcfg;   /* racing: max_seeds above the spec's seeds (round 1) */
    long long max_seed = 0;
    for (int i = 0; i < sp->n_seeds; i++) if (sp->seeds[i] > max_seed) max_seed = sp->seeds[i];
    if (racing_parse(json_object_get(root, "racing"), sp->n_seeds, max_seed, &rcfg, err, errlen) < 0) return SPEC_EINVAL;
    return 0;
}

/* "trainer": "NAME" or {"name": "NAME", "args": {...}}: the object's keys and args here (the spec's names in the
 * messages), the name by job.c with the rest of the job (spec_check_job). */
static int spec_parse_trainer(json_t *root, char *err, size_t errlen) {
    static const char *const keys[] = { "name", "args", NULL };
    json_t *t = json_object_get(root, "trainer");
    if (!t || json_is_string(t)) return SPEC_OK;
    if (!json_is_object(t))
        return err_at(err, errlen, "trainer: must be a trainer name (\"torch\") or an object {\"name\": \"torch\", "
                                   "\"args\": {...}}, got %s", job_json_type(t));
    int rc = check_keys(t, "trainer", keys, err, errlen);
    if (rc < 0) return rc;
    if (!json_is_string(json_object_get(t, "name")))
        return err_at(err, errlen, "trainer.name: required, the trainer name that workers offer with --trainer "
                                   "NAME=COMMAND");
    json_t *args = json_object_get(t, "args");
    if (args && job_trainer_args_check(args, "trainer.args", err, errlen) < 0) return SPEC_EINVAL;
    return SPEC_OK;
}

static int spec_from_json_max(json_t *root, long long max_jobs, sweep_spec *sp, char *err, size_t errlen) {
    static const char *const top[] = { "name", "description", "priority", "model", "rules", "schedules", "include",
                                       "exclude", "sample", "seeds", "train", "eval", "data", "halving", "racing", "search", "trainer", NULL };
    builder b = { sp, NULL, 0, NULL, 0 };
    int *heads = NULL, rc;
    memset(sp, 0, sizeof *sp);
    if (!json_is_object(root)) return err_at(err, errlen, "(top level): a sweep spec is a JSON object");
    sp->root = json_incref(root);
    if ((rc = check_keys(root, "", top, err, errlen)) < 0 || (rc = spec_parse_trainer(root, err, errlen)) < 0 ||
        (rc = spec_parse_head(root, sp, err, errlen)) < 0 ||
        (rc = spec_parse_model(root, sp, err, errlen)) < 0 || (rc = spec_parse_rules(root, sp, err, errlen)) < 0)
        goto out;

    rc = SPEC_ENOMEM;
    b.seen = json_object();
    b.textcap = (size_t)sp->n_layer * 12 + 16;
    b.text = malloc(b.textcap);
    heads = malloc(sizeof(int) * SCHEDULE_MAX_L);
    if (!b.seen || !b.text || !heads) { err_at(err, errlen, "out of memory"); goto out; }
    if ((rc = spec_enumerate(root, max_jobs, sp, &b, heads, err, errlen)) < 0 ||
        (rc = spec_include_exclude(root, sp, &b, heads, err, errlen)) < 0 ||
        (rc = spec_parse_seeds(root, max_jobs, sp, err, errlen)) < 0 || (rc = spec_check_job(root, sp, err, errlen)) < 0)
        goto out;
    rc = SPEC_OK;
out:
    json_decref(b.seen);
    free(b.text);
    free(heads);
    if (rc < 0) spec_release(sp);
    return rc;
}

int spec_parse(const char *text, size_t len, sweep_spec *sp, char *err, size_t errlen) {
    return spec_parse_max(text, len, SPEC_MAX_JOBS, sp, err, errlen);
}

int spec_parse_max(const char *text, size_t len, long long max_jobs, sweep_spec *sp, char *err, size_t errlen) {
    json_error_t je;
    memset(sp, 0, sizeof *sp);
    if (len > SPEC_MAX_TEXT) return err_at(err, errlen, "(top level): the spec is %zu bytes, at most %d", len,
                                           SPEC_MAX_TEXT);
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return err_at(err, errlen, "(top level): not valid JSON at line %d column %d: %s", je.line, je.column,
                             je.text);
    int rc = spec_from_json_max(root, max_jobs, sp, err, errlen);
    json_decref(root);
    return rc;
}

int spec_load(const char *path, sweep_spec *sp, char **text_out, char *err, size_t errlen) {
    memset(sp, 0, sizeof *sp);
    if (text_out) *text_out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return SPEC_EIO;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len > SPEC_MAX_TEXT) break;
        if (len == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf) { snprintf(err, errlen, "%s: out of memory", path); return SPEC_ENOMEM; }
    if (bad) { free(buf); snprintf(err, errlen, "%s: read error", path); return SPEC_EIO; }
    buf[len] = 0;
    char why[600];
    int rc = spec_parse(buf, len, sp, why, sizeof why);
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        free(buf);
        return rc;
    }
    if (text_out) *text_out = buf;
    else free(buf);
    return SPEC_OK;
}

void spec_release(sweep_spec *sp) {
    if (!sp) return;
    json_decref(sp->root);
    json_decref(sp->train_over);
    json_decref(sp->train_base);
    free(sp->heads);
    free(sp->seeds);
    memset(sp, 0, sizeof *sp);
}

int spec_is_baseline(const sweep_spec *sp, int i) {
    return schedule_is_uniform(sp->heads + (size_t)i * sp->n_layer, sp->n_layer) &&
           sp->heads[(size_t)i * sp->n_layer] == sp->rules.h_base &&
           (!sp->train_over || json_equal(json_array_get(sp->train_over, (size_t)i), sp->train_base));
}

char *spec_train_text(const sweep_spec *sp, int i) {
    json_t *o = sp->train_over ? json_array_get(sp->train_over, (size_t)i) : NULL;
    if (!o || json_object_size(o) == 0) return strdup("");
    return json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
}

json_t *spec_job_json(const sweep_spec *sp, int i, int j) {
    json_t *job = json_object(), *model = json_deep_copy(json_object_get(sp->root, "model"));
    json_t *train = json_deep_copy(json_object_get(sp->root, "train")), *heads = json_array();
    json_t *eval = json_object_get(sp->root, "eval"), *data = json_deep_copy(json_object_get(sp->root, "data"));
    eval = eval ? json_deep_copy(eval) : json_object();
    if (!job || !model || !train || !heads || !eval || !data) goto fail;
    for (int l = 0; l < sp->n_layer; l++)
        if (json_array_append_new(heads, json_integer(sp->heads[(size_t)i * sp->n_layer + l])) < 0) goto fail;
    if (json_object_set_new(model, "heads", heads) < 0) { heads = NULL; goto fail; }
    heads = NULL;
    if (json_object_set_new(train, "seed", json_integer(sp->seeds ? sp->seeds[j] : 0)) < 0) goto fail;
    json_t *over = sp->train_over ? json_array_get(sp->train_over, (size_t)i) : NULL;
    if (over && json_object_update(train, over) < 0) goto fail;
    if (json_object_set_new(job, "model", model) < 0) { model = NULL; goto fail; }
    model = NULL;
    if (json_object_set_new(job, "train", train) < 0) { train = NULL; goto fail; }
    train = NULL;
    if (json_object_set_new(job, "eval", eval) < 0) { eval = NULL; goto fail; }
    eval = NULL;
    if (json_object_set_new(job, "data", data) < 0) { data = NULL; goto fail; }
    json_t *trainer = json_object_get(sp->root, "trainer");   /* an external trainer (docs/TRAINERS.md); checked by job.c */
    json_t *targs = json_is_object(trainer) ? json_object_get(trainer, "args") : NULL;
    if (json_is_object(trainer)) trainer = json_object_get(trainer, "name");   /* {"name", "args"}: the job's two keys */
    if (trainer && json_object_set(job, "trainer", trainer) < 0) { data = NULL; goto fail; }
    if (targs && json_object_size(targs) > 0 && json_object_set(job, "trainer_args", targs) < 0) { data = NULL; goto fail; }
    return job;
fail:
    json_decref(job);
    json_decref(model);
    json_decref(train);
    json_decref(heads);
    json_decref(eval);
    json_decref(data);
    return NULL;
}
