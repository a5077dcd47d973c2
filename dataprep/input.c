/* input.c — format sniffing and decompressing text streams for tokenize (input.h).
 *
 * Design. Every input goes through one cookie (fopencookie) whose read function serves, in order, a peek buffer
 * and then the rest of the source: the raw file, or the output of zlib's inflate (gzip members back to back) or
 * libzstd's streaming decoder (frames back to back). input_open fills the peek buffer first (up to
 * INPUT_SNIFF_BYTES of the decoded text), sniffs it, and refuses a binary format before a single byte reaches
 * the tokenizer, so the same check covers a plain file and the inside of a .gz or .zst.
 * gzip is read as gzip(1) reads it: members back to back, then optionally zero bytes to the end (tape or block
 * padding, which gzip -t accepts silently); anything else after a member is refused as trailing garbage. Memory
 * is the fixed buffers here whatever the stream declares: inflate and ZSTD_decompressStream write into the
 * caller's buffer, so a bomb costs time only until the reader's own caps (tokenize.h) stop it.
 */
#define _GNU_SOURCE   /* fopencookie */
#include "input.h"
#include "shard.h"
#include "evalfile.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define IN_BUF (1 << 18)

struct src {
    FILE *raw;
    int kind;                       /* INPUT_PLAIN / GZIP / ZSTD */
    uint8_t peek[INPUT_SNIFF_BYTES];
    size_t npeek, peek_off;
    uint8_t *inbuf;                 /* compressed bytes read from raw */
    size_t in_len, in_off;
    int raw_eof, done;
    z_stream z;
    int z_live;
    int zpad;                       /* 1: in zero padding after the last gzip member */
    long members;                   /* gzip members finished */
    uint64_t in_pos;                /* compressed bytes consumed before inbuf */
    ZSTD_DStream *zs;
    size_t zs_ret;                  /* last ZSTD_decompressStream return: 0 at a frame's end */
    char err[256];
};

static int starts(const uint8_t *b, size_t n, const void *magic, size_t m) { return n >= m && memcmp(b, magic, m) == 0; }

const char *input_sniff(const uint8_t *b, size_t n, int *kind, char *scratch, size_t scratch_len) {
    *kind = INPUT_PLAIN;
    uint32_t w = n >= 4 ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24 : 0;
    if (starts(b, n, "\x1f\x8b", 2)) { *kind = INPUT_GZIP; return "gzip"; }
    if (starts(b, n, "\x28\xb5\x2f\xfd", 4)) { *kind = INPUT_ZSTD; return "zstd"; }
    if (starts(b, n, "PAR1", 4)) { *kind = INPUT_PARQUET; return "parquet"; }
    if (starts(b, n, "\x7f" "ELF", 4)) return "an ELF executable";
    if (starts(b, n, "\x89PNG", 4)) return "a PNG image";
    if (starts(b, n, "\xff\xd8\xff", 3)) return "a JPEG image";
    if (starts(b, n, "GIF87a", 6) || starts(b, n, "GIF89a", 6)) return "a GIF image";
    if (starts(b, n, "%PDF-", 5)) return "a PDF document";
    if (starts(b, n, "PK\x03\x04", 4) || starts(b, n, "PK\x05\x06", 4)) return "a zip archive";
    if (starts(b, n, "BZh", 3) && n > 3 && b[3] >= '1' && b[3] <= '9') return "bzip2 (decompress it first, or recompress with gzip or zstd)";
    if (starts(b, n, "\xfd" "7zXZ\x00", 6)) return "xz (decompress it first, or recompress with gzip or zstd)";
    if (starts(b, n, "7z\xbc\xaf\x27\x1c", 6)) return "a 7z archive";
    if (starts(b, n, "\x04\x22\x4d\x18", 4)) return "lz4 (decompress it first, or recompress with gzip or zstd)";
    if (starts(b, n, "SQLite format 3", 16)) return "an SQLite database";
    if (starts(b, n, "ARROW1", 6)) return "an Arrow IPC file";
    if (starts(b, n, "\x93NUMPY", 6)) return "a NumPy array";
    if (n >= 262 && memcmp(b + 257, "ustar", 5) == 0) return "a tar archive (unpack it first)";
    if (w == SHARD_MAGIC) return "an llm.c token shard (already tokenized)";
    if (w == EVALFILE_MAGIC) return "an llm.c eval file";
    if (starts(b, n, "\xff\xfe", 2) || starts(b, n, "\xfe\xff", 2)) return "UTF-16 text (convert it to UTF-8: iconv -f UTF-16 -t UTF-8)";
    const uint8_t *z = memchr(b, 0, n < INPUT_SNIFF_BYTES ? n : INPUT_SNIFF_BYTES);
    if (z) { snprintf(scratch, scratch_len, "binary data (a NUL byte at offset %zu)", (size_t)(z - b)); return scratch; }
    return NULL;
}

