/* loader.c — the worker's training data loader (the layout and contract: loader.h).
 *
 * Design. Opening maps the shards (common/shard.c) and counts each one's windows into prefix sums, so
 * window w's shard is a binary search and its tokens a pointer into the mapping: a batch copies B·(T+1)
 * tokens and allocates nothing. The shuffled order is one uint32 per window, redrawn only when a batch
 * crosses into a new epoch (from util_mix64 of the seed and the epoch, so any epoch is drawn without the ones
 * before it). Vocabulary checks happen per batch, as tokens are used.
 */
#include "loader.h"
#include "train.h"
#include "util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void loader_release(struct loader *ld) {
    shard_set_close(&ld->set);
    free(ld->cum); free(ld->perm); free(ld->inputs); free(ld->targets);
    memset(ld, 0, sizeof *ld);
}

int loader_init(struct loader *ld, const char *what, const char *glob, const char *root, int B, int T,
                int shuffle, uint64_t seed, char *err, size_t errlen) {
    memset(ld, 0, sizeof *ld);
    char e2[1024];
    int rc = shard_set_open(glob, root, 0, &ld->set, e2, sizeof e2);
    if (rc == SHARD_ENOMEM) { snprintf(err, errlen, "%s: %.900s", what, e2); return TRAIN_ENOMEM; }
    if (rc) { snprintf(err, errlen, "%s: %.900s", what, e2); return TRAIN_EDATA; }
    ld->B = B; ld->T = T; ld->shuffle = shuffle; ld->seed = seed; ld->perm_epoch = UINT64_MAX;
    ld->cum = calloc(ld->set.n + 1, sizeof *ld->cum);
    ld->inputs = malloc((size_t)B * T * sizeof(int));
    ld->targets = malloc((size_t)B * T * sizeof(int));
    if (!ld->cum || !ld->inputs || !ld->targets) goto oom;
    for (int i = 0; i < ld->set.n; i++) {
        size_t n = ld->set.shards[i].ntok;
        ld->cum[i + 1] = ld->cum[i] + (n > (size_t)T ? (n - 1) / T : 0);
    }
    ld->nwin = ld->cum[ld->set.n];
    if (ld->nwin == 0) {
        snprintf(err, errlen, "%s: %s holds %zu tokens in %d shard(s); each shard needs at least T+1 = %d tokens",
                 what, glob, ld->set.total, ld->set.n, T + 1);
        loader_release(ld);
        return TRAIN_EDATA;
    }
    if (ld->nwin > UINT32_MAX) { snprintf(err, errlen, "%s: more than 2^32 windows", what); loader_release(ld); return TRAIN_EDATA; }
    if (shuffle && !(ld->perm = malloc(ld->nwin * sizeof *ld->perm))) goto oom;
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory for the data loader", what);
    loader_release(ld);
    return TRAIN_ENOMEM;
}

static void loader_draw_perm(struct loader *ld, uint64_t epoch) {
    uint64_t s = util_mix64(ld->seed ^ util_mix64(epoch + 0x44415441ULL));   /* "DATA" */
    for (size_t i = 0; i < ld->nwin; i++) ld->perm[i] = (uint32_t)i;
    for (size_t i = ld->nwin - 1; i > 0; i--) {
        s = util_mix64(s);
        size_t j = (size_t)(s % (i + 1));
        uint32_t t = ld->perm[i]; ld->perm[i] = ld->perm[j]; ld->perm[j] = t;
    }
    ld->perm_epoch = epoch;
}

/* (the vocabulary check is per batch: loader.h) */
int loader_batch(struct loader *ld, uint64_t pos, int V, char *err, size_t errlen) {
    int B = ld->B, T = ld->T;
    for (int b = 0; b < B; b++) {
        uint64_t g = pos * (uint64_t)B + (uint64_t)b;
        size_t w = (size_t)(g % ld->nwin);
        if (ld->shuffle) {
            uint64_t e = g / ld->nwin;
            if (e != ld->perm_epoch) loader_draw_perm(ld, e);
            w = ld->perm[w];
        }
        int lo = 0, hi = ld->set.n - 1;    /* shard holding window w: cum[s] <= w < cum[s+1] */
        while (lo < hi) { int mid = (lo + hi + 1) / 2; if (ld->cum[mid] <= w) lo = mid; else hi = mid - 1; }
        const uint16_t *tok = ld->set.shards[lo].tokens + (w - ld->cum[lo]) * (size_t)T;
        int bad = 0;
        for (int t = 0; t <= T; t++) bad |= tok[t] >= V;
        if (bad)
            for (int t = 0; t <= T; t++)
                if (tok[t] >= V) {
                    /* (the token's value is not quoted: an error never echoes a file's contents) */
                    snprintf(err, errlen, "%s: the token at position %zu is outside the vocabulary (model.vocab_size %d)",
                             ld->set.shards[lo].path, (size_t)(tok - ld->set.shards[lo].tokens) + t, V);
                    return TRAIN_EDATA;
                }
        for (int t = 0; t < T; t++) { ld->inputs[b * T + t] = tok[t]; ld->targets[b * T + t] = tok[t + 1]; }
    }
    return 0;
}
