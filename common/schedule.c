/* schedule.c — head schedules: rules, validation, counting, enumeration, unranking and sampling.
 *
 * Design. Under the rules every valid schedule is a prefix of "blocks" (maximal runs of one head count
 * a_v < h_base, values strictly increasing from block to block, each min_block..max_block long) followed by the
 * baseline run of h_base that fills the remaining L-k layers, k <= Kmax = L - Bmin. So counting needs no
 * listing: with a[0..m) the allowed counts below h_base,
 *     F[j][k] = ways to fill exactly k layers with blocks whose values have index >= j
 *             = F[j+1][k] + sum_{len=lo..min(hi,k)} F[j+1][k-len],      F[m][0] = 1, F[m][k>0] = 0,
 *     T[j][p] = sum_{k=0..Kmax-p} F[j][k]  (completions after p layers when the next block uses index >= j),
 * and the count is T[0][0]. The walk order is descending lexicographic order of the sequence: at each block
 * boundary the baseline (h_base, the largest value) comes first, then larger values before smaller ones, and for
 * one value shorter blocks before longer ones (the next layer then holds a larger value). The same T table
 * ranks and unranks in that order, which gives exact uniform sampling: Floyd's algorithm draws n distinct
 * ranks in [0, count), we sort them and unrank each. Counts are unsigned 128-bit with saturating adds.
 */
#include "schedule.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_MAX (~(schedule_count_t)0)

void schedule_rules_default(schedule_rules *r) {
    memset(r, 0, sizeof *r);
    r->L = 12;
    r->d_model = 768;
    r->h_base = 0;
    r->max_head_dim = 256;
    r->pow2 = 0;
    r->n_heads = 0;
    r->min_block = 2;
    r->max_block = 4;
    r->min_baseline = 0.5;
}

static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

static int fail(schedule_field *field, schedule_field f, char *msg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail(schedule_field *field, schedule_field f, char *msg, size_t len, const char *fmt, ...) {
    if (field) *field = f;
    if (msg && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, len, fmt, ap);
        va_end(ap);
    }
    return SCHEDULE_EINVAL;
}

