/* evalfile.h — llm.c multiple-choice eval files (HellaSwag, MMLU, ... as llm.c's dev/data scripts write them).
 *
 * Layout (little-endian): a header of 256 int32 (magic 20240522, version 1, example count, longest example in
 * bytes), then the examples back to back, each a run of uint16:
 *   65535, example bytes (this whole run, delimiter included), example index, label, completion count,
 *   context length, context tokens..., then per completion: its length, its tokens...
 * Token ids are < 65535 (65535 is the delimiter).
 * Optional, prism's own: header[4] = 1 says the examples are followed by one uint32 (two uint16, low half first)
 * per completion, in file order: the character count (Unicode code points) of the choice string lm-eval divides
 * by for its acc_norm (the choice without the " " target delimiter; dataprep/evaltasks.h). llm.c's reader reads
 * header[0..3] and the examples only, so such a file is still an llm.c eval file. header[4] = 0: no counts.
 *
 * evalfile_open reads the whole file and checks every example before returning, so a scorer never meets a bad
 * one: every message names the file, the example (its position in the file, from 0) and the problem
 * ("hs.bin: example 3: label 4 >= completion count 4"). The writer collects examples in memory and writes a temp
 * file, fsync, rename.
 */
#ifndef PRISM_EVALFILE_H
#define PRISM_EVALFILE_H
#include <stddef.h>
#include <stdint.h>

#define EVALFILE_MAGIC 20240522
#define EVALFILE_VERSION 1
#define EVALFILE_HEADER_INTS 256
#define EVALFILE_DELIM 65535
#define EVALFILE_MAX_COMPLETIONS 64
#define EVALFILE_HDR_CHARS 4          /* header index of the character-count flag */

enum { EVALFILE_OK = 0, EVALFILE_EIO = -1, EVALFILE_EFORMAT = -2, EVALFILE_ENOMEM = -3, EVALFILE_EINVAL = -4 };

struct evalfile_example {
    int index;                                     /* EXAMPLE_INDEX as stored */
    int label;                                     /* < ncomp */
    int ncomp;                                     /* 1..EVALFILE_MAX_COMPLETIONS */
    int ctx_len;                                   /* >= 1 */
    const uint16_t *ctx;                           /* (ctx_len) inside the file's buffer */
    int comp_len[EVALFILE_MAX_COMPLETIONS];        /* each >= 1 */
    const uint16_t *comp[EVALFILE_MAX_COMPLETIONS];
    int comp_chars[EVALFILE_MAX_COMPLETIONS];      /* the choice's characters; -1 when the file has no counts */
};

struct evalfile {
    char *path;                 /* owned */
    uint16_t *data;             /* (ndata) everything after the header, owned */
    size_t ndata;
    int n;                      /* examples */
    size_t *off;                /* (n) start of example i in data (its delimiter) */
    int longest_bytes;          /* header[3] */
    uint32_t *chars;            /* (all completions) character counts, owned; NULL when the file has none */
    size_t *chars_off;          /* (n) example i's first entry in chars; NULL with chars */
};

/* Reads and checks the whole file. vocab > 0: every token must be < vocab. On failure *out holds nothing to
 * free and err names the file, the example index and the problem (EVALFILE_EIO: unreadable;
 * EVALFILE_EFORMAT: bad content; EVALFILE_ENOMEM). */
int evalfile_open(const char *path, int vocab, struct evalfile *out, char *err, size_t errlen);
void evalfile_close(struct evalfile *f);     /* NULL or zeroed is fine */

/* Example i (0 <= i < f->n) with pointers into f; valid while f is open. */
void evalfile_example(const struct evalfile *f, int i, struct evalfile_example *ex);

/* ---- writer ---- */
struct evalfile_writer {
    uint16_t *buf;              /* the example stream so far */
    size_t len, cap;
    int n, longest_bytes;
    uint32_t *chars;            /* character counts so far (examples added with them) */
    size_t nchars, chars_cap;
    int chars_mode;             /* 0 nothing added yet, 1 with counts, 2 without */
};
void evalfile_writer_init(struct evalfile_writer *w);
/* Appends one example (its EXAMPLE_INDEX is its position). 0, EVALFILE_EINVAL (err says which field: label out
 * of range, a token 65535, empty context or completion, example over 65535 bytes, more than 65535 examples),
 * or EVALFILE_ENOMEM. */
int evalfile_writer_add(struct evalfile_writer *w, int label, const uint16_t *ctx, int ctx_len, int ncomp,
                        const uint16_t *const *comp, const int *comp_len, char *err, size_t errlen);
/* The same with each completion's character count (comp_chars[c] >= 0; NULL: none). A file's examples all have
 * counts or none do: mixing is EVALFILE_EINVAL naming the example. */
int evalfile_writer_add_chars(struct evalfile_writer *w, int label, const uint16_t *ctx, int ctx_len, int ncomp,
                              const uint16_t *const *comp, const int *comp_len, const int *comp_chars, char *err,
                              size_t errlen);
/* Writes path atomically; 0 or EVALFILE_EIO (err has the path and errno text). The writer stays valid. */
int evalfile_writer_finish(struct evalfile_writer *w, const char *path, char *err, size_t errlen);
void evalfile_writer_release(struct evalfile_writer *w);
#endif