/* Decoded bytes into buf (at most n): > 0, 0 at the end, -1 on error (s->err). */
static ssize_t src_decode(struct src *s, uint8_t *buf, size_t n) {
    if (s->kind == INPUT_PLAIN) {
        size_t got = fread(buf, 1, n, s->raw);
        if (!got && ferror(s->raw)) { snprintf(s->err, sizeof s->err, "read failed: %s", strerror(errno)); return -1; }
        return (ssize_t)got;
    }
    for (;;) {
        if (s->done) return 0;
        if (s->in_off == s->in_len && !s->raw_eof) {
            s->in_pos += s->in_len;
            s->in_len = fread(s->inbuf, 1, IN_BUF, s->raw);
            s->in_off = 0;
            if (s->in_len == 0) {
                if (ferror(s->raw)) { snprintf(s->err, sizeof s->err, "read failed: %s", strerror(errno)); return -1; }
                s->raw_eof = 1;
            }
        }
        size_t avail = s->in_len - s->in_off;
        if (s->kind == INPUT_GZIP) {
            if (!s->z_live) {                       /* between members: the end, or the next member */
                if (avail == 0 && s->raw_eof) { s->done = 1; return 0; }
                if (avail == 0) continue;
                if (s->members && (s->zpad || s->inbuf[s->in_off] == 0)) {   /* zero padding, to the end */
                    const uint8_t *q = s->inbuf + s->in_off, *e = s->inbuf + s->in_len;
                    while (q < e && *q == 0) q++;
                    if (q < e) {
                        snprintf(s->err, sizeof s->err, "trailing garbage after %ld gzip member(s): byte %llu is 0x%02x "
                                 "after zero padding (gzip accepts zeros there, nothing else)", s->members,
                                 (unsigned long long)(s->in_pos + (size_t)(q - s->inbuf)), *q);
                        return -1;
                    }
                    s->zpad = 1;
                    s->in_off = s->in_len;
                    continue;
                }
                if (inflateInit2(&s->z, 15 + 16) != Z_OK) { snprintf(s->err, sizeof s->err, "out of memory (zlib)"); return -1; }
                s->z_live = 1;
            }
            s->z.next_in = s->inbuf + s->in_off;
            s->z.avail_in = (uInt)avail;
            s->z.next_out = buf;
            s->z.avail_out = (uInt)n;
            int zr = inflate(&s->z, Z_NO_FLUSH);
            s->in_off = s->in_len - s->z.avail_in;
            size_t out = n - s->z.avail_out;
            if (zr == Z_STREAM_END) { inflateEnd(&s->z); s->z_live = 0; s->members++; }
            else if (zr != Z_OK && zr != Z_BUF_ERROR) {
                if (s->members && s->z.msg && strstr(s->z.msg, "header"))   /* where a next member should start */
                    snprintf(s->err, sizeof s->err, "trailing garbage after %ld gzip member(s) at byte %llu: not another "
                             "member (gzip itself only warns and ignores it; cut the file after the last member)",
                             s->members, (unsigned long long)(s->in_pos + s->in_off - s->z.total_in));
                else
                    snprintf(s->err, sizeof s->err, "corrupt gzip data: %s", s->z.msg ? s->z.msg : "inflate failed");
                return -1;
            }
            if (out) return (ssize_t)out;
            if (zr == Z_BUF_ERROR && s->raw_eof && s->in_off == s->in_len) {
                snprintf(s->err, sizeof s->err, "truncated gzip data (the stream ends inside a member)");
                return -1;
            }
        } else {
            if (avail == 0 && s->raw_eof) {
                if (s->zs_ret != 0) { snprintf(s->err, sizeof s->err, "truncated zstd data (the stream ends inside a frame)"); return -1; }
                s->done = 1;
                return 0;
            }
            ZSTD_inBuffer zi = {s->inbuf + s->in_off, avail, 0};
            ZSTD_outBuffer zo = {buf, n, 0};
            size_t r = ZSTD_decompressStream(s->zs, &zo, &zi);
            s->in_off += zi.pos;
            if (ZSTD_isError(r)) { snprintf(s->err, sizeof s->err, "corrupt zstd data: %s", ZSTD_getErrorName(r)); return -1; }
            s->zs_ret = r;
            if (zo.pos) return (ssize_t)zo.pos;
        }
    }
}

