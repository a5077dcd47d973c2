/* jobstate.h — the job states, one vocabulary for the orchestrator, the worker, the API and the page.
 *
 *   queued → leased → done | failed | cancelled          (failed/cancelled may be requeued by an admin)
 *   leased → paused (successive halving: stopped at a rung) → queued (promoted) | pruned (not promoted)
 *
 * The names are the jobs.state column's values (sql/001_schema.sql, sql/002_halving.sql: their CHECK lists are
 * tested against this table, tests/unit/test_jobstate.c), the JSON "state" of every job reply, the keys of
 * every "counts" object and the labels of /metrics' prism_jobs. The page reads them from GET /api/v1/sweeps
 * ("job_states", and the sets below as "halving_states", "terminal_states", "active_states"), never from literals
 * of its own.
 *
 * Contract.
 * - job_state values are dense, 0..JOB_NSTATES-1, in the order above (the order of every counts listing).
 * - jobstate_name(s): the state's name, a static string; NULL for a value out of range.
 * - jobstate_parse(name, &s): 0 with s set, or -1 (s untouched) when name is NULL or no state's name.
 * - jobstate_is_terminal(s): 1 for done, failed, cancelled, pruned (nothing runs them again unless an admin
 *   requeues); jobstate_is_active(s): 1 for queued, leased, paused (the sweep still has work);
 *   jobstate_is_halving(s): 1 for paused, pruned (only successive-halving sweeps reach them). 0 otherwise.
 * - jobstate_list(buf, len, sep, last): writes the names in order joined by sep, with `last` before the final
 *   one when non-NULL ("queued, leased, ... or pruned"), into buf (always NUL-terminated, truncated to fit);
 *   returns buf. For error messages.
 * - jobstate_sql_list(buf, len): "'queued', 'leased', ...": the CHECK (state IN (...)) list the schema holds.
 * Thread-safe; no allocation.
 */
#ifndef PRISM_JOBSTATE_H
#define PRISM_JOBSTATE_H
#include <stddef.h>

typedef enum job_state {
    JOB_QUEUED,
    JOB_LEASED,
    JOB_DONE,
    JOB_FAILED,
    JOB_CANCELLED,
    JOB_PAUSED,     /* successive halving: waiting at a rung for its decision */
    JOB_PRUNED,     /* successive halving: not promoted at a rung (terminal) */
    JOB_NSTATES
} job_state;

const char *jobstate_name(job_state s);
int jobstate_parse(const char *name, job_state *s);
int jobstate_is_terminal(job_state s);
int jobstate_is_active(job_state s);
int jobstate_is_halving(job_state s);
char *jobstate_list(char *buf, size_t len, const char *sep, const char *last);
char *jobstate_sql_list(char *buf, size_t len);

#endif
