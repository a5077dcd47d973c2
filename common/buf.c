/* buf.c — the growable buffer (buf.h).
 *
 * Design: capacity doubles from 256 bytes, one byte more than len is always held for the NUL; the cap is
 * checked before anything moves, so a refused append changes nothing.
 */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(buf *b, size_t n, size_t max) {
    if (max > BUF_MAX) max = BUF_MAX;
    if (n > max || b->len > max - n) return -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) return -1;
        b->data = d;
        b->cap = cap;
    }
    return 0;
}

int buf_append(buf *b, const void *p, size_t n, size_t max) {
    if (reserve(b, n, max) < 0) return -1;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return 0;
}

int buf_puts(buf *b, const char *s, size_t max) {
    return buf_append(b, s, strlen(s), max);
}

int buf_printf(buf *b, size_t max, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n, max) < 0) return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

char *buf_release(buf *b) {
    char *d = b->data;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

void buf_free(buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
