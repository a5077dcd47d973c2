/* cmd_enumerate.c — `prism-sweep enumerate`: list, count or sample the valid head schedules of a shape.
 *
 * Design: the rules come from the shared rule flags (rules_cli.h); listing streams schedule_enumerate's walk
 * straight to a buffered stdout (text, CSV, or a JSON array with one object a line), so millions of schedules
 * cost no memory; --count asks schedule_count's dynamic program and never lists; --sample N --seed S prints N
 * distinct schedules drawn uniformly, in enumeration order. A write error (disk full, closed pipe) is reported
 * and exits 1 rather than passing for a complete list.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonout.h"
#include "cli.h"
#include "commands.h"
#include "rules_cli.h"
#include "schedule.h"

typedef struct out_ctx {
    const char *format;   /* text | json | csv */
    const schedule_rules *r;
    long long n;
    char *line;           /* scratch, linecap bytes */
    size_t linecap;
    int *bh, *bl;         /* block scratch [L] */
} out_ctx;

static int emit(const int *heads, int L, void *vctx) {
    out_ctx *c = vctx;
    int d = c->r->d_model;
    if (strcmp(c->format, "text") == 0) {
        if (schedule_format(heads, L, c->line, c->linecap) < 0) return -1;
        fputs(c->line, stdout);
        fputc('\n', stdout);
    } else if (strcmp(c->format, "csv") == 0) {
        if (c->n == 0) fputs("heads,head_dims,blocks,is_baseline\n", stdout);
        schedule_format(heads, L, c->line, c->linecap);
        printf("\"%s\",\"", c->line);
        for (int i = 0; i < L; i++) printf(i ? ",%d" : "%d", d / heads[i]);
        fputs("\",\"", stdout);
        int nb = schedule_blocks(heads, L, c->bh, c->bl, L);
        for (int i = 0; i < nb; i++) printf(i ? " %dx%d" : "%dx%d", c->bh[i], c->bl[i]);
        printf("\",%d\n", schedule_is_uniform(heads, L));
    } else {
        json_t *o = json_object(), *h = json_array(), *hd = json_array(), *b = json_array();
        for (int i = 0; i < L; i++) {
            json_array_append_new(h, json_integer(heads[i]));
            json_array_append_new(hd, json_integer(d / heads[i]));
        }
        int nb = schedule_blocks(heads, L, c->bh, c->bl, L);
        for (int i = 0; i < nb; i++) json_array_append_new(b, json_pack("[ii]", c->bh[i], c->bl[i]));
        json_object_set_new(o, "heads", h);
        json_object_set_new(o, "head_dims", hd);
        json_object_set_new(o, "blocks", b);
        json_object_set_new(o, "is_baseline", json_boolean(schedule_is_uniform(heads, L)));
        char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSONOUT_FLAGS);
        json_decref(o);
        if (!s) return -1;
        fputs(c->n ? ",\n" : "[\n", stdout);
        fputs(s, stdout);
        free(s);
    }
    c->n++;
    return ferror(stdout) ? -1 : 0;
}

int cmd_enumerate(int argc, char **argv) {
    rules_cli rc;
    rules_cli_init(&rc);
    int count = 0;
    long long sample = 0, seed = 0;
    const char *format = "text";
    cli_flag flags[] = {
        RULES_CLI_FLAGS(rc, "12"),
        { "--format", CLI_CHOICE, &format, "text", "output: one schedule a line, a JSON array of {heads, "
          "head_dims, blocks, is_baseline}, or CSV", 0, 0, "text|json|csv", 0 },
        { "--count", CLI_BOOL, &count, "off", "print only the exact number of valid schedules (not listing them)",
          0, 0, 0, 0 },
        { "--sample", CLI_INT64, &sample, "0 = all", "print N distinct schedules drawn uniformly", 1,
          SCHEDULE_MAX_SAMPLE, 0, 0 },
        { "--seed", CLI_INT64, &seed, "0", "random seed of --sample", 0, 9007199254740991.0, 0, 0 },
        { 0 },
    };
    cli_cmd cmd = { "enumerate", "[flags]",
                    "Print every valid per-layer head schedule of the shape (--L, --dmodel), one per line as\n"
                    "comma-separated head counts, in a fixed order: descending lexicographic, so the uniform\n"
                    "baseline comes first. The rules: every h_l divides d_model, h_l <= h_base, non-decreasing,\n"
                    "the last layer has h_base heads, plus the bounds below.", flags, NULL };
    int npos = 0;
    int prc = cli_parse(&cmd, argc, argv, NULL, 0, &npos);
    if (prc != CLI_OK) return prc == CLI_HELP ? 0 : 2;
    if (count && cli_find(&cmd, "--sample")->seen)
        return cli_error("enumerate", "--count and --sample cannot be combined (--count counts every schedule)");
    if (cli_find(&cmd, "--seed")->seen && !cli_find(&cmd, "--sample")->seen)
        return cli_error("enumerate", "--seed only applies to --sample N");

    schedule_rules r;
    if (rules_cli_resolve("enumerate", &rc, &r) != 0) return 2;

    static char obuf[1 << 16];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    schedule_count_t total;
    int crc = schedule_count(&r, &total);
    if (count) {
        char num[64];
        if (crc == SCHEDULE_EOVERFLOW) {
            fprintf(stderr, "prism-sweep enumerate: the count exceeds 2^128-1; tighten the rules\n");
            return 1;
        }
        if (crc < 0) return cli_error("enumerate", "cannot count (error %d)", crc);
        printf("%s\n", schedule_count_str(total, num, sizeof num));
        return fflush(stdout) == 0 ? 0 : 1;
    }
    out_ctx c = { format, &r, 0, NULL, (size_t)r.L * 12 + 16, NULL, NULL };
    c.line = malloc(c.linecap);
    c.bh = malloc(sizeof(int) * r.L);
    c.bl = malloc(sizeof(int) * r.L);
    int rc2;
    if (!c.line || !c.bh || !c.bl) {
        rc2 = SCHEDULE_ENOMEM;
    } else if (sample > 0) {
        if (crc == 0 && (schedule_count_t)sample > total) {
            char num[64];
            free(c.line); free(c.bh); free(c.bl);
            return cli_error("enumerate", "--sample %lld is more than the %s valid schedules: must be in 1..%s",
                             sample, schedule_count_str(total, num, sizeof num), num);
        }
        rc2 = schedule_sample(&r, (uint64_t)sample, (uint64_t)seed, emit, &c);
    } else {
        rc2 = schedule_enumerate(&r, emit, &c);
    }
    if (strcmp(format, "json") == 0 && rc2 == 0) fputs(c.n ? "\n]\n" : "[]\n", stdout);
    free(c.line); free(c.bh); free(c.bl);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "prism-sweep enumerate: writing the output failed\n");
        return 1;
    }
    if (rc2 == SCHEDULE_EOVERFLOW) {
        fprintf(stderr, "prism-sweep enumerate: the count exceeds 2^128-1, so --sample cannot draw uniformly\n");
        return 1;
    }
    if (rc2 != 0) {
        fprintf(stderr, "prism-sweep enumerate: failed (error %d)\n", rc2);
        return 1;
    }
    return 0;
}
