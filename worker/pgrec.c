/* pgrec.c — the trainer process groups' records and the stale ones' reaping (pgrec.h).
 *
 * Design: a file per running trainer, named by the worker's pid and the device, so workers sharing a --work-dir
 * never write each other's. A group is "ours" by the kernel's rule that a pid stays allocated while any process
 * is in the group it leads: if the group P exists and its leader P is gone, every member is the old trainer's;
 * if a process P runs, it is the old leader only with the recorded start time. Start times come from
 * /proc/PID/stat field 22 (util_proc_stat). Records are written whole (util_write_atomic) and name the machine's
 * boot id and host: a record of another host (a shared --work-dir) is never acted on, one of an earlier boot of this
 * host only removed.
 */
#define _GNU_SOURCE
#include "pgrec.h"

#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A record names this machine (util_machine: the kernel's boot id and the host name), and only a record of this boot
 * of this host is reaped. A --work-dir on a shared filesystem (a SLURM job's cwd on NFS) holds other boxes'
 * records, whose pids mean nothing here: reaping them would signal unrelated groups of this box. */

/* PID's start time (clock ticks since boot): 0, or -1 when it does not run (or /proc cannot say). */
static int pgrec_start_time(pid_t pid, unsigned long long *start) {
    return util_proc_stat(pid, 22, 1, start);
}

int pgrec_write(const char *dir, const char *device, pid_t pgid, char *path, size_t pathlen) {
    path[0] = 0;
    unsigned long long lst = 0, wst = 0;
    if (pgrec_start_time(pgid, &lst) < 0 || pgrec_start_time(getpid(), &wst) < 0) { errno = ESRCH; return -1; }
    if (util_mkdir_p(dir, 0755) != 0) return -1;
    char dev[128];
    size_t i = 0;
    for (; device && device[i] && i < sizeof dev - 1; i++) {
        char c = device[i];
        dev[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                 c == '_' ? c : '_';
    }
    dev[i] = 0;
    snprintf(path, pathlen, "%s/W%d-%s.pgid", dir, (int)getpid(), dev);
    char line[512], err[512], boot[64], host[256];
    util_machine(boot, sizeof boot, host, sizeof host);
    snprintf(line, sizeof line, "pgid %d leader_start %llu worker %d worker_start %llu boot %s host %s\n", (int)pgid, lst,
             (int)getpid(), wst, boot, host);
    util_part part = { line, strlen(line) };
    if (util_write_atomic(path, &part, 1, 0644, err, sizeof err) != 0) { path[0] = 0; return -1; }
    return 0;
}

void pgrec_remove(const char *path) {
    if (path && path[0]) unlink(path);
}

/* 1 when the process group pgid has a member (signal 0 reaches it, or exists but not ours to signal). */
static int group_exists(pid_t pgid) {
    return kill(-pgid, 0) == 0 || errno == EPERM;
}

/* SIGTERM, up to grace_s for the group to end, SIGKILL: what was done, for the log line. */
static const char *group_kill(pid_t pgid, double grace_s) {
    if (kill(-pgid, SIGTERM) != 0) return errno == ESRCH ? "gone before SIGTERM" : "SIGTERM refused";
    double end = util_now_s() + grace_s;
    while (util_now_s() < end) {
        if (!group_exists(pgid)) return "ended on SIGTERM";
        struct timespec ts = { 0, 50000000 };
        nanosleep(&ts, NULL);
    }
    kill(-pgid, SIGKILL);
    return "SIGKILLed after the grace";
}

int pgrec_reap_stale(const char *dir, double grace_s) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    pid_t own = getpgrp();
    char boot[64], host[256];
    util_machine(boot, sizeof boot, host, sizeof host);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".pgid")) continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        int pgid = 0, worker = 0;
        unsigned long long lst = 0, wst = 0, now_st = 0;
        char rboot[64] = "", rhost[256] = "";
        int ok = fscanf(f, "pgid %d leader_start %llu worker %d worker_start %llu boot %63s host %255s", &pgid, &lst,
                        &worker, &wst, rboot, rhost) == 6;
        fclose(f);
        if (!ok || pgid <= 1 || worker <= 0) {
            fprintf(stderr, "prism-worker: %s: not a trainer group record: removed\n", path);
            unlink(path);
            continue;
        }
        if (strcmp(rhost, host) != 0) continue;   /* another box's (a shared --work-dir): its pids are not ours */
        if (strcmp(rboot, boot) != 0) {            /* this box before a reboot: every process of it is gone */
            fprintf(stderr, "prism-worker: event=stale-trainer-group pgid=%d of worker pid %d (%s): from before this "
                    "machine's boot: record removed, nothing signalled\n", pgid, worker, path);
            unlink(path);
            continue;
        }
        if ((pid_t)worker == getpid() ||
            (pgrec_start_time((pid_t)worker, &now_st) == 0 && now_st == wst))
            continue;   /* a live worker's (another one sharing this folder): its groups are its own */
        const char *what;
        if ((pid_t)pgid == own) what = "is this worker's own group: left alone";
        else if (!group_exists((pid_t)pgid)) what = "already gone";
        else if (pgrec_start_time((pid_t)pgid, &now_st) == 0 && now_st != lst)
            what = "id now belongs to another process: left alone";
        else {
            what = group_kill((pid_t)pgid, grace_s);
            n++;
        }
        fprintf(stderr, "prism-worker: event=stale-trainer-group pgid=%d of worker pid %d (no longer running; %s): %s\n",
                pgid, worker, path, what);
        unlink(path);
    }
    closedir(d);
    return n;
}
