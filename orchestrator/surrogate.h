/* surrogate.h — a model of the schedule space that proposes what to train next (issue #38, the modelling core).
 * Pure: no store, no I/O, no global state; the server (later) feeds it the ranking's per-schedule estimates and
 * inserts what it proposes. The method, the measurement behind the choices and when not to use it: docs/SEARCH.md.
 *
 * Input. n trained schedules heads[n × L] (row-major, each valid or at least hard-valid under the rules) with an
 * estimate y[i] of their effect (lower is better; e.g. the ranking's seed-adjusted τ̂_i from ranking_fit, any
 * common offset is absorbed) and its standard error se[i] > 0 (heteroscedastic: each observation's noise variance
 * is se[i]²; a schedule with fewer seeds simply has a larger se).
 *
 * The model. y_i = μ + f(x_i) + g_i + e_i, e_i ~ N(0, se_i²), f ~ GP(0, σ_f² k(‖x − x'‖/ℓ)), k Matérn-5/2
 * (default) or squared exponential with one shared lengthscale over the features x (below), g_i ~ N(0, σ_g²) a
 * per-schedule nugget (shared by repeated observations of one schedule). μ is the GLS constant mean given
 * (σ_f², σ_g², ℓ); those maximise the marginal likelihood over a fixed grid (deterministic: the same inputs give the
 * same model on every machine). Predictions are of the latent μ + f + g. Exact Cholesky, O(n³) per grid point:
 * meant for n ≤ a few hundred.
 *
 * Features (SURROGATE_F_*). LOGDIM: per layer log2(d_model/h_l) (L numbers). TRANS: the schedule's transition
 * depths, for each allowed head count v below h_base the number of layers with h_l ≤ v, weighted by the log2
 * head-dim step from v to the next allowed count (so its L1 geometry equals LOGDIM's, its Euclidean one does
 * not). BOTH: the two concatenated. The default is BOTH: on bench/bench_search_sim's 12 cells (2 landscapes × 2
 * shapes × 3 budgets, 30 repetitions) it had the lowest mean regret summed over the cells (0.0116 against 0.0129
 * for TRANS and 0.0194 for LOGDIM, the lowest-estimate rule) and the highest mean P(top 1%); most single cells are
 * within Monte Carlo noise, the clearest gap is LOGDIM's at the smallest L=12 budget (docs/SEARCH.md, "Features").
 *
 * Acquisition. Candidates: every valid schedule when the count is ≤ opts.cap, else a uniform sample of cap
 * (schedule_sample, seeded by opts.seed); trained schedules never count as candidates. The untrained candidates
 * with the lowest marginal quantile μ̂ − 2.5σ̂ (at most opts.subset of them) and the trained ones get a joint
 * posterior; batch Thompson sampling draws K joint samples (a fixed-seed RNG) and takes each draw's argmin among
 * the untrained, not yet proposed candidates (a draw whose argmin is taken falls back to its next best). The same
 * draws (opts.draws of them) estimate P(min over untrained < min over trained − δ). With numeric axes each
 * candidate schedule is paired with uniform random coordinates (every valid schedule several times, up to 16, when
 * the set is small), and the best trained points' schedules are paired again with their coordinates perturbed
 * (local refinement along the axes); coordinates are quantized (surrogate_axis_value) before scoring.
 *
 * Ownership. surrogate_fit fills a caller's surrogate_model whose arrays it owns (surrogate_release frees them;
 * release on a zeroed or released model is a no-op). Every other output goes to caller-provided arrays.
 * Returns: 0 (or a documented count ≥ 0) on success, a negative SURROGATE_E* on failure (nothing to free then).
 */
#ifndef PRISM_SURROGATE_H
#define PRISM_SURROGATE_H
#include <stdint.h>

#include "schedule.h"

enum {
    SURROGATE_EINVAL = -1,   /* bad arguments: n < 1, se ≤ 0 or not finite, an L mismatch, bad rules */
    SURROGATE_ENOMEM = -2,
    SURROGATE_ENUM = -3,     /* the kernel matrix is not positive definite at any grid point (duplicated inputs
                                with zero noise) */
    SURROGATE_ESPACE = -4,   /* the rules have no valid schedule, or too many to sample (schedule.h overflow) */
};

