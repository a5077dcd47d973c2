#!/usr/bin/env python3
"""tools/realsweep_diag.py — the ranking's assumptions checked on a real sweep (docs/STATISTICS.md, "Real runs").

    tools/realsweep_diag.py [FIXTURE_DIR] [--format text|json|markdown] [--check EXPECTED.json]

FIXTURE_DIR (default tests/fixtures/realsweep) holds a finished, complete sweep as tools/realsweep.sh exports it:
results.jsonl (one job a line: heads, seed, result.val_loss, result.val_loss_batches) and val_metrics.jsonl (each
job's val loss at every evaluation). The blocked model the leaderboard fits (orchestrator/ranking.c) is

    y_ij = mu + tau_i + beta_j + e_ij,   e_ij iid N(0, s^2)      (schedule i, seed j)

and this script asks the data whether that holds:

  residuals     Shapiro-Wilk W and p, the correlation of the normal QQ plot, excess kurtosis, the largest |internally
                studentized residual| r = e / (s sqrt(1 - h)), h = 1/K + 1/n - 1/(Kn), with its Bonferroni p (the
                externally studentized residual's t over all K n cells)
  compound      are the residuals of two schedules trained with the same seed more alike when the schedules are
  symmetry      alike? For every pair of schedules, the correlation over seeds of their residuals, against the L1
                distance of their log2 head dims; Spearman's rho and a Mantel permutation p (schedule labels
                permuted, 5,000 times, fixed RNG seed). The blocked model predicts -1/(K-1) for every pair
  additivity    Tukey's one-degree-of-freedom test for non-additivity (seed x schedule of the form g tau_i beta_j)
  seeds         the seed effects' sd, the F test of the seed block, and the blocking's relative efficiency
                (the error variance an unblocked design would have had, over the blocked one's)
  last k        for y = the mean of the last k evaluations (k = 1 is the final one): the pooled residual sd, the
                schedule F, and Spearman / Kendall of the schedule effects against k = 1's
  val sample    the val split's own noise: the standard error the val batches give a paired delta (the
                leaderboard's analysis.val_noise) and a schedule effect's, against the seed noise's
  ranking       the blocked ranking recomputed here (delta vs uniform, Holm, best group), beside the leaderboard's

--check EXPECTED.json compares every figure with EXPECTED (each {"value": v, "tol": t}; exit 1 naming the figures
that differ) — tests/integration/test_realsweep.sh does this with tests/fixtures/realsweep/diagnostics.json, and
checks that the markdown table is the one in docs/STATISTICS.md. numpy and SciPy (python3-scipy) only.
"""
import argparse
import itertools
import json
import math
import os
import sys

import numpy as np
from scipy import stats

LAST_K = (1, 2, 3, 4, 5)
MANTEL_PERMUTATIONS = 5000


def load(fixture):
    jobs = [json.loads(l) for l in open(os.path.join(fixture, "results.jsonl")) if l.strip()]
    points = [json.loads(l) for l in open(os.path.join(fixture, "val_metrics.jsonl")) if l.strip()]
    scheds = sorted({tuple(j["heads"]) for j in jobs}, key=lambda h: [j["schedule_id"] for j in jobs if tuple(j["heads"]) == h][0])
    seeds = sorted({j["seed"] for j in jobs})
    K, n = len(scheds), len(seeds)
    si, sj = {h: i for i, h in enumerate(scheds)}, {s: j for j, s in enumerate(seeds)}
    bad = [j["job_id"] for j in jobs if j["state"] != "done" or not j.get("result")]
    if bad or len(jobs) != K * n:
        sys.exit("realsweep_diag: the sweep is not complete (%d jobs of %d x %d; not done: %s)" % (len(jobs), K, n, bad[:10]))
    y = np.full((K, n), np.nan)
    B = len(jobs[0]["result"]["val_loss_batches"])
    batches = np.full((K, n, B), np.nan)
    job_cell = {}
    for j in jobs:
        i, k = si[tuple(j["heads"])], sj[j["seed"]]
        y[i, k] = j["result"]["val_loss"]
        batches[i, k] = j["result"]["val_loss_batches"]
        job_cell[j["job_id"]] = (i, k)
    steps = sorted({p["step"] for p in points})
    curves = np.full((K, n, len(steps)), np.nan)
    for p in points:
        i, k = job_cell[p["job_id"]]
        curves[i, k, steps.index(p["step"])] = p["value"]
    if np.isnan(y).any() or np.isnan(curves).any() or np.isnan(batches).any():
        sys.exit("realsweep_diag: missing values in the fixture")
    if not np.allclose(curves[:, :, -1], y, rtol=0, atol=1e-12):
        sys.exit("realsweep_diag: the last evaluation in val_metrics.jsonl differs from results.jsonl's val_loss")
    if not np.allclose(batches.mean(axis=2), y, rtol=0, atol=1e-6):
        sys.exit("realsweep_diag: val_loss is not the mean of val_loss_batches")
    base = [i for i, h in enumerate(scheds) if len(set(h)) == 1 and h[-1] == max(h)]
    return dict(scheds=scheds, seeds=seeds, y=y, batches=batches, steps=steps, curves=curves, base=base[0])


