/* test_evaltasks.c — `prism-data evalfile --task NAME` on a few rows of each benchmark's native JSONL (HellaSwag,
 * PIQA with its labels file, ARC-Easy/Challenge in both shapes, WinoGrande), with the expected eval file checked
 * exactly: each example's context and completions decoded back to text must be lm-eval's strings, written out
 * here by hand, with the right label, and the file must be byte for byte the one evalfile_writer makes from those
 * strings. Also: llm.c eval files pass through unchanged, auto-detection, and errors naming line and key.
 * timeout: 120
 */
#include "harness.h"
#include "bpe.h"
#include "bpe_testvocab.h"
#include "evalfile.h"
#include <stdint.h>
#include <sys/stat.h>

static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) HFAIL("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    char *b = malloc((size_t)len + 1);
    if (fread(b, 1, (size_t)len, f) != (size_t)len) HFAIL("short read %s", path);
    fclose(f);
    *n = (size_t)len;
    return b;
}

struct want { const char *ctx; int n; const char *comp[5]; int label; };

static void decode(const struct bpe *b, const uint16_t *t, int n, char *out, size_t cap) {
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        const unsigned char *s = bpe_token_bytes(b, t[i], &len);
        if (t[i] == bpe_eot(b)) { s = (const unsigned char *)"<|endoftext|>"; len = 13; }
        if (!s || o + len >= cap) HFAIL("token %u undecodable or too long", t[i]);
        memcpy(out + o, s, len);
        o += len;
    }
    out[o] = 0;
}

/* Runs evalfile on DIR/FROM with FLAGS, then checks DIR/out.bin against want[0..n) exactly. */
static void check_task(const char *dir, const char *from, const char *flags, const struct want *want, int n) {
    char cmd[8192], enc[4200], bpe[4200], out[4200], err[512];
    snprintf(cmd, sizeof cmd, "cd %s && %s evalfile --from %s --out out.bin %s --encoder encoder.json --bpe vocab.bpe",
             dir, harness_bin("prism-data"), from, flags);
    char *log = NULL;
    int st = harness_run(cmd, &log);
    if (st) HFAIL("%s %s: exit %d: %s", from, flags, st, log);
    free(log);
    snprintf(enc, sizeof enc, "%s/encoder.json", dir);
    snprintf(bpe, sizeof bpe, "%s/vocab.bpe", dir);
    snprintf(out, sizeof out, "%s/out.bin", dir);
    struct bpe *b;
    if (bpe_load(enc, bpe, &b, err, sizeof err)) HFAIL("%s", err);
    struct evalfile ef;
    if (evalfile_open(out, 0, &ef, err, sizeof err)) HFAIL("%s", err);
    ASSERT_EQ_INT(n, ef.n);
    /* the exact file: evalfile_writer over the expected strings' tokens */
    struct bpe_ctx *bc = bpe_ctx_new(b);
    struct evalfile_writer w;
    evalfile_writer_init(&w);
    for (int i = 0; i < n; i++) {
        struct evalfile_example ex;
        evalfile_example(&ef, i, &ex);
        char text[4096];
        decode(b, ex.ctx, ex.ctx_len, text, sizeof text);
        printf("%s #%d: ctx [%s] label %d\n", from, i, text, ex.label);
        ASSERT_STREQ(want[i].ctx, text);
        ASSERT_EQ_INT(want[i].label, ex.label);
        ASSERT_EQ_INT(want[i].n, ex.ncomp);
        uint16_t *toks[6] = {0};
        size_t nt[6] = {0}, cap[6] = {0};
        int lens[5], chars[5];
        if (strcmp(want[i].ctx, "<|endoftext|>") == 0) { toks[0] = malloc(2); toks[0][0] = (uint16_t)bpe_eot(b); nt[0] = 1; }
        else bpe_encode(bc, want[i].ctx, strlen(want[i].ctx), &toks[0], &nt[0], &cap[0]);
        for (int k = 0; k < ex.ncomp; k++) {
            decode(b, ex.comp[k], ex.comp_len[k], text, sizeof text);
            printf("    comp %d [%s]\n", k, text);
            ASSERT_STREQ(want[i].comp[k], text);
            bpe_encode(bc, want[i].comp[k], strlen(want[i].comp[k]), &toks[k + 1], &nt[k + 1], &cap[k + 1]);
            lens[k] = (int)nt[k + 1];
            /* lm-eval's len(choice): the strings here are ASCII, so bytes less the " " target delimiter */
            chars[k] = (int)strlen(want[i].comp[k]) - (want[i].comp[k][0] == ' ');
            ASSERT_EQ_INT(chars[k], ex.comp_chars[k]);
        }
        if (evalfile_writer_add_chars(&w, want[i].label, toks[0], (int)nt[0], want[i].n, (const uint16_t *const *)(toks + 1), lens,
                                      chars, err, sizeof err)) HFAIL("%s", err);
        for (int k = 0; k < 6; k++) free(toks[k]);
    }
    char exp_path[4200];
    snprintf(exp_path, sizeof exp_path, "%s/expected.bin", dir);
    if (evalfile_writer_finish(&w, exp_path, err, sizeof err)) HFAIL("%s", err);
    size_t na, nb;
    char *a = read_all(out, &na), *e = read_all(exp_path, &nb);
    ASSERT_EQ_INT(nb, na);
    ASSERT_TRUE(memcmp(a, e, na) == 0);
    free(a); free(e);
    evalfile_writer_release(&w);
    evalfile_close(&ef);
    bpe_ctx_free(bc);
    bpe_free(b);
}

