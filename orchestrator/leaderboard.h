/* leaderboard.h — the sweep's answer: per schedule mean ± std final val loss, tokens/s, and the paired
 * difference against the uniform baseline with a 95% Student-t confidence interval; attention distance
 * D_l per layer and ΔD_l against the baseline. Shared by GET /api/v1/sweeps/{id}/leaderboard and
 * `prism-sweep leaderboard`. JSON shape: docs/API.md.
 *
 * Pairing: seeds where both the schedule and the baseline have a result (same seed ⇒ same init and data
 * order), d_i = loss(schedule, seed_i) − loss(baseline, seed_i); CI = mean(d) ± t_{0.975, n−1}·sd(d)/√n.
 */
#ifndef PRISM_LEADERBOARD_H
#define PRISM_LEADERBOARD_H
#include <jansson.h>
#include <stddef.h>
#include "store.h"

/* Builds the leaderboard of sweep_id. On 0, *out is a new object the caller decrefs. Returns
 * STORE_ENOTFOUND (no such sweep) or STORE_EIO with a message in err. Reads only. */
int leaderboard_build(store *st, long long sweep_id, json_t **out, char *err, size_t errlen);

/* The same ranking with every schedule at halving rung `rung` (0 = the first rung; the sweep's rung count = the
 * final results): what the promotion ranks by (orchestrator/halving.c). Without zero-shot columns. */
int leaderboard_build_at_rung(store *st, long long sweep_id, int rung, json_t **out, char *err, size_t errlen);

/* With halving (the spec key), leaderboard_build shows each schedule at the highest rung any of its seeds reached
 * ("rung", "rung_step", "pruned" per row; "halving" at the top with the steps and tokens spent against the full
 * grid's) and ranks by that rung first (highest first), then as without halving; Δ pairs at that rung. */

/* The leaderboard as CSV text (header line first; docs/API.md). malloc'd, caller frees; NULL on no memory. */
char *leaderboard_csv(const json_t *lb);
/* A human table for the terminal. malloc'd, caller frees. */
char *leaderboard_table(const json_t *lb);

/* The run of elements of base (n elements of size bytes, sorted ascending by the long long at byte key_off) whose
 * key is id: returns its first index and sets *end one past its last (both the insertion point when none).
 * Binary search, O(log n): the leaderboard and its zero-shot columns find each schedule's rows with it. */
size_t leaderboard_key_range(const void *base, size_t n, size_t size, size_t key_off, long long id, size_t *end);

/* Two-sided 95% Student t quantile t_{0.975, df} (df >= 1). */
double leaderboard_t975(int df);
#endif