int schedule_rules_resolve(schedule_rules *r, schedule_field *field, char *msg, size_t msglen) {
    schedule_rules x = *r;
    if (field) *field = SCHEDULE_F_NONE;
    if (x.L < 1 || x.L > SCHEDULE_MAX_L)
        return fail(field, SCHEDULE_F_L, msg, msglen, "must be in 1..%d (got %d)", SCHEDULE_MAX_L, x.L);
    if (x.d_model < 1 || x.d_model > SCHEDULE_MAX_DMODEL)
        return fail(field, SCHEDULE_F_DMODEL, msg, msglen, "must be in 1..%d (got %d)", SCHEDULE_MAX_DMODEL,
                    x.d_model);
    if (x.h_base == 0) {
        if (x.d_model % 64)
            return fail(field, SCHEDULE_F_HBASE, msg, msglen,
                        "defaults to d_model/64, but %d/64 is not an integer: give it explicitly (a divisor of %d)",
                        x.d_model, x.d_model);
        x.h_base = x.d_model / 64;
    }
    if (x.h_base < 1 || x.h_base > x.d_model || x.d_model % x.h_base)
        return fail(field, SCHEDULE_F_HBASE, msg, msglen, "must be a divisor of d_model %d in 1..%d (got %d)",
                    x.d_model, x.d_model, x.h_base);
    if (x.max_head_dim < 0)
        return fail(field, SCHEDULE_F_MAX_HEAD_DIM, msg, msglen, "must be 0 (no bound) or >= 1 (got %d)",
                    x.max_head_dim);
    if (x.max_head_dim > 0 && x.d_model / x.h_base > x.max_head_dim)
        return fail(field, SCHEDULE_F_MAX_HEAD_DIM, msg, msglen,
                    "%d is below the baseline head dim %d (d_model %d / h_base %d), so no schedule is valid: "
                    "use 0 (no bound) or >= %d", x.max_head_dim, x.d_model / x.h_base, x.d_model, x.h_base,
                    x.d_model / x.h_base);
    if (x.pow2 != 0 && x.pow2 != 1)
        return fail(field, SCHEDULE_F_POW2, msg, msglen, "must be 0 or 1 (got %d)", x.pow2);
    if (x.n_heads < 0 || x.n_heads > SCHEDULE_MAX_ALLOWED)
        return fail(field, SCHEDULE_F_HEADS, msg, msglen, "at most %d head counts (got %d)", SCHEDULE_MAX_ALLOWED,
                    x.n_heads);
    for (int i = 0; i < x.n_heads; i++) {
        int h = x.heads[i];
        if (h < 1 || h > x.h_base)
            return fail(field, SCHEDULE_F_HEADS, msg, msglen, "%d is outside 1..h_base (%d)", h, x.h_base);
        if (x.d_model % h)
            return fail(field, SCHEDULE_F_HEADS, msg, msglen, "%d does not divide d_model %d", h, x.d_model);
        if (h == x.h_base) continue;
        if (x.max_head_dim > 0 && x.d_model / h > x.max_head_dim)
            return fail(field, SCHEDULE_F_HEADS, msg, msglen,
                        "%d heads give head dim %d, above max_head_dim %d (need >= %d heads, or raise the bound)",
                        h, x.d_model / h, x.max_head_dim, (x.d_model + x.max_head_dim - 1) / x.max_head_dim);
        if (x.pow2 && !is_pow2(x.d_model / h))
            return fail(field, SCHEDULE_F_HEADS, msg, msglen,
                        "%d heads give head dim %d, not a power of two (pow2 is on)", h, x.d_model / h);
    }
    if (x.min_block < 1 || x.min_block > SCHEDULE_MAX_L)
        return fail(field, SCHEDULE_F_MIN_BLOCK, msg, msglen, "must be in 1..%d (got %d)", SCHEDULE_MAX_L,
                    x.min_block);
    if (x.max_block != 0 && (x.max_block < x.min_block || x.max_block > SCHEDULE_MAX_L))
        return fail(field, SCHEDULE_F_MAX_BLOCK, msg, msglen, "must be 0 (no bound) or in %d..%d (min_block..%d), "
                    "got %d", x.min_block, SCHEDULE_MAX_L, SCHEDULE_MAX_L, x.max_block);
    if (!(x.min_baseline >= 0.0 && x.min_baseline <= 1.0))
        return fail(field, SCHEDULE_F_MIN_BASELINE, msg, msglen, "must be a fraction in 0..1 (got %g)",
                    x.min_baseline);
    *r = x;
    return SCHEDULE_OK;
}

int schedule_min_baseline_len(const schedule_rules *r) {
    /* ceil(f*L) computed so that 0.5*12 is exactly 6 and not 7 from rounding noise */
    double p = r->min_baseline * r->L;
    int n = (int)ceil(p - 1e-9);
    if (n < 1) n = 1;
    if (n > r->L) n = r->L;
    return n;
}

static int allowed(const schedule_rules *r, int h) {
    if (h < 1 || h >= r->h_base || r->d_model % h) return 0;
    int dim = r->d_model / h;
    if (r->max_head_dim > 0 && dim > r->max_head_dim) return 0;
    if (r->pow2 && !is_pow2(dim)) return 0;
    if (r->n_heads > 0) {
        int found = 0;
        for (int i = 0; i < r->n_heads; i++) found |= r->heads[i] == h;
        if (!found) return 0;
    }
    return 1;
}

int schedule_allowed_heads(const schedule_rules *r, int *out, int cap) {
    int n = 0;
    for (int h = 1; h < r->h_base; h++)
        if (allowed(r, h)) {
            if (n < cap) out[n] = h;
            n++;
        }
    return n;
}

/* ---- the counting table -------------------------------------------------------------------------- */
typedef struct table {
    schedule_rules r;     /* resolved */
    int m;                /* allowed values below h_base */
    int *a;               /* [m] ascending */
    int kmax;             /* most layers before the baseline run */
    int lo, hi;           /* block length range (hi clipped to kmax) */
    int overflow;         /* some entry saturated */
    schedule_count_t *T;  /* [(m+1) * (kmax+1)]: T[j][p] */
} table;

static schedule_count_t add_sat(schedule_count_t x, schedule_count_t y, int *ovf) {
    schedule_count_t s = x + y;
    if (s < x) { *ovf = 1; return COUNT_MAX; }
    return s;
}

#define TAB(t, j, p) ((t)->T[(size_t)(j) * ((t)->kmax + 1) + (p)])

