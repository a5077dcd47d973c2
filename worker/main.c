/* main.c — the prism-worker command line: a table of subcommands.
 *
 *   prism-worker train JOB.json --out DIR [flags]     one job locally, no server (worker/train.c)
 *   prism-worker --server URL ...                     agent mode (the "agent" entry of the table)
 *
 * Design: main() only dispatches; each command parses its own flags, turns bad input into a message on
 * stderr and exit status 2, and calls a library function (train_run, ...) that does the work. Exit
 * statuses of `train`: 0 done, 1 training failed (NaN loss, I/O, device, out of memory), 2 bad input (flags,
 * job, data, checkpoint), 3 stopped by a signal (SIGTERM: checkpoint written first; SIGINT: at once).
 */
#include "agent.h"
#include "job.h"
#include "train.h"
#include <getopt.h>
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

static void train_usage(FILE *f) {
    fprintf(f,
        "usage: prism-worker train JOB.json --out DIR [flags]\n"
        "Trains one job locally and writes DIR/metrics.jsonl, DIR/result.json, DIR/model.bin.\n"
        "  --out DIR               output directory (required)\n"
        "  --device D              cpu (default) or a CUDA device index (0, 1, ...)\n"
        "  --data-root DIR         relative data globs and model.init resolve against DIR (default: cwd)\n"
        "  --checkpoint-dir DIR    training-state checkpoints go here (default: --out)\n"
        "  --resume FILE           continue from a training-state checkpoint\n"
        "  --threads N             CPU threads (default: OMP_NUM_THREADS or all cores)\n"
        "  --stop-at-step N        stop before update N (a halving rung): val loss at N, checkpoint ckpt_N.bin, exit 0;\n"
        "                          the LR schedule stays the full run's, so --resume ckpt_N.bin continues it exactly\n"
        "  --quiet                 no progress output\n"
        "  --print-job             print the effective job (after overrides) as JSON and exit\n"
        "Overrides of job fields:\n"
        "  --steps N  --heads 3,3,6,6 (or 3x2,6x2; sets model.n_layer too)  --batch-size N  --seq-len N\n"
        "  --grad-accum N  --lr X  --lr-schedule cosine|constant  --warmup-steps N  --seed N  --shuffle 0|1\n"
        "  --weight-decay X  --grad-clip X  --eval-every N  --eval-batches N  --attn-distance\n"
        "  --checkpoint-every N  --train GLOB  --val GLOB  --init FILE\n"
        "Exit status: 0 done, 1 training failed, 2 bad input, 3 stopped by a signal (SIGTERM checkpoints first).\n");
}

