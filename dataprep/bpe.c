/* bpe.c — GPT-2 byte-level BPE (see bpe.h for the contract).
 *
 * Design. Loading turns both files into raw bytes (GPT-2's byte-to-unicode alphabet undone): a token table
 * (id → bytes in one blob), an open-addressing map bytes → id, and a map (left id, right id) → (rank, merged id).
 * Splitting is PCRE2 (JIT when available) with UTF + UCP, so \p{L}, \p{N} and \s are Unicode's, and with
 * MATCH_INVALID_UTF, so invalid bytes match nothing and fall into the gaps between matches, each gap a piece.
 * Merging one piece: a doubly linked list of its tokens and a min-heap of adjacent pairs keyed by (rank,
 * position); popping the lowest rank, leftmost first, and skipping stale entries merges every occurrence of the
 * best pair left to right before any pair of higher rank — GPT-2's loop — in O(n log n) even for pathological
 * pieces (a megabyte of spaces); pieces over BPE_MAX_PIECE are refused before any scratch is grown for them, so a
 * context's memory is bounded whatever the text. Each context keeps a bounded cache of short pieces already encoded (text
 * repeats its words); it is emptied when half full, so memory stays fixed.
 */
#include "bpe.h"
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPT2_PATTERN "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define CACHE_SLOTS (1u << 16)
#define CACHE_MAX_PIECE 48

struct tok { uint32_t off, len; };

struct bpe {
    int nvocab;                    /* largest id + 1 */
    struct tok *toks;              /* (nvocab) len 0 = unused id */
    unsigned char *blob;           /* token bytes */
    size_t blob_len;
    int32_t *vmap;                 /* (vcap) ids, −1 empty: bytes → id */
    size_t vcap;
    uint64_t *mkey;                /* (mcap) (left << 32 | right) + 1, 0 empty */
    uint32_t *mrank, *mres;        /* (mcap) rank and merged id */
    size_t mcap;
    int byte_id[256];
    int eot;
    pcre2_code *re;
};

struct cache_ent { uint64_t h; uint32_t key_off, key_len, tok_off, ntok; };

struct bpe_ctx {
    const struct bpe *b;
    pcre2_match_data *md;
    /* merge scratch (grown to the longest piece) */
    int *tk, *prv, *nxt;
    struct heap_ent { uint32_t rank, pos; int left, right; } *heap;
    size_t scap, hcap;
    /* cache */
    struct cache_ent *slots;       /* (CACHE_SLOTS) */
    unsigned used;
    unsigned char *arena;          /* keys then tokens, 4-byte aligned */
    size_t arena_len, arena_cap;
};

static uint64_t fnv(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ULL; }
    return h;
}
static uint64_t mix(uint64_t z) {
    z ^= z >> 33; z *= 0xff51afd7ed558ccdULL; z ^= z >> 33; z *= 0xc4ceb9fe1a85ec53ULL;
    return z ^ (z >> 33);
}

/* ---- GPT-2's byte alphabet ----------------------------------------------------------------------- */

/* code point → byte for the 256 code points GPT-2 uses, −1 elsewhere (below 324) */
static void byte_alphabet(int inv[324]) {
    for (int i = 0; i < 324; i++) inv[i] = -1;
    int extra = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        inv[printable ? b : 256 + extra++] = b;
    }
}

/* UTF-8 s (n bytes) in GPT-2's alphabet → raw bytes in out (at most n). Returns the byte count, or −1 (bad UTF-8
 * or a character outside the alphabet, which goes to *bad). */
static long unalphabet(const int inv[324], const char *s, size_t n, unsigned char *out, unsigned *bad) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < n) {
        unsigned cp, c = p[i];
        int k;
        if (c < 0x80) { cp = c; k = 1; }
        else if ((c & 0xe0) == 0xc0) { cp = c & 0x1f; k = 2; }
        else if ((c & 0xf0) == 0xe0) { cp = c & 0x0f; k = 3; }
        else { *bad = c; return -1; }
        if (i + k > n) { *bad = c; return -1; }
        for (int j = 1; j < k; j++) cp = cp << 6 | (p[i + j] & 0x3f);
        if (cp >= 324 || inv[cp] < 0) { *bad = cp; return -1; }
        out[o++] = (unsigned char)inv[cp];
        i += k;
    }
    return (long)o;
}

