/* tokenize.c — the streaming, multi-threaded text → shard pipeline (tokenize.h).
 *
 * Design. The calling thread reads and writes; `threads` workers encode. Work moves in numbered chunks through
 * a ring of 2·threads + 2 slots: the reader fills slot seq % N with up to chunk_bytes of text cut into segments
 * (a JSONL line, or a piece of a text document; a flag says when a segment starts a document and so gets the
 * end-of-text token first), workers take queued chunks in order and encode them into the slot's own token
 * array, and the writer consumes finished chunks strictly in sequence, appending their tokens to the val split
 * first and then to the train split, writing a shard each time one fills. A slot is refilled only after the
 * writer has consumed it, which bounds memory and keeps the output independent of the thread count.
 * Bounds against one huge document (a bomb decompresses to one): a JSONL line, a parquet value, or a stretch of
 * text with no safe place to cut is held whole, so each is refused past TOKENIZE_MAX_DOC (JSONL lines are read
 * through a bounded line buffer, not getline); BPE refuses a piece past BPE_MAX_PIECE. The reader therefore holds
 * at most 2·threads + 2 chunks of chunk_bytes + TOKENIZE_MAX_DOC.
 */
#include "tokenize.h"
#include "input.h"
#include "parquet.h"
#include "shard.h"
#include "util.h"
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { SEG_DOC = 1, SEG_JSON = 2 };
struct seg { size_t off, len; int flags, file; long line; };

enum { SLOT_FREE, SLOT_QUEUED, SLOT_BUSY, SLOT_DONE };
struct chunk {
    int state;
    long seq;
    char *buf;
    size_t len, cap;
    struct seg *segs;
    int nseg, segcap;
    uint16_t *toks;
    size_t ntok, tokcap;
    int rc;
    char err[768];
};

struct pipe {
    const struct tokenize_opts *o;
    struct tokenize_stats *st;
    int nslot;
    struct chunk *slots;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    long next_work, next_write, submitted;
    int quit;
    /* writer */
    uint16_t *val, *train;
    size_t nval, ntrain, val_cap, train_cap;
    double t0, last_progress;
    int tty;
};

static int ends_with(const char *s, size_t n, const char *suf) {
    size_t k = strlen(suf);
    return n > k && memcmp(s + n - k, suf, k) == 0;
}

/* --format jsonl, or (auto) a name ending .jsonl / .json, before any .gz / .zst / .zstd */
static int is_jsonl(const struct tokenize_opts *o, const char *path) {
    if (o->format) return o->format == TOKENIZE_JSONL;
    size_t n = strlen(path);
    if (ends_with(path, n, ".gz")) n -= 3;
    else if (ends_with(path, n, ".zst")) n -= 4;
    else if (ends_with(path, n, ".zstd")) n -= 5;
    return ends_with(path, n, ".jsonl") || ends_with(path, n, ".json");
}

static const char *text_key(const struct tokenize_opts *o) { return o->column && *o->column ? o->column : "text"; }

/* ---- workers ------------------------------------------------------------------------------------- */

