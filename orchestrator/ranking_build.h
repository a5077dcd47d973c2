/* ranking_build.h — the sweep's ranking with every decision module's input (racing's eliminations, a search's
 * posteriors): what the leaderboard, status, the API and halving's promotion rank by.
 *
 * Returns: 0 and a new *out (ranking_free), STORE_ENOTFOUND (no such sweep) or STORE_EIO (message in err).
 */
#ifndef PRISM_RANKING_BUILD_H
#define PRISM_RANKING_BUILD_H
#include "ranking_read.h"

/* ranking_build_from with racing_annotate and search_annotate, in that order: at_rung < 0 each schedule at the
 * highest level it reached, else every schedule at level at_rung. */
int ranking_build(store *st, long long sweep_id, int at_rung, ranking **out, char *err, size_t errlen);
#endif
