/* commands.h — the `prism-sweep` subcommands. Each takes the arguments after its name (argv[0] is the command
 * name) and returns the process exit status, one per kind of error across every command (README "Exit status"):
 *   0  done;
 *   1  a negative answer (validate: the schedule is invalid) or a failure at run time that is not the input's:
 *      the database could not be read (I/O error, locked past the busy timeout), the server could not be reached
 *      or answered 5xx;
 *   2  bad usage or bad input (the message on stderr names the flag or file and the fix): flags, a --db that does
 *      not exist, a file that is not a prism-sweep database or has another schema version, no such sweep or job,
 *      a request the server refused (4xx: a token refused, a job in the wrong state).
 * `prism-sweep CMD --help` prints the command's flags with their defaults and returns 0.
 * main.c dispatches through a table { "enumerate", cmd_enumerate, "summary" }.
 */
#ifndef PRISM_COMMANDS_H
#define PRISM_COMMANDS_H

#include "store.h"

/* The exit status for a failed store call: 1 for STORE_EIO (the database could not be read), else 2. */
static inline int cmd_store_exit(int store_rc) { return store_rc == STORE_EIO ? 1 : 2; }

int cmd_enumerate(int argc, char **argv);   /* cmd_enumerate.c: list / count / sample schedules */
int cmd_validate(int argc, char **argv);    /* cmd_validate.c: check one schedule against the rules */
int cmd_create(int argc, char **argv);      /* cmd_create.c: sweep spec -> sweep, schedules, jobs */
int cmd_status(int argc, char **argv);      /* cmd_status.c: jobs per state */
int cmd_power(int argc, char **argv);       /* cmd_power.c: what a sweep can detect before it runs */

/* Orchestrator daemon issue (4): implemented in their own files. */
int cmd_serve(int argc, char **argv);
int cmd_leaderboard(int argc, char **argv);   /* cmd_leaderboard.c: rank a sweep's schedules */
int cmd_export(int argc, char **argv);      /* cmd_export.c: a sweep's metrics and results as csv, jsonl or TensorBoard */
int cmd_launch(int argc, char **argv);      /* cmd_launch.c: launch slurm (deploy/slurm/prism-worker.sbatch) */

/* cmd_admin.c: the admin routes of a running server (--server URL, the admin token from DB.tokens). */
int cmd_requeue(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_priority(int argc, char **argv);
#endif
