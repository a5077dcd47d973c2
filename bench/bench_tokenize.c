/* bench/bench_tokenize.c — GPT-2 BPE tokenisation throughput (prism-data tokenize's pipeline, dataprep/tokenize.c)
 * in MB of text per second, with one and two encoding threads.
 *
 * Nothing is downloaded: the benchmark generates its own corpus and vocabulary. The corpus is English-like text
 * (a lexicon of 6000 pseudo-words from syllables, drawn Zipf-distributed, with capitals, punctuation, numbers,
 * contractions, paragraphs and a little non-ASCII) in 2000-character JSONL documents and one large plain-text
 * file; the vocabulary is byte-level BPE with 5000 merges learned on that lexicon (as " word" pieces, the way
 * GPT-2's pattern cuts text), written as encoder.json + vocab.bpe and loaded through bpe_load. Each figure is
 * the median of 3 runs over the whole corpus (read from the page cache; shards are not written), in wall time and
 * in process CPU time (MB per CPU-second: the per-core rate, which a loaded machine does not distort).
 *
 *   bench_tokenize [MB]        corpus size, default 24
 */
#include "bpe.h"
#include "tokenize.h"
#include "util.h"
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t rs = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static double unif(void) { return (rnd() >> 11) * (1.0 / 9007199254740992.0); }

#define NWORDS 6000
static char words[NWORDS][24];
static double zipf_cdf[NWORDS];

