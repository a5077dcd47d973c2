/* parquet.c — the one-column Parquet reader of parquet.h.
 *
 * Design. Three layers, each bounds-checked against the bytes it was given:
 *  - a Thrift compact-protocol cursor (varints, zigzag ints, field headers with id deltas, lists, skipping any
 *    value of any type up to a nesting depth), with which parse_footer() reads only the FileMetaData fields it
 *    needs (schema, row groups → the chosen column chunk's codec, value count, first page and byte size) and
 *    parse_page_header() the PageHeader of each page;
 *  - page decoding: decompress (snappy / gzip / zstd / brotli / lz4) into a buffer the reader keeps, then
 *    definition levels and values: PLAIN byte arrays (4-byte little-endian length, bytes), dictionary indices (a
 *    bit-width byte and the RLE/bit-packed hybrid) into the dictionary page's values, or the DELTA byte-array
 *    encodings (DELTA_BINARY_PACKED lengths, then the bytes back to back; DELTA_BYTE_ARRAY: prefix lengths too);
 *  - iteration: parquet_next() walks row groups → pages → the page's non-null values, decoding one page at a
 *    time: a PLAIN page is checked whole and then walked value by value, a dictionary-encoded page keeps only
 *    its indices (4 bytes a value), a DELTA page its lengths (4 or 8 bytes a value), every length checked against
 *    the page first; a DELTA_BYTE_ARRAY value is built in one buffer over the previous one (its prefix is
 *    already there), so a page of millions of tiny values costs no array of (pointer, length).
 * Bombs (parquet.h): each page's declared size is checked against its compressed bytes before it is
 * decompressed, and each data page's decoded size (4 + length a value, what PLAIN would take) is added to its
 * column chunk's and the file's before any of its values is handed out, so a refusal comes before the output.
 */
#include "parquet.h"
#include <brotli/decode.h>
#include <lz4.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

/* ---- Thrift compact protocol ------------------------------------------------------------------- */

enum { TC_STOP = 0, TC_TRUE = 1, TC_FALSE = 2, TC_BYTE = 3, TC_I16 = 4, TC_I32 = 5, TC_I64 = 6, TC_DOUBLE = 7,
       TC_BINARY = 8, TC_LIST = 9, TC_SET = 10, TC_MAP = 11, TC_STRUCT = 12 };
#define TC_MAX_DEPTH 32

struct tc { const uint8_t *p, *end; int bad; };