static void table_free(table *t) {
    free(t->a);
    free(t->T);
    t->a = NULL;
    t->T = NULL;
}

static int table_init(table *t, const schedule_rules *rules) {
    int rc = SCHEDULE_ENOMEM;
    schedule_count_t *F = NULL;
    memset(t, 0, sizeof *t);
    t->r = *rules;
    if (schedule_rules_resolve(&t->r, NULL, NULL, 0) < 0) return SCHEDULE_EINVAL;
    t->m = schedule_allowed_heads(&t->r, NULL, 0);
    t->a = malloc(sizeof(int) * (t->m + 1));
    if (!t->a) goto out;
    schedule_allowed_heads(&t->r, t->a, t->m);
    t->kmax = t->r.L - schedule_min_baseline_len(&t->r);
    t->lo = t->r.min_block;
    t->hi = t->r.max_block == 0 || t->r.max_block > t->kmax ? t->kmax : t->r.max_block;
    size_t w = (size_t)t->kmax + 1;
    F = calloc(w * 2, sizeof *F);   /* two rows: F[j+1][*] and F[j][*] */
    t->T = calloc(w * (t->m + 1), sizeof *t->T);
    if (!F || !t->T) goto out;
    schedule_count_t *next = F, *cur = F + w;
    next[0] = 1;  /* F[m][*] */
    for (int j = t->m; j >= 0; j--) {
        if (j < t->m) {
            /* cur = F[j]: skip value j, or use it for len layers. A running window sum keeps this O(kmax). */
            schedule_count_t win = 0;
            int ovf = 0;
            for (int k = 0; k <= t->kmax; k++) {
                /* win = sum_{len=lo..hi, len<=k} next[k-len] = sum over q in [k-hi, k-lo] of next[q] */
                if (k - t->lo >= 0) win = add_sat(win, next[k - t->lo], &ovf);
                if (k - t->hi - 1 >= 0) {
                    schedule_count_t out_ = next[k - t->hi - 1];
                    if (!ovf) win -= out_;  /* exact while nothing saturated */
                }
                cur[k] = add_sat(next[k], win, &t->overflow);
                if (ovf) { t->overflow = 1; cur[k] = COUNT_MAX; }
            }
        } else {
            memcpy(cur, next, w * sizeof *cur);
        }
        /* T[j][p] = sum_{k=0..kmax-p} F[j][k] */
        schedule_count_t acc = 0;
        for (int p = t->kmax; p >= 0; p--) {
            acc = add_sat(acc, cur[t->kmax - p], &t->overflow);
            TAB(t, j, p) = acc;
        }
        schedule_count_t *tmp = next; next = cur; cur = tmp;
    }
    rc = SCHEDULE_OK;
out:
    free(F);
    if (rc < 0) table_free(t);
    return rc;
}

int schedule_count(const schedule_rules *r, schedule_count_t *count) {
    table t;
    int rc = table_init(&t, r);
    *count = 0;
    if (rc < 0) return rc;
    *count = TAB(&t, 0, 0);
    rc = t.overflow ? SCHEDULE_EOVERFLOW : SCHEDULE_OK;
    if (rc < 0) *count = COUNT_MAX;
    table_free(&t);
    return rc;
}

/* ---- enumeration --------------------------------------------------------------------------------- */
typedef struct walk {
    const table *t;
    int *heads;
    schedule_fn fn;
    void *ctx;
} walk;

static int walk_from(walk *w, int p, int j) {
    const table *t = w->t;
    int L = t->r.L, rc;
    for (int i = p; i < L; i++) w->heads[i] = t->r.h_base;
    if ((rc = w->fn(w->heads, L, w->ctx)) != 0) return rc;
    for (int v = t->m - 1; v >= j; v--)
        for (int len = t->lo; len <= t->hi && p + len <= t->kmax; len++) {
            for (int i = p; i < p + len; i++) w->heads[i] = t->a[v];
            if ((rc = walk_from(w, p + len, v + 1)) != 0) return rc;
        }
    return 0;
}

int schedule_enumerate(const schedule_rules *r, schedule_fn fn, void *ctx) {
    table t;
    int rc = table_init(&t, r);
    if (rc < 0) return rc;
    walk w = { &t, malloc(sizeof(int) * t.r.L), fn, ctx };
    if (!w.heads) rc = SCHEDULE_ENOMEM;
    else rc = walk_from(&w, 0, 0);
    free(w.heads);
    table_free(&t);
    return rc;
}

