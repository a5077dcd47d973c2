/* ranking_fit.h — the blocked model at one level: val loss ~ schedule + seed by least squares over a level's
 * observations (ranking_fit_compute), the contrasts' variances it gives (ranking_fit_var, ranking_fit_contrast),
 * its refit to other values on the same design (ranking_fit_refit, the best group's permutations) and the outlier
 * screen built on it (ranking_screen). The model and its assumptions are ranking.h's header and
 * docs/STATISTICS.md; the ranking (ranking.h) compares schedules on these fits, racing and the search fit their
 * rounds with them.
 *
 * Pure: no store, no I/O, no global state; nothing allocated beyond a fit's own arrays (ranking_fit_release frees
 * them) and the scratch each function frees before it returns.
 */
#ifndef PRISM_RANKING_FIT_H
#define PRISM_RANKING_FIT_H

#define RANKING_SCREEN_ALPHA 0.01   /* the screen's per-level false-screen rate (Bonferroni over the level's jobs) */
#define RANKING_MAX_SEEDS 256       /* the blocked model's seed limit (beyond: the paired method, said so) */

/* one observation: a job's value at a level */
typedef struct ranking_obs {
    int sched;                   /* 0 ≤ sched < nsched */
    long long seed;
    double y;                    /* the val loss at the level */
    const double *batches;       /* (nbatch) per-batch val losses, or NULL (borrowed) */
    int nbatch;
    long long job_id;            /* the job it came from, named when screened (0 in the pure tests) */
} ranking_obs;

/* val loss ~ schedule + seed by least squares at one level */
typedef struct ranking_fit {
    int nsched, nseed, nobs;     /* schedules (with or without data), distinct seeds, observations */
    int df;                      /* residual degrees of freedom (0: no noise estimate) */
    int ncomp;                   /* connected components of the schedule–seed incidence graph */
    int balanced;                /* every schedule with data has every seed */
    double rss, sd;              /* residual sum of squares; pooled sd sqrt(rss/df) (NAN when df = 0) */
    double *tau;                 /* (nsched) schedule effect, comparable within a component; NAN without data */
    int *r;                      /* (nsched) observations */
    int *comp;                   /* (nsched) component, -1 without data */
    double *ms, *dfi;            /* (nsched) residual mean square and residual df of each schedule */
    double *u;                   /* (nsched × nkept) N_ij / r_i over the kept seeds */
    double *sinv;                /* (nkept × nkept) inverse of the reduced seed information matrix */
    int nkept;                   /* seeds minus one per component */
    long long *seeds;            /* (nseed) ascending */
    double *y;                   /* (nsched × nseed) the observations, NAN for a missing cell */
    const ranking_obs **cell;    /* (nsched × nseed) the observation of each cell, NULL when missing (borrowed from
                                    the caller's obs[]; ranking_build frees the table with its observations: NULL) */
    int *kept;                   /* (nseed) index among the kept seeds, -1 for the one dropped per component */
    double bartlett_p, bartlett_stat;
    int bartlett_groups;         /* schedules the test used (2+ observations); p NAN when fewer than 3 */
    double *beta;                /* (nseed) seed effects (0 for the dropped seed of each component) */
    double d0, s02;              /* the empirical-Bayes prior of the schedules' variances (stats_eb_prior over ms/dfi;
                                    d0 INFINITY: no excess spread, the moderated variance is the pooled one); NAN
                                    without 2 schedules with residual df */
    double *s2m, *dfm;           /* (nsched) moderated variance (d0·s0² + d_i·ms_i)/(d0 + d_i) and its df
                                    (≤ the pooled df); the pooled sd² and df when d0 is infinite; NAN without data */
} ranking_fit;

/* Fits obs[0..nobs). Returns 0, -1 on no memory (f released), -2 when there are more than RANKING_MAX_SEEDS
 * seeds (f released). A duplicate (schedule, seed) is not expected (one job per cell): the later one wins. */
int ranking_fit_compute(const ranking_obs *obs, int nobs, int nsched, ranking_fit *f);
/* Var(τ̂_a − τ̂_b)/σ²; NAN when a or b has no data or they are in different components. */
double ranking_fit_var(const ranking_fit *f, int a, int b);
/* Var(τ̂_a − τ̂_b) with each schedule at its own moderated variance s2m (not divided by σ²): Σ_s w_s s̃²_s over the
 * contrast's coefficients on the observations, and in *df its Satterthwaite df (Σ w s̃²)² / Σ (w s̃²)²/dfm, at most
 * the pooled df. NAN (and *df NAN) when a or b has no data or no variance, a = b, or they are in different
 * components. Allocates nothing for the common case (a and b miss the same seeds); else at most nkept doubles. */
double ranking_fit_contrast(const ranking_fit *f, int a, int b, double *df);
void ranking_fit_release(ranking_fit *f);
/* The fit of f's design to other values y[] (nsched × nseed, f's cells; the rest is not read): the design's parts
 * (u, S⁻¹, leverages, dfi) do not depend on y, so only β̂, τ̂, rss, sd, the mean squares and the moderation are
 * recomputed into g, O(cells · nkept). g is f's shallow copy with its own tau, beta, ms, s2m, dfm (the caller's
 * arrays, f's sizes); T (nsched) and Q (nkept + 1) are the caller's scratch. Returns 0, -1 on no memory. */
int ranking_fit_refit(const ranking_fit *f, ranking_fit *g, const double *y, double *T, double *Q);

/* Screens obs[0..nobs) at one level (the same rule in ranking_compute, racing and halving; docs/STATISTICS.md):
 * repeatedly fits the blocked model on the observations not yet screened and leaves out the one whose |deleted
 * studentized residual| is largest while it exceeds the rule's threshold. On return out[k] is 1 for a screened
 * observation (0 otherwise) and, when resid/thr are not NULL, resid[k] and thr[k] hold its residual and the
 * threshold it exceeded (NAN for the rest). Returns the number screened (≥ 0), -1 on no memory (out[] all 0). */
int ranking_screen(const ranking_obs *obs, int nobs, int nsched, unsigned char *out, double *resid, double *thr);
#endif
