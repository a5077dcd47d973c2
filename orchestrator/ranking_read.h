/* ranking_read.h — the one read of the store that feeds the ranking (ranking.h): the sweep, its schedules, every
 * job with its result and rung values, into a ranking whose comparisons ranking_compute then fills; and the final
 * val losses racing's rounds and a search's batches fit.
 *
 * Ownership: ranking_build_from returns a ranking the caller frees with ranking_free; every pointer inside is
 * owned by it. Nothing here writes to the store.
 */
#ifndef PRISM_RANKING_READ_H
#define PRISM_RANKING_READ_H
#include <stddef.h>

#include "ranking.h"
#include "store.h"

/* What a module that decides on the ranking adds to it before its comparisons are computed (racing.h's
 * racing_annotate: eliminated schedules leave the family; search.h's search_annotate: its posteriors), called in
 * the caller's order on the ranking read so far. The ranking calls none of them by name: its caller feeds them
 * (ranking_build.h's ranking_build feeds every one). Returns 0 or < 0 (err set). */
typedef int (*ranking_input)(store *st, ranking *r, char *err, size_t errlen);
/* Reads the sweep and ranks it: at_rung < 0 each schedule at the highest level it reached, else every schedule
 * at level at_rung; inputs[0..ninputs) run before the comparisons. Returns 0 and a new *out, STORE_ENOTFOUND (no
 * such sweep) or STORE_EIO (message in err); *out is NULL after a failure and nothing is left to free. */
int ranking_build_from(store *st, long long sweep_id, int at_rung, const ranking_input *inputs, int ninputs,
                       ranking **out, char *err, size_t errlen);
/* Every done job of the sweep with a final val loss, as observations of the schedules ids[0..n) (ascending; sched
 * = the index in ids; a job of a schedule not in ids is skipped), batches NULL: racing's rounds and the search's
 * batches fit these. *obs is the caller's to free (NULL when none), *nobs their count. Returns 0, or STORE_EIO with
 * err set and nothing to free. */
int ranking_load_final(store *st, long long sweep_id, const long long *ids, int n, ranking_obs **obs, int *nobs,
                       char *err, size_t errlen);
/* Frees r (NULL: nothing) and everything it owns. */
void ranking_free(ranking *r);
#endif