static uint64_t tc_varint(struct tc *t) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (t->p >= t->end) { t->bad = 1; return 0; }
        uint8_t b = *t->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    t->bad = 1;
    return 0;
}
static int64_t tc_int(struct tc *t) { uint64_t v = tc_varint(t); return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* A field header: 0 at STOP, else 1 with *id and *type (booleans carry their value in the type). */
static int tc_field(struct tc *t, int *last, int *id, int *type) {
    if (t->p >= t->end) { t->bad = 1; return 0; }
    uint8_t b = *t->p++;
    if (b == 0) return 0;
    *type = b & 0x0f;
    int delta = b >> 4;
    *id = delta ? *last + delta : (int)tc_int(t);
    *last = *id;
    return !t->bad;
}

static size_t tc_list(struct tc *t, int *etype) {
    *etype = -1;
    if (t->p >= t->end) { t->bad = 1; return 0; }
    uint8_t b = *t->p++;
    *etype = b & 0x0f;
    uint64_t n = b >> 4;
    if (n == 15) n = tc_varint(t);
    if (n > (uint64_t)(t->end - t->p)) { t->bad = 1; return 0; }   /* every element takes at least one byte */
    return (size_t)n;
}

static void tc_binary(struct tc *t, const uint8_t **p, size_t *n) {
    uint64_t len = tc_varint(t);
    if (t->bad || len > (uint64_t)(t->end - t->p)) { t->bad = 1; *p = NULL; *n = 0; return; }
    *p = t->p;
    *n = (size_t)len;
    t->p += len;
}

static void tc_skip(struct tc *t, int type, int depth) {
    if (t->bad) return;
    if (depth > TC_MAX_DEPTH) { t->bad = 1; return; }
    switch (type) {
    case TC_TRUE: case TC_FALSE: return;                 /* in a struct: the value is the type */
    case TC_BYTE: if (t->p >= t->end) t->bad = 1; else t->p++; return;
    case TC_I16: case TC_I32: case TC_I64: tc_varint(t); return;
    case TC_DOUBLE: if (t->end - t->p < 8) t->bad = 1; else t->p += 8; return;
    case TC_BINARY: { const uint8_t *p; size_t n; tc_binary(t, &p, &n); return; }
    case TC_LIST: case TC_SET: {
        int et;
        size_t n = tc_list(t, &et);
        for (size_t i = 0; i < n && !t->bad; i++) {
            if (et == TC_TRUE || et == TC_FALSE) tc_skip(t, TC_BYTE, depth + 1);   /* list booleans are bytes */
            else tc_skip(t, et, depth + 1);
        }
        return;
    }
    case TC_MAP: {
        uint64_t n = tc_varint(t);
        if (t->bad || n == 0) return;
        if (n > (uint64_t)(t->end - t->p)) { t->bad = 1; return; }
        if (t->p >= t->end) { t->bad = 1; return; }
        uint8_t kv = *t->p++;
        int kt = kv >> 4, vt = kv & 0x0f;
        for (uint64_t i = 0; i < n && !t->bad; i++) {
            tc_skip(t, kt == TC_TRUE || kt == TC_FALSE ? TC_BYTE : kt, depth + 1);
            tc_skip(t, vt == TC_TRUE || vt == TC_FALSE ? TC_BYTE : vt, depth + 1);
        }
        return;
    }
    case TC_STRUCT: {
        int last = 0, id, ft;
        while (!t->bad && tc_field(t, &last, &id, &ft)) tc_skip(t, ft, depth + 1);
        return;
    }
    default: t->bad = 1; return;
    }
}

/* ---- the footer -------------------------------------------------------------------------------- */

enum { PQ_BYTE_ARRAY = 6 };
enum { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };
enum { ENC_PLAIN = 0, ENC_PLAIN_DICTIONARY = 2, ENC_RLE = 3, ENC_BIT_PACKED = 4, ENC_DELTA_BINARY_PACKED = 5,
       ENC_DELTA_LENGTH_BYTE_ARRAY = 6, ENC_DELTA_BYTE_ARRAY = 7, ENC_RLE_DICTIONARY = 8 };
enum { CODEC_NONE = 0, CODEC_SNAPPY = 1, CODEC_GZIP = 2, CODEC_LZO = 3, CODEC_BROTLI = 4, CODEC_LZ4 = 5, CODEC_ZSTD = 6,
       CODEC_LZ4_RAW = 7 };
enum { PAGE_DATA = 0, PAGE_INDEX = 1, PAGE_DICT = 2, PAGE_DATA_V2 = 3 };

static const char *codec_name(int c) {
    static const char *n[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
    return c >= 0 && c < 8 ? n[c] : "an unknown codec";
}
static const char *encoding_name(int e) {
    static const char *n[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED",
                              "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "RLE_DICTIONARY",
                              "BYTE_STREAM_SPLIT"};
    return e >= 0 && e < 10 ? n[e] : "an unknown encoding";
}
static const char *type_name(int t) {
    static const char *n[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
                              "FIXED_LEN_BYTE_ARRAY"};
    return t >= 0 && t < 8 ? n[t] : "an unknown type";
}

struct chunk_meta { int codec; int64_t num_values, start, size; };

struct val { const uint8_t *p; uint32_t n; };

/* A data page's values: PLAIN from plain_p; dictionary indices in idx; DELTA_LENGTH_BYTE_ARRAY lengths in idx,
 * bytes from plain_p; DELTA_BYTE_ARRAY prefix lengths in idx, suffix lengths in sfx, suffixes from plain_p. */
enum { VALS_PLAIN, VALS_DICT, VALS_DLBA, VALS_DBA };

struct parquet_reader {
    const uint8_t *data;
    size_t len;
    int64_t num_rows;
    int max_def;
    int nrg;
    struct chunk_meta *rg;
    /* iteration */
    int cur_rg, state_rc;
    int64_t pos, end, seen;          /* current column chunk: next page, end, values seen in data pages */
    int page_no;
    uint8_t *dict_buf, *page_buf;    /* decompressed dictionary and data page */
    size_t dict_cap, page_cap;
    struct val *dict;
    size_t ndict, dict_alloc;
    size_t nvals, next_val;          /* the current data page's non-null values */
    int mode;                        /* VALS_*: how they are stored */
    const uint8_t *plain_p;          /* PLAIN: the next value; DELTA_*: the next value's (suffix) bytes */
    uint32_t *sfx;                   /* DELTA_BYTE_ARRAY: suffix lengths (prefix lengths are in idx) */
    size_t sfx_cap;
    uint8_t *cur;                    /* DELTA_BYTE_ARRAY: the value last handed out, the next one's prefix */
    size_t cur_cap, cur_need;        /* cur_need: the page's longest value */
    uint64_t rg_decoded, file_decoded;   /* decoded bytes (4 + length a value) of the chunk and the file so far */
    uint32_t *idx;                   /* def levels / dictionary indices scratch */
    size_t idx_cap;
    uint8_t *defs;
    size_t defs_cap;
};

static int fail(char *err, size_t errlen, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return code;
}

struct schema_el { int type, rep, nchild; const uint8_t *name; size_t nlen; };

static void parse_schema_el(struct tc *t, struct schema_el *e) {
    int last = 0, id, ft;
    memset(e, 0, sizeof *e);
    e->type = -1;
    e->rep = PQ_REQUIRED;
    while (!t->bad && tc_field(t, &last, &id, &ft)) {
        if (id == 1 && ft == TC_I32) e->type = (int)tc_int(t);
        else if (id == 3 && ft == TC_I32) e->rep = (int)tc_int(t);
        else if (id == 4 && ft == TC_BINARY) tc_binary(t, &e->name, &e->nlen);
        else if (id == 5 && ft == TC_I32) e->nchild = (int)tc_int(t);
        else tc_skip(t, ft, 1);
    }
}

/* ColumnMetaData: codec, num_values, data_page_offset, dictionary_page_offset, total_compressed_size, type */
static void parse_col_meta(struct tc *t, struct chunk_meta *m, int *type) {
    int last = 0, id, ft;
    int64_t data_off = -1, dict_off = -1;
    while (!t->bad && tc_field(t, &last, &id, &ft)) {
        if (id == 1 && ft == TC_I32) *type = (int)tc_int(t);
        else if (id == 4 && ft == TC_I32) m->codec = (int)tc_int(t);
        else if (id == 5 && ft == TC_I64) m->num_values = tc_int(t);
        else if (id == 7 && ft == TC_I64) m->size = tc_int(t);
        else if (id == 9 && ft == TC_I64) data_off = tc_int(t);
        else if (id == 11 && ft == TC_I64) dict_off = tc_int(t);
        else tc_skip(t, ft, 2);
    }
    /* some writers put 0 in dictionary_page_offset for "none": the chunk starts at the lower real offset */
    m->start = dict_off > 0 && dict_off < data_off ? dict_off : data_off;
}

/* ColumnChunk: file_path (must be absent or empty), meta_data */
static int parse_col_chunk(struct tc *t, struct chunk_meta *m, int *type, int *external) {
    int last = 0, id, ft, have = 0;
    while (!t->bad && tc_field(t, &last, &id, &ft)) {
        if (id == 1 && ft == TC_BINARY) { const uint8_t *p; size_t n; tc_binary(t, &p, &n); if (n) *external = 1; }
        else if (id == 3 && ft == TC_STRUCT) { parse_col_meta(t, m, type); have = 1; }
        else tc_skip(t, ft, 2);
    }
    return have;
}

/* Column chunks of one column never share bytes in a file a writer made; row groups that point at one page
 * would multiply it (the decoded-size caps count per chunk). Sorted copies of (start, size, row group). */
struct span { int64_t start, size; int g; };
static int span_cmp(const void *a, const void *b) {
    const struct span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}
static int check_disjoint(const struct parquet_reader *r, char *err, size_t errlen) {
    if (r->nrg < 2) return 0;
    struct span *sp = malloc((size_t)r->nrg * sizeof *sp);
    if (!sp) return fail(err, errlen, PARQUET_ENOMEM, "out of memory");
    for (int g = 0; g < r->nrg; g++) sp[g] = (struct span){r->rg[g].start, r->rg[g].size, g};
    qsort(sp, (size_t)r->nrg, sizeof *sp, span_cmp);
    int rc = 0;
    for (int i = 1; i < r->nrg && !rc; i++)
        if (sp[i - 1].size > 0 && sp[i].size > 0 && sp[i].start < sp[i - 1].start + sp[i - 1].size)
            rc = fail(err, errlen, PARQUET_EFORMAT, "row groups %d and %d: their column chunks share bytes (from offset %lld): "
                      "no writer does that; a bomb does, to have one page read again and again",
                      sp[i - 1].g < sp[i].g ? sp[i - 1].g : sp[i].g, sp[i - 1].g < sp[i].g ? sp[i].g : sp[i - 1].g,
                      (long long)sp[i].start);
    free(sp);
    return rc;
}

static int parse_footer(struct parquet_reader *r, const uint8_t *p, size_t n, const char *column, char *err,
                        size_t errlen) {
    struct tc t = {p, p + n, 0};
    int last = 0, id, ft, leaf = -1, have_schema = 0, coltype = -1, rc = 0;
    while (!t.bad && tc_field(&t, &last, &id, &ft)) {
        if (id == 2 && ft == TC_LIST) {           /* schema: depth-first, element 0 the root */
            int et;
            size_t ne = tc_list(&t, &et);
            if (et != TC_STRUCT || ne < 1) { t.bad = 1; break; }
            struct schema_el root;
            parse_schema_el(&t, &root);
            int64_t pending = root.nchild, leaves = 0, depth_left = 0;   /* depth_left: elements still inside a group */
            int found = 0;
            for (size_t i = 1; i < ne && !t.bad; i++) {
                struct schema_el e;
                parse_schema_el(&t, &e);
                if (e.nchild < 0) { t.bad = 1; break; }
                int top = depth_left == 0;
                if (top) { if (pending-- <= 0) { t.bad = 1; break; } }
                else depth_left--;
                depth_left += e.nchild;
                if (top && !found && e.nlen == strlen(column) && memcmp(e.name, column, e.nlen) == 0) {
                    found = 1;
                    if (e.nchild > 0) rc = fail(err, errlen, PARQUET_EUNSUPPORTED, "column \"%s\" is a group (nested), not a text column", column);
                    else if (e.rep == PQ_REPEATED) rc = fail(err, errlen, PARQUET_EUNSUPPORTED, "column \"%s\" is repeated (a list), not a text column", column);
                    else if (e.type != PQ_BYTE_ARRAY) rc = fail(err, errlen, PARQUET_EUNSUPPORTED, "column \"%s\" is %s, not BYTE_ARRAY (text)", column, type_name(e.type));
                    leaf = (int)leaves;
                    r->max_def = e.rep == PQ_OPTIONAL;
                }
                if (e.nchild == 0) leaves++;
            }
            if (!t.bad && !found && !rc) rc = fail(err, errlen, PARQUET_EUNSUPPORTED, "no top-level column \"%s\"", column);
            if (rc) return rc;
            have_schema = 1;
        } else if (id == 3 && ft == TC_I64) {
            r->num_rows = tc_int(&t);
        } else if (id == 4 && ft == TC_LIST && have_schema && !r->rg) {   /* row groups */
            int et;
            size_t ng = tc_list(&t, &et);
            if (et != TC_STRUCT) { t.bad = 1; break; }
            if (!(r->rg = calloc(ng ? ng : 1, sizeof *r->rg))) return fail(err, errlen, PARQUET_ENOMEM, "out of memory");
            for (size_t g = 0; g < ng && !t.bad; g++) {
                int l2 = 0, id2, ft2, got = 0;
                while (!t.bad && tc_field(&t, &l2, &id2, &ft2)) {
                    if (id2 == 1 && ft2 == TC_LIST) {
                        int et2;
                        size_t nc = tc_list(&t, &et2);
                        if (et2 != TC_STRUCT) { t.bad = 1; break; }
                        for (size_t c = 0; c < nc && !t.bad; c++) {
                            struct chunk_meta m = {.start = -1};
                            int ty = -1, ext = 0;
                            int have = parse_col_chunk(&t, &m, &ty, &ext);
                            if ((int)c != leaf) continue;
                            if (!have) return fail(err, errlen, PARQUET_EFORMAT, "row group %zu: column chunk without metadata", g);
                            if (ext) return fail(err, errlen, PARQUET_EUNSUPPORTED, "row group %zu: the column's data is in another file (file_path)", g);
                            if (ty != PQ_BYTE_ARRAY) return fail(err, errlen, PARQUET_EFORMAT, "row group %zu: the column chunk is %s, the schema says BYTE_ARRAY", g, type_name(ty));
                            coltype = ty;
                            r->rg[g] = m;
                            got = 1;
                        }
                    } else tc_skip(&t, ft2, 1);
                }
                if (!t.bad && !got) return fail(err, errlen, PARQUET_EFORMAT, "row group %zu has no column %d", g, leaf);
                r->nrg = (int)(g + 1);
            }
        } else tc_skip(&t, ft, 1);
    }
    (void)coltype;
    if (t.bad) return fail(err, errlen, PARQUET_EFORMAT, "the footer (FileMetaData) is malformed at byte %zu of %zu", (size_t)(t.p - p), n);
    if (!have_schema) return fail(err, errlen, PARQUET_EFORMAT, "the footer has no schema");
    for (int g = 0; g < r->nrg; g++) {
        struct chunk_meta *m = &r->rg[g];
        if (m->codec < CODEC_NONE || m->codec > CODEC_LZ4_RAW || m->codec == CODEC_LZO)
            return fail(err, errlen, PARQUET_EUNSUPPORTED, "row group %d: %s pages are not supported (UNCOMPRESSED, SNAPPY, GZIP, "
                        "BROTLI, LZ4, LZ4_RAW and ZSTD are)", g, codec_name(m->codec));
        if (m->start < 4 || m->size < 0 || m->num_values < 0 || (uint64_t)m->start + (uint64_t)m->size > r->len - 8)
            return fail(err, errlen, PARQUET_EFORMAT, "row group %d: the column chunk (offset %lld, %lld bytes) lies outside the file (%zu bytes)",
                        g, (long long)m->start, (long long)m->size, r->len);
    }
    return check_disjoint(r, err, errlen);
}

int parquet_open(const uint8_t *data, size_t len, const char *column, struct parquet_reader **out, char *err,
                 size_t errlen) {
    *out = NULL;
    if (len < 12 || memcmp(data, "PAR1", 4) != 0) return fail(err, errlen, PARQUET_EFORMAT, "not a parquet file (no PAR1 at the start)");
    if (memcmp(data + len - 4, "PARE", 4) == 0) return fail(err, errlen, PARQUET_EUNSUPPORTED, "an encrypted parquet file (PARE footer)");
    if (memcmp(data + len - 4, "PAR1", 4) != 0) return fail(err, errlen, PARQUET_EFORMAT, "truncated: no PAR1 at the end (the footer is missing)");
    uint32_t flen = (uint32_t)data[len - 8] | (uint32_t)data[len - 7] << 8 | (uint32_t)data[len - 6] << 16 | (uint32_t)data[len - 5] << 24;
    if ((uint64_t)flen + 12 > len) return fail(err, errlen, PARQUET_EFORMAT, "the footer length %u exceeds the file (%zu bytes)", flen, len);
    struct parquet_reader *r = calloc(1, sizeof *r);
    if (!r) return fail(err, errlen, PARQUET_ENOMEM, "out of memory");
    r->data = data;
    r->len = len;
    r->cur_rg = -1;
    int rc = parse_footer(r, data + len - 8 - flen, flen, column, err, errlen);
    if (rc) { parquet_close(r); return rc; }
    *out = r;
    return 0;
}

int64_t parquet_num_rows(const struct parquet_reader *r) { return r->num_rows; }
int parquet_num_row_groups(const struct parquet_reader *r) { return r->nrg; }

void parquet_close(struct parquet_reader *r) {
    if (!r) return;
    free(r->rg);
    free(r->dict_buf);
    free(r->page_buf);
    free(r->dict);
    free(r->idx);
    free(r->defs);
    free(r->sfx);
    free(r->cur);
    free(r);
}

/* ---- pages ------------------------------------------------------------------------------------- */

struct page_header {
    int type, num_values, encoding, def_encoding, num_nulls, def_len, rep_len, is_compressed;
    int64_t usize, csize;
};

static void parse_page_header(struct tc *t, struct page_header *h) {
    int last = 0, id, ft;
    memset(h, 0, sizeof *h);
    h->type = -1;
    h->encoding = -1;
    h->def_encoding = ENC_RLE;
    h->is_compressed = 1;
    while (!t->bad && tc_field(t, &last, &id, &ft)) {
        if (id == 1 && ft == TC_I32) h->type = (int)tc_int(t);
        else if (id == 2 && ft == TC_I32) h->usize = tc_int(t);
        else if (id == 3 && ft == TC_I32) h->csize = tc_int(t);
        else if ((id == 5 || id == 7 || id == 8) && ft == TC_STRUCT) {
            int l2 = 0, i2, f2;
            while (!t->bad && tc_field(t, &l2, &i2, &f2)) {
                if (f2 == TC_I32 && i2 == 1) h->num_values = (int)tc_int(t);
                else if (f2 == TC_I32 && id == 5 && i2 == 2) h->encoding = (int)tc_int(t);
                else if (f2 == TC_I32 && id == 5 && i2 == 3) h->def_encoding = (int)tc_int(t);
                else if (f2 == TC_I32 && id == 7 && i2 == 2) h->encoding = (int)tc_int(t);
                else if (f2 == TC_I32 && id == 8 && i2 == 2) h->num_nulls = (int)tc_int(t);
                else if (f2 == TC_I32 && id == 8 && i2 == 4) h->encoding = (int)tc_int(t);
                else if (f2 == TC_I32 && id == 8 && i2 == 5) h->def_len = (int)tc_int(t);
                else if (f2 == TC_I32 && id == 8 && i2 == 6) h->rep_len = (int)tc_int(t);
                else if ((f2 == TC_TRUE || f2 == TC_FALSE) && id == 8 && i2 == 7) h->is_compressed = f2 == TC_TRUE;
                else tc_skip(t, f2, 2);
            }
        } else tc_skip(t, ft, 1);
    }
}

static int grow_bytes(uint8_t **b, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 1 << 16;
    while (nc < need) nc *= 2;
    uint8_t *nb = realloc(*b, nc);
    if (!nb) return -1;
    *b = nb;
    *cap = nc;
    return 0;
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* The deprecated LZ4 codec: what parquet-mr (Hadoop's Lz4Codec) writes, frames of a big-endian uncompressed size
 * and compressed size then that raw block, back to back. Writers disagree (parquet-cpp before 2.x wrote the LZ4
 * frame format, some a bare raw block), so when the bytes are not a chain of Hadoop frames that fills exactly
 * usize they are tried as an LZ4 frame (its magic) and then as one raw block, as arrow's readers do. Every try
 * writes into out[0..usize) only. */
static int lz4_hadoop(const uint8_t *src, size_t csize, size_t usize, uint8_t *out, char *err, size_t errlen) {
    size_t in = 0, got = 0;
    while (csize - in >= 8) {
        uint32_t ulen = be32(src + in), clen = be32(src + in + 4);
        if (clen > csize - in - 8 || ulen > usize - got || clen > INT32_MAX) break;
        if (LZ4_decompress_safe((const char *)src + in + 8, (char *)out + got, (int)clen, (int)ulen) != (int)ulen) break;
        in += 8 + clen;
        got += ulen;
    }
    if (in == csize && got == usize && csize) return 0;
    if (csize >= 4 && src[0] == 0x04 && src[1] == 0x22 && src[2] == 0x4d && src[3] == 0x18) {   /* LZ4 frame magic */
        LZ4F_dctx *dc;
        if (LZ4F_isError(LZ4F_createDecompressionContext(&dc, LZ4F_VERSION)))
            return fail(err, errlen, PARQUET_ENOMEM, "out of memory (lz4)");
        size_t o = 0, i = 0, hint = 1;
        while (hint && i < csize && o <= usize) {
            size_t dst = usize - o, sn = csize - i;
            hint = LZ4F_decompress(dc, out + o, &dst, src + i, &sn, NULL);
            if (LZ4F_isError(hint) || (dst == 0 && sn == 0)) break;
            o += dst;
            i += sn;
        }
        LZ4F_freeDecompressionContext(dc);
        if (!LZ4F_isError(hint) && hint == 0 && o == usize) return 0;
    }
    if (csize <= INT32_MAX && LZ4_decompress_safe((const char *)src, (char *)out, (int)csize, (int)usize) == (int)usize) return 0;
    return fail(err, errlen, PARQUET_EFORMAT, "an LZ4 page does not decompress to its stated %zu bytes (as Hadoop frames, "
                "an LZ4 frame or a raw block)", usize);
}

/* Decompresses src into *buf (grown) which must come out exactly usize bytes. */
static int decompress(int codec, const uint8_t *src, size_t csize, size_t usize, uint8_t **buf, size_t *cap,
                      char *err, size_t errlen) {
    if (usize > PARQUET_MAX_PAGE) return fail(err, errlen, PARQUET_EUNSUPPORTED, "a page of %zu bytes (the most is %u)", usize, PARQUET_MAX_PAGE);
    if (grow_bytes(buf, cap, usize ? usize : 1)) return fail(err, errlen, PARQUET_ENOMEM, "out of memory for a page of %zu bytes", usize);
    if (codec == CODEC_NONE) {
        if (csize != usize) return fail(err, errlen, PARQUET_EFORMAT, "an uncompressed page of %zu bytes says %zu uncompressed", csize, usize);
        memcpy(*buf, src, usize);
        return 0;
    }
    if (codec == CODEC_SNAPPY) {
        size_t n;
        if (snappy_uncompressed_length((const char *)src, csize, &n) != SNAPPY_OK || n != usize)
            return fail(err, errlen, PARQUET_EFORMAT, "a snappy page does not decompress to its stated %zu bytes", usize);
        if (snappy_uncompress((const char *)src, csize, (char *)*buf, &n) != SNAPPY_OK || n != usize)
            return fail(err, errlen, PARQUET_EFORMAT, "a snappy page is corrupt");
        return 0;
    }
    if (codec == CODEC_ZSTD) {
        size_t n = ZSTD_decompress(*buf, usize, src, csize);
        if (ZSTD_isError(n) || n != usize)
            return fail(err, errlen, PARQUET_EFORMAT, "a zstd page does not decompress to its stated %zu bytes%s%s", usize,
                        ZSTD_isError(n) ? ": " : "", ZSTD_isError(n) ? ZSTD_getErrorName(n) : "");
        return 0;
    }
    if (codec == CODEC_LZ4_RAW) {
        if (csize > INT32_MAX || LZ4_decompress_safe((const char *)src, (char *)*buf, (int)csize, (int)usize) != (int)usize)
            return fail(err, errlen, PARQUET_EFORMAT, "an LZ4_RAW page does not decompress to its stated %zu bytes", usize);
        return 0;
    }
    if (codec == CODEC_LZ4) return lz4_hadoop(src, csize, usize, *buf, err, errlen);
    if (codec == CODEC_BROTLI) {
        size_t n = usize;
        if (BrotliDecoderDecompress(csize, src, &n, *buf) != BROTLI_DECODER_RESULT_SUCCESS || n != usize)
            return fail(err, errlen, PARQUET_EFORMAT, "a brotli page does not decompress to its stated %zu bytes", usize);
        return 0;
    }
    /* GZIP */
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 32) != Z_OK) return fail(err, errlen, PARQUET_ENOMEM, "out of memory (zlib)");
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)csize;
    z.next_out = *buf;
    z.avail_out = (uInt)usize;
    int zr = inflate(&z, Z_FINISH);
    size_t n = usize - z.avail_out;
    inflateEnd(&z);
    if (zr != Z_STREAM_END || n != usize) return fail(err, errlen, PARQUET_EFORMAT, "a gzip page does not decompress to its stated %zu bytes", usize);
    return 0;
}

/* The RLE / bit-packed hybrid: count values of bit width bw from p[0..n). 0 or -1 (runs past the data). */
static int rle_decode(const uint8_t *p, size_t n, int bw, uint32_t *out, size_t count) {
    size_t got = 0, vbytes = (size_t)(bw + 7) / 8;
    struct tc t = {p, p + n, 0};
    while (got < count) {
        uint64_t h = tc_varint(&t);
        if (t.bad) return -1;
        if (h & 1) {                                   /* bit-packed: (h >> 1) groups of 8 */
            uint64_t groups = h >> 1, nv = groups * 8;
            size_t avail = (size_t)(t.end - t.p);
            if (groups == 0) continue;
            if (groups > avail) return -1;
            size_t take = nv < count - got ? (size_t)nv : count - got;
            if (((uint64_t)take * bw + 7) / 8 > avail) return -1;
            uint64_t acc = 0;
            int have = 0;
            const uint8_t *q = t.p;
            for (size_t k = 0; k < take; k++) {
                while (have < bw) { acc |= (uint64_t)*q++ << have; have += 8; }
                out[got++] = bw ? (uint32_t)(acc & ((bw == 32 ? 0xffffffffull : (1ull << bw) - 1))) : 0;
                acc = bw == 64 ? 0 : acc >> bw;
                have -= bw;
            }
            size_t full = (size_t)(groups * (uint64_t)bw);   /* the whole run's bytes, when present */
            t.p += full <= avail ? full : (size_t)(q - t.p);
        } else {                                       /* RLE: h >> 1 repeats of one value */
            uint64_t run = h >> 1;
            if ((size_t)(t.end - t.p) < vbytes) return -1;
            uint32_t v = 0;
            for (size_t k = 0; k < vbytes; k++) v |= (uint32_t)t.p[k] << (8 * k);
            t.p += vbytes;
            if (run == 0) continue;                    /* no values, but its bytes were consumed: bounded */
            size_t take = run < count - got ? (size_t)run : count - got;
            for (size_t k = 0; k < take; k++) out[got++] = v;
        }
    }
    return 0;
}

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* n PLAIN byte arrays from p[0..len): into out (pointers into p) when out is given. The bytes they take (4 +
 * length each), or -1 when they run past len. */
static int64_t plain_decode(const uint8_t *p, size_t len, size_t n, struct val *out) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (len - o < 4) return -1;
        uint32_t l = le32(p + o);
        o += 4;
        if (l > len - o) return -1;
        if (out) out[i] = (struct val){p + o, l};
        o += l;
    }
    return (int64_t)o;
}