/* ---- maps ---------------------------------------------------------------------------------------- */

static int vocab_find(const struct bpe *b, const unsigned char *p, size_t n) {
    size_t m = b->vcap - 1, i = mix(fnv(p, n)) & m;
    for (;; i = (i + 1) & m) {
        int id = b->vmap[i];
        if (id < 0) return -1;
        if (b->toks[id].len == n && memcmp(b->blob + b->toks[id].off, p, n) == 0) return id;
    }
}

static void vocab_insert(struct bpe *b, int id) {
    const unsigned char *p = b->blob + b->toks[id].off;
    size_t n = b->toks[id].len, m = b->vcap - 1, i = mix(fnv(p, n)) & m;
    while (b->vmap[i] >= 0) i = (i + 1) & m;
    b->vmap[i] = id;
}

static size_t merge_slot(const struct bpe *b, int l, int r) {
    uint64_t key = ((uint64_t)(uint32_t)l << 32 | (uint32_t)r) + 1;
    size_t m = b->mcap - 1, i = mix(key) & m;
    while (b->mkey[i] && b->mkey[i] != key) i = (i + 1) & m;
    return i;
}

/* rank of merging (l, r), UINT32_MAX when not a merge; *res = the merged id */
static uint32_t merge_rank(const struct bpe *b, int l, int r, int *res) {
    size_t i = merge_slot(b, l, r);
    if (!b->mkey[i]) return UINT32_MAX;
    *res = (int)b->mres[i];
    return b->mrank[i];
}

/* ---- loading ------------------------------------------------------------------------------------- */

void bpe_free(struct bpe *b) {
    if (!b) return;
    free(b->toks); free(b->blob); free(b->vmap); free(b->mkey); free(b->mrank); free(b->mres);
    if (b->re) pcre2_code_free(b->re);
    free(b);
}

int bpe_vocab_size(const struct bpe *b) { return b->nvocab; }
int bpe_eot(const struct bpe *b) { return b->eot; }
const unsigned char *bpe_token_bytes(const struct bpe *b, int id, size_t *len) {
    if (id < 0 || id >= b->nvocab || b->toks[id].len == 0) return NULL;
    *len = b->toks[id].len;
    return b->blob + b->toks[id].off;
}

#define FAIL(code, ...) do { if (err) snprintf(err, errlen, __VA_ARGS__); rc = (code); goto out; } while (0)

static size_t pow2_at_least(size_t n) { size_t c = 16; while (c < n) c *= 2; return c; }

