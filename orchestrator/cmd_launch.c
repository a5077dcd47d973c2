/* cmd_launch.c — `prism-sweep launch slurm --server URL --token-file F --nodes N --gpus-per-node G [--partition P
 * --time T --account A --cpus-per-task C --mem M --sbatch-arg ARG... --setup LINE] [--submit]`: a fleet of workers as
 * one SLURM array job.
 *
 * Design: the batch script is deploy/slurm/prism-worker.sbatch, compiled into the binary (tools/embed_text.sh),
 * so what is printed is what the tests run. launch_render_slurm() writes it with its #SBATCH lines replaced by
 * the ones the flags ask for (array 0..N-1, one task per node, --gres=gpu:G, partition, time, account, log
 * files) and a `set --` line that hands the script its settings as flags (server, absolute token file, worker
 * binary, work directory), which the script parses exactly as it parses flags given after `sbatch SCRIPT`.
 * Without --submit the script goes to stdout; with --submit it goes to a temporary file that `sbatch --parsable`
 * reads, and stdout gets only the job id (so `JOB=$(prism-sweep launch slurm ... --submit)` works).
 * Every value that lands in the script is checked first: a bad one is exit 2 with the flag and the fix. #SBATCH
 * values are one word each (no space, quote, $, backslash or control character: nothing for a shell to expand);
 * --setup is shell code by design, so it is one line, single-quoted into the `set --` line, and the script runs it
 * with eval before the worker (nothing of it can end the quoting or add a line).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"

extern const char prism_text_prism_worker_sbatch[];   /* build/gen/deploy_embed.c */

#define LAUNCH_MAX_SBATCH_ARGS 64

typedef struct launch_slurm_opts {
    const char *server, *token_file, *partition, *time, *account, *worker, *work_dir, *log_dir, *job_name;
    const char *mem, *setup;
    int nodes, gpus_per_node, idle_exit, signal_lead, cpus_per_task;
    const char *sbatch_args[LAUNCH_MAX_SBATCH_ARGS];   /* --sbatch-arg, each an #SBATCH line as given */
    int n_sbatch_args;
    char **worker_args;               /* after `--`: passed to every task's prism-worker as given (argv's) */
    int n_worker_args;
} launch_slurm_opts;

/* Appends printf output to a growing string; returns 0 or -1 (out of memory). */
typedef struct sbuf { char *p; size_t n, cap; } sbuf;
static int sbuf_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sbuf_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0) return -1;
    if (b->n + (size_t)k + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)k;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
    return 0;
}

/* A value in single quotes for bash: ' becomes '\''. */
static int sbuf_quoted(sbuf *b, const char *s) {
    if (sbuf_printf(b, "'") < 0) return -1;
    for (const char *q = s; *q; q++)
        if (*q == '\'' ? sbuf_printf(b, "'\\''") < 0 : sbuf_printf(b, "%c", *q) < 0) return -1;
    return sbuf_printf(b, "'");
}

/* 0 when s is a SLURM time limit: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or UNLIMITED/infinite. */
static int launch_check_time(const char *s) {
    if (strcmp(s, "UNLIMITED") == 0 || strcmp(s, "unlimited") == 0 || strcmp(s, "infinite") == 0) return 0;
    const char *p = s;
    int fields = 0, dash = 0;
    if (!*p) return -1;
    for (;;) {
        if (*p < '0' || *p > '9') return -1;
        while (*p >= '0' && *p <= '9') p++;
        fields++;
        if (*p == '\0') break;
        if (*p == '-' && !dash && fields == 1) { dash = 1; fields = 0; p++; continue; }
        if (*p != ':') return -1;
        p++;
    }
    return fields <= 3 ? 0 : -1;
}

/* 0 when s can sit in an #SBATCH line as one word: no whitespace, quotes, backslashes or control characters. */
static int launch_check_word(const char *s) {
    if (!*s) return -1;
    for (const unsigned char *q = (const unsigned char *)s; *q; q++)
        if (*q <= ' ' || *q == '"' || *q == '\'' || *q == '\\' || *q == '`' || *q == '$' || *q == 127) return -1;
    return 0;
}

/* 0 when s is a SLURM memory size: digits with an optional K, M, G or T (e.g. 64G, 16000M). */
static int launch_check_mem(const char *s) {
    size_t d = strspn(s, "0123456789");
    if (d == 0) return -1;
    return s[d] == 0 || (strchr("KMGTkmgt", s[d]) && s[d + 1] == 0) ? 0 : -1;
}

