/* plan.h — a sweep's decision policies as C values: the "halving" and "racing" keys parsed (checked at create by
 * spec.c, read back by plan_load), halving's rung-0 setup and the steps its jobs trained. The keys' meaning is
 * halving.h's and racing.h's; this header is what the ranking may read of them (it includes neither).
 *
 * Returns: 0 or a negative STORE_E* code with the message in err (the parsers: 0 or -1).
 */
#ifndef PRISM_PLAN_H
#define PRISM_PLAN_H
#include <jansson.h>
#include <stddef.h>

#include "store.h"

/* ---- halving (halving.h) ---- */
#define HALVING_MAX_RUNGS 16

typedef struct halving_cfg {
    int enabled;
    int eta;
    int nrungs;                          /* rungs before the full run */
    double frac[HALVING_MAX_RUNGS];
    long long step[HALVING_MAX_RUNGS + 1];   /* step[nrungs] = train.steps (the full run) */
    int async;                           /* mode "async" */
} halving_cfg;

/* Checks the spec's "halving" value against train.steps. v NULL = no halving (cfg->enabled 0). Errors name
 * the key: "halving.rungs[1]: ...". Returns 0 or -1. */
int halving_parse(const json_t *v, long long steps, halving_cfg *cfg, char *err, size_t errlen);

/* The create-time checks of a parsed cfg against the training schedule. Errors: a rung at or before warmup_steps,
 * and a rung below HALVING_WARN_FRACTION of train.steps that is also within 2 × warmup_steps (the learning rate has
 * just peaked: a review saw a rung at step 67 of 600, warmup 50, rank the schedules in exactly the reverse of the
 * final order). A first rung below HALVING_WARN_FRACTION otherwise sets warn (else warn = ""). Both name the key.
 * Returns 0 or -1 (err set). */
#define HALVING_WARN_FRACTION 0.2
int halving_check_rungs(const halving_cfg *cfg, int warmup_steps, char *warn, size_t warnlen, char *err, size_t errlen);

/* Puts the sweep's new jobs (rung NULL, never leased) on rung 0 (queue_rung_setup, through a queue of its own:
 * the create path has none). No-op without halving. */
int halving_init_jobs(store *st, long long sweep_id, char *err, size_t errlen);

/* Steps trained by the sweep's jobs so far (each job up to the furthest step it reached) and the full grid's
 * (jobs × train.steps). */
int halving_steps(store *st, long long sweep_id, long long *trained, long long *full, char *err, size_t errlen);

/* ---- racing (racing.h) ---- */
#define RACING_MAX_SEEDS 200          /* below RANKING_MAX_SEEDS: the blocked model takes every round */
#define RACING_DEFAULT_ALPHA 0.05

typedef struct racing_cfg {
    int enabled;
    int max_seeds;
    double alpha;
    int seeds0;                       /* the spec's seeds: round 1 */
    long long seed_base;              /* max of the spec's seeds: round r trains seed_base + r - 1 */
    int looks;                        /* rounds at most: max_seeds - seeds0 + 1 */
} racing_cfg;

/* Checks the spec's "racing" value against its seeds (n_seeds, max seed). v NULL = no racing (cfg->enabled 0).
 * Errors name the key: "racing.max_seeds: ...". Returns 0 or -1. */
int racing_parse(const json_t *v, int n_seeds, long long max_seed, racing_cfg *cfg, char *err, size_t errlen);
/* The Bonferroni level alpha / looks (the floor of the level a race tests at). */
double racing_round_alpha(const racing_cfg *cfg);
/* The seed round r (1-based, r ≥ 2) trains. */
long long racing_round_seed(const racing_cfg *cfg, int round);

/* ---- the sweep's plan ---- */
typedef struct sweep_plan {
    halving_cfg halving;                 /* .enabled 0 without "halving" */
    racing_cfg racing;                   /* .enabled 0 without "racing" */
} sweep_plan;
/* The sweep's policies from its stored spec, one read and one parse of each key. STORE_ENOTFOUND no sweep;
 * STORE_EINVAL a stored key its parser refuses (err names it; that policy is off, zeroed, the other one stands). */
int plan_load(store *st, long long sweep_id, sweep_plan *p, char *err, size_t errlen);
#endif