static void encode_chunk(const struct tokenize_opts *o, struct bpe_ctx *bc, struct chunk *c) {
    int eot = bpe_eot(o->bpe);
    c->ntok = 0;
    c->rc = 0;
    for (int i = 0; i < c->nseg && !c->rc; i++) {
        const struct seg *s = &c->segs[i];
        const char *text = c->buf + s->off;
        size_t len = s->len;
        json_t *j = NULL;
        if (s->flags & SEG_JSON) {
            json_error_t je;
            j = json_loadb(text, len, 0, &je);
            json_t *t = j ? json_object_get(j, text_key(o)) : NULL;
            if (!j || !json_is_string(t)) {
                if (!j) snprintf(c->err, sizeof c->err, "%s:%ld: not valid JSON: %s", o->inputs[s->file], s->line, je.text);
                else snprintf(c->err, sizeof c->err, "%s:%ld: expected an object with a \"%s\" string", o->inputs[s->file],
                              s->line, text_key(o));
                json_decref(j);
                c->rc = TOKENIZE_EINPUT;
                break;
            }
            text = json_string_value(t);
            len = json_string_length(t);
        }
        if (s->flags & SEG_DOC) {
            if (c->ntok + 1 > c->tokcap) {
                size_t nc = c->tokcap ? c->tokcap * 2 : 4096;
                uint16_t *t2 = realloc(c->toks, nc * sizeof *t2);
                if (!t2) { c->rc = TOKENIZE_ENOMEM; json_decref(j); break; }
                c->toks = t2;
                c->tokcap = nc;
            }
            c->toks[c->ntok++] = (uint16_t)eot;
        }
        int brc = bpe_encode(bc, text, len, &c->toks, &c->ntok, &c->tokcap);
        if (brc == BPE_ETOOLONG) {
            char where[48] = "";
            if (s->line) snprintf(where, sizeof where, (s->flags & SEG_JSON) ? ":%ld" : " (document %ld)", s->line);
            snprintf(c->err, sizeof c->err, "%s%s: a run of text over %u MiB that GPT-2's pattern keeps as one piece "
                     "(spaces, or letters with no space, digit or punctuation): merging costs ~30 bytes of memory a "
                     "byte, so the most is %u MiB (BPE_MAX_PIECE); break the run up or leave that document out",
                     o->inputs[s->file], where, BPE_MAX_PIECE >> 20, BPE_MAX_PIECE >> 20);
            c->rc = TOKENIZE_EINPUT;
        } else if (brc) {
            snprintf(c->err, sizeof c->err, "%s: out of memory encoding", o->inputs[s->file]);
            c->rc = TOKENIZE_ENOMEM;
        }
        json_decref(j);
    }
}

static void *worker(void *arg) {
    struct pipe *p = arg;
    struct bpe_ctx *bc = bpe_ctx_new(p->o->bpe);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->next_work >= p->submitted) pthread_cond_wait(&p->work, &p->mu);
        if (p->next_work >= p->submitted) break;   /* quit and nothing queued */
        struct chunk *c = &p->slots[p->next_work % p->nslot];
        p->next_work++;
        c->state = SLOT_BUSY;
        pthread_mutex_unlock(&p->mu);
        if (bc) encode_chunk(p->o, bc, c);
        else { c->rc = TOKENIZE_ENOMEM; snprintf(c->err, sizeof c->err, "out of memory for a tokenizer context"); }
        pthread_mutex_lock(&p->mu);
        c->state = SLOT_DONE;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    bpe_ctx_free(bc);
    return NULL;
}

/* ---- writer -------------------------------------------------------------------------------------- */

static int write_shard(struct pipe *p, const char *split, int idx, const uint16_t *t, size_t n, char *err, size_t errlen) {
    if (!p->o->out_dir) return 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s_%s_%06d.bin", p->o->out_dir, p->o->kind ? p->o->kind : "text", split, idx);
    if (shard_write(path, t, n, err, errlen)) return TOKENIZE_EIO;
    return 0;
}

static int grow(uint16_t **b, size_t *cap, size_t need, size_t max) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 1 << 16;
    while (nc < need) nc *= 2;
    if (nc > max) nc = max;
    uint16_t *t = realloc(*b, nc * sizeof *t);
    if (!t) return TOKENIZE_ENOMEM;
    *b = t;
    *cap = nc;
    return 0;
}

