/* test_cli_flags.c — the one flag parser (common/cli.h) that all three programs use: counts with suffixes,
 * ranges, the program's own name in messages and --help, positional arguments. */
#include "harness.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs cli_parse with stderr sent to a file; returns the status and leaves what was printed in msg. */
static int parse(cli_cmd *cmd, int argc, char **argv, char **pos, int maxpos, int *npos, char *msg, size_t n) {
    char path[4200];
    snprintf(path, sizeof path, "%s/stderr", harness_tmpdir());
    fflush(stderr);
    int saved = dup(2);
    FILE *f = freopen(path, "w", stderr);
    int rc = cli_parse(cmd, argc, argv, pos, maxpos, npos);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    (void)f;
    FILE *r = fopen(path, "r");
    size_t k = r ? fread(msg, 1, n - 1, r) : 0;
    msg[k] = 0;
    if (r) fclose(r);
    return rc;
}

TEST(counts_take_k_M_G_and_check_the_range) {
    long long tokens = -1;
    cli_flag flags[] = {{"--tokens", CLI_COUNT, &tokens, "", "tokens", 10000, 4000000000LL, 0, 0}, {0}};
    cli_cmd cmd = {"synth", "--tokens N", "s", flags, "prism-data"};
    char *pos[1], msg[512];
    int np;
    char *a1[] = {"synth", "--tokens", "2M"};
    ASSERT_EQ_INT(CLI_OK, parse(&cmd, 3, a1, pos, 0, &np, msg, sizeof msg));
    ASSERT_EQ_INT(2000000, tokens);
    char *a2[] = {"synth", "--tokens=50k"};
    ASSERT_EQ_INT(CLI_OK, parse(&cmd, 2, a2, pos, 0, &np, msg, sizeof msg));
    ASSERT_EQ_INT(50000, tokens);
    char *a3[] = {"synth", "--tokens", "5G"};
    ASSERT_EQ_INT(CLI_ERR, parse(&cmd, 3, a3, pos, 0, &np, msg, sizeof msg));
    ASSERT_CONTAINS(msg, "prism-data synth: --tokens must be an integer (k, M, G suffixes allowed) in 10000..4000000000");
    char *a4[] = {"synth", "--tokens", "2Mb"};
    ASSERT_EQ_INT(CLI_ERR, parse(&cmd, 3, a4, pos, 0, &np, msg, sizeof msg));
    char *a5[] = {"synth", "--tokens", "9223372036854775807k"};
    ASSERT_EQ_INT(CLI_ERR, parse(&cmd, 3, a5, pos, 0, &np, msg, sizeof msg));
    ASSERT_EQ_INT(50000, tokens);                       /* a refused value leaves the last good one */
}

TEST(messages_and_help_name_the_program) {
    int quiet = 0;
    const char *out = NULL;
    cli_flag flags[] = {{"--out", CLI_STR, &out, "", "output directory", 0, 0, 0, 0},
                        {"--quiet", CLI_BOOL, &quiet, "off", "no progress", 0, 0, 0, 0}, {0}};
    cli_cmd cmd = {"train", "JOB.json --out DIR", "Trains one job.", flags, "prism-worker"};
    char *pos[2], msg[512];
    int np;
    char *a1[] = {"train", "--bogus"};
    ASSERT_EQ_INT(CLI_ERR, parse(&cmd, 2, a1, pos, 0, &np, msg, sizeof msg));
    ASSERT_STREQ("prism-worker train: unknown flag --bogus (see prism-worker train --help)\n", msg);
    char *a2[] = {"train", "--out", "d", "--quiet", "x", "y"};
    ASSERT_EQ_INT(CLI_OK, parse(&cmd, 6, a2, pos, 2, &np, msg, sizeof msg));
    ASSERT_EQ_INT(2, np);
    ASSERT_STREQ("y", pos[1]);
    ASSERT_EQ_INT(1, quiet);
    ASSERT_TRUE(cli_find(&cmd, "--out")->seen);
    char *a3[] = {"train", "a", "b", "c"};
    ASSERT_EQ_INT(CLI_ERR, parse(&cmd, 4, a3, pos, 2, &np, msg, sizeof msg));
    ASSERT_CONTAINS(msg, "unexpected extra argument \"c\" (usage: prism-worker train JOB.json --out DIR)");
    cmd.prog = NULL;                                     /* prism-sweep's commands leave it unset */
    ASSERT_EQ_INT(CLI_ERR, parse(&cmd, 2, a1, pos, 0, &np, msg, sizeof msg));
    ASSERT_STREQ("prism-sweep train: unknown flag --bogus (see prism-sweep train --help)\n", msg);
}
