/* point.c — the metrics point's builder and parser (point.h).
 *
 * Design: every key is one row of point.h's POINT_FIELDS (class, flag, value, bounds, which trainer lines carry it),
 * made a table here (POINT_KEYS) that the builder, the parser's type and bounds checks, the worker's trainer-line
 * checks (worker/extrun_line.c) and `prism-worker schema --json` loop over; the server's metrics insert is built from its
 * OPT rows (POINT_OPT_NUMS, orchestrator/queue.c). The builder writes the rows in order: the metrics.jsonl format. The error messages are the ones the server always gave (tests and clients match them).
 */
#include "point.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define HAS_STEP(f) 0
#define HAS_LOSS(f) offsetof(metric_point, has_##f)
#define HAS_OPT(f) offsetof(metric_point, has_##f)
#define HAS_TOKENS(f) offsetof(metric_point, has_##f)
#define HAS_EXTRA(f) 0
#define ROW(X, cls, K, f, only, lo, hi, lines) \
    { POINT_KEY_##K, POINT_C_##cls, only, lines, lo, hi, HAS_##cls(f), offsetof(metric_point, f) },
const point_key POINT_KEYS[] = { POINT_FIELDS(ROW, _) };
const int POINT_NKEYS = (int)(sizeof POINT_KEYS / sizeof POINT_KEYS[0]);
#define FLAG(p, k) (*(int *)((char *)(p) + (k)->has))
#define CFLAG(p, k) (*(const int *)((const char *)(p) + (k)->has))
#define VAL(p, k) (*(double *)((char *)(p) + (k)->val))
#define CVAL(p, k) (*(const double *)((const char *)(p) + (k)->val))

void point_init(metric_point *p) {
    memset(p, 0, sizeof *p);
    p->step = -1;
}

/* One present key of p as a new JSON value; NULL when out of memory. */
static json_t *key_value(const metric_point *p, const point_key *k) {
    switch (k->cls) {
    case POINT_C_STEP: return json_integer(p->step);
    case POINT_C_TOKENS: return CFLAG(p, k) ? json_integer(p->tokens) : NULL;
    case POINT_C_EXTRA: return p->extra ? json_deep_copy(p->extra) : NULL;
    default: return CFLAG(p, k) ? json_real(CVAL(p, k)) : NULL;
    }
}

json_t *point_to_json(const metric_point *p) {
    if (!p->has_train_loss && !p->has_val_loss) return NULL;
    json_t *o = json_object();
    if (!o) return NULL;
    int bad = 0;
    for (int i = 0; i < POINT_NKEYS; i++) {
        const point_key *k = &POINT_KEYS[i];
        int present = k->cls == POINT_C_STEP || (k->cls == POINT_C_EXTRA ? p->extra != NULL : CFLAG(p, k));
        if (present) bad |= json_object_set_new(o, k->key, key_value(p, k));
    }
    if (bad) { json_decref(o); return NULL; }
    return o;
}

int point_equal(const metric_point *a, const metric_point *b) {
    for (int i = 0; i < POINT_NKEYS; i++) {
        const point_key *k = &POINT_KEYS[i];
        switch (k->cls) {
        case POINT_C_STEP: if (a->step != b->step) return 0; break;
        case POINT_C_EXTRA: if (!a->extra != !b->extra || (a->extra && !json_equal(a->extra, b->extra))) return 0; break;
        case POINT_C_TOKENS: if (CFLAG(a, k) != CFLAG(b, k) || (CFLAG(a, k) && a->tokens != b->tokens)) return 0; break;
        default:
            if (CFLAG(a, k) != CFLAG(b, k)) return 0;
            if (CFLAG(a, k) && !(CVAL(a, k) == CVAL(b, k) || (isnan(CVAL(a, k)) && isnan(CVAL(b, k))))) return 0;
        }
    }
    return 1;
}

json_t *point_schema_json(void) {
    static const char *const cls[] = {"integer", "number", "number", "integer", "object"};
    static const char *const only[] = {"any", "train", "val"};
    json_t *a = json_array();
    for (int i = 0; a && i < POINT_NKEYS; i++) {
        const point_key *k = &POINT_KEYS[i];
        json_t *lines = json_array();
        if (lines && (k->lines & POINT_ON_TRAIN)) json_array_append_new(lines, json_string("train"));
        if (lines && (k->lines & POINT_ON_VAL)) json_array_append_new(lines, json_string("val"));
        json_t *r = json_pack("{s:s, s:s, s:s, s:o, s:s}", "key", k->key, "kind", cls[k->cls],
                              "required", k->cls == POINT_C_STEP ? "yes" : k->cls == POINT_C_LOSS ? "one of the losses" : "no",
                              "lines", lines, "stored_on", only[k->only]);
        if (r && k->cls != POINT_C_EXTRA) {
            json_object_set_new(r, "min", json_real(k->lo));
            json_object_set_new(r, "max", json_real(k->hi));
        }
        if (!r || json_array_append_new(a, r) < 0) { json_decref(a); a = NULL; }
    }
    return a;
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
    for (int i = 0; i < POINT_NKEYS; i++) {
        const point_key *k = &POINT_KEYS[i];
        if (k->cls != POINT_C_OPT) continue;
        json_t *v = json_object_get(o, k->key);
        if (v && !json_is_number(v) && !json_is_null(v)) {
            snprintf(err, errlen, "%s: %s must be a number", where, k->key);
            return -1;
        }
        if ((FLAG(p, k) = json_is_number(v))) VAL(p, k) = json_number_value(v);
    }
    if (tk && !json_is_integer(tk) && !json_is_null(tk)) { snprintf(err, errlen, "%s: tokens must be an integer", where); return -1; }
    if ((p->has_tokens = json_is_integer(tk))) p->tokens = json_integer_value(tk);
    json_t *ex = json_object_get(o, POINT_KEY_EXTRA);
    if (ex && !json_is_null(ex)) {
        if (point_extra_check(ex, where, err, errlen) < 0) return -1;
        if (json_object_size(ex)) p->extra = ex;   /* {}: none */
    }
    /* every number as the job's own bounds allow (a cross-entropy, the job's lr range): 1e308 is not a loss */
    for (int i = 0; i < POINT_NKEYS; i++) {
        const point_key *k = &POINT_KEYS[i];
        if (k->cls == POINT_C_STEP || k->cls == POINT_C_EXTRA || !FLAG(p, k)) continue;
        double v = k->cls == POINT_C_TOKENS ? (double)p->tokens : VAL(p, k);
        if (!(v >= k->lo && v <= k->hi)) {
            snprintf(err, errlen, "%s.%s: %g is outside [%g, %g]", where, k->key, v, k->lo, k->hi);
            return -1;
        }
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
