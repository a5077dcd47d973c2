/* evalfile.c — llm.c multiple-choice eval files: a checking reader and an atomic writer (format in evalfile.h).
 *
 * Design: the reader takes the file into memory (eval files are a few MB) and walks every example once at open,
 * checking the delimiter, the stored byte length against the fields that follow, the label against the completion
 * count, lengths against the file's end and tokens against the vocabulary; it records each example's offset so
 * evalfile_example() is a constant-time decode afterwards. The writer builds the same stream in memory. The
 * optional character counts (header[4] = 1) follow the last example; the reader checks there is exactly one per
 * completion and decodes them into an array indexed from each example's first completion.
 */
#include "evalfile.h"
#include "util.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FAIL(code, ...) do { if (err) snprintf(err, errlen, __VA_ARGS__); rc = (code); goto out; } while (0)

void evalfile_close(struct evalfile *f) {
    if (!f) return;
    free(f->path);
    free(f->data);
    free(f->off);
    free(f->chars);
    free(f->chars_off);
    memset(f, 0, sizeof *f);
}

int evalfile_open(const char *path, int vocab, struct evalfile *out, char *err, size_t errlen) {
    int rc = EVALFILE_OK;
    FILE *fp = NULL;
    memset(out, 0, sizeof *out);
    int32_t hdr[EVALFILE_HEADER_INTS];
    struct stat st;
    fp = fopen(path, "rb");
    if (!fp) FAIL(EVALFILE_EIO, "%s: cannot open eval file: %s", path, strerror(errno));
    if (fstat(fileno(fp), &st)) FAIL(EVALFILE_EIO, "%s: stat failed: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) FAIL(EVALFILE_EFORMAT, "%s: not a regular file", path);
    if ((size_t)st.st_size < sizeof hdr)
        FAIL(EVALFILE_EFORMAT, "%s: %lld bytes, shorter than the %zu-byte eval file header (truncated, or not an llm.c eval file)",
             path, (long long)st.st_size, sizeof hdr);
    if (fread(hdr, sizeof hdr, 1, fp) != 1) FAIL(EVALFILE_EIO, "%s: read failed: %s", path, strerror(errno));
    if (hdr[0] != EVALFILE_MAGIC)
        FAIL(EVALFILE_EFORMAT, "%s: magic %d, expected %d (an llm.c eval file; %s)", path, hdr[0], EVALFILE_MAGIC,
             hdr[0] == 20240520 ? "this is a token shard: give it as data.train/data.val" : "written by write_evalfile");
    if (hdr[1] != EVALFILE_VERSION) FAIL(EVALFILE_EFORMAT, "%s: version %d, expected %d", path, hdr[1], EVALFILE_VERSION);
    if (hdr[2] <= 0 || hdr[2] > 65536) FAIL(EVALFILE_EFORMAT, "%s: example count %d, expected 1..65536", path, hdr[2]);
    if (hdr[EVALFILE_HDR_CHARS] != 0 && hdr[EVALFILE_HDR_CHARS] != 1)
        FAIL(EVALFILE_EFORMAT, "%s: header[4] is %d, expected 0 (no character counts) or 1 (character counts follow "
             "the examples)", path, hdr[EVALFILE_HDR_CHARS]);
    size_t body = (size_t)st.st_size - sizeof hdr;
    if (body % 2) FAIL(EVALFILE_EFORMAT, "%s: %zu bytes after the header, not a whole number of uint16 (truncated)", path, body);
    out->ndata = body / 2;
    out->n = hdr[2];
    out->longest_bytes = hdr[3];
    if (!(out->data = malloc(body ? body : 2)) || !(out->off = malloc((size_t)out->n * sizeof *out->off)))
        FAIL(EVALFILE_ENOMEM, "%s: out of memory reading %zu bytes", path, body);
    if (body && fread(out->data, 1, body, fp) != body) FAIL(EVALFILE_EIO, "%s: read failed: %s", path, strerror(errno));
    const uint16_t *d = out->data;
    size_t pos = 0, nd = out->ndata, ncomps = 0;
    int with_chars = hdr[EVALFILE_HDR_CHARS] == 1;
    if (with_chars && !(out->chars_off = malloc((size_t)out->n * sizeof *out->chars_off)))
        FAIL(EVALFILE_ENOMEM, "%s: out of memory", path);
    for (int i = 0; i < out->n; i++) {
        if (pos >= nd)
            FAIL(EVALFILE_EFORMAT, "%s: example %d: missing, the file ends after %d of the %d examples its header counts (truncated)",
                 path, i, i, out->n);
        if (nd - pos < 6)
            FAIL(EVALFILE_EFORMAT, "%s: example %d: truncated inside its 6-field header (at byte %zu)", path, i,
                 sizeof hdr + 2 * pos);
        if (d[pos] != EVALFILE_DELIM)
            FAIL(EVALFILE_EFORMAT, "%s: example %d: starts with %u at byte %zu, expected the delimiter 65535 (corrupt, or "
                 "the previous example's byte length is wrong)", path, i, d[pos], sizeof hdr + 2 * pos);
        size_t bytes = d[pos + 1], label = d[pos + 3], ncomp = d[pos + 4], ctx = d[pos + 5];
        if (bytes % 2 || bytes < 14)
            FAIL(EVALFILE_EFORMAT, "%s: example %d: byte length %zu is not an even count of at least 14", path, i, bytes);
        if (bytes / 2 > nd - pos)
            FAIL(EVALFILE_EFORMAT, "%s: example %d: truncated: it says %zu bytes but the file has %zu left", path, i, bytes,
                 2 * (nd - pos));
        size_t end = pos + bytes / 2;
        if (ncomp < 1 || ncomp > EVALFILE_MAX_COMPLETIONS)
            FAIL(EVALFILE_EFORMAT, "%s: example %d: completion count %zu, expected 1..%d", path, i, ncomp, EVALFILE_MAX_COMPLETIONS);
        if (label >= ncomp)
            FAIL(EVALFILE_EFORMAT, "%s: example %d: label %zu >= completion count %zu", path, i, label, ncomp);
        if (ctx < 1) FAIL(EVALFILE_EFORMAT, "%s: example %d: empty context (a completion needs a token to follow)", path, i);
        size_t q = pos + 6;
        if (ctx > end - q) FAIL(EVALFILE_EFORMAT, "%s: example %d: context of %zu tokens runs past the example's end", path, i, ctx);
        for (size_t t = 0; t < ctx; t++)
            if (vocab > 0 && d[q + t] >= vocab)
                FAIL(EVALFILE_EFORMAT, "%s: example %d: context token %zu is %u, outside the vocabulary (model.vocab_size %d)",
                     path, i, t, d[q + t], vocab);
        q += ctx;
        for (size_t c = 0; c < ncomp; c++) {
            if (q >= end) FAIL(EVALFILE_EFORMAT, "%s: example %d: completion %zu missing (the example ends first)", path, i, c);
            size_t len = d[q++];
            if (len < 1) FAIL(EVALFILE_EFORMAT, "%s: example %d: completion %zu is empty", path, i, c);
            if (len > end - q)
                FAIL(EVALFILE_EFORMAT, "%s: example %d: completion %zu of %zu tokens runs past the example's end", path, i, c, len);
            for (size_t t = 0; t < len; t++)
                if (vocab > 0 && d[q + t] >= vocab)
                    FAIL(EVALFILE_EFORMAT, "%s: example %d: completion %zu token %zu is %u, outside the vocabulary "
                         "(model.vocab_size %d)", path, i, c, t, d[q + t], vocab);
            q += len;
        }
        if (q != end)
            FAIL(EVALFILE_EFORMAT, "%s: example %d: byte length %zu, but its fields take %zu bytes", path, i, bytes, 2 * (q - pos));
        out->off[i] = pos;
        if (with_chars) out->chars_off[i] = ncomps;
        ncomps += ncomp;
        pos = end;
    }
    if (with_chars) {
        if (nd - pos != 2 * ncomps)
            FAIL(EVALFILE_EFORMAT, "%s: header[4] = 1 promises %zu character counts (one per completion, %zu bytes) after "
                 "the examples, but %zu bytes follow them", path, ncomps, 4 * ncomps, 2 * (nd - pos));
        if (!(out->chars = malloc((ncomps ? ncomps : 1) * sizeof *out->chars))) FAIL(EVALFILE_ENOMEM, "%s: out of memory", path);
        for (size_t k = 0; k < ncomps; k++) out->chars[k] = (uint32_t)d[pos + 2 * k] | (uint32_t)d[pos + 2 * k + 1] << 16;
        pos = nd;
    }
    if (pos != nd)
        FAIL(EVALFILE_EFORMAT, "%s: %zu bytes after the %d examples the header counts (wrong count, or two files joined)",
             path, 2 * (nd - pos), out->n);
    if (!(out->path = strdup(path))) FAIL(EVALFILE_ENOMEM, "%s: out of memory", path);
out:
    if (fp) fclose(fp);
    if (rc) evalfile_close(out);
    return rc;
}

void evalfile_example(const struct evalfile *f, int i, struct evalfile_example *ex) {
    const uint16_t *d = f->data + f->off[i];
    ex->index = d[2];
    ex->label = d[3];
    ex->ncomp = d[4];
    ex->ctx_len = d[5];
    ex->ctx = d + 6;
    const uint16_t *q = ex->ctx + ex->ctx_len;
    for (int c = 0; c < ex->ncomp; c++) {
        ex->comp_len[c] = *q++;
        ex->comp[c] = q;
        q += ex->comp_len[c];
        ex->comp_chars[c] = f->chars ? (int)f->chars[f->chars_off[i] + (size_t)c] : -1;
    }
}

/* ---- writer --------------------------------------------------------------------------------------- */

void evalfile_writer_init(struct evalfile_writer *w) { memset(w, 0, sizeof *w); }

void evalfile_writer_release(struct evalfile_writer *w) {
    if (!w) return;
    free(w->buf);
    free(w->chars);
    memset(w, 0, sizeof *w);
}

int evalfile_writer_add(struct evalfile_writer *w, int label, const uint16_t *ctx, int ctx_len, int ncomp,
                        const uint16_t *const *comp, const int *comp_len, char *err, size_t errlen) {
    return evalfile_writer_add_chars(w, label, ctx, ctx_len, ncomp, comp, comp_len, NULL, err, errlen);
}

int evalfile_writer_add_chars(struct evalfile_writer *w, int label, const uint16_t *ctx, int ctx_len, int ncomp,
                              const uint16_t *const *comp, const int *comp_len, const int *comp_chars, char *err,
                              size_t errlen) {
    int rc = EVALFILE_OK, i = w->n;
    if (w->chars_mode && w->chars_mode != (comp_chars ? 1 : 2))
        FAIL(EVALFILE_EINVAL, "example %d: %s character counts, unlike the examples before it (all or none)", i,
             comp_chars ? "has" : "has no");
    if (w->n >= 65536) FAIL(EVALFILE_EINVAL, "example %d: more than 65536 examples in one eval file", i);
    if (ncomp < 1 || ncomp > EVALFILE_MAX_COMPLETIONS)
        FAIL(EVALFILE_EINVAL, "example %d: %d endings, expected 1..%d", i, ncomp, EVALFILE_MAX_COMPLETIONS);
    if (label < 0 || label >= ncomp) FAIL(EVALFILE_EINVAL, "example %d: label %d is not an ending index 0..%d", i, label, ncomp - 1);
    if (ctx_len < 1) FAIL(EVALFILE_EINVAL, "example %d: the context encodes to no tokens", i);
    size_t need = 6 + (size_t)ctx_len;
    for (int c = 0; c < ncomp; c++) {
        if (comp_len[c] < 1) FAIL(EVALFILE_EINVAL, "example %d: ending %d encodes to no tokens", i, c);
        need += 1 + (size_t)comp_len[c];
    }
    if (need * 2 > 65535)
        FAIL(EVALFILE_EINVAL, "example %d: %zu bytes, over the format's 65535 per example (shorten the context)", i, need * 2);
    for (int t = 0; t < ctx_len; t++)
        if (ctx[t] == EVALFILE_DELIM) FAIL(EVALFILE_EINVAL, "example %d: context token %d is 65535 (the delimiter)", i, t);
    for (int c = 0; c < ncomp; c++)
        for (int t = 0; t < comp_len[c]; t++)
            if (comp[c][t] == EVALFILE_DELIM) FAIL(EVALFILE_EINVAL, "example %d: ending %d token %d is 65535 (the delimiter)", i, c, t);
    for (int c = 0; comp_chars && c < ncomp; c++)
        if (comp_chars[c] < 0) FAIL(EVALFILE_EINVAL, "example %d: ending %d has a negative character count", i, c);
    if (comp_chars && w->nchars + (size_t)ncomp > w->chars_cap) {
        size_t cap = w->chars_cap ? w->chars_cap : 1024;
        while (cap < w->nchars + (size_t)ncomp) cap *= 2;
        uint32_t *nc = realloc(w->chars, cap * sizeof *nc);
        if (!nc) FAIL(EVALFILE_ENOMEM, "example %d: out of memory", i);
        w->chars = nc;
        w->chars_cap = cap;
    }
    if (w->len + need > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + need) cap *= 2;
        uint16_t *nb = realloc(w->buf, cap * sizeof *nb);
        if (!nb) FAIL(EVALFILE_ENOMEM, "example %d: out of memory", i);
        w->buf = nb;
        w->cap = cap;
    }
    uint16_t *p = w->buf + w->len;
    *p++ = EVALFILE_DELIM;
    *p++ = (uint16_t)(need * 2);
    *p++ = (uint16_t)i;
    *p++ = (uint16_t)label;
    *p++ = (uint16_t)ncomp;
    *p++ = (uint16_t)ctx_len;
    memcpy(p, ctx, (size_t)ctx_len * 2);
    p += ctx_len;
    for (int c = 0; c < ncomp; c++) {
        *p++ = (uint16_t)comp_len[c];
        memcpy(p, comp[c], (size_t)comp_len[c] * 2);
        p += comp_len[c];
    }
    w->len += need;
    w->n++;
    for (int c = 0; comp_chars && c < ncomp; c++) w->chars[w->nchars++] = (uint32_t)comp_chars[c];
    w->chars_mode = comp_chars ? 1 : 2;
    if ((int)(need * 2) > w->longest_bytes) w->longest_bytes = (int)(need * 2);
out:
    return rc;
}

