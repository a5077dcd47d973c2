/* spec.h — sweep specs: parse and validate a spec (JSON), expand it to schedules × seeds, build each job's JSON.
 *
 * A spec (sweeps/NAME.json) is one object:
 *   name        "gpt2-124m"  ([A-Za-z0-9._-], 1..127 chars; the sweep's identity in the store)
 *   description optional text
 *   priority    optional int (default 0), copied to every job
 *   model       {n_layer, d_model, vocab_size, padded_vocab_size, seq_len, init?}   (no "heads": the schedule)
 *   rules       optional {h_base, max_head_dim, pow2, heads: [..], min_block, max_block, min_baseline}
 *               (the enumerator's rules; defaults as `prism-sweep enumerate`)
 *   schedules   optional explicit list instead of enumerating: ["3,3,6,6,12x8", [3,3,6,6,...], ...]; each
 *               passes the hard rules only (rules.h_base still sets the last layer's heads)
 *   include     optional list of extra schedules (hard rules only: divides, non-decreasing, last = h_base)
 *   exclude     optional list of schedules removed from the set (each must be in it)
 *   sample      optional {n, seed}: n schedules drawn uniformly from the rules' set
 *   seeds       [S1, S2, ...] distinct non-negative integers; job seed_index = position in this list
 *   train       the job's train section without "seed" (the job format of docs/FORMATS.md), "steps" required
 *   eval, data  the job's eval and data sections of the job format, copied as given
 *   halving     optional {eta, rungs, mode}: successive halving at matched tokens (orchestrator/halving.h)
 *   racing      optional {max_seeds, alpha}: seeds added round by round to the schedules in contention (racing.h)
 * The uniform baseline is always in the set (added first when a list or a sample lacks it). Schedule order
 * ("ord"): the baseline first, then the enumeration order (rules/sample) or the list order, then includes.
 *
 * Errors name the JSON path and the fix: "train.lr: must be > 0 (got -1)". Every function returns 0 or a
 * negative SPEC_E* code with the message in err; after a failure the spec is released (nothing to free).
 */
#ifndef PRISM_SPEC_H
#define PRISM_SPEC_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include "schedule.h"

enum { SPEC_OK = 0, SPEC_EINVAL = -1, SPEC_ENOMEM = -2, SPEC_EIO = -3, SPEC_ETOOBIG = -4 };

#define SPEC_MAX_SCHEDULES 100000   /* per sweep; use "sample" beyond that */
#define SPEC_MAX_SEEDS 1000
#define SPEC_MAX_JOBS 1000000       /* schedules x seeds per sweep */
#define SPEC_MAX_TEXT (4 << 20)     /* bytes of spec JSON accepted */

typedef struct sweep_spec {
    json_t *root;            /* owned reference to the whole spec */
    char name[128];
    int priority;
    int n_layer, d_model;
    int64_t steps;           /* train.steps, and */
    int64_t tokens_per_step; /* batch_size x seq_len x grad_accum of every job, by the job model (common/jobmodel.h) */
    schedule_rules rules;    /* resolved (L, d_model, h_base filled) */
    int n_schedules;
    int *heads;              /* [n_schedules][n_layer], in ord order; owned */
    int n_seeds;
    int64_t *seeds;          /* [n_seeds]; owned */
    json_t *train_over;      /* a search over train keys ("search.dims"): [n_schedules] objects, the train keys each
                                schedule's jobs set (the baseline's: the spec's own values); NULL otherwise; owned */
    json_t *train_base;      /* the baseline's object of train_over, or NULL; owned */
    char warn[512];          /* a warning for the user (e.g. an early halving rung), "" when none; `create` prints it */
} sweep_spec;

/* Parses JSON text (len bytes, not necessarily NUL-terminated) into *sp. */
int spec_parse(const char *text, size_t len, sweep_spec *sp, char *err, size_t errlen);
/* Same from a parsed object (takes a new reference to root; the caller keeps its own). */
int spec_from_json(json_t *root, sweep_spec *sp, char *err, size_t errlen);
/* spec_parse with at most max_jobs jobs (schedules x seeds): checked before any schedule is enumerated or
 * sampled, so refusing a huge spec costs no work. More is SPEC_ETOOBIG (err says how many and what to do). */
int spec_parse_max(const char *text, size_t len, long long max_jobs, sweep_spec *sp, char *err, size_t errlen);
/* Reads and parses a file; a missing or unreadable file is SPEC_EIO naming the path. */
int spec_load(const char *path, sweep_spec *sp, char **text_out, char *err, size_t errlen);
void spec_release(sweep_spec *sp);   /* frees what *sp owns and zeroes it; a zeroed spec is fine */

/* 1 when schedule i is the uniform baseline (with train_over: at the spec's own train values). */
int spec_is_baseline(const sweep_spec *sp, int i);
/* The canonical text of schedule i's train_over object (sorted keys, compact: the schedules.train column), "" without
 * one. Returns a malloc'd string (the caller frees), NULL when out of memory. */
char *spec_train_text(const sweep_spec *sp, int i);
/* The job JSON of schedule i × seed j (the job format: model with heads, train with seed and train_over[i], eval, data).
 * Returns a new reference, or NULL when out of memory. */
json_t *spec_job_json(const sweep_spec *sp, int i, int j);
#endif