int bpe_load(const char *encoder_json, const char *vocab_bpe, struct bpe **out, char *err, size_t errlen) {
    int rc = BPE_OK, inv[324];
    struct bpe *b = NULL;
    json_t *enc = NULL;
    FILE *f = NULL;
    char *line = NULL;
    unsigned char *tmp = NULL;
    *out = NULL;
    byte_alphabet(inv);
    json_error_t je;
    enc = json_load_file(encoder_json, 0, &je);
    if (!enc) {
        if (je.line <= 0 || strstr(je.text, "unable to open")) FAIL(BPE_EIO, "%s: cannot read: %s", encoder_json, je.text);
        FAIL(BPE_EFORMAT, "%s: not JSON (line %d column %d: %s)", encoder_json, je.line, je.column, je.text);
    }
    if (!json_is_object(enc) || json_object_size(enc) == 0)
        FAIL(BPE_EFORMAT, "%s: expected GPT-2's encoder.json, an object {\"token\": id, ...}", encoder_json);
    if (!(b = calloc(1, sizeof *b))) FAIL(BPE_ENOMEM, "out of memory");
    b->eot = -1;
    const char *key;
    json_t *v;
    size_t total = 0;
    int maxid = -1;
    json_object_foreach(enc, key, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= 65535)
            FAIL(BPE_EFORMAT, "%s: \"%.60s\": id must be an integer in 0..65534 (uint16 shards), got %s", encoder_json, key,
                 json_is_integer(v) ? "one out of range" : "another type");
        if (json_integer_value(v) > maxid) maxid = (int)json_integer_value(v);
        total += strlen(key);
    }
    b->nvocab = maxid + 1;
    if (!(b->toks = calloc((size_t)b->nvocab, sizeof *b->toks)) || !(b->blob = malloc(total + 1)))
        FAIL(BPE_ENOMEM, "out of memory for %d tokens", b->nvocab);
    for (int i = 0; i < 256; i++) b->byte_id[i] = -1;
    json_object_foreach(enc, key, v) {
        int id = (int)json_integer_value(v);
        unsigned bad = 0;
        long n = unalphabet(inv, key, strlen(key), b->blob + b->blob_len, &bad);
        if (n <= 0)
            FAIL(BPE_EFORMAT, "%s: \"%.60s\": %s (GPT-2's byte alphabet: ! .. ~, \\u00a1 .. \\u00ac, \\u00ae .. \\u00ff, "
                 "\\u0100 .. \\u0143)", encoder_json, key, n == 0 ? "empty token" : "character outside the byte alphabet");
        if (b->toks[id].len) FAIL(BPE_EFORMAT, "%s: \"%.60s\": id %d is used twice", encoder_json, key, id);
        b->toks[id] = (struct tok){(uint32_t)b->blob_len, (uint32_t)n};
        if (n == 1) b->byte_id[b->blob[b->blob_len]] = id;
        b->blob_len += (size_t)n;
        if (strcmp(key, "<|endoftext|>") == 0) b->eot = id;
    }
    for (int i = 0; i < 256; i++)
        if (b->byte_id[i] < 0)
            FAIL(BPE_EFORMAT, "%s: no token for the byte 0x%02x (a byte-level BPE has one token per byte)", encoder_json, i);
    b->vcap = pow2_at_least(2 * (size_t)b->nvocab);
    if (!(b->vmap = malloc(b->vcap * sizeof *b->vmap))) FAIL(BPE_ENOMEM, "out of memory");
    memset(b->vmap, 0xff, b->vcap * sizeof *b->vmap);
    for (int id = 0; id < b->nvocab; id++) {
        if (!b->toks[id].len) continue;
        if (vocab_find(b, b->blob + b->toks[id].off, b->toks[id].len) >= 0)
            FAIL(BPE_EFORMAT, "%s: id %d repeats the bytes of another token", encoder_json, id);
        vocab_insert(b, id);
    }

    /* merges */
    f = fopen(vocab_bpe, "r");
    if (!f) FAIL(BPE_EIO, "%s: cannot open: %s", vocab_bpe, strerror(errno));
    size_t cap = 0, nmerge = 0, mcap_alloc = 0;
    ssize_t len;
    long lineno = 0;
    if (!(tmp = malloc(1 << 16))) FAIL(BPE_ENOMEM, "out of memory");
    b->mcap = pow2_at_least(2 * (size_t)b->nvocab + 16);
    mcap_alloc = b->mcap;
    if (!(b->mkey = calloc(mcap_alloc, sizeof *b->mkey)) || !(b->mrank = malloc(mcap_alloc * sizeof *b->mrank)) ||
        !(b->mres = malloc(mcap_alloc * sizeof *b->mres)))
        FAIL(BPE_ENOMEM, "out of memory");
    while ((len = getline(&line, &cap, f)) > 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (lineno == 1 && strncmp(line, "#version", 8) == 0) continue;
        if (len == 0) continue;
        char *sp = strchr(line, ' ');
        if (!sp || sp == line || !sp[1] || strchr(sp + 1, ' '))
            FAIL(BPE_EFORMAT, "%s: line %ld: expected two tokens separated by one space, got \"%.80s\"", vocab_bpe, lineno, line);
        if (len > 30000) FAIL(BPE_EFORMAT, "%s: line %ld: too long", vocab_bpe, lineno);
        unsigned bad = 0;
        long na = unalphabet(inv, line, (size_t)(sp - line), tmp, &bad);
        long nb = na > 0 ? unalphabet(inv, sp + 1, strlen(sp + 1), tmp + na, &bad) : -1;
        if (na <= 0 || nb <= 0)
            FAIL(BPE_EFORMAT, "%s: line %ld: \"%.80s\": character outside GPT-2's byte alphabet", vocab_bpe, lineno, line);
        int l = vocab_find(b, tmp, (size_t)na), r = vocab_find(b, tmp + na, (size_t)nb), m = vocab_find(b, tmp, (size_t)(na + nb));
        if (l < 0 || r < 0 || m < 0)
            FAIL(BPE_EFORMAT, "%s: line %ld: \"%.80s\": %s is not in %s", vocab_bpe, lineno, line,
                 l < 0 ? "the left part" : r < 0 ? "the right part" : "the merged token", encoder_json);
        if (2 * (nmerge + 1) > b->mcap) {   /* keep the load under one half */
            size_t ncap = b->mcap * 2;
            uint64_t *ok = b->mkey;
            uint32_t *orank = b->mrank, *ores = b->mres;
            size_t ocap = b->mcap;
            b->mkey = calloc(ncap, sizeof *b->mkey);
            b->mrank = malloc(ncap * sizeof *b->mrank);
            b->mres = malloc(ncap * sizeof *b->mres);
            if (!b->mkey || !b->mrank || !b->mres) {
                free(ok); free(orank); free(ores);
                FAIL(BPE_ENOMEM, "out of memory");
            }
            b->mcap = ncap;
            for (size_t i = 0; i < ocap; i++)
                if (ok[i]) {
                    uint64_t k = ok[i] - 1;
                    size_t s = merge_slot(b, (int)(k >> 32), (int)(uint32_t)k);
                    b->mkey[s] = ok[i]; b->mrank[s] = orank[i]; b->mres[s] = ores[i];
                }
            free(ok); free(orank); free(ores);
        }
        size_t s = merge_slot(b, l, r);
        if (!b->mkey[s]) {   /* a repeated pair keeps its first (lowest) rank */
            b->mkey[s] = ((uint64_t)(uint32_t)l << 32 | (uint32_t)r) + 1;
            b->mrank[s] = (uint32_t)nmerge;
            b->mres[s] = (uint32_t)m;
        }
        nmerge++;
    }
    if (ferror(f)) FAIL(BPE_EIO, "%s: read failed: %s", vocab_bpe, strerror(errno));

    int ecode;
    PCRE2_SIZE eoff;
    b->re = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF,
                          &ecode, &eoff, NULL);
    if (!b->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ecode, msg, sizeof msg);
        FAIL(BPE_EFORMAT, "GPT-2 pattern: PCRE2 says %s at %zu", (char *)msg, (size_t)eoff);
    }
    pcre2_jit_compile(b->re, PCRE2_JIT_COMPLETE);   /* when JIT is unavailable the interpreter runs it */
