/* test_bpe.c — GPT-2 byte-level BPE (dataprep/bpe.c) on a vocabulary built here: the 256 byte tokens (id = byte
 * value), a dozen merges and <|endoftext|>, written as GPT-2's encoder.json and vocab.bpe. Every expected encoding
 * below is worked out by hand from the pattern and the merge ranks; the pattern's edge cases ('s and 'S, digits,
 * runs of spaces and newlines, non-ASCII letters and digits, Unicode spaces, invalid UTF-8) are checked piece by piece.
 */
#include "harness.h"
#include "bpe.h"
#include "bpe_testvocab.h"
#include <jansson.h>
#include <stdint.h>

static struct bpe *load(void) {
    char enc[4200], bpe[4200], err[512];
    write_vocab(enc, bpe, sizeof enc, -1, NULL);
    struct bpe *b = NULL;
    if (bpe_load(enc, bpe, &b, err, sizeof err)) HFAIL("bpe_load: %s", err);
    return b;
}

/* "[a|b|c]" with each piece's bytes, non-printable ones as \xNN */
struct pieces { const char *text; char out[1024]; size_t len; };
static void on_piece(void *arg, size_t off, size_t n) {
    struct pieces *p = arg;
    p->len += snprintf(p->out + p->len, sizeof p->out - p->len, "%s", p->len ? "|" : "");
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p->text[off + i];
        p->len += (ch >= 32 && ch < 127) ? snprintf(p->out + p->len, sizeof p->out - p->len, "%c", ch)
                                         : snprintf(p->out + p->len, sizeof p->out - p->len, "\\x%02x", ch);
    }
}
static void expect_pieces(struct bpe_ctx *c, const char *text, const char *want) {
    struct pieces p = {.text = text};
    ASSERT_EQ_INT(0, bpe_split(c, text, strlen(text), on_piece, &p));
    if (strcmp(p.out, want)) HFAIL("pieces of \"%s\": expected [%s], got [%s]", text, want, p.out);
}

/* "1 2 3" of the token ids */
static void expect_tokens(struct bpe_ctx *c, const char *text, size_t len, const char *want) {
    uint16_t *t = NULL;
    size_t n = 0, cap = 0;
    ASSERT_EQ_INT(0, bpe_encode(c, text, len, &t, &n, &cap));
    char got[1024] = "";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) o += snprintf(got + o, sizeof got - o, "%s%u", i ? " " : "", t[i]);
    if (strcmp(got, want)) HFAIL("tokens of \"%s\": expected [%s], got [%s]", text, want, got);
    free(t);
}

TEST(pattern_contractions_letters_digits_other) {
    struct bpe *b = load();
    struct bpe_ctx *c = bpe_ctx_new(b);
    expect_pieces(c, "the cat's 123", "the| cat|'s| 123");
    expect_pieces(c, "don't we'll I'm you're they've he'd", "don|'t| we|'ll| I|'m| you|'re| they|'ve| he|'d");
    expect_pieces(c, "IT'S", "IT|'|S");                     /* the contractions are lower case only */
    expect_pieces(c, "abc123def 4.5", "abc|123|def| 4|.|5");
    expect_pieces(c, "x!!? (y)", "x|!!?| (|y|)");
    expect_pieces(c, "'hello'", "'|hello|'");
    expect_pieces(c, "'sa", "'s|a");                          /* 's splits even inside a word */
    bpe_ctx_free(c);
    bpe_free(b);
}

TEST(pattern_whitespace_runs) {
    struct bpe *b = load();
    struct bpe_ctx *c = bpe_ctx_new(b);
    expect_pieces(c, "a  b", "a| | b");                       /* the last space of a run joins the word */
    expect_pieces(c, "a    b", "a|   | b");
    expect_pieces(c, "a   ", "a|   ");                        /* a trailing run stays whole */
    expect_pieces(c, "a\n\nb", "a|\\x0a|\\x0a|b");            /* \s+(?!\S) then \s+ */
    expect_pieces(c, "a \n b", "a| \\x0a| b");
    expect_pieces(c, "\t\tx", "\\x09|\\x09|x");
    expect_pieces(c, " ", " ");
    bpe_ctx_free(c);
    bpe_free(b);
}

TEST(pattern_unicode_letters_digits_spaces) {
    struct bpe *b = load();
    struct bpe_ctx *c = bpe_ctx_new(b);
    expect_pieces(c, "caf\xc3\xa9 na\xc3\xafve", "caf\\xc3\\xa9| na\\xc3\\xafve");                 /* é ï are \p{L} */
    expect_pieces(c, "\xce\xa9mega \xe6\x97\xa5\xe6\x9c\xac", "\\xce\\xa9mega| \\xe6\\x97\\xa5\\xe6\\x9c\\xac");   /* Ω, 日本 */
    expect_pieces(c, "x\xd9\xa3\xd9\xa4y", "x|\\xd9\\xa3\\xd9\\xa4|y");                           /* Arabic-Indic ٣٤ are \p{N} */
    expect_pieces(c, "x\xc2\xbd", "x|\\xc2\\xbd");                                                   /* ½ is \p{N} (No) */
    expect_pieces(c, "a\xe3\x80\x80" "b", "a|\\xe3\\x80\\x80|b");                                    /* U+3000 is \s */
    expect_pieces(c, "x\xe2\x80\x93y", "x|\\xe2\\x80\\x93|y");                                       /* – is other */
    bpe_ctx_free(c);
    bpe_free(b);
}

