/* logesc.c — control characters in logged fields become visible escapes.
 *
 * Design: a log line is one event only if no field can end the line or move the cursor. Anything a
 * client sent (a device name, an error text, a path) goes through log_escape before it is printed, so a
 * newline in it cannot forge a second `event=...` line and an ANSI sequence cannot rewrite the terminal.
 * An escape is never cut in half when the output is too short.
 */
#include "logesc.h"

#include <stdio.h>
#include <string.h>

char *log_escape(char *out, size_t n, const char *in) {
    if (!out || n == 0) return out;
    if (!in) { snprintf(out, n, "-"); return out; }
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        char esc[5];
        size_t len;
        unsigned char ch = *p;
        if (ch == '\n') len = (size_t)snprintf(esc, sizeof esc, "\\n");
        else if (ch == '\r') len = (size_t)snprintf(esc, sizeof esc, "\\r");
        else if (ch == '\t') len = (size_t)snprintf(esc, sizeof esc, "\\t");
        else if (ch == '\\') len = (size_t)snprintf(esc, sizeof esc, "\\\\");
        else if (ch < 0x20 || ch == 0x7f) len = (size_t)snprintf(esc, sizeof esc, "\\x%02x", ch);
        else { esc[0] = (char)ch; esc[1] = 0; len = 1; }
        if (o + len + 1 > n) break;
        memcpy(out + o, esc, len);
        o += len;
    }
    out[o] = 0;
    return out;
}