out:
    if (f) fclose(f);
    free(line);
    free(tmp);
    json_decref(enc);
    if (rc) bpe_free(b);
    else *out = b;
    return rc;
}

/* ---- per-thread context ---------------------------------------------------------------------------- */

struct bpe_ctx *bpe_ctx_new(const struct bpe *b) {
    struct bpe_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->b = b;
    c->md = pcre2_match_data_create_from_pattern(b->re, NULL);
    c->slots = calloc(CACHE_SLOTS, sizeof *c->slots);
    c->arena_cap = (size_t)CACHE_SLOTS / 2 * (CACHE_MAX_PIECE + 4 * 8);
    c->arena = malloc(c->arena_cap);
    if (!c->md || !c->slots || !c->arena) { bpe_ctx_free(c); return NULL; }
    return c;
}

void bpe_ctx_free(struct bpe_ctx *c) {
    if (!c) return;
    if (c->md) pcre2_match_data_free(c->md);
    free(c->tk); free(c->prv); free(c->nxt); free(c->heap);
    free(c->slots); free(c->arena);
    free(c);
}

static int grow_scratch(struct bpe_ctx *c, size_t n) {
    if (n <= c->scap) return 0;
    size_t cap = c->scap ? c->scap : 64;
    while (cap < n) cap *= 2;
    int *a = realloc(c->tk, cap * sizeof *a);
    if (!a) return BPE_ENOMEM;
    c->tk = a;
    if (!(a = realloc(c->prv, cap * sizeof *a))) return BPE_ENOMEM;
    c->prv = a;
    if (!(a = realloc(c->nxt, cap * sizeof *a))) return BPE_ENOMEM;
    c->nxt = a;
    c->scap = cap;
    return 0;
}

