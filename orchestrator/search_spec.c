/* search_spec.c — the spec key "search" (search_spec.h): its parse, the candidates' train values and the initial
 * design.
 *
 * Design: what spec.c checks at create and search.c's decisions read back, with nothing of the decision: spec.c
 * includes this and not search.h, so the spec sits below the search that runs on it (tools/layers.sh's
 * ORCH_FLOORS) and the include circle spec -> search -> spec cannot return. The batch decision and what it shows
 * are search.c's.
 */
#include "search_spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

/* ---- the spec key -------------------------------------------------------------------------------- */

static int bad(char *err, size_t errlen, const char *msg) {
    snprintf(err, errlen, "%s", msg);
    return -1;
}

/* The train keys a search may vary: numbers that change neither the job's tokens nor its cost (steps, batch_size and
 * seq_len would, and the blocked model compares schedules at equal budgets). */
static const struct { const char *key; int integer, log; } searchable[] = {
    {"lr", 0, 1}, {"warmup_steps", 1, 0}, {"min_lr_frac", 0, 0}, {"beta1", 0, 0}, {"beta2", 0, 0},
    {"weight_decay", 0, 0}, {"grad_clip", 0, 0}, {NULL, 0, 0}};

/* the job default of a searchable key (common/job.c's job_init) */
static double job_default(const char *key) {
    struct job_config j;
    job_init(&j);
    double v = !strcmp(key, "lr") ? j.train.lr : !strcmp(key, "warmup_steps") ? j.train.warmup_steps
             : !strcmp(key, "min_lr_frac") ? j.train.min_lr_frac : !strcmp(key, "beta1") ? j.train.beta1
             : !strcmp(key, "beta2") ? j.train.beta2 : !strcmp(key, "weight_decay") ? j.train.weight_decay
             : j.train.grad_clip;
    job_release(&j);
    return v;
}

static int parse_dims(const json_t *d, const json_t *train, search_cfg *cfg, char *err, size_t errlen) {
    if (!json_is_object(d) || json_object_size(d) == 0)
        return bad(err, errlen, "search.dims: must be an object of train keys and ranges, e.g. {\"train.lr\": {\"min\": "
                                "0.0003, \"max\": 0.003, \"scale\": \"log\"}}");
    const char *k;
    json_t *r;
    json_object_foreach((json_t *)d, k, r) {
        int w = -1;
        if (strncmp(k, "train.", 6) == 0)
            for (int i = 0; searchable[i].key; i++) if (!strcmp(k + 6, searchable[i].key)) w = i;
        if (w < 0) {
            snprintf(err, errlen, "search.dims.%.60s: not a searchable key (searchable: train.lr, train.warmup_steps, "
                     "train.min_lr_frac, train.beta1, train.beta2, train.weight_decay, train.grad_clip; steps, "
                     "batch_size and seq_len change a run's cost, which the ranking holds equal)", k);
            return -1;
        }
        if (cfg->naxes == SURROGATE_MAX_AXES) {
            snprintf(err, errlen, "search.dims: at most %d keys (the surrogate's fit needs data per dimension)",
                     SURROGATE_MAX_AXES);
            return -1;
        }
        surrogate_axis a = { .integer = searchable[w].integer, .log = searchable[w].log };
        json_t *lo = NULL, *hi = NULL, *sc = NULL;
        if (json_is_array(r) && json_array_size(r) == 2) { lo = json_array_get(r, 0); hi = json_array_get(r, 1); }
        else if (json_is_object(r)) {
            const char *rk;
            json_t *rv;
            json_object_foreach(r, rk, rv)
                if (strcmp(rk, "min") && strcmp(rk, "max") && strcmp(rk, "scale")) {
                    snprintf(err, errlen, "search.dims.%.60s.%.40s: unknown key (expected min, max, scale)", k, rk);
                    return -1;
                }
            lo = json_object_get(r, "min"); hi = json_object_get(r, "max"); sc = json_object_get(r, "scale");
        }
        if (!json_is_number(lo) || !json_is_number(hi) || !(json_number_value(lo) < json_number_value(hi)) ||
            !isfinite(json_number_value(lo)) || !isfinite(json_number_value(hi))) {
            snprintf(err, errlen, "search.dims.%.60s: must be {\"min\": A, \"max\": B, \"scale\": \"log\"|\"linear\"} "
                     "or [A, B] with numbers A < B", k);
            return -1;
        }
        a.lo = json_number_value(lo);
        a.hi = json_number_value(hi);
        if (sc) {
            const char *s = json_string_value(sc);
            if (!s || (strcmp(s, "log") && strcmp(s, "linear"))) {
                snprintf(err, errlen, "search.dims.%.60s.scale: must be \"log\" or \"linear\"", k);
                return -1;
            }
            a.log = !strcmp(s, "log");
        }
        if (a.integer && (a.lo != floor(a.lo) || a.hi != floor(a.hi))) {
            snprintf(err, errlen, "search.dims.%.60s: an integer key: give integer min and max", k);
            return -1;
        }
        if (a.log && a.lo <= 0) {
            snprintf(err, errlen, "search.dims.%.60s: a log scale needs min > 0 (got %g); give \"scale\": \"linear\" "
                     "or a positive min", k, a.lo);
            return -1;
        }
        json_t *given = train ? json_object_get(train, k + 6) : NULL;
        double base = json_is_number(given) ? json_number_value(given) : job_default(k + 6);
        if (!(base >= a.lo && base <= a.hi)) {
            snprintf(err, errlen, "search.dims.%.60s: the spec's %.60s (%g%s) is outside [%g, %g]: the uniform baseline "
                     "trains at the spec's own values; widen the range or change %.60s", k, k, base,
                     given ? "" : ", the default", a.lo, a.hi, k);
            return -1;
        }
        cfg->axes[cfg->naxes] = a;
        cfg->base[cfg->naxes] = base;
        snprintf(cfg->keys[cfg->naxes], SEARCH_KEY_MAX, "%s", k + 6);
        cfg->naxes++;
    }
    return 0;
}