/* `prism-data evalfile ARGS` in dir (with the test vocabulary) exits 2 and says want */
static void expect_refused(const char *dir, const char *args, const char *want) {
    char cmd[16384], *log = NULL;
    snprintf(cmd, sizeof cmd, "cd %s && %s evalfile %s --encoder encoder.json --bpe vocab.bpe", dir, harness_bin("prism-data"), args);
    ASSERT_EQ_INT(2, harness_run(cmd, &log));
    ASSERT_CONTAINS(log, want);
    free(log);
}

static const char *vocab_dir(void) {
    char enc[4200], bpe[4200];
    return write_vocab(enc, bpe, sizeof enc, -1, NULL);
}

TEST(hellaswag_native_jsonl_with_lm_eval_preprocessing) {
    const char *dir = vocab_dir();
    write_file(dir, "hs.jsonl",
        "{\"ind\": 24, \"activity_label\": \"Roof shingle removal\", \"ctx_a\": \"A man is sitting on a roof.\", \"ctx_b\": \"he\", "
        "\"ctx\": \"A man is sitting on a roof. he\", \"split\": \"val\", \"split_type\": \"indomain\", \"label\": 3, "
        "\"endings\": [\"is using wrap to wrap a pair of skis.\", \"is ripping level tiles off.\", \"is holding a rubik's cube.\", "
        "\"starts pulling up roofing on a roof.\"], \"source_id\": \"activitynet~v_-JhWjGDPHMY\"}\n"
        "{\"activity_label\": \"Home and Garden\", \"ctx_a\": \"[header] How to clean a roof [title] Remove debris.\", "
        "\"ctx_b\": \"use a LEAF blower\", \"label\": \"1\", \"endings\": [\"[substeps] Sweep it off.\", \"Rinse  with water [step] now.\", "
        "\"  Wait   for rain. \"]}\n");
    /* expected strings from lm-eval's hellaswag utils.preprocess, run by hand in Python */
    struct want w[] = {
        {"Roof shingle removal: A man is sitting on a roof. He", 4,
         {" is using wrap to wrap a pair of skis.", " is ripping level tiles off.", " is holding a rubik's cube.",
          " starts pulling up roofing on a roof."}, 3},
        {"Home and Garden: How to clean a roof. Remove debris. Use a leaf blower", 3,
         {"  Sweep it off.", " Rinse with water now.", " Wait  for rain."}, 1},
    };
    check_task(dir, "hs.jsonl", "--task hellaswag", w, 2);
    check_task(dir, "hs.jsonl", "", w, 2);   /* auto-detected from the keys */
}

