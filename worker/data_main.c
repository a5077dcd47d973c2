/* data_main.c — prism-data: makes llm.c token shards.
 *
 *   prism-data synth --out DIR --tokens N --vocab V --seed S [--val-frac F]
 *   prism-data bytes FILE... --out DIR [--val-frac F]
 *
 * Both write DIR/<kind>_train_NNNNNN.bin and DIR/<kind>_val_NNNNNN.bin (at most 100M tokens a shard) and
 * DIR/meta.json {"vocab_size","train_tokens","val_tokens","unigram_entropy" (nats, of the train split),...}.
 *
 * The synthetic language (deterministic from the seed) is a stream of documents (256..1024 tokens, ended
 * by EOT) over the vocabulary  0 EOT | 1 DEF | 2 REF | keys [3, 3+K) | text [3+K, V), K = V/8:
 *  - local structure: each text token is drawn from 4 successors of the previous token, ranked by
 *    the token before it (probabilities .5/.25/.15/.10 in that ranking), 8% of the time uniformly
 *    instead — a bigram model gets part of it, the two-token composition the rest;
 *  - references (long range): a document opens with 4–8 definitions "DEF key value"; later "REF key" is
 *    followed by that value — often hundreds of tokens after the definition;
 *  - copies (long range): from position 64 on, with probability 1% a span of 8–32 tokens repeats the
 *    text 24–400 tokens back (no marker: the model must notice the repeat, an induction pattern).
 * A model that uses attention at several distances gets far below the unigram entropy (≈ ln of the text
 * vocabulary): the local structure alone is worth ~3 nats at V=256, copies and references more on top.
 */
#include "shard.h"
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SHARD_MAX_TOKENS 100000000ULL

static uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

struct rng { uint64_t s; };
static uint64_t rng_next(struct rng *r) { r->s = mix64(r->s); return r->s; }
static double rng_unif(struct rng *r) { return (rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static int rng_int(struct rng *r, int lo, int hi) { return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1)); }

struct synth {
    int V, K, text0, ntext;
    uint64_t grammar;       /* seed of the trigram table */
    struct rng r;
    uint16_t *doc;          /* (1024 + 64) current document */
    int doc_len, doc_pos;
};

static uint16_t synth_text_token(struct synth *s, int p2, int p1) {
    double u = rng_unif(&s->r);
    if (u < 0.08) return (uint16_t)(s->text0 + rng_int(&s->r, 0, s->ntext - 1));
    double v = rng_unif(&s->r);
    int i = v < 0.5 ? 0 : v < 0.75 ? 1 : v < 0.9 ? 2 : 3;
    i = (i + (int)(mix64(s->grammar ^ (uint64_t)p2) & 3)) & 3;      /* the token before picks the ranking */
    uint64_t h = mix64(s->grammar ^ ((uint64_t)p1 << 20) ^ (uint64_t)i);
    return (uint16_t)(s->text0 + h % (uint64_t)s->ntext);
}

/* Generates one document into s->doc. */
static void synth_document(struct synth *s) {
    struct rng *r = &s->r;
    int target = rng_int(r, 256, 1024), n = 0;
    int keys[8], vals[8], ndef = rng_int(r, 4, 8);
    uint16_t *d = s->doc;
    for (int i = 0; i < ndef; i++) {
        int k;
        for (;;) {                                   /* distinct keys */
            k = 3 + rng_int(r, 0, s->K - 1);
            int dup = 0;
            for (int j = 0; j < i; j++) dup |= keys[j] == k;
            if (!dup) break;
        }
        keys[i] = k;
        vals[i] = s->text0 + rng_int(r, 0, s->ntext - 1);
        d[n++] = 1; d[n++] = (uint16_t)k; d[n++] = (uint16_t)vals[i];
    }
    while (n < target) {
        double u = rng_unif(r);
        if (u < 0.03) {
            int i = rng_int(r, 0, ndef - 1);
            d[n++] = 2; d[n++] = (uint16_t)keys[i]; d[n++] = (uint16_t)vals[i];
        } else if (u < 0.04 && n >= 64) {
            int maxd = n < 400 ? n : 400, dist = rng_int(r, 24, maxd), len = rng_int(r, 8, 32);
            for (int k = 0; k < len && n < target + 32; k++, n++) d[n] = d[n - dist];
        } else {
            int p2 = n >= 2 ? d[n - 2] : 0, p1 = n >= 1 ? d[n - 1] : 0;
            d[n++] = synth_text_token(s, p2, p1);
        }
    }
    d[n++] = 0;                                      /* EOT */
    s->doc_len = n;
    s->doc_pos = 0;
}