static int unrank_in(const table *t, schedule_count_t rank, int *heads) {
    int p = 0, j = 0;
    for (;;) {
        if (rank == 0) {
            for (int i = p; i < t->r.L; i++) heads[i] = t->r.h_base;
            return SCHEDULE_OK;
        }
        rank -= 1;
        int moved = 0;
        for (int v = t->m - 1; v >= j && !moved; v--)
            for (int len = t->lo; len <= t->hi && p + len <= t->kmax; len++) {
                schedule_count_t c = TAB(t, v + 1, p + len);
                if (rank < c) {
                    for (int i = p; i < p + len; i++) heads[i] = t->a[v];
                    p += len;
                    j = v + 1;
                    moved = 1;
                    break;
                }
                rank -= c;
            }
        if (!moved) return SCHEDULE_ERANGE;
    }
}

int schedule_unrank(const schedule_rules *r, schedule_count_t rank, int *heads) {
    table t;
    int rc = table_init(&t, r);
    if (rc < 0) return rc;
    if (t.overflow) rc = SCHEDULE_EOVERFLOW;
    else if (rank >= TAB(&t, 0, 0)) rc = SCHEDULE_ERANGE;
    else rc = unrank_in(&t, rank, heads);
    table_free(&t);
    return rc;
}

/* ---- sampling ------------------------------------------------------------------------------------ */
/* xoshiro256** seeded through splitmix64: fixed integer arithmetic, identical on every machine. */
typedef struct rng { uint64_t s[4]; } rng;

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static void rng_seed(rng *g, uint64_t seed) {
    for (int i = 0; i < 4; i++) g->s[i] = util_splitmix64(&seed);
}
static uint64_t rng_next(rng *g) {
    uint64_t *s = g->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
    return res;
}
/* uniform in [0, bound] by masked rejection (fewer than 2 draws expected) */
static schedule_count_t rng_upto(rng *g, schedule_count_t bound) {
    schedule_count_t mask = bound;
    for (int sh = 1; sh < 128; sh <<= 1) mask |= mask >> sh;
    for (;;) {
        schedule_count_t x = ((schedule_count_t)rng_next(g) << 64) | rng_next(g);
        if (mask >> 64 == 0) x = rng_next(g);
        x &= mask;
        if (x <= bound) return x;
    }
}

typedef struct rankset { schedule_count_t *slot; unsigned char *used; size_t cap, n; } rankset;

static size_t rank_hash(schedule_count_t x, size_t cap) {
    uint64_t h = (uint64_t)x ^ ((uint64_t)(x >> 64) * 0x9e3779b97f4a7c15ULL);
    h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33;
    return (size_t)h & (cap - 1);
}
/* inserts x; returns 1 if it was new */
static int rankset_add(rankset *s, schedule_count_t x) {
    size_t i = rank_hash(x, s->cap);
    while (s->used[i]) {
        if (s->slot[i] == x) return 0;
        i = (i + 1) & (s->cap - 1);
    }
    s->used[i] = 1;
    s->slot[i] = x;
    s->n++;
    return 1;
}

static int cmp_count(const void *a, const void *b) {
    schedule_count_t x = *(const schedule_count_t *)a, y = *(const schedule_count_t *)b;
    return x < y ? -1 : x > y;
}

