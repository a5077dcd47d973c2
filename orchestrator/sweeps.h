/* sweeps.h — the store's sweeps: create a sweep with its schedules and jobs in one transaction, count jobs per
 * state, list sweeps. Used by `prism-sweep create|status` and by the server's POST /api/v1/sweeps and
 * GET /api/v1/sweeps[/{id}].
 *
 * Idempotence comes from UNIQUE constraints, not from checks: sweeps.name, schedules(sweep_id, heads),
 * jobs(schedule_id, seed). Creating the same spec twice creates nothing the second time (counts say 0);
 * a spec with the same name that adds schedules or seeds adds just those. A spec with the same name but a
 * different model/train/eval/data is refused (STORE_ECONFLICT): its jobs would not be comparable. A racing sweep
 * (spec key "racing") re-created with new seeds or schedules is refused too (STORE_ECONFLICT): its rounds choose
 * their seeds and schedules themselves (orchestrator/racing.h).
 *
 * Transactions: sweeps_create runs in BEGIN IMMEDIATE..COMMIT when no transaction is open, or inside a
 * SAVEPOINT of the caller's open transaction (the server's group commit); on failure nothing of it remains.
 * Errors: 0 or a negative STORE_E* code with the message in st->err (or err for sweeps_create_json).
 */
#ifndef PRISM_SWEEPS_H
#define PRISM_SWEEPS_H
#include <jansson.h>
#include <stdint.h>
#include "jobstate.h"
#include "spec.h"
#include "store.h"

/* Jobs per state: by name (c.queued) or by common/jobstate.h's enum (c.n[JOB_QUEUED]), the same storage. */
typedef struct sweeps_counts {
    union {
        struct {
            int64_t queued, leased, done, failed, cancelled;
            int64_t paused, pruned;   /* successive halving: stopped at a rung awaiting promotion; not promoted */
        };
        int64_t n[JOB_NSTATES];
    };
    int64_t total;
} sweeps_counts;
_Static_assert(sizeof(((sweeps_counts *)0)->n) == 7 * sizeof(int64_t) &&
               __builtin_offsetof(sweeps_counts, pruned) == JOB_PRUNED * sizeof(int64_t) &&
               __builtin_offsetof(sweeps_counts, cancelled) == JOB_CANCELLED * sizeof(int64_t),
               "sweeps_counts' named fields follow job_state's order");

typedef struct sweeps_created {
    int64_t sweep_id;
    int sweep_is_new;              /* 1 when this call inserted the sweep row */
    int64_t schedules_created, jobs_created;   /* rows this call inserted */
    int64_t schedules_total, jobs_total;       /* rows of the sweep afterwards */
    int n_seeds;
    char name[128];
} sweeps_created;

typedef struct sweeps_info {
    int64_t id;
    char name[128];
    char state[16];                /* active | paused */
    int priority;
    double created_at;
    int64_t n_schedules;
    sweeps_counts counts;
    int64_t steps_done;            /* steps trained: a done job's train.steps, a running one's progress (at most
                                      its steps), a cancelled one's none */
    int64_t steps_total;           /* steps the sweep trains: every job's train.steps, a pruned one's up to its
                                      rung, a cancelled one's none */
    int64_t jobs_done_since;       /* jobs done after the done_since given to sweeps_summary */
} sweeps_info;

#define SWEEPS_DONE_WINDOW_S 600.0   /* sweeps_list/sweeps_get: jobs_done_since counts the last 10 minutes */

/* Creates sp's sweep (spec_text is stored as the sweep's spec; it may be NULL: then sp->root is dumped). */
int sweeps_create(store *st, const sweep_spec *sp, const char *spec_text, sweeps_created *out);

/* Adds sp's schedules (sp->heads[0..n_schedules), each new one at the sweep's next ord) and every schedule × seed job
 * (seed-major, the create path's job JSON) to sweep sweep_id; rows that exist are kept (ON CONFLICT DO NOTHING).
 * ids (n_schedules entries, or NULL): each schedule's id on return. *schedules_created and *jobs_created grow by the
 * rows inserted. In the caller's transaction (sweeps_create's, a search batch's). Returns 0 or STORE_EIO (st->err). */
int sweeps_add_rows(store *st, int64_t sweep_id, const sweep_spec *sp, int64_t *ids, int64_t *schedules_created,
                    int64_t *jobs_created);

