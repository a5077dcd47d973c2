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
 *
 * dims, optional: numeric train keys searched together with the schedule, so "which schedule at which learning
 * rate" is one search: {"train.lr": {"min": 0.0003, "max": 0.003, "scale": "log"}, "train.warmup_steps": [0, 200]}
 * (an object with min, max and scale "log" | "linear", or [min, max]; scale defaults to log for lr, linear for the
 * rest). Searchable: lr, warmup_steps (an integer), min_lr_frac, beta1, beta2, weight_decay, grad_clip; at most
 * SURROGATE_MAX_AXES. The spec's own value of each key (its "train", or the job default) must lie in the range: the
 * uniform baseline trains at it. A candidate is then a schedule at some values (the surrogate's axes, surrogate.h):
 * every candidate's jobs carry its values in their train section, its schedules row holds them (schedules.train),
 * and proposed values are quantized (3 significant digits, integers). With dims the budget may exceed the valid
 * schedules' count (the same schedule can be trained at several values).
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
#include "search_spec.h"
#include "store.h"

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
/* A candidate's train values as words after lead: (" at", {"lr": 0.0012}) -> " at lr=0.0012" (3 significant digits,
 * integers whole); "" for t NULL or empty. Writes out[n], returns out. */
const char *search_train_words(const json_t *t, const char *lead, char *out, size_t n);
struct buf;
int search_summary_text(const json_t *o, struct buf *b, size_t max);
#endif