int schedule_sample(const schedule_rules *r, uint64_t n, uint64_t seed, schedule_fn fn, void *ctx) {
    table t;
    rankset s = { 0 };
    schedule_count_t *sorted = NULL;
    int *heads = NULL;
    int rc = table_init(&t, r);
    if (rc < 0) return rc;
    schedule_count_t total = TAB(&t, 0, 0);
    if (t.overflow) { rc = SCHEDULE_EOVERFLOW; goto out; }
    if (n > total || n > SCHEDULE_MAX_SAMPLE) { rc = SCHEDULE_ERANGE; goto out; }
    rc = SCHEDULE_ENOMEM;
    s.cap = 16;
    while (s.cap < 2 * n) s.cap <<= 1;
    s.slot = malloc(s.cap * sizeof *s.slot);
    s.used = calloc(s.cap, 1);
    sorted = malloc((n ? n : 1) * sizeof *sorted);
    heads = malloc(sizeof(int) * t.r.L);
    if (!s.slot || !s.used || !sorted || !heads) goto out;
    /* Floyd: for i in [total-n, total): draw x in [0, i]; take x, or i when x is already taken. */
    rng g;
    rng_seed(&g, seed);
    for (schedule_count_t i = total - n; i < total; i++) {
        schedule_count_t x = rng_upto(&g, i);
        if (!rankset_add(&s, x)) rankset_add(&s, i);
    }
    size_t k = 0;
    for (size_t i = 0; i < s.cap; i++)
        if (s.used[i]) sorted[k++] = s.slot[i];
    qsort(sorted, k, sizeof *sorted, cmp_count);
    rc = 0;
    for (size_t i = 0; i < k && rc == 0; i++) {
        if ((rc = unrank_in(&t, sorted[i], heads)) < 0) break;
        rc = fn(heads, t.r.L, ctx);
    }
out:
    free(s.slot);
    free(s.used);
    free(sorted);
    free(heads);
    table_free(&t);
    return rc;
}

/* ---- validation ---------------------------------------------------------------------------------- */
static void report(schedule_report *rep, schedule_rule rule, int layer, int layer_end, int block,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void report(schedule_report *rep, schedule_rule rule, int layer, int layer_end, int block,
                   const char *fmt, ...) {
    if (!rep) return;
    if (rep->n >= SCHEDULE_MAX_VIOLATIONS) { rep->n_more++; return; }
    schedule_violation *v = &rep->v[rep->n++];
    v->rule = rule;
    v->layer = layer;
    v->layer_end = layer_end;
    v->block = block;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg, sizeof v->msg, fmt, ap);
    va_end(ap);
}

static const char *layers_str(char *buf, size_t len, int a, int b) {
    if (a == b) snprintf(buf, len, "layer %d", a);
    else snprintf(buf, len, "layers %d-%d", a, b);
    return buf;
}

