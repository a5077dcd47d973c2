/* static.c — the page's static files: every GET outside /api/, /healthz and /metrics.
 *
 * Design: the path is percent-decoded once, then refused outright when it holds "..", a backslash or "//";
 * what is left is resolved with realpath() and served only when it lies inside the web root's own realpath
 * (a symlink out of web/ is a 403), read whole (at most 16 MiB) with its type from the extension and
 * "X-Content-Type-Options: nosniff". /vendor/chart.js/NAME serves Debian's libjs-chart.js folder the same
 * way (NAME of [A-Za-z0-9._-] only). A directory path serves its index.html.
 */
#include "static.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *content_type(const char *path) {
    const char *dot = strrchr(path, '.');
    if (!dot) return "application/octet-stream";
    static const struct { const char *ext, *type; } types[] = {
        { ".html", "text/html; charset=utf-8" }, { ".js", "text/javascript; charset=utf-8" },
        { ".mjs", "text/javascript; charset=utf-8" }, { ".css", "text/css; charset=utf-8" },
        { ".json", "application/json" }, { ".svg", "image/svg+xml" }, { ".png", "image/png" },
        { ".ico", "image/x-icon" }, { ".txt", "text/plain; charset=utf-8" }, { ".map", "application/json" },
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i].ext) == 0) return types[i].type;
    return "application/octet-stream";
}

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Percent-decodes src into dst; returns -1 on a bad escape or a NUL. */
static int url_decode(const char *src, char *dst, size_t n) {
    size_t o = 0;
    for (const char *p = src; *p; p++) {
        if (o + 1 >= n) return -1;
        if (*p == '%') {
            int h = hexval(p[1]), l = h >= 0 ? hexval(p[2]) : -1;
            if (h < 0 || l < 0 || (h == 0 && l == 0)) return -1;
            dst[o++] = (char)(h * 16 + l);
            p += 2;
        } else dst[o++] = *p;
    }
    dst[o] = 0;
    return 0;
}

/* Serves root/rel if it resolves inside root. */
static void serve_file(api_ctx *c, const char *root_real, const char *rel) {
    char full[8192], real[PATH_MAX];
    snprintf(full, sizeof full, "%s/%s", root_real, rel);
    if (!realpath(full, real)) { http_response_error(c->res, 404, "no such file: /%s", rel); return; }
    size_t rl = strlen(root_real);
    if (strncmp(real, root_real, rl) != 0 || real[rl] != '/') {
        http_response_error(c->res, 403, "path escapes the web root");
        return;
    }
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) close(fd);
        http_response_error(c->res, 404, "no such file: /%s", rel);
        return;
    }
    if (st.st_size > 16 * 1024 * 1024) { close(fd); http_response_error(c->res, 500, "file too large to serve"); return; }
    char *data = malloc((size_t)st.st_size + 1);
    ssize_t got = 0;
    while (data && got < st.st_size) {
        ssize_t n = read(fd, data + got, (size_t)(st.st_size - got));
        if (n <= 0) break;
        got += n;
    }
    close(fd);
    if (!data || got != st.st_size) { free(data); http_response_error(c->res, 500, "cannot read /%s", rel); return; }
    http_response_set(c->res, 200, content_type(real), data, (size_t)got);
    c->res->extra_headers = "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n";
    free(data);
}

void static_serve(api_ctx *c) {
    char path[HTTP_MAX_URL + 1];
    if (url_decode(c->req->path, path, sizeof path) < 0 || path[0] != '/') {
        http_response_error(c->res, 400, "bad path");
        return;
    }
    if (strstr(path, "..") || strchr(path, '\\') || strstr(path, "//")) {
        http_response_error(c->res, 403, "path traversal refused: %s", c->req->path);
        return;
    }
    static const char vendor[] = "/vendor/chart.js/";
    if (strncmp(path, vendor, sizeof vendor - 1) == 0) {
        const char *name = path + sizeof vendor - 1;
        if (strcmp(name, "chart.umd.js") == 0) name = "chart.min.js";
        for (const char *p = name; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_')) {
                http_response_error(c->res, 404, "no such vendor file");
                return;
            }
        char vreal[PATH_MAX];
        const char *vd = c->a->cfg.vendor_dir ? c->a->cfg.vendor_dir : "/usr/share/javascript/chart.js";
        if (!*name || !realpath(vd, vreal)) {
            http_response_error(c->res, 404, "Chart.js is not installed (apt-get install libjs-chart.js)");
            return;
        }
        serve_file(c, vreal, name);
        return;
    }
    if (!c->a->web_real[0]) { http_response_error(c->res, 404, "no web root configured (--web DIR)"); return; }
    const char *rel = path + 1;
    if (!*rel || path[strlen(path) - 1] == '/') {
        char idx[HTTP_MAX_URL + 16];
        snprintf(idx, sizeof idx, "%sindex.html", rel);
        serve_file(c, c->a->web_real, idx);
        return;
    }
    serve_file(c, c->a->web_real, rel);
}
