/* bpe.h — GPT-2's byte-level BPE tokenizer from the two files GPT-2 ships: encoder.json (token string → id) and
 * vocab.bpe (the merges, first line "#version: ...", then one "A B" a line in rank order).
 *
 * Strings in both files are in GPT-2's byte-to-unicode alphabet (printable bytes ! .. ~, ¡ .. ¬, ® .. ÿ stand
 * for themselves; the other 68 bytes map to U+0100.. in byte order); the tokenizer maps them back to raw bytes.
 * Encoding: text (UTF-8) is first cut into pieces by GPT-2's pattern, exactly
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (PCRE2 with Unicode properties, so letters, numbers and white space are Unicode's categories); each piece's
 * bytes are then merged pair by pair, always the pair of lowest rank, every occurrence left to right, until no
 * ranked pair is left. Bytes that are not valid UTF-8 match nothing in the pattern: each maximal run of them is
 * a piece of its own, encoded byte-level like any other, so decode(encode(x)) == x for every byte string.
 *
 * A struct bpe is read-only after bpe_load and shared by threads; each thread encodes through its own
 * struct bpe_ctx (match data and a bounded cache of encoded pieces).
 */
#ifndef PRISM_BPE_H
#define PRISM_BPE_H
#include <stddef.h>
#include <stdint.h>

enum { BPE_OK = 0, BPE_EIO = -1, BPE_EFORMAT = -2, BPE_ENOMEM = -3, BPE_ETOOLONG = -4 };
/* The longest piece merged: merging costs ~30 bytes of memory a byte of the piece (a megabyte of spaces or of
 * letters with no break is one piece), so longer ones are refused rather than risk gigabytes. */
#define BPE_MAX_PIECE (1u << 20)

struct bpe;
struct bpe_ctx;

/* Loads and checks both files: every byte needs a single-byte token, every merge's parts and result must be in
 * the encoder, ids must be < 65535 (uint16 shards). On failure *out is NULL and err names the file, the line or
 * key, and the problem. */
int bpe_load(const char *encoder_json, const char *vocab_bpe, struct bpe **out, char *err, size_t errlen);
void bpe_free(struct bpe *b);                 /* NULL is fine */

int bpe_vocab_size(const struct bpe *b);      /* largest id + 1 */
int bpe_eot(const struct bpe *b);             /* id of "<|endoftext|>", -1 when the encoder has none */
/* The bytes of token id (not NUL-terminated) and their count in *len; NULL for an unknown id. */
const unsigned char *bpe_token_bytes(const struct bpe *b, int id, size_t *len);

/* Per-thread state; NULL on no memory. */
struct bpe_ctx *bpe_ctx_new(const struct bpe *b);
void bpe_ctx_free(struct bpe_ctx *c);

/* Appends the tokens of text[0..len) to *toks (*n used, *cap allocated; realloc'd as needed). 0, BPE_ENOMEM, or
 * BPE_ETOOLONG (a piece longer than BPE_MAX_PIECE, not merged); then *toks still holds what was appended before. */
int bpe_encode(struct bpe_ctx *c, const char *text, size_t len, uint16_t **toks, size_t *n, size_t *cap);

/* The pattern's pieces of text, for tests and tools: calls fn(arg, offset, length) for each, in order. 0, or
 * BPE_ENOMEM. */
int bpe_split(struct bpe_ctx *c, const char *text, size_t len, void (*fn)(void *arg, size_t off, size_t n), void *arg);
#endif
