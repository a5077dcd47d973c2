/* server_bench.h — what the server benchmarks share (bench_server.c, bench_fleet.c): a free loopback port,
 * the sweep spec they load the server with, and the worker token the server writes.
 * Header-only (static functions): each benchmark is one program.
 *
 * Contract:
 * - bench_free_port: a TCP port on 127.0.0.1 that was free a moment ago (bound, read, closed).
 * - bench_write_spec(path, name, seeds, steps): writes a sweep spec at the paper's GPT-2 124M settings (12
 *   layers, d_model 768, 53 schedules by the default rules) with seeds 1..seeds and train.steps = steps.
 *   Returns 0, or -1 with errno set (the file may be partly written).
 * - bench_read_token(db, tok, n): the first line of <db>.worker-token into tok. Returns 1 when it held a
 *   token, 0 when the file is missing or empty (the server has not written it yet).
 */
#ifndef PRISM_BENCH_SERVER_BENCH_H
#define PRISM_BENCH_SERVER_BENCH_H

#include "bench_util.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int bench_free_port(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t l = sizeof a;
    bind(s, (struct sockaddr *)&a, sizeof a);
    getsockname(s, (struct sockaddr *)&a, &l);
    close(s);
    return ntohs(a.sin_port);
}

static int bench_write_spec(const char *path, const char *name, int seeds, long steps) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "{\"name\": \"%s\", \"model\": {\"n_layer\": 12, \"d_model\": 768, \"vocab_size\": 50257, "
               "\"padded_vocab_size\": 50304, \"seq_len\": 1024}, \"seeds\": [", name);
    for (int i = 0; i < seeds; i++) fprintf(f, "%s%d", i ? ", " : "", i + 1);
    fprintf(f, "], \"train\": {\"batch_size\": 8, \"seq_len\": 1024, \"grad_accum\": 32, \"steps\": %ld, \"lr\": 0.0006, "
               "\"lr_schedule\": \"cosine\", \"warmup_steps\": 275, \"min_lr_frac\": 0.1, \"beta1\": 0.9, \"beta2\": 0.95, "
               "\"eps\": 1e-8, \"weight_decay\": 0.1, \"grad_clip\": 1.0, \"shuffle\": true}, "
               "\"eval\": {\"every\": 250, \"batches\": 20, \"attn_distance\": true}, "
               "\"data\": {\"train\": \"fineweb_train_*.bin\", \"val\": \"fineweb_val_*.bin\"}}\n", steps);
    return fclose(f) == 0 ? 0 : -1;
}

static int bench_read_token(const char *db, char *tok, size_t n) {
    char path[1100];
    snprintf(path, sizeof path, "%s.worker-token", db);
    tok[0] = 0;
    FILE *t = fopen(path, "r");
    if (!t) return 0;
    if (fgets(tok, (int)n, t)) tok[strcspn(tok, "\n")] = 0;
    fclose(t);
    return tok[0] != 0;
}
#endif