def blocked(y):
    """The balanced two-way fit: effects, residuals, pooled sd, ANOVA."""
    K, n = y.shape
    g = y.mean()
    tau, beta = y.mean(axis=1) - g, y.mean(axis=0) - g
    e = y - g - tau[:, None] - beta[None, :]
    df = (K - 1) * (n - 1)
    sse = float((e ** 2).sum())
    s2 = sse / df
    ms_sched = n * float((tau ** 2).sum()) / (K - 1)
    ms_seed = K * float((beta ** 2).sum()) / (n - 1)
    return dict(g=g, tau=tau, beta=beta, e=e, df=df, sse=sse, s2=s2, s=math.sqrt(s2), ms_sched=ms_sched,
                ms_seed=ms_seed, F_sched=ms_sched / s2, F_seed=ms_seed / s2)


def residual_checks(f, K, n):
    e = f["e"].ravel()
    h = 1 / K + 1 / n - 1 / (K * n)
    r = e / (f["s"] * math.sqrt(1 - h))
    df = f["df"]
    # externally studentized: t with df - 1 degrees of freedom; Bonferroni over the K n cells
    rmax = float(np.abs(r).max())
    t_ext = rmax * math.sqrt((df - 1) / (df - rmax ** 2))
    p_bonf = min(1.0, K * n * 2 * stats.t.sf(t_ext, df - 1))
    W, p_sw = stats.shapiro(e)
    (osm, osr), (slope, icept, qq_r) = stats.probplot(e, dist="norm")
    i, j = np.unravel_index(int(np.abs(r).argmax()), (K, n))
    return dict(shapiro_W=float(W), shapiro_p=float(p_sw), qq_r=float(qq_r), kurtosis=float(stats.kurtosis(e)),
                skew=float(stats.skew(e)), max_abs_studentized=rmax, max_studentized_bonferroni_p=float(p_bonf),
                max_cell=(int(i), int(j)))


def log_dims(h, d=64):
    return np.log2([d / x for x in h])


def compound_symmetry(f, scheds, rng_seed=0):
    e = f["e"]
    K = e.shape[0]
    L = np.array([log_dims(h) for h in scheds])
    D = np.abs(L[:, None, :] - L[None, :, :]).sum(axis=2)
    C = np.corrcoef(e)
    iu = np.triu_indices(K, 1)
    rho = stats.spearmanr(D[iu], C[iu]).correlation
    # Mantel: permute the schedules of the distance matrix
    rng = np.random.default_rng(rng_seed)
    Cr = stats.rankdata(C[iu])
    obs = np.corrcoef(stats.rankdata(D[iu]), Cr)[0, 1]
    cnt = 0
    for _ in range(MANTEL_PERMUTATIONS):
        p = rng.permutation(K)
        Dp = D[np.ix_(p, p)][iu]
        if abs(np.corrcoef(stats.rankdata(Dp), Cr)[0, 1]) >= abs(obs) - 1e-12:
            cnt += 1
    p_mantel = (cnt + 1) / (MANTEL_PERMUTATIONS + 1)
    near = C[iu][D[iu] <= np.median(D[iu])]
    far = C[iu][D[iu] > np.median(D[iu])]
    return dict(rho_corr_distance=float(rho), mantel_p=float(p_mantel), mean_corr=float(C[iu].mean()),
                expected_corr=-1 / (K - 1), mean_corr_near=float(near.mean()), mean_corr_far=float(far.mean()),
                median_distance=float(np.median(D[iu])))


