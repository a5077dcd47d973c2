/* dataprep/main.c — prism-data: makes llm.c token shards.
 *
 *   prism-data synth --out DIR --tokens N --vocab V --seed S [--val-frac F]
 *   prism-data bytes FILE... --out DIR [--val-frac F]
 *   prism-data tokenize FILE... --out DIR --encoder encoder.json --bpe vocab.bpe [--format auto|text|jsonl|parquet]
 *                       [--name NAME] [--column KEY] [--val-tokens N] [--shard-tokens N] [--threads N]
 *   prism-data evalfile --from FILE --out FILE.bin [--task auto|prism|hellaswag|piqa|arc-easy|arc-challenge|winogrande|llmc]
 *                       [--labels FILE] --encoder encoder.json --bpe vocab.bpe
 *
 * tokenize and evalfile use GPT-2's byte-level BPE (bpe.h); tokenize is the streaming pipeline of tokenize.h.
 *
 * Both write DIR/<kind>_train_NNNNNN.bin and DIR/<kind>_val_NNNNNN.bin (at most 100M tokens a shard) and
 * DIR/meta.json {"vocab_size","train_tokens","val_tokens","unigram_entropy","bigram_entropy",...}: the
 * entropies are in nats, of the train split, the bigram one H(x_t | x_t-1) as counted on that split (the
 * floor of any bigram model there). A loss below the bigram entropy needs more context than one token.
 *
 * The synthetic language (deterministic from the seed) is a stream of documents (256..1024 tokens, ended
 * by EOT) over the vocabulary  0 EOT | 1 DEF | 2 REF | keys [3, 3+K) | text [3+K, V), K = V/8:
 *  - local structure (the last three tokens compose): a text token is, 5% of the time, uniform; else 40%
 *    an echo of the token two back, 30% of the token three back ("a b a", "a b c a"), 30% one of four
 *    successors of the previous token, the one the class (2 bits) of the token two back picks. Bigram
 *    statistics get part of it; attention to t-2 and t-3 the rest (≈ 2 nats at V=256);
 *  - references (long range): a document opens with 2–4 definitions "DEF key value" and adds new ones on
 *    the way (1% a position); "REF key" (3%) is followed by that key's value, defined tens to hundreds of
 *    tokens before;
 *  - copies (long range): with probability 3% a position starts a span of 8–24 tokens that repeats the text
 *    12–400 tokens back (log-uniform: as many spans from 12–24 back as from 200–400; no marker: the model
 *    must notice the repeat, an induction pattern) — about 30% of all tokens.
 * At V=256 (2M tokens) the unigram entropy is ≈ 5.36 nats and the bigram entropy ≈ 3.3; the L=4, C=64
 * tiny-cpu sweep reaches ≈ 2.6 in 1M tokens, with its first layer attending 2–4 tokens back.
 */
#include "version.h"
#include "shard.h"
#include "bpe.h"
#include "evalfile.h"
#include "evaltasks.h"
#include "tokenize.h"
#include "util.h"
#include "cli.h"
#include <errno.h>
#include <unistd.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#define SHARD_MAX_TOKENS 100000000ULL
#define SYNTH_DOC_MAX 1024
#define SYNTH_KEYS 32

struct rng { uint64_t s; };
static uint64_t rng_next(struct rng *r) { r->s = util_mix64(r->s); return r->s; }
static double rng_unif(struct rng *r) { return (rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static int rng_int(struct rng *r, int lo, int hi) { return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1)); }

struct synth {
    int V, K, text0, ntext;
    uint64_t grammar;       /* seed of the successor table and the token classes */
    struct rng r;
    uint16_t *doc;          /* (SYNTH_DOC_MAX + 64) current document */
    int doc_len, doc_pos;
};

/* The class (0..3) of a token: which of its four successors the token after the next one takes. */
static int synth_class(const struct synth *s, int tok) { return (int)(util_mix64(s->grammar ^ 0x434c53ULL ^ (uint64_t)tok) >> 7) & 3; }

/* One text token after p3 p2 p1 (the last three tokens): uniform 5% of the time, else an echo of p2 (40%) or
 * p3 (30%) when that is a text token, else (30%) one of p1's four successors, the one p2's class picks. */
static uint16_t synth_text_token(struct synth *s, int p3, int p2, int p1) {
    struct rng *r = &s->r;
    if (rng_unif(r) < 0.05) return (uint16_t)(s->text0 + rng_int(r, 0, s->ntext - 1));
    double u = rng_unif(r);
    if (u < 0.4 && p2 >= s->text0) return (uint16_t)p2;
    if (u >= 0.4 && u < 0.7 && p3 >= s->text0) return (uint16_t)p3;
    uint64_t h = util_mix64(s->grammar ^ ((uint64_t)p1 << 20) ^ (uint64_t)synth_class(s, p2));
    return (uint16_t)(s->text0 + h % (uint64_t)s->ntext);
}