TEST(piqa_native_jsonl_with_its_labels_file_or_a_label_key) {
    const char *dir = vocab_dir();
    write_file(dir, "valid.jsonl",
        "{\"goal\": \"How do I ready a guinea pig cage for it's new occupants?\", \"sol1\": \"Provide bedding made of ripped paper strips.\", "
        "\"sol2\": \"Provide bedding made of ripped jeans material.\"}\n"
        "{\"goal\": \"dresser\", \"sol1\": \"replace drawer with bobby pin \", \"sol2\": \"finish, woodwork\"}\n");
    write_file(dir, "valid-labels.lst", "0\n1\n");
    struct want w[] = {
        {"Question: How do I ready a guinea pig cage for it's new occupants?\nAnswer:", 2,
         {" Provide bedding made of ripped paper strips.", " Provide bedding made of ripped jeans material."}, 0},
        {"Question: dresser\nAnswer:", 2, {" replace drawer with bobby pin ", " finish, woodwork"}, 1},
    };
    check_task(dir, "valid.jsonl", "--task piqa --labels valid-labels.lst", w, 2);
    write_file(dir, "labelled.jsonl",
        "{\"goal\": \"dresser\", \"sol1\": \"replace drawer with bobby pin \", \"sol2\": \"finish, woodwork\", \"label\": 1}\n");
    check_task(dir, "labelled.jsonl", "--task piqa", w + 1, 1);
    /* no label anywhere, and a labels file of the wrong length, are errors naming the fix */
    expect_refused(dir, "--from valid.jsonl --out x.bin --task piqa", "valid.jsonl:1: no \"label\": give PIQA's labels file with --labels");
    write_file(dir, "short.lst", "0\n");
    expect_refused(dir, "--from valid.jsonl --out x.bin --task piqa --labels short.lst", "short.lst has only 1 labels");
}

TEST(arc_native_jsonl_both_shapes_and_numeric_keys) {
    const char *dir = vocab_dir();
    write_file(dir, "arc.jsonl",
        "{\"id\": \"Mercury_7175875\", \"question\": {\"stem\": \"Which is the most likely effect of this increase in rotation?\", "
        "\"choices\": [{\"text\": \"Planetary density will decrease.\", \"label\": \"A\"}, {\"text\": \"Planetary years will become longer.\", \"label\": \"B\"}, "
        "{\"text\": \"Planetary days will become shorter.\", \"label\": \"C\"}, {\"text\": \"Planetary gravity will become stronger.\", \"label\": \"D\"}]}, "
        "\"answerKey\": \"C\"}\n"
        "{\"id\": \"NYSEDREGENTS_2015_4_7\", \"question\": {\"stem\": \"Which tool measures mass?\", \"choices\": [{\"text\": \"a ruler\", \"label\": \"1\"}, "
        "{\"text\": \"a balance\", \"label\": \"2\"}, {\"text\": \"a cup\", \"label\": \"3\"}]}, \"answerKey\": \"2\"}\n"
        "{\"id\": \"x\", \"question\": \"Hugging Face shape?\", \"choices\": {\"text\": [\"yes\", \"no\"], \"label\": [\"A\", \"B\"]}, \"answerKey\": \"B\"}\n");
    struct want w[] = {
        {"Question: Which is the most likely effect of this increase in rotation?\nAnswer:", 4,
         {" Planetary density will decrease.", " Planetary years will become longer.", " Planetary days will become shorter.",
          " Planetary gravity will become stronger."}, 2},
        {"Question: Which tool measures mass?\nAnswer:", 3, {" a ruler", " a balance", " a cup"}, 1},
        {"Question: Hugging Face shape?\nAnswer:", 2, {" yes", " no"}, 1},
    };
    check_task(dir, "arc.jsonl", "--task arc-easy", w, 3);
    check_task(dir, "arc.jsonl", "--task arc-challenge", w, 3);
    write_file(dir, "badkey.jsonl", "{\"question\": {\"stem\": \"q\", \"choices\": [{\"text\": \"a\", \"label\": \"A\"}]}, \"answerKey\": \"E\"}\n");
    expect_refused(dir, "--from badkey.jsonl --out x.bin --task arc-easy", "badkey.jsonl:1: \"answerKey\" \"E\" is none of the choices' labels");
}