def tukey_nonadditivity(y, f):
    K, n = y.shape
    a, b = f["tau"], f["beta"]
    num = float((y * a[:, None] * b[None, :]).sum()) ** 2
    ssn = num / (float((a ** 2).sum()) * float((b ** 2).sum()))
    df = f["df"] - 1
    F = ssn / ((f["sse"] - ssn) / df)
    return dict(ss_nonadd=ssn, share_of_sse=ssn / f["sse"], F=F, p=float(stats.f.sf(F, 1, df)))


def seed_block(f, K, n):
    p = float(stats.f.sf(f["F_seed"], n - 1, f["df"]))
    var_seed = max(0.0, (f["ms_seed"] - f["s2"]) / K)
    # relative efficiency of the RCBD against a completely randomised design (Montgomery / Cochran & Cox)
    re = ((n - 1) * f["ms_seed"] + n * (K - 1) * f["s2"]) / ((K * n - 1) * f["s2"])
    return dict(sd_seed_effects=float(np.std(f["beta"], ddof=1)), sd_seed_component=math.sqrt(var_seed),
                F=f["F_seed"], p=p, relative_efficiency=float(re))


def last_k(d):
    out, ref = {}, None
    for k in LAST_K:
        yk = d["curves"][:, :, -k:].mean(axis=2)
        fk = blocked(yk)
        if ref is None:
            ref = fk["tau"]
        out[str(k)] = dict(steps=d["steps"][-k:], pooled_sd=fk["s"], F_sched=fk["F_sched"],
                           spearman=float(stats.spearmanr(ref, fk["tau"]).correlation),
                           kendall=float(stats.kendalltau(ref, fk["tau"]).correlation),
                           sd_ratio=fk["s"] / blocked(d["y"])["s"], F_ratio=fk["F_sched"] / blocked(d["y"])["F_sched"])
    return out


def by_step(d):
    """The blocked fit at each evaluation alone: how the noise and the order develop over training."""
    ref = blocked(d["y"])["tau"]
    out = {}
    for t, step in enumerate(d["steps"]):
        if step == 0:
            continue                      # before any update: every seed's own initial weights, no schedule effect yet
        ft = blocked(d["curves"][:, :, t])
        out[str(step)] = dict(mean=float(d["curves"][:, :, t].mean()), pooled_sd=ft["s"], F_sched=ft["F_sched"],
                              spearman=float(stats.spearmanr(ref, ft["tau"]).correlation))
    return out


def val_sample(d, f):
    """The val batches' share of the noise: every job evaluates the same batches, so a paired difference's
    batch-to-batch sd / sqrt(B) is the standard error the val sample alone gives it."""
    b, base = d["batches"], d["base"]
    K, n, B = b.shape
    se_pair = []
    for i in range(K):
        if i == base:
            continue
        diff = b[i] - b[base]                  # n x B
        se_pair.extend(diff.std(axis=1, ddof=1) / math.sqrt(B))
    rms_pair = math.sqrt(float(np.mean(np.square(se_pair))))
    seed_pair = math.sqrt(2) * f["s"]
    # a schedule effect's delta (mean over the seeds of the paired difference): its val-sample SE and its seed SE
    se_tau = []
    for i in range(K):
        if i == base:
            continue
        diff = (b[i] - b[base]).mean(axis=0)   # B
        se_tau.append(diff.std(ddof=1) / math.sqrt(B))
    rms_tau = math.sqrt(float(np.mean(np.square(se_tau))))
    seed_tau = f["s"] * math.sqrt(2 / n)
    # within a job: the SE of its val loss as an estimate of the val distribution's mean (result.val_loss_se)
    se_job = float(np.sqrt(np.mean(np.square(b.std(axis=2, ddof=1) / math.sqrt(B)))))
    # another val sample: the schedule effects on the even and on the odd batches, and their rank agreement
    t_even, t_odd = blocked(b[:, :, 0::2].mean(axis=2))["tau"], blocked(b[:, :, 1::2].mean(axis=2))["tau"]
    return dict(spearman_halves=float(stats.spearmanr(t_even, t_odd).correlation),
                kendall_halves=float(stats.kendalltau(t_even, t_odd).correlation),batches=B, rms_se_paired_delta=rms_pair, seed_sd_paired_delta=seed_pair, ratio_paired=rms_pair / seed_pair,
                rms_se_delta_val=rms_tau, se_delta_seeds=seed_tau, ratio_delta=rms_tau / seed_tau, rms_se_job=se_job)