static void synth_fill(struct synth *s, uint16_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (s->doc_pos >= s->doc_len) synth_document(s);
        out[i] = s->doc[s->doc_pos++];
    }
}

static int write_split(const char *dir, const char *kind, const char *split, const uint16_t *tok, size_t n) {
    char path[4200], err[1024];
    size_t off = 0;
    int idx = 0;
    do {
        size_t m = n - off < SHARD_MAX_TOKENS ? n - off : SHARD_MAX_TOKENS;
        snprintf(path, sizeof path, "%s/%s_%s_%06d.bin", dir, kind, split, idx++);
        if (shard_write(path, tok + off, m, err, sizeof err)) { fprintf(stderr, "prism-data: %s\n", err); return -1; }
        printf("wrote %s (%zu tokens)\n", path, m);
        off += m;
    } while (off < n);
    return 0;
}

static double unigram_entropy(const uint16_t *t, size_t n, int V) {
    size_t *cnt = calloc(V, sizeof *cnt);
    if (!cnt || !n) { free(cnt); return 0; }
    for (size_t i = 0; i < n; i++) cnt[t[i]]++;
    double h = 0;
    for (int v = 0; v < V; v++) if (cnt[v]) { double p = (double)cnt[v] / n; h -= p * log(p); }
    free(cnt);
    return h;
}