static int validate(const schedule_rules *rules, const int *heads, int L, schedule_report *rep, int soft) {
    schedule_rules r = *rules;
    char msg[160];
    schedule_field f;
    if (rep) memset(rep, 0, sizeof *rep);
    int want_L = r.L;
    if (r.L == 0 || r.L != L) r.L = L;   /* resolve with the schedule's length; a mismatch is a violation */
    if (L < 1 || !heads || schedule_rules_resolve(&r, &f, msg, sizeof msg) < 0) {
        if (rep) {
            rep->n = 1;
            snprintf(rep->v[0].msg, sizeof rep->v[0].msg, "%s", L < 1 || !heads ? "empty schedule" : msg);
        }
        return SCHEDULE_EINVAL;
    }
    int before = rep ? rep->n + rep->n_more : 0, count = 0;
#define V(...) do { report(rep, __VA_ARGS__); count++; } while (0)
    if (want_L != 0 && want_L != L)
        V(SCHEDULE_R_LENGTH, 0, 0, 0, "length: the schedule has %d layers, the model has %d", L, want_L);
    /* hard rules, per layer; blocks are maximal runs of equal values */
    int nblk = 0;
    char where[64];
    for (int i = 0; i < L;) {
        int j = i;
        while (j + 1 < L && heads[j + 1] == heads[i]) j++;
        nblk++;
        int h = heads[i];
        layers_str(where, sizeof where, i + 1, j + 1);
        if (h < 1 || r.d_model % h)
            V(SCHEDULE_R_DIVIDES, i + 1, j + 1, nblk, "%s (block %d): %d heads do not divide d_model %d", where,
              nblk, h, r.d_model);
        else if (h > r.h_base)
            V(SCHEDULE_R_ABOVE_BASE, i + 1, j + 1, nblk, "%s (block %d): %d heads exceed h_base %d", where, nblk,
              h, r.h_base);
        if (i > 0 && heads[i] < heads[i - 1])
            V(SCHEDULE_R_DECREASING, i + 1, i + 1, nblk,
              "layer %d (block %d): %d heads after %d in layer %d: head counts must not decrease", i + 1, nblk, h,
              heads[i - 1], i);
        i = j + 1;
    }
    if (heads[L - 1] != r.h_base)
        V(SCHEDULE_R_LAST, L, L, nblk, "layer %d (block %d): the last layer has %d heads, must have h_base = %d", L,
          nblk, heads[L - 1], r.h_base);
    if (soft) {
        /* the baseline run: the first run of h_base (normally the final one; anything after it already broke
         * a hard rule, so the soft rules only look at the blocks before it) */
        int bstart = 0;
        while (bstart < L && heads[bstart] != r.h_base) bstart++;
        int bend = bstart;
        while (bend < L && heads[bend] == r.h_base) bend++;
        int blen = bend - bstart, need = schedule_min_baseline_len(&r), blk = 0;
        for (int i = 0; i < bstart;) {
            int j = i;
            while (j + 1 < bstart && heads[j + 1] == heads[i]) j++;
            blk++;
            int h = heads[i], len = j - i + 1;
            layers_str(where, sizeof where, i + 1, j + 1);
            if (h >= 1 && r.d_model % h == 0 && h <= r.h_base) {
                int dim = r.d_model / h;
                if (r.max_head_dim > 0 && dim > r.max_head_dim)
                    V(SCHEDULE_R_HEAD_DIM, i + 1, j + 1, blk, "%s (block %d): head dim %d (%d/%d) exceeds "
                      "max_head_dim %d", where, blk, dim, r.d_model, h, r.max_head_dim);
                if (r.pow2 && !is_pow2(dim))
                    V(SCHEDULE_R_POW2, i + 1, j + 1, blk, "%s (block %d): head dim %d (%d/%d) is not a power of "
                      "two (pow2)", where, blk, dim, r.d_model, h);
                if (r.n_heads > 0) {
                    int ok = 0;
                    for (int k = 0; k < r.n_heads; k++) ok |= r.heads[k] == h;
                    if (!ok) {
                        char list[SCHEDULE_MAX_ALLOWED * 8];
                        schedule_format(r.heads, r.n_heads, list, sizeof list);
                        V(SCHEDULE_R_HEADS, i + 1, j + 1, blk, "%s (block %d): %d heads are not in the allowed "
                          "list %s", where, blk, h, list);
                    }
                }
            }
            if (len < r.min_block || (r.max_block > 0 && len > r.max_block)) {
                char range[32];
                if (r.max_block > 0) snprintf(range, sizeof range, "%d..%d", r.min_block, r.max_block);
                else snprintf(range, sizeof range, ">= %d", r.min_block);
                V(SCHEDULE_R_BLOCK, i + 1, j + 1, blk, "block %d (%s): %d layer%s of %d heads, blocks before the "
                  "baseline run must have %s layers", blk, where, len, len == 1 ? "" : "s", h, range);
            }
            i = j + 1;
        }
        if (blen > 0 && blen < need)
            V(SCHEDULE_R_BASELINE, bstart + 1, bend, blk + 1, "baseline run (block %d, %s): %d layers of %d heads, "
              "needs at least %d (ceil(%g x %d))", blk + 1, layers_str(where, sizeof where, bstart + 1, bend), blen,
              r.h_base, need, r.min_baseline, L);
    }
#undef V
    (void)before;
    return count;
}

int schedule_validate(const schedule_rules *r, const int *heads, int L, schedule_report *rep) {
    return validate(r, heads, L, rep, 1);
}
int schedule_validate_hard(const schedule_rules *r, const int *heads, int L, schedule_report *rep) {
    return validate(r, heads, L, rep, 0);
}

const char *schedule_rule_name(schedule_rule rule) {
    switch (rule) {
    case SCHEDULE_R_LENGTH: return "length";
    case SCHEDULE_R_DIVIDES: return "divides";
    case SCHEDULE_R_ABOVE_BASE: return "above_base";
    case SCHEDULE_R_DECREASING: return "non_decreasing";
    case SCHEDULE_R_LAST: return "last_is_base";
    case SCHEDULE_R_HEAD_DIM: return "max_head_dim";
    case SCHEDULE_R_POW2: return "pow2";
    case SCHEDULE_R_HEADS: return "heads";
    case SCHEDULE_R_BLOCK: return "block";
    case SCHEDULE_R_BASELINE: return "min_baseline";
    }
    return "?";
}

