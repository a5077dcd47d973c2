/* point.c — the metrics point's builder and parser (point.h).
 *
 * Design: the optional numbers are one table (point.h's POINT_OPT_NUMS: key, flag, value) that the parser reads and
 * the server's metrics insert is built from (orchestrator/queue.c); the builder writes the keys in the metrics.jsonl
 * order point.h states. The error messages are the ones the server always gave (tests and clients match them).
 */
#include "point.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct opt_num { const char *key; size_t has, val; };
#define OPT(k, f, only) { POINT_KEY_##k, offsetof(metric_point, has_##f), offsetof(metric_point, f) },
static const struct opt_num OPTS[] = { POINT_OPT_NUMS(OPT) };
#define FLAG(p, o) (*(int *)((char *)(p) + (o)->has))
#define VAL(p, o) (*(double *)((char *)(p) + (o)->val))

void point_init(metric_point *p) {
    memset(p, 0, sizeof *p);
    p->step = -1;
}

json_t *point_to_json(const metric_point *p) {
    if (!p->has_train_loss && !p->has_val_loss) return NULL;
    json_t *o = json_object();
    if (!o) return NULL;
    int bad = json_object_set_new(o, POINT_KEY_STEP, json_integer(p->step));
    if (p->has_train_loss) bad |= json_object_set_new(o, POINT_KEY_TRAIN_LOSS, json_real(p->train_loss));
    if (p->has_val_loss) bad |= json_object_set_new(o, POINT_KEY_VAL_LOSS, json_real(p->val_loss));
    if (p->has_lr) bad |= json_object_set_new(o, POINT_KEY_LR, json_real(p->lr));
    if (p->has_grad_norm) bad |= json_object_set_new(o, POINT_KEY_GRAD_NORM, json_real(p->grad_norm));
    if (p->has_tokens) bad |= json_object_set_new(o, POINT_KEY_TOKENS, json_integer(p->tokens));
    if (p->has_tok_per_s) bad |= json_object_set_new(o, POINT_KEY_TOK_PER_S, json_real(p->tok_per_s));
    if (p->extra) bad |= json_object_set_new(o, POINT_KEY_EXTRA, json_deep_copy(p->extra));
    if (p->has_val_loss_se) bad |= json_object_set_new(o, POINT_KEY_VAL_LOSS_SE, json_real(p->val_loss_se));
    if (bad) { json_decref(o); return NULL; }
    return o;
}

