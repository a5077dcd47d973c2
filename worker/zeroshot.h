/* zeroshot.h — zero-shot multiple-choice scoring of a trained model on an llm.c eval file (common/evalfile.h).
 *
 * Each completion c of an example is scored by the model's own forward pass (model_ops.forward_losses, the pass
 * training uses) on the sequence context + c: its loss is the sum of −log p(token | everything before it) over
 * c's tokens. acc = share of examples whose completion with the lowest summed loss is the label; acc_norm = the
 * same with the mean loss per completion token (llm.c's rule); acc_norm_char = the same with the summed loss divided
 * by the choice's character count (lm-evaluation-harness's acc_norm: argmax of loglikelihood / len(choice), the
 * choice without its " " delimiter), only for files that carry the counts (evalfile.h header[4]; prism-data
 * evalfile writes them). A choice of 0 characters never wins by it (lm-eval's -inf). Ties go to the lowest index.
 * A sequence longer than T + 1 tokens (T = the model's window) is cut from the left of its context, keeping at
 * least one context token; `truncated` counts the examples where any completion needed that. A completion of more
 * than T tokens cannot be scored and is an error naming the file and example.
 * Completions are packed one per row into micro-batches of up to B rows, each forward as long as its longest row
 * (rounded up to 8, at most T); padding positions hold token 0, and causal attention keeps them out of the scored
 * positions.
 */
#ifndef PRISM_ZEROSHOT_H
#define PRISM_ZEROSHOT_H
#include "evalfile.h"
#include "model.h"
#include <stddef.h>

struct zeroshot_result {
    double acc, acc_norm;       /* fractions in [0, 1] */
    double acc_norm_char;       /* likewise; meaningful when has_char */
    int has_char;               /* the file has character counts */
    int n;                      /* examples scored */
    int correct, correct_norm;  /* counts behind acc, acc_norm */
    int correct_char;           /* behind acc_norm_char */
    int truncated;              /* examples whose context was cut to fit T */
};

/* Scores every example of f. B, T: the largest micro-batch the model was created for. 0; -1 with err naming
 * the file and example (a completion longer than T); -2 out of memory; -3 the backend failed (err has its message). */
int zeroshot_score(const model_ops *ops, model *m, int B, int T, const struct evalfile *f,
                   struct zeroshot_result *res, char *err, size_t errlen);

/* The three decisions for one example of n completions with summed losses sum[c] over toks[c] tokens and chars[c]
 * characters (chars NULL: no counts, *best_char = -1): the lowest sum, the lowest sum / toks, the lowest
 * sum / chars (0 characters: +inf); ties to the lowest index. */
void zeroshot_decide(const double *sum, const int *toks, const int *chars, int n, int *best, int *best_norm,
                     int *best_char);

/* The (context, completion) row layout used above, for tests that score by another route: with ctx_len context
 * tokens and comp_len completion tokens under window T, *keep = context tokens kept (from the right), and the
 * row's inputs are ctx[ctx_len-keep..] ++ comp[..comp_len-1]. Returns 0, or -1 when comp_len > T. */
int zeroshot_layout(int ctx_len, int comp_len, int T, int *keep);
#endif
