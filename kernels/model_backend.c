/* model_backend.c — picking a backend from a device string, and loading the CUDA backend when one is asked for.
 *
 * The CPU backend is linked in; the CUDA one is a shared object (prism-cuda.so, kernels/model.h) opened with
 * dlopen the first time a job names a CUDA device, so a CPU run maps no CUDA library at all (no libcudart,
 * cuBLAS, cuBLASLt: about 200 MiB and 0.3 s a process otherwise). Which file: $PRISM_CUDA_BACKEND when set,
 * else prism-cuda.so in the directory of /proc/self/exe. A binary that was linked against the CUDA objects
 * (the kernel tests, bench_cuda_gpt2, tests/gpu/run.sh's builds) already holds prism_model_backend; the weak
 * reference below finds it, and nothing is loaded.
 *
 * Checks, each failure one message naming the file and the fix: the file exists and is a regular file (dlopen
 * of a FIFO blocks until someone writes to it; a directory or a device is no backend either); dlopen succeeds
 * (its CUDA libraries resolve); it exports MODEL_BACKEND_SYMBOL as an object of at least the 4 bytes of the ABI
 * version (dladdr1's ELF symbol size: a 1-byte symbol would be read past), and then, its ABI version matching,
 * of exactly sizeof(struct model_backend); its struct sizes are this binary's; its names and both model_ops
 * tables are there with every entry set (a table of NULLs crashed the first job after its lease); then, per
 * device, the backend's own device_check (driver present, index in range). The agent loads it before it
 * registers (worker/agent.c), so a bad backend is exit 2 there, never a leased job. The outcome of the first load,
 * success or failure, is kept for the life of the process (the object is never closed: its tables are used
 * until exit), under a mutex since the agent's device threads may ask at once.
 */
#define _GNU_SOURCE   /* dladdr1 */
#include "model.h"
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* defined only where the CUDA objects are linked into the binary itself */
#pragma weak prism_model_backend
extern const struct model_backend prism_model_backend;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_tried;
static const struct model_backend *g_backend;
static char g_path[PATH_MAX + 64];
static char g_err[3 * (PATH_MAX + 64) + 1024];   /* the path may appear twice, with dlerror() */

#define FIX_ANY "or run on the CPU with --device cpu"

int model_backend_path(char *out, size_t outlen, char *err, size_t errlen) {
    const char *env = getenv(MODEL_BACKEND_ENV);
    if (env && *env) {
        /* a bare name would make dlopen search the library path: keep it a path */
        int n = snprintf(out, outlen, "%s%s", strchr(env, '/') ? "" : "./", env);
        if (n < 0 || (size_t)n >= outlen) {
            if (err) snprintf(err, errlen, "%s is longer than %zu bytes", MODEL_BACKEND_ENV, outlen);
            return -1;
        }
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        if (err) snprintf(err, errlen, "cannot find the directory of this binary (/proc/self/exe: %s); set %s=/path/to/%s",
                          strerror(errno), MODEL_BACKEND_ENV, MODEL_BACKEND_FILE);
        return -1;
    }
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    int m = snprintf(out, outlen, "%s/%s", slash ? exe : ".", MODEL_BACKEND_FILE);
    if (m < 0 || (size_t)m >= outlen) {
        if (err) snprintf(err, errlen, "the path of the binary is too long; set %s", MODEL_BACKEND_ENV);
        return -1;
    }
    return 0;
}

/* 1 when every entry of ops is set (its name and each function but none). */
static int backend_ops_complete(const model_ops *o) {
    return o && o->name && o->create && o->free && o->error && o->get_params && o->set_params && o->get_opt_state &&
           o->set_opt_state && o->get_grads && o->zero_grad && o->forward_backward && o->forward_loss && o->update &&
           o->forward_losses;
}

/* The size in bytes of the ELF symbol at addr (the one dlsym found), or 0 when it cannot be told or is no data
 * object (a function, an ifunc). */
static size_t backend_symbol_size(const void *addr) {
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !info.dli_sname ||
        strcmp(info.dli_sname, MODEL_BACKEND_SYMBOL) != 0 || (sym->st_info & 0xf) != STT_OBJECT)   /* ELF{32,64}_ST_TYPE */
        return 0;
    return (size_t)sym->st_size;
}

