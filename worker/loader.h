/* loader.h — the worker's training data loader: micro-batches of B windows of T+1 tokens from a set of
 * llm.c token shards (common/shard.h), in an order fixed by (seed, epoch).
 *
 * Layout. The shards are cut into windows of T+1 tokens at offsets k·T inside each shard (llm.c's layout: B
 * consecutive windows are exactly llm.c's contiguous B·T+1 read). Micro-batch p takes windows p·B .. p·B+B−1 of
 * the epoch order, wrapping around: the identity order when shuffle is off, else a Fisher–Yates permutation
 * drawn from (seed, epoch). The loader's whole state is therefore the micro-batch counter the caller keeps,
 * which is what a checkpoint stores: a resumed run reads exactly the batches the uninterrupted one would have.
 *
 * Contract.
 * - loader_init: 0, or TRAIN_EDATA (no shard matches, a shard unreadable, no window of T+1 tokens, more than
 *   2^32 windows) / TRAIN_ENOMEM, with err naming `what` (the job key, e.g. "data.train") and the fix. On
 *   failure *ld holds nothing (released, zeroed); loader_release on it is a no-op.
 * - loader_batch: fills ld->inputs / ld->targets (B·T each, owned by the loader, valid until the next call
 *   or loader_release) with micro-batch pos. Tokens are checked against the vocabulary V here, as they are
 *   used (a full scan at open would read every shard at every job start): 0, or TRAIN_EDATA with the file and
 *   position in err (never the token's value: an error never echoes a file's contents). After a failure the
 *   buffers hold a partial batch; the loader itself stays usable.
 * - loader_release: frees everything and zeroes *ld; safe on a zeroed or released loader.
 * The loader owns its shard set (mapped files), the window prefix sums, the permutation and the batch buffers;
 * `what`, `glob` and `root` are only read during loader_init. Not thread-safe: one loader per thread.
 */
#ifndef PRISM_LOADER_H
#define PRISM_LOADER_H
#include "shard.h"
#include <stddef.h>
#include <stdint.h>

struct loader {
    struct shard_set set;
    int B, T;
    size_t nwin;          /* windows of T+1 tokens */
    size_t *cum;          /* (set.n + 1) prefix sums of windows per shard */
    int shuffle;
    uint64_t seed;
    uint32_t *perm;       /* (nwin) order of the current epoch when shuffling */
    uint64_t perm_epoch;  /* epoch perm was drawn for, UINT64_MAX = none */
    int *inputs, *targets;/* (B*T) each */
};

/* Opens the shards matching glob (relative to root when root is non-empty) for micro-batches of B windows of
 * T+1 tokens; shuffle != 0 draws each epoch's order from seed. See the contract above. */
int loader_init(struct loader *ld, const char *what, const char *glob, const char *root, int B, int T,
                int shuffle, uint64_t seed, char *err, size_t errlen);

/* Fills ld->inputs/targets with micro-batch number pos (targets = inputs shifted by one token). */
int loader_batch(struct loader *ld, uint64_t pos, int V, char *err, size_t errlen);

void loader_release(struct loader *ld);
#endif
