/* leaderboard.h — the sweep's answer rendered: the ranking (ranking.h: blocked model schedule + seed, Holm against
 * uniform, the best group, the detectable effect) as JSON for GET /api/v1/sweeps/{id}/leaderboard and `prism-sweep
 * leaderboard`, as CSV, and as the terminal table. JSON shape and CSV columns: docs/API.md; the method:
 * docs/STATISTICS.md.
 */
#ifndef PRISM_LEADERBOARD_H
#define PRISM_LEADERBOARD_H
#include <jansson.h>
#include <stddef.h>
#include "store.h"

/* Builds the leaderboard of sweep_id. On 0, *out is a new object the caller decrefs. Returns
 * STORE_ENOTFOUND (no such sweep) or STORE_EIO with a message in err. Reads only. */
int leaderboard_build(store *st, long long sweep_id, json_t **out, char *err, size_t errlen);

struct ranking;
/* The JSON of a ranking (no zero-shot columns: leaderboard_build adds them). New reference, NULL on no memory. */
json_t *leaderboard_from_ranking(const struct ranking *rk);

/* With halving (the spec key), leaderboard_build shows each schedule at the highest rung any of its seeds reached
 * ("rung", "rung_step", "pruned" per row; "halving" at the top with the steps and tokens spent against the full
 * grid's) and ranks by that rung first (highest first); each Δ is measured at its row's rung ("delta.step"), and
 * pruned schedules are not compared with the survivors ("tied_best" null). */

/* Who produced the finished results of sweep_id (migration 17: each result's trainer_command and trainer_version,
 * null for the built-in engine): *out a new array of {"command", "version", "jobs"}, most jobs first; note gets
 * "results from N trainer identities: ..." when there is more than one (mixed in one ranking), else "". Reads only;
 * STORE_OK or STORE_EIO with err. leaderboard_build adds both ("trainer_identities", "trainer_note" when mixed). */
int leaderboard_trainer_identities(store *st, long long sweep_id, json_t **out, char *note, size_t notelen, char *err,
                                   size_t errlen);

/* The leaderboard as CSV text (header line first; docs/API.md). malloc'd, caller frees; NULL on no memory. */
char *leaderboard_csv(const json_t *lb);
/* A human table for the terminal. malloc'd, caller frees. */
char *leaderboard_table(const json_t *lb);

/* text with every line wider than `width` columns (UTF-8 code points) wrapped at spaces, the continuation lines
 * indented by 6 spaces; a word wider than the room is left whole. width <= 0: a copy. malloc'd, caller frees; NULL
 * on no memory. (`prism-sweep leaderboard` fits its table to the terminal: COLUMNS, else the tty's width.) */
char *leaderboard_wrap(const char *text, int width);

#endif
