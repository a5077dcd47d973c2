/* static.h — the page's static files (web/ and Chart.js), served by the orchestrator.
 *
 * static_serve answers c->res for a GET/HEAD of c->req->path outside /api/: 200 with the file, 400 for a bad
 * percent-escape, 403 for a path that tries to leave the root ("..", "//", a backslash, or a symlink that
 * resolves outside it), 404 for no such file, no web root (--web) or no Chart.js installed, 500 for a file
 * over 16 MiB or a read error. Files come only from c->a->web_real (the realpath of --web) and, under
 * /vendor/chart.js/, from c->a->cfg.vendor_dir (default /usr/share/javascript/chart.js).
 */
#ifndef PRISM_STATIC_H
#define PRISM_STATIC_H
#include "api.h"

void static_serve(api_ctx *c);
#endif
