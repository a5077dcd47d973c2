/* input.h — what an input file of `prism-data tokenize` is, and a stream of its text.
 *
 * input_sniff() names a file format from its first bytes (magic numbers): the containers tokenize reads
 * (gzip, zstd, parquet) and the binary formats it refuses (ELF, PNG, JPEG, GIF, PDF, zip, bzip2, xz, 7z, lz4,
 * tar, SQLite, llm.c token shards and eval files, UTF-16 text, ...), or "binary data" for a NUL byte in the
 * first bytes. NULL means text.
 *
 * input_open() opens a path as a text stream: gzip (zlib, every member) and zstd (libzstd, every frame) are
 * decompressed; a parquet file is reported back (kind INPUT_PARQUET, no stream: parquet.h reads it); everything
 * else binary is refused with a message naming the format — also inside a compressed stream, so a .gz holding
 * a parquet file, a zstd stream or an ELF binary is refused too. The stream is a stdio FILE (fopencookie), so
 * fread and getline work on it; a decompression error midway makes reads fail with errno EILSEQ and
 * input_error() says what.
 */
#ifndef PRISM_INPUT_H
#define PRISM_INPUT_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { INPUT_PLAIN = 0, INPUT_GZIP = 1, INPUT_ZSTD = 2, INPUT_PARQUET = 3 };
enum { INPUT_OK = 0, INPUT_EIO = -1, INPUT_EFORMAT = -2, INPUT_ENOMEM = -3 };
#define INPUT_SNIFF_BYTES 4096   /* how much of a stream input_sniff looks at for NUL bytes */

/* The format whose magic starts b[0..n) ("gzip", "zstd", "parquet", "an ELF executable", "a PNG image", ...), or
 * "binary data (a NUL byte at offset K)" (written into scratch, at least 64 bytes), or NULL for text. *kind gets
 * INPUT_GZIP / INPUT_ZSTD / INPUT_PARQUET for those three, else INPUT_PLAIN. */
const char *input_sniff(const uint8_t *b, size_t n, int *kind, char *scratch, size_t scratch_len);

struct input {
    FILE *f;            /* the text stream (NULL for INPUT_PARQUET) */
    int kind;           /* INPUT_* of the file itself */
    void *priv;         /* the decompressor; owned */
};

/* Opens path. 0 with in->f a text stream (or in->kind == INPUT_PARQUET and in->f NULL: read it with parquet.h);
 * INPUT_EIO (cannot open/read), INPUT_EFORMAT (binary or unsupported nesting: err names the format and what to
 * do), INPUT_ENOMEM. On failure nothing is left open. allow_parquet = 0 refuses a parquet file too (--format
 * text/jsonl). err starts with the path. */
int input_open(const char *path, int allow_parquet, struct input *in, char *err, size_t errlen);
/* The decompression error that made a read fail, or NULL. */
const char *input_error(const struct input *in);
void input_close(struct input *in);   /* zeroed is fine */
#endif
