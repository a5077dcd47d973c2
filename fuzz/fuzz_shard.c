/* fuzz_shard.c — libFuzzer target over the llm.c token-shard reader (common/shard.h). The reader only takes
 * a path (it mmaps the file), so each input is written to a fresh temporary file, read with shard_open and
 * with shard_set_open (a glob matching just that file, max_token taken from the input), and unlinked.
 *
 * Contract checked on every input:
 *   failure ⇒ SHARD_EFORMAT (or SHARD_EIO), a non-empty message naming the file, and *out zeroed;
 *   success ⇒ the file is exactly 1024 + 2·ntok bytes, the header is magic 20240520 / version 1 / ntok, and
 *             tokens[] are the input's bytes after the header; a set holds that one shard with total == ntok
 *             and, when max_token > 0, every token below it (a token >= max_token must make it fail).
 * shard_close / shard_set_close free everything (ASan's leak check on).
 *
 * fuzz_shard_one() is the entry point (1 = accepted, 0 = rejected); LLVMFuzzerTestOneInput only with
 * -DPRISM_LIBFUZZER (fuzz/run.sh). tests/unit/test_fuzz_corpus.c replays the corpus with gcc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_tempfile.h"

#include "shard.h"

#undef FUZZ_CHECK
#define FUZZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_shard: contract violated: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

static int fsh_all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) if (b[i]) return 0;
    return 1;
}

int fuzz_shard_one(const uint8_t *data, size_t size) {
    char path[4096];
    if (fuzz_write_temp(path, sizeof path, "shard", data, size) < 0) return 0;
    struct shard s;
    char err[600];
    err[0] = 0;
    memset(&s, 0x5a, sizeof s);
    int rc = shard_open(path, &s, err, sizeof err);
    FUZZ_CHECK(rc == SHARD_OK || rc == SHARD_EFORMAT || rc == SHARD_EIO);
    if (rc == SHARD_OK) {
        int32_t hdr[3];
        FUZZ_CHECK(size >= SHARD_HEADER_BYTES);
        memcpy(hdr, data, sizeof hdr);
        FUZZ_CHECK(hdr[0] == SHARD_MAGIC && hdr[1] == SHARD_VERSION && hdr[2] >= 0);
        FUZZ_CHECK(s.ntok == (size_t)hdr[2] && size == SHARD_HEADER_BYTES + 2 * s.ntok);
        FUZZ_CHECK(s.path && strcmp(s.path, path) == 0);
        FUZZ_CHECK(memcmp(s.tokens, data + SHARD_HEADER_BYTES, 2 * s.ntok) == 0);
        shard_close(&s);
        FUZZ_CHECK(fsh_all_zero(&s, sizeof s));
    } else {
        FUZZ_CHECK(err[0] != 0 && memchr(err, 0, sizeof err) && strstr(err, path));
        FUZZ_CHECK(fsh_all_zero(&s, sizeof s));
        shard_close(&s);   /* closing a failed (zeroed) shard is fine */
    }

    /* the set reader over the same file; max_token from the input's last two bytes (0 = no check) */
    int max_token = size >= 2 ? (int)(data[size - 2] | data[size - 1] << 8) % 70000 : 0;
    struct shard_set set;
    char err2[600];
    err2[0] = 0;
    int rs = shard_set_open(path, NULL, max_token, &set, err2, sizeof err2);
    if (rc != SHARD_OK) FUZZ_CHECK(rs == rc);
    if (rs == SHARD_OK) {
        FUZZ_CHECK(set.n == 1 && set.total == set.shards[0].ntok);
        for (size_t k = 0; max_token > 0 && k < set.shards[0].ntok; k++) FUZZ_CHECK(set.shards[0].tokens[k] < max_token);
        shard_set_close(&set);
    } else {
        FUZZ_CHECK(err2[0] != 0 && memchr(err2, 0, sizeof err2) && strstr(err2, path));
        FUZZ_CHECK(set.n == 0 && set.shards == NULL && set.total == 0);
        if (rc == SHARD_OK) {   /* only the vocabulary check may refuse a shard that opened */
            FUZZ_CHECK(rs == SHARD_EFORMAT && max_token > 0);
            int bad = 0;
            for (size_t k = 0; k < (size - SHARD_HEADER_BYTES) / 2; k++) {
                uint16_t t;
                memcpy(&t, data + SHARD_HEADER_BYTES + 2 * k, 2);
                bad |= t >= max_token;
            }
            FUZZ_CHECK(bad);
        }
    }
    unlink(path);
    return rc == SHARD_OK;
}

#ifdef PRISM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_shard_one(data, size);
    return 0;
}
#endif