/* w bits (w <= 64) at bit offset bit of p, least significant bit first (the caller checked they are there). */
static uint64_t bits_at(const uint8_t *p, uint64_t bit, int w) {
    uint64_t v = 0;
    for (int got = 0; got < w;) {
        int off = (int)(bit & 7), take = 8 - off < w - got ? 8 - off : w - got;
        v |= (uint64_t)((p[bit >> 3] >> off) & ((1u << take) - 1)) << got;
        got += take;
        bit += (uint64_t)take;
    }
    return v;
}

/* DELTA_BINARY_PACKED: a header (values per block, a multiple of 128; miniblocks per block, each a multiple of 32
 * values; the value count; the first value, zigzag), then blocks of a zigzag minimum delta, one bit width a
 * miniblock and the miniblocks' bit-packed deltas above the minimum; a miniblock after the last value is absent,
 * the last one present is full. Decodes the stream at p[0..n) into out[0..count) as the non-negative 32-bit
 * lengths the byte-array encodings store (arithmetic wraps, as writers' does), requiring the header's count to be
 * count. The bytes the stream took, or -1 with why (a static string). */
static int64_t delta_lengths(const uint8_t *p, size_t n, uint32_t *out, size_t count, const char **why) {
    struct tc t = {p, p + n, 0};
    uint64_t block = tc_varint(&t), nmini = tc_varint(&t), total = tc_varint(&t);
    int64_t first = tc_int(&t);
    if (t.bad) return *why = "its header is truncated", -1;
    if (block == 0 || block % 128 || block > (1u << 20) || nmini == 0 || block % nmini || (block / nmini) % 32)
        return *why = "its header's block size / miniblock count is not a multiple of 128 / of 32 values", -1;
    if (total != count) return *why = "its value count differs from the page's non-null values", -1;
    if (count == 0) return (int64_t)(t.p - p);
    uint64_t per = block / nmini, v = (uint64_t)first;
    size_t got = 0;
    out[got++] = (uint32_t)v;
    while (got < count) {
        uint64_t min = (uint64_t)tc_int(&t);
        if (t.bad || (size_t)(t.end - t.p) < nmini) return *why = "a block's header is truncated", -1;
        const uint8_t *widths = t.p;
        t.p += nmini;
        for (uint64_t m = 0; m < nmini && got < count; m++) {
            int w = widths[m];
            if (w > 64) return *why = "a miniblock's bit width is over 64", -1;
            uint64_t bytes = per * (uint64_t)w / 8;
            if (bytes > (uint64_t)(t.end - t.p)) return *why = "a miniblock runs past the page", -1;
            for (uint64_t k = 0; k < per && got < count; k++) {
                v += min + bits_at(t.p, k * (uint64_t)w, w);
                out[got++] = (uint32_t)v;
            }
            t.p += bytes;
        }
    }
    for (size_t i = 0; i < count; i++)
        if (out[i] > INT32_MAX) return *why = "a length is negative", -1;
    return (int64_t)(t.p - p);
}

