/* fuzz_walscan.c — libFuzzer target over the WAL reader `prism-sweep serve` runs before opening its database
 * (orchestrator/walscan.h). The reader takes a database path and reads PATH-wal, so each input is written to a
 * temporary file named that way. A second pass "completes" the input: a valid WAL header (page size 512, its
 * checksum fixed) and the first k frames (k from the input's last byte) given this generation's salts and a valid
 * running checksum, so the frame walk and the loss count are reached.
 *
 * Contract checked on every input:
 *   the reader returns 0 (a file it could read); the counts are consistent (valid_frames, first_bad, lost_frames
 *   <= frames; lost_commits <= lost_frames; valid_commits <= valid_frames; first_bad is 0 or after the kept ones);
 *   on a completed input, first_bad is 0 or past the k valid frames, and the last commit frame among them is kept.
 *
 * fuzz_walscan_one() is the entry point (1 = the input is a WAL with a valid header, 0 = not); LLVMFuzzerTestOneInput only
 * with -DPRISM_LIBFUZZER (fuzz/run.sh). tests/unit/test_fuzz_corpus.c replays the corpus with gcc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_tempfile.h"

#include "walscan.h"

#undef FUZZ_CHECK
#define FUZZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_walscan: contract violated: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

static void fws_put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v; }
static uint32_t fws_get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

static void fws_sum(const uint8_t *p, size_t n, uint32_t s[2]) {   /* big-endian words (magic 0x377f0683) */
    for (size_t i = 0; i + 8 <= n; i += 8) {
        s[0] += fws_get32(p + i) + s[1];
        s[1] += fws_get32(p + i + 4) + s[0];
    }
}

static int fws_check(const uint8_t *data, size_t size, walscan_result *w) {
    char path[4096], wal[4200];
    if (fuzz_write_temp(path, sizeof path, "wal", data, size) < 0) return -1;
    snprintf(wal, sizeof wal, "%s-wal", path);
    if (rename(path, wal) != 0) { unlink(path); return -1; }
    char err[512] = "";
    int rc = walscan_check(path, w, err, sizeof err);
    unlink(wal);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(w->valid_frames <= w->frames && w->first_bad <= w->frames && w->lost_frames <= w->frames);
    FUZZ_CHECK(w->lost_commits <= w->lost_frames && w->valid_commits <= w->valid_frames);
    FUZZ_CHECK(w->first_bad == 0 || w->first_bad > w->valid_frames);
    FUZZ_CHECK(w->exists == (size > 0));
    return w->exists && !w->bad_header;
}

int fuzz_walscan_one(const uint8_t *data, size_t size) {
    walscan_result w;
    int ok = fws_check(data, size, &w) > 0;
    if (size < 32) return ok;
    uint8_t *b = malloc(size);
    if (!b) return ok;
    memcpy(b, data, size);
    fws_put32(b, 0x377f0683u);
    fws_put32(b + 4, 3007000);
    fws_put32(b + 8, 512);
    uint32_t s[2] = {0, 0};
    fws_sum(b, 24, s);
    fws_put32(b + 24, s[0]);
    fws_put32(b + 28, s[1]);
    size_t fsz = 24 + 512, n = (size - 32) / fsz, k = n ? data[size - 1] % (n + 1) : 0;
    long long last_commit = 0;
    for (size_t i = 0; i < k; i++) {
        uint8_t *f = b + 32 + i * fsz;
        memcpy(f + 8, b + 16, 8);   /* this generation's salts */
        fws_sum(f, 8, s);
        fws_sum(f + 24, 512, s);
        fws_put32(f + 16, s[0]);
        fws_put32(f + 20, s[1]);
        if (fws_get32(f + 4) != 0) last_commit = (long long)i + 1;
    }
    int r = fws_check(b, size, &w);
    FUZZ_CHECK(r == 1);
    FUZZ_CHECK(w.frames == (long long)n);
    FUZZ_CHECK(w.first_bad == 0 || w.first_bad > (long long)k);
    FUZZ_CHECK(w.valid_frames >= last_commit);
    free(b);
    return ok;   /* whether the input itself was a WAL with a valid header */
}

#ifdef PRISM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_walscan_one(data, size);
    return 0;
}
#endif
