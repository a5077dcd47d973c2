/* blob.c — a reference count over bytes that never change (blob.h). The counter is plain: one thread owns all
 * the references, so the cost of sharing a 25 MB answer between the cache and its writers is an increment. */
#include "blob.h"
#include <stdlib.h>

blob *blob_wrap(char *data, size_t len) {
    blob *b = malloc(sizeof *b);
    if (!b) return NULL;
    b->refs = 1;
    b->len = len;
    b->data = data;
    return b;
}

blob *blob_ref(blob *b) {
    if (b) b->refs++;
    return b;
}

void blob_unref(blob *b) {
    if (!b || --b->refs) return;
    free(b->data);
    free(b);
}
