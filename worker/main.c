/* main.c — the prism-worker command line: a table of subcommands.
 *
 *   prism-worker train JOB.json --out DIR [flags]     one job locally, no server (worker/train.c)
 *   prism-worker --server URL ...                     agent mode (the "agent" entry of the table)
 *   prism-worker schema --json                        the wire contracts' key rows
 *
 * Design: main() only dispatches; each command parses its own flags, turns bad input into a message on
 * stderr and exit status 2, and calls a library function (train_run, ...) that does the work. Exit
 * statuses of `train`: 0 done, 1 training failed (NaN loss, I/O, device, out of memory), 2 bad input (flags,
 * job, data, checkpoint, a device that cannot be had: no CUDA backend, no driver), 3 stopped by a signal (SIGTERM: checkpoint written first; SIGINT: at once).
 */
#include "jsonout.h"
#include "agent.h"
#include "cli.h"
#include "extrun.h"
#include "job.h"
#include "jobresult.h"
#include "point.h"
#include "train.h"
#include "version.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile int g_stop;

static void on_signal(int sig) {                /* async-signal-safe: a flag, signal(), raise() */
    if (g_stop) { signal(sig, SIG_DFL); raise(sig); return; }   /* a second signal: default action now */
    g_stop = sig == SIGTERM ? 2 : 1;
}

static int set_str(char **slot, const char *v) {
    char *d = strdup(v);
    if (!d) return -1;
    free(*slot);
    *slot = d;
    return 0;
}

