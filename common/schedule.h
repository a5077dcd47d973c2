/* schedule.h — per-layer head schedules of a Prism transformer: the rules, validation, exact counting,
 * enumeration in a fixed order, uniform sampling, and the canonical text form "3,3,6,6,8,8,12,12,12,12,12,12".
 *
 * A schedule is int heads[L] (layer 1 first). The rules of a valid schedule:
 *   hard  every h_l divides d_model, h_l <= h_base, non-decreasing, h_L = h_base (so every h_base layer sits in
 *         one final run: the "baseline run");
 *   soft  d_model/h_l <= max_head_dim (0 = no bound); with pow2, head dims below the baseline run are powers of
 *         two; with an allowed-heads list, only those counts below h_base; every maximal run of equal heads
 *         before the baseline run has min_block..max_block layers (max_block 0 = no bound); the baseline run
 *         covers at least max(1, ceil(min_baseline*L)) layers.
 *
 * Order: the enumeration order is descending lexicographic order of the head sequence, so the uniform baseline
 * (h_base everywhere) is always first (rank 0); among schedules whose first block is the same value, the shorter
 * block comes first. schedule_unrank(rank) returns the rank-th schedule of that order.
 *
 * Counts are unsigned 128-bit (schedule_count_t), exact up to 2^128-1 (L=200, d=1600, h_base=1600, blocks 1..any
 * gives 2.9e22). Beyond that (only extreme shapes, e.g. L=4096, d_model=720720, h_base=d_model, no block bound)
 * the count saturates at the maximum and SCHEDULE_EOVERFLOW is returned; schedule_unrank and schedule_sample
 * then refuse (they need exact counts), while schedule_enumerate still walks (it needs no count).
 *
 * Errors: functions return 0 (or a documented non-negative value) on success, a negative SCHEDULE_E* code on
 * failure with a message in the caller's err buffer when one is passed. Nothing here allocates memory that
 * outlives a call.
 */
#ifndef PRISM_SCHEDULE_H
#define PRISM_SCHEDULE_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define SCHEDULE_MAX_L 4096          /* layers */
#define SCHEDULE_MAX_DMODEL (1 << 20)
#define SCHEDULE_MAX_ALLOWED 64      /* entries of an allowed-heads list */
#define SCHEDULE_MAX_VIOLATIONS 64   /* a report keeps this many; more are counted in n_more */

enum {
    SCHEDULE_OK = 0,
    SCHEDULE_EINVAL = -1,     /* bad rules or bad text (err says which field and the valid range) */
    SCHEDULE_EOVERFLOW = -2,  /* a count exceeds 2^128-1 */
    SCHEDULE_ENOMEM = -3,
    SCHEDULE_ERANGE = -4,     /* rank or sample size outside 0..count */
};

typedef unsigned __int128 schedule_count_t;

typedef struct schedule_rules {
    int L;                 /* layers, 1..SCHEDULE_MAX_L */
    int d_model;           /* 1..SCHEDULE_MAX_DMODEL */
    int h_base;            /* heads of the last layer; 0 = d_model/64 (must then be an integer) */
    int max_head_dim;      /* d_model/h_l <= this; 0 = no bound */
    int pow2;              /* 1: head dims below the baseline run must be powers of two */
    int n_heads;           /* 0 = every count that passes the rules is allowed below h_base */
    int heads[SCHEDULE_MAX_ALLOWED]; /* [n_heads] allowed head counts below h_base (h_base itself may appear) */
    int min_block;         /* >= 1 */
    int max_block;         /* >= min_block, or 0 = no bound */
    double min_baseline;   /* 0..1: the baseline run covers >= ceil(min_baseline*L) layers (and >= 1) */
} schedule_rules;

/* Which rules field a message is about (lets the CLI say "--min-block" and a spec say "rules.min_block"). */
typedef enum {
    SCHEDULE_F_NONE = 0, SCHEDULE_F_L, SCHEDULE_F_DMODEL, SCHEDULE_F_HBASE, SCHEDULE_F_MAX_HEAD_DIM,
    SCHEDULE_F_POW2, SCHEDULE_F_HEADS, SCHEDULE_F_MIN_BLOCK, SCHEDULE_F_MAX_BLOCK, SCHEDULE_F_MIN_BASELINE,
} schedule_field;

/* The defaults (the paper's 124M setting): L=12, d_model=768, h_base=0 (d/64), max_head_dim=256, pow2=0,
 * all heads, blocks 2..4, min_baseline=0.5. */
void schedule_rules_default(schedule_rules *r);

/* Checks the rules and resolves h_base=0 to d_model/64. On failure returns SCHEDULE_EINVAL, *field says which
 * field (may be NULL), and msg holds a sentence without the field's name, e.g. "must be in 1..4096 (got 0)";
 * r is then unchanged. A shape with no valid schedule at all is not an error here (count 0). */
int schedule_rules_resolve(schedule_rules *r, schedule_field *field, char *msg, size_t msglen);

/* The head counts allowed below h_base under resolved rules, ascending, into out[cap]; returns how many. */
int schedule_allowed_heads(const schedule_rules *r, int *out, int cap);

/* Minimum baseline-run length: max(1, ceil(min_baseline * L)). */
int schedule_min_baseline_len(const schedule_rules *r);

