/* test_schedule.c — the enumerator against a brute-force reference, counting, unranking, sampling, validation
 * messages, parsing and formatting (common/schedule.c).
 *
 * The reference generates every non-decreasing sequence of divisors of d_model that are <= h_base, in
 * descending lexicographic order, and filters it with the rules written out directly from the rules' text (not with
 * schedule_validate); enumerate must produce exactly that list, in that order, and count must equal its length.
 * timeout: 120
 */
#include "harness.h"
#include "schedule.h"

#include <stdint.h>

/* ---- brute-force reference ---------------------------------------------------------------------- */
typedef struct ref {
    const schedule_rules *r;  /* resolved */
    int divs[256], nd;        /* divisors <= h_base, descending */
    int seq[64];
    int *out;                 /* [cap][L] accepted schedules */
    long n, cap;
} ref;

static int ref_ok(const ref *b, const int *h, int L) {
    const schedule_rules *r = b->r;
    if (h[L - 1] != r->h_base) return 0;
    int start = L;  /* baseline run */
    while (start > 0 && h[start - 1] == r->h_base) start--;
    int need = (int)ceil(r->min_baseline * L - 1e-9);
    if (need < 1) need = 1;
    if (L - start < need) return 0;
    for (int i = 0; i < L; i++) {
        int dim = r->d_model / h[i];
        if (r->max_head_dim && dim > r->max_head_dim) return 0;
        if (i < start) {
            if (r->pow2 && (dim & (dim - 1))) return 0;
            if (r->n_heads) {
                int ok = 0;
                for (int k = 0; k < r->n_heads; k++) ok |= r->heads[k] == h[i];
                if (!ok) return 0;
            }
        }
    }
    for (int i = 0; i < start;) {
        int j = i;
        while (j < start && h[j] == h[i]) j++;
        int len = j - i;
        if (len < r->min_block || (r->max_block && len > r->max_block)) return 0;
        i = j;
    }
    return 1;
}

static void ref_gen(ref *b, int pos, int lo) {
    int L = b->r->L;
    if (pos == L) {
        if (!ref_ok(b, b->seq, L)) return;
        if (b->n >= b->cap) HFAIL("reference list over %ld", b->cap);
        memcpy(b->out + b->n * L, b->seq, sizeof(int) * L);
        b->n++;
        return;
    }
    for (int k = 0; k < b->nd; k++) {      /* descending values give descending lexicographic order */
        if (b->divs[k] < lo) continue;
        b->seq[pos] = b->divs[k];
        ref_gen(b, pos + 1, b->divs[k]);
    }
}

static long ref_list(const schedule_rules *r, int **out) {
    static ref b;
    memset(&b, 0, sizeof b);
    b.r = r;
    for (int h = r->h_base; h >= 1; h--)
        if (r->d_model % h == 0) b.divs[b.nd++] = h;
    b.cap = 200000;
    b.out = malloc(sizeof(int) * r->L * b.cap);
    ref_gen(&b, 0, 1);
    *out = b.out;
    return b.n;
}

typedef struct collect { int *list; long n, cap; int L; } collect;
static int collect_fn(const int *heads, int L, void *ctx) {
    collect *c = ctx;
    if (c->n >= c->cap) HFAIL("enumerated more than %ld", c->cap);
    memcpy(c->list + c->n * L, heads, sizeof(int) * L);
    c->n++;
    return 0;
}

static void check_against_ref(schedule_rules r) {
    char msg[256], a[512], b[512];
    schedule_field f;
    if (schedule_rules_resolve(&r, &f, msg, sizeof msg) < 0) HFAIL("resolve: %s", msg);
    int *want = NULL;
    long nwant = ref_list(&r, &want);
    collect c = { malloc(sizeof(int) * r.L * 200000), 0, 200000, r.L };
    ASSERT_EQ_INT(0, schedule_enumerate(&r, collect_fn, &c));
    if (c.n != nwant) {
        fprintf(stderr, "shape L=%d d=%d H=%d maxhd=%d pow2=%d nheads=%d blocks=%d..%d minbase=%g\n", r.L, r.d_model,
                r.h_base, r.max_head_dim, r.pow2, r.n_heads, r.min_block, r.max_block, r.min_baseline);
        ASSERT_EQ_INT(nwant, c.n);
    }
    for (long i = 0; i < nwant; i++) {
        schedule_format(want + i * r.L, r.L, a, sizeof a);
        schedule_format(c.list + i * r.L, r.L, b, sizeof b);
        if (strcmp(a, b)) HFAIL("L=%d d=%d: schedule #%ld: reference %s, enumerate %s", r.L, r.d_model, i, a, b);
        ASSERT_EQ_INT(0, schedule_validate(&r, c.list + i * r.L, r.L, NULL));
    }
    schedule_count_t cnt;
    ASSERT_EQ_INT(0, schedule_count(&r, &cnt));
    ASSERT_EQ_INT(nwant, (long long)cnt);
    free(want);
    free(c.list);
}