/* err = "row group G, page P: " + the message */
static int page_fail(const struct parquet_reader *r, char *err, size_t errlen, int code, const char *fmt, ...) {
    int n = snprintf(err, errlen, "row group %d, page %d: ", r->cur_rg, r->page_no);
    if (n < 0 || (size_t)n >= errlen) return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return code;
}
#define PFAIL(code, ...) page_fail(r, err, errlen, code, __VA_ARGS__)
#define PARQUET_MAX_PAGE_VALUES (1 << 24)

/* A compressed page that declares more than PARQUET_BOMB_RATIO times its bytes, beyond PARQUET_BOMB_FLOOR:
 * refused before a byte of it is decompressed. */
static int page_bomb(const struct parquet_reader *r, int codec, int64_t csize, int64_t usize, char *err, size_t errlen) {
    if (codec == CODEC_NONE || usize <= (int64_t)PARQUET_BOMB_FLOOR || usize <= (int64_t)PARQUET_BOMB_RATIO * csize) return 0;
    return PFAIL(PARQUET_EUNSUPPORTED, "a %s page of %lld bytes declares %lld decompressed (%.0fx): over %dx and %u MiB "
                 "is a decompression bomb, refused before decompressing; a genuine file of such pages can be rewritten "
                 "with the writer's default (1 MiB) pages", codec_name(codec), (long long)csize, (long long)usize,
                 (double)usize / (double)(csize ? csize : 1), PARQUET_BOMB_RATIO, PARQUET_BOMB_FLOOR >> 20);
}

