/* zeroshot.c — zero-shot scoring of multiple-choice eval files through the model's forward pass (zeroshot.h).
 *
 * Design: one pass over the examples fills rows of a B × T micro-batch, one completion per row (inputs: the kept
 * context and the completion without its last token; targets: shifted by one). When the batch is full it runs
 * forward_losses once and each row's scored positions (those whose target is a completion token) are summed in
 * double into that completion's slot. An example is decided as soon as its last completion is scored, so memory
 * is the batch plus one (sum, length) pair per completion of the examples in flight; zeroshot_decide makes the
 * three argmin decisions (per sum, per token, per character) so tests can check it on hand-made items.
 */
#include "zeroshot.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int zeroshot_layout(int ctx_len, int comp_len, int T, int *keep) {
    if (comp_len > T) return -1;
    int k = T + 1 - comp_len;        /* inputs = keep + comp_len − 1 <= T */
    *keep = ctx_len < k ? ctx_len : k;
    return 0;
}

struct row { int ex, comp, first, count; };   /* example slot, completion, first scored position, positions */

struct scorer {
    const model_ops *ops;
    model *m;
    int B, T, nrow;
    int *in, *tg;                 /* (B*T) */
    float *loss;                  /* (B*T) */
    struct row *rows;             /* (B) */
    /* examples in flight: a ring indexed by example number mod cap */
    int cap;
    double *sum;                  /* (cap * EVALFILE_MAX_COMPLETIONS) */
    int *left;                    /* (cap) completions still to score */
    struct evalfile_example *exs; /* (cap) */
    struct zeroshot_result *res;
};

static double per_char(double sum, int chars) { return chars > 0 ? sum / chars : INFINITY; }

void zeroshot_decide(const double *sum, const int *toks, const int *chars, int n, int *best, int *best_norm,
                     int *best_char) {
    int b = 0, bn = 0, bc = 0;
    for (int c = 1; c < n; c++) {
        if (sum[c] < sum[b]) b = c;
        if (sum[c] / toks[c] < sum[bn] / toks[bn]) bn = c;
        if (chars && per_char(sum[c], chars[c]) < per_char(sum[bc], chars[bc])) bc = c;
    }
    *best = b;
    *best_norm = bn;
    *best_char = chars ? bc : -1;
}

static void decide(struct scorer *s, int slot) {
    const struct evalfile_example *ex = &s->exs[slot];
    const double *sum = s->sum + (size_t)slot * EVALFILE_MAX_COMPLETIONS;
    int best, best_norm, best_char;
    zeroshot_decide(sum, ex->comp_len, s->res->has_char ? ex->comp_chars : NULL, ex->ncomp, &best, &best_norm, &best_char);
    s->res->n++;
    s->res->correct += best == ex->label;
    s->res->correct_norm += best_norm == ex->label;
    s->res->correct_char += best_char == ex->label;
}

static int flush(struct scorer *s, char *err, size_t errlen) {
    if (s->nrow == 0) return 0;
    int B = s->nrow, T = 1;
    /* the forward runs on the longest row of this batch (rounded up to 8), not the whole window: causal
     * attention makes a row's losses independent of what follows it, and most rows are far shorter than T */
    for (int r = 0; r < B; r++) if (s->rows[r].first + s->rows[r].count > T) T = s->rows[r].first + s->rows[r].count;
    T = (T + 7) / 8 * 8;
    if (T > s->T) T = s->T;
    if (T < s->T)
        for (int r = 1; r < B; r++) {
            memmove(s->in + (size_t)r * T, s->in + (size_t)r * s->T, (size_t)T * sizeof *s->in);
            memmove(s->tg + (size_t)r * T, s->tg + (size_t)r * s->T, (size_t)T * sizeof *s->tg);
        }
    if (s->ops->forward_losses(s->m, s->in, s->tg, B, T, s->loss)) {
        const char *e = s->ops->error ? s->ops->error(s->m) : NULL;
        snprintf(err, errlen, "zero-shot forward failed: %s", e && *e ? e : "(no detail from the backend)");
        return -3;
    }
    for (int r = 0; r < B; r++) {
        const struct row *w = &s->rows[r];
        double acc = 0;
        for (int p = 0; p < w->count; p++) acc += s->loss[(size_t)r * T + w->first + p];
        s->sum[(size_t)w->ex * EVALFILE_MAX_COMPLETIONS + w->comp] = acc;
        if (--s->left[w->ex] == 0) decide(s, w->ex);
    }
    s->nrow = 0;
    return 0;
}

