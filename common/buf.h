/* buf.h — a growable byte buffer with a hard cap: the string builder of every module (the HTTP transport's
 * bodies and output, the leaderboard's CSV and table, /metrics, the metrics CSV), owned by none of them.
 *
 * Contract.
 * - A zeroed buf (`buf b = {0};`) is empty and valid; data is NULL until the first append.
 * - buf_append(b, p, n, max): appends n bytes; returns 0, or -1 when out of memory or when len + n would pass
 *   max or BUF_MAX (the hard cap, whatever max says). After a failure b is unchanged: nothing of p appended,
 *   what was there still there (the caller frees it as usual). data is NUL-terminated after every successful
 *   append (the NUL is not counted in len), so a text buffer is a C string.
 * - buf_puts(b, s, max): buf_append of strlen(s) bytes. buf_printf(b, max, fmt, ...): appends the formatted
 *   text, of any length; -1 (b unchanged) as buf_append, or when the format fails.
 * - buf_release(b): hands data to the caller (who frees it with free(); NULL when empty) and leaves b empty.
 * - buf_free(b): frees data and leaves b empty; safe on an empty buffer and twice.
 * Ownership: the buf owns data until buf_release. Not thread-safe (one buffer, one thread); no globals.
 */
#ifndef PRISM_BUF_H
#define PRISM_BUF_H
#include <stddef.h>

#define BUF_MAX ((size_t)1 << 30)   /* 1 GiB: no buffer grows past it */

typedef struct buf {
    char *data;   /* malloc'd; NULL when empty */
    size_t len, cap;
} buf;

int buf_append(buf *b, const void *p, size_t n, size_t max);
int buf_puts(buf *b, const char *s, size_t max);
int buf_printf(buf *b, size_t max, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
char *buf_release(buf *b);
void buf_free(buf *b);
#endif