static schedule_rules shape(int L, int d) {
    schedule_rules r;
    schedule_rules_default(&r);
    r.L = L;
    r.d_model = d;
    return r;
}

static long long count_of(schedule_rules r) {
    schedule_count_t c;
    int rc = schedule_count(&r, &c);
    if (rc < 0) HFAIL("schedule_count returned %d", rc);
    return (long long)c;
}

/* ---- the figures ------------------------------------------------------------------------- */
TEST(defaults_give_53) {
    schedule_rules r = shape(12, 768);
    ASSERT_EQ_INT(53, count_of(r));
    check_against_ref(r);
}

TEST(pow2_gives_13) {
    schedule_rules r = shape(12, 768);
    r.pow2 = 1;
    ASSERT_EQ_INT(13, count_of(r));
    check_against_ref(r);
}

TEST(baseline_is_first_and_prism_schedule_is_in_the_set) {
    schedule_rules r = shape(12, 768);
    collect c = { malloc(sizeof(int) * 12 * 100), 0, 100, 12 };
    ASSERT_EQ_INT(0, schedule_enumerate(&r, collect_fn, &c));
    char s[128];
    schedule_format(c.list, 12, s, sizeof s);
    ASSERT_STREQ("12,12,12,12,12,12,12,12,12,12,12,12", s);
    int found = 0;
    for (long i = 0; i < c.n; i++) {
        schedule_format(c.list + i * 12, 12, s, sizeof s);
        found |= strcmp(s, "3,3,6,6,8,8,12,12,12,12,12,12") == 0;
    }
    ASSERT_TRUE(found);
    free(c.list);
}

/* ---- brute force over many shapes ---------------------------------------------------------------- */
TEST(brute_force_odd_and_even_L) {
    int Ls[] = { 1, 2, 3, 5, 7, 9, 11, 12, 13 };
    int ds[] = { 768, 1024, 384, 192 };
    for (size_t i = 0; i < sizeof Ls / sizeof *Ls; i++)
        for (size_t j = 0; j < sizeof ds / sizeof *ds; j++) check_against_ref(shape(Ls[i], ds[j]));
}

TEST(brute_force_block_bounds_and_baseline) {
    int lo[] = { 1, 1, 2, 3, 1 }, hi[] = { 1, 0, 0, 3, 2 };
    double fb[] = { 0.0, 0.25, 0.34, 0.5, 0.75, 1.0 };
    for (int L = 3; L <= 11; L += 2)
        for (size_t k = 0; k < sizeof lo / sizeof *lo; k++)
            for (size_t m = 0; m < sizeof fb / sizeof *fb; m++) {
                schedule_rules r = shape(L, 768);
                r.min_block = lo[k];
                r.max_block = hi[k];
                r.min_baseline = fb[m];
                check_against_ref(r);
            }
}