int zeroshot_score(const model_ops *ops, model *m, int B, int T, const struct evalfile *f,
                   struct zeroshot_result *res, char *err, size_t errlen) {
    memset(res, 0, sizeof *res);
    if (!ops->forward_losses) {
        snprintf(err, errlen, "%s: the %s backend cannot return per-position losses", f->path, ops->name);
        return -1;
    }
    struct scorer s = {.ops = ops, .m = m, .B = B, .T = T, .res = res};
    res->has_char = f->chars != NULL;
    /* a batch of B rows touches at most B examples, plus the one being filled */
    s.cap = B + 1;
    int rc = -2;
    s.in = calloc((size_t)B * T, sizeof *s.in);
    s.tg = calloc((size_t)B * T, sizeof *s.tg);
    s.loss = calloc((size_t)B * T, sizeof *s.loss);
    s.rows = calloc((size_t)B, sizeof *s.rows);
    s.sum = calloc((size_t)s.cap * EVALFILE_MAX_COMPLETIONS, sizeof *s.sum);
    s.left = calloc((size_t)s.cap, sizeof *s.left);
    s.exs = calloc((size_t)s.cap, sizeof *s.exs);
    if (!s.in || !s.tg || !s.loss || !s.rows || !s.sum || !s.left || !s.exs) {
        snprintf(err, errlen, "%s: out of memory for zero-shot batches", f->path);
        goto out;
    }
    rc = -1;
    for (int i = 0; i < f->n; i++) {
        int slot = i % s.cap;
        if (s.left[slot] && (rc = flush(&s, err, errlen))) goto out;   /* (cannot happen with cap = B + 1; kept as a guard) */
        struct evalfile_example *ex = &s.exs[slot];
        evalfile_example(f, i, ex);
        s.left[slot] = ex->ncomp;
        int cut = 0;
        for (int c = 0; c < ex->ncomp; c++) {
            int keep, len = ex->comp_len[c];
            if (zeroshot_layout(ex->ctx_len, len, T, &keep)) {
                snprintf(err, errlen, "%s: example %d: completion %d has %d tokens, more than the model's window "
                         "train.seq_len %d", f->path, i, c, len, T);
                rc = -1;
                goto out;
            }
            if (keep < ex->ctx_len) cut = 1;
            if (s.nrow == B && (rc = flush(&s, err, errlen))) goto out;
            int r = s.nrow++;
            int *in = s.in + (size_t)r * T, *tg = s.tg + (size_t)r * T;
            const uint16_t *ctx = ex->ctx + (ex->ctx_len - keep);
            int n = keep + len;               /* tokens in the row's sequence; inputs are the first n − 1 */
            for (int t = 0; t < T; t++) {
                if (t + 1 < n) {
                    in[t] = t < keep ? ctx[t] : ex->comp[c][t - keep];
                    tg[t] = t + 1 < keep ? ctx[t + 1] : ex->comp[c][t + 1 - keep];
                } else in[t] = tg[t] = 0;
            }
            s.rows[r] = (struct row){.ex = slot, .comp = c, .first = keep - 1, .count = len};
        }
        res->truncated += cut;
    }
    if ((rc = flush(&s, err, errlen))) goto out;
    res->acc = res->n ? (double)res->correct / res->n : 0;
    res->acc_norm = res->n ? (double)res->correct_norm / res->n : 0;
    res->acc_norm_char = res->n ? (double)res->correct_char / res->n : 0;
    rc = 0;
out:
    free(s.in); free(s.tg); free(s.loss); free(s.rows); free(s.sum); free(s.left); free(s.exs);
    return rc;
}