TEST(winogrande_native_jsonl_context_before_the_blank) {
    const char *dir = vocab_dir();
    write_file(dir, "wg.jsonl",
        "{\"qID\": \"3QHITW7OYO7Q6B6ISU2UMJB84ZLAQE-2\", \"sentence\": \"Sarah was a much better surgeon than Maria so _ always got the harder cases.\", "
        "\"option1\": \"Sarah\", \"option2\": \"Maria\", \"answer\": \"1\"}\n"
        "{\"sentence\": \"_ went to the store because Ann was out of milk.\", \"option1\": \"Ann\", \"option2\": \"Bob\", \"answer\": \"2\"}\n"
        "{\"sentence\": \"The cup fit in the box because the _'s small.\", \"option1\": \"cup\", \"option2\": \"box\", \"answer\": \"1\"}\n");
    /* lm-eval: context sentence[:i] + option, target " " + sentence[i+1:].strip(); here the same strings, cut before the option */
    struct want w[] = {
        {"Sarah was a much better surgeon than Maria so", 2,
         {" Sarah always got the harder cases.", " Maria always got the harder cases."}, 0},
        {"<|endoftext|>", 2, {"Ann went to the store because Ann was out of milk.", "Bob went to the store because Ann was out of milk."}, 1},
        {"The cup fit in the box because the", 2, {" cup 's small.", " box 's small."}, 0},
    };
    check_task(dir, "wg.jsonl", "--task winogrande", w, 3);
    write_file(dir, "test.jsonl", "{\"sentence\": \"a _ b\", \"option1\": \"x\", \"option2\": \"y\", \"answer\": \"\"}\n");
    expect_refused(dir, "--from test.jsonl --out x.bin", "test.jsonl:1: \"answer\" must be \"1\" or \"2\"");
}

TEST(llmc_eval_files_pass_through_unchanged) {
    const char *dir = vocab_dir();
    write_file(dir, "p.jsonl", "{\"context\": \"the cat\", \"endings\": [\"sat\", \"ran\"], \"label\": 1}\n");
    char cmd[16384], *log = NULL;
    snprintf(cmd, sizeof cmd, "cd %s && %s evalfile --from p.jsonl --out a.bin --encoder encoder.json --bpe vocab.bpe && "
             "%s evalfile --from a.bin --out b.bin --task llmc && %s evalfile --from a.bin --out c.bin && cmp a.bin b.bin && cmp a.bin c.bin",
             dir, harness_bin("prism-data"), harness_bin("prism-data"), harness_bin("prism-data"));
    int st = harness_run(cmd, &log);
    if (st) HFAIL("exit %d: %s", st, log);
    ASSERT_CONTAINS(log, "checked and copied");
    free(log);
    /* a damaged llm.c file is refused with evalfile_open's message, and nothing is written */
    snprintf(cmd, sizeof cmd, "cd %s && head -c 1030 a.bin > cut.bin && %s evalfile --from cut.bin --out d.bin --task llmc; echo rc=$?; ls d.bin",
             dir, harness_bin("prism-data"));
    harness_run(cmd, &log);
    ASSERT_CONTAINS(log, "cut.bin: example 0");
    ASSERT_CONTAINS(log, "rc=2");
    ASSERT_CONTAINS(log, "No such file");
    free(log);
    expect_refused(dir, "--from a.bin --out e.bin --task piqa", "is an llm.c eval file, not piqa JSONL: use --task llmc");
}
