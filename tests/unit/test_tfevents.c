/* test_tfevents.c — the TensorBoard event-file writer (orchestrator/tfevents.c): CRC-32C against its published check
 * value, the TFRecord framing and the Event bytes of one scalar, byte for byte as the protobuf wire format lays them
 * out, and a failed write leaving no file. (The whole export read back by an independent reader with
 * python3-protobuf: tests/integration/test_export.sh.) */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "tfevents.h"

TEST(crc32c_check_value) {
    ASSERT_EQ_INT((long long)0xE3069283u, (long long)tfevents_crc32c("123456789", 9));   /* CRC-32C's check value */
    ASSERT_EQ_INT(0, (long long)tfevents_crc32c("", 0));
    uint32_t c = tfevents_crc32c("123456789", 9);
    ASSERT_EQ_INT((long long)(uint32_t)(((c >> 15) | (c << 17)) + 0xa282ead8u), (long long)tfevents_masked_crc("123456789", 9));
}

static long file_bytes(const char *path, unsigned char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long n = (long)fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

TEST(scalar_event_bytes) {
    char path[4200];
    snprintf(path, sizeof path, "%s/events.out.tfevents.1.test", harness_tmpdir());
    tfevents w;
    ASSERT_EQ_INT(0, tfevents_open(&w, path, 2.0));
    struct stat sb;
    ASSERT_EQ_INT(-1, stat(path, &sb));   /* not there before close */
    ASSERT_EQ_INT(0, tfevents_scalar(&w, 2.0, 300, "a/b", 1.5f));
    ASSERT_EQ_INT(0, tfevents_close(&w));
    unsigned char b[512];
    long n = file_bytes(path, b, sizeof b);
    /* record 1: Event{wall_time=2.0, file_version="brain.Event:2"}: 9 + 2 + 13 = 24 bytes of data */
    static const unsigned char ev1[] = { 0x09, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x1a, 13, 'b', 'r', 'a', 'i', 'n', '.', 'E', 'v', 'e',
                                         'n', 't', ':', '2' };
    /* record 2: Event{wall_time=2.0, step=300 (varint ac 02), summary{value{tag="a/b", simple_value=1.5f}}} */
    static const unsigned char ev2[] = { 0x09, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x10, 0xac, 0x02, 0x2a, 12, 0x0a, 10, 0x0a, 3, 'a', '/',
                                         'b', 0x15, 0x00, 0x00, 0xc0, 0x3f };
    ASSERT_EQ_INT((long long)(16 + sizeof ev1 + 16 + sizeof ev2), n);
    uint64_t len;
    uint32_t crc;
    memcpy(&len, b, 8);
    ASSERT_EQ_INT((long long)sizeof ev1, (long long)len);
    memcpy(&crc, b + 8, 4);
    ASSERT_EQ_INT((long long)tfevents_masked_crc(b, 8), (long long)crc);
    ASSERT_EQ_INT(0, memcmp(b + 12, ev1, sizeof ev1));
    memcpy(&crc, b + 12 + sizeof ev1, 4);
    ASSERT_EQ_INT((long long)tfevents_masked_crc(ev1, sizeof ev1), (long long)crc);
    const unsigned char *r2 = b + 16 + sizeof ev1;
    memcpy(&len, r2, 8);
    ASSERT_EQ_INT((long long)sizeof ev2, (long long)len);
    ASSERT_EQ_INT(0, memcmp(r2 + 12, ev2, sizeof ev2));
    memcpy(&crc, r2 + 12 + sizeof ev2, 4);
    ASSERT_EQ_INT((long long)tfevents_masked_crc(ev2, sizeof ev2), (long long)crc);
}

TEST(open_in_missing_dir_fails_cleanly) {
    char path[4200];
    snprintf(path, sizeof path, "%s/no/such/dir/ev", harness_tmpdir());
    tfevents w;
    ASSERT_EQ_INT(-1, tfevents_open(&w, path, 1.0));
    if (!strstr(w.err, "create failed")) HFAIL("error names the step: %s", w.err);
    tfevents_abort(&w);
}

TEST(long_tag_refused) {
    char path[4200], tag[1100];
    snprintf(path, sizeof path, "%s/ev", harness_tmpdir());
    memset(tag, 'x', sizeof tag - 1);
    tag[sizeof tag - 1] = 0;
    tfevents w;
    ASSERT_EQ_INT(0, tfevents_open(&w, path, 1.0));
    ASSERT_EQ_INT(-1, tfevents_scalar(&w, 1.0, 1, tag, 1.0f));
    if (!strstr(w.err, "longer than 1000")) HFAIL("error: %s", w.err);
    tfevents_abort(&w);
    struct stat sb;
    ASSERT_EQ_INT(-1, stat(path, &sb));
}