static void progress(struct pipe *p, int final) {
    FILE *f = p->o->progress;
    if (!f) return;
    double t = util_now_s(), dt = t - p->t0;
    if (!final && t - p->last_progress < (p->tty ? 0.5 : 10)) return;
    p->last_progress = t;
    const struct tokenize_stats *s = p->st;
    fprintf(f, "%stokenize: %.1f MB, %zu documents, %zu tokens (val %zu, train %zu) | %.0f tokens/s, %.2f MB/s%s",
            p->tty ? "\r" : "", s->bytes / 1e6, s->documents, s->tokens, s->val_tokens, s->train_tokens,
            s->tokens / (dt > 0 ? dt : 1e-9), s->bytes / 1e6 / (dt > 0 ? dt : 1e-9), p->tty && !final ? "   " : "\n");
    fflush(f);
}

/* Appends a finished chunk's tokens to the splits, writing shards as they fill. */
static int consume(struct pipe *p, struct chunk *c, char *err, size_t errlen) {
    const struct tokenize_opts *o = p->o;
    struct tokenize_stats *st = p->st;
    if (c->rc) { snprintf(err, errlen, "%s", c->err); return c->rc; }
    const uint16_t *t = c->toks;
    size_t n = c->ntok;
    while (n) {
        if (st->val_tokens < o->val_tokens) {
            size_t k = o->val_tokens - st->val_tokens < n ? o->val_tokens - st->val_tokens : n;
            if (grow(&p->val, &p->val_cap, p->nval + k, o->val_tokens)) { snprintf(err, errlen, "out of memory"); return TOKENIZE_ENOMEM; }
            memcpy(p->val + p->nval, t, k * sizeof *t);
            p->nval += k; st->val_tokens += k; t += k; n -= k;
            if (st->val_tokens == o->val_tokens) {
                int rc = write_shard(p, "val", st->val_shards, p->val, p->nval, err, errlen);
                if (rc) return rc;
                st->val_shards++;
                p->nval = 0;
            }
            continue;
        }
        size_t k = o->shard_tokens - p->ntrain < n ? o->shard_tokens - p->ntrain : n;
        if (grow(&p->train, &p->train_cap, p->ntrain + k, o->shard_tokens)) { snprintf(err, errlen, "out of memory"); return TOKENIZE_ENOMEM; }
        memcpy(p->train + p->ntrain, t, k * sizeof *t);
        p->ntrain += k; st->train_tokens += k; t += k; n -= k;
        if (p->ntrain == o->shard_tokens) {
            int rc = write_shard(p, "train", st->train_shards, p->train, p->ntrain, err, errlen);
            if (rc) return rc;
            st->train_shards++;
            p->ntrain = 0;
        }
    }
    st->tokens += c->ntok;
    progress(p, 0);
    return 0;
}

/* Waits for chunk next_write and consumes it. */
static int write_next(struct pipe *p, char *err, size_t errlen) {
    struct chunk *c = &p->slots[p->next_write % p->nslot];
    pthread_mutex_lock(&p->mu);
    while (c->state != SLOT_DONE) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    int rc = consume(p, c, err, errlen);
    c->state = SLOT_FREE;
    p->next_write++;
    return rc;
}

/* ---- reader -------------------------------------------------------------------------------------- */

/* The slot for the next chunk (consuming finished ones until it is free), emptied. */
static int next_slot(struct pipe *p, struct chunk **out, char *err, size_t errlen) {
    while (p->submitted - p->next_write >= p->nslot) {
        int rc = write_next(p, err, errlen);
        if (rc) return rc;
    }
    struct chunk *c = &p->slots[p->submitted % p->nslot];
    c->len = 0;
    c->nseg = 0;
    c->seq = p->submitted;
    *out = c;
    return 0;
}

static void submit(struct pipe *p, struct chunk *c) {
    pthread_mutex_lock(&p->mu);
    c->state = SLOT_QUEUED;
    p->submitted++;
    p->st->chunks++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
}

static int add_seg(struct chunk *c, size_t off, size_t len, int flags, int file, long line) {
    if (c->nseg == c->segcap) {
        int nc = c->segcap ? c->segcap * 2 : 256;
        struct seg *s = realloc(c->segs, (size_t)nc * sizeof *s);
        if (!s) return TOKENIZE_ENOMEM;
        c->segs = s;
        c->segcap = nc;
    }
    c->segs[c->nseg++] = (struct seg){off, len, flags, file, line};
    return 0;
}

