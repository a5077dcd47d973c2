/* tokenize.h — text to llm.c token shards with GPT-2's BPE (dataprep/bpe.h), streaming and multi-threaded:
 * `prism-data tokenize` and the tokenizer benchmark call tokenize_run().
 *
 * Input: plain text files (each file one document), JSONL files (each non-blank line one document, an object
 * with a "text" string), either gzip- or zstd-compressed (input.h: decompressed as they stream; binary formats
 * refused by their magic), and parquet files (parquet.h: each non-null value of the "text" column a document). The end-of-text token (<|endoftext|>, 50256 in GPT-2) goes before every document.
 * Output in out_dir: <kind>_val_NNNNNN.bin (the first val_tokens tokens of the stream: llm.c's convention, the
 * validation split first) and <kind>_train_NNNNNN.bin (the rest), each at most shard_tokens tokens, written as
 * they fill (temp file, fsync, rename), and meta.json {"kind","vocab_size","eot","documents","bytes",
 * "train_tokens","val_tokens","train_glob","val_glob"}.
 * Memory: one shard buffer per split (grown up to shard_tokens / val_tokens) plus 2·threads + 2 chunks of about
 * chunk_bytes of text in flight; a document held whole (a JSONL line, a parquet value, text with no safe cut) is
 * at most TOKENIZE_MAX_DOC (refused beyond, naming the cap), a BPE piece at most BPE_MAX_PIECE, and parquet's
 * bomb caps are parquet.h's. Order is the input order whatever the thread count (the output is identical
 * for 1 or N threads). A text document is cut into chunks only before a space that follows a printable ASCII
 * character and precedes an ASCII letter, or after a line break between two characters that are not white space,
 * where GPT-2's pattern always starts a new piece and no piece crosses, so the tokens are those of the whole
 * document.
 */
#ifndef PRISM_TOKENIZE_H
#define PRISM_TOKENIZE_H
#include "bpe.h"
#include <stddef.h>
#include <stdio.h>

enum { TOKENIZE_OK = 0, TOKENIZE_EIO = -1, TOKENIZE_EINPUT = -2, TOKENIZE_ENOMEM = -3 };
enum { TOKENIZE_AUTO = 0, TOKENIZE_TEXT = 1, TOKENIZE_JSONL = 2, TOKENIZE_PARQUET = 3 };
#define TOKENIZE_MAX_SHARD 100000000ULL
/* The most text held whole: a JSONL line, a parquet value, a stretch of text with no safe cut (32 MiB). */
#define TOKENIZE_MAX_DOC (32u << 20)

struct tokenize_opts {
    const struct bpe *bpe;        /* required */
    char *const *inputs;          /* (ninputs) file paths */
    int ninputs;
    int format;                   /* TOKENIZE_AUTO: parquet by its magic; .jsonl / .json (also .gz / .zst) JSONL; else text */
    const char *column;           /* the JSONL key / parquet column holding the text; NULL = "text" */
    const char *out_dir;          /* NULL: count only, write nothing (benchmarks) */
    const char *kind;             /* shard name prefix, default "text" */
    size_t shard_tokens;          /* default and maximum TOKENIZE_MAX_SHARD */
    size_t val_tokens;            /* <= shard_tokens; 0 = no val split */
    int threads;                  /* encoding threads, >= 1 */
    size_t chunk_bytes;           /* default 1 MiB */
    FILE *progress;               /* NULL: silent; else a line with tokens/s (redrawn on a TTY) */
};

struct tokenize_stats {
    size_t bytes, documents, tokens, train_tokens, val_tokens;
    int train_shards, val_shards;
    size_t chunks;                /* units of work the threads shared */
    double seconds;
};

/* 0, or a TOKENIZE_E* code with err naming the file (and JSONL line) and the problem. TOKENIZE_EINPUT: an
 * input is unreadable or malformed, or too small for the val split; TOKENIZE_EIO: an output could not be written. */
int tokenize_run(const struct tokenize_opts *o, struct tokenize_stats *st, char *err, size_t errlen);
#endif
