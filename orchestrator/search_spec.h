/* search_spec.h — the spec key "search" (search.h has its meaning, its decisions and what it shows): the parsed
 * configuration, the candidates' train values and coordinates, the initial design.
 *
 * Returns: 0 or -1 with the message in err, unless said otherwise.
 */
#ifndef PRISM_SEARCH_SPEC_H
#define PRISM_SEARCH_SPEC_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "schedule.h"
#include "surrogate.h"

#define SEARCH_DEFAULT_INIT 10
#define SEARCH_DEFAULT_BATCH 10
#define SEARCH_DEFAULT_DELTA 0.001

#define SEARCH_KEY_MAX 24
/* search.budget at most: a sweep's schedules (spec.h's SPEC_MAX_SCHEDULES; spec.c asserts they are equal) */
#define SEARCH_MAX_BUDGET 100000

typedef struct search_cfg {
    int enabled;          /* 1: strategy "surrogate" */
    int budget, batch, init;
    double delta;
    double stop_p;        /* NAN: not given (stop at the budget) */
    uint64_t seed;
    int features;         /* SURROGATE_F_* */
    long long space;      /* the rules' valid schedules (capped at 2^62) */
    int naxes;            /* "dims": the numeric train keys searched too (0: the schedule only) */
    surrogate_axis axes[SURROGATE_MAX_AXES];
    char keys[SURROGATE_MAX_AXES][SEARCH_KEY_MAX];   /* the train keys ("lr"), in the spec's order */
    double base[SURROGATE_MAX_AXES];                  /* the spec's own values: the baseline's */
} search_cfg;

/* Checks the spec's "search" value. train is the spec's "train" object (may be NULL: the job defaults), for the
 * baseline's values of "dims". rules must be resolved; n_seeds is the spec's seed count. v NULL or strategy "grid" =
 * no search (cfg->enabled 0). Errors name the key: "search.budget: ...". Returns 0 or -1. */
int search_parse(const json_t *v, const json_t *train, const schedule_rules *rules, int n_seeds, search_cfg *cfg,
                 char *err, size_t errlen);
/* The initial design of cfg into out[cfg->init × L] (room for init schedules) and, with dims, out_u[init × naxes]
 * (the baseline's row: its spec values' coordinates). Returns how many, or -1 (err set). */
int search_initial_design(const search_cfg *cfg, const schedule_rules *rules, int *out, double *out_u, char *err,
                          size_t errlen);
/* The train object of a candidate at coordinates u[naxes] ({"lr": 0.0012, ...}, quantized values), or with u NULL
 * the baseline's (the spec's own values). A new reference, NULL when out of memory. */
json_t *search_train_json(const search_cfg *cfg, const double *u);
/* The coordinates of a schedules.train text ("" or a JSON object) into u[naxes]; a key it lacks is at the spec's
 * value. Returns 0, or -1 when the text is not a JSON object. */
int search_train_coords(const search_cfg *cfg, const char *text, double *u);
/* The surrogate's options for cfg at batch (each batch its own reproducible draws). */
surrogate_opts search_opts(const search_cfg *cfg, int batch);
#endif