static int reserve_buf(struct chunk *c, size_t need) {
    if (need <= c->cap) return 0;
    size_t nc = c->cap ? c->cap : 1 << 16;
    while (nc < need) nc *= 2;
    char *b = realloc(c->buf, nc);
    if (!b) return TOKENIZE_ENOMEM;
    c->buf = b;
    c->cap = nc;
    return 0;
}

/* The code point of the UTF-8 character starting at b[i] (all of it before n), its length in *len; -1 when it is
 * invalid (overlong, a surrogate, past U+10FFFF, a stray continuation byte) or cut off by n. */
static long utf8_at(const unsigned char *b, size_t n, size_t i, int *len) {
    unsigned c = b[i];
    int k = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    if (!k || i + (size_t)k > n) return -1;
    long v = k == 1 ? c : c & (0x3f >> (k - 1));
    for (int j = 1; j < k; j++) {
        if ((b[i + j] & 0xc0) != 0x80) return -1;
        v = v << 6 | (b[i + j] & 0x3f);
    }
    static const long lo[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < lo[k] || v > 0x10ffff || (v >= 0xd800 && v < 0xe000)) return -1;
    *len = k;
    return v;
}

/* White space for GPT-2's \s (PCRE2 with UCP: Unicode's separators and \t \n \v \f \r), and a few more that
 * only ever prevent a cut (U+001C..1F, NEL, U+180E, U+200B, U+FEFF). */
static int is_space_cp(long c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           c == 0x180e || (c >= 0x2000 && c <= 0x200b) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
           c == 0x205f || c == 0x3000 || c == 0xfeff;
}

/* A valid character that is not white space starts at b[i] (before n) / ends just before b[e]. */
static int solid_at(const unsigned char *b, size_t n, size_t i) {
    int k;
    long c = i < n ? utf8_at(b, n, i, &k) : -1;
    return c >= 0 && !is_space_cp(c);
}
static int solid_before(const unsigned char *b, size_t e) {
    for (int k = 1; k <= 4 && (size_t)k <= e; k++) {
        int len;
        long c = utf8_at(b, e, e - (size_t)k, &len);
        if (c >= 0 && len == k) return !is_space_cp(c);
        if ((b[e - (size_t)k] & 0xc0) != 0x80) return 0;   /* a lead byte that does not end at e */
    }
    return 0;
}

/* Where a text chunk of n bytes may end: the last i >= from where GPT-2's pattern starts a piece whatever follows
 * and no piece crosses: buf[i] == ' ' after a printable ASCII character and before an ASCII letter, or buf[i−1] a
 * line break between two characters that are not white space (the break is then a piece of its own, "\n", both
 * in the whole text and at a chunk's end), so CJK text and other text without spaces is cut at its lines. 0 when
 * there is none. from lets a caller that found none in a shorter buffer look only at what was added (linear). */
static size_t safe_cut(const char *buf, size_t n, size_t from) {
    const unsigned char *b = (const unsigned char *)buf;
    if (n < 3) return 0;
    if (from < 1) from = 1;
    for (size_t i = n - 2; i >= from; i--) {
        unsigned char prev = b[i - 1], next = b[i + 1];
        if (b[i] == ' ' && prev > 0x20 && prev < 0x7f && ((next | 0x20) >= 'a' && (next | 0x20) <= 'z')) return i;
        if (prev == '\n' && i >= 2 && solid_before(b, i - 1) && solid_at(b, n, i)) return i;
    }
    return 0;
}

#define RFAIL(code, ...) do { snprintf(err, errlen, __VA_ARGS__); rc = (code); goto out; } while (0)