json_t *search_train_json(const search_cfg *cfg, const double *u) {
    json_t *o = json_object();
    for (int k = 0; o && k < cfg->naxes; k++) {
        double v = u ? surrogate_axis_value(&cfg->axes[k], u[k]) : cfg->base[k];
        json_t *x = cfg->axes[k].integer ? json_integer((json_int_t)llround(v)) : json_real(v);
        if (json_object_set_new(o, cfg->keys[k], x) < 0) { json_decref(o); return NULL; }
    }
    return o;
}

int search_train_coords(const search_cfg *cfg, const char *text, double *u) {
    json_t *o = text && *text ? json_loads(text, 0, NULL) : json_object();
    if (!json_is_object(o)) { json_decref(o); return -1; }
    for (int k = 0; k < cfg->naxes; k++) {
        json_t *x = json_object_get(o, cfg->keys[k]);
        u[k] = surrogate_axis_unit(&cfg->axes[k], json_is_number(x) ? json_number_value(x) : cfg->base[k]);
    }
    json_decref(o);
    return 0;
}

int search_parse(const json_t *v, const json_t *train, const schedule_rules *rules, int n_seeds, search_cfg *cfg,
                 char *err, size_t errlen) {
    static const char *const keys[] = { "strategy", "budget", "batch", "init", "delta", "stop_p", "seed", "features",
                                        "dims", NULL };
    memset(cfg, 0, sizeof *cfg);
    cfg->stop_p = NAN;
    if (!v) return 0;
    if (!json_is_object(v))
        return bad(err, errlen, "search: must be an object {\"strategy\": \"surrogate\", \"budget\": 60, \"batch\": 10, "
                                "\"init\": 10}");
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        int ok = 0;
        for (int i = 0; keys[i]; i++) ok |= strcmp(k, keys[i]) == 0;
        if (!ok) {
            snprintf(err, errlen, "search.%.100s: unknown key (expected one of: strategy, budget, batch, init, delta, "
                     "stop_p, seed, features, dims)", k);
            return -1;
        }
    }
    json_t *st = json_object_get(v, "strategy");
    const char *strategy = st ? json_string_value(st) : "grid";
    if (!strategy || (strcmp(strategy, "grid") && strcmp(strategy, "surrogate")))
        return bad(err, errlen, "search.strategy: must be \"grid\" (train every schedule of the rules: the default) or "
                                "\"surrogate\" (a model proposes which to train, batch by batch)");
    if (strcmp(strategy, "grid") == 0) {
        json_object_foreach((json_t *)v, k, x)
            if (strcmp(k, "strategy")) {
                snprintf(err, errlen, "search.%.100s: only with \"strategy\": \"surrogate\" (a grid trains every "
                         "schedule); remove it or set the strategy", k);
                return -1;
            }
        return 0;
    }
    if (n_seeds < 2)
        return bad(err, errlen, "search: a surrogate search needs at least 2 seeds (\"seeds\": [0, 1]): the blocked "
                                "model's run-to-run noise is what weighs each schedule's estimate");
    schedule_count_t cnt;
    if (schedule_count(rules, &cnt) != 0) cnt = (schedule_count_t)1 << 62;
    long long space = cnt > ((schedule_count_t)1 << 62) ? (1LL << 62) : (long long)cnt;
    json_t *b = json_object_get(v, "budget"), *ba = json_object_get(v, "batch"), *in = json_object_get(v, "init");
    if (!json_is_integer(b) || json_integer_value(b) < 2 || json_integer_value(b) > SEARCH_MAX_BUDGET) {
        snprintf(err, errlen, "search.budget: required, an integer in 2..%d: the schedules trained at most, the "
                 "initial design included, e.g. 60", SEARCH_MAX_BUDGET);
        return -1;
    }
    long long budget = json_integer_value(b);
    json_t *dims = json_object_get(v, "dims");
    if (dims && parse_dims(dims, train, cfg, err, errlen) < 0) return -1;
    if (budget >= space && cfg->naxes == 0) {
        snprintf(err, errlen, "search.budget: %lld is not below the rules' %lld valid schedules: train the grid "
                 "(remove \"search\"), or give a budget below %lld", budget, space, space);
        return -1;
    }
    long long init = budget < SEARCH_DEFAULT_INIT ? budget : SEARCH_DEFAULT_INIT, batch = SEARCH_DEFAULT_BATCH;
    if (in && (!json_is_integer(in) || json_integer_value(in) < 2 || json_integer_value(in) > budget)) {
        snprintf(err, errlen, "search.init: must be an integer in 2..%lld (the budget): the initial design's size, "
                 "the uniform baseline included", budget);
        return -1;
    }
    if (in) init = json_integer_value(in);
    if (ba && (!json_is_integer(ba) || json_integer_value(ba) < 1 || json_integer_value(ba) > budget)) {
        snprintf(err, errlen, "search.batch: must be an integer in 1..%lld (the budget): schedules per batch; a "
                 "batch is proposed when the previous one is over, so give about GPUs / seeds", budget);
        return -1;
    }
    if (ba) batch = json_integer_value(ba);
    double delta = SEARCH_DEFAULT_DELTA, stop_p = NAN;
    json_t *d = json_object_get(v, "delta"), *sp = json_object_get(v, "stop_p"), *sd = json_object_get(v, "seed");
    if (d) {
        delta = json_is_number(d) ? json_number_value(d) : NAN;
        if (!(delta >= 0 && delta < 1))
            return bad(err, errlen, "search.delta: must be a number in [0, 1), e.g. 0.001: the val-loss margin by which an "
                                    "untrained schedule must beat the recommended one to count");
    }
    if (sp) {
        stop_p = json_is_number(sp) ? json_number_value(sp) : NAN;
        if (!(stop_p > 0 && stop_p < 1))
            return bad(err, errlen, "search.stop_p: must be a number in (0, 1), e.g. 0.05: stop once the model's "
                                    "probability that an untrained schedule beats the recommended by delta is below it");
    }
    if (sd && (!json_is_integer(sd) || json_integer_value(sd) < 0))
        return bad(err, errlen, "search.seed: must be a non-negative integer (the RNG of the candidate sample and the "
                                "draws)");
    int feat = SURROGATE_F_DEFAULT;
    json_t *f = json_object_get(v, "features");
    if (f) {
        const char *fs = json_string_value(f);
        feat = !fs ? 0 : !strcmp(fs, "both") ? SURROGATE_F_BOTH : !strcmp(fs, "logdim") ? SURROGATE_F_LOGDIM
                                                                  : !strcmp(fs, "trans") ? SURROGATE_F_TRANS : 0;
        if (!feat)
            return bad(err, errlen, "search.features: must be \"both\" (the default), \"logdim\" (per-layer log2 head "
                                    "dims) or \"trans\" (the transition depths)");
    }
    cfg->enabled = 1;
    cfg->budget = (int)budget;
    cfg->init = (int)init;
    cfg->batch = (int)batch;
    cfg->delta = delta;
    cfg->stop_p = stop_p;
    cfg->seed = sd ? (uint64_t)json_integer_value(sd) : 0;
    cfg->features = feat;
    cfg->space = space;
    return 0;
}

surrogate_opts search_opts(const search_cfg *cfg, int batch) {
    surrogate_opts o;
    memset(&o, 0, sizeof o);
    o.features = cfg->features;
    o.naxes = cfg->naxes;
    o.axes = cfg->axes;
    o.delta = cfg->delta;
    o.seed = cfg->seed + 0x9E3779B97F4A7C15ULL * (uint64_t)batch;   /* each batch its own draws, all reproducible */
    return o;
}

int search_initial_design(const search_cfg *cfg, const schedule_rules *rules, int *out, double *out_u, char *err,
                          size_t errlen) {
    surrogate_opts o = search_opts(cfg, 0);
    double bu[SURROGATE_MAX_AXES];
    for (int k = 0; k < cfg->naxes; k++) bu[k] = surrogate_axis_unit(&cfg->axes[k], cfg->base[k]);
    o.base_u = bu;
    o.out_u = out_u;
    int got = surrogate_initial_design(rules, cfg->init, &o, out);
    if (got < 0) snprintf(err, errlen, "search: cannot draw the initial design (surrogate error %d)", got);
    return got;
}
