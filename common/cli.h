/* cli.h — the one flag parser of all three programs (`prism-sweep`, `prism-worker`, `prism-data`), driven by
 * one table per command so that parsing, range checks and `--help` (every flag with its default) can never
 * disagree. A command of another program sets cli_cmd.prog ("prism-worker"); NULL means "prism-sweep".
 *
 *   static int L = 12; static const char *fmt = "text";
 *   cli_flag flags[] = {
 *       { "--L", CLI_INT, &L, "12", "layers", 1, 4096 },
 *       { "--format", CLI_CHOICE, &fmt, "text", "output format", 0, 0, "text|json|csv" },
 *       { 0 } };
 *   int rc = cli_parse(&(cli_cmd){ "enumerate", "[flags]", "List every valid schedule.", flags }, argc, argv,
 *                      pos, 8, &npos);
 *   if (rc != CLI_OK) return rc == CLI_HELP ? 0 : 2;
 *
 * Accepts "--flag value" and "--flag=value"; "--" ends flags. A CLI_BOOL flag takes no value. Numbers are
 * checked against [min, max] (when min < max) and a bad one prints
 * "prism-sweep enumerate: --L must be an integer in 1..4096 (got "x")" on stderr.
 */
#ifndef PRISM_CLI_H
#define PRISM_CLI_H
#include <stdio.h>

/* CLI_COUNT: a long long that also takes the suffixes k, M, G (10^3, 10^6, 10^9): "--tokens 2M".
 * CLI_STRS: a repeatable string flag; dst is a cli_strs, each occurrence appended in order (more than
 * CLI_STRS_MAX is an error). */
typedef enum { CLI_END = 0, CLI_INT, CLI_INT64, CLI_DOUBLE, CLI_STR, CLI_BOOL, CLI_CHOICE, CLI_COUNT, CLI_STRS } cli_type;

#define CLI_STRS_MAX 32
typedef struct cli_strs {
    const char *v[CLI_STRS_MAX];   /* borrowed from argv */
    int n;
} cli_strs;

typedef struct cli_flag {
    const char *name;      /* "--min-block" */
    cli_type type;
    void *dst;             /* int* (INT, BOOL), long long* (INT64, COUNT), double*, const char** (STR, CHOICE) */
    const char *def;       /* the default as --help shows it */
    const char *help;
    double min, max;       /* valid range when min < max */
    const char *choices;   /* CLI_CHOICE: "text|json|csv" */
    int seen;              /* set by cli_parse when the flag was given */
} cli_flag;

typedef struct cli_cmd {
    const char *name;      /* "enumerate"; "" for a program's only command (prism-worker --server ...) */
    const char *synopsis;  /* "[flags]" or "SPEC.json --db FILE" */
    const char *summary;   /* one paragraph */
    cli_flag *flags;       /* terminated by an entry with name NULL */
    const char *prog;      /* "prism-worker"; NULL: "prism-sweep" */
} cli_cmd;

enum { CLI_OK = 0, CLI_HELP = 1, CLI_ERR = 2 };

/* Parses argv[1..argc) (argv[0] is the command name). Positional arguments go to pos[0..maxpos) and *npos;
 * more than maxpos is an error. Returns CLI_OK, CLI_HELP (usage printed to stdout), or CLI_ERR (stderr). */
int cli_parse(cli_cmd *cmd, int argc, char **argv, char **pos, int maxpos, int *npos);
void cli_usage(const cli_cmd *cmd, FILE *f);
/* The flag entry named name (NULL if none) — e.g. to ask whether it was given. */
cli_flag *cli_find(cli_cmd *cmd, const char *name);
/* "prism-sweep CMD: " + message on stderr; returns 2 (the exit status for bad usage). */
int cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with the command's own program name: "prism-data synth: " + message. Returns 2. */
int cli_cmd_error(const cli_cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