/* Adds a data page's decoded bytes to its column chunk's and the file's, refusing a page over PARQUET_MAX_PAGE
 * and a chunk or file past PARQUET_BOMB_RATIO times its bytes beyond PARQUET_BOMB_FLOOR. */
static int count_decoded(struct parquet_reader *r, uint64_t page, size_t nvals, char *err, size_t errlen) {
    const struct chunk_meta *m = &r->rg[r->cur_rg];
    if (page > PARQUET_MAX_PAGE)
        return PFAIL(PARQUET_EUNSUPPORTED, "a data page's %zu values decode to %.1f MiB (4 + length each), more than a "
                     "page may (%u MiB): a dictionary or DELTA_BYTE_ARRAY prefix bomb, or a file to rewrite with smaller "
                     "pages", nvals, page / 1048576.0, PARQUET_MAX_PAGE >> 20);
    r->rg_decoded += page;
    r->file_decoded += page;
    const char *what = NULL;
    uint64_t got = 0, in = 0;
    if (r->rg_decoded > PARQUET_BOMB_FLOOR && r->rg_decoded / PARQUET_BOMB_RATIO > (uint64_t)m->size)
        what = "the column chunk's", got = r->rg_decoded, in = (uint64_t)m->size;
    else if (r->file_decoded > PARQUET_BOMB_FLOOR && r->file_decoded / PARQUET_BOMB_RATIO > (uint64_t)r->len)
        what = "the file's", got = r->file_decoded, in = (uint64_t)r->len;
    if (!what) return 0;
    return PFAIL(PARQUET_EUNSUPPORTED, "%s values decode to %.1f MiB from %llu bytes (over %dx, beyond %u MiB): a "
                 "decompression, dictionary or prefix bomb, refused; genuine text repeated that often is worth "
                 "deduplicating first", what, got / 1048576.0, (unsigned long long)in, PARQUET_BOMB_RATIO, PARQUET_BOMB_FLOOR >> 20);
}