static int parse_int(const char *flag, const char *s, long lo, long hi, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) {
        fprintf(stderr, "prism-worker train: %s: expected an integer in [%ld, %ld], got \"%s\"\n", flag, lo, hi, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_num(const char *flag, const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end) { fprintf(stderr, "prism-worker train: %s: expected a number, got \"%s\"\n", flag, s); return -1; }
    *out = v;
    return 0;
}

static int set_str(char **slot, const char *v) {
    char *d = strdup(v);
    if (!d) return -1;
    free(*slot);
    *slot = d;
    return 0;
}

enum { O_OUT = 256, O_DEVICE, O_DATA_ROOT, O_CKPT_DIR, O_RESUME, O_QUIET, O_PRINT, O_STEPS, O_HEADS, O_BATCH,
       O_SEQ, O_ACCUM, O_LR, O_SCHED, O_WARMUP, O_SEED, O_SHUFFLE, O_WD, O_CLIP, O_EVERY, O_EBATCHES, O_ATTN,
       O_CKEVERY, O_TRAIN, O_VAL, O_INIT, O_HELP, O_THREADS, O_STOP_AT };

static int cmd_train(int argc, char **argv) {
    static const struct option longopts[] = {
        {"out", 1, 0, O_OUT}, {"device", 1, 0, O_DEVICE}, {"data-root", 1, 0, O_DATA_ROOT},
        {"checkpoint-dir", 1, 0, O_CKPT_DIR}, {"resume", 1, 0, O_RESUME}, {"quiet", 0, 0, O_QUIET},
        {"print-job", 0, 0, O_PRINT}, {"steps", 1, 0, O_STEPS}, {"heads", 1, 0, O_HEADS},
        {"batch-size", 1, 0, O_BATCH}, {"seq-len", 1, 0, O_SEQ}, {"grad-accum", 1, 0, O_ACCUM},
        {"lr", 1, 0, O_LR}, {"lr-schedule", 1, 0, O_SCHED}, {"warmup-steps", 1, 0, O_WARMUP},
        {"seed", 1, 0, O_SEED}, {"shuffle", 1, 0, O_SHUFFLE}, {"weight-decay", 1, 0, O_WD},
        {"grad-clip", 1, 0, O_CLIP}, {"eval-every", 1, 0, O_EVERY}, {"eval-batches", 1, 0, O_EBATCHES},
        {"attn-distance", 0, 0, O_ATTN}, {"checkpoint-every", 1, 0, O_CKEVERY}, {"train", 1, 0, O_TRAIN},
        {"val", 1, 0, O_VAL}, {"init", 1, 0, O_INIT}, {"help", 0, 0, O_HELP}, {"threads", 1, 0, O_THREADS},
        {"stop-at-step", 1, 0, O_STOP_AT}, {0, 0, 0, 0}};
    struct job_config job;
    struct train_opts o;
    memset(&o, 0, sizeof o);
    char err[2048];
    int status = 2, print = 0, x = 0;
    job_init(&job);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) { train_usage(stdout); return 0; }
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "prism-worker train: the first argument must be the job file (JOB.json)\n");
        train_usage(stderr);
        return 2;
    }
    const char *job_path = argv[1];
    if (job_load_file(job_path, &job, err, sizeof err)) { fprintf(stderr, "prism-worker train: %s\n", err); return 2; }
    optind = 2;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        const char *a = optarg;
        int bad = 0;
        switch (c) {
        case O_OUT: o.out_dir = a; break;
        case O_DEVICE: o.device = a; break;
        case O_DATA_ROOT: o.data_root = a; break;
        case O_CKPT_DIR: o.checkpoint_dir = a; break;
        case O_RESUME: o.resume = a; break;
        case O_QUIET: o.quiet = 1; break;
        case O_THREADS: bad = parse_int("--threads", a, 1, 4096, &o.threads); break;
        case O_STOP_AT: bad = parse_int("--stop-at-step", a, 1, 1000000000, &o.stop_at_step); break;
        case O_PRINT: print = 1; break;
        case O_STEPS: bad = parse_int("--steps", a, 1, 1000000000, &job.train.steps); break;
        case O_HEADS: {
            int n = job_parse_heads(a, job.model.heads, JOB_MAX_LAYERS, err, sizeof err);
            if (n < 0) { fprintf(stderr, "prism-worker train: --%s\n", err); bad = 1; break; }
            for (int l = n; l < JOB_MAX_LAYERS; l++) job.model.heads[l] = 0;
            job.model.n_layer = n;
            break;
        }
        case O_BATCH: bad = parse_int("--batch-size", a, 1, 65536, &job.train.batch_size); break;
        case O_SEQ: bad = parse_int("--seq-len", a, 1, 1 << 20, &job.train.seq_len); break;
        case O_ACCUM: bad = parse_int("--grad-accum", a, 1, 65536, &job.train.grad_accum); break;
        case O_LR: bad = parse_num("--lr", a, &job.train.lr); break;
        case O_SCHED: snprintf(job.train.lr_schedule, sizeof job.train.lr_schedule, "%s", a); break;
        case O_WARMUP: bad = parse_int("--warmup-steps", a, 0, 1000000000, &job.train.warmup_steps); break;
        case O_SEED: bad = parse_int("--seed", a, 0, 2147483647, &x); job.train.seed = (uint64_t)x; break;
        case O_SHUFFLE: bad = parse_int("--shuffle", a, 0, 1, &job.train.shuffle); break;
        case O_WD: bad = parse_num("--weight-decay", a, &job.train.weight_decay); break;
        case O_CLIP: bad = parse_num("--grad-clip", a, &job.train.grad_clip); break;
        case O_EVERY: bad = parse_int("--eval-every", a, 0, 1000000000, &job.eval.every); break;
        case O_EBATCHES: bad = parse_int("--eval-batches", a, 1, 1000000, &job.eval.batches); break;
        case O_ATTN: job.eval.attn_distance = 1; break;
        case O_CKEVERY: bad = parse_int("--checkpoint-every", a, 0, 1000000000, &job.train.checkpoint_every); break;
        case O_TRAIN: bad = set_str(&job.data.train, a); break;
        case O_VAL: bad = set_str(&job.data.val, a); break;
        case O_INIT: bad = set_str(&job.model.init, a); break;
        case O_HELP: train_usage(stdout); status = 0; goto out;
        default:
            fprintf(stderr, "prism-worker train: unknown or incomplete flag \"%s\" (see --help)\n", argv[optind - 1]);
            bad = 1;
        }
        if (bad) goto out;
    }
    if (optind < argc) { fprintf(stderr, "prism-worker train: unexpected argument \"%s\"\n", argv[optind]); goto out; }
    if (job_validate(&job, err, sizeof err)) { fprintf(stderr, "prism-worker train: %s (after flags)\n", err); goto out; }
    if (print) {
        json_t *j = job_to_json(&job);
        char *s = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
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
    int rc = train_run(&job, &o);
    if (rc == 0 && res.paused_at > 0) {
        fprintf(stderr, "paused at step %d (--stop-at-step): val loss %.4f; checkpoint %s\n", res.paused_at, res.val_loss,
                res.checkpoint);
        status = 0;
    } else if (rc == 0) {
        fprintf(stderr, "done: %d steps, val loss %.4f, %.0f tok/s, %.1f s; outputs in %s\n", res.steps_done,
                res.val_loss, res.tok_per_s, res.wall_s, o.out_dir);
        status = 0;
    } else {
        fprintf(stderr, "\nprism-worker train: %s: %s\n", train_strerror(rc), err);
        status = rc == TRAIN_EINVAL || rc == TRAIN_EDATA || rc == TRAIN_ECHECKPOINT ? 2
               : rc == TRAIN_ECANCELLED || rc == TRAIN_EPREEMPTED ? 3 : 1;
    }
out:
    job_release(&job);
    return status;
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
    {"agent", cmd_agent, "lease and train jobs from a server: prism-worker --server URL --token-file F ..."},
    {"help", cmd_help, "this list"},
};
#define NCOMMANDS (int)(sizeof commands / sizeof commands[0])

static int cmd_help(int argc, char **argv) {
    printf("usage: prism-worker COMMAND [args]    (COMMAND --help for its flags)\n");
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
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--server") == 0 || strncmp(argv[i], "--server=", 9) == 0) {
            const struct command *a = find_command("agent");
            if (!a) { fprintf(stderr, "prism-worker: agent mode (--server) is not built into this binary\n"); return 2; }
            return a->fn(argc, argv);          /* the agent parses the whole argv */
        }
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cmd_help(argc, argv);
        return argc < 2 ? 2 : 0;
    }
    const struct command *c = find_command(argv[1]);
    if (!c) { fprintf(stderr, "prism-worker: unknown command \"%s\" (try --help)\n", argv[1]); return 2; }
    return c->fn(argc - 1, argv + 1);
}