/* ---- text ---------------------------------------------------------------------------------------- */
int schedule_format(const int *heads, int L, char *buf, size_t len) {
    /* hand-rolled decimal: this is the inner loop of `enumerate` (millions of lines) */
    size_t n = 0;
    if (len == 0) return SCHEDULE_ERANGE;
    for (int i = 0; i < L; i++) {
        char tmp[16];
        int k = 0;
        unsigned v = heads[i] < 0 ? 0u - (unsigned)heads[i] : (unsigned)heads[i];
        do { tmp[k++] = (char)('0' + v % 10); v /= 10; } while (v);
        if (heads[i] < 0) tmp[k++] = '-';
        if (n + (size_t)k + (i > 0) >= len) { buf[n] = 0; return SCHEDULE_ERANGE; }
        if (i > 0) buf[n++] = ',';
        while (k) buf[n++] = tmp[--k];
    }
    buf[n] = 0;
    return (int)n;
}

int schedule_parse(const char *s, int *heads, int cap, int *L, char *err, size_t errlen) {
    int n = 0, item = 0;
    const char *p = s;
    *L = 0;
    if (!s) return fail(NULL, 0, err, errlen, "no schedule given");
    for (;;) {
        item++;
        while (*p == ' ' || *p == '\t') p++;
        if (*p < '0' || *p > '9')
            return fail(NULL, 0, err, errlen, "item %d: expected a positive head count at \"%.20s\"", item, p);
        long v = 0;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p++ - '0');
            if (v > SCHEDULE_MAX_DMODEL) return fail(NULL, 0, err, errlen, "item %d: head count too large", item);
        }
        if (v < 1) return fail(NULL, 0, err, errlen, "item %d: head counts must be >= 1 (got %ld)", item, v);
        long rep = 1;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == 'x' || *p == 'X' || *p == '*' || (p[0] == '\xc3' && p[1] == '\x97')) {   /* "12x6", "12*6", "12×6" */
            p += *p == '\xc3' ? 2 : 1;
            while (*p == ' ' || *p == '\t') p++;
            if (*p < '0' || *p > '9')
                return fail(NULL, 0, err, errlen, "item %d: expected a repeat count after 'x'", item);
            rep = 0;
            while (*p >= '0' && *p <= '9') {
                rep = rep * 10 + (*p++ - '0');
                if (rep > SCHEDULE_MAX_L) return fail(NULL, 0, err, errlen, "item %d: repeat count too large", item);
            }
            if (rep < 1) return fail(NULL, 0, err, errlen, "item %d: repeat count must be >= 1", item);
            while (*p == ' ' || *p == '\t') p++;
        }
        for (long k = 0; k < rep; k++) {
            if (n >= cap) return fail(NULL, 0, err, errlen, "more than %d layers", cap);
            heads[n++] = (int)v;
        }
        if (*p == 0) break;
        if (*p != ',')
            return fail(NULL, 0, err, errlen, "item %d: unexpected \"%.20s\" (write head counts separated by commas)",
                        item, p);
        p++;
    }
    *L = n;
    return SCHEDULE_OK;
}

char *schedule_count_str(schedule_count_t c, char *buf, size_t len) {
    char tmp[48];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + (int)(c % 10));
        c /= 10;
    } while (c);
    size_t k = 0;
    while (n > 0 && k + 1 < len) buf[k++] = tmp[--n];
    if (len) buf[k] = 0;
    return buf;
}

int schedule_is_uniform(const int *heads, int L) {
    for (int i = 0; i < L; i++)
        if (heads[i] != heads[L - 1]) return 0;
    return L > 0;
}

int schedule_blocks(const int *heads, int L, int *heads_out, int *len_out, int cap) {
    int n = 0;
    for (int i = 0; i < L;) {
        int j = i;
        while (j + 1 < L && heads[j + 1] == heads[i]) j++;
        if (n < cap) { heads_out[n] = heads[i]; len_out[n] = j - i + 1; }
        n++;
        i = j + 1;
    }
    return n;
}

json_t *schedule_heads_json(const char *heads) {
    int h[SCHEDULE_MAX_L], L = 0;
    char why[160];
    json_t *a = json_array();
    if (heads && schedule_parse(heads, h, SCHEDULE_MAX_L, &L, why, sizeof why) < 0) L = 0;
    for (int l = 0; l < L; l++) json_array_append_new(a, json_integer(h[l]));
    return a;
}
