/* tfevents.c — TensorBoard event files written without a protobuf library (contract and format in tfevents.h).
 *
 * Design: an Event is small and flat, so it is encoded into a stack buffer field by field (varint keys, a
 * fixed64 double, length-delimited strings and the nested Summary/Value with their lengths computed first),
 * then framed as one TFRecord. CRC-32C is the bytewise table method (reflected polynomial 0x82F63B78), built
 * once; speed is not the point here (an export writes a few bytes per metric point).
 */
#include "tfevents.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t tfevents_crc32c(const void *data, size_t n) {
    pthread_once(&crc_once, crc_init);
    const unsigned char *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t tfevents_masked_crc(const void *data, size_t n) {
    uint32_t c = tfevents_crc32c(data, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* ---- protobuf wire format: just what Event needs --------------------------------------------------- */

typedef struct pbuf { unsigned char b[1200]; size_t n; } pbuf;

static void pb_varint(pbuf *p, uint64_t v) {
    do {
        unsigned char c = v & 0x7F;
        v >>= 7;
        p->b[p->n++] = c | (v ? 0x80 : 0);
    } while (v);
}
static void pb_key(pbuf *p, int field, int wire) { pb_varint(p, (uint64_t)field << 3 | (uint64_t)wire); }
static void pb_fixed(pbuf *p, const void *v, size_t n) {   /* little-endian host (x86-64, aarch64) */
    memcpy(p->b + p->n, v, n);
    p->n += n;
}
static void pb_bytes(pbuf *p, int field, const void *v, size_t n) {
    pb_key(p, field, 2);
    pb_varint(p, n);
    memcpy(p->b + p->n, v, n);
    p->n += n;
}
static size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

/* Event { wall_time, step, file_version | summary { value { tag, simple_value } } } into p. */
static void encode_event(pbuf *p, double wall_time, int64_t step, const char *version, const char *tag, float value) {
    p->n = 0;
    pb_key(p, 1, 1);
    pb_fixed(p, &wall_time, 8);
    if (step) { pb_key(p, 2, 0); pb_varint(p, (uint64_t)step); }
    if (version) { pb_bytes(p, 3, version, strlen(version)); return; }
    size_t tl = strlen(tag);
    size_t value_len = 1 + varint_len(tl) + tl + 1 + 4;   /* tag (key, len, bytes) + simple_value (key, fixed32) */
    size_t summary_len = 1 + varint_len(value_len) + value_len;
    pb_key(p, 5, 2);
    pb_varint(p, summary_len);
    pb_key(p, 1, 2);
    pb_varint(p, value_len);
    pb_bytes(p, 1, tag, tl);
    pb_key(p, 2, 5);
    pb_fixed(p, &value, 4);
}

static int write_record(tfevents *w, const pbuf *p) {
    unsigned char head[12];
    uint64_t len = p->n;
    memcpy(head, &len, 8);
    uint32_t hc = tfevents_masked_crc(head, 8), dc = tfevents_masked_crc(p->b, p->n);
    memcpy(head + 8, &hc, 4);
    if (fwrite(head, 1, 12, w->f) != 12 || fwrite(p->b, 1, p->n, w->f) != p->n || fwrite(&dc, 1, 4, w->f) != 4) {
        snprintf(w->err, sizeof w->err, "%s: write failed: %s", w->tmp, strerror(errno));
        return -1;
    }
    return 0;
}

int tfevents_open(tfevents *w, const char *path, double wall_time) {
    memset(w, 0, sizeof *w);
    if (strlen(path) >= sizeof w->path) {
        snprintf(w->err, sizeof w->err, "%.200s...: path too long", path);
        return -1;
    }
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || !(w->f = fdopen(fd, "wb"))) {
        snprintf(w->err, sizeof w->err, "%s: create failed: %s", w->tmp, strerror(errno));
        if (fd >= 0) { close(fd); unlink(w->tmp); }
        return -1;
    }
    pbuf p;
    encode_event(&p, wall_time, 0, "brain.Event:2", NULL, 0);
    return write_record(w, &p);
}

int tfevents_scalar(tfevents *w, double wall_time, int64_t step, const char *tag, float value) {
    if (strlen(tag) > 1000) {
        snprintf(w->err, sizeof w->err, "tag %.40s...: longer than 1000 bytes", tag);
        return -1;
    }
    pbuf p;
    encode_event(&p, wall_time, step, NULL, tag, value);
    return write_record(w, &p);
}

int tfevents_close(tfevents *w) {
    FILE *f = w->f;
    w->f = NULL;
    return util_commit_file(f, w->tmp, w->path, w->err, sizeof w->err);
}

void tfevents_abort(tfevents *w) {
    if (w->f) fclose(w->f);
    w->f = NULL;
    if (w->tmp[0]) unlink(w->tmp);
}