static int grow_u32(uint32_t **a, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    uint32_t *n = realloc(*a, need * sizeof *n);
    if (!n) return -1;
    *a = n;
    *cap = need;
    return 0;
}

/* The nonnull values of a DELTA_LENGTH_BYTE_ARRAY page (DELTA_BINARY_PACKED lengths, then the bytes back to back)
 * or a DELTA_BYTE_ARRAY one (prefix lengths, suffix lengths, then the suffixes; a value is the previous value's
 * first prefix-length bytes and its suffix; the first value of a page has none) at vals[0..len): every length
 * checked against the page, and *decoded (4 + length a value) summed for count_decoded before any is handed out. */
static int delta_page(struct parquet_reader *r, const uint8_t *vals, size_t len, size_t nonnull, int enc,
                      uint64_t *decoded, char *err, size_t errlen) {
    const char *why = "", *name = encoding_name(enc);
    *decoded = 0;
    r->mode = VALS_PLAIN;
    if (!nonnull) return 0;          /* a page of nulls: nothing to read, whatever a writer put after its levels */
    if (grow_u32(&r->idx, &r->idx_cap, nonnull) || (enc == ENC_DELTA_BYTE_ARRAY && grow_u32(&r->sfx, &r->sfx_cap, nonnull)))
        return PFAIL(PARQUET_ENOMEM, "out of memory");
    int64_t used = delta_lengths(vals, len, r->idx, nonnull, &why);
    if (used < 0) return PFAIL(PARQUET_EFORMAT, "the %s %s lengths are malformed: %s", name, enc == ENC_DELTA_BYTE_ARRAY ? "prefix" : "value", why);
    uint64_t bytes = 0, total = 0;
    if (enc == ENC_DELTA_LENGTH_BYTE_ARRAY) {
        for (size_t i = 0; i < nonnull; i++) bytes += r->idx[i];
        total = bytes + 4 * (uint64_t)nonnull;
        r->mode = VALS_DLBA;
    } else {
        int64_t used2 = delta_lengths(vals + used, len - (size_t)used, r->sfx, nonnull, &why);
        if (used2 < 0) return PFAIL(PARQUET_EFORMAT, "the %s suffix lengths are malformed: %s", name, why);
        used += used2;
        uint64_t prev = 0;
        r->cur_need = 0;
        for (size_t i = 0; i < nonnull && total <= PARQUET_MAX_PAGE; i++) {   /* past the cap: refused below */
            if (r->idx[i] > prev)
                return PFAIL(PARQUET_EFORMAT, "%s value %zu takes a prefix of %u bytes from a value of %llu", name, i,
                             r->idx[i], (unsigned long long)prev);
            prev = (uint64_t)r->idx[i] + r->sfx[i];
            bytes += r->sfx[i];
            total += 4 + prev;
            if (prev > r->cur_need) r->cur_need = (size_t)prev;
        }
        r->mode = VALS_DBA;
    }
    if (bytes > len - (size_t)used)
        return PFAIL(PARQUET_EFORMAT, "the %s values' %llu bytes run past the page (%zu bytes after their lengths)", name,
                     (unsigned long long)bytes, len - (size_t)used);
    *decoded = total;
    r->plain_p = vals + used;
    return 0;
}

