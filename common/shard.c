/* shard.c — llm.c token shards: atomic writes, mmap'd reads with exact size checks, glob sets.
 *
 * A shard is trusted for nothing: the header's magic, version and count are checked against the file
 * size before a single token is read, and a set can be scanned so no token reaches the embedding table
 * out of range. Errors name the file and say what was expected, since the usual cause is a truncated
 * download or a file from another pipeline.
 */
#include "shard.h"
#include "util.h"
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FAIL(code, ...) do { if (err) snprintf(err, errlen, __VA_ARGS__); rc = (code); goto out; } while (0)

int shard_write(const char *path, const uint16_t *tokens, size_t n, char *err, size_t errlen) {
    int rc = SHARD_OK;
    if (n > 0x7fffffffULL) FAIL(SHARD_EIO, "%s: %zu tokens exceed the format's int32 count", path, n);
    int32_t hdr[SHARD_HEADER_INTS] = {SHARD_MAGIC, SHARD_VERSION, (int32_t)n};
    util_part parts[2] = {{hdr, sizeof hdr}, {tokens, n * sizeof(uint16_t)}};
    char e[512];
    if (util_write_atomic(path, parts, 2, 0644, e, sizeof e)) FAIL(SHARD_EIO, "%s", e);
out:
    return rc;
}

int shard_open(const char *path, struct shard *out, char *err, size_t errlen) {
    int rc = SHARD_OK, fd = -1;
    void *map = MAP_FAILED;
    struct stat st;
    memset(out, 0, sizeof *out);
    fd = open(path, O_RDONLY);
    if (fd < 0) FAIL(SHARD_EIO, "%s: cannot open token shard: %s", path, strerror(errno));
    if (fstat(fd, &st)) FAIL(SHARD_EIO, "%s: stat failed: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) FAIL(SHARD_EFORMAT, "%s: not a regular file", path);
    if ((size_t)st.st_size < SHARD_HEADER_BYTES)
        FAIL(SHARD_EFORMAT, "%s: %lld bytes, shorter than the %d-byte llm.c shard header (truncated or not a token shard)",
             path, (long long)st.st_size, SHARD_HEADER_BYTES);
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) FAIL(SHARD_EIO, "%s: mmap failed: %s", path, strerror(errno));
    const int32_t *hdr = map;
    if (hdr[0] != SHARD_MAGIC)
        FAIL(SHARD_EFORMAT, "%s: bad magic: the header does not start with %d (not an llm.c token shard)", path, SHARD_MAGIC);
    if (hdr[1] != SHARD_VERSION)
        FAIL(SHARD_EFORMAT, "%s: unsupported version: expected %d (uint16 tokens)", path, SHARD_VERSION);
    if (hdr[2] < 0) FAIL(SHARD_EFORMAT, "%s: negative token count %d in header", path, hdr[2]);
    size_t want = SHARD_HEADER_BYTES + (size_t)hdr[2] * 2;
    if ((size_t)st.st_size != want)
        FAIL(SHARD_EFORMAT, "%s: file is %lld bytes but the header says %d tokens, so expected %zu bytes (%d-byte header + 2 per token)",
             path, (long long)st.st_size, hdr[2], want, SHARD_HEADER_BYTES);
    out->path = strdup(path);
    if (!out->path) FAIL(SHARD_ENOMEM, "%s: out of memory", path);
    out->map = map;
    out->maplen = (size_t)st.st_size;
    out->tokens = (const uint16_t *)((const char *)map + SHARD_HEADER_BYTES);
    out->ntok = (size_t)hdr[2];
    map = MAP_FAILED;
out:
    if (map != MAP_FAILED) munmap(map, (size_t)st.st_size);
    if (fd >= 0) close(fd);
    return rc;
}

void shard_close(struct shard *s) {
    if (!s) return;
    if (s->map) munmap(s->map, s->maplen);
    free(s->path);
    memset(s, 0, sizeof *s);
}

int shard_set_open(const char *pattern, const char *root, int max_token, struct shard_set *out,
                   char *err, size_t errlen) {
    int rc = SHARD_OK;
    glob_t g;
    int globbed = 0;
    char full[4200];
    memset(out, 0, sizeof *out);
    if (!pattern || !*pattern) FAIL(SHARD_ENOMATCH, "empty data glob");
    if (pattern[0] != '/' && root && *root) snprintf(full, sizeof full, "%s/%s", root, pattern);
    else snprintf(full, sizeof full, "%s", pattern);
    int gr = glob(full, 0, NULL, &g);
    globbed = gr == 0 || gr == GLOB_NOMATCH;
    if (gr == GLOB_NOMATCH || (gr == 0 && g.gl_pathc == 0))
        FAIL(SHARD_ENOMATCH, "%s: no token shards match (check the path and the data root)", full);
    if (gr) FAIL(SHARD_EIO, "%s: cannot read the directory to expand the glob", full);
    out->shards = calloc(g.gl_pathc, sizeof *out->shards);
    if (!out->shards) FAIL(SHARD_ENOMEM, "%s: out of memory", full);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        rc = shard_open(g.gl_pathv[i], &out->shards[out->n], err, errlen);
        if (rc) goto out;
        out->total += out->shards[out->n].ntok;
        out->n++;
    }
    if (max_token > 0)
        for (int i = 0; i < out->n; i++) {
            const struct shard *s = &out->shards[i];
            for (size_t k = 0; k < s->ntok; k++)
                if (s->tokens[k] >= max_token)
                    FAIL(SHARD_EFORMAT, "%s: the token at position %zu is outside the vocabulary (vocab_size %d)",
                         s->path, k, max_token);
        }
out:
    if (globbed) globfree(&g);
    if (rc) shard_set_close(out);
    return rc;
}

void shard_set_close(struct shard_set *set) {
    if (!set) return;
    for (int i = 0; i < set->n; i++) shard_close(&set->shards[i]);
    free(set->shards);
    memset(set, 0, sizeof *set);
}