static const char *read_error(const struct input *in) { return input_error(in) ? input_error(in) : strerror(errno); }

static int read_text(struct pipe *p, int fi, const struct input *in, char *err, size_t errlen) {
    FILE *f = in->f;
    size_t cb = p->o->chunk_bytes;
    int rc = 0, first = 1;
    struct chunk *c;
    char *carry = NULL;
    size_t ncarry = 0;
    for (;;) {
        if ((rc = next_slot(p, &c, err, errlen))) goto out;
        if ((rc = reserve_buf(c, ncarry + cb))) RFAIL(rc, "out of memory");
        if (ncarry) memcpy(c->buf, carry, ncarry);
        c->len = ncarry;
        ncarry = 0;
        int eof = 0;
        size_t cut = 0, scanned = 0;
        for (;;) {   /* read until a safe cut exists past the chunk size, or the file ends */
            if (c->len > TOKENIZE_MAX_DOC)
                RFAIL(TOKENIZE_EINPUT, "%s: more than %u MiB of text (from byte %zu) with no place to cut it into chunks "
                      "(a space between a printable ASCII character and a letter, or a line break between two "
                      "characters that are not spaces), which would be held whole: the most "
                      "is %u MiB (TOKENIZE_MAX_DOC); split the file, or put spaces between its words",
                      p->o->inputs[fi], TOKENIZE_MAX_DOC >> 20, (size_t)p->st->bytes - c->len, TOKENIZE_MAX_DOC >> 20);
            if ((rc = reserve_buf(c, c->len + cb))) RFAIL(rc, "out of memory");
            size_t got = fread(c->buf + c->len, 1, cb, f);
            c->len += got;
            if (ferror(f)) RFAIL(TOKENIZE_EINPUT, "%s: read failed: %s", p->o->inputs[fi], read_error(in));
            p->st->bytes += got;
            if (got < cb) { eof = 1; break; }
            if (c->len >= cb && (cut = safe_cut(c->buf, c->len, scanned)) > 0) break;
            scanned = c->len >= 4 ? c->len - 4 : 0;   /* a character at a cut may be 4 bytes */
        }
        size_t end = eof ? c->len : cut;
        if (!eof) {
            ncarry = c->len - end;
            char *nc = realloc(carry, ncarry ? ncarry : 1);
            if (!nc) RFAIL(TOKENIZE_ENOMEM, "out of memory");
            carry = nc;
            memcpy(carry, c->buf + end, ncarry);
            c->len = end;
        }
        if ((rc = add_seg(c, 0, c->len, first ? SEG_DOC : 0, fi, 0))) RFAIL(rc, "out of memory");
        first = 0;
        submit(p, c);
        if (eof) break;
    }
    p->st->documents++;
out:
    free(carry);
    return rc;
}

/* A line reader that holds at most TOKENIZE_MAX_DOC + 1 bytes: getline would grow to any line's length. */
struct lines { FILE *f; char *buf; size_t start, end, cap; int eof; };

/* The next line (with its '\n', if any) in *line / *n: 1, 0 at the end, -1 on a read error, -2 for a line
 * longer than TOKENIZE_MAX_DOC (nothing of it kept), -3 on no memory. */
