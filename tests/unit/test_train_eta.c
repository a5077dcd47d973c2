/* test_train_eta.c — the built-in engine's ETA counts the evaluations still to come (worker/train.h train_eta_s):
 * issue #41's job spent most of its 86.9 s evaluating and read "14 s left" at step 50 of 300.
 */
#include "harness.h"
#include "train.h"

TEST(evaluations_left_are_counted) {
    /* 300 steps, eval every 25: after step 50 the loop still evaluates before steps 75, 100, ..., 275 (9) and at the
     * end (1) */
    double eta = train_eta_s(50, 300, 25, 0.05, 7.0);
    printf("eta after step 50 of 300, every 25: %.4f s (steps %.4f + 10 evals x 7 s)\n", eta, 249 * 0.05);
    ASSERT_NEAR(249 * 0.05 + 10 * 7.0, eta, 1e-9);
    ASSERT_NEAR(250 * 0.05 + 11 * 7.0, train_eta_s(49, 300, 25, 0.05, 7.0), 1e-9);   /* the eval before step 50 too */
    ASSERT_NEAR(7.0, train_eta_s(299, 300, 25, 0.05, 7.0), 1e-9);                    /* the last step: the final one */
    ASSERT_NEAR(100 * 0.5 + 1.0, train_eta_s(99, 200, 0, 0.5, 1.0), 1e-9);            /* no periodic eval: the final */
    ASSERT_NEAR(100 * 0.5, train_eta_s(99, 200, 25, 0.5, -1), 1e-9);                  /* none measured yet */
    ASSERT_NEAR(2 * 1.0 + 3 * 3.0, train_eta_s(0, 3, 1, 1.0, 3.0), 1e-9);   /* every step: before 1, 2, and the end */
}