/* Parse + validate + create, the one function behind `prism-sweep create` and POST /api/v1/sweeps.
 * Returns 0; STORE_EINVAL when the spec is bad (err names the JSON path: HTTP 400, CLI exit 2);
 * STORE_ECONFLICT for a same-name sweep with other model/train/eval/data (HTTP 409); STORE_EIO. */
int sweeps_create_json(store *st, const char *text, size_t len, sweeps_created *out, char *err, size_t errlen);
/* The same with at most max_jobs jobs (schedules x seeds) in the spec: more is STORE_EINVAL with *too_big
 * set to 1 and err saying so, before anything is written (the server's bound on work done in one request). */
int sweeps_create_json_max(store *st, const char *text, size_t len, long long max_jobs, int *too_big,
                           sweeps_created *out, char *err, size_t errlen);

/* Finds a sweep by decimal id or by name: the one rule of every command that takes SWEEP. STORE_ENOTFOUND when there
 * is none; STORE_EINVAL (st->err says which to give) when the text is one sweep's id and another's name (names that
 * are numbers are refused at create, but an older database may hold one). */
int sweeps_find(store *st, const char *id_or_name, int64_t *id);

/* Calls fn(ctx, id) for every sweep whose spec has the top-level key `key` ("halving", "racing"), in id order,
 * reading the ids in pages of 256 so no cursor stays open while fn writes. Stops at fn's first negative return and
 * returns it (fn's err is the caller's); STORE_EIO with err set on a read error; else STORE_OK. */
int sweeps_each_with_key(store *st, const char *key, int (*fn)(void *ctx, long long sweep), void *ctx, char *err,
                         size_t errlen);

/* sweeps_each_with_key calling tick(st, sweep, decided, err, errlen) for each sweep with key (racing_tick_all,
 * search_tick_all). Stops at the first negative return and returns it. */
int sweeps_tick_each(store *st, const char *key, int (*tick)(store *, long long, int *, char *, size_t), int *decided,
                     char *err, size_t errlen);

/* Jobs per state of one sweep (sweep_id > 0) or of all sweeps (sweep_id = 0). */
int sweeps_count_states(store *st, int64_t sweep_id, sweeps_counts *c);

/* The sweep summary: the one function behind `prism-sweep status` and GET /api/v1/sweeps[/{id}] (each
 * prints or serves its own shape of it). Every sweep (sweep_id 0) or the one with that id, ordered by id,
 * with its schedules, jobs per state, steps done and in total, and jobs done after done_since (Unix
 * seconds). *out is malloc'd (caller frees; NULL when *n is 0), *n its length (0: no such sweep). Returns 0,
 * or STORE_EIO with st->err "sweeps: <SQLite's message>" (a read error, never fewer rows). One SQL query. */
int sweeps_summary(store *st, int64_t sweep_id, double done_since, sweeps_info **out, int *n);
/* sweeps_summary of every sweep, jobs_done_since over the last SWEEPS_DONE_WINDOW_S. */
int sweeps_list(store *st, sweeps_info **out, int *n);
/* sweeps_summary of one sweep. STORE_ENOTFOUND (st->err says so) when there is none. */
int sweeps_get(store *st, int64_t sweep_id, sweeps_info *info);

/* The invariant behind every O(1) count (sql/010_sweep_counts.sql): each sweep's counter rows (jobs per state, their
 * steps, tokens) equal count(*) and the sums over its jobs GROUP BY state, sweeps.schedules its schedules, its
 * sweep_results row its results' device time (wall_s, sql/014_job_changes.sql; setup_s, sql/017_trainer_identity.sql),
 * and no two jobs of a sweep share a rev. Returns 0;
 * STORE_ECONFLICT with err naming the first (sweep, state) that differs; STORE_EIO. Reads every job: for tests and
 * checks, never a request. */
int sweeps_counts_verify(store *st, char *err, size_t errlen);

/* {"queued":..,"leased":..,...,"pruned":..}: every job state (jobstate.h order); sweeps_counts_json adds
 * "total"; and the info object {"id","name","state","priority","created_at","schedules","jobs":{counts}};
 * new references (NULL when out of memory). */
json_t *sweeps_states_json(const sweeps_counts *c);
json_t *sweeps_counts_json(const sweeps_counts *c);
json_t *sweeps_info_json(const sweeps_info *info);

#endif
