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
 * Then the input formats (dataprep/input.h, parquet.h): the JSONL half again as it is, gzip- and zstd-compressed
 * (zlib level 6, zstd level 3) and as parquet (written here: one REQUIRED BYTE_ARRAY "text" column, PLAIN data
 * pages v1 of ~1 MiB, 8 MiB row groups, snappy or zstd pages), each tokenized with 2 threads (median of 3), and
 * read alone (decompress + decode, no tokenizer) to give the input path's own cost.
 *
 *   bench_tokenize [MB]        corpus size, default 24
 */
#include "bpe.h"
#include "input.h"
#include "parquet.h"
#include "tokenize.h"
#include "util.h"
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

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

/* ---- a minimal parquet writer (Thrift compact protocol), for this benchmark's input only ------------------------ */

struct wbuf { unsigned char *b; size_t n, cap; };
static void wb_put(struct wbuf *w, const void *p, size_t n) {
    if (w->n + n > w->cap) { w->cap = (w->n + n) * 2 + 1024; w->b = realloc(w->b, w->cap); }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}
static void wb_byte(struct wbuf *w, int c) { unsigned char b = (unsigned char)c; wb_put(w, &b, 1); }
static void wb_varint(struct wbuf *w, uint64_t v) { while (v >= 0x80) { wb_byte(w, (int)(v & 0x7f) | 0x80); v >>= 7; } wb_byte(w, (int)v); }
static void wb_zz(struct wbuf *w, int64_t v) { wb_varint(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }
/* field header (id must increase by 1..15 within a struct: true for every struct written here) */
static void wb_field(struct wbuf *w, int *last, int id, int type) { wb_byte(w, (id - *last) << 4 | type); *last = id; }
static void wb_i(struct wbuf *w, int *last, int id, int type, int64_t v) { wb_field(w, last, id, type); wb_zz(w, v); }
static void wb_bin(struct wbuf *w, const char *s) { wb_varint(w, strlen(s)); wb_put(w, s, strlen(s)); }

struct rg_meta { int64_t off, usize, csize, rows; };

/* docs (n, NUL-terminated) → path as parquet; codec 1 snappy, 6 zstd */
static void write_parquet(const char *path, char **docs, size_t n, int codec) {
    struct wbuf out = {0}, page = {0}, hdr = {0};
    wb_put(&out, "PAR1", 4);
    struct rg_meta rg[4096];
    int nrg = 0;
    size_t i = 0;
    while (i < n) {
        struct rg_meta *g = &rg[nrg++];
        g->off = (int64_t)out.n; g->usize = g->csize = 0; g->rows = 0;
        while (i < n && g->usize < 8 << 20) {
            page.n = 0;
            int nv = 0;
            while (i < n && page.n < 1 << 20) {
                uint32_t l = (uint32_t)strlen(docs[i]);
                wb_put(&page, &l, 4); wb_put(&page, docs[i], l);
                i++; nv++;
            }
            size_t cap = codec == 1 ? snappy_max_compressed_length(page.n) : ZSTD_compressBound(page.n);
            char *c = malloc(cap);
            size_t cn = cap;
            if (codec == 1) snappy_compress((const char *)page.b, page.n, c, &cn);
            else cn = ZSTD_compress(c, cap, page.b, page.n, 3);
            hdr.n = 0;
            int last = 0, l2 = 0;
            wb_i(&hdr, &last, 1, 5, 0);                       /* type DATA_PAGE */
            wb_i(&hdr, &last, 2, 5, (int64_t)page.n);
            wb_i(&hdr, &last, 3, 5, (int64_t)cn);
            wb_field(&hdr, &last, 5, 12);                     /* data_page_header */
            wb_i(&hdr, &l2, 1, 5, nv); wb_i(&hdr, &l2, 2, 5, 0); wb_i(&hdr, &l2, 3, 5, 3); wb_i(&hdr, &l2, 4, 5, 3);
            wb_byte(&hdr, 0);
            wb_byte(&hdr, 0);
            wb_put(&out, hdr.b, hdr.n); wb_put(&out, c, cn);
            free(c);
            g->usize += (int64_t)(hdr.n + page.n); g->csize += (int64_t)(hdr.n + cn); g->rows += nv;
        }
    }
    struct wbuf f = {0};
    int last = 0;
    wb_i(&f, &last, 1, 5, 1);                                 /* version */
    wb_field(&f, &last, 2, 9); wb_byte(&f, 2 << 4 | 12);      /* schema: 2 elements */
    { int l = 0; wb_field(&f, &l, 4, 8); wb_bin(&f, "schema"); wb_i(&f, &l, 5, 5, 1); wb_byte(&f, 0); }
    { int l = 0; wb_i(&f, &l, 1, 5, 6); wb_i(&f, &l, 3, 5, 0); wb_field(&f, &l, 4, 8); wb_bin(&f, "text"); wb_i(&f, &l, 6, 5, 0); wb_byte(&f, 0); }
    wb_i(&f, &last, 3, 6, (int64_t)n);                        /* num_rows */
    wb_field(&f, &last, 4, 9);                                /* row_groups */
    if (nrg < 15) wb_byte(&f, nrg << 4 | 12); else { wb_byte(&f, 0xf0 | 12); wb_varint(&f, (uint64_t)nrg); }
    for (int g = 0; g < nrg; g++) {
        int l = 0;
        wb_field(&f, &l, 1, 9); wb_byte(&f, 1 << 4 | 12);     /* columns: 1 */
        int c = 0;
        wb_i(&f, &c, 2, 6, rg[g].off);
        wb_field(&f, &c, 3, 12);
        int m = 0;
        wb_i(&f, &m, 1, 5, 6);
        wb_field(&f, &m, 2, 9); wb_byte(&f, 2 << 4 | 5); wb_zz(&f, 0); wb_zz(&f, 3);
        wb_field(&f, &m, 3, 9); wb_byte(&f, 1 << 4 | 8); wb_bin(&f, "text");
        wb_i(&f, &m, 4, 5, codec);
        wb_i(&f, &m, 5, 6, rg[g].rows);
        wb_i(&f, &m, 6, 6, rg[g].usize);
        wb_i(&f, &m, 7, 6, rg[g].csize);
        wb_i(&f, &m, 9, 6, rg[g].off);
        wb_byte(&f, 0);                                       /* end ColumnMetaData */
        wb_byte(&f, 0);                                       /* end ColumnChunk */
        wb_i(&f, &l, 2, 6, rg[g].usize);
        wb_i(&f, &l, 3, 6, rg[g].rows);
        wb_byte(&f, 0);                                       /* end RowGroup */
    }
    wb_byte(&f, 0);
    uint32_t fl = (uint32_t)f.n;
    wb_put(&out, f.b, f.n); wb_put(&out, &fl, 4); wb_put(&out, "PAR1", 4);
    FILE *o = fopen(path, "wb");
    fwrite(out.b, 1, out.n, o);
    fclose(o);
    free(out.b); free(page.b); free(hdr.b); free(f.b);
}

static void compress_file(const char *src, const char *dst, int zstd) {
    FILE *i = fopen(src, "rb");
    fseek(i, 0, SEEK_END);
    size_t n = (size_t)ftell(i);
    rewind(i);
    char *b = malloc(n);
    if (fread(b, 1, n, i) != n) { perror(src); exit(1); }
    fclose(i);
    if (zstd) {
        size_t cap = ZSTD_compressBound(n);
        char *c = malloc(cap);
        size_t cn = ZSTD_compress(c, cap, b, n, 3);
        FILE *o = fopen(dst, "wb"); fwrite(c, 1, cn, o); fclose(o);
        free(c);
    } else {
        gzFile g = gzopen(dst, "wb6");
        gzwrite(g, b, (unsigned)n);
        gzclose(g);
    }
    free(b);
}

static double cpu_s(void);

/* decompress/decode only: bytes of text delivered; returns the CPU seconds taken (one thread) */
static double read_only(const char *path, size_t *bytes) {
    double t0 = cpu_s();
    *bytes = 0;
    char err[600];
    struct input in;
    if (input_open(path, 1, &in, err, sizeof err)) { fprintf(stderr, "bench_tokenize: %s\n", err); exit(1); }
    if (in.kind == INPUT_PARQUET) {
        int fd = open(path, O_RDONLY);
        struct stat sb;
        fstat(fd, &sb);
        void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        struct parquet_reader *r;
        if (parquet_open(map, (size_t)sb.st_size, "text", &r, err, sizeof err)) { fprintf(stderr, "bench_tokenize: %s\n", err); exit(1); }
        const uint8_t *v;
        size_t n;
        unsigned sum = 0;
        while (parquet_next(r, &v, &n, err, sizeof err) == 1) { *bytes += n; sum += n ? v[n - 1] : 0; }
        if (sum == 1) printf(" ");
        parquet_close(r);
        munmap(map, (size_t)sb.st_size);
        close(fd);
    } else {
        static char buf[1 << 16];
        size_t k;
        while ((k = fread(buf, 1, sizeof buf, in.f)) > 0) *bytes += k;
        input_close(&in);
    }
    return cpu_s() - t0;
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
    /* input formats: the JSONL half as JSONL, .gz, .zst and parquet (snappy, zstd) */
    char gz[600], zs[600], pqs[600], pqz[600];
    snprintf(gz, sizeof gz, "%s/corpus.jsonl.gz", dir);
    snprintf(zs, sizeof zs, "%s/corpus.jsonl.zst", dir);
    snprintf(pqs, sizeof pqs, "%s/corpus-snappy.parquet", dir);
    snprintf(pqz, sizeof pqz, "%s/corpus-zstd.parquet", dir);
    compress_file(jsl, gz, 0);
    compress_file(jsl, zs, 1);
    {
        FILE *jf = fopen(jsl, "rb");
        char *line = NULL;
        size_t lcap = 0, nd = 0, dcap = 0;
        char **docs = NULL;
        while (getline(&line, &lcap, jf) > 0) {
            json_t *o = json_loads(line, 0, NULL);
            if (nd == dcap) { dcap = dcap ? 2 * dcap : 4096; docs = realloc(docs, dcap * sizeof *docs); }
            docs[nd++] = strdup(json_string_value(json_object_get(o, "text")));
            json_decref(o);
        }
        free(line);
        fclose(jf);
        write_parquet(pqs, docs, nd, 1);
        write_parquet(pqz, docs, nd, 6);
        for (size_t k = 0; k < nd; k++) free(docs[k]);
        free(docs);
    }
    const char *names[] = {"jsonl", "jsonl.gz", "jsonl.zst", "parquet snappy", "parquet zstd"};
    char *paths[] = {jsl, gz, zs, pqs, pqz};
    for (int k = 0; k < 5; k++) {
        struct stat sb;
        stat(paths[k], &sb);
        double secs[3], cpus[3], rsec[3];
        struct tokenize_stats st;
        size_t rbytes = 0;
        for (int r = 0; r < 3; r++) {
            double c0 = cpu_s();
            struct tokenize_opts o = {.bpe = b, .inputs = &paths[k], .ninputs = 1, .threads = 2, .val_tokens = 0};
            if (tokenize_run(&o, &st, err, sizeof err)) { fprintf(stderr, "bench_tokenize: %s\n", err); return 1; }
            secs[r] = st.seconds;
            cpus[r] = cpu_s() - c0;
            rsec[r] = read_only(paths[k], &rbytes);
        }
        qsort(secs, 3, sizeof *secs, cmp_d);
        qsort(cpus, 3, sizeof *cpus, cmp_d);
        qsort(rsec, 3, sizeof *rsec, cmp_d);
        printf("input %-15s %5.1f MB on disk, %5.1f MB of text: tokenize threads=2 %5.2fM tokens/s wall, %5.2fM tokens per "
               "CPU-second (%zu docs, %zu tokens; median %.2f s wall, %.2f s CPU); read alone %6.0f MB of text per CPU-second\n",
               names[k], sb.st_size / 1e6, rbytes / 1e6, st.tokens / 1e6 / secs[1], st.tokens / 1e6 / cpus[1], st.documents,
               st.tokens, secs[1], cpus[1], rbytes / 1e6 / rsec[1]);
    }
    bpe_free(b);
    unlink(enc); unlink(bpef); unlink(txt); unlink(jsl); unlink(gz); unlink(zs); unlink(pqs); unlink(pqz); rmdir(dir);
    return 0;
}
