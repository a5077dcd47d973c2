/* rules_cli.c — schedule-rule flags to schedule_rules, with errors that name the flag and its valid range.
 *
 * Design: cli.c already checked each number against its static range; the rules' cross-field checks
 * (h_base divides d_model, the baseline head dim within --max-head-dim, --heads entries that can occur) live in
 * schedule_rules_resolve, which reports the field; here we only map the field to its flag name.
 */
#include "rules_cli.h"

#include <stdio.h>

void rules_cli_init(rules_cli *rc) {
    schedule_rules d;
    schedule_rules_default(&d);
    rc->L = d.L;
    rc->dmodel = d.d_model;
    rc->hbase = d.h_base;
    rc->max_head_dim = d.max_head_dim;
    rc->pow2 = d.pow2;
    rc->min_block = d.min_block;
    rc->max_block = -1;   /* not given: the default, raised to --min-block when that is above it */
    rc->min_baseline = d.min_baseline;
    rc->heads = NULL;
}

const char *rules_cli_flag_name(schedule_field f) {
    switch (f) {
    case SCHEDULE_F_L: return "--L";
    case SCHEDULE_F_DMODEL: return "--dmodel";
    case SCHEDULE_F_HBASE: return "--hbase";
    case SCHEDULE_F_MAX_HEAD_DIM: return "--max-head-dim";
    case SCHEDULE_F_POW2: return "--pow2";
    case SCHEDULE_F_HEADS: return "--heads";
    case SCHEDULE_F_MIN_BLOCK: return "--min-block";
    case SCHEDULE_F_MAX_BLOCK: return "--max-block";
    case SCHEDULE_F_MIN_BASELINE: return "--min-baseline";
    default: return "rules";
    }
}

int rules_cli_resolve(const char *cmd, const rules_cli *rc, schedule_rules *r) {
    schedule_rules_default(r);
    r->L = rc->L;
    r->d_model = rc->dmodel;
    r->h_base = rc->hbase;
    r->max_head_dim = rc->max_head_dim;
    r->pow2 = rc->pow2;
    r->min_block = rc->min_block;
    /* --max-block not given: the default (schedule_rules_default's), raised to --min-block when that is above it
     * (`--min-block 5` alone is not an error about a flag the user did not give) */
    if (rc->max_block >= 0) r->max_block = rc->max_block;
    else if (r->max_block != 0 && r->max_block < r->min_block) r->max_block = r->min_block;
    r->min_baseline = rc->min_baseline;
    if (rc->heads) {
        char err[200];
        int n = 0;
        if (schedule_parse(rc->heads, r->heads, SCHEDULE_MAX_ALLOWED, &n, err, sizeof err) < 0)
            return cli_error(cmd, "--heads: %s (give head counts like 3,6,8)", err);
        r->n_heads = n;
    }
    char msg[300];
    schedule_field f = SCHEDULE_F_NONE;
    if (schedule_rules_resolve(r, &f, msg, sizeof msg) < 0)
        return cli_error(cmd, "%s %s", rules_cli_flag_name(f), msg);
    return 0;
}