/* A copy distance in [lo, hi], log-uniform: as many from lo..2lo back as from hi/2..hi back. */
static int synth_log_uniform(struct rng *r, int lo, int hi) {
    int d = (int)floor(lo * exp(rng_unif(r) * log((double)(hi + 1) / lo)));
    return d < lo ? lo : d > hi ? hi : d;
}

/* Generates one document into s->doc. */
static void synth_document(struct synth *s) {
    struct rng *r = &s->r;
    int target = rng_int(r, 256, SYNTH_DOC_MAX), n = 0;
    int keys[SYNTH_KEYS], vals[SYNTH_KEYS], ndef = 0, nfirst = rng_int(r, 2, 4);
    uint16_t *d = s->doc;
    const double pdef = 0.01, pref = 0.03, pcopy = 0.03;
    const int cmin = 8, cmax = 24, dmin = 12, dmax = 400;
    while (n < target) {
        double u = rng_unif(r);
        if (ndef < nfirst || (u < pdef && ndef < s->K && ndef < SYNTH_KEYS)) {   /* DEF key value: a new key */
            int k;
            for (;;) {
                k = 3 + rng_int(r, 0, s->K - 1);
                int dup = 0;
                for (int j = 0; j < ndef; j++) dup |= keys[j] == k;
                if (!dup) break;
            }
            keys[ndef] = k;
            vals[ndef] = s->text0 + rng_int(r, 0, s->ntext - 1);
            d[n++] = 1; d[n++] = (uint16_t)k; d[n++] = (uint16_t)vals[ndef++];
        } else if (u < pdef + pref) {                 /* REF key value */
            int i = rng_int(r, 0, ndef - 1);
            d[n++] = 2; d[n++] = (uint16_t)keys[i]; d[n++] = (uint16_t)vals[i];
        } else if (u < pdef + pref + pcopy && n >= 2 * dmin) {
            int maxd = n < dmax ? n : dmax, dist = synth_log_uniform(r, dmin, maxd), len = rng_int(r, cmin, cmax);
            for (int k = 0; k < len && n < target + 32; k++, n++) d[n] = d[n - dist];
        } else {
            int p3 = n >= 3 ? d[n - 3] : 0, p2 = n >= 2 ? d[n - 2] : 0, p1 = n >= 1 ? d[n - 1] : 0;
            d[n++] = synth_text_token(s, p3, p2, p1);
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

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* H(X_t | X_t-1) in nats over the n-1 adjacent pairs of t (plug-in estimate: the best any bigram model can do
 * on this very split). Dense counts while V*V <= 2^24, else a sorted copy of the pair codes. -1 when out of
 * memory, 0 for fewer than 2 tokens. */
static double bigram_entropy(const uint16_t *t, size_t n, int V) {
    if (n < 2) return 0;
    size_t N = n - 1;
    uint64_t *first = calloc(V, sizeof *first);
    double sum = 0;                                  /* sum over pairs of c_ab * log c_ab */
    if (!first) return -1;
    for (size_t i = 0; i < N; i++) first[t[i]]++;
    if ((size_t)V * V <= (1u << 24)) {
        uint32_t *c = calloc((size_t)V * V, sizeof *c);
        if (!c) { free(first); return -1; }
        for (size_t i = 0; i < N; i++) c[(size_t)t[i] * V + t[i + 1]]++;
        for (size_t k = 0; k < (size_t)V * V; k++) if (c[k]) sum += c[k] * log((double)c[k]);
        free(c);
    } else {
        uint32_t *code = malloc(N * sizeof *code);
        if (!code) { free(first); return -1; }
        for (size_t i = 0; i < N; i++) code[i] = (uint32_t)t[i] << 16 | t[i + 1];
        qsort(code, N, sizeof *code, cmp_u32);
        for (size_t i = 0, j; i < N; i = j) {
            for (j = i + 1; j < N && code[j] == code[i]; j++) {}
            sum += (double)(j - i) * log((double)(j - i));
        }
        free(code);
    }
    double h = 0;                                    /* H = -(1/N) sum c_ab (log c_ab - log c_a) */
    for (int v = 0; v < V; v++) if (first[v]) h += first[v] * log((double)first[v]);
    free(first);
    return (h - sum) / N;
}

static int write_meta(const char *dir, const char *kind, int V, const uint16_t *train, size_t ntrain, size_t nval, long long seed) {
    double H = unigram_entropy(train, ntrain, V), H2 = bigram_entropy(train, ntrain, V);
    if (H2 < 0) { fprintf(stderr, "prism-data: out of memory counting the bigrams of %zu tokens\n", ntrain); return -1; }
    char path[4200];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    char tg[256], vg[256];
    snprintf(tg, sizeof tg, "%s_train_*.bin", kind);
    snprintf(vg, sizeof vg, "%s_val_*.bin", kind);
    json_t *m = json_pack("{s:s, s:i, s:I, s:I, s:f, s:f, s:s, s:s}", "kind", kind, "vocab_size", V,
                          "train_tokens", (json_int_t)ntrain, "val_tokens", (json_int_t)nval, "unigram_entropy", H,
                          "bigram_entropy", H2,
                          "train_glob", tg, "val_glob", vg);
    if (!m) return -1;
    if (seed >= 0) json_object_set_new(m, "seed", json_integer(seed));
    int rc = json_dump_file(m, path, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(m);
    if (rc) { fprintf(stderr, "prism-data: %s: cannot write\n", path); return -1; }
    printf("train split: unigram entropy %.4f nats, bigram conditional entropy %.4f nats; wrote %s\n", H, H2, path);
    return 0;
}

static int cmd_synth(int argc, char **argv) {
    const char *out = NULL;
    long long ntok = -1, V = 256, seed = 1337;
    double vf = 0.1;
    cli_flag flags[] = {
        {"--out", CLI_STR, &out, "", "output directory (required)", 0, 0, 0, 0},
        {"--tokens", CLI_COUNT, &ntok, "", "tokens in all (required), e.g. 2M", 10000, 4000000000LL, 0, 0},
        {"--vocab", CLI_COUNT, &V, "256", "vocabulary size", 64, 65536, 0, 0},
        {"--seed", CLI_COUNT, &seed, "1337", "the language and the text drawn from it", 0, 9007199254740991LL, 0, 0},
        {"--val-frac", CLI_DOUBLE, &vf, "0.1", "share of the tokens in the val split, in (0, 1)", 0, 1, 0, 0},
        {0}};
    cli_cmd cmd = {"synth", "--out DIR --tokens N [--vocab V] [--seed S] [--val-frac F]",
                   "A synthetic language with local and long-range structure, as llm.c shards plus DIR/meta.json.",
                   flags, "prism-data"};
    char *pos[1];
    int npos, rc0 = cli_parse(&cmd, argc, argv, pos, 0, &npos);
    if (rc0 != CLI_OK) return rc0 == CLI_HELP ? 0 : 2;
    if (!out) return cli_cmd_error(&cmd, "--out DIR is required");
    if (!(vf > 0 && vf < 1)) return cli_cmd_error(&cmd, "--val-frac must be a number in (0, 1) (got %g)", vf);
    if (ntok < 0) return cli_cmd_error(&cmd, "--tokens N is required (e.g. --tokens 2M)");
    if (util_mkdir_p(out, 0755)) { fprintf(stderr, "prism-data: %s: cannot create: %s\n", out, strerror(errno)); return 1; }
    struct synth s = {.V = (int)V, .K = (int)V / 8};
    s.text0 = 3 + s.K;
    s.ntext = (int)V - s.text0;
    s.grammar = util_mix64((uint64_t)seed ^ 0x4752414dULL);
    s.r.s = util_mix64((uint64_t)seed);
    s.doc = malloc((SYNTH_DOC_MAX + 64) * sizeof(uint16_t));
    size_t nval = (size_t)(ntok * vf), ntrain = (size_t)ntok - nval;
    uint16_t *buf = malloc((size_t)ntok * sizeof(uint16_t));
    if (!s.doc || !buf) { fprintf(stderr, "prism-data: out of memory for %lld tokens\n", ntok); free(s.doc); free(buf); return 1; }
    synth_fill(&s, buf, ntrain);
    s.doc_pos = s.doc_len;                           /* val starts on a fresh document */
    synth_fill(&s, buf + ntrain, nval);
    int rc = write_split(out, "synth", "train", buf, ntrain) || write_split(out, "synth", "val", buf + ntrain, nval) ||
             write_meta(out, "synth", (int)V, buf, ntrain, nval, seed);
    free(buf);
    free(s.doc);
    return rc ? 1 : 0;
}

static int cmd_bytes(int argc, char **argv) {
    const char *out = NULL;
    double vf = 0.1;
    cli_flag flags[] = {
        {"--out", CLI_STR, &out, "", "output directory (required)", 0, 0, 0, 0},
        {"--val-frac", CLI_DOUBLE, &vf, "0.1", "share of the tokens in the val split, in (0, 1)", 0, 1, 0, 0},
        {0}};
    cli_cmd cmd = {"bytes", "FILE... --out DIR [--val-frac F]",
                   "Text files to byte-level shards (vocab 256), plus DIR/meta.json.", flags, "prism-data"};
    char *pos[argc];
    int npos, rc0 = cli_parse(&cmd, argc, argv, pos, argc, &npos);
    if (rc0 != CLI_OK) return rc0 == CLI_HELP ? 0 : 2;
    if (!out) return cli_cmd_error(&cmd, "--out DIR is required");
    if (!(vf > 0 && vf < 1)) return cli_cmd_error(&cmd, "--val-frac must be a number in (0, 1) (got %g)", vf);
    if (npos == 0) return cli_cmd_error(&cmd, "give at least one input FILE");
    size_t n = 0, cap = 1 << 20;
    uint16_t *tok = malloc(cap * sizeof *tok);
    if (!tok) return 1;
    for (int i = 0; i < npos; i++) {
        FILE *f = fopen(pos[i], "rb");
        if (!f) { fprintf(stderr, "prism-data: %s: cannot open: %s\n", pos[i], strerror(errno)); free(tok); return 2; }
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
    if (util_mkdir_p(out, 0755)) { fprintf(stderr, "prism-data: %s: cannot create: %s\n", out, strerror(errno)); free(tok); return 1; }
    size_t nval = (size_t)(n * vf), ntrain = n - nval;
    int rc = write_split(out, "bytes", "train", tok, ntrain) || write_split(out, "bytes", "val", tok + ntrain, nval) ||
             write_meta(out, "bytes", 256, tok, ntrain, nval, -1);
    free(tok);
    return rc ? 1 : 0;
}

static int load_bpe(const char *cmd, const char *enc, const char *bpe, struct bpe **out) {
    if (!enc || !bpe) {
        fprintf(stderr, "prism-data %s: --encoder encoder.json and --bpe vocab.bpe are required (GPT-2's tokenizer files)\n", cmd);
        return 2;
    }
    char err[1024];
    int rc = bpe_load(enc, bpe, out, err, sizeof err);
    if (rc) { fprintf(stderr, "prism-data %s: %s\n", cmd, err); return rc == BPE_ENOMEM ? 1 : 2; }
    return 0;
}

/* A shard prefix: letters, digits, '-', '_' and '.', not empty, so NAME_train_*.bin is a glob of just these. */
static int valid_name(const char *s) {
    if (!*s || strlen(s) > 64) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.')) return 0;
    return 1;
}

/* The shards of an earlier run in dir: files NAME_train_*.bin and NAME_val_*.bin. Counts them (*n) and names the
 * first (first, len); with del, deletes each (and meta.json, which described them). Returns 0, or -1 with errno
 * (a shard that cannot be deleted). A missing dir has none. */
static int old_shards(const char *dir, const char *name, int del, int *n, char *first, size_t len) {
    *n = 0;
    first[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t nl = strlen(name);
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        const char *f = e->d_name;
        size_t fl = strlen(f);
        if (fl < nl + 5 || strncmp(f, name, nl) || strcmp(f + fl - 4, ".bin") ||
            (strncmp(f + nl, "_train_", 7) && strncmp(f + nl, "_val_", 5)))
            continue;
        if (!(*n)++) snprintf(first, len, "%s", f);
        if (del) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, f);
            if (unlink(path) != 0) { rc = -1; break; }
        }
    }
    closedir(d);
    if (del && rc == 0 && *n) {
        char meta[4096];
        snprintf(meta, sizeof meta, "%s/meta.json", dir);
        if (unlink(meta) != 0 && errno != ENOENT) rc = -1;
    }
    return rc;
}

static int cmd_tokenize(int argc, char **argv) {
    const char *out = NULL, *enc = NULL, *bpef = NULL, *fmt = "auto", *name = "text", *column = "text";
    long long val = 1000000, shard = (long long)TOKENIZE_MAX_SHARD, threads = sysconf(_SC_NPROCESSORS_ONLN);
    int quiet = 0, force = 0;
    if (threads < 1) threads = 1;
    cli_flag flags[] = {
        {"--out", CLI_STR, &out, "", "output directory (required)", 0, 0, 0, 0},
        {"--force", CLI_BOOL, &force, "off", "delete the shards (NAME_train_*.bin, NAME_val_*.bin) and meta.json an earlier run left in DIR first; without it such shards are an error", 0, 0, 0, 0},
        {"--encoder", CLI_STR, &enc, "", "GPT-2's encoder.json (required)", 0, 0, 0, 0},
        {"--bpe", CLI_STR, &bpef, "", "GPT-2's vocab.bpe (required)", 0, 0, 0, 0},
        {"--format", CLI_CHOICE, &fmt, "auto", "auto: parquet by its magic, .jsonl/.json (also .gz/.zst) JSONL, others text", 0, 0,
         "auto|text|jsonl|parquet", 0},
        {"--name", CLI_STR, &name, "text", "shard prefix: DIR/NAME_train_*.bin, DIR/NAME_val_*.bin", 0, 0, 0, 0},
        {"--column", CLI_STR, &column, "text", "the parquet column / JSONL key holding the text", 0, 0, 0, 0},
        {"--val-tokens", CLI_COUNT, &val, "1M", "the val split's tokens: at most one shard", 0,
         (double)TOKENIZE_MAX_SHARD, 0, 0},
        {"--shard-tokens", CLI_COUNT, &shard, "100M", "tokens a shard (100M is also the most)", 1000,
         (double)TOKENIZE_MAX_SHARD, 0, 0},
        {"--threads", CLI_INT64, &threads, "the CPU count", "encoding threads", 1, 1024, 0, 0},
        {"--quiet", CLI_BOOL, &quiet, "off", "no progress line", 0, 0, 0, 0},
        {0}};
    cli_cmd cmd = {"tokenize", "FILE... --out DIR --encoder encoder.json --bpe vocab.bpe [flags]",
                   "GPT-2 BPE tokens of text files (one document each), JSONL files (a \"text\" per line), both\n"
                   "also gzip- or zstd-compressed (.gz, .zst), and parquet files (each value of the \"text\" column\n"
                   "a document; FineWeb's files as they are). Other binary files are refused, naming the format.\n"
                   "<|endoftext|> before each document; writes DIR/NAME_val_NNNNNN.bin (the first --val-tokens\n"
                   "tokens), NAME_train_*.bin (the rest), at most --shard-tokens a shard, and DIR/meta.json.\n"
                   "NAME is text by default, which the specs in sweeps/ expect (data/text_train_*.bin).",
                   flags, "prism-data"};
    char *pos[argc];
    int npos, rc0 = cli_parse(&cmd, argc, argv, pos, argc, &npos);
    if (rc0 != CLI_OK) return rc0 == CLI_HELP ? 0 : 2;
    int format = strcmp(fmt, "text") == 0 ? TOKENIZE_TEXT : strcmp(fmt, "jsonl") == 0 ? TOKENIZE_JSONL
               : strcmp(fmt, "parquet") == 0 ? TOKENIZE_PARQUET : TOKENIZE_AUTO;
    if (!out) return cli_cmd_error(&cmd, "--out DIR is required");
    if (!valid_name(name)) return cli_cmd_error(&cmd, "--name \"%s\": use 1-64 letters, digits, '-', '_' or '.'", name);
    if (!*column) return cli_cmd_error(&cmd, "--column must not be empty");
    if (npos == 0) return cli_cmd_error(&cmd, "give at least one input FILE (text, or JSONL with a \"text\" field)");
    if (val > shard) { fprintf(stderr, "prism-data tokenize: --val-tokens %lld exceeds --shard-tokens %lld (the val split is one shard)\n", val, shard); return 2; }
    for (int i = 0; i < npos; i++)
        if (access(pos[i], R_OK)) { fprintf(stderr, "prism-data tokenize: %s: cannot read: %s\n", pos[i], strerror(errno)); return 2; }
    {   /* an earlier run's shards: a spec's glob (data/text_train_*.bin) would read them beside the new ones */
        int nold = 0;
        char first[512];
        old_shards(out, name, 0, &nold, first, sizeof first);
        if (nold && !force) {
            fprintf(stderr, "prism-data tokenize: %s already holds %d shard(s) of an earlier run (%s%s): the specs' glob "
                    "%s/%s_train_*.bin would read them together with the new ones; give another --out or --name, or "
                    "--force to delete them first\n", out, nold, first, nold > 1 ? ", ..." : "", out, name);
            return 2;
        }
        if (nold && old_shards(out, name, 1, &nold, first, sizeof first) != 0) {
            fprintf(stderr, "prism-data tokenize: --force: cannot delete the old shards in %s: %s\n", out, strerror(errno));
            return 1;
        }
        if (nold && !quiet) fprintf(stderr, "prism-data tokenize: --force: deleted %d old shard(s) and meta.json in %s\n", nold, out);
    }
    struct bpe *b = NULL;
    int rc = load_bpe("tokenize", enc, bpef, &b);
    if (rc) return rc;
    if (util_mkdir_p(out, 0755)) { fprintf(stderr, "prism-data: %s: cannot create: %s\n", out, strerror(errno)); bpe_free(b); return 1; }
    struct tokenize_opts o = {.bpe = b, .inputs = pos, .ninputs = npos, .format = format, .out_dir = out,
                              .kind = name, .column = column, .shard_tokens = (size_t)shard, .val_tokens = (size_t)val, .threads = (int)threads,
                              .progress = quiet ? NULL : stderr};
    struct tokenize_stats st;
    char err[1024] = "";
    rc = tokenize_run(&o, &st, err, sizeof err);
    bpe_free(b);
    if (rc) { fprintf(stderr, "prism-data tokenize: %s\n", err); return rc == TOKENIZE_EINPUT ? 2 : 1; }
    printf("wrote %d val and %d train shard(s) to %s: %zu val + %zu train tokens from %zu documents (%.1f MB) in %.1f s, "
           "%.0f tokens/s\n", st.val_shards, st.train_shards, out, st.val_tokens, st.train_tokens, st.documents,
           st.bytes / 1e6, st.seconds, st.tokens / (st.seconds > 0 ? st.seconds : 1e-9));
    return 0;
}

/* --task llmc: an llm.c eval file, checked whole (evalfile_open) and copied as it is. */
static int evalfile_passthrough(const char *from, const char *out) {
    struct evalfile ef;
    char err[1024];
    int rc = evalfile_open(from, 0, &ef, err, sizeof err);
    if (rc) { fprintf(stderr, "prism-data evalfile: %s\n", err); return rc == EVALFILE_ENOMEM ? 1 : 2; }
    /* ef.data is everything after the header, the character counts included when header[4] says so */
    int32_t hdr[EVALFILE_HEADER_INTS] = {EVALFILE_MAGIC, EVALFILE_VERSION, ef.n, ef.longest_bytes, ef.chars != NULL};
    util_part parts[2] = {{hdr, sizeof hdr}, {ef.data, ef.ndata * sizeof *ef.data}};
    rc = util_write_atomic(out, parts, 2, 0644, err, sizeof err);
    int n = ef.n;
    evalfile_close(&ef);
    if (rc) { fprintf(stderr, "prism-data evalfile: %s\n", err); return 1; }
    printf("wrote %s: %d examples (an llm.c eval file, checked and copied)\n", out, n);
    return 0;
}

/* --labels FILE: one integer a line (PIQA's *-labels.lst); *out (n) owned by the caller. */
static int read_labels(const char *path, int **out, long *n) {
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "prism-data evalfile: %s: cannot open: %s\n", path, strerror(errno)); return 2; }
    long cap = 0, k = 0, lineno = 0;
    int *v = NULL;
    char line[64];
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *e;
        long x = strtol(line, &e, 10);
        while (*e == ' ' || *e == '\t' || *e == '\r' || *e == '\n') e++;
        if (e == line || *e || x < 0 || x > 999) {
            fprintf(stderr, "prism-data evalfile: %s:%ld: expected one label (an integer) a line\n", path, lineno);
            free(v); fclose(f); return 2;
        }
        if (k == cap) { cap = cap ? 2 * cap : 1024; int *nv = realloc(v, (size_t)cap * sizeof *nv); if (!nv) { free(v); fclose(f); return 1; } v = nv; }
        v[k++] = (int)x;
    }
    fclose(f);
    *out = v;
    *n = k;
    return 0;
}