/* 0 when s is one #SBATCH option: "--name" or "--name=value" (or a short "-x"), one word (launch_check_word). */
static int launch_check_sbatch_arg(const char *s) {
    if (s[0] != '-' || launch_check_word(s) < 0) return -1;
    /* the directives this command writes itself: one of each, from its own flags */
    static const char *const own[] = { "--array", "--output", "--signal", "--job-name", "--open-mode", "-a", "-o", "-J", 0 };
    for (int i = 0; own[i]; i++) {
        size_t n = strlen(own[i]);
        if (strncmp(s, own[i], n) == 0 && (s[n] == 0 || s[n] == '=')) return -2;
    }
    return 0;
}

/* The script for these options, in *out (malloc'd; the caller frees). Returns 0 or -1 (out of memory). */
static int launch_render_slurm(const launch_slurm_opts *o, char **out) {
    sbuf b = { 0 };
    const char *t = prism_text_prism_worker_sbatch;
    int ok = 1, sbatch_done = 0;
    /* the template's first line (the shebang) and its comment block up to the #SBATCH lines */
    const char *line = t;
    while (*line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
        if (strncmp(line, "#SBATCH", 7) == 0) {
            if (!sbatch_done) {
                sbatch_done = 1;
                ok &= sbuf_printf(&b, "#SBATCH --job-name=%s\n", o->job_name) == 0;
                ok &= sbuf_printf(&b, "#SBATCH --array=0-%d\n", o->nodes - 1) == 0;
                ok &= sbuf_printf(&b, "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n") == 0;
                if (o->gpus_per_node > 0) ok &= sbuf_printf(&b, "#SBATCH --gres=gpu:%d\n", o->gpus_per_node) == 0;
                if (o->partition) ok &= sbuf_printf(&b, "#SBATCH --partition=%s\n", o->partition) == 0;
                if (o->time) ok &= sbuf_printf(&b, "#SBATCH --time=%s\n", o->time) == 0;
                if (o->account) ok &= sbuf_printf(&b, "#SBATCH --account=%s\n", o->account) == 0;
                if (o->cpus_per_task > 0) ok &= sbuf_printf(&b, "#SBATCH --cpus-per-task=%d\n", o->cpus_per_task) == 0;
                if (o->mem) ok &= sbuf_printf(&b, "#SBATCH --mem=%s\n", o->mem) == 0;
                for (int i = 0; i < o->n_sbatch_args; i++)
                    ok &= sbuf_printf(&b, "#SBATCH %s\n", o->sbatch_args[i]) == 0;
                ok &= sbuf_printf(&b, "#SBATCH --signal=B:TERM@%d\n#SBATCH --requeue\n#SBATCH --open-mode=append\n",
                                  o->signal_lead) == 0;
                ok &= sbuf_printf(&b, "#SBATCH --output=%s/%s-%%A_%%a.log\n", o->log_dir, o->job_name) == 0;
                /* the settings, as the flags the script parses */
                ok &= sbuf_printf(&b, "\n# written by prism-sweep launch slurm: the script's settings\nset -- --server ") == 0;
                ok &= sbuf_quoted(&b, o->server) == 0;
                ok &= sbuf_printf(&b, " --token-file ") == 0 && sbuf_quoted(&b, o->token_file) == 0;
                ok &= sbuf_printf(&b, " --worker ") == 0 && sbuf_quoted(&b, o->worker) == 0;
                if (o->work_dir) ok &= sbuf_printf(&b, " --work-dir ") == 0 && sbuf_quoted(&b, o->work_dir) == 0;
                ok &= sbuf_printf(&b, " --idle-exit %d", o->idle_exit) == 0;
                if (o->setup) ok &= sbuf_printf(&b, " --setup ") == 0 && sbuf_quoted(&b, o->setup) == 0;
                if (o->gpus_per_node == 0) ok &= sbuf_printf(&b, " --devices cpu") == 0;
                ok &= sbuf_printf(&b, " \"$@\"") == 0;
                if (o->n_worker_args) ok &= sbuf_printf(&b, " --") == 0;   /* the script hands what follows to the worker */
                for (int i = 0; i < o->n_worker_args; i++)
                    ok &= sbuf_printf(&b, " ") == 0 && sbuf_quoted(&b, o->worker_args[i]) == 0;
                ok &= sbuf_printf(&b, "\n") == 0;
            }
        } else {
            ok &= sbuf_printf(&b, "%.*s", (int)len, line) == 0;
        }
        line += len;
    }
    if (!ok || !sbatch_done) { free(b.p); return -1; }
    *out = b.p;
    return 0;
}

