/* jsonout.h — the one precision of every JSON the tools write out: API answers, CLI output (status, leaderboard,
 * export, create, enumerate, validate, power), the worker's result.json, job files and reports.
 *
 * Contract.
 * - JSONOUT_FLAGS: jansson dump flags to OR into every json_dumps / json_dumpf / json_dump_file call that writes
 *   a document a reader gets: 17 significant digits, so every double reads back as the stored one (15 lost the
 *   last digits: 3.3604123456789012 read back as 3.3604123456789). A bare double prints as jansson writes it at
 *   17 ("0.1" as 0.10000000000000001): the same value.
 * - Not for texts that are identities kept in the store (the job's text sweeps.c stores, spec.c's canonical spec,
 *   search.c's batch key, racing.c's job): those keep their own precision, a change would make old sweeps differ.
 */
#ifndef PRISM_JSONOUT_H
#define PRISM_JSONOUT_H
#include <jansson.h>

#define JSONOUT_FLAGS JSON_REAL_PRECISION(17)
#endif
