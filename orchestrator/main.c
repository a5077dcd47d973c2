/* main.c — `prism-sweep`: the orchestrator's command line. One dispatch table maps a subcommand to its
 * cmd_X(argc, argv) (commands.h); each command parses its own flags (cli.h) and returns the exit status.
 * `prism-sweep --help` lists the commands, `prism-sweep CMD --help` a command's flags with their defaults.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "version.h"

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    { "enumerate", cmd_enumerate, "list, count (--count) or sample (--sample N) the valid head schedules" },
    { "validate", cmd_validate, "check one schedule against the rules; name each broken rule and where" },
    { "create", cmd_create, "validate a sweep spec and create its sweep, schedules and jobs (idempotent)" },
    { "status", cmd_status, "jobs per state (queued, leased, done, failed, cancelled) of one or all sweeps" },
    /* ---- orchestrator daemon --------------------------------------------------------------------- */
    { "serve", cmd_serve, "run the HTTP/JSON orchestrator (leases, metrics, results, the page)" },
    { "leaderboard", cmd_leaderboard, "rank a sweep's schedules against the uniform baseline" },
    { "power", cmd_power, "what a spec's sweep can detect before it runs (smallest significant delta, seeds)" },
    { "export", cmd_export, "write a sweep's metrics and results as csv, jsonl or TensorBoard files (--out DIR)" },
    { "launch", cmd_launch, "start a fleet of workers on a cluster: launch slurm prints (or submits) an array job" },
    /* ---- the admin API of a running server (cmd_admin.c) ------------------------------------------ */
    { "requeue", cmd_requeue, "put failed jobs back in the queue (--state failed [--error-like T]), or --job ID" },
    { "cancel", cmd_cancel, "cancel a queued or leased job (--job ID)" },
    { "pause", cmd_pause, "stop leasing a sweep's jobs" },
    { "resume", cmd_resume, "lease a paused sweep's jobs again" },
    { "priority", cmd_priority, "set a sweep's (or with --job, a job's) priority" },
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void usage(FILE *f) {
    fprintf(f, "usage: prism-sweep COMMAND [flags] [args]\n\n"
               "Find the best per-layer attention-head schedule of a Prism transformer: enumerate the valid\n"
               "schedules, turn a sweep spec into durable jobs, serve them to workers, rank the results.\n\n"
               "commands:\n");
    for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`prism-sweep COMMAND --help` lists a command's flags with their defaults; `prism-sweep --version`\n"
               "prints the build's version (git describe).\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) return prism_version_print("prism-sweep");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "prism-sweep: unknown command \"%s\"; the commands are:", argv[1]);
    for (int i = 0; i < N_COMMANDS; i++) fprintf(stderr, " %s", commands[i].name);
    fprintf(stderr, " (see prism-sweep --help)\n");
    return 2;
}
