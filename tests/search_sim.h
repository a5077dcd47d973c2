/* tests/search_sim.h — simulated searches over the schedule space (issue #38), shared by tests/unit/test_surrogate.c
 * and bench/bench_search_sim.c. Header-only (static functions): each test and bench is one program. No training,
 * no server: a landscape gives each valid schedule a true effect, a simulated sweep trains a schedule on SS_SEEDS
 * seeds, and the real blocked model (ranking_fit_compute) turns the cells trained so far into the per-schedule
 * estimates and SEs the surrogate is fitted on.
 *
 * The space. ss_space holds every valid schedule of the rules in enumeration order (rank = index) and a hash from
 * a schedule to its index.
 * Landscapes (ss_landscape), from a seed, scaled so the valid set spans [0, SS_RANGE] (0.03, the paper's largest
 * gaps); u_l = log2 head dim of layer l, p_l = (l + ½)/L its depth:
 *   SS_SMOOTH  additive: Σ_l w_l (u_l − c(p_l))² with a random linear optimum c(p) = c0 + c1 p (large head dims
 *              early when c1 < 0) and random weights w_l ∈ [0.5, 1.5];
 *   SS_ROUGH   the smooth one (weight 1) + pairwise interactions Σ_l a_l (u_l − ū)(u_{π(l)} − ū) between random
 *              layer pairs (weight 0.5 of its own range) + an idiosyncratic per-schedule term (sd 0.08 of the range)
 *              that no model of the features can predict.
 * A sweep (ss_sweep). Seed effects β_j ~ N(0, SS_SEED_SD²) shared by every schedule, run noise N(0, SS_RUN_SD²) per
 * (schedule, seed) cell drawn from the cell's own stream, so every method sees the same noise for the same cell
 * (common random numbers). y = 3.36 + truth + β_j + ε.
 * Searches. ss_search_surrogate: the surrogate's initial design of M, then batches of K proposed by
 * surrogate_propose (the last batch before a checkpoint cut to land on it), recording at each checkpoint the
 * schedule chosen = lowest estimate among the trained. ss_search_random: a uniform sample of the budget
 * (schedule_sample), the same choice rule.
 */
#ifndef PRISM_SEARCH_SIM_H
#define PRISM_SEARCH_SIM_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ranking.h"
#include "ranking_sim.h"
#include "schedule.h"
#include "surrogate.h"

#define SS_SEEDS 3
#define SS_RUN_SD 0.002
#define SS_SEED_SD 0.02
#define SS_RANGE 0.03
enum { SS_SMOOTH = 0, SS_ROUGH = 1 };

typedef struct ss_space {
    schedule_rules r;
    int L, n;
    int *heads;          /* (n × L) */
    int *tab, tabsz;     /* open-addressing hash: index + 1, 0 empty */
} ss_space;

static __attribute__((unused)) uint64_t ss_hash(const int *h, int L) {
    uint64_t x = 1469598103934665603ULL;
    for (int l = 0; l < L; l++) { x ^= (uint64_t)h[l]; x *= 1099511628211ULL; }
    return x;
}
static __attribute__((unused)) int ss_add(const int *h, int L, void *ctx) {
    ss_space *s = ctx;
    int *p = realloc(s->heads, (size_t)(s->n + 1) * L * sizeof *p);
    if (!p) return -1;
    s->heads = p;
    memcpy(s->heads + (size_t)s->n++ * L, h, (size_t)L * sizeof *h);
    return 0;
}
/* 0 or -1 */
static __attribute__((unused)) int ss_space_init(ss_space *s, const schedule_rules *r) {
    memset(s, 0, sizeof *s);
    s->r = *r;
    if (schedule_rules_resolve(&s->r, NULL, NULL, 0) != 0) return -1;
    s->L = s->r.L;
    if (schedule_enumerate(&s->r, ss_add, s) != 0) return -1;
    for (s->tabsz = 64; s->tabsz < 4 * s->n; s->tabsz *= 2) {}
    s->tab = calloc((size_t)s->tabsz, sizeof *s->tab);
    if (!s->tab) return -1;
    for (int i = 0; i < s->n; i++) {
        size_t k = ss_hash(s->heads + (size_t)i * s->L, s->L) & (size_t)(s->tabsz - 1);
        while (s->tab[k]) k = (k + 1) & (size_t)(s->tabsz - 1);
        s->tab[k] = i + 1;
    }
    return 0;
}
static __attribute__((unused)) int ss_index(const ss_space *s, const int *h) {
    size_t k = ss_hash(h, s->L) & (size_t)(s->tabsz - 1);
    for (; s->tab[k]; k = (k + 1) & (size_t)(s->tabsz - 1))
        if (memcmp(s->heads + (size_t)(s->tab[k] - 1) * s->L, h, (size_t)s->L * sizeof *h) == 0) return s->tab[k] - 1;
    return -1;
}
static __attribute__((unused)) void ss_space_free(ss_space *s) { free(s->heads); free(s->tab); memset(s, 0, sizeof *s); }

