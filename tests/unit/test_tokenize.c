/* test_tokenize.c — `prism-data tokenize` and `prism-data evalfile` on the hand-built vocabulary of
 * bpe_testvocab.h: the token stream by hand (EOT before each document, text and JSONL inputs, the val split first,
 * shard sizes), the same tokens for 1 and 3 threads and for a document cut into many chunks as for the document
 * encoded whole, errors naming the file and line, and eval files from {"context","endings","label"} lines.
 * timeout: 180
 */
#include "harness.h"
#include "bpe.h"
#include "bpe_testvocab.h"
#include "evalfile.h"
#include "shard.h"
#include "tokenize.h"
#include <jansson.h>
#include <stdint.h>
#include <sys/stat.h>

/* every token of the shards matching DIR/PREFIX*, in name order, as "1 2 3"; *nshards gets their count */
static char *read_tokens(const char *dir, const char *glob, int *nshards, size_t max_per_shard) {
    struct shard_set set;
    char err[512];
    if (shard_set_open(glob, dir, 0, &set, err, sizeof err)) HFAIL("%s", err);
    size_t cap = 16 * set.total + 16, o = 0;
    char *s = malloc(cap);
    s[0] = 0;
    for (int i = 0; i < set.n; i++) {
        if (max_per_shard && set.shards[i].ntok > max_per_shard) HFAIL("%s has %zu tokens > %zu", set.shards[i].path, set.shards[i].ntok, max_per_shard);
        for (size_t k = 0; k < set.shards[i].ntok; k++) o += snprintf(s + o, cap - o, "%s%u", o ? " " : "", set.shards[i].tokens[k]);
    }
    *nshards = set.n;
    shard_set_close(&set);
    return s;
}

TEST(tokenize_cli_text_and_jsonl_by_hand) {
    char enc[4200], bpe[4200], cmd[16384];
    const char *dir = write_vocab(enc, bpe, sizeof enc, -1, NULL);
    write_file(dir, "a.txt", "the cat");
    write_file(dir, "b.jsonl", "{\"text\": \" the\"}\n\n{\"text\": \"caf\\u00e9 12\", \"id\": 7}\n");
    snprintf(cmd, sizeof cmd, "cd %s && %s tokenize a.txt b.jsonl --out out --encoder encoder.json --bpe vocab.bpe "
             "--val-tokens 3 --shard-tokens 1000 --threads 2", dir, harness_bin("prism-data"));
    char *log = NULL;
    int st = harness_run(cmd, &log);
    if (st) HFAIL("exit %d: %s", st, log);
    ASSERT_CONTAINS(log, "tokens/s");
    ASSERT_CONTAINS(log, "wrote 1 val and 1 train shard(s)");
    free(log);
    char od[4200];
    snprintf(od, sizeof od, "%s/out", dir);
    int n;
    /* EOT | the → t he | " cat" → Ġ ca t || EOT | " the" → Ġthe || EOT | café → café | " 12" → Ġ 12 */
    char *val = read_tokens(od, "text_val_*.bin", &n, 0);
    ASSERT_STREQ("267 116 257", val);
    ASSERT_EQ_INT(1, n);
    char *train = read_tokens(od, "text_train_*.bin", &n, 0);
    ASSERT_STREQ("32 263 116 267 258 267 265 32 260", train);
    free(val);
    free(train);
    char mp[4300];
    snprintf(mp, sizeof mp, "%s/meta.json", od);
    json_t *m = json_load_file(mp, 0, NULL);
    ASSERT_EQ_INT(268, json_integer_value(json_object_get(m, "vocab_size")));
    ASSERT_EQ_INT(267, json_integer_value(json_object_get(m, "eot")));
    ASSERT_EQ_INT(3, json_integer_value(json_object_get(m, "documents")));
    ASSERT_EQ_INT(9, json_integer_value(json_object_get(m, "train_tokens")));
    ASSERT_STREQ("text_train_*.bin", json_string_value(json_object_get(m, "train_glob")));
    json_decref(m);
}

/* a corpus of documents in words, spaces, newlines, digits, é and stray bytes */
static char *corpus_doc(uint32_t *s, size_t len) {
    static const char *words[] = {"the", "cat", "caf\xc3\xa9", "aaaa", "12", "x's", "!?", "\n", "  ", "\xff"};
    char *d = malloc(len + 32);
    size_t n = 0;
    while (n < len) {
        *s = *s * 1103515245u + 12345u;
        const char *w = words[(*s >> 16) % 10];
        if ((*s >> 8) % 4) d[n++] = ' ';
        n += (size_t)snprintf(d + n, 32, "%s", w);
    }
    d[n] = 0;
    return d;
}