static int next_line(struct lines *l, const char **line, size_t *n) {
    size_t scan = l->start;
    for (;;) {
        char *nl = l->end > scan ? memchr(l->buf + scan, '\n', l->end - scan) : NULL;   /* buf is NULL at first */
        if (nl || (l->eof && l->end > l->start)) {
            size_t e = nl ? (size_t)(nl - l->buf) + 1 : l->end;
            *line = l->buf + l->start;
            *n = e - l->start;
            l->start = e;
            return 1;
        }
        if (l->eof) return 0;
        if (l->end - l->start > TOKENIZE_MAX_DOC) return -2;
        if (l->start) {   /* move the partial line to the front */
            memmove(l->buf, l->buf + l->start, l->end - l->start);
            l->end -= l->start;
            l->start = 0;
        }
        scan = l->end;
        if (l->cap - l->end < (1 << 16)) {
            size_t nc = l->cap ? 2 * l->cap : 1 << 20;
            if (nc > (size_t)TOKENIZE_MAX_DOC + (1 << 17)) nc = (size_t)TOKENIZE_MAX_DOC + (1 << 17);
            if (nc <= l->cap) return -2;
            char *b = realloc(l->buf, nc);
            if (!b) return -3;
            l->buf = b;
            l->cap = nc;
        }
        size_t got = fread(l->buf + l->end, 1, l->cap - l->end, l->f);
        l->end += got;
        if (got == 0) {
            if (ferror(l->f)) return -1;
            l->eof = 1;
        }
    }
}

static int read_jsonl(struct pipe *p, int fi, const struct input *in, char *err, size_t errlen) {
    int rc = 0;
    struct chunk *c = NULL;
    struct lines lr = {.f = in->f};
    const char *line;
    size_t n;
    int k;
    long lineno = 0;
    while ((k = next_line(&lr, &line, &n)) == 1) {
        lineno++;
        p->st->bytes += n;
        size_t len = n;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        size_t s = 0;
        while (s < len && (line[s] == ' ' || line[s] == '\t')) s++;
        if (s == len) continue;   /* blank line */
        if (!c && (rc = next_slot(p, &c, err, errlen))) goto out;
        if ((rc = reserve_buf(c, c->len + len)) || (rc = add_seg(c, c->len, len, SEG_DOC | SEG_JSON, fi, lineno)))
            RFAIL(rc, "out of memory");
        memcpy(c->buf + c->len, line, len);
        c->len += len;
        p->st->documents++;
        if (c->len >= p->o->chunk_bytes) { submit(p, c); c = NULL; }
    }
    if (k == -1) RFAIL(TOKENIZE_EINPUT, "%s: read failed: %s", p->o->inputs[fi], read_error(in));
    if (k == -3) RFAIL(TOKENIZE_ENOMEM, "out of memory");
    if (k == -2)
        RFAIL(TOKENIZE_EINPUT, "%s:%ld: a line of more than %u MiB: one JSONL document is held whole to be parsed, so "
              "the most is %u MiB (TOKENIZE_MAX_DOC); split the document over several lines (objects)",
              p->o->inputs[fi], lineno + 1, TOKENIZE_MAX_DOC >> 20, TOKENIZE_MAX_DOC >> 20);
    if (c) { submit(p, c); c = NULL; }
out:
    if (c) { c->nseg = 0; submit(p, c); }   /* an empty chunk keeps the sequence whole */
    free(lr.buf);
    return rc;
}