static int heap_less(const struct heap_ent *a, const struct heap_ent *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static int heap_push(struct bpe_ctx *c, size_t *hn, struct heap_ent e) {
    if (*hn == c->hcap) {
        size_t cap = c->hcap ? c->hcap * 2 : 128;
        struct heap_ent *h = realloc(c->heap, cap * sizeof *h);
        if (!h) return BPE_ENOMEM;
        c->heap = h;
        c->hcap = cap;
    }
    size_t i = (*hn)++;
    while (i > 0 && heap_less(&e, &c->heap[(i - 1) / 2])) { c->heap[i] = c->heap[(i - 1) / 2]; i = (i - 1) / 2; }
    c->heap[i] = e;
    return 0;
}

static struct heap_ent heap_pop(struct bpe_ctx *c, size_t *hn) {
    struct heap_ent top = c->heap[0], last = c->heap[--*hn];
    size_t i = 0, n = *hn;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const struct heap_ent *best = &last;
        if (l < n && heap_less(&c->heap[l], best)) { m = l; best = &c->heap[l]; }
        if (l + 1 < n && heap_less(&c->heap[l + 1], best)) m = l + 1;
        if (m == i) break;
        c->heap[i] = c->heap[m];
        i = m;
    }
    if (n) c->heap[i] = last;
    return top;
}

static int push_pair(struct bpe_ctx *c, size_t *hn, int i) {
    if (i < 0) return 0;
    int j = c->nxt[i];
    if (j < 0) return 0;
    int res;
    uint32_t r = merge_rank(c->b, c->tk[i], c->tk[j], &res);
    if (r == UINT32_MAX) return 0;
    return heap_push(c, hn, (struct heap_ent){r, (uint32_t)i, c->tk[i], c->tk[j]});
}

static int reserve(uint16_t **toks, size_t need, size_t *cap) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 1024;
    while (nc < need) nc *= 2;
    uint16_t *t = realloc(*toks, nc * sizeof *t);
    if (!t) return BPE_ENOMEM;
    *toks = t;
    *cap = nc;
    return 0;
}

static int append(uint16_t **toks, size_t *n, size_t *cap, const int *src, size_t k) {
    if (reserve(toks, *n + k, cap)) return BPE_ENOMEM;
    for (size_t i = 0; i < k; i++) (*toks)[*n + i] = (uint16_t)src[i];
    *n += k;
    return 0;
}

/* Merges the piece p[0..n) into c->tk (compacted); returns the token count or −1 on no memory. */
static long merge_piece(struct bpe_ctx *c, const unsigned char *p, size_t n) {
    if (grow_scratch(c, n)) return -1;
    for (size_t i = 0; i < n; i++) {
        c->tk[i] = c->b->byte_id[p[i]];
        c->prv[i] = (int)i - 1;
        c->nxt[i] = i + 1 < n ? (int)i + 1 : -1;
    }
    size_t hn = 0;
    for (size_t i = 0; i + 1 < n; i++) if (push_pair(c, &hn, (int)i)) return -1;
    while (hn) {
        struct heap_ent e = heap_pop(c, &hn);
        int i = (int)e.pos, j = c->nxt[i];
        if (c->tk[i] != e.left || j < 0 || c->tk[j] != e.right) continue;   /* stale */
        int res = -1;
        merge_rank(c->b, e.left, e.right, &res);
        c->tk[i] = res;
        c->tk[j] = -1;                      /* dead */
        c->nxt[i] = c->nxt[j];
        if (c->nxt[j] >= 0) c->prv[c->nxt[j]] = i;
        if (push_pair(c, &hn, c->prv[i]) || push_pair(c, &hn, i)) return -1;
    }
    long k = 0;
    for (int i = 0; i >= 0; i = c->nxt[i]) c->tk[k++] = c->tk[i];
    return k;
}