int point_from_json(const json_t *o, metric_point *p, const char *where, char *err, size_t errlen) {
    point_init(p);
    if (!json_is_object(o)) { snprintf(err, errlen, "%s: must be an object", where); return -1; }
    json_t *st = json_object_get(o, POINT_KEY_STEP), *tl = json_object_get(o, POINT_KEY_TRAIN_LOSS),
           *vl = json_object_get(o, POINT_KEY_VAL_LOSS), *tk = json_object_get(o, POINT_KEY_TOKENS);
    if (!json_is_integer(st) || json_integer_value(st) < 0) {
        snprintf(err, errlen, "%s.step: must be an integer >= 0", where);
        return -1;
    }
    if (json_integer_value(st) > POINT_MAX_STEP) { snprintf(err, errlen, "%s.step: must be at most 2^40", where); return -1; }
    if (!tl && !vl) { snprintf(err, errlen, "%s: needs train_loss or val_loss", where); return -1; }
    if ((tl && !json_is_number(tl)) || (vl && !json_is_number(vl))) {
        snprintf(err, errlen, "%s: train_loss/val_loss must be numbers", where);
        return -1;
    }
    p->step = json_integer_value(st);
    if ((p->has_train_loss = tl != NULL)) p->train_loss = json_number_value(tl);
    if ((p->has_val_loss = vl != NULL)) p->val_loss = json_number_value(vl);
    for (size_t k = 0; k < sizeof OPTS / sizeof OPTS[0]; k++) {
        json_t *v = json_object_get(o, OPTS[k].key);
        if (v && !json_is_number(v) && !json_is_null(v)) {
            snprintf(err, errlen, "%s: %s must be a number", where, OPTS[k].key);
            return -1;
        }
        if ((FLAG(p, &OPTS[k]) = json_is_number(v))) VAL(p, &OPTS[k]) = json_number_value(v);
    }
    if (tk && !json_is_integer(tk) && !json_is_null(tk)) { snprintf(err, errlen, "%s: tokens must be an integer", where); return -1; }
    if ((p->has_tokens = json_is_integer(tk))) p->tokens = json_integer_value(tk);
    json_t *ex = json_object_get(o, POINT_KEY_EXTRA);
    if (ex && !json_is_null(ex)) {
        if (point_extra_check(ex, where, err, errlen) < 0) return -1;
        if (json_object_size(ex)) p->extra = ex;   /* {}: none */
    }
    /* every number as the job's own bounds allow (a cross-entropy, the job's lr range): 1e308 is not a loss */
    const struct { int has; double v, lo, hi; const char *key; } b[] = {
        {p->has_train_loss, p->train_loss, 0, POINT_MAX_LOSS, POINT_KEY_TRAIN_LOSS},
        {p->has_val_loss, p->val_loss, 0, POINT_MAX_LOSS, POINT_KEY_VAL_LOSS},
        {p->has_lr, p->lr, 0, 10, POINT_KEY_LR},
        {p->has_grad_norm, p->grad_norm, 0, 1e30, POINT_KEY_GRAD_NORM},
        {p->has_tok_per_s, p->tok_per_s, 0, 1e12, POINT_KEY_TOK_PER_S},
        {p->has_val_loss_se, p->val_loss_se, 0, POINT_MAX_LOSS, POINT_KEY_VAL_LOSS_SE},
        {p->has_tokens, (double)p->tokens, 0, 9.2e18, POINT_KEY_TOKENS}};
    for (size_t k = 0; k < sizeof b / sizeof b[0]; k++)
        if (b[k].has && !(b[k].v >= b[k].lo && b[k].v <= b[k].hi)) {
            snprintf(err, errlen, "%s.%s: %g is outside [%g, %g]", where, b[k].key, b[k].v, b[k].lo, b[k].hi);
            return -1;
        }
    return 0;
}

/* A name of an extra metric: [A-Za-z0-9_./-]{1,POINT_EXTRA_NAME_MAX}; a TensorBoard tag, a CSV header and a page
 * label as it is, with nothing to escape. */
static int extra_name_ok(const char *k) {
    size_t n = strlen(k);
    if (n < 1 || n > POINT_EXTRA_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = k[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '/' || c == '-'))
            return 0;
    }
    return 1;
}

int point_extra_check(const json_t *extra, const char *where, char *err, size_t errlen) {
    if (!json_is_object(extra)) {
        snprintf(err, errlen, "%s.extra: must be an object {name: number}", where);
        return -1;
    }
    size_t n = json_object_size(extra);
    if (n > POINT_EXTRA_MAX) {
        snprintf(err, errlen, "%s.extra: %zu names: at most %d", where, n, POINT_EXTRA_MAX);
        return -1;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)extra, k, v) {
        if (!extra_name_ok(k)) {
            char shown[POINT_EXTRA_NAME_MAX + 1];   /* the name's first bytes, its printable ones only */
            size_t m = 0;
            for (const char *c = k; *c && m < POINT_EXTRA_NAME_MAX; c++) shown[m++] = (*c >= 0x20 && *c < 0x7f) ? *c : '?';
            shown[m] = 0;
            snprintf(err, errlen, "%s.extra: name \"%s\"%s: names are 1 to %d characters of A-Z a-z 0-9 _ . / -", where,
                     shown, strlen(k) > POINT_EXTRA_NAME_MAX ? "..." : "", POINT_EXTRA_NAME_MAX);
            return -1;
        }
        double x = json_is_number(v) ? json_number_value(v) : NAN;
        if (!json_is_number(v) || !isfinite(x) || fabs(x) > POINT_EXTRA_ABS_MAX) {
            snprintf(err, errlen, "%s.extra.%s: must be a finite number", where, k);
            return -1;
        }
    }
    return 0;
}