static int cmd_train(int argc, char **argv) {
    struct job_config job;
    struct train_opts o;
    memset(&o, 0, sizeof o);
    char err[2048];
    int status = 2, print = 0;
    long long seed = 0;
    const char *heads = NULL, *sched = NULL, *train = NULL, *val = NULL, *init = NULL;
    /* flags write straight into the loaded job (cli_parse leaves a destination alone unless its flag is
     * given); only the fields that need a conversion go through a local first */
    cli_flag flags[] = {
        {"--out", CLI_STR, &o.out_dir, "", "output directory (required)", 0, 0, 0, 0},
        {"--device", CLI_STR, &o.device, "cpu", "cpu or a CUDA device index (0, 1, ...)", 0, 0, 0, 0},
        {"--data-root", CLI_STR, &o.data_root, "cwd", "relative data globs and model.init resolve against it", 0, 0, 0, 0},
        {"--checkpoint-dir", CLI_STR, &o.checkpoint_dir, "--out", "training-state checkpoints go here", 0, 0, 0, 0},
        {"--resume", CLI_STR, &o.resume, "", "continue from a training-state checkpoint", 0, 0, 0, 0},
        {"--threads", CLI_INT, &o.threads, "OMP_NUM_THREADS or all cores", "CPU threads", 1, 4096, 0, 0},
        {"--stop-at-step", CLI_INT, &o.stop_at_step, "off", "stop before update N (a halving rung): val loss at N, "
         "checkpoint ckpt_N.bin, exit 0; the LR schedule stays the full run's, so --resume ckpt_N.bin continues it "
         "exactly", 1, 1000000000, 0, 0},
        {"--quiet", CLI_BOOL, &o.quiet, "off", "no progress output", 0, 0, 0, 0},
        {"--print-job", CLI_BOOL, &print, "off", "print the effective job (after overrides) as JSON and exit", 0, 0, 0, 0},
        /* overrides of the job's fields: the default is the job file's value */
        {"--steps", CLI_INT, &job.train.steps, "job", "train.steps", 1, 1000000000, 0, 0},
        {"--heads", CLI_STR, &heads, "job", "model.heads: 3,3,6,6 or 3x2,6x2 or 12×6 (sets model.n_layer too)", 0, 0, 0, 0},
        {"--batch-size", CLI_INT, &job.train.batch_size, "job", "train.batch_size", 1, 65536, 0, 0},
        {"--seq-len", CLI_INT, &job.train.seq_len, "job", "train.seq_len", 1, 1 << 20, 0, 0},
        {"--grad-accum", CLI_INT, &job.train.grad_accum, "job", "train.grad_accum", 1, 65536, 0, 0},
        {"--lr", CLI_DOUBLE, &job.train.lr, "job", "train.lr", 0, 0, 0, 0},
        {"--lr-schedule", CLI_STR, &sched, "job", "train.lr_schedule: cosine or constant", 0, 0, 0, 0},
        {"--warmup-steps", CLI_INT, &job.train.warmup_steps, "job", "train.warmup_steps", 0, 1000000000, 0, 0},
        {"--seed", CLI_INT64, &seed, "job", "train.seed", 0, 2147483647, 0, 0},
        {"--shuffle", CLI_INT, &job.train.shuffle, "job", "train.shuffle", 0, 1, 0, 0},
        {"--weight-decay", CLI_DOUBLE, &job.train.weight_decay, "job", "train.weight_decay", 0, 0, 0, 0},
        {"--grad-clip", CLI_DOUBLE, &job.train.grad_clip, "job", "train.grad_clip", 0, 0, 0, 0},
        {"--eval-every", CLI_INT, &job.eval.every, "job", "eval.every", 0, 1000000000, 0, 0},
        {"--eval-batches", CLI_INT, &job.eval.batches, "job", "eval.batches", 1, 1000000, 0, 0},
        {"--attn-distance", CLI_BOOL, &job.eval.attn_distance, "job", "eval.attn_distance: measure D_l at the end", 0, 0, 0, 0},
        {"--checkpoint-every", CLI_INT, &job.train.checkpoint_every, "job", "train.checkpoint_every", 0, 1000000000, 0, 0},
        {"--train", CLI_STR, &train, "job", "data.train glob", 0, 0, 0, 0},
        {"--val", CLI_STR, &val, "job", "data.val glob", 0, 0, 0, 0},
        {"--init", CLI_STR, &init, "job", "model.init: start from this model file", 0, 0, 0, 0},
        {0}};
    cli_cmd cmd = {"train", "JOB.json --out DIR [flags]",
                   "Trains one job locally and writes DIR/metrics.jsonl, DIR/result.json, DIR/model.bin.\n"
                   "Exit status: 0 done, 1 training failed, 2 bad input, 3 stopped by a signal (SIGTERM checkpoints "
                   "first).", flags, "prism-worker"};
    job_init(&job);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) { cli_usage(&cmd, stdout); return 0; }
    if (argc < 2 || argv[1][0] == '-') {
        cli_cmd_error(&cmd, "the first argument must be the job file (JOB.json)");
        cli_usage(&cmd, stderr);
        return 2;
    }
    const char *job_path = argv[1];
    if (job_load_file(job_path, &job, err, sizeof err)) { fprintf(stderr, "prism-worker train: %s\n", err); return 2; }
    char *pos[1];
    int npos = 0, rc = cli_parse(&cmd, argc - 1, argv + 1, pos, 0, &npos);
    if (rc != CLI_OK) { status = rc == CLI_HELP ? 0 : 2; goto out; }
    if (cli_find(&cmd, "--heads")->seen) {
        int n = job_parse_heads(heads, job.model.heads, JOB_MAX_LAYERS, err, sizeof err);
        if (n < 0) { fprintf(stderr, "prism-worker train: --%s\n", err); goto out; }
        for (int l = n; l < JOB_MAX_LAYERS; l++) job.model.heads[l] = 0;
        job.model.n_layer = n;
    }
    if (cli_find(&cmd, "--seed")->seen) job.train.seed = (uint64_t)seed;
    if (sched) snprintf(job.train.lr_schedule, sizeof job.train.lr_schedule, "%s", sched);
    if ((train && set_str(&job.data.train, train)) || (val && set_str(&job.data.val, val)) ||
        (init && set_str(&job.model.init, init))) { fprintf(stderr, "prism-worker train: out of memory\n"); goto out; }
    if (job_validate(&job, err, sizeof err)) { fprintf(stderr, "prism-worker train: %s (after flags)\n", err); goto out; }
    if (print) {
        json_t *j = job_to_json(&job);
        char *s = j ? json_dumps(j, JSON_INDENT(2) | JSONOUT_FLAGS) : NULL;
        if (s) printf("%s\n", s);
        free(s);
        json_decref(j);
        status = s ? 0 : 1;
        goto out;
    }
    if (!o.out_dir) { fprintf(stderr, "prism-worker train: --out DIR is required\n"); goto out; }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct train_result res;
    o.stop = &g_stop;
    o.err = err;
    o.errlen = sizeof err;
    o.result = &res;
    rc = train_run(&job, &o);
    if (rc == 0) {
        fprintf(stderr, "done: %d steps, val loss %.4f, %.0f tok/s, %.1f s; outputs in %s\n", res.steps_done,
                res.val_loss, res.tok_per_s, res.wall_s, o.out_dir);
        status = 0;
    } else {
        fprintf(stderr, "\nprism-worker train: %s: %s\n", train_strerror(rc), err);
        status = rc == TRAIN_EINVAL || rc == TRAIN_EDATA || rc == TRAIN_ECHECKPOINT || rc == TRAIN_EBACKEND ? 2
               : rc == TRAIN_ECANCELLED || rc == TRAIN_EPREEMPTED ? 3 : 1;
    }
out:
    job_release(&job);
    return status;
}