def ranking(d, f):
    K, n = d["y"].shape
    base = d["base"]
    se = f["s"] * math.sqrt(2 / n)
    rows = []
    m = K - 1
    for i in range(K):
        delta = f["tau"][i] - f["tau"][base]
        t = delta / se if i != base else 0.0
        p = 2 * stats.t.sf(abs(t), f["df"]) if i != base else None
        rows.append(dict(heads=list(d["scheds"][i]), delta=float(delta), t=float(t), p=p))
    # Holm
    ps = sorted([(r["p"], i) for i, r in enumerate(rows) if r["p"] is not None])
    adj, run = {}, 0.0
    for rank, (p, i) in enumerate(ps):
        run = max(run, min(1.0, (m - rank) * p))
        adj[i] = run
    q = stats.studentized_range.ppf(0.95, K, f["df"]) / math.sqrt(2)
    best = min(f["tau"])
    for i, r in enumerate(rows):
        r["p_holm"] = adj.get(i)
        r["best_group"] = bool(f["tau"][i] - best <= q * se)
    order = sorted(range(K), key=lambda i: f["tau"][i])
    return dict(rows=[rows[i] for i in order], q=float(q), se_delta=se)


def analyse(fixture):
    d = load(fixture)
    y = d["y"]
    K, n = y.shape
    f = blocked(y)
    out = dict(design=dict(schedules=K, seeds=n, evaluations=len(d["steps"]), steps=d["steps"], val_batches=d["batches"].shape[2],
                           mean_val_loss=float(y.mean()), sd_schedule_effects=float(np.std(f["tau"], ddof=1))),
               blocked=dict(pooled_sd=f["s"], df=f["df"], F_sched=f["F_sched"],
                            p_sched=float(stats.f.sf(f["F_sched"], K - 1, f["df"]))),
               residuals=residual_checks(f, K, n), compound_symmetry=compound_symmetry(f, d["scheds"]),
               tukey=tukey_nonadditivity(y, f), seeds=seed_block(f, K, n), last_k=last_k(d), by_step=by_step(d), val_sample=val_sample(d, f),
               ranking=ranking(d, f))
    # Bartlett across schedules on the residual mean squares (the leaderboard's equal-variance check)
    e = f["e"]
    ms = (e ** 2).sum(axis=1) / (n - 1) * (K / (K - 1))  # each schedule's residual df: (n-1)(K-1)/K
    dfi = (n - 1) * (K - 1) / K
    sp = float((ms * dfi).sum() / (dfi * K))
    T = (dfi * K * math.log(sp) - dfi * float(np.log(ms).sum())) / (1 + (K / dfi - 1 / (dfi * K)) / (3 * (K - 1)))
    out["equal_variance"] = dict(bartlett=T, p=float(stats.chi2.sf(T, K - 1)),
                                 sd_ratio_max_min=float(math.sqrt(ms.max() / ms.min())))
    lb = os.path.join(fixture, "leaderboard.json")
    if os.path.exists(lb):
        out["leaderboard"] = json.load(open(lb))
    return out


