/* test_shard.c — llm.c token shards: round trip, exact size checks, clear errors naming the file. */
#include "harness.h"
#include "shard.h"
#include <stdint.h>

static void write_raw(const char *path, const int32_t *hdr, const uint16_t *tok, size_t ntok) {
    FILE *f = fopen(path, "wb");
    if (!f) HFAIL("cannot create %s", path);
    if (hdr) fwrite(hdr, 4, 256, f);
    if (tok) fwrite(tok, 2, ntok, f);
    fclose(f);
}

TEST(write_then_read_round_trip) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/a.bin", harness_tmpdir());
    uint16_t tok[1000];
    for (int i = 0; i < 1000; i++) tok[i] = (uint16_t)(i * 37 % 50257);
    ASSERT_EQ_INT(0, shard_write(path, tok, 1000, err, sizeof err));
    struct shard s;
    ASSERT_EQ_INT(0, shard_open(path, &s, err, sizeof err));
    ASSERT_EQ_INT(1000, s.ntok);
    for (int i = 0; i < 1000; i++) ASSERT_EQ_INT(tok[i], s.tokens[i]);
    /* the header is llm.c's: magic, version, count */
    FILE *f = fopen(path, "rb");
    int32_t hdr[3];
    ASSERT_EQ_INT(3, fread(hdr, 4, 3, f));
    fclose(f);
    ASSERT_EQ_INT(20240520, hdr[0]); ASSERT_EQ_INT(1, hdr[1]); ASSERT_EQ_INT(1000, hdr[2]);
    shard_close(&s);
}

TEST(truncated_shard_names_file_and_expected_size) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/trunc.bin", harness_tmpdir());
    int32_t hdr[256] = {20240520, 1, 300};
    uint16_t tok[100] = {0};
    write_raw(path, hdr, tok, 100);                /* 100 tokens where the header says 300 */
    struct shard s;
    ASSERT_EQ_INT(SHARD_EFORMAT, shard_open(path, &s, err, sizeof err));
    ASSERT_CONTAINS(err, path);
    ASSERT_CONTAINS(err, "file is 1224 bytes but the header says 300 tokens, so expected 1624 bytes");
    ASSERT_TRUE(s.map == NULL && s.path == NULL);
}

TEST(bad_magic_version_and_short_header) {
    char dir[4096], path[4200], err[512];
    snprintf(dir, sizeof dir, "%s", harness_tmpdir());
    struct shard s;
    int32_t hdr[256] = {12345, 1, 0};
    snprintf(path, sizeof path, "%s/magic.bin", dir);
    write_raw(path, hdr, NULL, 0);
    ASSERT_EQ_INT(SHARD_EFORMAT, shard_open(path, &s, err, sizeof err));
    ASSERT_CONTAINS(err, "bad magic: the header does not start with 20240520");
    ASSERT_TRUE(strstr(err, "12345") == NULL);   /* never echoes what the file holds */
    ASSERT_CONTAINS(err, "magic.bin");
    int32_t hdr2[256] = {20240520, 2, 0};
    snprintf(path, sizeof path, "%s/ver.bin", dir);
    write_raw(path, hdr2, NULL, 0);
    ASSERT_EQ_INT(SHARD_EFORMAT, shard_open(path, &s, err, sizeof err));
    ASSERT_CONTAINS(err, "unsupported version: expected 1");
    snprintf(path, sizeof path, "%s/short.bin", dir);
    FILE *f = fopen(path, "wb"); fputs("tiny", f); fclose(f);
    ASSERT_EQ_INT(SHARD_EFORMAT, shard_open(path, &s, err, sizeof err));
    ASSERT_CONTAINS(err, "shorter than the 1024-byte llm.c shard header");
    snprintf(path, sizeof path, "%s/missing.bin", dir);
    ASSERT_EQ_INT(SHARD_EIO, shard_open(path, &s, err, sizeof err));
    ASSERT_CONTAINS(err, "missing.bin: cannot open token shard");
}

TEST(glob_sets_sort_and_check_vocab) {
    char dir[4096], path[4200], err[512];
    snprintf(dir, sizeof dir, "%s", harness_tmpdir());
    uint16_t a[50], b[70];
    for (int i = 0; i < 50; i++) a[i] = 1;
    for (int i = 0; i < 70; i++) b[i] = 2;
    snprintf(path, sizeof path, "%s/x_001.bin", dir); ASSERT_EQ_INT(0, shard_write(path, b, 70, err, sizeof err));
    snprintf(path, sizeof path, "%s/x_000.bin", dir); ASSERT_EQ_INT(0, shard_write(path, a, 50, err, sizeof err));
    struct shard_set set;
    /* relative glob resolves against the root */
    ASSERT_EQ_INT(0, shard_set_open("x_*.bin", dir, 3, &set, err, sizeof err));
    ASSERT_EQ_INT(2, set.n);
    ASSERT_EQ_INT(120, set.total);
    ASSERT_EQ_INT(1, set.shards[0].tokens[0]);       /* sorted: x_000 first */
    shard_set_close(&set);
    ASSERT_EQ_INT(SHARD_EFORMAT, shard_set_open("x_*.bin", dir, 2, &set, err, sizeof err));
    ASSERT_CONTAINS(err, "x_001.bin: the token at position 0 is outside the vocabulary (vocab_size 2)");
    ASSERT_EQ_INT(SHARD_ENOMATCH, shard_set_open("nothing_*.bin", dir, 0, &set, err, sizeof err));
    ASSERT_CONTAINS(err, "nothing_*.bin: no token shards match");
    ASSERT_EQ_INT(0, set.n);
}
