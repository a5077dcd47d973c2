/* search.h — adaptive search (the spec key "search"): the surrogate (surrogate.h) proposes which schedules to train
 * next, batch by batch, where the grid cannot go (issue #38; docs/SEARCH.md).
 *
 *   "search": {"strategy": "surrogate", "budget": 150, "batch": 10, "init": 10, "delta": 0.001, "stop_p": 0.05,
 *              "seed": 0, "features": "both"}
 *
 * strategy: "grid" (the default: every schedule of the rules, today's behaviour; the other keys are then refused)
 * or "surrogate". budget: schedules trained at most, the initial design included (≥ init, below the rules' valid
 * count: at or above it, train the grid). init: the initial design's size (default min(10, budget); ≥ 2), the
 * uniform baseline first, then greedy maximin over the schedule features (surrogate_initial_design). batch:
 * schedules per later batch (default 10). delta ≥ 0 (default 0.001): the δ of P(some untrained schedule beats the
 * recommended by more than δ). stop_p in (0, 1), optional: stop early once that probability is below it. seed: the
 * RNG of the candidate sample and the Thompson draws (default 0). features: "both" (default), "logdim", "trans".
 * Every schedule gets every seed of the spec (≥ 2 seeds: the blocked model needs the run-to-run noise).
 * Not combined with "racing", "halving", "schedules", "sample", "include" or "exclude" (the spec is refused, naming
 * the key): the candidates are the rules' whole valid set.
 *
 * Batches. The sweep is created with the initial design (spec.c). A batch is due when no job of the sweep is
 * queued, leased or paused (batches are synchronous: size "batch" to the fleet) and the search is not over; it is
 * decided once, in the caller's transaction: the blocked model val_loss ~ schedule + seed is fitted on every
 * finished job after the outlier screen (ranking_screen: the leaderboard's rule), each schedule with a value gives
 * y = τ̂_i and se = √(s̃²_i / r_i) (its moderated variance over its seeds), surrogate_fit models them, and
 * surrogate_propose draws min(batch, budget − schedules) new schedules (never one already in the sweep), which are
 * inserted with every seed's job (the create path's job JSON), together with the batch row (search_batches), the
 * proposals with their predictions (search_proposals) and every trained schedule's posterior (search_predictions).
 * The batch that reaches the budget, exhausts the valid set or finds P(beat) < stop_p proposes nothing and records
 * why (stop_reason): the search is over. A restart or a crash repeats nothing: a decision interrupted before the
 * commit leaves nothing, and the batch row's primary key makes it once.
 *
 * Fault injection (tests only): PRISM_FAULT_SEARCH=abort aborts the process inside a decision, after the batch's
 * schedules and jobs are written and before its row and the commit.
 *
 * Returns: 0 or a negative STORE_E* code with the message in err. Transactions: none opened here.
 */
#ifndef PRISM_SEARCH_H
#define PRISM_SEARCH_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "ranking.h"
#include "schedule.h"
#include "store.h"

#define SEARCH_DEFAULT_INIT 10
#define SEARCH_DEFAULT_BATCH 10
#define SEARCH_DEFAULT_DELTA 0.001

typedef struct search_cfg {
    int enabled;          /* 1: strategy "surrogate" */
    int budget, batch, init;
    double delta;
    double stop_p;        /* NAN: not given (stop at the budget) */
    uint64_t seed;
    int features;         /* SURROGATE_F_* */
    long long space;      /* the rules' valid schedules (capped at 2^62) */
} search_cfg;

/* Checks the spec's "search" value. rules must be resolved; n_seeds is the spec's seed count. v NULL or strategy
 * "grid" = no search (cfg->enabled 0). Errors name the key: "search.budget: ...". Returns 0 or -1. */
int search_parse(const json_t *v, const schedule_rules *rules, int n_seeds, search_cfg *cfg, char *err, size_t errlen);
/* The initial design of cfg into out[cfg->init × L] (room for init schedules). Returns how many, or -1 (err set). */
int search_initial_design(const search_cfg *cfg, const schedule_rules *rules, int *out, char *err, size_t errlen);

/* Decides every batch of the sweep that is due (idempotent). *decided += batches decided. A sweep without a
 * surrogate search costs one read. */
int search_tick(store *st, long long sweep_id, int *decided, char *err, size_t errlen);
/* search_tick for the sweep of job (the server's hook after a job completes). */
int search_job_done(store *st, long long job, int *decided, char *err, size_t errlen);
/* search_tick for every sweep with a "search" key (server start; a job failed, cancelled or requeued; expiry). */
int search_tick_all(store *st, int *decided, char *err, size_t errlen);

/* The search object of the contract (docs/SEARCH.md, "What the server shows"): settings, progress, the latest
 * batch's recommendation, predicted best untrained, P(beat), the fit's leave-one-out and held-out checks and one
 * entry per batch. *out: a new reference, or NULL for a sweep without a surrogate search. Returns 0 or < 0. */
int search_summary_json(store *st, long long sweep_id, json_t **out, char *err, size_t errlen);
/* Sets r->search (the summary JSON plus "by_schedule": {schedule id: {mean, sd, lo, hi, batch}} from the latest
 * batch's predictions; owned by r). No-op without a search. */
int search_annotate(store *st, ranking *r, char *err, size_t errlen);
/* The search object as text for a person (status, the leaderboard's footer): settings, the recommendation, the
 * outlook, the fit's checks and the progress table. Appends to b (max bytes at most). Returns 0 or -1. */
struct buf;
int search_summary_text(const json_t *o, struct buf *b, size_t max);
#endif