/* Every non-null value of the text column is a document (one segment each, copied into the chunk). */
static int read_parquet(struct pipe *p, int fi, char *err, size_t errlen) {
    const char *path = p->o->inputs[fi];
    int rc = 0, fd = open(path, O_RDONLY);
    struct stat sb;
    void *map = MAP_FAILED;
    struct parquet_reader *r = NULL;
    struct chunk *c = NULL;
    char perr[600];
    if (fd < 0 || fstat(fd, &sb)) RFAIL(TOKENIZE_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    if (sb.st_size < 12) RFAIL(TOKENIZE_EINPUT, "%s: a parquet file of %lld bytes is truncated", path, (long long)sb.st_size);
    map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) RFAIL(TOKENIZE_EINPUT, "%s: cannot map: %s", path, strerror(errno));
    madvise(map, (size_t)sb.st_size, MADV_SEQUENTIAL);
    int pr = parquet_open(map, (size_t)sb.st_size, text_key(p->o), &r, perr, sizeof perr);
    size_t docs0 = p->st->documents;
    if (pr) RFAIL(pr == PARQUET_ENOMEM ? TOKENIZE_ENOMEM : TOKENIZE_EINPUT, "%s: parquet: %s", path, perr);
    for (;;) {
        const uint8_t *v;
        size_t n;
        int k = parquet_next(r, &v, &n, perr, sizeof perr);
        if (k < 0) RFAIL(k == PARQUET_ENOMEM ? TOKENIZE_ENOMEM : TOKENIZE_EINPUT, "%s: parquet: %s", path, perr);
        if (k == 0) break;
        if (n > TOKENIZE_MAX_DOC)
            RFAIL(TOKENIZE_EINPUT, "%s: parquet: value %zu of the column is %.1f MiB: one document is held whole to be "
                  "tokenized, so the most is %u MiB (TOKENIZE_MAX_DOC); split it over several rows",
                  path, (size_t)p->st->documents - docs0 + 1, n / 1048576.0, TOKENIZE_MAX_DOC >> 20);
        if (!c && (rc = next_slot(p, &c, err, errlen))) goto out;
        if ((rc = reserve_buf(c, c->len + n + 1)) || (rc = add_seg(c, c->len, n, SEG_DOC, fi, (long)(p->st->documents - docs0 + 1)))) RFAIL(rc, "out of memory");
        memcpy(c->buf + c->len, v, n);
        c->len += n;
        p->st->bytes += n;
        p->st->documents++;
        if (c->len >= p->o->chunk_bytes) { submit(p, c); c = NULL; }
    }
    if (c) { submit(p, c); c = NULL; }
out:
    if (c) { c->nseg = 0; submit(p, c); }   /* an empty chunk keeps the sequence whole */
    parquet_close(r);
    if (map != MAP_FAILED) munmap(map, (size_t)sb.st_size);
    if (fd >= 0) close(fd);
    return rc;
}

/* One input: parquet by its magic (auto / --format parquet), else a text stream (decompressed) read as JSONL or
 * text. Binary formats are refused by input_open, naming them. */
static int read_input(struct pipe *p, int fi, char *err, size_t errlen) {
    const struct tokenize_opts *o = p->o;
    struct input in;
    int rc = input_open(o->inputs[fi], o->format == TOKENIZE_AUTO || o->format == TOKENIZE_PARQUET, &in, err, errlen);
    if (rc) return rc == INPUT_ENOMEM ? TOKENIZE_ENOMEM : TOKENIZE_EINPUT;
    if (in.kind == INPUT_PARQUET) return read_parquet(p, fi, err, errlen);
    if (o->format == TOKENIZE_PARQUET) {
        snprintf(err, errlen, "%s: is not a parquet file (no PAR1 magic%s): drop --format parquet", o->inputs[fi],
                 in.kind == INPUT_GZIP ? "; it is gzip" : in.kind == INPUT_ZSTD ? "; it is zstd" : "");
        input_close(&in);
        return TOKENIZE_EINPUT;
    }
    rc = is_jsonl(o, o->inputs[fi]) ? read_jsonl(p, fi, &in, err, errlen) : read_text(p, fi, &in, err, errlen);
    input_close(&in);
    return rc;
}