static __attribute__((unused)) void ss_normalise(double *v, int n) {
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) { lo = fmin(lo, v[i]); hi = fmax(hi, v[i]); }
    for (int i = 0; i < n; i++) v[i] = hi > lo ? (v[i] - lo) / (hi - lo) : 0;
}

/* truth[s->n] for a landscape kind from seed */
static __attribute__((unused)) void ss_landscape(const ss_space *s, int kind, uint64_t seed, double *truth) {
    sim_rng g = { seed * 0x9e3779b97f4a7c15ULL + 17, 0, 0 };
    int L = s->L;
    double umin = INFINITY, umax = -INFINITY;
    for (int i = 0; i < s->n * L; i++) {
        double u = log2((double)s->r.d_model / s->heads[i]);
        umin = fmin(umin, u); umax = fmax(umax, u);
    }
    double c0 = umin + (umax - umin) * (0.3 + 0.7 * sim_unif(&g)), c1 = -(umax - umin) * 1.2 * sim_unif(&g);
    double w[SCHEDULE_MAX_L], a[SCHEDULE_MAX_L];
    int pi[SCHEDULE_MAX_L];
    for (int l = 0; l < L; l++) { w[l] = 0.5 + sim_unif(&g); a[l] = sim_gauss(&g); pi[l] = sim_below(&g, L); }
    double *inter = malloc((size_t)s->n * sizeof *inter);
    for (int i = 0; i < s->n; i++) {
        const int *h = s->heads + (size_t)i * L;
        double f = 0, ub = 0, q = 0;
        for (int l = 0; l < L; l++) {
            double u = log2((double)s->r.d_model / h[l]), d = u - (c0 + c1 * (l + 0.5) / L);
            f += w[l] * d * d;
            ub += u / L;
        }
        for (int l = 0; l < L; l++)
            q += a[l] * (log2((double)s->r.d_model / h[l]) - ub) * (log2((double)s->r.d_model / h[pi[l]]) - ub);
        truth[i] = f;
        if (inter) inter[i] = q;
    }
    ss_normalise(truth, s->n);
    if (kind == SS_ROUGH && inter) {
        ss_normalise(inter, s->n);
        for (int i = 0; i < s->n; i++) truth[i] += 0.5 * inter[i] + 0.08 * sim_gauss(&g);
        ss_normalise(truth, s->n);
    }
    for (int i = 0; i < s->n; i++) truth[i] *= SS_RANGE;
    free(inter);
}

/* a simulated sweep over one landscape: seed effects and per-cell noise streams */
typedef struct ss_sweep {
    const ss_space *s;
    const double *truth;
    uint64_t seed;
    double beta[SS_SEEDS];
} ss_sweep;
static __attribute__((unused)) void ss_sweep_init(ss_sweep *w, const ss_space *s, const double *truth, uint64_t seed) {
    w->s = s; w->truth = truth; w->seed = seed;
    sim_rng g = { seed ^ 0xbe7a5eedULL, 0, 0 };
    for (int j = 0; j < SS_SEEDS; j++) w->beta[j] = SS_SEED_SD * sim_gauss(&g);
}
static __attribute__((unused)) double ss_cell(const ss_sweep *w, int idx, int j) {
    sim_rng g = { w->seed * 0x2545f4914f6cdd1dULL + (uint64_t)idx * SS_SEEDS + j + 1, 0, 0 };
    sim_unif(&g);
    return 3.36 + w->truth[idx] + w->beta[j] + SS_RUN_SD * sim_gauss(&g);
}
/* the blocked model over the n trained schedules idx[]: est[n], se[n]; returns the position of the lowest estimate
 * (the chosen schedule), -1 on failure */
static __attribute__((unused)) int ss_estimates(const ss_sweep *w, const int *idx, int n, double *est, double *se) {
    ranking_obs *obs = calloc((size_t)n * SS_SEEDS, sizeof *obs);
    if (!obs) return -1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < SS_SEEDS; j++)
            obs[i * SS_SEEDS + j] = (ranking_obs){ .sched = i, .seed = 1000 + j, .y = ss_cell(w, idx[i], j),
                                                   .job_id = 1 + (long long)i * SS_SEEDS + j };
    ranking_fit f;
    int best = -1;
    if (ranking_fit_compute(obs, n * SS_SEEDS, n, &f) == 0) {
        for (int i = 0; i < n; i++) {
            est[i] = f.tau[i];
            double v = f.s2m && isfinite(f.s2m[i]) ? f.s2m[i] : (isfinite(f.sd) ? f.sd * f.sd : SS_RUN_SD * SS_RUN_SD);
            se[i] = sqrt(v / (f.r[i] > 0 ? f.r[i] : 1));
            if (best < 0 || est[i] < est[best]) best = i;
        }
        ranking_fit_release(&f);
    }
    free(obs);
    return best;
}