/* path made absolute against the working directory (the file need not exist), in out. */
static int launch_absolute(const char *path, char *out, size_t n) {
    if (path[0] == '/') return snprintf(out, n, "%s", path) < (int)n ? 0 : -1;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return -1;
    const char *p = path;
    while (p[0] == '.' && p[1] == '/') p += 2;
    if (strcmp(p, ".") == 0 || !*p) return snprintf(out, n, "%s", cwd) < (int)n ? 0 : -1;
    return snprintf(out, n, "%s/%s", cwd, p) < (int)n ? 0 : -1;
}

/* Runs `sbatch --parsable FILE`; the job id goes to jobid. Returns 0, or -1 with the reason in err. */
static int launch_sbatch(const char *file, char *jobid, size_t n, char *err, size_t errlen) {
    int fd[2];
    if (pipe(fd) < 0) { snprintf(err, errlen, "pipe: %s", strerror(errno)); return -1; }
    pid_t pid = fork();
    if (pid < 0) { snprintf(err, errlen, "fork: %s", strerror(errno)); close(fd[0]); close(fd[1]); return -1; }
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execlp("sbatch", "sbatch", "--parsable", file, (char *)NULL);
        fprintf(stderr, "prism-sweep launch slurm: cannot run sbatch: %s (is SLURM's client installed and on PATH?)\n",
                strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    char buf[256];
    size_t got = 0;
    ssize_t k;
    while ((k = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0 || (k < 0 && errno == EINTR))
        if (k > 0) got += (size_t)k;
    buf[got] = 0;
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(err, errlen, "sbatch failed (exit %d; its message is above)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return -1;
    }
    buf[strcspn(buf, ";\r\n")] = 0;          /* --parsable: "ID" or "ID;CLUSTER" */
    if (!buf[0] || strspn(buf, "0123456789") != strlen(buf)) {
        snprintf(err, errlen, "sbatch printed no job id (got \"%.60s\")", buf);
        return -1;
    }
    snprintf(jobid, n, "%s", buf);
    return 0;
}

/* The worker beside this binary and the current directory: the defaults of --worker and --log-dir. */
static void launch_defaults(launch_slurm_opts *o) {
    static char worker_default[PATH_MAX], log_default[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", worker_default, sizeof worker_default - 32);
    if (k > 0) {
        worker_default[k] = 0;
        char *slash = strrchr(worker_default, '/');
        strcpy(slash ? slash + 1 : worker_default, "prism-worker");
        o->worker = worker_default;
    } else {
        o->worker = "prism-worker";
    }
    if (!getcwd(log_default, sizeof log_default)) strcpy(log_default, ".");
    o->log_dir = log_default;
}

#define LAUNCH_NFLAGS 19   /* launch_flags' table, with its terminator */

/* The flag table of `launch slurm` into flags[LAUNCH_NFLAGS]; its entries point into o, submit, sbatch_help. */
static void launch_flags(launch_slurm_opts *o, int *submit, const char **sbatch_help, cli_flag *flags) {
    const cli_flag f[] = {
        { "--server", CLI_STR, &o->server, "(required)", "the orchestrator's URL as the nodes reach it, "
          "e.g. http://head:8080", 0, 0, 0, 0 },
        { "--token-file", CLI_STR, &o->token_file, "(required)", "the worker token (<db>.worker-token) on a "
          "filesystem every node sees", 0, 0, 0, 0 },
        { "--nodes", CLI_INT, &o->nodes, "1", "array tasks, one per node", 1, 100000, 0, 0 },
        { "--gpus-per-node", CLI_INT, &o->gpus_per_node, "1", "GPUs per task (--gres=gpu:G), one training job "
          "each; 0 = CPU workers (--devices cpu)", 0, 1024, 0, 0 },
        { "--partition", CLI_STR, &o->partition, "(cluster default)", "SLURM partition", 0, 0, 0, 0 },
        { "--time", CLI_STR, &o->time, "(partition default)", "time limit per task: MM, HH:MM:SS or D-HH:MM:SS",
          0, 0, 0, 0 },
        { "--account", CLI_STR, &o->account, "(user default)", "SLURM account", 0, 0, 0, 0 },
        { "--submit", CLI_BOOL, submit, "off", "submit with sbatch and print the job id instead of the script",
          0, 0, 0, 0 },
        { "--worker", CLI_STR, &o->worker, "(prism-worker beside this binary)", "the prism-worker binary as the "
          "nodes see it", 0, 0, 0, 0 },
        { "--work-dir", CLI_STR, &o->work_dir, "($SLURM_SUBMIT_DIR/prism-work)", "job outputs and checkpoints; "
          "shared, so that any node resumes a job", 0, 0, 0, 0 },
        { "--log-dir", CLI_STR, &o->log_dir, "(the current directory)", "one log per task: "
          "DIR/JOBNAME-ARRAYID_TASK.log", 0, 0, 0, 0 },
        { "--job-name", CLI_STR, &o->job_name, "prism-worker", "SLURM job name", 0, 0, 0, 0 },
        { "--idle-exit", CLI_INT, &o->idle_exit, "300", "a task ends after this many seconds with nothing to lease "
          "(0 = never)", 0, 10000000, 0, 0 },
        { "--cpus-per-task", CLI_INT, &o->cpus_per_task, "(cluster default)", "CPUs per task (#SBATCH --cpus-per-task)",
          1, 100000, 0, 0 },
        { "--mem", CLI_STR, &o->mem, "(cluster default)", "memory per node, e.g. 64G (#SBATCH --mem)", 0, 0, 0, 0 },
        { "--sbatch-arg", CLI_STR, sbatch_help, "(none)", "one more #SBATCH option, as one word; repeatable (e.g. "
          "--sbatch-arg=--qos=high --sbatch-arg=--constraint=a100)", 0, 0, 0, 0 },
        { "--setup", CLI_STR, &o->setup, "(none)", "one shell line each task runs before the worker (e.g. \"module "
          "load cuda/12.4 && source ~/venv/bin/activate\"); the task stops if it fails", 0, 0, 0, 0 },
        { "--signal-lead", CLI_INT, &o->signal_lead, "120", "seconds before the time limit that SIGTERM arrives "
          "(--signal=B:TERM@S): time to finish a step and checkpoint", 1, 65535, 0, 0 },
        { 0 },
    };
    _Static_assert(sizeof f == LAUNCH_NFLAGS * sizeof(cli_flag), "LAUNCH_NFLAGS is launch_flags' entry count");
    memcpy(flags, f, sizeof f);
}

/* Takes every --sbatch-arg (it repeats, so cli_parse cannot) and what follows `--` out of argv, in order, into o;
 * *argc becomes what is left. Returns 0, or cli_error's exit code. */
static int launch_take_sbatch_args(launch_slurm_opts *o, int *argc, char **argv) {
    const char *c = "launch slurm";
    int kept = 1;
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--") == 0) {   /* the rest is every task's prism-worker's own flags (--data-root ...) */
            o->worker_args = argv + i + 1;
            o->n_worker_args = *argc - i - 1;
            break;
        }
        if (strcmp(argv[i], "--sbatch-arg") == 0) {
            if (i + 1 >= *argc) return cli_error(c, "--sbatch-arg needs a value, e.g. --sbatch-arg=--qos=high");
            v = argv[++i];
        } else if (strncmp(argv[i], "--sbatch-arg=", 13) == 0) v = argv[i] + 13;
        if (!v) { argv[kept++] = argv[i]; continue; }
        if (o->n_sbatch_args == LAUNCH_MAX_SBATCH_ARGS) return cli_error(c, "--sbatch-arg: at most %d", LAUNCH_MAX_SBATCH_ARGS);
        int crc = launch_check_sbatch_arg(v);
        if (crc == -2) return cli_error(c, "--sbatch-arg \"%s\": this command writes that directive itself (use its own "
                                        "flag: --nodes, --log-dir, --signal-lead, --job-name)", v);
        if (crc < 0) return cli_error(c, "--sbatch-arg \"%s\": one sbatch option as one word, starting with - and "
                                      "without spaces, quotes or $ (e.g. --sbatch-arg=--qos=high "
                                      "--sbatch-arg=--constraint=a100)", v);
        o->sbatch_args[o->n_sbatch_args++] = v;
    }
    *argc = kept;
    return 0;
}

/* The token file, worker, work and log directories checked and made absolute (the nodes run elsewhere);
 * worker_given: --worker was on the command line. Returns 0, or cli_error's exit code. */
static int launch_resolve_paths(launch_slurm_opts *o, int worker_given) {
    const char *c = "launch slurm";
    static char token_abs[PATH_MAX], work_abs[PATH_MAX], log_abs[PATH_MAX], worker_abs[PATH_MAX];
    if (access(o->token_file, R_OK) != 0)
        return cli_error(c, "--token-file %s: %s (the server writes <db>.worker-token beside its database)",
                         o->token_file, strerror(errno));
    if (launch_absolute(o->token_file, token_abs, sizeof token_abs) < 0)
        return cli_error(c, "--token-file %s: path too long", o->token_file);
    o->token_file = token_abs;
    if (!worker_given && access(o->worker, X_OK) != 0) {
        fprintf(stderr, "prism-sweep launch slurm: note: no prism-worker beside this binary; the tasks run "
                "prism-worker from their PATH (--worker PATH names it)\n");
        o->worker = "prism-worker";
    }
    if (strchr(o->worker, '/')) {
        if (access(o->worker, X_OK) != 0)
            return cli_error(c, "--worker %s: %s (give the prism-worker binary's path as the nodes see it)", o->worker,
                             strerror(errno));
        if (launch_absolute(o->worker, worker_abs, sizeof worker_abs) < 0)
            return cli_error(c, "--worker %s: path too long", o->worker);
        o->worker = worker_abs;
    }
    if (o->work_dir) {
        if (launch_absolute(o->work_dir, work_abs, sizeof work_abs) < 0)
            return cli_error(c, "--work-dir %s: path too long", o->work_dir);
        o->work_dir = work_abs;
    }
    if (launch_absolute(o->log_dir, log_abs, sizeof log_abs) < 0) return cli_error(c, "--log-dir: path too long");
    o->log_dir = log_abs;
    struct stat sb;
    if (stat(o->log_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return cli_error(c, "--log-dir %s: not a directory (create it first; SLURM does not)", o->log_dir);
    return 0;
}

/* The server URL first (required, http(s), one word), then the token file, the paths (launch_resolve_paths) and
 * every value that lands in the script. Returns 0, or cli_error's exit code (the flag and the fix). */
static int launch_check_opts(launch_slurm_opts *o, int worker_given) {
    const char *c = "launch slurm";
    if (!o->server) return cli_error(c, "--server URL is required (the orchestrator as the nodes reach it, e.g. "
                                     "--server http://head-node:8080)");
    if (strncmp(o->server, "http://", 7) != 0 && strncmp(o->server, "https://", 8) != 0)
        return cli_error(c, "--server %s: must start with http:// or https://", o->server);
    if (launch_check_word(o->server) < 0)
        return cli_error(c, "--server \"%s\": a URL has no spaces, quotes or $", o->server);
    if (!o->token_file) return cli_error(c, "--token-file F is required (the server writes <db>.worker-token; "
                                         "put it where every node can read it)");
    int rc = launch_resolve_paths(o, worker_given);
    if (rc) return rc;
    if (launch_check_word(o->log_dir) < 0)
        return cli_error(c, "--log-dir \"%s\": no spaces, quotes or $ (it goes into an #SBATCH line)", o->log_dir);
    if (launch_check_word(o->job_name) < 0 || strchr(o->job_name, '/'))
        return cli_error(c, "--job-name \"%s\": one word without / spaces, quotes or $", o->job_name);
    if (o->partition && launch_check_word(o->partition) < 0)
        return cli_error(c, "--partition \"%s\": one word without spaces, quotes or $ (e.g. --partition gpu)",
                         o->partition);
    if (o->account && launch_check_word(o->account) < 0)
        return cli_error(c, "--account \"%s\": one word without spaces, quotes or $", o->account);
    if (o->mem && launch_check_mem(o->mem) < 0)
        return cli_error(c, "--mem \"%s\": a size in megabytes, or with K, M, G or T (e.g. --mem 64G)", o->mem);
    if (o->setup) {
        if (!*o->setup) return cli_error(c, "--setup: empty (leave it out, or give a shell line)");
        for (const unsigned char *q = (const unsigned char *)o->setup; *q; q++)
            if (*q < ' ' || *q == 127)
                return cli_error(c, "--setup: one line without control characters (join commands with && or ;)");
    }
    if (o->time && launch_check_time(o->time) < 0)
        return cli_error(c, "--time \"%s\": not a SLURM time limit (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM:SS or "
                         "UNLIMITED; e.g. --time 12:00:00)", o->time);
    if (strstr(o->server, "://127.") || strstr(o->server, "://localhost") || strstr(o->server, "://[::1]"))
        fprintf(stderr, "prism-sweep launch slurm: warning: --server %s is a loopback address: only tasks on this "
                "node reach it (serve with --listen ADDRESS:PORT on an address the nodes reach)\n", o->server);
    return 0;
}

/* The script into a temporary file, `sbatch --parsable` on it, the job id to stdout and a line about the job to
 * stderr. Returns 0 or 1 (said on stderr). */
static int launch_submit(const launch_slurm_opts *o, const char *script) {
    const char *tmp = getenv("TMPDIR");
    char path[PATH_MAX], jobid[256], err[256];
    snprintf(path, sizeof path, "%s/prism-launch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) { fprintf(stderr, "prism-sweep launch slurm: %s: %s (set TMPDIR)\n", path, strerror(errno)); return 1; }
    size_t len = strlen(script), done = 0;
    while (done < len) {
        ssize_t w = write(fd, script + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += (size_t)w;
    }
    if (close(fd) != 0 || done != len) {
        fprintf(stderr, "prism-sweep launch slurm: writing %s: %s\n", path, strerror(errno));
        unlink(path);
        return 1;
    }
    int rc = launch_sbatch(path, jobid, sizeof jobid, err, sizeof err);
    unlink(path);
    if (rc < 0) { fprintf(stderr, "prism-sweep launch slurm: %s\n", err); return 1; }
    printf("%s\n", jobid);
    fprintf(stderr, "submitted SLURM array job %s: %d task%s (%s); logs %s/%s-%s_*.log\n", jobid, o->nodes,
            o->nodes == 1 ? "" : "s", o->gpus_per_node ? "one job per GPU" : "CPU workers", o->log_dir, o->job_name,
            jobid);
    return 0;
}

static int launch_slurm(int argc, char **argv) {
    launch_slurm_opts o = { .nodes = 1, .gpus_per_node = 1, .idle_exit = 300, .signal_lead = 120,
                            .job_name = "prism-worker" };
    int submit = 0;
    const char *sbatch_help_only = NULL;   /* --sbatch-arg is taken out of argv before cli_parse (it repeats) */
    launch_defaults(&o);
    cli_flag flags[LAUNCH_NFLAGS];
    launch_flags(&o, &submit, &sbatch_help_only, flags);
    cli_cmd cmd = { "launch slurm", "--server URL --token-file F --nodes N --gpus-per-node G [flags]\n"
                    "                           [--submit] [-- WORKER FLAGS...]",
                    "Print a SLURM batch script that runs prism-worker on N nodes as an array job (one task per\n"
                    "node, one training job per GPU, SIGTERM 120 s before the time limit so a checkpoint is written\n"
                    "first, --requeue), or submit it with sbatch (--submit) and print the job id. Flags after --\n"
                    "go to every task's prism-worker as given (e.g. -- --data-root /shared/prism).",
                    flags, NULL };
    int rc = launch_take_sbatch_args(&o, &argc, argv);
    if (rc) return rc;
    char *pos[1];
    int npos = 0, prc = cli_parse(&cmd, argc, argv, pos, 0, &npos);
    if (prc != CLI_OK) return prc == CLI_HELP ? 0 : 2;
    rc = launch_check_opts(&o, cli_find(&cmd, "--worker")->seen);
    if (rc) return rc;
    char *script = NULL;
    if (launch_render_slurm(&o, &script) < 0) { fprintf(stderr, "prism-sweep launch slurm: out of memory\n"); return 1; }
    if (submit) rc = launch_submit(&o, script);
    else {
        fputs(script, stdout);
        rc = fflush(stdout) == 0 ? 0 : 1;
    }
    free(script);
    return rc;
}

int cmd_launch(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "slurm") == 0) return launch_slurm(argc - 1, argv + 1);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: prism-sweep launch TARGET [flags]\n\nStart a fleet of workers on a cluster scheduler.\n"
               "targets:\n  slurm   an array job, one task per node (prism-sweep launch slurm --help)\n"
               "systemd units and Kubernetes manifests: deploy/ and docs/DEPLOY.md\n");
        return 0;
    }
    return cli_error("launch", "%s%s%s: the target is slurm, e.g. prism-sweep launch slurm --server URL --token-file F "
                     "--nodes 4 --gpus-per-node 8", argc >= 2 ? "unknown target \"" : "give a target",
                     argc >= 2 ? argv[1] : "", argc >= 2 ? "\"" : "");
}