/* Agent mode: `prism-worker --server URL --token-file F [flags]` (main() sends every argv with --server here);
 * parses into agent_opts and runs agent_run() (worker/agent.h). */
static int cmd_agent(int argc, char **argv) {
    agent_opts o;
    agent_opts_default(&o);
    const char *progress = "auto";
    cli_strs trainers = { {0}, 0 };
    cli_flag flags[] = {
        {"--server", CLI_STR, &o.server, "", "orchestrator base URL (required)", 0, 0, 0, 0},
        {"--token-file", CLI_STR, &o.token_file, "", "worker token: a bare line or worker_token=HEX (required; the "
         "server writes it to <db>.worker-token)", 0, 0, 0, 0},
        {"--devices", CLI_STR, &o.devices, "cpu", "cpu, or CUDA indices 0,1,... (one job per device at a time)", 0, 0, 0, 0},
        {"--work-dir", CLI_STR, &o.work_dir, "prism-work", "per-job outputs in DIR/job-ID-aATTEMPT/", 0, 0, 0, 0},
        {"--checkpoint-dir", CLI_STR, &o.checkpoint_dir, "WORK/checkpoints", "training-state checkpoints (share it "
         "across boxes to resume anywhere)", 0, 0, 0, 0},
        {"--name", CLI_STR, &o.name, "HOSTNAME-PID", "worker name", 0, 0, 0, 0},
        {"--data-root", CLI_STR, &o.data_root, "working directory", "relative data paths in jobs resolve here; a "
         "job's data paths must stay inside it (no \"..\", no absolute path elsewhere)", 0, 0, 0, 0},
        {"--allow-data-outside-root", CLI_BOOL, &o.data_anywhere, "off", "let jobs read data anywhere this user can "
         "(trusted servers only)", 0, 0, 0, 0},
        {"--poll", CLI_DOUBLE, &o.poll_s, "5", "seconds between lease attempts when nothing is queued", 0.01, 1e9, 0, 0},
        {"--heartbeat", CLI_DOUBLE, &o.heartbeat_s, "the server's heartbeat_every_s", "heartbeat period in seconds",
         0.05, 1e9, 0, 0},
        {"--flush", CLI_DOUBLE, &o.flush_s, "1", "metrics are sent at least every S seconds", 0.05, 1e9, 0, 0},
        {"--idle-exit", CLI_DOUBLE, &o.idle_exit_s, "0 = never", "exit once nothing was leasable for S seconds", 0,
         1e12, 0, 0},
        {"--max-jobs", CLI_INT, &o.max_jobs, "0 = no limit", "exit after N jobs per device, failed ones included", 0,
         2147483647, 0, 0},
        {"--fail-limit", CLI_INT, &o.fail_limit, "3", "stop leasing and exit 1 after N jobs in a row failed with the same "
         "local error (bad data, bad checkpoint, a job it cannot read; not a NaN loss): a broken box fails N jobs, not "
         "the whole queue (0 = never)", 0, 1000000, 0, 0},
        {"--trainer", CLI_STRS, &trainers, "none", "NAME=COMMAND: jobs of \"trainer\": \"NAME\" run COMMAND (repeatable; "
         "split into words without a shell: quote with '...' or \"...\", backslash escapes; docs/TRAINERS.md)", 0, 0, 0, 0},
        {"--trainer-timeout", CLI_DOUBLE, &o.trainer_timeout_s, "600", "fail a trainer's job after S seconds without a "
         "line on its fd 3", 1, 1e9, 0, 0},
        {"--trainer-kill-grace", CLI_DOUBLE, &o.trainer_grace_s, "30", "seconds from SIGTERM (cancel, stop) to SIGKILL of "
         "a trainer's process group", 0.1, 1e6, 0, 0},
        {"--devices-per-job", CLI_INT, &o.devices_per_job, "1", "devices one job gets (slots = devices / N); N > 1 only "
         "for --trainer jobs: the built-in engine trains on one device", 1, 64, 0, 0},
        {"--progress", CLI_CHOICE, &progress, "auto", "live lines per device (tty), or one key=value line per report "
         "(log)", 0, 0, "auto|tty|log", 0},
        {0}};
    cli_cmd cmd = {"", "--server http://HOST:8080 --token-file F [flags]",
                   "Registers with the orchestrator, then on every device loops: lease a job, train it, report.\n"
                   "SIGTERM/SIGINT: finish the step, checkpoint, report, exit (a second one exits at once).\n"
                   "Exit status: 0 stopped, 1 registration refused, no usable device, or --fail-limit failures in a\n"
                   "row (or the server stopped leasing to it), 2 bad flags, a --server that is not a prism-sweep server\n"
                   "or speaks another scheme (no retry), or the token refused after registration (401/403: jobs in\n"
                   "hand are checkpointed, not reported). Retried: refused connections, timeouts, 5xx.",
                   flags, "prism-worker"};
    char *pos[1];
    int npos, rc = cli_parse(&cmd, argc, argv, pos, 0, &npos);
    if (rc != CLI_OK) return rc == CLI_HELP ? 0 : 2;
    o.progress = strcmp(progress, "tty") == 0 ? 1 : strcmp(progress, "log") == 0 ? 0 : -1;
    o.trainers = trainers.v;
    o.ntrainers = trainers.n;
    return agent_run(&o);
}