/* The val and train shards in out, read back in order, are want[0..nw) (with train_shards train shards). */
static void same_stream(const char *out, const uint16_t *want, size_t nw, int train_shards, int threads) {
    int n;
    char *val = read_tokens(out, "text_val_*.bin", &n, 20000);
    char *train = read_tokens(out, "text_train_*.bin", &n, 20000);
    ASSERT_EQ_INT(train_shards, n);
    size_t cap = 16 * nw + 16, k = 0;
    char *e2 = malloc(cap), *got = malloc(strlen(val) + strlen(train) + 2);
    if (!e2 || !got) HFAIL("out of memory");
    for (size_t i = 0; i < nw; i++) k += snprintf(e2 + k, cap - k, "%s%u", i ? " " : "", want[i]);
    sprintf(got, "%s %s", val, train);
    if (strcmp(e2, got)) {
        size_t d = 0;
        while (e2[d] == got[d]) d++;
        HFAIL("threads %d: the stream differs from the whole-document encoding at character %zu", threads, d);
    }
    free(e2); free(got); free(val); free(train);
}

/* tokenize_run of inputs into out := DIR/outTHREADS (20000-token shards, a 5000-token val split) */
static void tokenize_into(char out[4300], const char *dir, const struct bpe *b, char **inputs, int ninputs, int threads,
                          size_t chunk_bytes, struct tokenize_stats *st) {
    char err[512];
    snprintf(out, 4300, "%s/out%d", dir, threads);
    mkdir(out, 0755);
    struct tokenize_opts o = {.bpe = b, .inputs = inputs, .ninputs = ninputs, .out_dir = out, .shard_tokens = 20000,
                              .val_tokens = 5000, .threads = threads, .chunk_bytes = chunk_bytes};
    if (tokenize_run(&o, st, err, sizeof err)) HFAIL("threads %d: %s", threads, err);
}

/* tokenize_run at 1 and 3 threads gives want[0..nw) from ndocs documents in more than min_chunks chunks */
static void same_tokens_at_1_and_3_threads(const char *dir, const struct bpe *b, char **inputs, int ninputs, size_t chunk_bytes,
                                           const uint16_t *want, size_t nw, size_t ndocs, size_t min_chunks) {
    for (int threads = 1; threads <= 3; threads += 2) {
        char out[4300];
        struct tokenize_stats st;
        tokenize_into(out, dir, b, inputs, ninputs, threads, chunk_bytes, &st);
        ASSERT_EQ_INT(nw, st.tokens);
        ASSERT_EQ_INT(ndocs, st.documents);
        ASSERT_LT(min_chunks, st.chunks);
        ASSERT_EQ_INT(5000, st.val_tokens);
        ASSERT_EQ_INT((nw - 5000 + 19999) / 20000, st.train_shards);
        same_stream(out, want, nw, st.train_shards, threads);
    }
}

TEST(same_tokens_for_any_thread_count_and_chunking) {
    char enc[4200], bpe[4200], err[512];
    const char *dir = write_vocab(enc, bpe, sizeof enc, -1, NULL);
    char *dirc = strdup(dir);
    struct bpe *b = NULL;
    if (bpe_load(enc, bpe, &b, err, sizeof err)) HFAIL("%s", err);
    /* three text documents (one of 300 KB, cut into many 4 KB chunks) and a JSONL file of 200 lines */
    char *inputs[4];
    uint32_t s = 5;
    size_t sizes[3] = {300000, 5000, 70000};
    char *docs[3];
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "doc%d.txt", i);
        docs[i] = corpus_doc(&s, sizes[i]);
        write_file(dirc, name, docs[i]);
        inputs[i] = malloc(4300);
        snprintf(inputs[i], 4300, "%s/%s", dirc, name);
    }
    inputs[3] = malloc(4300);
    snprintf(inputs[3], 4300, "%s/lines.jsonl", dirc);
    FILE *f = fopen(inputs[3], "w");
    char *lines[200];
    for (int i = 0; i < 200; i++) {
        lines[i] = corpus_doc(&s, 50 + i % 40);
        json_t *o = json_pack("{s:s}", "text", lines[i]);
        if (!o) {   /* a stray byte is not valid UTF-8 for jansson: drop those lines' stray bytes */
            for (char *p = lines[i]; *p; p++) if ((unsigned char)*p == 0xff) *p = '?';
            o = json_pack("{s:s}", "text", lines[i]);
        }
        char *t = json_dumps(o, JSON_COMPACT);
        fprintf(f, "%s\n", t);
        free(t);
        json_decref(o);
    }
    fclose(f);
    /* the expected stream: each document encoded whole */
    struct bpe_ctx *c = bpe_ctx_new(b);
    uint16_t *want = NULL;
    size_t nw = 0, cw = 0;
    for (int i = 0; i < 203; i++) {
        const char *t = i < 3 ? docs[i] : lines[i - 3];
        uint16_t eot = 267;
        if (nw + 1 > cw) { cw = cw ? cw * 2 : 1024; want = realloc(want, cw * 2); }
        want[nw++] = eot;
        ASSERT_EQ_INT(0, bpe_encode(c, t, strlen(t), &want, &nw, &cw));
    }
    bpe_ctx_free(c);
    same_tokens_at_1_and_3_threads(dirc, b, inputs, 4, 4096, want, nw, 203, 75);   /* 375 KB in 4 KB chunks: cut */
    for (int i = 0; i < 4; i++) free(inputs[i]);
    for (int i = 0; i < 3; i++) free(docs[i]);
    for (int i = 0; i < 200; i++) free(lines[i]);
    free(want);
    free(dirc);
    bpe_free(b);
}