/* ---- validation ---------------------------------------------------------------------------------- */
typedef enum {
    SCHEDULE_R_LENGTH = 1,   /* schedule length != rules L */
    SCHEDULE_R_DIVIDES,      /* h_l does not divide d_model (layer) */
    SCHEDULE_R_ABOVE_BASE,   /* h_l > h_base (layer) */
    SCHEDULE_R_DECREASING,   /* h_l < h_{l-1} (layer) */
    SCHEDULE_R_LAST,         /* h_L != h_base */
    SCHEDULE_R_HEAD_DIM,     /* d_model/h_l > max_head_dim (layer, block) */
    SCHEDULE_R_POW2,         /* head dim not a power of two below the baseline run (layer, block) */
    SCHEDULE_R_HEADS,        /* head count not in the allowed list (layer, block) */
    SCHEDULE_R_BLOCK,        /* block length outside min_block..max_block (block, layers) */
    SCHEDULE_R_BASELINE,     /* baseline run shorter than the minimum (layers) */
} schedule_rule;

typedef struct schedule_violation {
    schedule_rule rule;
    int layer, layer_end;    /* 1-based layers concerned (equal for one layer); 0 when not about layers */
    int block;               /* 1-based index of the maximal run concerned; 0 when not about a block */
    char msg[200];           /* one line, e.g. "layer 3 (block 2): 5 heads do not divide d_model 768" */
} schedule_violation;

typedef struct schedule_report {
    int n;                   /* violations kept in v */
    int n_more;              /* further violations not kept */
    schedule_violation v[SCHEDULE_MAX_VIOLATIONS];
} schedule_report;

/* Checks heads[L] against the rules (rules->L = 0 means "take L from the schedule"; h_base=0 resolves as
 * usual). Fills *rep (may be NULL). Returns the number of violations (0 = valid), or SCHEDULE_EINVAL when the
 * rules themselves are bad (message in rep->v[0].msg when rep is given). */
int schedule_validate(const schedule_rules *r, const int *heads, int L, schedule_report *rep);

/* Only the hard rules (divides, <= h_base, non-decreasing, last = h_base, length = r->L): what an explicitly
 * listed schedule in a sweep spec must pass. Same return convention as schedule_validate. */
int schedule_validate_hard(const schedule_rules *r, const int *heads, int L, schedule_report *rep);

/* ---- enumeration, counting, sampling ------------------------------------------------------------- */
/* Called once per schedule in enumeration order with a scratch array (valid only during the call).
 * Return 0 to continue, anything else to stop the walk (that value is then returned by the walker). */
typedef int (*schedule_fn)(const int *heads, int L, void *ctx);

/* Walks every valid schedule in order. Returns 0 after the last one, the callback's non-zero value, or < 0. */
int schedule_enumerate(const schedule_rules *r, schedule_fn fn, void *ctx);

/* Exact number of valid schedules, computed by dynamic programming (O(allowed * L * block range)), never by
 * listing. Returns 0, SCHEDULE_EINVAL, or SCHEDULE_EOVERFLOW (then *count = max value). */
int schedule_count(const schedule_rules *r, schedule_count_t *count);

/* The rank-th schedule (0-based) of the enumeration order into heads[r->L]. SCHEDULE_ERANGE if rank >= count. */
int schedule_unrank(const schedule_rules *r, schedule_count_t rank, int *heads);

/* n distinct schedules drawn uniformly (every n-subset equally likely) with a PRNG seeded by seed, passed to fn
 * in enumeration order. The same rules, n and seed give the same schedules on every machine.
 * SCHEDULE_ERANGE if n > count (nothing is called then). n <= SCHEDULE_MAX_SAMPLE. */
#define SCHEDULE_MAX_SAMPLE 10000000
int schedule_sample(const schedule_rules *r, uint64_t n, uint64_t seed, schedule_fn fn, void *ctx);

/* ---- text ---------------------------------------------------------------------------------------- */
/* Canonical "3,3,6,6,..." into buf[len]. Returns the length written, or SCHEDULE_ERANGE if buf is too small
 * (buf then holds a truncated, NUL-terminated prefix). */
int schedule_format(const int *heads, int L, char *buf, size_t len);

/* Parses "3,3,6,6,8,8,12,12,12,12,12,12" (spaces allowed; "12x6", "12*6" or "12×6" repeats 12 six times) into
 * heads[cap]; *L gets the length. Returns 0 or SCHEDULE_EINVAL with a message naming the bad item. The one
 * schedule parser: `validate`, spec files, `prism-worker train --heads` (job_parse_heads) and the stored
 * canonical text (schedule_heads_json) all read schedules through it. */
int schedule_parse(const char *s, int *heads, int cap, int *L, char *err, size_t errlen);

/* The stored schedule text "3,3,6,6,12" as a JSON array of integers [3,3,6,6,12]; NULL, "" or a text schedule_parse
 * refuses gives []. New reference. */
json_t *schedule_heads_json(const char *heads);

/* Decimal text of a 128-bit count into buf (>= 40 bytes). Returns buf. */
char *schedule_count_str(schedule_count_t c, char *buf, size_t len);

/* 1 when every layer has heads[L-1] heads (the uniform baseline). */
int schedule_is_uniform(const int *heads, int L);

/* Maximal runs of equal heads: fills heads_out[i], len_out[i] (cap entries); returns the number of runs. */
int schedule_blocks(const int *heads, int L, int *heads_out, int *len_out, int cap);

/* The stable name of a rule ("divides", "block", ...) used in JSON output. */
const char *schedule_rule_name(schedule_rule rule);
#endif
