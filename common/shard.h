/* shard.h — llm.c token shards: a 256 × int32 header (magic 20240520, version 1, token count) followed
 * by that many uint16 tokens. FineWeb pipelines (llm.c's dev/data scripts) produce exactly this.
 *
 * Readers mmap the file read-only and check that its size is exactly 1024 + 2·count bytes; every error
 * message names the file and what was expected ("data/x.bin: size 1000 bytes, header says 300 tokens
 * so expected 1624"). Writers write a temp file, fsync, rename.
 */
#ifndef PRISM_SHARD_H
#define PRISM_SHARD_H
#include <stddef.h>
#include <stdint.h>

#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1
#define SHARD_HEADER_INTS 256
#define SHARD_HEADER_BYTES (SHARD_HEADER_INTS * 4)

enum { SHARD_OK = 0, SHARD_EIO = -1, SHARD_EFORMAT = -2, SHARD_ENOMATCH = -3, SHARD_ENOMEM = -4 };

struct shard {
    char *path;                 /* owned */
    const uint16_t *tokens;     /* (ntok) inside the mapping */
    size_t ntok;
    void *map;                  /* whole file, munmap'd by shard_close */
    size_t maplen;
};

struct shard_set {
    struct shard *shards;       /* (n), sorted by path */
    int n;
    size_t total;               /* Σ ntok */
};

/* Writes tokens to path atomically. 0 or SHARD_EIO (err has the path and errno text). */
int shard_write(const char *path, const uint16_t *tokens, size_t n, char *err, size_t errlen);

/* Maps and checks one shard. On failure *out is zeroed and err names the file and the problem. */
int shard_open(const char *path, struct shard *out, char *err, size_t errlen);
void shard_close(struct shard *s);

/* Opens every file matching glob (relative globs resolve against root when root is non-NULL),
 * sorted. No match → SHARD_ENOMATCH naming the glob. max_token: when > 0, every token must be
 * < max_token (the vocab) or SHARD_EFORMAT names the file, position and value. */
int shard_set_open(const char *glob, const char *root, int max_token, struct shard_set *out,
                   char *err, size_t errlen);
void shard_set_close(struct shard_set *set);
#endif