/* Text without ASCII spaces (CJK, lines of it) is cut at line breaks between two non-space characters, to the
 * tokens of the whole document: every kind of neighbour a break can have (Unicode spaces, U+2028, stray
 * bytes, tabs, ASCII spaces, blank lines, a 4-byte character) beside it. */
TEST(text_without_spaces_is_cut_at_line_breaks_to_the_same_tokens) {
    char enc[4200], bpe[4200], err[512];
    const char *dir = write_vocab(enc, bpe, sizeof enc, -1, NULL);
    char *dirc = strdup(dir);
    /* merges across white space ("\n\n", " \n"), so a piece cut in the wrong place gives other tokens */
    json_t *eo = json_load_file(enc, 0, NULL);
    json_object_set_new(eo, "\xc4\x8a\xc4\x8a", json_integer(EOT_ID + 1));
    json_object_set_new(eo, "\xc4\xa0\xc4\x8a", json_integer(EOT_ID + 2));
    if (!eo || json_dump_file(eo, enc, 0)) HFAIL("cannot rewrite %s", enc);
    json_decref(eo);
    FILE *vf = fopen(bpe, "a");
    fprintf(vf, "\xc4\x8a \xc4\x8a\n\xc4\xa0 \xc4\x8a\n");
    fclose(vf);
    struct bpe *b = NULL;
    if (bpe_load(enc, bpe, &b, err, sizeof err)) HFAIL("%s", err);
    static const char *words[] = {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", "\xe4\xb8\xad\xe6\x96\x87",
                                  "\xe3\x80\x82", "\n", "\n", "\n\n", "\xe3\x80\x80", " ",
                                  "\xe2\x80\xa8", "\xff", "\t", "x", "12", "\xf0\x9f\x98\x80", "\xc2\xa0", "x1"};
    size_t len = 200000, n = 0;
    char *doc = malloc(len + 32);
    uint32_t r = 9;
    while (n < len) {
        r = r * 1103515245u + 12345u;
        n += (size_t)snprintf(doc + n, 32, "%s", words[(r >> 16) % 16]);
    }
    doc[n] = 0;
    write_file(dirc, "cjk.txt", doc);
    char *inputs[1] = {malloc(4300)};
    snprintf(inputs[0], 4300, "%s/cjk.txt", dirc);
    struct bpe_ctx *c = bpe_ctx_new(b);
    uint16_t *want = malloc(2 * 1024);
    size_t nw = 0, cw = 1024;
    want[nw++] = 267;
    ASSERT_EQ_INT(0, bpe_encode(c, doc, n, &want, &nw, &cw));
    bpe_ctx_free(c);
    same_tokens_at_1_and_3_threads(dirc, b, inputs, 1, 1024, want, nw, 1, 100);   /* 200 KB in 1 KB chunks: cut at its lines */
    free(inputs[0]);
    free(doc);
    free(want);
    free(dirc);
    bpe_free(b);
}

TEST(tokenize_errors_name_the_file_line_and_fix) {
    char enc[4200], bpe[4200], cmd[16384];
    const char *dir = write_vocab(enc, bpe, sizeof enc, -1, NULL);
    write_file(dir, "bad.jsonl", "{\"text\": \"ok\"}\n{\"txt\": \"no\"}\n");
    write_file(dir, "broken.jsonl", "{\"text\": \"ok\"}\n\n{\"text\": \n");
    write_file(dir, "small.txt", "the cat");
    struct { const char *args, *want; int status; } cases[] = {
        {"bad.jsonl --out o --encoder encoder.json --bpe vocab.bpe --val-tokens 0", "bad.jsonl:2: expected an object with a \"text\" string", 2},
        {"broken.jsonl --out o --encoder encoder.json --bpe vocab.bpe --val-tokens 0", "broken.jsonl:3: not valid JSON", 2},
        {"small.txt --out o --encoder encoder.json --bpe vocab.bpe --val-tokens 100", "all taken by the val split (--val-tokens 100)", 2},
        {"small.txt --out o --encoder encoder.json", "--encoder encoder.json and --bpe vocab.bpe are required", 2},
        {"missing.txt --out o --encoder encoder.json --bpe vocab.bpe", "missing.txt: cannot read", 2},
        {"small.txt --out o --encoder encoder.json --bpe vocab.bpe --val-tokens 2000 --shard-tokens 1000", "exceeds --shard-tokens", 2},
        {"small.txt --out o --encoder vocab.bpe --bpe vocab.bpe", "vocab.bpe: not JSON", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "cd %s && %s tokenize %s --quiet", dir, harness_bin("prism-data"), cases[i].args);
        char *log = NULL;
        int st = harness_run(cmd, &log);
        if (st != cases[i].status) HFAIL("%s: exit %d, expected %d: %s", cases[i].args, st, cases[i].status, log);
        ASSERT_CONTAINS(log, cases[i].want);
        free(log);
    }
}