/* Opens and checks g_path; 0 or -1 with g_err set. */
static int backend_open(void) {
    const char *how = getenv(MODEL_BACKEND_ENV) && *getenv(MODEL_BACKEND_ENV)
                          ? "(named by " MODEL_BACKEND_ENV ")" : "(looked for next to this binary)";
    if (access(g_path, F_OK) != 0) {
        snprintf(g_err, sizeof g_err,
                 "CUDA backend %s %s: no such file. prism-worker loads its CUDA backend only when a job asks for a "
                 "CUDA device. Fix: build it with `make` on a machine with nvcc (it is written next to prism-worker), "
                 "copy it next to this binary, or set %s=/path/to/%s; " FIX_ANY,
                 g_path, how, MODEL_BACKEND_ENV, MODEL_BACKEND_FILE);
        return -1;
    }
    struct stat sb;
    memset(&sb, 0, sizeof sb);   /* a failed stat: "not a file" */
    if (stat(g_path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(g_err, sizeof g_err,
                 "CUDA backend %s %s is not a regular file (%s): a backend is the shared object %s built by `make`. "
                 "Fix: point %s at that file; " FIX_ANY, g_path, how,
                 S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISDIR(sb.st_mode) ? "a directory" :
                 S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device" : S_ISSOCK(sb.st_mode) ? "a socket" : "not a file",
                 MODEL_BACKEND_FILE, MODEL_BACKEND_ENV);
        return -1;
    }
    dlerror();
    void *h = dlopen(g_path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(g_err, sizeof g_err,
                 "CUDA backend %s %s cannot be loaded: %s. Fix: install the CUDA libraries it needs (`ldd %s` shows "
                 "which are missing; or add their directory to LD_LIBRARY_PATH), or rebuild it with `make` on this "
                 "machine; " FIX_ANY, g_path, how, e ? e : "(no detail)", g_path);
        return -1;
    }
    const struct model_backend *b = dlsym(h, MODEL_BACKEND_SYMBOL);
    if (!b) {
        snprintf(g_err, sizeof g_err,
                 "%s %s is not a prism CUDA backend (it has no symbol %s). Fix: point %s at the %s built by `make` "
                 "with this prism-worker; " FIX_ANY, g_path, how, MODEL_BACKEND_SYMBOL, MODEL_BACKEND_ENV,
                 MODEL_BACKEND_FILE);
        dlclose(h);
        return -1;
    }
    size_t symsize = backend_symbol_size(b);
    if (symsize < sizeof b->abi || (b->abi == MODEL_BACKEND_ABI && symsize != sizeof *b)) {
        snprintf(g_err, sizeof g_err,
                 "%s %s is not a prism CUDA backend: its symbol %s is %s%zu byte(s), a struct model_backend is %zu. "
                 "Fix: point %s at the %s built by `make` with this prism-worker; " FIX_ANY, g_path, how,
                 MODEL_BACKEND_SYMBOL, symsize ? "" : "no data object of ", symsize, sizeof *b, MODEL_BACKEND_ENV,
                 MODEL_BACKEND_FILE);
        dlclose(h);
        return -1;
    }
    char sizes[160] = "";   /* read only once the version matches: before that the layout is unknown */
    if (b->abi == MODEL_BACKEND_ABI && (b->size != sizeof *b || b->ops_size != sizeof(model_ops) ||
                                        b->config_size != sizeof(struct model_config)))
        snprintf(sizes, sizeof sizes, " but struct sizes %u/%u/%u where this prism-worker's are %zu/%zu/%zu",
                 (unsigned)b->size, (unsigned)b->ops_size, (unsigned)b->config_size, sizeof *b, sizeof(model_ops),
                 sizeof(struct model_config));
    if (b->abi != MODEL_BACKEND_ABI || sizes[0]) {
        snprintf(g_err, sizeof g_err,
                 "CUDA backend %s %s has backend ABI version %u%s, this prism-worker needs version %d: they were "
                 "built from different sources. Fix: rebuild both with one `make` and keep %s next to its "
                 "prism-worker (or point %s at the matching one); " FIX_ANY,
                 g_path, how, (unsigned)b->abi, sizes, MODEL_BACKEND_ABI, MODEL_BACKEND_FILE, MODEL_BACKEND_ENV);
        dlclose(h);
        return -1;
    }
    if (!b->name || !b->precision || !b->device_check || !backend_ops_complete(b->gpt2) ||
        !backend_ops_complete(b->llama)) {
        snprintf(g_err, sizeof g_err, "CUDA backend %s %s has an incomplete table (%s). Fix: rebuild it with "
                 "`make`; " FIX_ANY, g_path, how, !b->name || !b->precision || !b->device_check ? "a NULL entry" :
                 !b->gpt2 || !b->llama ? "a NULL model table" : "a model table with a NULL function");
        dlclose(h);
        return -1;
    }
    g_backend = b;   /* h stays open until exit */
    return 0;
}

const struct model_backend *model_backend_load(const char **path, char *err, size_t errlen) {
    pthread_mutex_lock(&g_mu);
    if (!g_tried) {
        g_tried = 1;
        if (&prism_model_backend) {
            g_backend = &prism_model_backend;   /* linked in: nothing to load */
            g_path[0] = 0;
        } else if (model_backend_path(g_path, sizeof g_path, g_err, sizeof g_err) == 0) {
            backend_open();
        }
    }
    const struct model_backend *b = g_backend;
    if (!b && err && errlen) snprintf(err, errlen, "%s", g_err);
    pthread_mutex_unlock(&g_mu);
    if (path) *path = g_path;
    return b;
}

const model_ops *model_ops_for_device(const char *device, int *device_index, char *err, size_t errlen) {
    if (!device || !*device || strcmp(device, "cpu") == 0) {
        if (device_index) *device_index = -1;
        return &model_cpu_ops;
    }
    const char *num = strncmp(device, "cuda:", 5) == 0 ? device + 5 : device;
    char *end = NULL;
    long idx = strtol(num, &end, 10);
    if (!*num || *end || idx < 0 || idx > 1024) {
        if (err) snprintf(err, errlen, "device \"%s\": expected \"cpu\" or a CUDA device index such as 0", device);
        return NULL;
    }
    const char *path = NULL;
    const struct model_backend *b = model_backend_load(&path, err, errlen);
    if (!b) return NULL;
    char why[1024] = "";
    if (b->device_check((int)idx, why, sizeof why) != 0) {
        if (err) snprintf(err, errlen, "device %ld: %s (CUDA backend %s, %s %s)", idx, why,
                          path && *path ? path : "linked into this binary", b->name, b->precision);
        return NULL;
    }
    if (device_index) *device_index = (int)idx;
    return b->gpt2;
}

const model_ops *model_ops_for_arch(const model_ops *ops, int arch) {
    if (arch != MODEL_ARCH_LLAMA || ops == &model_cpu_ops) return ops;
    const struct model_backend *b = model_backend_load(NULL, NULL, 0);   /* loaded already, or linked in */
    return b && ops == b->gpt2 ? b->llama : ops;
}