/* prism-worker schema --json: the wire contracts' rows (common/job.c, common/point.c, common/jobresult.c,
 * worker/extrun_line.c), what the Python trainer and the docs are tested against (tests/integration/test_schema.sh). */
static int cmd_schema(int argc, char **argv) {
    int as_json = 0;
    cli_flag flags[] = {
        {"--json", CLI_BOOL, &as_json, "off", "print the rows as one JSON object (required: the only format)", 0, 0, 0, 0},
        {0}};
    cli_cmd cmd = {"schema", "--json",
                   "Prints every key of the job, the metrics point, the result and the trainer protocol's events as the\n"
                   "worker checks them: {\"job\": [...], \"point\": [...], \"result\": [...], \"events\": {...},\n"
                   "\"result_reserved\": [...]} (kinds, bounds, defaults, required keys).",
                   flags, "prism-worker"};
    char *pos[1];
    int npos, rc = cli_parse(&cmd, argc, argv, pos, 0, &npos);
    if (rc != CLI_OK) return rc == CLI_HELP ? 0 : 2;
    if (!as_json) { cli_cmd_error(&cmd, "--json is required (the rows print as JSON only)"); return 2; }
    json_t *o = extrun_schema_json();
    if (!o || json_object_set_new(o, "job", job_schema_json()) < 0 || json_object_set_new(o, "point", point_schema_json()) < 0 ||
        json_object_set_new(o, "result", jobresult_schema_json()) < 0) {
        json_decref(o);
        fprintf(stderr, "prism-worker schema: out of memory\n");
        return 1;
    }
    int bad = json_dumpf(o, stdout, JSON_INDENT(1) | JSON_SORT_KEYS | JSONOUT_FLAGS) < 0 || printf("\n") < 0;
    json_decref(o);
    return bad ? 1 : 0;
}

static int cmd_help(int argc, char **argv);

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);    /* argv[0] is the command name */
    const char *summary;
};

static const struct command commands[] = {
    {"train", cmd_train, "train one job locally: prism-worker train JOB.json --out DIR"},
    /* AGENT MODE (worker/agent.c): main() sends every invocation whose arguments contain --server here. */
    {"agent", cmd_agent, "lease and train jobs from a server: prism-worker [agent] --server URL --token-file F ..."},
    {"schema", cmd_schema, "the job, point, result and trainer-event keys: prism-worker schema --json"},
    {"help", cmd_help, "this list"},
};
#define NCOMMANDS (int)(sizeof commands / sizeof commands[0])

static int cmd_help(int argc, char **argv) {
    printf("usage: prism-worker COMMAND [args]    (COMMAND --help for its flags; --version: the build's version)\n");
    for (int i = 0; i < NCOMMANDS; i++) printf("  %-8s %s\n", commands[i].name, commands[i].summary);
    return 0;
}

static const struct command *find_command(const char *name) {
    for (int i = 0; i < NCOMMANDS; i++) if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

int main(int argc, char **argv) {
    /* OpenMP threads that spin while waiting (libgomp's default) collapse when the cores are shared with
     * other processes (several workers on one box, CI). libgomp reads OMP_WAIT_POLICY before main(), so
     * set it and start again once; an explicit setting in the environment wins. */
    if (!getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
        execv("/proc/self/exe", argv);               /* only returns on failure: carry on as we are */
    }
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) return prism_version_print("prism-worker");
    /* `prism-worker agent FLAGS` and `prism-worker --server URL FLAGS` are the same command */
    if (argc >= 2 && strcmp(argv[1], "agent") == 0) return cmd_agent(argc - 1, argv + 1);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--server") == 0 || strncmp(argv[i], "--server=", 9) == 0)
            return cmd_agent(argc, argv);          /* the agent parses the whole argv */
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cmd_help(argc, argv);
        return argc < 2 ? 2 : 0;
    }
    const struct command *c = find_command(argv[1]);
    if (!c) { fprintf(stderr, "prism-worker: unknown command \"%s\" (try --help)\n", argv[1]); return 2; }
    return c->fn(argc - 1, argv + 1);
}
