/* fuzz_parquet.c — libFuzzer target over the parquet text-column reader (dataprep/parquet.h) and the input
 * sniffer (dataprep/input.h). The reader takes a memory image, so the input is given as it is.
 *
 * Contract checked on every input:
 *   parquet_open: PARQUET_OK / EFORMAT / EUNSUPPORTED / ENOMEM only; failure ⇒ a non-empty, terminated message
 *                 and *out NULL; success ⇒ the input starts and ends with "PAR1".
 *   parquet_next: 1 (a value whose every byte is readable: they are summed, so ASan sees any stray pointer), 0 at
 *                 the end, or a negative code with a message; after an error it keeps returning that code.
 *                 Iteration stops after 1M values (a page may legally hold millions of RLE-run indices).
 *   input_sniff:  "parquet" exactly when the input starts with PAR1; a kind only for gzip / zstd / parquet.
 * parquet_close frees everything (ASan's leak check on).
 *
 * fuzz_parquet_one() is the entry point (1 = at least one value read, 0 = refused); LLVMFuzzerTestOneInput only
 * with -DPRISM_LIBFUZZER (fuzz/run.sh). tests/unit/test_fuzz_corpus.c replays the corpus with gcc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parquet.h"
#include "input.h"

#undef FUZZ_CHECK
#define FUZZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_parquet: contract violated: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

int fuzz_parquet_one(const uint8_t *data, size_t size) {
    char scratch[96];
    int kind = -1;
    const char *what = input_sniff(data, size, &kind, scratch, sizeof scratch);
    int par1 = size >= 4 && memcmp(data, "PAR1", 4) == 0;
    FUZZ_CHECK(par1 == (what && strcmp(what, "parquet") == 0));
    FUZZ_CHECK(kind == INPUT_PLAIN || kind == INPUT_GZIP || kind == INPUT_ZSTD || kind == INPUT_PARQUET);
    FUZZ_CHECK((kind == INPUT_PARQUET) == par1);

    struct parquet_reader *r = (struct parquet_reader *)&r;
    char err[600];
    err[0] = 0;
    int rc = parquet_open(data, size, "text", &r, err, sizeof err);
    FUZZ_CHECK(rc == PARQUET_OK || rc == PARQUET_EFORMAT || rc == PARQUET_EUNSUPPORTED || rc == PARQUET_ENOMEM);
    if (rc) {
        FUZZ_CHECK(r == NULL && err[0] && memchr(err, 0, sizeof err));
        return 0;
    }
    FUZZ_CHECK(r && size >= 12 && par1 && memcmp(data + size - 4, "PAR1", 4) == 0);
    FUZZ_CHECK(parquet_num_row_groups(r) >= 0);
    long nvals = 0;
    unsigned sum = 0;
    for (;;) {
        const uint8_t *v;
        size_t n;
        err[0] = 0;
        int k = parquet_next(r, &v, &n, err, sizeof err);
        if (k == 1) {
            for (size_t i = 0; i < n; i++) sum += v[i];
            if (++nvals >= 1000000) break;
            continue;
        }
        FUZZ_CHECK(k == 0 || k == PARQUET_EFORMAT || k == PARQUET_EUNSUPPORTED || k == PARQUET_ENOMEM);
        if (k < 0) {
            FUZZ_CHECK(err[0] && memchr(err, 0, sizeof err));
            FUZZ_CHECK(parquet_next(r, &v, &n, err, sizeof err) == k);   /* the reader stays stopped */
        }
        break;
    }
    parquet_close(r);
    if (sum == 0xdeadbeef) fprintf(stderr, " ");   /* keeps the sum (and so every byte read) */
    return nvals > 0;
}

#ifdef PRISM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_parquet_one(data, size);
    return 0;
}
#endif