enum { SURROGATE_F_LOGDIM = 1, SURROGATE_F_TRANS = 2, SURROGATE_F_BOTH = 3 };
#define SURROGATE_F_DEFAULT SURROGATE_F_BOTH   /* by measurement: docs/SEARCH.md, "Features" */
enum { SURROGATE_K_MATERN52 = 0, SURROGATE_K_SE = 1 };

#define SURROGATE_CAP 5000        /* default candidate cap: score the whole valid set up to this many */
#define SURROGATE_SUBSET 400      /* default size of the jointly sampled untrained subset */
#define SURROGATE_DRAWS 256       /* default Thompson draws for the probability of improvement */
#define SURROGATE_JITTER 1e-10    /* × σ_f², added to the kernel matrix's diagonal (also to the joint draw's) */

/* A numeric search dimension beyond the heads (a train key such as lr, issue #38): a point's coordinate u in
 * [0, 1] maps to lo + u (hi − lo), or on a log scale to lo (hi / lo)^u (log: lo > 0). Values are quantized, so a
 * proposal is a value a person can read and type: integer axes round to the nearest integer, real ones to 3
 * significant digits; a proposed u is always unit(value(u)), so two proposals of one value are the same point. */
#define SURROGATE_MAX_AXES 4
typedef struct surrogate_axis {
    double lo, hi;    /* lo < hi */
    int log;          /* 1: log scale */
    int integer;      /* 1: integer values */
} surrogate_axis;
/* The quantized value at u (clamped to [0, 1]), and the coordinate of a value (clamped to the range). */
double surrogate_axis_value(const surrogate_axis *a, double u);
double surrogate_axis_unit(const surrogate_axis *a, double value);

typedef struct surrogate_opts {
    int features;     /* SURROGATE_F_*, 0 = SURROGATE_F_DEFAULT */
    int kernel;       /* SURROGATE_K_* */
    int cap;          /* candidates; 0 = SURROGATE_CAP */
    int subset;       /* 0 = SURROGATE_SUBSET */
    int draws;        /* 0 = SURROGATE_DRAWS (at least K are always drawn) */
    double delta;     /* the δ of P(beat best trained by more than δ) (≥ 0) */
    uint64_t seed;    /* the RNG of the draws and of the candidate sample */
    const int *exclude;   /* (nexclude × L) schedules never to propose beyond the trained ones (e.g. in the sweep
                             without a value yet: all their jobs failed), or NULL; borrowed */
    int nexclude;
    /* Numeric axes (naxes 0: heads only, the model of the top). A point is then heads[L] plus u[naxes] in [0, 1];
     * the kernel's distance is √(‖x − x'‖² + w² ‖u − u'‖²) with the axes' weight w fitted with the other
     * hyperparameters (a grid around the schedule features' median distance), so the data say how much a step
     * along the axes counts against a step in the schedule. */
    int naxes;
    const surrogate_axis *axes;   /* (naxes); copied by surrogate_fit */
    const double *u;              /* surrogate_fit: (n × naxes) the trained points' coordinates; borrowed */
    const double *exclude_u;      /* (nexclude × naxes) the excluded points' coordinates */
    const double *base_u;         /* surrogate_initial_design: the baseline's coordinates (the spec's own values);
                                     NULL = 0.5 each */
    double *out_u;                /* surrogate_propose / surrogate_initial_design: (K × naxes) the chosen points'
                                     coordinates, written beside out; required when naxes > 0 */
    double *best_u;               /* surrogate_propose: the predicted best untrained point's coordinates, or NULL */
} surrogate_opts;

