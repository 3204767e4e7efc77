"""Signature recovery on SBS96 catalogues: ours against scikit-learn's KL-NMF at the same rank.

Run with ``nice -n 15 python -m benchmarks.reproduce.counts.signatures`` (about 2-5 CPU minutes;
``--quick``: one seed, breast only; ``--synthetic 12``: instead 12 cohorts drawn from COSMIC
signatures, ~20 CPU s each).

For the 21 breast cancers (Nik-Zainal et al. 2012, K = 5: their signatures A-E) and the 552
ESCC genomes (Moody et al. 2021, K = 8: the SBS1, SBS2, SBS13, SBS5, SBS16, SBS17, SBS18, SBS40
named in the data README), samples x channels, it fits

* scikit-learn ``NMF(K, beta_loss="kullback-leibler", solver="mu", init="nndsvda",
  max_iter=1000, tol=1e-6)`` for several ``random_state`` (nndsvda is deterministic up to the
  solver; seeds change only the zero fill);
* ours: ``BayesianNMF(n_components=K, beta_loss="kullback-leibler", random_state=seed)`` with
  its defaults (the count core's Gibbs sweep directly until the estimator takes
  ``beta_loss``),

and prints, per method and seed, the mean over recovered signatures of the best cosine to the
86 COSMIC v3.4 signatures and of the one-to-one (Hungarian) cosine. For ours it then prints
each signature's uncertainty: the matched COSMIC signature, the cosine of the posterior mean,
the posterior mean, standard deviation and 5-95 % interval of the cosine over posterior draws
(each draw's signature normalized to sum 1), and the mean posterior standard deviation of the
normalized signature's entries relative to their mean.
"""

import argparse

import numpy as np

import benchmarks  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)
from benchmarks.reproduce.counts._shared import (
    cosines,
    match_signatures,
    normalize_rows,
    ours,
    sklearn_kl,
)
from bnmfzoo.datasets import load_cosmic_signatures, load_sbs96

SETS = {"breast": 5, "escc": 8}


def run(name, K, seeds, ref, names):
    X = load_sbs96(name).values
    print(f"\n## {name}: {X.shape[0]} samples x 96 channels, {int(X.sum()):,} mutations, K = {K}")
    rows = []
    for seed in seeds:
        _, H, n_iter, cpu = sklearn_kl(X, K, seed=seed)
        m = match_signatures(H, ref, names)
        rows.append(("sklearn KL-NMF (mu)", seed, m, cpu, f"{n_iter} it"))
    fits = []
    for seed in seeds:
        fit = ours(X, K, seed=seed)
        m = match_signatures(fit["W"], ref, names)
        rows.append((fit["how"], seed, m, fit["cpu"], ""))
        fits.append((seed, fit, m))
    print(f"{'method':48s} {'seed':>4s} {'best cos':>9s} {'hungarian':>9s} {'cpu s':>7s}")
    for how, seed, m, cpu, note in rows:
        print(f"{how:48s} {seed:4d} {m['best'].mean():9.4f} {m['hungarian'].mean():9.4f} "
              f"{cpu:7.1f} {note}")
    for label in ("sklearn", "BayesianNMF" if "BayesianNMF" in rows[-1][0] else "core"):
        sel = [r for r in rows if label in r[0]]
        b = np.array([r[2]["best"].mean() for r in sel])
        h = np.array([r[2]["hungarian"].mean() for r in sel])
        print(f"mean over seeds  {label:12s}: best cosine {b.mean():.4f} (sd {b.std():.4f}), "
              f"hungarian {h.mean():.4f} (sd {h.std():.4f})")
    seed, fit, m = fits[0]
    print(f"\nours, seed {seed}: each signature with its posterior uncertainty")
    print(f"{'k':>2s} {'COSMIC':>8s} {'cos(mean)':>9s} {'cos draws mean':>14s} {'sd':>7s} "
          f"{'5%':>7s} {'95%':>7s} {'rel sd':>7s}")
    Wd = normalize_rows(fit["W_draws"])  # (S, K, 96)
    for k in range(K):
        j = list(names).index(m["best_name"][k])
        c = cosines(Wd[:, k, :], ref[j][None, :])[:, 0]
        rel = (Wd[:, k, :].std(0) / np.maximum(Wd[:, k, :].mean(0), 1e-12)).mean()
        print(f"{k:2d} {m['best_name'][k]:>8s} {m['best'][k]:9.4f} {c.mean():14.4f} "
              f"{c.std():7.4f} {np.quantile(c, 0.05):7.4f} {np.quantile(c, 0.95):7.4f} "
              f"{rel:7.3f}")
    return rows


def synthetic_cohort(i, ref, names):
    """Cohort ``i``: SBS96 counts drawn from 4-8 COSMIC signatures (SBS1 and SBS5 in every
    genome plus random others, each active in ~60 % of genomes with Gamma(0.5) weights),
    40-199 genomes with log-normal burdens (median 3,000 mutations). Returns ``(X, picks)``."""
    rng = np.random.default_rng(1000 + i)
    names = [str(n) for n in names]
    K = int(rng.integers(4, 9))
    others = [n for n in names if n not in ("SBS1", "SBS5")]
    picks = ["SBS1", "SBS5"] + [str(n) for n in rng.choice(others, K - 2, replace=False)]
    S = normalize_rows(np.asarray(ref, float)[[names.index(p) for p in picks]])
    D = int(rng.integers(40, 200))
    burden = np.exp(rng.normal(np.log(3000), 1.0, D))
    act = rng.gamma(0.5, 1.0, (D, K)) * (rng.uniform(size=(D, K)) < 0.6)
    act[:, :2] += 0.3
    act /= act.sum(1, keepdims=True)
    return rng.poisson(burden[:, None] * act @ S), picks


def run_synthetic(n, ref, names):
    """Mean best cosine to COSMIC of ours and scikit-learn's KL-NMF on ``n`` synthetic cohorts
    at their true rank (data no default was chosen on)."""
    print(f"\n## {n} synthetic cohorts from COSMIC v3.4 (true rank; seed 0 for both)")
    wins = 0
    for i in range(n):
        X, picks = synthetic_cohort(i, ref, names)
        K = len(picks)
        _, H, _, _ = sklearn_kl(X, K, seed=0)
        sk = match_signatures(H, ref, names)["best"].mean()
        ours_best = match_signatures(ours(X, K, seed=0)["W"], ref, names)["best"].mean()
        wins += ours_best >= sk
        print(f"cohort {i:2d}: {X.shape[0]:3d} genomes, K = {K}, {' '.join(picks)}: sklearn "
              f"{sk:.4f}, ours {ours_best:.4f}", flush=True)
    print(f"ours at least as good in {wins} of {n}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--synthetic", type=int, default=0, metavar="N",
                        help="instead: N synthetic cohorts drawn from COSMIC signatures")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sets", nargs="+", choices=sorted(SETS), default=sorted(SETS),
                        help="catalogues to run (default: both)")
    args = parser.parse_args(argv)
    S = load_cosmic_signatures("v3.4")
    ref, names = S.values, S.row.values
    if args.synthetic:
        return run_synthetic(args.synthetic, ref, names)
    seeds = [0] if args.quick else list(range(args.seeds))
    sets = {"breast": SETS["breast"]} if args.quick else {k: SETS[k] for k in args.sets}
    for name, K in sets.items():
        run(name, K, seeds, ref, names)


if __name__ == "__main__":
    main()