int evalfile_writer_finish(struct evalfile_writer *w, const char *path, char *err, size_t errlen) {
    int rc = EVALFILE_OK;
    if (w->n == 0) FAIL(EVALFILE_EINVAL, "%s: no examples to write", path);
    int32_t hdr[EVALFILE_HEADER_INTS] = {EVALFILE_MAGIC, EVALFILE_VERSION, w->n, w->longest_bytes, w->chars_mode == 1};
    /* the counts as uint32 little-endian: two uint16, low half first (the body's own byte order) */
    uint16_t *cs = NULL;
    if (w->chars_mode == 1) {
        if (!(cs = malloc((w->nchars ? w->nchars : 1) * 2 * sizeof *cs))) FAIL(EVALFILE_ENOMEM, "%s: out of memory", path);
        for (size_t k = 0; k < w->nchars; k++) { cs[2 * k] = (uint16_t)(w->chars[k] & 0xffff); cs[2 * k + 1] = (uint16_t)(w->chars[k] >> 16); }
    }
    util_part parts[3] = {{hdr, sizeof hdr}, {w->buf, w->len * 2}, {cs, cs ? w->nchars * 4 : 0}};
    char e[512];
    int wrc = util_write_atomic(path, parts, cs ? 3 : 2, 0644, e, sizeof e);
    free(cs);
    if (wrc) FAIL(EVALFILE_EIO, "%s", e);
out:
    return rc;
}