typedef struct surrogate_model {
    schedule_rules rules;   /* resolved copy */
    int L, dim, n;          /* layers, feature dimension, observations */
    int features, kernel;
    double *x;              /* (n × dim) features of the trained schedules */
    int *heads;             /* (n × L) copy of the trained schedules */
    double *y, *noise;      /* (n) estimates and their variances se² */
    double *chol;           /* (n × n) lower Cholesky factor of σ_f² K + diag(noise) */
    double *alpha;          /* (n) (σ_f² K + N)⁻¹ (y − μ) */
    double mu, sf2, ell;    /* the fitted constant mean, signal variance and lengthscale */
    double sg2;             /* the nugget: the variance of a per-schedule term the features do not explain */
    double loglik;          /* log marginal likelihood at the optimum (μ profiled) */
    int naxes;              /* numeric axes (opts.naxes) */
    surrogate_axis axes[SURROGATE_MAX_AXES];
    double *u;              /* (n × naxes) the trained points' coordinates, or NULL without axes */
    double wu;              /* the fitted weight of the axes in the distance (0 without axes) */
} surrogate_model;

/* The feature vector of one schedule into x (room for surrogate_dim). Returns its dimension, or SURROGATE_EINVAL.
 * rules must be resolved (schedule_rules_resolve). */
int surrogate_dim(const schedule_rules *rules, int features);
int surrogate_features(const schedule_rules *rules, int features, const int *heads, double *x);

/* Fits the model on n observations (see the top). rules are resolved internally (a copy). Returns 0 or < 0. */
int surrogate_fit(surrogate_model *m, const schedule_rules *rules, const int *heads, const double *y,
                  const double *se, int n, const surrogate_opts *opts);

/* Posterior of the latent μ + f at k schedules heads[k × L]: mean[k] and variance var[k] (var may be NULL).
 * Applied to the trained schedules it is their shrunken estimate. Returns 0 or < 0. */
int surrogate_predict(const surrogate_model *m, const int *heads, int k, double *mean, double *var);
/* The same at k points heads[k × L], u[k × naxes] (u may be NULL only for a model without axes). */
int surrogate_predict_at(const surrogate_model *m, const int *heads, const double *u, int k, double *mean, double *var);

/* What a caller shows next to the ranking. */
typedef struct surrogate_outlook {
    int ncand;              /* candidates scored (untrained) */
    int exhaustive;         /* 1: the candidates were the whole valid set */
    int subset;             /* untrained candidates in the joint draws */
    int draws;              /* joint draws made */
    double best_mean, best_sd;   /* the predicted best untrained schedule (lowest posterior mean) */
    int best_trained;       /* the trained schedule (index into the fit's inputs) with the lowest posterior mean: the
                               recommendation to show, less exposed to the winner's curse than the lowest raw
                               estimate (docs/SEARCH.md, the bench's "pm" rule) */
    double best_trained_mean, best_trained_sd;
    double p_beat;          /* P(some untrained schedule beats the best trained by more than δ), from the draws;
                               NAN without untrained candidates */
} surrogate_outlook;

/* Proposes up to K schedules into out[K × L] (distinct, valid, never one of the model's trained ones), and
 * fills *look (may be NULL) and best_heads[L] (may be NULL: the predicted best untrained schedule). K = 0 (out may
 * then be NULL) computes only the outlook. Returns how many were proposed (fewer than K only when fewer untrained
 * candidates exist), or < 0. The same model, K and opts (seed included) give the same proposals. */
int surrogate_propose(const surrogate_model *m, int K, const surrogate_opts *opts, int *out,
                      surrogate_outlook *look, int *best_heads);

/* A space-filling initial design of M schedules into out[M × L]: the uniform baseline (rank 0) first, then
 * greedy maximin over the feature distance among the valid set (a uniform sample of opts.cap when larger; ties
 * to the earlier candidate in enumeration order). Returns how many (min(M, count)), or < 0. */
int surrogate_initial_design(const schedule_rules *rules, int M, const surrogate_opts *opts, int *out);

/* Leave-one-out over the model's n observations, with its hyperparameters kept: mean[i] and sd[i] are the
 * predictive mean and sd of observation i from the other n − 1 (sd includes its noise se_i and the nugget), in
 * closed form from the fit's Cholesky factor (O(n³)). Returns 0 or < 0. */
int surrogate_loo(const surrogate_model *m, double *mean, double *sd);

void surrogate_release(surrogate_model *m);
#endif
