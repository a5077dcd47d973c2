/* rules_cli.h — the schedule-rule flags shared by `prism-sweep enumerate` and `prism-sweep validate`.
 *
 *   rules_cli rc; rules_cli_init(&rc);
 *   cli_flag flags[] = { RULES_CLI_FLAGS(rc, "12"), ..., { 0 } };
 *   ... cli_parse(...) ...
 *   schedule_rules r; if (rules_cli_resolve("enumerate", &rc, &r) != 0) return 2;
 *
 * rules_cli_resolve turns the flags into resolved schedule_rules; on a bad or impossible combination it prints
 * "prism-sweep CMD: --FLAG ..." naming the flag and the valid range on stderr and returns 2.
 */
#ifndef PRISM_RULES_CLI_H
#define PRISM_RULES_CLI_H
#include "cli.h"
#include "schedule.h"

typedef struct rules_cli {
    int L, dmodel, hbase, max_head_dim, pow2, min_block, max_block;
    double min_baseline;
    const char *heads;   /* "3,6,8" or NULL */
} rules_cli;

void rules_cli_init(rules_cli *rc);   /* the defaults of schedule_rules_default() */

#define RULES_CLI_FLAGS(rc, L_default) \
    { "--L", CLI_INT, &(rc).L, L_default, "number of layers", 1, SCHEDULE_MAX_L, 0, 0 }, \
    { "--dmodel", CLI_INT, &(rc).dmodel, "768", "model width d_model", 1, SCHEDULE_MAX_DMODEL, 0, 0 }, \
    { "--hbase", CLI_INT, &(rc).hbase, "d_model/64", "heads of the last layer (a divisor of d_model)", 1, \
      SCHEDULE_MAX_DMODEL, 0, 0 }, \
    { "--max-head-dim", CLI_INT, &(rc).max_head_dim, "256", "largest head dim d_model/h_l (0 = no bound)", 0, \
      SCHEDULE_MAX_DMODEL, 0, 0 }, \
    { "--pow2", CLI_BOOL, &(rc).pow2, "off", "head dims below the baseline run must be powers of two", 0, 0, 0, 0 }, \
    { "--heads", CLI_STR, &(rc).heads, "all that pass the rules", "head counts allowed below h_base, e.g. 3,6,8", \
      0, 0, 0, 0 }, \
    { "--min-block", CLI_INT, &(rc).min_block, "2", "shortest run of equal heads before the baseline run", 1, \
      SCHEDULE_MAX_L, 0, 0 }, \
    { "--max-block", CLI_INT, &(rc).max_block, "4", "longest run of equal heads before the baseline run " \
      "(0 = no bound)", 0, SCHEDULE_MAX_L, 0, 0 }, \
    { "--min-baseline", CLI_DOUBLE, &(rc).min_baseline, "0.5", "the baseline run covers >= ceil(f*L) layers", 0, 1, \
      0, 0 }

/* The flag name for a rules field ("--min-block"). */
const char *rules_cli_flag_name(schedule_field f);
/* Returns 0 with *r resolved, or prints the error and returns 2. */
int rules_cli_resolve(const char *cmd, const rules_cli *rc, schedule_rules *r);
#endif