static int encode_piece(struct bpe_ctx *c, const unsigned char *p, size_t n, uint16_t **toks, size_t *nt, size_t *cap) {
    if (n == 0) return 0;
    if (n > BPE_MAX_PIECE) return BPE_ETOOLONG;
    if (n == 1) { int t = c->b->byte_id[p[0]]; return append(toks, nt, cap, &t, 1); }
    struct cache_ent *e = NULL;
    uint64_t h = 0;
    if (n <= CACHE_MAX_PIECE) {
        h = fnv(p, n) | 1;
        size_t m = CACHE_SLOTS - 1, i = mix(h) & m;
        for (;; i = (i + 1) & m) {
            e = &c->slots[i];
            if (!e->h) break;
            if (e->h == h && e->key_len == n && memcmp(c->arena + e->key_off, p, n) == 0) {
                const uint32_t *src = (const uint32_t *)(c->arena + e->tok_off);
                if (reserve(toks, *nt + e->ntok, cap)) return BPE_ENOMEM;
                for (uint32_t k = 0; k < e->ntok; k++) (*toks)[*nt + k] = (uint16_t)src[k];
                *nt += e->ntok;
                return 0;
            }
        }
    }
    long k = merge_piece(c, p, n);
    if (k < 0 || append(toks, nt, cap, c->tk, (size_t)k)) return BPE_ENOMEM;
    if (e) {
        size_t key_off = (c->arena_len + 3) & ~(size_t)3, tok_off = (key_off + n + 3) & ~(size_t)3, end = tok_off + 4 * (size_t)k;
        if (c->used >= CACHE_SLOTS / 2 || end > c->arena_cap) {   /* full: start over (keeps memory fixed) */
            memset(c->slots, 0, CACHE_SLOTS * sizeof *c->slots);
            c->used = 0;
            c->arena_len = 0;
            return 0;
        }
        memcpy(c->arena + key_off, p, n);
        uint32_t *dst = (uint32_t *)(c->arena + tok_off);
        for (long q = 0; q < k; q++) dst[q] = (uint32_t)c->tk[q];
        *e = (struct cache_ent){h, (uint32_t)key_off, (uint32_t)n, (uint32_t)tok_off, (uint32_t)k};
        c->arena_len = end;
        c->used++;
    }
    return 0;
}

struct enc_arg { struct bpe_ctx *c; const char *text; uint16_t **toks; size_t *n, *cap; int rc; };

static int split(struct bpe_ctx *c, const char *text, size_t len, void (*fn)(void *, size_t, size_t), void *arg) {
    size_t off = 0;
    while (off < len) {
        int rc = pcre2_match(c->b->re, (PCRE2_SPTR)text, len, off, 0, c->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) { fn(arg, off, len - off); break; }   /* only invalid bytes left */
        if (rc < 0) return BPE_ENOMEM;                                       /* (match limits; not reached by this pattern) */
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
        if (ov[0] > off) fn(arg, off, ov[0] - off);                         /* a run of invalid bytes */
        if (ov[1] <= ov[0]) return BPE_ENOMEM;                               /* (empty match: impossible with this pattern) */
        fn(arg, ov[0], ov[1] - ov[0]);
        off = ov[1];
    }
    return 0;
}

static void enc_cb(void *arg, size_t off, size_t n) {
    struct enc_arg *a = arg;
    if (!a->rc) a->rc = encode_piece(a->c, (const unsigned char *)a->text + off, n, a->toks, a->n, a->cap);
}

int bpe_encode(struct bpe_ctx *c, const char *text, size_t len, uint16_t **toks, size_t *n, size_t *cap) {
    struct enc_arg a = {c, text, toks, n, cap, 0};
    int rc = split(c, text, len, enc_cb, &a);
    return rc ? rc : a.rc;
}

int bpe_split(struct bpe_ctx *c, const char *text, size_t len, void (*fn)(void *arg, size_t off, size_t n), void *arg) {
    return split(c, text, len, fn, arg);
}