/* One multiple-choice JSONL line per example (evaltasks.h: the task's native keys) → an llm.c eval file. */
static int cmd_evalfile(int argc, char **argv) {
    const char *from = NULL, *out = NULL, *enc = NULL, *bpef = NULL, *task_name = "auto", *labels = NULL;
    cli_flag flags[] = {
        {"--from", CLI_STR, &from, "", "the task's JSONL, or an llm.c eval file (required)", 0, 0, 0, 0},
        {"--out", CLI_STR, &out, "", "the eval file to write, FILE.bin (required)", 0, 0, 0, 0},
        {"--task", CLI_CHOICE, &task_name, "auto", "the input's format (auto: an llm.c eval file by its magic, else "
         "from the first line's keys)", 0, 0, "auto|prism|hellaswag|piqa|arc-easy|arc-challenge|winogrande|llmc", 0},
        {"--labels", CLI_STR, &labels, "", "PIQA: the labels file (one 0/1 a line) when the lines have no \"label\"", 0, 0, 0, 0},
        {"--encoder", CLI_STR, &enc, "", "GPT-2's encoder.json (required but for llm.c eval files)", 0, 0, 0, 0},
        {"--bpe", CLI_STR, &bpef, "", "GPT-2's vocab.bpe (required but for llm.c eval files)", 0, 0, 0, 0},
        {0}};
    cli_cmd cmd = {"evalfile", "--from FILE --out FILE.bin [--task NAME] --encoder F --bpe F",
                   "A zero-shot task for a job's eval.tasks, as an llm.c multiple-choice eval file (GPT-2 BPE), from\n"
                   "the task's own JSONL: HellaSwag (ctx_a, ctx_b, activity_label, endings, label), PIQA (goal, sol1,\n"
                   "sol2; label, or --labels), ARC-Easy/Challenge (question.stem, question.choices, answerKey),\n"
                   "WinoGrande (sentence with _, option1/2, answer), prism ({\"context\", \"endings\", \"label\"}), with\n"
                   "lm-eval's prompts (docs/FORMATS.md); or an llm.c eval file, checked and copied (--task llmc).",
                   flags, "prism-data"};
    char *pos[1];
    int npos, rc0 = cli_parse(&cmd, argc, argv, pos, 0, &npos);
    if (rc0 != CLI_OK) return rc0 == CLI_HELP ? 0 : 2;
    if (!from) { fprintf(stderr, "prism-data evalfile: --from FILE is required (the task's JSONL)\n"); return 2; }
    if (!out) { fprintf(stderr, "prism-data evalfile: --out FILE.bin is required\n"); return 2; }
    FILE *f = fopen(from, "r");
    if (!f) { fprintf(stderr, "prism-data evalfile: %s: cannot open: %s\n", from, strerror(errno)); return 2; }
    unsigned char magic[4] = {0};
    size_t nm = fread(magic, 1, 4, f);
    rewind(f);
    int is_llmc = nm == 4 && (uint32_t)(magic[0] | magic[1] << 8 | magic[2] << 16 | (uint32_t)magic[3] << 24) == EVALFILE_MAGIC;
    if (!strcmp(task_name, "llmc") || (is_llmc && !strcmp(task_name, "auto"))) { fclose(f); return evalfile_passthrough(from, out); }
    if (is_llmc) { fprintf(stderr, "prism-data evalfile: %s is an llm.c eval file, not %s JSONL: use --task llmc (or auto)\n", from, task_name); fclose(f); return 2; }
    int task = strcmp(task_name, "auto") ? evaltask_by_name(task_name) : -1;
    int *lab = NULL;
    long nlab = -1;
    if (labels && (rc0 = read_labels(labels, &lab, &nlab))) { fclose(f); return rc0; }
    struct bpe *b = NULL;
    int rc = load_bpe("evalfile", enc, bpef, &b);
    if (rc) { fclose(f); free(lab); return rc; }
    struct bpe_ctx *bc = bpe_ctx_new(b);
    struct evalfile_writer w;
    evalfile_writer_init(&w);
    uint16_t *toks[EVALFILE_MAX_COMPLETIONS + 1] = {0};
    size_t ntok[EVALFILE_MAX_COMPLETIONS + 1], cap[EVALFILE_MAX_COMPLETIONS + 1] = {0};
    char *line = NULL, err[1024];
    size_t lcap = 0;
    long lineno = 0, nex = 0;
    struct evaltask_example ex = {0};
    rc = 0;
    if (!bc) { fprintf(stderr, "prism-data evalfile: out of memory\n"); rc = 1; goto out; }
    while (getline(&line, &lcap, f) >= 0) {
        lineno++;
        size_t s = strspn(line, " \t\r\n");
        if (!line[s]) continue;
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        if (!o) { fprintf(stderr, "prism-data evalfile: %s:%ld: not valid JSON: %s\n", from, lineno, je.text); rc = 2; goto out; }
        if (task < 0) {
            if ((task = evaltask_detect(o)) < 0) {
                fprintf(stderr, "prism-data evalfile: %s:%ld: cannot tell the task from its keys: give --task "
                        "(hellaswag, piqa, arc-easy, arc-challenge, winogrande, prism or llmc)\n", from, lineno);
                json_decref(o); rc = 2; goto out;
            }
            fprintf(stderr, "prism-data evalfile: reading %s as %s (from line %ld's keys)\n", from, evaltask_name(task), lineno);
        }
        if (nlab >= 0 && nex >= nlab) {
            fprintf(stderr, "prism-data evalfile: %s has only %ld labels, %s has more examples\n", labels, nlab, from);
            json_decref(o); rc = 2; goto out;
        }
        int prc = evaltask_parse(task, o, nlab >= 0 ? lab[nex] : -1, &ex, err, sizeof err);
        json_decref(o);
        if (prc) { fprintf(stderr, "prism-data evalfile: %s:%ld: %s (task %s)\n", from, lineno, err, evaltask_name(task)); rc = 2; goto out; }
        if (ex.nchoice > EVALFILE_MAX_COMPLETIONS) { fprintf(stderr, "prism-data evalfile: %s:%ld: more than 64 endings\n", from, lineno); rc = 2; goto out; }
        int lens[EVALFILE_MAX_COMPLETIONS], chars[EVALFILE_MAX_COMPLETIONS];
        ntok[0] = 0;
        if (!ex.ctx[0]) {                           /* an empty context: the end-of-text token */
            if (bpe_eot(b) < 0) { fprintf(stderr, "prism-data evalfile: %s:%ld: an empty context needs <|endoftext|> in the encoder\n", from, lineno); rc = 2; goto out; }
            if (!cap[0]) { toks[0] = malloc(64 * sizeof *toks[0]); cap[0] = toks[0] ? 64 : 0; }
            if (!toks[0]) rc = -1; else toks[0][ntok[0]++] = (uint16_t)bpe_eot(b);
        } else rc = bpe_encode(bc, ex.ctx, strlen(ex.ctx), &toks[0], &ntok[0], &cap[0]);
        for (int k = 0; k < ex.nchoice && !rc; k++) {
            ntok[k + 1] = 0;
            rc = bpe_encode(bc, ex.choice[k], strlen(ex.choice[k]), &toks[k + 1], &ntok[k + 1], &cap[k + 1]);
            lens[k] = (int)ntok[k + 1];
            chars[k] = evaltask_choice_chars(ex.choice[k]);   /* what lm-eval's acc_norm divides by */
        }
        if (rc == BPE_ETOOLONG) { fprintf(stderr, "prism-data evalfile: %s:%ld: a piece of text over %u MiB with no break (BPE_MAX_PIECE)\n", from, lineno, BPE_MAX_PIECE >> 20); rc = 2; goto out; }
        if (rc) { fprintf(stderr, "prism-data evalfile: out of memory\n"); rc = 1; goto out; }
        if (ntok[0] > 30000) { fprintf(stderr, "prism-data evalfile: %s:%ld: the context is %zu tokens, too long for the format\n", from, lineno, ntok[0]); rc = 2; goto out; }
        if (ex.label < 0 || ex.label >= ex.nchoice) {
            fprintf(stderr, "prism-data evalfile: %s:%ld: \"label\" %d is not an index into the %d endings\n", from, lineno, ex.label, ex.nchoice);
            rc = 2;
            goto out;
        }
        if (evalfile_writer_add_chars(&w, ex.label, toks[0], (int)ntok[0], ex.nchoice, (const uint16_t *const *)(toks + 1), lens,
                                      chars, err, sizeof err)) {
            fprintf(stderr, "prism-data evalfile: %s:%ld: %s\n", from, lineno, err);
            rc = 2;
            goto out;
        }
        evaltask_release(&ex);
        nex++;
    }
    if (w.n == 0) { fprintf(stderr, "prism-data evalfile: %s: no examples (one JSON object a line)\n", from); rc = 2; goto out; }
    if (nlab >= 0 && nlab != nex) { fprintf(stderr, "prism-data evalfile: %s has %ld labels for %ld examples in %s\n", labels, nlab, nex, from); rc = 2; goto out; }
    if (evalfile_writer_finish(&w, out, err, sizeof err)) { fprintf(stderr, "prism-data evalfile: %s\n", err); rc = 1; goto out; }
    printf("wrote %s: %d examples of %s (longest %d bytes)\n", out, w.n, evaltask_name(task), w.longest_bytes);
out:
    evaltask_release(&ex);
    for (int k = 0; k <= EVALFILE_MAX_COMPLETIONS; k++) free(toks[k]);
    free(line);
    free(lab);
    fclose(f);
    evalfile_writer_release(&w);
    bpe_ctx_free(bc);
    bpe_free(b);
    return rc;
}

static const struct { const char *name; int (*fn)(int, char **); const char *summary; } commands[] = {
    {"synth", cmd_synth, "a synthetic language with local and long-range structure: --out DIR --tokens N"},
    {"bytes", cmd_bytes, "text files to byte-level shards (vocab 256): FILE... --out DIR"},
    {"tokenize", cmd_tokenize, "text, JSONL or parquet to GPT-2 BPE shards: FILE... --out DIR --encoder F --bpe F"},
    {"evalfile", cmd_evalfile, "a benchmark's JSONL (HellaSwag, PIQA, ARC, WinoGrande) to an llm.c eval file"},
};

int main(int argc, char **argv) {
    int n = (int)(sizeof commands / sizeof commands[0]);
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) return prism_version_print("prism-data");
    if (argc >= 2)
        for (int i = 0; i < n; i++)
            if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
    FILE *f = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) ? stdout : stderr;
    if (argc >= 2 && f == stderr) fprintf(stderr, "prism-data: unknown command \"%s\"\n", argv[1]);
    fprintf(f, "usage: prism-data COMMAND [args]\n");
    for (int i = 0; i < n; i++) fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    return f == stdout ? 0 : 2;
}