/* the surrogate search: chosen[c] = the grid index chosen at checkpoint budget ck[c] (ascending) by the lowest
 * estimate among the trained; chosen_pm (may be NULL) the one with the lowest posterior mean of the surrogate fitted
 * on them (the shrunken estimate); trained (may be NULL, room for ck[nck − 1]) the grid indices trained, in order;
 * look (may be NULL) the outlook of the model fitted at the last checkpoint (P(beat by opts.delta) included).
 * 0 or -1 */
static __attribute__((unused)) int ss_search_surrogate(const ss_sweep *w, int M, int K, const int *ck, int nck,
                                                       const surrogate_opts *o, int *chosen, int *chosen_pm,
                                                       int *trained, surrogate_outlook *look) {
    const ss_space *s = w->s;
    int L = s->L, cap = ck[nck - 1], n = 0, c = 0, rc = -1;
    int *idx = malloc((size_t)cap * sizeof *idx), *hb = malloc((size_t)cap * L * sizeof *hb);
    double *est = malloc((size_t)cap * sizeof *est), *se = malloc((size_t)cap * sizeof *se),
           *pm = malloc((size_t)cap * sizeof *pm);
    if (!idx || !hb || !est || !se || !pm) goto out;
    int m0 = surrogate_initial_design(&s->r, M < ck[0] ? M : ck[0], o, hb);
    if (m0 < 1) goto out;
    for (; n < m0; n++) idx[n] = ss_index(s, hb + (size_t)n * L);
    while (c < nck) {
        int b = ss_estimates(w, idx, n, est, se);
        if (b < 0) goto out;
        surrogate_model m;
        for (int i = 0; i < n; i++) memcpy(hb + (size_t)i * L, s->heads + (size_t)idx[i] * L, (size_t)L * sizeof *hb);
        if (surrogate_fit(&m, &s->r, hb, est, se, n, o) != 0) goto out;
        if (n >= ck[c]) {
            int bp = 0;
            if (chosen_pm && surrogate_predict(&m, hb, n, pm, NULL) == 0)
                for (int i = 1; i < n; i++) if (pm[i] < pm[bp]) bp = i;
            for (; c < nck && n >= ck[c]; c++) {
                chosen[c] = idx[b];
                if (chosen_pm) chosen_pm[c] = idx[bp];
            }
        }
        int got = 0;
        if (c < nck) {
            int k = K < ck[c] - n ? K : ck[c] - n;
            got = surrogate_propose(&m, k, o, hb + (size_t)n * L, NULL, NULL);
        } else if (look && surrogate_propose(&m, 0, o, NULL, look, NULL) < 0) {
            surrogate_release(&m);
            goto out;
        }
        surrogate_release(&m);
        if (c == nck) break;
        if (got < 1) goto out;
        for (int i = 0; i < got; i++, n++) idx[n] = ss_index(s, hb + (size_t)n * L);
    }
    if (trained) memcpy(trained, idx, (size_t)n * sizeof *idx);
    rc = 0;
out:
    free(idx); free(hb); free(est); free(se); free(pm);
    return rc;
}

typedef struct { int *idx, n; const ss_space *s; } ss_pick;
static __attribute__((unused)) int ss_pick_add(const int *h, int L, void *ctx) {
    ss_pick *p = ctx;
    p->idx[p->n++] = ss_index(p->s, h);
    return 0;
}
/* uniform random search of budget schedules: the chosen grid index, or -1; trained (may be NULL, room for budget)
 * gets the grid indices trained */
static __attribute__((unused)) int ss_search_random(const ss_sweep *w, int budget, uint64_t seed, int *trained) {
    ss_pick p = { malloc((size_t)budget * sizeof(int)), 0, w->s };
    double *est = malloc((size_t)budget * sizeof *est), *se = malloc((size_t)budget * sizeof *se);
    int r = -1;
    if (p.idx && est && se && schedule_sample(&w->s->r, (uint64_t)budget, seed, ss_pick_add, &p) == 0) {
        int b = ss_estimates(w, p.idx, p.n, est, se);
        if (b >= 0) r = p.idx[b];
        if (trained) memcpy(trained, p.idx, (size_t)p.n * sizeof *p.idx);
    }
    free(p.idx); free(est); free(se);
    return r;
}

/* how many valid schedules are truly better than idx; "top 1%" = fewer than ceil(0.01 n) */
static __attribute__((unused)) int ss_better(const ss_space *s, const double *truth, int idx) {
    int k = 0;
    for (int i = 0; i < s->n; i++) k += truth[i] < truth[idx];
    return k;
}
static __attribute__((unused)) int ss_top1(const ss_space *s, const double *truth, int idx) {
    int top = (int)ceil(0.01 * s->n);
    return ss_better(s, truth, idx) < top;
}
static __attribute__((unused)) int cmp_double_ss(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static __attribute__((unused)) double ss_min(const double *v, int n) {
    double m = INFINITY;
    for (int i = 0; i < n; i++) m = fmin(m, v[i]);
    return m;
}
#endif
