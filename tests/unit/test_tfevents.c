/* test_tfevents.c — the TensorBoard event-file writer (orchestrator/tfevents.c): CRC-32C against its published check
 * value, the TFRecord framing and the Event bytes of one scalar, byte for byte as the protobuf wire format lays them
 * out, and a failed write leaving no file. (The whole export read back by an independent reader with
 * python3-protobuf: tests/integration/test_export.sh.) The HParams plugin's session start, byte for byte, and an hparam
 * of a type google.protobuf.Value cannot hold refused. */
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

/* The HParams plugin's session start, byte for byte (plugin_data.proto, summary.proto): Event{wall_time 2.0, step 0,
 * summary{value{tag "_hparams_/session_start_info", tensor{dtype DT_FLOAT, shape [0]}, metadata{plugin_data{
 * "hparams", content HParamsPluginData{session_start_info = 3 {hparams = 1 {"a": string "x"}, {"b": bool false}}}}}}}}.
 * A false bool (a oneof member) is still written. */
TEST(hparams_session_start_bytes) {
    char path[4200];
    snprintf(path, sizeof path, "%s/events.out.tfevents.2.hp", harness_tmpdir());
    tfevents w;
    ASSERT_EQ_INT(0, tfevents_open(&w, path, 2.0));
    json_t *hp = json_pack("{s:s, s:b}", "a", "x", "b", 0);
    ASSERT_EQ_INT(0, tfevents_hparams_start(&w, 2.0, hp, 0));
    json_decref(hp);
    ASSERT_EQ_INT(0, tfevents_close(&w));
    static const unsigned char ev[] = {
        0x09, 0, 0, 0, 0, 0, 0, 0, 0x40,                  /* wall_time 2.0 */
        0x2a, 76, 0x0a, 74,                               /* summary { value { (74 bytes) */
        0x0a, 28, '_', 'h', 'p', 'a', 'r', 'a', 'm', 's', '_', '/', 's', 'e', 's', 's', 'i', 'o', 'n', '_', 's', 't', 'a',
        'r', 't', '_', 'i', 'n', 'f', 'o',                /* tag */
        0x42, 6, 0x08, 1, 0x12, 2, 0x12, 0,               /* tensor { dtype 1, tensor_shape { dim {} } } */
        0x4a, 34, 0x0a, 32,                               /* metadata { plugin_data { */
        0x0a, 7, 'h', 'p', 'a', 'r', 'a', 'm', 's',       /* plugin_name */
        0x12, 21, 0x1a, 19,                               /* content: HParamsPluginData { session_start_info { */
        0x0a, 8, 0x0a, 1, 'a', 0x12, 3, 0x1a, 1, 'x',     /* hparams entry { key "a", value { string_value "x" } } */
        0x0a, 7, 0x0a, 1, 'b', 0x12, 2, 0x20, 0,          /* hparams entry { key "b", value { bool_value false } } */
    };
    unsigned char b[512];
    long n = file_bytes(path, b, sizeof b);
    const long first = 16 + 24;   /* the version record, as in scalar_event_bytes */
    ASSERT_EQ_INT((long long)(first + 16 + sizeof ev), n);
    uint64_t len;
    memcpy(&len, b + first, 8);
    ASSERT_EQ_INT((long long)sizeof ev, (long long)len);
    ASSERT_EQ_INT(0, memcmp(b + first + 12, ev, sizeof ev));
    uint32_t crc;
    memcpy(&crc, b + first + 12 + sizeof ev, 4);
    ASSERT_EQ_INT((long long)tfevents_masked_crc(ev, sizeof ev), (long long)crc);
}

TEST(hparam_of_another_type_refused) {
    char path[4200];
    snprintf(path, sizeof path, "%s/ev.hp", harness_tmpdir());
    tfevents w;
    ASSERT_EQ_INT(0, tfevents_open(&w, path, 1.0));
    json_t *hp = json_pack("{s:f, s:[i]}", "lr", 0.001, "layers", 1);
    ASSERT_EQ_INT(-1, tfevents_hparams_start(&w, 1.0, hp, 1.0));
    json_decref(hp);
    if (!strstr(w.err, "hparam layers: not a string, number or boolean")) HFAIL("error: %s", w.err);
    tfevents_abort(&w);
    struct stat sb;
    ASSERT_EQ_INT(-1, stat(path, &sb));
}
