/* commands.h — the `prism-sweep` subcommands. Each takes the arguments after its name (argv[0] is the command
 * name) and returns the process exit status: 0 success, 1 a negative answer (validate: schedule invalid;
 * command failed at run time), 2 bad usage or bad input (message on stderr names the flag and the fix).
 * `prism-sweep CMD --help` prints the command's flags with their defaults and returns 0.
 * main.c dispatches through a table { "enumerate", cmd_enumerate, "summary" }.
 */
#ifndef PRISM_COMMANDS_H
#define PRISM_COMMANDS_H

int cmd_enumerate(int argc, char **argv);   /* cmd_enumerate.c: list / count / sample schedules */
int cmd_validate(int argc, char **argv);    /* cmd_validate.c: check one schedule against the rules */
int cmd_create(int argc, char **argv);      /* cmd_create.c: sweep spec -> sweep, schedules, jobs */
int cmd_status(int argc, char **argv);      /* cmd_status.c: jobs per state */

/* Orchestrator daemon issue (4): implemented in their own files. */
int cmd_serve(int argc, char **argv);
int cmd_leaderboard(int argc, char **argv);   /* cmd_leaderboard.c: rank a sweep's schedules */
int cmd_export(int argc, char **argv);      /* cmd_export.c: a sweep's metrics and results as csv, jsonl or TensorBoard */
int cmd_launch(int argc, char **argv);      /* cmd_launch.c: launch slurm (deploy/slurm/prism-worker.sbatch) */
#endif
