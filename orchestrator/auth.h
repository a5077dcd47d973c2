/* auth.h — the orchestrator's two bearer tokens (worker and admin).
 *
 * Tokens come from --token-file (lines "worker_token=HEX" and "admin_token=HEX"; a file whose only content
 * is one bare token gives the worker token, the admin token is then generated) or, without it, from
 * "<db>.tokens" beside the database, created at the first start with 32 random bytes each (getrandom),
 * mode 0600, plus "<db>.worker-token" holding the bare worker token for `prism-worker --token-file`.
 * Comparison is constant-time in the token's length.
 */
#ifndef PRISM_AUTH_H
#define PRISM_AUTH_H
#include <stddef.h>

#define AUTH_TOKEN_MAX 128

typedef struct auth_tokens {
    char worker[AUTH_TOKEN_MAX + 1];
    char admin[AUTH_TOKEN_MAX + 1];
    int generated;              /* 1 when this call created the token files */
    int admin_generated;        /* 1 when --token-file had no admin_token line: random for this run only */
    char path[1100];            /* where they were read from / written to */
    char admin_path[1200];      /* with admin_generated: the 0600 file holding the run's admin token */
    unsigned open_mode;         /* the token file's permission bits (st_mode & 0777) when group or other may read
                                   or write it; 0 = private */
} auth_tokens;

enum { AUTH_NONE = 0, AUTH_WORKER = 1, AUTH_ADMIN = 2 };

/* Loads (or creates) the tokens. token_file may be NULL (then db_path decides). Returns 0, or -1 with a
 * message in err naming the file and the problem. */
int auth_load(auth_tokens *t, const char *token_file, const char *db_path, char *err, size_t errlen);

/* Level granted by an Authorization header value ("Bearer TOKEN"): AUTH_ADMIN, AUTH_WORKER or AUTH_NONE. */
int auth_check(const auth_tokens *t, const char *authorization);

/* Constant-time equality of two NUL-terminated strings (time depends only on the lengths). */
int auth_equal(const char *a, const char *b);

/* Fills out with 2*nbytes hex characters of kernel randomness. Returns 0 or -1. */
int auth_random_hex(char *out, size_t nbytes);
#endif
