/* ranking_build.c — the ranking fed its consumers' inputs (ranking_build.h).
 *
 * Design: ranking.c reads and ranks; it includes none of the modules that decide on its answer (racing, search,
 * halving). What those add before the comparisons (racing's eliminated schedules leave the family; a search's
 * posteriors ride along) is this file's list, one floor above them (tools/layers.sh's orchestrator list), so the
 * include circle ranking -> racing -> ranking cannot return. A new input is a row here.
 */
#include "ranking_build.h"

#include "racing.h"
#include "search.h"

static const ranking_input INPUTS[] = {racing_annotate, search_annotate};

int ranking_build(store *st, long long sweep_id, int at_rung, ranking **out, char *err, size_t errlen) {
    return ranking_build_from(st, sweep_id, at_rung, INPUTS, (int)(sizeof INPUTS / sizeof *INPUTS), out, err, errlen);
}
