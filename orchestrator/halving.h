/* halving.h — successive halving at matched tokens (the spec key "halving"): rung steps, the worker's rung
 * report, and the promotion of the best schedules at each rung.
 *
 *   "halving": {"eta": 3, "rungs": [0.111, 0.333], "mode": "sync"}
 *
 * rungs are fractions of the job's train.steps, strictly increasing, each in (0, 1); the full run is the last
 * rung. A rung's step is round-half-up(fraction × train.steps) = floor(fraction × steps + 0.5); every step must
 * be ≥ 1, below train.steps and above the previous rung's (two rungs that round to the same step are an error).
 * eta ≥ 2; mode "sync" (default) or "async". A single-seed spec is allowed.
 *
 * Life of a job (jobs.rung = the rung it trains towards, jobs.stop_at_step = that rung's step, NULL for the full
 * run): queued → leased (the lease carries "stop_at_step") → the worker trains to the step, reports the val loss
 * there (POST /api/v1/jobs/{id}/rung) after its checkpoint → paused. The promotion then moves every paused job of
 * a schedule at once: promoted → queued at the next rung (resume = its rung checkpoint) or pruned (terminal).
 *
 * Promotion at rung r (one decision per schedule, stored in halving_decisions in the same transaction as the
 * job updates; a decision row that exists is never taken again, so running it twice changes nothing):
 *   ranking  the leaderboard's paired ranking at rung r (leaderboard_build_at_rung): mean paired Δ of the val
 *            loss at the rung's step against the uniform baseline over the seeds both reached; a schedule with
 *            fewer seeds at the rung than the others is provisional and ranks after the complete ones.
 *   n, k     n = schedules that entered the rung; k = ⌈n / eta⌉ best ranked are promoted; the uniform baseline is
 *            always promoted (in addition when it is not among the k).
 *   held     while the uniform baseline has no value at the rung (its jobs there failed or were cancelled), no
 *            schedule of the rung is decided: every Δ is unknown. halving_held says so for the sweep's status.
 *   sync     decided when no job of the rung is queued or leased any more: every job is paused, or failed or
 *            cancelled (such a job counts as reported without a value: its schedule is ranked on the seeds that
 *            reached the rung, and a schedule with no seed at the rung is pruned).
 *   async    (ASHA) each time a schedule completes the rung (none of its jobs queued or leased), it is promoted
 *            at once when fewer than ⌊c / eta⌋ of the c schedules that completed the rung so far rank above it
 *            (the floor, as ASHA has it: one complete schedule promotes nobody until eta have completed); when the
 *            whole rung is complete every schedule not promoted by then is pruned (the baseline excepted).
 *
 * Fault injection (tests only): with PRISM_FAULT_PROMOTION=abort in the environment the process aborts in
 * the middle of a promotion, after some of its rows are written and before the transaction commits.
 *
 * Returns: 0 or a negative STORE_E* code with the message in err. Transactions: none opened here; the caller's
 * transaction (the API's savepoint per request) makes each call atomic.
 */
#ifndef PRISM_HALVING_H
#define PRISM_HALVING_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "queue.h"
#include "store.h"

/* The functions below change jobs: they take the queue whose statement table makes every transition
 * (orchestrator/queue.h, queue_rung_*); q->st is the store they read. */

/* The worker's report at a rung: the lease must be live (token), step the job's stop_at_step, and the rung
 * checkpoint at that step reported first. Stores the rung result, pauses the job, runs the promotion and applies
 * any decision already taken for the schedule. *state: the job's state afterwards ("paused", "queued",
 * "pruned"; static). Repeating the report of the same attempt answers the same, changing nothing.
 * STORE_ECONFLICT: the lease is not live (*state_buf gets the job's state); STORE_EINVAL: bad step/value. */
int halving_report(queue *q, long long job, const char *token, long long step, double val_loss, const char **state,
                   char *state_buf, char *err, size_t errlen);

/* Runs the promotion of every rung of the sweep that is due (idempotent). *decided += schedules decided. */
int halving_tick(queue *q, long long sweep_id, int *decided, char *err, size_t errlen);
/* halving_tick for every sweep with halving (server start, after lease expiry, fail, cancel). */
int halving_tick_all(queue *q, int *decided, char *err, size_t errlen);

/* Whether a rung of the sweep is held (above): 1 and a sentence in why (naming the rung, its step and the fix),
 * 0 when none is, negative on a read error. */
int halving_held(store *st, long long sweep_id, char *why, size_t whylen, char *err, size_t errlen);

#endif
