/* blob.h — immutable bytes shared by reference: one rendering of a large answer (a 100,000-job leaderboard is
 * ~25 MB of JSON) held by the cache that made it and by every connection still writing it, freed by the last.
 *
 * Contract.
 * - blob_wrap(data, len): a NEW blob (refs 1) that owns data (malloc'd; freed with free() by the last unref);
 *   NULL when out of memory, and data is then still the caller's.
 * - blob_ref(b): one more reference; returns b. blob_unref(b): one less; the last one frees the bytes and the
 *   blob. NULL is accepted by both.
 * - data and len never change after blob_wrap.
 * Not thread-safe: every reference is taken and dropped on one thread (the server's event loop); a blob handed
 * to another thread must carry the only reference there.
 */
#ifndef PRISM_BLOB_H
#define PRISM_BLOB_H
#include <stddef.h>

typedef struct blob {
    unsigned refs;
    size_t len;
    char *data;   /* owned; NUL-terminated when wrapped from a C string */
} blob;

blob *blob_wrap(char *data, size_t len);
blob *blob_ref(blob *b);
void blob_unref(blob *b);
#endif