TEST(evalfile_from_jsonl_by_hand_and_its_errors) {
    char enc[4200], bpe[4200], cmd[16384], err[512];
    const char *dir = write_vocab(enc, bpe, sizeof enc, -1, NULL);
    write_file(dir, "tasks.jsonl", "{\"context\": \"the cat\", \"endings\": [\"the\", \"cat\", \"12\"], \"label\": 2}\n"
                                   "{\"context\": \"aaaaa\", \"endings\": [\"caf\\u00e9\", \"x\"], \"label\": 0}\n");
    snprintf(cmd, sizeof cmd, "cd %s && %s evalfile --from tasks.jsonl --out t.bin --encoder encoder.json --bpe vocab.bpe",
             dir, harness_bin("prism-data"));
    char *log = NULL;
    int st = harness_run(cmd, &log);
    if (st) HFAIL("exit %d: %s", st, log);
    ASSERT_CONTAINS(log, "2 examples");
    free(log);
    char p[4300];
    snprintf(p, sizeof p, "%s/t.bin", dir);
    struct evalfile ef;
    if (evalfile_open(p, 268, &ef, err, sizeof err)) HFAIL("%s", err);
    ASSERT_EQ_INT(2, ef.n);
    struct evalfile_example ex;
    evalfile_example(&ef, 0, &ex);
    /* "the cat" → t he Ġ ca t; endings " the" → Ġthe, " cat" → Ġ ca t, " 12" → Ġ 12 */
    ASSERT_EQ_INT(2, ex.label);
    ASSERT_EQ_INT(3, ex.ncomp);
    ASSERT_EQ_INT(5, ex.ctx_len);
    uint16_t c0[] = {116, 257, 32, 263, 116};
    for (int i = 0; i < 5; i++) ASSERT_EQ_INT(c0[i], ex.ctx[i]);
    ASSERT_EQ_INT(1, ex.comp_len[0]);
    ASSERT_EQ_INT(258, ex.comp[0][0]);
    ASSERT_EQ_INT(3, ex.comp_len[1]);
    ASSERT_EQ_INT(2, ex.comp_len[2]);
    ASSERT_EQ_INT(260, ex.comp[2][1]);
    evalfile_example(&ef, 1, &ex);
    ASSERT_EQ_INT(1, ex.index);
    ASSERT_EQ_INT(3, ex.ctx_len);            /* aa aa a */
    ASSERT_EQ_INT(2, ex.comp_len[0]);        /* Ġ café */
    ASSERT_EQ_INT(265, ex.comp[0][1]);
    evalfile_close(&ef);
    write_file(dir, "bad.jsonl", "{\"context\": \"a\", \"endings\": [\"b\"], \"label\": 0}\n{\"context\": \"a\", \"endings\": [\"b\", \"c\"], \"label\": 2}\n");
    snprintf(cmd, sizeof cmd, "cd %s && %s evalfile --from bad.jsonl --out t2.bin --encoder encoder.json --bpe vocab.bpe",
             dir, harness_bin("prism-data"));
    st = harness_run(cmd, &log);
    ASSERT_EQ_INT(2, st);
    ASSERT_CONTAINS(log, "bad.jsonl:2: \"label\" 2 is not an index into the 2 endings");
    free(log);
    write_file(dir, "bad2.jsonl", "{\"context\": \"a\", \"ending\": [\"b\"], \"label\": 0}\n");
    snprintf(cmd, sizeof cmd, "cd %s && %s evalfile --from bad2.jsonl --out t2.bin --encoder encoder.json --bpe vocab.bpe",
             dir, harness_bin("prism-data"));
    st = harness_run(cmd, &log);
    ASSERT_EQ_INT(2, st);
    ASSERT_CONTAINS(log, "bad2.jsonl:1: \"endings\" must be a non-empty array of strings");
    free(log);
}