/* Reads the page at r->pos: a dictionary page replaces the dictionary, a data page becomes the current values. */
static int read_page(struct parquet_reader *r, char *err, size_t errlen) {
    const struct chunk_meta *m = &r->rg[r->cur_rg];
    struct tc t = {r->data + r->pos, r->data + r->end, 0};
    struct page_header h;
    parse_page_header(&t, &h);
    if (t.bad) return PFAIL(PARQUET_EFORMAT, "malformed page header at byte %lld", (long long)r->pos);
    int64_t body = (int64_t)(t.p - r->data);
    if (h.csize < 0 || h.usize < 0 || h.num_values < 0 || h.csize > r->end - body)
        return PFAIL(PARQUET_EFORMAT, "the page (%lld bytes at byte %lld) runs past its column chunk", (long long)h.csize, (long long)body);
    r->pos = body + h.csize;
    const uint8_t *src = r->data + body;
    r->nvals = r->next_val = 0;
    if (h.type == PAGE_INDEX) return 0;
    int brc = page_bomb(r, h.type == PAGE_DATA_V2 && !h.is_compressed ? CODEC_NONE : m->codec, h.csize, h.usize, err, errlen);
    if (brc) return brc;
    if (h.type == PAGE_DICT) {
        if (h.encoding != ENC_PLAIN && h.encoding != ENC_PLAIN_DICTIONARY)
            return PFAIL(PARQUET_EUNSUPPORTED, "a dictionary page in %s", encoding_name(h.encoding));
        if (h.num_values > (int64_t)PARQUET_MAX_DICT)
            return PFAIL(PARQUET_EUNSUPPORTED, "a dictionary of %d entries (the most is %u; writers fall back to PLAIN "
                         "pages near 1 MiB of dictionary): a dictionary bomb, or a file to rewrite", h.num_values, PARQUET_MAX_DICT);
        int rc = decompress(m->codec, src, (size_t)h.csize, (size_t)h.usize, &r->dict_buf, &r->dict_cap, err, errlen);
        if (rc) return rc;
        if ((size_t)h.num_values > (size_t)h.usize / 4 + 1) return PFAIL(PARQUET_EFORMAT, "a dictionary of %d values in %lld bytes", h.num_values, (long long)h.usize);
        if ((size_t)h.num_values > r->dict_alloc) {
            struct val *d = realloc(r->dict, (size_t)h.num_values * sizeof *d);
            if (!d) return PFAIL(PARQUET_ENOMEM, "out of memory for the dictionary");
            r->dict = d;
            r->dict_alloc = (size_t)h.num_values;
        }
        if (plain_decode(r->dict_buf, (size_t)h.usize, (size_t)h.num_values, r->dict) < 0)
            return PFAIL(PARQUET_EFORMAT, "the dictionary's values run past the page");
        r->ndict = (size_t)h.num_values;
        return 0;
    }
    if (h.type != PAGE_DATA && h.type != PAGE_DATA_V2) return PFAIL(PARQUET_EFORMAT, "unknown page type %d", h.type);
    if (h.num_values > m->num_values - r->seen) return PFAIL(PARQUET_EFORMAT, "the page has %d values, more than the column chunk's remaining %lld", h.num_values, (long long)(m->num_values - r->seen));
    if (h.num_values > PARQUET_MAX_PAGE_VALUES) return PFAIL(PARQUET_EUNSUPPORTED, "a page of %d values (the most is %d)", h.num_values, PARQUET_MAX_PAGE_VALUES);
    r->seen += h.num_values;
    size_t nv = (size_t)h.num_values;
    const uint8_t *levels, *vals;
    size_t levels_len, vals_len;
    if (h.type == PAGE_DATA) {
        int rc = decompress(m->codec, src, (size_t)h.csize, (size_t)h.usize, &r->page_buf, &r->page_cap, err, errlen);
        if (rc) return rc;
        const uint8_t *p = r->page_buf;
        size_t len = (size_t)h.usize;
        levels = p; levels_len = 0;
        if (r->max_def) {
            if (h.def_encoding != ENC_RLE) return PFAIL(PARQUET_EUNSUPPORTED, "definition levels in %s (RLE is supported)", encoding_name(h.def_encoding));
            if (len < 4) return PFAIL(PARQUET_EFORMAT, "the page ends before its definition levels");
            uint32_t l = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            if (l > len - 4) return PFAIL(PARQUET_EFORMAT, "definition levels of %u bytes in a page of %zu", l, len);
            levels = p + 4; levels_len = l;
            p += 4 + l; len -= 4 + l;
        }
        vals = p; vals_len = len;
    } else {
        if (h.def_len < 0 || h.rep_len < 0 || (int64_t)h.def_len + h.rep_len > h.csize || (int64_t)h.def_len + h.rep_len > h.usize)
            return PFAIL(PARQUET_EFORMAT, "level lengths (%d + %d bytes) exceed the page", h.rep_len, h.def_len);
        if (h.rep_len) return PFAIL(PARQUET_EFORMAT, "repetition levels in a flat column");
        levels = src + h.rep_len; levels_len = (size_t)h.def_len;
        size_t cs = (size_t)(h.csize - h.rep_len - h.def_len), us = (size_t)(h.usize - h.rep_len - h.def_len);
        int rc = decompress(h.is_compressed ? m->codec : CODEC_NONE, src + h.rep_len + h.def_len, cs, us, &r->page_buf, &r->page_cap, err, errlen);
        if (rc) return rc;
        vals = r->page_buf; vals_len = us;
    }
    /* definition levels → the number of non-null values */
    size_t nonnull = nv;
    if (r->max_def) {
        if (nv > r->idx_cap) {
            uint32_t *ni = realloc(r->idx, nv * sizeof *ni);
            if (!ni) return PFAIL(PARQUET_ENOMEM, "out of memory");
            r->idx = ni; r->idx_cap = nv;
        }
        if (nv && rle_decode(levels, levels_len, 1, r->idx, nv)) return PFAIL(PARQUET_EFORMAT, "the definition levels are truncated");
        nonnull = 0;
        for (size_t i = 0; i < nv; i++) {
            if (r->idx[i] > 1) return PFAIL(PARQUET_EFORMAT, "definition level %u > 1", r->idx[i]);
            nonnull += r->idx[i];
        }
    }
    if (h.encoding == ENC_PLAIN && nonnull > vals_len / 4) return PFAIL(PARQUET_EFORMAT, "%zu values cannot fit %zu bytes", nonnull, vals_len);
    uint64_t decoded = 0;
    if (h.encoding == ENC_PLAIN) {
        int64_t used = plain_decode(vals, vals_len, nonnull, NULL);
        if (used < 0) return PFAIL(PARQUET_EFORMAT, "the PLAIN values run past the page");
        decoded = (uint64_t)used;
        r->mode = VALS_PLAIN;
        r->plain_p = vals;
    } else if (h.encoding == ENC_RLE_DICTIONARY || h.encoding == ENC_PLAIN_DICTIONARY) {
        if (!r->dict) return PFAIL(PARQUET_EFORMAT, "dictionary-encoded values without a dictionary page");
        if (nonnull) {
            if (vals_len < 1) return PFAIL(PARQUET_EFORMAT, "the page ends before the index bit width");
            int bw = vals[0];
            if (bw > 32) return PFAIL(PARQUET_EFORMAT, "index bit width %d", bw);
            if (nonnull > r->idx_cap) {
                uint32_t *ni = realloc(r->idx, nonnull * sizeof *ni);
                if (!ni) return PFAIL(PARQUET_ENOMEM, "out of memory");
                r->idx = ni; r->idx_cap = nonnull;
            }
            if (rle_decode(vals + 1, vals_len - 1, bw, r->idx, nonnull)) return PFAIL(PARQUET_EFORMAT, "the dictionary indices are truncated");
            for (size_t i = 0; i < nonnull; i++) {
                if (r->idx[i] >= r->ndict) return PFAIL(PARQUET_EFORMAT, "dictionary index %u of a %zu-entry dictionary", r->idx[i], r->ndict);
                decoded += 4 + (uint64_t)r->dict[r->idx[i]].n;
            }
        }
        r->mode = VALS_DICT;
    } else if (h.encoding == ENC_DELTA_LENGTH_BYTE_ARRAY || h.encoding == ENC_DELTA_BYTE_ARRAY) {
        int rc = delta_page(r, vals, vals_len, nonnull, h.encoding, &decoded, err, errlen);
        if (rc) return rc;
    } else {
        return PFAIL(PARQUET_EUNSUPPORTED, "values in %s (PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY, DELTA_LENGTH_BYTE_ARRAY and "
                     "DELTA_BYTE_ARRAY are read)", encoding_name(h.encoding));
    }
    int crc = count_decoded(r, decoded, nonnull, err, errlen);
    if (crc) return crc;
    if (r->mode == VALS_DBA && grow_bytes(&r->cur, &r->cur_cap, r->cur_need))   /* after the caps: at most a page */
        return PFAIL(PARQUET_ENOMEM, "out of memory for a value of %zu bytes", r->cur_need);
    r->nvals = nonnull;
    return 0;
}