int tokenize_run(const struct tokenize_opts *o, struct tokenize_stats *st, char *err, size_t errlen) {
    struct tokenize_opts oo = *o;
    if (!oo.shard_tokens || oo.shard_tokens > TOKENIZE_MAX_SHARD) oo.shard_tokens = TOKENIZE_MAX_SHARD;
    if (!oo.chunk_bytes) oo.chunk_bytes = 1 << 20;
    if (oo.threads < 1) oo.threads = 1;
    memset(st, 0, sizeof *st);
    if (oo.val_tokens > oo.shard_tokens) {
        snprintf(err, errlen, "the val split (%zu tokens) must fit one shard (%zu tokens)", oo.val_tokens, oo.shard_tokens);
        return TOKENIZE_EINPUT;
    }
    if (bpe_eot(oo.bpe) < 0) { snprintf(err, errlen, "encoder.json has no <|endoftext|> token"); return TOKENIZE_EINPUT; }
    struct pipe p = {.o = &oo, .st = st, .nslot = 2 * oo.threads + 2};
    p.t0 = p.last_progress = util_now_s();
    p.tty = oo.progress && isatty(fileno(oo.progress));
    pthread_t *th = calloc((size_t)oo.threads, sizeof *th);
    p.slots = calloc((size_t)p.nslot, sizeof *p.slots);
    if (!th || !p.slots) { free(th); free(p.slots); snprintf(err, errlen, "out of memory"); return TOKENIZE_ENOMEM; }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.work, NULL);
    pthread_cond_init(&p.done, NULL);
    int started = 0, rc = 0;
    for (; started < oo.threads; started++)
        if (pthread_create(&th[started], NULL, worker, &p)) break;
    if (started == 0) { snprintf(err, errlen, "cannot start a thread"); rc = TOKENIZE_ENOMEM; }
    for (int i = 0; i < oo.ninputs && !rc; i++) {
        rc = read_input(&p, i, err, errlen);
    }
    char err2[1024] = "";
    while (p.next_write < p.submitted) {   /* drain (after an error only to stop the workers cleanly) */
        int r2 = write_next(&p, rc ? err2 : err, rc ? sizeof err2 : errlen);
        if (!rc) rc = r2;
    }
    pthread_mutex_lock(&p.mu);
    p.quit = 1;
    pthread_cond_broadcast(&p.work);
    pthread_mutex_unlock(&p.mu);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    if (!rc && st->val_tokens < oo.val_tokens)
        { snprintf(err, errlen, "the input has %zu tokens, all taken by the val split (--val-tokens %zu): lower "
                   "--val-tokens below the input's size", st->tokens, oo.val_tokens); rc = TOKENIZE_EINPUT; }
    if (!rc && st->train_tokens == 0)
        { snprintf(err, errlen, "the input has %zu tokens, none left for the train split after --val-tokens %zu",
                   st->tokens, oo.val_tokens); rc = TOKENIZE_EINPUT; }
    if (!rc && p.ntrain) {
        rc = write_shard(&p, "train", st->train_shards, p.train, p.ntrain, err, errlen);
        if (!rc) st->train_shards++;
    }
    st->seconds = util_now_s() - p.t0;
    if (!rc) progress(&p, 1);
    if (!rc && oo.out_dir) {
        char path[4200], tg[256], vg[256];
        const char *kind = oo.kind ? oo.kind : "text";
        snprintf(path, sizeof path, "%s/meta.json", oo.out_dir);
        snprintf(tg, sizeof tg, "%s_train_*.bin", kind);
        snprintf(vg, sizeof vg, "%s_val_*.bin", kind);
        json_t *m = json_pack("{s:s, s:i, s:i, s:I, s:I, s:I, s:I, s:s, s:s}", "kind", kind, "vocab_size",
                              bpe_vocab_size(oo.bpe), "eot", bpe_eot(oo.bpe), "documents", (json_int_t)st->documents,
                              "bytes", (json_int_t)st->bytes, "train_tokens", (json_int_t)st->train_tokens,
                              "val_tokens", (json_int_t)st->val_tokens, "train_glob", tg, "val_glob", vg);
        if (!m || json_dump_file(m, path, JSON_INDENT(2) | JSON_SORT_KEYS)) {
            snprintf(err, errlen, "%s: cannot write", path);
            rc = TOKENIZE_EIO;
        }
        json_decref(m);
    }
    for (int i = 0; i < p.nslot; i++) { free(p.slots[i].buf); free(p.slots[i].segs); free(p.slots[i].toks); }
    free(p.slots);
    free(th);
    free(p.val);
    free(p.train);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.work);
    pthread_cond_destroy(&p.done);
    return rc;
}
