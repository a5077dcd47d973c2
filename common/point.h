/* point.h — one metrics point: a line of a job's metrics.jsonl and an element of POST /api/v1/jobs/{id}/metrics'
 * "points", one type both sides share (the worker builds it, the orchestrator parses it), as lease.h is for the
 * lease.
 *
 *   {"step": 41, "train_loss": 3.21, "lr": 6e-4, "grad_norm": 0.9, "tokens": 172032, "tok_per_s": 51234.5}
 *   {"step": 400, "val_loss": 3.05, "val_loss_se": 0.004}  (a val point; the last one may carry "zero_shot")
 *
 * Keys (POINT_KEY_*): step (integer 0..POINT_MAX_STEP, required), train_loss and val_loss (numbers; at least
 * one), lr, grad_norm, tok_per_s, val_loss_se (numbers or null), tokens (integer or null), extra (an external
 * trainer's own metrics: an object {NAME: number}, or null; point_extra_check's bounds). Other keys ("zero_shot") are the
 * writer's and the reader ignores them; there are no aliases.
 *
 * Contract.
 * - point_init(p): no step (-1), no value.
 * - point_to_json(p): a new object (caller decrefs) with the keys p has, in the order above; NULL when out of
 *   memory or p has neither loss.
 * - point_from_json(o, p, where, err, errlen): o borrowed. Returns 0 with p filled, or -1 with p unspecified and
 *   err "WHERE.step: must be an integer >= 0" / "WHERE: grad_norm must be a number" (WHERE: e.g. "points[3]",
 *   naming the point and its key). Nothing to free.
 * - point_extra_check(extra, where, err, errlen): the one check of an `extra` object, the worker's (an external
 *   trainer's train/val/result lines, worker/extrun_line.c) and the server's (the metrics route, a result at complete):
 *   an object of at most POINT_EXTRA_MAX names ({} is none) matching [A-Za-z0-9_./-]{1,POINT_EXTRA_NAME_MAX}, each a finite number
 *   in [-POINT_EXTRA_ABS_MAX, POINT_EXTRA_ABS_MAX]. Returns 0, or -1 with err "WHERE.extra: ..." naming the name.
 *   A point's extra is borrowed from the parsed object (metric_point.extra; NULL when absent or null): it lives
 *   as long as that object. point_to_json writes a copy of it.
 * Thread-safe; no globals.
 */
#ifndef PRISM_POINT_H
#define PRISM_POINT_H
#include <jansson.h>
#include <stddef.h>

#define POINT_MAX_STEP (1LL << 40)   /* tokens = (step + 1) x B x T x grad_accum stays far below 2^63 */
#define POINT_MAX_LOSS 1e6           /* a cross-entropy in nats: a diverged run's loss is far below, 1e308 is noise */

#define POINT_KEY_STEP "step"
#define POINT_KEY_TRAIN_LOSS "train_loss"
#define POINT_KEY_VAL_LOSS "val_loss"
#define POINT_KEY_LR "lr"
#define POINT_KEY_GRAD_NORM "grad_norm"
#define POINT_KEY_TOKENS "tokens"
#define POINT_KEY_TOK_PER_S "tok_per_s"
#define POINT_KEY_EXTRA "extra"

#define POINT_EXTRA_MAX 16          /* names in one extra object */
#define POINT_EXTRA_NAME_MAX 64     /* bytes of a name */
#define POINT_EXTRA_ABS_MAX 1e300   /* a finite number, printable and parseable again */
#define POINT_KEY_VAL_LOSS_SE "val_loss_se"   /* the val loss's standard error over its val batches */

/* The keys of a point, one row each, in the metrics.jsonl order (point_to_json writes them so):
 *   R(X, CLASS, NAME, field, only, lo, hi, lines)
 * CLASS: STEP (the integer step, required), LOSS (train_loss / val_loss: a number, at least one of them), OPT (an
 * optional number: the double `field` with its flag `has_field`, and the metrics table's column of the key
 * POINT_KEY_NAME, orchestrator/queue.c stores every one), TOKENS (an optional integer), EXTRA (the trainer's own
 * metrics). only: which kind of point the server keeps it on (POINT_ANY, POINT_TRAIN_ONLY, POINT_VAL_ONLY; on the
 * other kind it is stored NULL). [lo, hi]: the bounds point_from_json checks. lines: the external trainer's lines
 * that may carry it (POINT_ON_TRAIN, POINT_ON_VAL: worker/extrun_line.c checks them by these rows, and
 * `prism-worker schema --json` prints them for trainers/torch/prism_protocol.py's test). A new metric is one OPT row
 * here, its POINT_KEY_NAME, and its column (a migration, sql/NNN_NAME.sql); docs/CONTRIBUTING.md has the list. */
