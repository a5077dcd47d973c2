/* logesc.h — making untrusted text safe to put on a log line.
 *
 * Contract: log_escape(out, n, in) writes into out (n > 0 bytes, always NUL-terminated, cut when too long)
 * the text `in` with every control character (bytes 0x00-0x1f and 0x7f) and every backslash written as an
 * escape: \n, \r, \t, \\ or \xHH. Bytes 0x80 and up (UTF-8) are kept. A NULL `in` gives "-". Returns out,
 * so it can be an argument of printf. No allocation; thread-safe.
 */
#ifndef PRISM_LOGESC_H
#define PRISM_LOGESC_H

#include <stddef.h>

char *log_escape(char *out, size_t n, const char *in);

#endif