int parquet_next(struct parquet_reader *r, const uint8_t **val, size_t *vlen, char *err, size_t errlen) {
    if (r->state_rc) return fail(err, errlen, r->state_rc, "the reader stopped at an earlier error");
    for (;;) {
        if (r->next_val < r->nvals) {   /* checked whole by read_page */
            if (r->mode == VALS_DICT) {
                const struct val *d = &r->dict[r->idx[r->next_val]];
                *val = d->p;
                *vlen = d->n;
            } else if (r->mode == VALS_PLAIN) {
                *vlen = le32(r->plain_p);
                *val = r->plain_p + 4;
                r->plain_p += 4 + *vlen;
            } else if (r->mode == VALS_DLBA) {
                *vlen = r->idx[r->next_val];
                *val = r->plain_p;
                r->plain_p += *vlen;
            } else {                    /* the previous value's first idx[i] bytes (still in cur), then the suffix */
                uint32_t pre = r->idx[r->next_val], suf = r->sfx[r->next_val];
                if (suf) memcpy(r->cur + pre, r->plain_p, suf);
                r->plain_p += suf;
                *val = r->cur;
                *vlen = (size_t)pre + suf;
            }
            r->next_val++;
            return 1;
        }
        if (r->cur_rg >= 0 && r->seen < r->rg[r->cur_rg].num_values) {
            if (r->pos >= r->end) {
                r->state_rc = fail(err, errlen, PARQUET_EFORMAT, "row group %d: the column chunk ends after %lld of its %lld values",
                                   r->cur_rg, (long long)r->seen, (long long)r->rg[r->cur_rg].num_values);
                return r->state_rc;
            }
            int rc = read_page(r, err, errlen);
            r->page_no++;
            if (rc) { r->state_rc = rc; return rc; }
            continue;
        }
        if (r->cur_rg + 1 >= r->nrg) return 0;
        r->cur_rg++;
        const struct chunk_meta *m = &r->rg[r->cur_rg];
        r->pos = m->start;
        r->end = m->start + m->size;
        r->seen = 0;
        r->rg_decoded = 0;
        r->page_no = 0;
        r->ndict = 0;
        r->nvals = r->next_val = 0;
        free(r->dict); r->dict = NULL; r->dict_alloc = 0;   /* a dictionary belongs to its column chunk */
    }
}
