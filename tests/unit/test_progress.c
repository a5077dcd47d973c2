/* test_progress.c — the worker's live line (worker/progress.c) never passes the width it is given. */
#include "harness.h"
#include "progress.h"

#include <math.h>

static progress_row busy_row(void) {
    progress_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.device, sizeof r.device, "cpu#12");
    snprintf(r.schedule, sizeof r.schedule, "3,3,6,6,8,8,12,12,12,12,12,12,12,12,12,12,12,12,12,12,12,12,12,12");
    r.job_id = 123456789;
    r.attempt = 12;
    r.step = 41999;
    r.steps = 100000;
    r.loss = 3.21;
    r.val_loss = 3.3;
    r.val_step = 40000;
    r.tok_s = 123456;
    r.eta_s = 98765;
    r.started = 1000;
    r.sweep_done = 1234;
    r.sweep_jobs = 5000;
    return r;
}

TEST(every_width_is_respected) {
    progress_row r = busy_row(), idle = busy_row();
    idle.job_id = 0;
    char buf[4100];
    for (int w = 2; w <= 400; w++) {
        progress_format(&r, w, 2000, buf, sizeof buf);
        if ((int)strlen(buf) > w - 1) HFAIL("width %d: %zu characters: [%s]", w, strlen(buf), buf);
        progress_format(&idle, w, 2000, buf, sizeof buf);
        if ((int)strlen(buf) > w - 1) HFAIL("idle, width %d: %zu characters: [%s]", w, strlen(buf), buf);
    }
}

TEST(fields_by_importance) {
    progress_row r = busy_row();
    char buf[4100];
    progress_format(&r, 80, 2000, buf, sizeof buf);
    /* ETA comes before val: the one a user waits on fits first */
    ASSERT_TRUE(strstr(buf, "[cpu#12] job 123456789/a12 [###-----]  42% 42000/100000 loss 3.2100 ETA 27h26m") == buf);
    ASSERT_TRUE(strstr(buf, "val ") == NULL);   /* the next field does not fit: it and the rest are left out */
    progress_format(&r, 110, 2000, buf, sizeof buf);
    ASSERT_TRUE(strstr(buf, "val 3.3000@40000") != NULL);
    ASSERT_TRUE(strstr(buf, "ETA 27h26m") != NULL);
    progress_format(&r, 240, 2000, buf, sizeof buf);
    ASSERT_TRUE(strstr(buf, "elapsed 16m40s") != NULL);
    ASSERT_TRUE(strstr(buf, "sweep 1234/5000") != NULL);
    ASSERT_TRUE(strstr(buf, "123456 tok/s") != NULL);
}

TEST(no_nan_before_the_first_evaluation) {
    progress_row r = busy_row();
    r.val_loss = NAN;
    r.val_step = -1;
    r.loss = NAN;
    char buf[4100];
    progress_format(&r, 200, 2000, buf, sizeof buf);
    ASSERT_TRUE(strstr(buf, "nan") == NULL);
    ASSERT_TRUE(strstr(buf, "val -") != NULL);
    ASSERT_TRUE(strstr(buf, "loss -") != NULL);
}

TEST(columns_sets_the_width) {
    setenv("COLUMNS", "57", 1);
    ASSERT_EQ_INT(57, progress_width());
    setenv("COLUMNS", "", 1);
    ASSERT_TRUE(progress_width() > 0);
}