static ssize_t cookie_read(void *c, char *buf, size_t n) {
    struct src *s = c;
    if (s->peek_off < s->npeek) {
        size_t k = s->npeek - s->peek_off < n ? s->npeek - s->peek_off : n;
        memcpy(buf, s->peek + s->peek_off, k);
        s->peek_off += k;
        return (ssize_t)k;
    }
    ssize_t r = src_decode(s, (uint8_t *)buf, n);
    if (r < 0) { errno = EILSEQ; return -1; }
    return r;
}

static void src_free(struct src *s) {
    if (!s) return;
    if (s->raw) fclose(s->raw);
    if (s->z_live) inflateEnd(&s->z);
    ZSTD_freeDStream(s->zs);
    free(s->inbuf);
    free(s);
}

static int cookie_close(void *c) { src_free(c); return 0; }

int input_open(const char *path, int allow_parquet, struct input *in, char *err, size_t errlen) {
    memset(in, 0, sizeof *in);
    struct src *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "%s: out of memory", path); return INPUT_ENOMEM; }
    if (!(s->raw = fopen(path, "rb"))) { snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno)); free(s); return INPUT_EIO; }
    /* the file's own first bytes */
    size_t n = fread(s->peek, 1, sizeof s->peek, s->raw);
    if (!n && ferror(s->raw)) { snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno)); src_free(s); return INPUT_EIO; }
    char scratch[96];
    int kind, inner;
    const char *what = input_sniff(s->peek, n, &kind, scratch, sizeof scratch);
    in->kind = kind;
    const char *supported = "tokenize reads text, JSONL, their .gz (gzip) and .zst (zstd) forms, and parquet";
    if (kind == INPUT_PARQUET) {
        src_free(s);
        if (!allow_parquet) { snprintf(err, errlen, "%s: is a parquet file, not text: drop --format (auto reads parquet's text column) or use --format parquet", path); return INPUT_EFORMAT; }
        return 0;
    }
    if (what && kind == INPUT_PLAIN) { snprintf(err, errlen, "%s: is %s, not text (%s)", path, what, supported); src_free(s); return INPUT_EFORMAT; }
    s->kind = kind;
    if (kind == INPUT_PLAIN) {
        s->npeek = n;
    } else {
        if (!(s->inbuf = malloc(IN_BUF))) { snprintf(err, errlen, "%s: out of memory", path); src_free(s); return INPUT_ENOMEM; }
        memcpy(s->inbuf, s->peek, n);
        s->in_len = n;
        if (kind == INPUT_ZSTD && (!(s->zs = ZSTD_createDStream()) || ZSTD_isError(ZSTD_initDStream(s->zs)))) {
            snprintf(err, errlen, "%s: out of memory (zstd)", path); src_free(s); return INPUT_ENOMEM;
        }
        s->zs_ret = 1;
        /* the decoded stream's first bytes, sniffed in turn */
        size_t got = 0;
        while (got < sizeof s->peek) {
            ssize_t r = src_decode(s, s->peek + got, sizeof s->peek - got);
            if (r < 0) { snprintf(err, errlen, "%s: %s", path, s->err); src_free(s); return INPUT_EFORMAT; }
            if (r == 0) break;
            got += (size_t)r;
        }
        s->npeek = got;
        const char *w2 = input_sniff(s->peek, got, &inner, scratch, sizeof scratch);
        if (w2) {
            if (inner == INPUT_PARQUET)
                snprintf(err, errlen, "%s: %s holding a parquet file: give the parquet file uncompressed (its pages are compressed inside)", path, what);
            else if (inner != INPUT_PLAIN)
                snprintf(err, errlen, "%s: %s holding %s: not supported (decompress the outer layer first)", path, what, w2);
            else
                snprintf(err, errlen, "%s: %s holding %s, not text (%s)", path, what, w2, supported);
            src_free(s);
            return INPUT_EFORMAT;
        }
    }
    cookie_io_functions_t io = {.read = cookie_read, .close = cookie_close};
    if (!(in->f = fopencookie(s, "r", io))) { snprintf(err, errlen, "%s: out of memory", path); src_free(s); return INPUT_ENOMEM; }
    setvbuf(in->f, NULL, _IOFBF, 1 << 16);
    in->priv = s;
    return 0;
}

const char *input_error(const struct input *in) {
    const struct src *s = in->priv;
    return s && s->err[0] ? s->err : NULL;
}

void input_close(struct input *in) {
    if (in->f) fclose(in->f);   /* frees the cookie */
    memset(in, 0, sizeof *in);
}