static void make_lexicon(void) {
    static const char *on[] = {"", "b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "w", "th", "st", "pr", "ch", "sh", "tr", "gr"};
    static const char *nu[] = {"a", "e", "i", "o", "u", "ea", "ou", "io", "ai", "ee"};
    static const char *co[] = {"", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck", "rt", "m"};
    for (int w = 0; w < NWORDS; w++) {
        int syl = 1 + (int)(rnd() % 3), n = 0;
        if (w < 60) syl = 1;                          /* the frequent words are short */
        for (int s = 0; s < syl; s++)
            n += snprintf(words[w] + n, sizeof words[w] - n, "%s%s%s", on[rnd() % 22], nu[rnd() % 10], co[rnd() % 13]);
    }
    double z = 0;
    for (int w = 0; w < NWORDS; w++) z += 1.0 / (w + 1);
    double c = 0;
    for (int w = 0; w < NWORDS; w++) { c += 1.0 / (w + 1) / z; zipf_cdf[w] = c; }
}

static int draw_word(void) {
    double u = unif();
    int lo = 0, hi = NWORDS - 1;
    while (lo < hi) { int m = (lo + hi) / 2; if (zipf_cdf[m] < u) lo = m + 1; else hi = m; }
    return lo;
}

/* appends about n bytes of text */
static size_t gen_text(char *out, size_t n) {
    size_t o = 0;
    int sentence_start = 1;
    while (o < n) {
        double u = unif();
        const char *w = words[draw_word()];
        char buf[64];
        if (u < 0.02) snprintf(buf, sizeof buf, " %d", (int)(rnd() % 100000));
        else if (u < 0.03) snprintf(buf, sizeof buf, " caf\xc3\xa9");
        else if (u < 0.035) snprintf(buf, sizeof buf, " \xce\xb1\xce\xbb\xcf\x86\xce\xb1");
        else if (u < 0.05) snprintf(buf, sizeof buf, " %s's", w);
        else if (sentence_start) { snprintf(buf, sizeof buf, " %s", w); buf[1] = (char)(buf[1] - 32 * (buf[1] >= 'a' && buf[1] <= 'z')); }
        else snprintf(buf, sizeof buf, " %s", w);
        sentence_start = 0;
        size_t l = strlen(buf);
        if (o + l + 4 > n) break;
        memcpy(out + o, buf, l);
        o += l;
        double v = unif();
        if (v < 0.06) { out[o++] = '.'; sentence_start = 1; if (unif() < 0.15) { out[o++] = '\n'; out[o++] = '\n'; } }
        else if (v < 0.1) out[o++] = ',';
    }
    return o;
}

/* ---- a byte-level BPE learned on the lexicon ------------------------------------------------------------- */

#define NMERGE 5000
static unsigned char tokb[256 + NMERGE][64];
static int tokl[256 + NMERGE];
static int mleft[NMERGE], mright[NMERGE];

static void learn_merges(void) {
    for (int b = 0; b < 256; b++) { tokb[b][0] = (unsigned char)b; tokl[b] = 1; }
    static int seq[NWORDS][32], len[NWORDS];
    static double freq[NWORDS];
    for (int w = 0; w < NWORDS; w++) {
        len[w] = 0;
        seq[w][len[w]++] = ' ';
        for (const char *p = words[w]; *p && len[w] < 32; p++) seq[w][len[w]++] = (unsigned char)*p;
        freq[w] = 1.0 / (w + 1);
    }
    /* pair counts over word types, recounted each round (types × length per round: fast enough here) */
    for (int m = 0; m < NMERGE; m++) {
        int bl = -1, br = -1;
        double best = 0;
        /* pair counts in a small open-addressing table */
        enum { HS = 1 << 16 };
        static uint32_t key[HS], used[HS];
        static double val[HS];
        int nused = 0;
        for (int w = 0; w < NWORDS; w++)
            for (int i = 0; i + 1 < len[w]; i++) {
                uint32_t k = ((uint32_t)seq[w][i] << 16 | (uint32_t)seq[w][i + 1]) + 1;
                uint32_t h = (k * 2654435761u) & (HS - 1);
                while (key[h] && key[h] != k) h = (h + 1) & (HS - 1);
                if (!key[h]) { key[h] = k; val[h] = 0; used[nused++] = h; }
                val[h] += freq[w];
            }
        for (int q = 0; q < nused; q++) {
            int h = (int)used[q];
            if (val[h] > best) {
                int l = (int)((key[h] - 1) >> 16), r = (int)((key[h] - 1) & 0xffff);
                if (tokl[l] + tokl[r] > 60) continue;
                best = val[h]; bl = l; br = r;
            }
        }
        for (int q = 0; q < nused; q++) key[used[q]] = 0;
        if (bl < 0) { fprintf(stderr, "bench_tokenize: only %d merges learned\n", m); exit(1); }
        int id = 256 + m;
        memcpy(tokb[id], tokb[bl], tokl[bl]);
        memcpy(tokb[id] + tokl[bl], tokb[br], tokl[br]);
        tokl[id] = tokl[bl] + tokl[br];
        mleft[m] = bl; mright[m] = br;
        for (int w = 0; w < NWORDS; w++) {
            int o = 0;
            for (int i = 0; i < len[w]; i++) {
                if (i + 1 < len[w] && seq[w][i] == bl && seq[w][i + 1] == br) { seq[w][o++] = id; i++; }
                else seq[w][o++] = seq[w][i];
            }
            len[w] = o;
        }
    }
}

/* token bytes in GPT-2's byte alphabet (UTF-8) */
static void alpha(const unsigned char *b, int n, char *out) {
    static int cp[256];
    if (!cp[33]) {
        int extra = 0;
        for (int x = 0; x < 256; x++) {
            int pr = (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255);
            cp[x] = pr ? x : 256 + extra++;
        }
    }
    int o = 0;
    for (int i = 0; i < n; i++) {
        int c = cp[b[i]];
        if (c < 0x80) out[o++] = (char)c;
        else { out[o++] = (char)(0xc0 | c >> 6); out[o++] = (char)(0x80 | (c & 0x3f)); }
    }
    out[o] = 0;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static int cmp_d(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

int main(int argc, char **argv) {
    double mb = argc > 1 ? atof(argv[1]) : 24;
    if (!(mb > 0)) { fprintf(stderr, "usage: bench_tokenize [MB]\n"); return 2; }
    char dir[] = "/tmp/bench-tokenize-XXXXXX";
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    make_lexicon();
    double t0 = util_now_s();
    learn_merges();
    double t_learn = util_now_s() - t0;
    char enc[512], bpef[512], txt[512], jsl[512];
    snprintf(enc, sizeof enc, "%s/encoder.json", dir);
    snprintf(bpef, sizeof bpef, "%s/vocab.bpe", dir);
    snprintf(txt, sizeof txt, "%s/corpus.txt", dir);
    snprintf(jsl, sizeof jsl, "%s/corpus.jsonl", dir);
    json_t *e = json_object();
    char s1[256], s2[256];
    for (int t = 0; t < 256 + NMERGE; t++) { alpha(tokb[t], tokl[t], s1); json_object_set_new(e, s1, json_integer(t)); }
    json_object_set_new(e, "<|endoftext|>", json_integer(256 + NMERGE));
    json_dump_file(e, enc, 0);
    json_decref(e);
    FILE *f = fopen(bpef, "w");
    fprintf(f, "#version: 0.2\n");
    for (int m = 0; m < NMERGE; m++) {
        alpha(tokb[mleft[m]], tokl[mleft[m]], s1);
        alpha(tokb[mright[m]], tokl[mright[m]], s2);
        fprintf(f, "%s %s\n", s1, s2);
    }
    fclose(f);
    /* the corpus: half one plain-text document, half JSONL documents of ~2000 characters */
    size_t half = (size_t)(mb * 1e6 / 2);
    char *text = malloc(half + 64);
    size_t n = gen_text(text, half);
    f = fopen(txt, "wb");
    fwrite(text, 1, n, f);
    fclose(f);
    f = fopen(jsl, "wb");
    size_t jbytes = 0;
    while (jbytes < half) {
        char doc[2100];
        size_t dn = gen_text(doc, 2000);
        doc[dn] = 0;
        json_t *o = json_pack("{s:s}", "text", doc);
        char *line = json_dumps(o, JSON_COMPACT);
        jbytes += (size_t)fprintf(f, "%s\n", line);
        free(line);
        json_decref(o);
    }
    fclose(f);
    free(text);
    struct bpe *b = NULL;
    char err[1024];
    if (bpe_load(enc, bpef, &b, err, sizeof err)) { fprintf(stderr, "bench_tokenize: %s\n", err); return 1; }
    char *inputs[2] = {txt, jsl};
    printf("corpus: %.1f MB (%.1f MB plain text + %.1f MB JSONL), vocabulary %d tokens (%d merges learned in %.1f s)\n",
           (n + jbytes) / 1e6, n / 1e6, jbytes / 1e6, bpe_vocab_size(b), NMERGE, t_learn);
    for (int threads = 1; threads <= 2; threads++) {
        double secs[3], cpus[3];
        struct tokenize_stats st;
        for (int r = 0; r < 3; r++) {
            double c0 = cpu_s();
            struct tokenize_opts o = {.bpe = b, .inputs = inputs, .ninputs = 2, .threads = threads, .val_tokens = 0};
            if (tokenize_run(&o, &st, err, sizeof err)) { fprintf(stderr, "bench_tokenize: %s\n", err); return 1; }
            secs[r] = st.seconds;
            cpus[r] = cpu_s() - c0;
        }
        qsort(secs, 3, sizeof *secs, cmp_d);
        qsort(cpus, 3, sizeof *cpus, cmp_d);
        printf("tokenize  threads=%d  %6.1f MB/s  %5.2fM tokens/s  (%zu tokens, %.2f bytes/token; median of 3: %.2f s wall, "
               "%.2f s CPU = %.1f MB per CPU-second)\n", threads, st.bytes / 1e6 / secs[1], st.tokens / 1e6 / secs[1], st.tokens,
               (double)st.bytes / st.tokens, secs[1], cpus[1], st.bytes / 1e6 / cpus[1]);
    }
    bpe_free(b);
    unlink(enc); unlink(bpef); unlink(txt); unlink(jsl); rmdir(dir);
    return 0;
}