static int write_meta(const char *dir, const char *kind, int V, size_t ntrain, size_t nval, double H, long long seed) {
    char path[4200];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    char tg[256], vg[256];
    snprintf(tg, sizeof tg, "%s_train_*.bin", kind);
    snprintf(vg, sizeof vg, "%s_val_*.bin", kind);
    json_t *m = json_pack("{s:s, s:i, s:I, s:I, s:f, s:s, s:s}", "kind", kind, "vocab_size", V,
                          "train_tokens", (json_int_t)ntrain, "val_tokens", (json_int_t)nval, "unigram_entropy", H,
                          "train_glob", tg, "val_glob", vg);
    if (!m) return -1;
    if (seed >= 0) json_object_set_new(m, "seed", json_integer(seed));
    int rc = json_dump_file(m, path, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(m);
    if (rc) { fprintf(stderr, "prism-data: %s: cannot write\n", path); return -1; }
    printf("unigram entropy of the train split: %.4f nats; wrote %s\n", H, path);
    return 0;
}

static int mkdir_p(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') { *p = 0; if (mkdir(buf, 0755) && errno != EEXIST) return -1; *p = '/'; }
    return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

static int parse_ll(const char *flag, const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end == 'k' || *end == 'K') { v *= 1000; end++; }
    else if (*end == 'M') { v *= 1000000; end++; }
    if (!*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "prism-data: %s: expected an integer in [%lld, %lld] (k and M suffixes allowed), got \"%s\"\n", flag, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_frac(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v > 0 && v < 1)) { fprintf(stderr, "prism-data: --val-frac: expected a number in (0, 1), got \"%s\"\n", s); return -1; }
    *out = v;
    return 0;
}

static int cmd_synth(int argc, char **argv) {
    static const struct option lo[] = {{"out", 1, 0, 'o'}, {"tokens", 1, 0, 'n'}, {"vocab", 1, 0, 'v'},
                                       {"seed", 1, 0, 's'}, {"val-frac", 1, 0, 'f'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *out = NULL;
    long long ntok = -1, V = 256, seed = 1337;
    double vf = 0.1;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'n': if (parse_ll("--tokens", optarg, 10000, 4000000000LL, &ntok)) return 2; break;
        case 'v': if (parse_ll("--vocab", optarg, 64, 65536, &V)) return 2; break;
        case 's': if (parse_ll("--seed", optarg, 0, 9007199254740991LL, &seed)) return 2; break;
        case 'f': if (parse_frac(optarg, &vf)) return 2; break;
        case 'h': printf("usage: prism-data synth --out DIR --tokens N --vocab V (64..65536, default 256) --seed S [--val-frac F]\n"); return 0;
        default: fprintf(stderr, "prism-data synth: unknown or incomplete flag \"%s\"\n", argv[optind - 1]); return 2;
        }
    }
    if (optind < argc) { fprintf(stderr, "prism-data synth: unexpected argument \"%s\"\n", argv[optind]); return 2; }
    if (!out) { fprintf(stderr, "prism-data synth: --out DIR is required\n"); return 2; }
    if (ntok < 0) { fprintf(stderr, "prism-data synth: --tokens N is required (e.g. --tokens 2M)\n"); return 2; }
    if (mkdir_p(out)) { fprintf(stderr, "prism-data: %s: cannot create: %s\n", out, strerror(errno)); return 1; }
    struct synth s = {.V = (int)V, .K = (int)V / 8};
    s.text0 = 3 + s.K;
    s.ntext = (int)V - s.text0;
    s.grammar = mix64((uint64_t)seed ^ 0x4752414dULL);
    s.r.s = mix64((uint64_t)seed);
    s.doc = malloc((1024 + 64) * sizeof(uint16_t));
    size_t nval = (size_t)(ntok * vf), ntrain = (size_t)ntok - nval;
    uint16_t *buf = malloc((size_t)ntok * sizeof(uint16_t));
    if (!s.doc || !buf) { fprintf(stderr, "prism-data: out of memory for %lld tokens\n", ntok); free(s.doc); free(buf); return 1; }
    synth_fill(&s, buf, ntrain);
    s.doc_pos = s.doc_len;                           /* val starts on a fresh document */
    synth_fill(&s, buf + ntrain, nval);
    int rc = write_split(out, "synth", "train", buf, ntrain) || write_split(out, "synth", "val", buf + ntrain, nval) ||
             write_meta(out, "synth", (int)V, ntrain, nval, unigram_entropy(buf, ntrain, (int)V), seed);
    free(buf);
    free(s.doc);
    return rc ? 1 : 0;
}

static int cmd_bytes(int argc, char **argv) {
    static const struct option lo[] = {{"out", 1, 0, 'o'}, {"val-frac", 1, 0, 'f'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *out = NULL;
    double vf = 0.1;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'f': if (parse_frac(optarg, &vf)) return 2; break;
        case 'h': printf("usage: prism-data bytes FILE... --out DIR [--val-frac F]   (byte-level tokens, vocab 256)\n"); return 0;
        default: fprintf(stderr, "prism-data bytes: unknown or incomplete flag \"%s\"\n", argv[optind - 1]); return 2;
        }
    }
    if (!out) { fprintf(stderr, "prism-data bytes: --out DIR is required\n"); return 2; }
    if (optind >= argc) { fprintf(stderr, "prism-data bytes: give at least one input FILE\n"); return 2; }
    size_t n = 0, cap = 1 << 20;
    uint16_t *tok = malloc(cap * sizeof *tok);
    if (!tok) return 1;
    for (int i = optind; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) { fprintf(stderr, "prism-data: %s: cannot open: %s\n", argv[i], strerror(errno)); free(tok); return 2; }
        int ch;
        while ((ch = getc(f)) != EOF) {
            if (n == cap) {
                uint16_t *t2 = realloc(tok, 2 * cap * sizeof *tok);
                if (!t2) { fclose(f); free(tok); fprintf(stderr, "prism-data: out of memory\n"); return 1; }
                tok = t2; cap *= 2;
            }
            tok[n++] = (uint16_t)ch;
        }
        fclose(f);
    }
    if (n < 1000) { fprintf(stderr, "prism-data bytes: only %zu bytes of input; need at least 1000\n", n); free(tok); return 2; }
    if (mkdir_p(out)) { fprintf(stderr, "prism-data: %s: cannot create: %s\n", out, strerror(errno)); free(tok); return 1; }
    size_t nval = (size_t)(n * vf), ntrain = n - nval;
    int rc = write_split(out, "bytes", "train", tok, ntrain) || write_split(out, "bytes", "val", tok + ntrain, nval) ||
             write_meta(out, "bytes", 256, ntrain, nval, unigram_entropy(tok, ntrain, 256), -1);
    free(tok);
    return rc ? 1 : 0;
}

static const struct { const char *name; int (*fn)(int, char **); const char *summary; } commands[] = {
    {"synth", cmd_synth, "synthetic language with local and long-range structure: --out DIR --tokens N --vocab V --seed S"},
    {"bytes", cmd_bytes, "text files to byte-level shards (vocab 256): FILE... --out DIR"},
};

int main(int argc, char **argv) {
    int n = (int)(sizeof commands / sizeof commands[0]);
    if (argc >= 2)
        for (int i = 0; i < n; i++)
            if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
    FILE *f = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) ? stdout : stderr;
    if (argc >= 2 && f == stderr) fprintf(stderr, "prism-data: unknown command \"%s\"\n", argv[1]);
    fprintf(f, "usage: prism-data COMMAND [args]\n");
    for (int i = 0; i < n; i++) fprintf(f, "  %-6s %s\n", commands[i].name, commands[i].summary);
    return f == stdout ? 0 : 2;
}