TEST(pattern_invalid_utf8_bytes_are_pieces_of_their_own) {
    struct bpe *b = load();
    struct bpe_ctx *c = bpe_ctx_new(b);
    expect_pieces(c, "ab\xff" "cd", "ab|\\xff|cd");
    expect_pieces(c, "ab\xff\xfe" "cd", "ab|\\xff\\xfe|cd");
    expect_pieces(c, "\xc3x", "\\xc3|x");                     /* a truncated sequence */
    expect_pieces(c, "a \xff", "a| |\\xff");
    expect_pieces(c, "\x80", "\\x80");
    expect_tokens(c, "ab\xff\xfe" "cd", 6, "97 98 255 254 99 100");
    bpe_ctx_free(c);
    bpe_free(b);
}

TEST(merges_by_rank_worked_by_hand) {
    struct bpe *b = load();
    struct bpe_ctx *c = bpe_ctx_new(b);
    ASSERT_EQ_INT(EOT_ID, bpe_eot(b));
    ASSERT_EQ_INT(EOT_ID + 1, bpe_vocab_size(b));
    /* the: t h e → (h,e) → [t he]; "t he" is no merge */
    expect_tokens(c, "the", 3, "116 257");
    /* " the": Ġt (rank 0) then he (1) then Ġthe (2) */
    expect_tokens(c, " the", 4, "258");
    /* " cat": (c,a) only → Ġ ca t */
    expect_tokens(c, " cat", 4, "32 263 116");
    expect_tokens(c, "'s", 2, "259");
    /* " 123": (1,2) → Ġ 12 3 */
    expect_tokens(c, " 123", 4, "32 260 51");
    /* "café": é (rank 6) before ca (7), caf (8), café (9) */
    expect_tokens(c, "caf\xc3\xa9", 5, "265");
    /* "aaaaa": every (a,a) left to right, non-overlapping: aa aa a */
    expect_tokens(c, "aaaaa", 5, "266 266 97");
    /* five spaces then x: "    " (ĠĠ ĠĠ) and " x" */
    expect_tokens(c, "     x", 6, "261 261 32 120");
    /* the same pieces again come from the cache */
    expect_tokens(c, " the the the", 12, "258 258 258");
    /* a 100000-space run: 50000 ĠĠ */
    size_t n = 100000;
    char *sp = malloc(n);
    memset(sp, ' ', n);
    uint16_t *t = NULL;
    size_t nt = 0, cap = 0;
    ASSERT_EQ_INT(0, bpe_encode(c, sp, n, &t, &nt, &cap));
    ASSERT_EQ_INT(n / 2, nt);
    for (size_t i = 0; i < nt; i++) if (t[i] != 261) HFAIL("token %zu is %u", i, t[i]);
    free(t);
    free(sp);
    bpe_ctx_free(c);
    bpe_free(b);
}

TEST(decoding_the_tokens_gives_back_every_byte_string) {
    struct bpe *b = load();
    struct bpe_ctx *c = bpe_ctx_new(b);
    unsigned char text[4096];
    uint32_t s = 9;
    for (int round = 0; round < 20; round++) {
        size_t len = 0;
        while (len < sizeof text - 8) {       /* words, spaces, digits, é, and raw bytes of every value */
            s = s * 1103515245u + 12345u;
            int k = (s >> 16) % 8;
            if (k < 3) text[len++] = "the cat'saf12"[(s >> 8) % 13];
            else if (k == 3) text[len++] = ' ';
            else if (k == 4) { text[len++] = 0xc3; text[len++] = 0xa9; }
            else if (k == 5) text[len++] = '\n';
            else text[len++] = (unsigned char)(s >> 3);
        }
        uint16_t *t = NULL;
        size_t nt = 0, cap = 0, o = 0;
        ASSERT_EQ_INT(0, bpe_encode(c, (const char *)text, len, &t, &nt, &cap));
        for (size_t i = 0; i < nt; i++) {
            size_t l;
            const unsigned char *p = bpe_token_bytes(b, t[i], &l);
            ASSERT_TRUE(p != NULL);
            if (o + l > len || memcmp(text + o, p, l)) HFAIL("round %d: token %zu (%u) does not decode to the text at %zu", round, i, t[i], o);
            o += l;
        }
        ASSERT_EQ_INT(len, o);
        free(t);
    }
    bpe_ctx_free(c);
    bpe_free(b);
}

TEST(bad_vocabulary_files_are_refused_naming_the_problem) {
    char enc[4200], bpe[4200], err[512];
    struct bpe *b = NULL;
    write_vocab(enc, bpe, sizeof enc, 0x41, NULL);
    ASSERT_EQ_INT(BPE_EFORMAT, bpe_load(enc, bpe, &b, err, sizeof err));
    ASSERT_CONTAINS(err, "no token for the byte 0x41");
    ASSERT_TRUE(b == NULL);
    write_vocab(enc, bpe, sizeof enc, -1, "x y");
    ASSERT_EQ_INT(BPE_EFORMAT, bpe_load(enc, bpe, &b, err, sizeof err));
    ASSERT_CONTAINS(err, "vocab.bpe: line 13: \"x y\": the merged token is not in");
    write_vocab(enc, bpe, sizeof enc, -1, "abc");
    ASSERT_EQ_INT(BPE_EFORMAT, bpe_load(enc, bpe, &b, err, sizeof err));
    ASSERT_CONTAINS(err, "line 13: expected two tokens separated by one space");
    ASSERT_EQ_INT(BPE_EIO, bpe_load("/nonexistent/encoder.json", bpe, &b, err, sizeof err));
    ASSERT_CONTAINS(err, "/nonexistent/encoder.json");
}
