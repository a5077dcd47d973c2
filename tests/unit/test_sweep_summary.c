/* test_sweep_summary.c — the one sweep summary (sweeps_summary in orchestrator/sweeps.c) that `prism-sweep status`
 * prints and GET /api/v1/sweeps serves: counts per state, steps done and in total by the jobs' steps column,
 * jobs done in the window, one sweep or all, and no sweep for an unknown id. */
#include "harness.h"
#include "store.h"
#include "sweeps.h"

#define SPEC(name) "{ \"name\": \"" name "\", \"model\": {\"n_layer\": 4, \"d_model\": 64, \"vocab_size\": 256, " \
                   "\"seq_len\": 32}, \"rules\": {\"h_base\": 4, \"max_head_dim\": 0, \"min_block\": 1, \"max_block\": 2}, " \
                   "\"seeds\": [1, 2], \"train\": {\"steps\": 20, \"lr\": 0.001}, " \
                   "\"data\": {\"train\": \"t*.bin\", \"val\": \"v*.bin\"} }"

static store *open_two(void) {
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/s.db", harness_tmpdir());
    store *st = NULL;
    if (store_open(path, &st, err, sizeof err) != 0) HFAIL("store_open: %s", err);
    sweeps_created c;
    if (sweeps_create_json(st, SPEC("a"), strlen(SPEC("a")), &c, err, sizeof err) != 0) HFAIL("create a: %s", err);
    if (sweeps_create_json(st, SPEC("b"), strlen(SPEC("b")), &c, err, sizeof err) != 0) HFAIL("create b: %s", err);
    return st;
}

TEST(counts_and_steps_of_one_sweep) {
    store *st = open_two();
    /* sweep 1: job 1 done long ago, job 2 done just now, job 3 running at step 7, job 4 cancelled at step 9,
     * job 5 pruned at step 5, job 6 past its steps (counted at most 20); the rest queued */
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'done', step = 20, finished_at = 1 WHERE id = 1"));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'done', step = 20, finished_at = 2e9 WHERE id = 2"));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'leased', step = 7 WHERE id = 3"));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'cancelled', step = 9 WHERE id = 4"));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'pruned', step = 5 WHERE id = 5"));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'failed', step = 99 WHERE id = 6"));
    sweeps_info *v = NULL;
    int n = 0;
    ASSERT_EQ_INT(0, sweeps_summary(st, 1, 1000, &v, &n));
    ASSERT_EQ_INT(1, n);
    long long total = v[0].counts.total;
    printf("sweep 1: %lld jobs, %lld schedules\n", total, (long long)v[0].n_schedules);
    ASSERT_TRUE(total >= 7);
    ASSERT_EQ_INT(total, 2 * v[0].n_schedules);   /* two seeds */
    ASSERT_EQ_INT(2, v[0].counts.done);
    ASSERT_EQ_INT(1, v[0].counts.leased);
    ASSERT_EQ_INT(1, v[0].counts.cancelled);
    ASSERT_EQ_INT(1, v[0].counts.pruned);
    ASSERT_EQ_INT(1, v[0].counts.failed);
    ASSERT_EQ_INT(total - 6, v[0].counts.queued);
    ASSERT_EQ_INT(20 + 20 + 7 + 0 + 5 + 20, v[0].steps_done);
    ASSERT_EQ_INT(20 * (total - 1) - 20 + 5, v[0].steps_total);   /* cancelled: none; pruned: its rung */
    ASSERT_EQ_INT(1, v[0].jobs_done_since);
    ASSERT_STREQ("a", v[0].name);
    free(v);
    sweeps_info one;
    ASSERT_EQ_INT(0, sweeps_get(st, 1, &one));
    ASSERT_EQ_INT(total, one.counts.total);
    ASSERT_EQ_INT(20 + 20 + 7 + 0 + 5 + 20, one.steps_done);
    store_close(st);
}

TEST(all_sweeps_in_id_order_and_unknown_ids) {
    store *st = open_two();
    sweeps_info *v = NULL;
    int n = 0;
    ASSERT_EQ_INT(0, sweeps_summary(st, 0, 0, &v, &n));
    ASSERT_EQ_INT(2, n);
    ASSERT_EQ_INT(1, v[0].id);
    ASSERT_EQ_INT(2, v[1].id);
    ASSERT_STREQ("b", v[1].name);
    ASSERT_EQ_INT(0, v[1].steps_done);
    ASSERT_EQ_INT(20 * v[1].counts.total, v[1].steps_total);
    free(v);
    ASSERT_EQ_INT(0, sweeps_summary(st, 9, 0, &v, &n));
    ASSERT_EQ_INT(0, n);
    free(v);
    sweeps_info one;
    ASSERT_EQ_INT(STORE_ENOTFOUND, sweeps_get(st, 9, &one));
    ASSERT_CONTAINS(st->err, "no sweep with id 9");
    ASSERT_EQ_INT(STORE_ENOTFOUND, sweeps_get(st, 0, &one));   /* 0 is no sweep, not "all of them" */
    store_close(st);
}