def flat(o):
    """The checked figures: name -> value."""
    r = {}
    r["design.schedules"], r["design.seeds"] = o["design"]["schedules"], o["design"]["seeds"]
    r["design.mean_val_loss"] = o["design"]["mean_val_loss"]
    r["design.sd_schedule_effects"] = o["design"]["sd_schedule_effects"]
    for s in ("blocked", "residuals", "compound_symmetry", "tukey", "seeds", "val_sample", "equal_variance"):
        for k, v in o[s].items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                r["%s.%s" % (s, k)] = v
    for k, v in o["last_k"].items():
        for m in ("pooled_sd", "F_sched", "spearman", "kendall", "sd_ratio"):
            r["last_k.%s.%s" % (k, m)] = v[m]
    for k, v in o["by_step"].items():
        for m in ("pooled_sd", "F_sched", "spearman"):
            r["by_step.%s.%s" % (k, m)] = v[m]
    for row in o["ranking"]["rows"]:
        key = "ranking.%s" % ",".join(map(str, row["heads"]))
        r[key + ".delta"] = row["delta"]
        r[key + ".best_group"] = int(row["best_group"])
    return r


def g(x, p=3):
    return "%.*g" % (p, x)


def markdown(o):
    d, b, r, c, t, s, v, ev = (o["design"], o["blocked"], o["residuals"], o["compound_symmetry"], o["tukey"], o["seeds"],
                               o["val_sample"], o["equal_variance"])
    L = []
    L.append("| check | figure | what the model assumes | verdict |")
    L.append("|---|---|---|---|")
    L.append("| noise | pooled residual sd %.4f (%d df); schedule effects' sd %.4f; schedule F %.1f | — | — |"
             % (b["pooled_sd"], b["df"], d["sd_schedule_effects"], b["F_sched"]))
    L.append("| normal residuals | Shapiro–Wilk W %.3f, p %s; QQ correlation %.3f; excess kurtosis %.2f, skew %.2f | p not small, QQ r ≈ 1 | %s |"
             % (r["shapiro_W"], g(r["shapiro_p"], 2), r["qq_r"], r["kurtosis"], r["skew"],
                "consistent with normal" if r["shapiro_p"] > 0.05 else "not normal"))
    L.append("| outliers | largest \\|studentized residual\\| %.2f (Bonferroni p %s over %d cells) | ≲ 3.2 for %d normal cells | %s |"
             % (r["max_abs_studentized"], g(r["max_studentized_bonferroni_p"], 2), d["schedules"] * d["seeds"],
                d["schedules"] * d["seeds"], "none" if r["max_studentized_bonferroni_p"] > 0.05 else "an outlier"))
    L.append("| compound symmetry | residual correlation of two schedules over the seeds: mean %.3f (model %.3f); near pairs %.3f, far pairs %.3f; Spearman ρ with the log-head-dim distance %.2f, Mantel p %s | no trend with distance | %s |"
             % (c["mean_corr"], c["expected_corr"], c["mean_corr_near"], c["mean_corr_far"], c["rho_corr_distance"],
                g(c["mantel_p"], 2), "no trend" if c["mantel_p"] > 0.05 else "similar schedules share seed luck"))
    L.append("| additivity | Tukey's 1-df non-additivity F %.2f, p %s (%.1f%% of the residual SS) | no seed × schedule interaction | %s |"
             % (t["F"], g(t["p"], 2), 100 * t["share_of_sse"], "additive" if t["p"] > 0.05 else "interaction"))
    L.append("| equal variance | Bartlett %.2f, p %s; largest / smallest schedule residual sd %.2f | equal | %s |"
             % (ev["bartlett"], g(ev["p"], 2), ev["sd_ratio_max_min"], "equal" if ev["p"] > 0.01 else "unequal"))
    L.append("| seed block | seed effects' sd %.4f; seed F %.1f, p %s; relative efficiency of blocking %.2f | a shared seed effect | %s |"
             % (s["sd_seed_effects"], s["F"], g(s["p"], 2), s["relative_efficiency"],
                "blocking helps" if s["p"] < 0.05 else "no seed effect to block"))
    L.append("| val sample | SE of a paired Δ from the %d val batches %.4f vs seed-to-seed %.4f (ratio %.2f); of a schedule's Δ %.4f vs %.4f (ratio %.2f) | the val set is fixed | %s |"
             % (v["batches"], v["rms_se_paired_delta"], v["seed_sd_paired_delta"], v["ratio_paired"], v["rms_se_delta_val"],
                v["se_delta_seeds"], v["ratio_delta"], "a schedule's Δ: the val sample adds %.0f%% to its seed SE, not in the CI" % (100 * (math.sqrt(1 + v["ratio_delta"] ** 2) - 1))))
    L.append("| val sample | the schedule effects on the even vs the odd val batches: Spearman %.3f, Kendall %.3f | the ranking does not depend on the val sample | %s |"
             % (v["spearman_halves"], v["kendall_halves"], "the same order" if v["kendall_halves"] > 0.8 else "the order moves"))
    L.append("")
    L.append("| y | evaluations (steps) | pooled residual sd | sd / final's | schedule F | Spearman vs final | Kendall vs final |")
    L.append("|---|---|---|---|---|---|---|")
    for k, x in o["last_k"].items():
        L.append("| %s | %s | %.4f | %.2f | %.1f | %.3f | %.3f |"
                 % ("final" if k == "1" else "mean of last %s" % k, ",".join(map(str, x["steps"])), x["pooled_sd"],
                    x["sd_ratio"], x["F_sched"], x["spearman"], x["kendall"]))
    L.append("")
    L.append("| evaluation at step | mean val loss | pooled residual sd | schedule F | Spearman vs final |")
    L.append("|---|---|---|---|---|")
    for k, x in o["by_step"].items():
        L.append("| %s | %.3f | %.4f | %.1f | %.3f |" % (k, x["mean"], x["pooled_sd"], x["F_sched"], x["spearman"]))
    L.append("")
    L.append("| schedule | Δ vs uniform | t | p (Holm) | best group |")
    L.append("|---|---|---|---|---|")
    for row in o["ranking"]["rows"]:
        L.append("| %s | %+.4f | %s | %s | %s |"
                 % (",".join(map(str, row["heads"])), row["delta"], "—" if row["p"] is None else "%+.2f" % row["t"],
                    "baseline" if row["p_holm"] is None else g(row["p_holm"], 2), "=" if row["best_group"] else ""))
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fixture", nargs="?", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "realsweep"))
    ap.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    ap.add_argument("--check", metavar="EXPECTED.json")
    ap.add_argument("--write-expected", metavar="FILE", help="write the figures as EXPECTED.json with tolerances")
    a = ap.parse_args()
    o = analyse(a.fixture)
    if a.write_expected:
        # tolerances: a few units in the last digit the docs print, so a rerun on another numpy passes and a
        # changed fixture does not
        exp = {}
        for k, v in flat(o).items():
            tol = 0 if isinstance(v, int) else max(1e-6, 1e-4 * abs(v))
            if k.startswith("compound_symmetry.mantel_p"):
                tol = 0.01
            exp[k] = {"value": v, "tol": tol}
        json.dump(exp, open(a.write_expected, "w"), indent=1, sort_keys=True)
    if a.check:
        exp, got = json.load(open(a.check)), flat(o)
        bad = ["%s: expected %r ± %g, got %r" % (k, e["value"], e["tol"], got.get(k)) for k, e in sorted(exp.items())
               if k not in got or abs(got[k] - e["value"]) > e["tol"]]
        bad += ["%s: not in %s" % (k, a.check) for k in sorted(set(got) - set(exp))]
        if bad:
            print("realsweep_diag: %d figure(s) differ from %s:\n  %s" % (len(bad), a.check, "\n  ".join(bad)), file=sys.stderr)
            sys.exit(1)
        print("realsweep_diag: all %d figures match %s" % (len(exp), a.check))
        return
    if a.format == "json":
        o.pop("leaderboard", None)
        json.dump(o, sys.stdout, indent=1, default=float)
        print()
    elif a.format == "markdown":
        sys.stdout.write(markdown(o))
    else:
        sys.stdout.write(markdown(o))
        if "leaderboard" in o:
            lb = o["leaderboard"]
            print("\nleaderboard.json (prism-sweep leaderboard): method %s, pooled sd %s"
                  % (lb.get("method", lb.get("analysis", {}).get("method")), lb.get("pooled_sd", lb.get("analysis", {}).get("pooled_sd"))))


if __name__ == "__main__":
    main()