TEST(brute_force_pow2_heads_hbase_maxdim) {
    struct { int L, d, H, maxhd, pow2, nh, heads[4]; } cases[] = {
        { 12, 768, 0, 256, 1, 0, { 0 } },
        { 11, 768, 0, 0, 0, 0, { 0 } },
        { 12, 768, 0, 256, 0, 3, { 3, 6, 8 } },
        { 9, 768, 0, 0, 0, 2, { 2, 8 } },
        { 10, 1536, 16, 256, 0, 0, { 0 } },
        { 10, 1536, 16, 0, 1, 0, { 0 } },
        { 8, 1024, 16, 512, 0, 0, { 0 } },
        { 7, 360, 12, 0, 0, 0, { 0 } },
        { 13, 64, 4, 0, 0, 0, { 0 } },
        { 12, 768, 12, 96, 0, 2, { 8, 12 } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        schedule_rules r = shape(cases[i].L, cases[i].d);
        r.h_base = cases[i].H;
        r.max_head_dim = cases[i].maxhd;
        r.pow2 = cases[i].pow2;
        r.n_heads = cases[i].nh;
        memcpy(r.heads, cases[i].heads, sizeof cases[i].heads);
        check_against_ref(r);
        r.min_block = 1;
        r.max_block = 0;
        check_against_ref(r);
    }
}

/* ---- count, unrank, sample ----------------------------------------------------------------------- */
TEST(unrank_matches_enumeration_order) {
    schedule_rules r = shape(16, 768);
    r.min_block = 1;
    r.max_block = 3;
    r.max_head_dim = 0;
    collect c = { malloc(sizeof(int) * 16 * 200000), 0, 200000, 16 };
    ASSERT_EQ_INT(0, schedule_enumerate(&r, collect_fn, &c));
    ASSERT_EQ_INT(count_of(r), c.n);
    int h[16];
    for (long i = 0; i < c.n; i++) {
        ASSERT_EQ_INT(0, schedule_unrank(&r, (schedule_count_t)i, h));
        if (memcmp(h, c.list + i * 16, sizeof h)) HFAIL("unrank(%ld) differs from the %ld-th enumerated", i, i);
    }
    ASSERT_EQ_INT(SCHEDULE_ERANGE, schedule_unrank(&r, (schedule_count_t)c.n, h));
    free(c.list);
}

/* An independent count by a different dynamic program: G[p][v] = prefixes of p layers whose last block has
 * value index v; the schedule count is 1 (baseline only) + sum over p <= kmax of sum_v G[p][v]. */
static schedule_count_t second_count(schedule_rules r) {
    schedule_rules_resolve(&r, NULL, NULL, 0);
    int a[256], m = schedule_allowed_heads(&r, a, 256);
    int kmax = r.L - schedule_min_baseline_len(&r), hi = r.max_block ? r.max_block : kmax;
    schedule_count_t *G = calloc((size_t)(kmax + 1) * (m + 1), sizeof *G), total = 1;
    for (int p = 1; p <= kmax; p++)
        for (int v = 0; v < m; v++) {
            schedule_count_t g = 0;
            for (int len = r.min_block; len <= hi && len <= p; len++) {
                if (len == p) { g += 1; continue; }
                for (int u = 0; u < v; u++) g += G[(size_t)(p - len) * (m + 1) + u];
            }
            G[(size_t)p * (m + 1) + v] = g;
            total += g;
        }
    free(G);
    return total;
}

TEST(count_is_instant_for_large_shapes) {
    schedule_rules r = shape(48, 1600);
    r.max_head_dim = 0;
    ASSERT_TRUE(count_of(r) == (long long)second_count(r));
    ASSERT_GE_INT(count_of(r), 1000);
    /* a shape whose list would have ~1e14 lines is counted exactly and at once */
    schedule_rules big = shape(64, 1600);
    big.h_base = 1600;
    big.max_head_dim = 0;
    big.min_block = 1;
    big.max_block = 0;
    schedule_count_t c;
    ASSERT_EQ_INT(0, schedule_count(&big, &c));
    char s1[64], s2[64];
    ASSERT_STREQ(schedule_count_str(second_count(big), s2, sizeof s2), schedule_count_str(c, s1, sizeof s1));
    ASSERT_GE_INT(strlen(s1), 13);
    big.max_block = 5;
    big.min_block = 2;
    ASSERT_EQ_INT(0, schedule_count(&big, &c));
    ASSERT_STREQ(schedule_count_str(second_count(big), s2, sizeof s2), schedule_count_str(c, s1, sizeof s1));
}

TEST(count_overflow_is_reported) {
    schedule_rules r = shape(4096, 720720);
    r.h_base = 720720;
    r.max_head_dim = 0;
    r.min_block = 1;
    r.max_block = 0;
    r.min_baseline = 0;
    schedule_count_t c;
    ASSERT_EQ_INT(SCHEDULE_EOVERFLOW, schedule_count(&r, &c));
    ASSERT_TRUE(c == ~(schedule_count_t)0);
    int h[4096];
    ASSERT_EQ_INT(SCHEDULE_EOVERFLOW, schedule_unrank(&r, 5, h));
}

typedef struct sampled { char (*s)[160]; int n; const schedule_rules *r; } sampled;
static int sample_fn(const int *heads, int L, void *ctx) {
    sampled *x = ctx;
    if (schedule_validate(x->r, heads, L, NULL) != 0) HFAIL("sampled an invalid schedule");
    schedule_format(heads, L, x->s[x->n++], 160);
    return 0;
}

TEST(sample_distinct_valid_reproducible) {
    schedule_rules r = shape(12, 768);
    char a[60][160], b[60][160], c[60][160];
    sampled sa = { a, 0, &r }, sb = { b, 0, &r }, sc = { c, 0, &r };
    ASSERT_EQ_INT(0, schedule_sample(&r, 20, 7, sample_fn, &sa));
    ASSERT_EQ_INT(0, schedule_sample(&r, 20, 7, sample_fn, &sb));
    ASSERT_EQ_INT(0, schedule_sample(&r, 20, 8, sample_fn, &sc));
    ASSERT_EQ_INT(20, sa.n);
    int same_other_seed = 1;
    for (int i = 0; i < 20; i++) {
        ASSERT_STREQ(a[i], b[i]);
        same_other_seed &= strcmp(a[i], c[i]) == 0;
        for (int j = 0; j < i; j++)
            if (!strcmp(a[i], a[j])) HFAIL("duplicate %s", a[i]);
    }
    ASSERT_TRUE(!same_other_seed);
    /* all of them: the sample is the whole set */
    sampled all = { malloc(60 * 160), 0, &r };
    ASSERT_EQ_INT(0, schedule_sample(&r, 53, 1, sample_fn, &all));
    ASSERT_EQ_INT(53, all.n);
    for (int i = 1; i < 53; i++)
        if (!strcmp(all.s[i], all.s[i - 1])) HFAIL("duplicate in full sample");
    ASSERT_EQ_INT(SCHEDULE_ERANGE, schedule_sample(&r, 54, 1, sample_fn, &all));
    free(all.s);
}

static int count_hits(const int *heads, int L, void *ctx) {
    schedule_rules *r = ((void **)ctx)[0];
    long *hits = ((void **)ctx)[1];
    /* rank by linear search over unrank (13 schedules) */
    int h[64];
    for (int k = 0; k < 13; k++) {
        schedule_unrank(r, (schedule_count_t)k, h);
        if (!memcmp(h, heads, sizeof(int) * L)) { hits[k]++; return 0; }
    }
    HFAIL("sampled schedule not found");
}

TEST(sample_is_uniform) {
    /* 13 pow2 schedules, 2000 draws of 3: each schedule expected 2000*3/13 = 461.5 times; a chi-square with 12
     * degrees of freedom above 40 has probability < 1e-4 under uniformity. */
    schedule_rules r = shape(12, 768);
    r.pow2 = 1;
    long hits[13] = { 0 };
    void *ctx[2] = { &r, hits };
    for (int s = 0; s < 2000; s++) ASSERT_EQ_INT(0, schedule_sample(&r, 3, (uint64_t)s, count_hits, ctx));
    double e = 2000.0 * 3 / 13, chi = 0;
    for (int k = 0; k < 13; k++) chi += (hits[k] - e) * (hits[k] - e) / e;
    ASSERT_LT(chi, 40.0);
}

/* ---- validation ---------------------------------------------------------------------------------- */
static int one_schedule(const char *text, schedule_rules *r, schedule_report *rep) {
    int h[64], L;
    char err[128];
    if (schedule_parse(text, h, 64, &L, err, sizeof err) < 0) HFAIL("parse %s: %s", text, err);
    return schedule_validate(r, h, L, rep);
}

static const schedule_violation *find_rule(const schedule_report *rep, schedule_rule rule) {
    for (int i = 0; i < rep->n; i++)
        if (rep->v[i].rule == rule) return &rep->v[i];
    HFAIL("rule %s not reported", schedule_rule_name(rule));
}

TEST(validate_prism_schedule_is_valid) {
    schedule_rules r = shape(0, 768);
    static schedule_report rep;
    ASSERT_EQ_INT(0, one_schedule("3,3,6,6,8,8,12,12,12,12,12,12", &r, &rep));
    ASSERT_EQ_INT(0, one_schedule("3,3,6,6,8,8,12x6", &r, &rep));
}

TEST(validate_names_each_rule_and_where) {
    schedule_rules r = shape(0, 768);
    static schedule_report rep;
    const schedule_violation *v;
    /* 5 does not divide 768 (layers 3-4, block 2) */
    ASSERT_GE_INT(one_schedule("3,3,5,5,8,8,12x6", &r, &rep), 1);
    v = find_rule(&rep, SCHEDULE_R_DIVIDES);
    ASSERT_EQ_INT(3, v->layer); ASSERT_EQ_INT(4, v->layer_end); ASSERT_EQ_INT(2, v->block);
    ASSERT_CONTAINS(v->msg, "layers 3-4 (block 2)");
    /* decreasing at layer 3 */
    ASSERT_GE_INT(one_schedule("6,6,3,3,8,8,12x6", &r, &rep), 1);
    v = find_rule(&rep, SCHEDULE_R_DECREASING);
    ASSERT_EQ_INT(3, v->layer);
    /* above h_base and last not h_base */
    ASSERT_GE_INT(one_schedule("3,3,6,6,12x6,24,24", &r, &rep), 1);
    find_rule(&rep, SCHEDULE_R_ABOVE_BASE);
    v = find_rule(&rep, SCHEDULE_R_LAST);
    ASSERT_EQ_INT(12, v->layer);
    /* head dim 384 > 256 in block 1, one-layer blocks 2 and 3 */
    ASSERT_EQ_INT(3, one_schedule("2,2,4,8,12x8", &r, &rep));
    v = find_rule(&rep, SCHEDULE_R_HEAD_DIM);
    ASSERT_EQ_INT(1, v->block); ASSERT_EQ_INT(1, v->layer); ASSERT_EQ_INT(2, v->layer_end);
    ASSERT_CONTAINS(v->msg, "head dim 384");
    ASSERT_EQ_INT(SCHEDULE_R_BLOCK, rep.v[1].rule); ASSERT_EQ_INT(2, rep.v[1].block);
    ASSERT_EQ_INT(SCHEDULE_R_BLOCK, rep.v[2].rule); ASSERT_EQ_INT(3, rep.v[2].block);
    /* a 5-layer block, baseline run of 5 < 6 */
    ASSERT_EQ_INT(2, one_schedule("3,3,3,3,3,8,8,12,12,12,12,12", &r, &rep));
    v = find_rule(&rep, SCHEDULE_R_BLOCK);
    ASSERT_EQ_INT(1, v->block); ASSERT_CONTAINS(v->msg, "5 layers of 3 heads");
    v = find_rule(&rep, SCHEDULE_R_BASELINE);
    ASSERT_EQ_INT(8, v->layer); ASSERT_EQ_INT(12, v->layer_end); ASSERT_CONTAINS(v->msg, "needs at least 6");
    /* pow2 and the allowed list */
    r.pow2 = 1;
    ASSERT_EQ_INT(1, one_schedule("3,3,6,6,8,8,12x6", &r, &rep));
    v = find_rule(&rep, SCHEDULE_R_POW2);
    ASSERT_EQ_INT(3, v->block); ASSERT_CONTAINS(v->msg, "head dim 96");
    r.pow2 = 0;
    r.n_heads = 2; r.heads[0] = 3; r.heads[1] = 8;
    ASSERT_EQ_INT(1, one_schedule("3,3,6,6,8,8,12x6", &r, &rep));
    v = find_rule(&rep, SCHEDULE_R_HEADS);
    ASSERT_EQ_INT(2, v->block); ASSERT_CONTAINS(v->msg, "allowed list 3,8");
    /* length against a fixed L */
    r = shape(12, 768);
    ASSERT_EQ_INT(1, one_schedule("3,3,6,6,12x6", &r, &rep));
    find_rule(&rep, SCHEDULE_R_LENGTH);
}

TEST(validate_hard_ignores_soft_rules) {
    schedule_rules r = shape(12, 768);
    int h[12] = { 3, 6, 8, 12, 12, 12, 12, 12, 12, 12, 12, 12 };
    ASSERT_EQ_INT(3, schedule_validate(&r, h, 12, NULL));       /* three 1-layer blocks */
    ASSERT_EQ_INT(0, schedule_validate_hard(&r, h, 12, NULL));
    h[11] = 8;
    ASSERT_EQ_INT(2, schedule_validate_hard(&r, h, 12, NULL));  /* decreasing at 12 and last != h_base */
}

/* ---- rules and text ------------------------------------------------------------------------------ */
TEST(resolve_errors_name_the_field) {
    char msg[256];
    schedule_field f;
    schedule_rules r = shape(12, 770);
    ASSERT_EQ_INT(SCHEDULE_EINVAL, schedule_rules_resolve(&r, &f, msg, sizeof msg));
    ASSERT_EQ_INT(SCHEDULE_F_HBASE, f); ASSERT_CONTAINS(msg, "770/64 is not an integer");
    r = shape(0, 768);
    ASSERT_EQ_INT(SCHEDULE_EINVAL, schedule_rules_resolve(&r, &f, msg, sizeof msg));
    ASSERT_EQ_INT(SCHEDULE_F_L, f); ASSERT_CONTAINS(msg, "1..4096");
    r = shape(12, 768); r.h_base = 5;
    ASSERT_EQ_INT(SCHEDULE_EINVAL, schedule_rules_resolve(&r, &f, msg, sizeof msg));
    ASSERT_EQ_INT(SCHEDULE_F_HBASE, f);
    r = shape(12, 768); r.max_head_dim = 32;
    ASSERT_EQ_INT(SCHEDULE_EINVAL, schedule_rules_resolve(&r, &f, msg, sizeof msg));
    ASSERT_EQ_INT(SCHEDULE_F_MAX_HEAD_DIM, f); ASSERT_CONTAINS(msg, ">= 64");
    r = shape(12, 768); r.n_heads = 1; r.heads[0] = 5;
    ASSERT_EQ_INT(SCHEDULE_EINVAL, schedule_rules_resolve(&r, &f, msg, sizeof msg));
    ASSERT_EQ_INT(SCHEDULE_F_HEADS, f); ASSERT_CONTAINS(msg, "5 does not divide");
    r = shape(12, 768); r.n_heads = 1; r.heads[0] = 2;
    ASSERT_EQ_INT(SCHEDULE_EINVAL, schedule_rules_resolve(&r, &f, msg, sizeof msg));
    ASSERT_CONTAINS(msg, "head dim 384");
    r = shape(12, 768); r.min_block = 3; r.max_block = 2;
    ASSERT_EQ_INT(SCHEDULE_EINVAL, schedule_rules_resolve(&r, &f, msg, sizeof msg));
    ASSERT_EQ_INT(SCHEDULE_F_MAX_BLOCK, f);
    r = shape(12, 768); r.min_baseline = 1.5;
    ASSERT_EQ_INT(SCHEDULE_EINVAL, schedule_rules_resolve(&r, &f, msg, sizeof msg));
    ASSERT_EQ_INT(SCHEDULE_F_MIN_BASELINE, f);
    r = shape(12, 768);
    ASSERT_EQ_INT(0, schedule_rules_resolve(&r, &f, msg, sizeof msg));
    ASSERT_EQ_INT(12, r.h_base);
}

TEST(parse_and_format) {
    int h[64], L;
    char err[128], buf[256];
    ASSERT_EQ_INT(0, schedule_parse("3, 3,6,6,8,8,12x6", h, 64, &L, err, sizeof err));
    ASSERT_EQ_INT(12, L);
    ASSERT_EQ_INT(29, schedule_format(h, L, buf, sizeof buf));
    ASSERT_STREQ("3,3,6,6,8,8,12,12,12,12,12,12", buf);
    ASSERT_EQ_INT(0, schedule_parse("4,4,4,8,8,8,16\xc3\x97" "18", h, 64, &L, err, sizeof err));
    ASSERT_EQ_INT(24, L);
    ASSERT_EQ_INT(SCHEDULE_EINVAL, schedule_parse("3,3,,6", h, 64, &L, err, sizeof err));
    ASSERT_CONTAINS(err, "item 3");
    ASSERT_EQ_INT(SCHEDULE_EINVAL, schedule_parse("3,0,6", h, 64, &L, err, sizeof err));
    ASSERT_CONTAINS(err, "item 2");
    ASSERT_EQ_INT(SCHEDULE_EINVAL, schedule_parse("3;6", h, 64, &L, err, sizeof err));
    ASSERT_EQ_INT(SCHEDULE_EINVAL, schedule_parse("12x100", h, 64, &L, err, sizeof err));
    ASSERT_CONTAINS(err, "more than 64 layers");
    ASSERT_EQ_INT(SCHEDULE_ERANGE, schedule_format(h, 3, buf, 4));
    int bh[8], bl[8];
    schedule_parse("3,3,6,6,8,8,12x6", h, 64, &L, err, sizeof err);
    ASSERT_EQ_INT(4, schedule_blocks(h, L, bh, bl, 8));
    ASSERT_EQ_INT(8, bh[2]); ASSERT_EQ_INT(6, bl[3]);
    ASSERT_EQ_INT(0, schedule_is_uniform(h, L));
    schedule_count_t big = ~(schedule_count_t)0;
    ASSERT_STREQ("340282366920938463463374607431768211455", schedule_count_str(big, buf, sizeof buf));
}
