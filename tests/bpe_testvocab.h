/* bpe_testvocab.h — the small GPT-2-format vocabulary the BPE tests build (nothing is downloaded): the 256 byte
 * tokens with id = byte value, eleven merges (ids 256..266, ranks 0..10) and <|endoftext|> = 267, written as
 * encoder.json and vocab.bpe into a fresh directory, and write_file for the tests' inputs. Included by
 * test_bpe.c, test_tokenize.c and test_evaltasks.c.
 */
#ifndef PRISM_BPE_TESTVOCAB_H
#define PRISM_BPE_TESTVOCAB_H
#include <jansson.h>

/* GPT-2's byte alphabet, written out again here: printable bytes stand for themselves, the others are U+0100.. */
static __attribute__((unused)) void byte_char(int b, char *out) {
    static int cp[256];
    if (!cp[33]) {
        int extra = 0;
        for (int x = 0; x < 256; x++) {
            int printable = (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255);
            cp[x] = printable ? x : 256 + extra++;
        }
    }
    int c = cp[b];
    if (c < 0x80) { out[0] = (char)c; out[1] = 0; }
    else { out[0] = (char)(0xc0 | c >> 6); out[1] = (char)(0x80 | (c & 0x3f)); out[2] = 0; }
}

/* merges in rank order, in the byte alphabet (Ġ = space, Ã© = the bytes of é) */
static const char *MERGES[] = {
    "\xc4\xa0 t",           /* 256 Ġt    rank 0 */
    "h e",                  /* 257 he    rank 1 */
    "\xc4\xa0t he",         /* 258 Ġthe  rank 2 */
    "' s",                  /* 259 's    rank 3 */
    "1 2",                  /* 260 12    rank 4 */
    "\xc4\xa0 \xc4\xa0",    /* 261 ĠĠ    rank 5 */
    "\xc3\x83 \xc2\xa9",    /* 262 é     rank 6 */
    "c a",                  /* 263 ca    rank 7 */
    "ca f",                 /* 264 caf   rank 8 */
    "caf \xc3\x83\xc2\xa9", /* 265 café  rank 9 */
    "a a",                  /* 266 aa    rank 10 */
};
#define NMERGE (int)(sizeof MERGES / sizeof MERGES[0])
enum { EOT_ID = 267 };

static __attribute__((unused)) const char *write_vocab(char *enc, char *bpe, size_t n, int drop_byte, const char *extra_merge) {
    const char *dir = harness_tmpdir();
    snprintf(enc, n, "%s/encoder.json", dir);
    snprintf(bpe, n, "%s/vocab.bpe", dir);
    json_t *o = json_object();
    for (int b = 0; b < 256; b++) {
        char k[4];
        byte_char(b, k);
        if (b != drop_byte) json_object_set_new(o, k, json_integer(b));
    }
    for (int i = 0; i < NMERGE; i++) {
        char k[64];
        const char *sp = strchr(MERGES[i], ' ');
        snprintf(k, sizeof k, "%.*s%s", (int)(sp - MERGES[i]), MERGES[i], sp + 1);
        json_object_set_new(o, k, json_integer(256 + i));
    }
    json_object_set_new(o, "<|endoftext|>", json_integer(EOT_ID));
    if (json_dump_file(o, enc, 0)) HFAIL("cannot write %s", enc);
    json_decref(o);
    FILE *f = fopen(bpe, "w");
    fprintf(f, "#version: 0.2\n");
    for (int i = 0; i < NMERGE; i++) fprintf(f, "%s\n", MERGES[i]);
    if (extra_merge) fprintf(f, "%s\n", extra_merge);
    fclose(f);
    return dir;
}

/* DIR/NAME := text (the tests' input files) */
static __attribute__((unused)) void write_file(const char *dir, const char *name, const char *text) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    fputs(text, f);
    fclose(f);
}
#endif