enum { POINT_ANY = 0, POINT_TRAIN_ONLY = 1, POINT_VAL_ONLY = 2 };
enum { POINT_ON_TRAIN = 1, POINT_ON_VAL = 2 };
#define POINT_FIELDS(R, X) \
    R(X, STEP, STEP, step, POINT_ANY, 0, POINT_MAX_STEP, POINT_ON_TRAIN | POINT_ON_VAL) \
    R(X, LOSS, TRAIN_LOSS, train_loss, POINT_TRAIN_ONLY, 0, POINT_MAX_LOSS, POINT_ON_TRAIN) \
    R(X, LOSS, VAL_LOSS, val_loss, POINT_VAL_ONLY, 0, POINT_MAX_LOSS, POINT_ON_VAL) \
    R(X, OPT, LR, lr, POINT_ANY, 0, 10, POINT_ON_TRAIN) \
    R(X, OPT, GRAD_NORM, grad_norm, POINT_TRAIN_ONLY, 0, 1e30, POINT_ON_TRAIN) \
    R(X, TOKENS, TOKENS, tokens, POINT_ANY, 0, 9.2e18, POINT_ON_TRAIN) \
    R(X, OPT, TOK_PER_S, tok_per_s, POINT_ANY, 0, 1e12, POINT_ON_TRAIN) \
    R(X, EXTRA, EXTRA, extra, POINT_ANY, 0, 0, POINT_ON_TRAIN | POINT_ON_VAL) \
    R(X, OPT, VAL_LOSS_SE, val_loss_se, POINT_VAL_ONLY, 0, POINT_MAX_LOSS, POINT_ON_VAL)

/* The OPT rows alone as X(NAME, field, only): the optional numbers (the metrics insert's columns, queue.c). */
#define POINT__OPT_STEP(X, K, f, only)
#define POINT__OPT_LOSS(X, K, f, only)
#define POINT__OPT_TOKENS(X, K, f, only)
#define POINT__OPT_EXTRA(X, K, f, only)
#define POINT__OPT_OPT(X, K, f, only) X(K, f, only)
#define POINT__PICK_OPT(X, cls, K, f, only, lo, hi, lines) POINT__OPT_##cls(X, K, f, only)
#define POINT_OPT_NUMS(X) POINT_FIELDS(POINT__PICK_OPT, X)
#define POINT__MEMBER(K, f, only) int has_##f; double f;

typedef struct metric_point {
    long long step;
    int has_train_loss, has_val_loss, has_tokens;
    double train_loss, val_loss;
    long long tokens;
    const json_t *extra;   /* borrowed: the parsed object's "extra", or the builder's; NULL: none */
    POINT_OPT_NUMS(POINT__MEMBER)   /* int has_lr; double lr; ... one pair per OPT row */
} metric_point;

/* A point's key as a row (point.c's table of POINT_FIELDS): what point_to_json, point_from_json, the worker's
 * trainer-line checks and `prism-worker schema --json` loop over. */
enum { POINT_C_STEP, POINT_C_LOSS, POINT_C_OPT, POINT_C_TOKENS, POINT_C_EXTRA };
typedef struct point_key {
    const char *key;
    int cls, only, lines;      /* POINT_C_*, POINT_ANY.., POINT_ON_* */
    double lo, hi;
    size_t has, val;           /* offsets in metric_point of the flag (0: none, STEP and EXTRA) and the value */
} point_key;
extern const point_key POINT_KEYS[];
extern const int POINT_NKEYS;
/* 1 when a and b have the same keys with the same values (NaN equal to NaN; extra by content), row by row. */
int point_equal(const metric_point *a, const metric_point *b);
/* The rows as JSON (`prism-worker schema --json`'s "point"): a new array, NULL when out of memory. */
json_t *point_schema_json(void);

void point_init(metric_point *p);
json_t *point_to_json(const metric_point *p);
int point_from_json(const json_t *o, metric_point *p, const char *where, char *err, size_t errlen);
int point_extra_check(const json_t *extra, const char *where, char *err, size_t errlen);
#endif
