/* auth.c — worker/admin bearer tokens: load, generate once beside the database, compare in constant time.
 *
 * Design: tokens are plain hex strings so they survive copy-paste and shell quoting. A generated token
 * file is written to a temp name with O_EXCL and mode 0600, fsync'd and renamed, so a crash never leaves a
 * half-written token file and no other user can read it even for a moment.
 */
#include "auth.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

int auth_random_hex(char *out, size_t nbytes) {
    unsigned char raw[64];
    if (nbytes > sizeof raw) return -1;
    size_t got = 0;
    while (got < nbytes) {
        ssize_t n = getrandom(raw + got, nbytes - got, 0);
        if (n < 0) { if (errno == EINTR) continue; return -1; }
        got += (size_t)n;
    }
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < nbytes; i++) { out[2 * i] = hx[raw[i] >> 4]; out[2 * i + 1] = hx[raw[i] & 15]; }
    out[2 * nbytes] = 0;
    return 0;
}

int auth_equal(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    unsigned diff = (unsigned)(la ^ lb);
    size_t n = la < lb ? la : lb;
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)a[i] ^ (unsigned char)b[i];
    return diff == 0;
}

int auth_check(const auth_tokens *t, const char *h) {
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) return AUTH_NONE;
    const char *tok = h + 7;
    while (*tok == ' ') tok++;
    char buf[AUTH_TOKEN_MAX + 1];
    size_t n = strlen(tok);
    while (n && (tok[n - 1] == ' ' || tok[n - 1] == '\t')) n--;
    if (n == 0 || n > AUTH_TOKEN_MAX) return AUTH_NONE;
    memcpy(buf, tok, n);
    buf[n] = 0;
    int admin = t->admin[0] && auth_equal(buf, t->admin);
    int worker = t->worker[0] && auth_equal(buf, t->worker);
    return admin ? AUTH_ADMIN : worker ? AUTH_WORKER : AUTH_NONE;
}

static int valid_token(const char *s) {
    size_t n = strlen(s);
    if (n < 16 || n > AUTH_TOKEN_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~') return 0;
    return 1;
}

static void trim(char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = 0;
    size_t i = 0;
    while (s[i] == ' ' || s[i] == '\t') i++;
    if (i) memmove(s, s + i, n - i + 1);
}

/* Parses a token file. Returns 0, or -1 with err set. */
static int write_private(const char *path, const char *content, char *err, size_t errlen);

static int read_tokens(auth_tokens *t, const char *path, char *err, size_t errlen) {
    struct stat sb;
    if (stat(path, &sb) == 0 && (sb.st_mode & 077)) t->open_mode = (unsigned)(sb.st_mode & 0777);   /* 0644, as ls shows it */
    FILE *f = fopen(path, "r");
    if (!f) { snprintf(err, errlen, "cannot read token file %s: %s", path, strerror(errno)); return -1; }
    char line[512], bare[512] = "";
    int nbare = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        trim(line);
        if (!line[0] || line[0] == '#') continue;
        char *eq = strchr(line, '=');
        if (eq) {
            *eq = 0;
            char *k = line, *v = eq + 1;
            trim(k); trim(v);
            char *dst = strcmp(k, "worker_token") == 0 ? t->worker : strcmp(k, "admin_token") == 0 ? t->admin : NULL;
            if (!dst) { fclose(f); snprintf(err, errlen, "%s:%d: unknown key '%s' (use worker_token= or admin_token=)", path, lineno, k); return -1; }
            if (!valid_token(v)) { fclose(f); snprintf(err, errlen, "%s:%d: %s must be 16 to %d printable characters without spaces", path, lineno, k, AUTH_TOKEN_MAX); return -1; }
            snprintf(dst, AUTH_TOKEN_MAX + 1, "%s", v);
        } else {
            nbare++;
            snprintf(bare, sizeof bare, "%s", line);
        }
    }
    fclose(f);
    if (!t->worker[0] && nbare == 1) {
        if (!valid_token(bare)) { snprintf(err, errlen, "%s: the token must be 16 to %d printable characters without spaces", path, AUTH_TOKEN_MAX); return -1; }
        snprintf(t->worker, sizeof t->worker, "%s", bare);
    }
    if (!t->worker[0]) { snprintf(err, errlen, "%s: no worker_token=... line", path); return -1; }
    return 0;
}

/* Writes content to path atomically with mode 0600. */
static int write_private(const char *path, const char *content, char *err, size_t errlen) {
    util_part part = {content, strlen(content)};
    return util_write_atomic(path, &part, 1, 0600, err, errlen) ? -1 : 0;
}

int auth_load(auth_tokens *t, const char *token_file, const char *db_path, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    if (token_file) {
        snprintf(t->path, sizeof t->path, "%s", token_file);
        if (read_tokens(t, token_file, err, errlen) < 0) return -1;
        if (!t->admin[0]) {
            if (auth_random_hex(t->admin, 32) < 0) { snprintf(err, errlen, "getrandom failed"); return -1; }
            t->admin_generated = 1;
            /* kept in a private file, not printed: logs are read by more people than the token file */
            char content[300];
            snprintf(t->admin_path, sizeof t->admin_path, "%s.admin-token", db_path);
            snprintf(content, sizeof content, "%s\n", t->admin);
            if (write_private(t->admin_path, content, err, errlen) < 0) return -1;
        }
        return 0;
    }
    snprintf(t->path, sizeof t->path, "%s.tokens", db_path);
    if (access(t->path, F_OK) == 0) {
        if (read_tokens(t, t->path, err, errlen) < 0) return -1;
        if (!t->admin[0]) { snprintf(err, errlen, "%s: no admin_token=... line", t->path); return -1; }
        return 0;
    }
    if (auth_random_hex(t->worker, 32) < 0 || auth_random_hex(t->admin, 32) < 0) {
        snprintf(err, errlen, "getrandom failed: %s", strerror(errno));
        return -1;
    }
    char content[600], wpath[1200];
    snprintf(content, sizeof content, "# prism-sweep tokens (keep private)\nworker_token=%s\nadmin_token=%s\n", t->worker, t->admin);
    if (write_private(t->path, content, err, errlen) < 0) return -1;
    snprintf(wpath, sizeof wpath, "%s.worker-token", db_path);
    snprintf(content, sizeof content, "%s\n", t->worker);
    if (write_private(wpath, content, err, errlen) < 0) return -1;
    t->generated = 1;
    return 0;
}
