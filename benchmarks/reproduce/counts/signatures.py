"""Signature recovery on SBS96 catalogues: ours against scikit-learn's KL-NMF at the same rank.

Run with ``nice -n 15 python -m benchmarks.reproduce.counts.signatures`` (about 2-5 CPU minutes;
``--quick``: one seed, breast only).

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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sets", nargs="+", choices=sorted(SETS), default=sorted(SETS),
                        help="catalogues to run (default: both)")
    args = parser.parse_args(argv)
    S = load_cosmic_signatures("v3.4")
    ref, names = S.values, S.row.values
    seeds = [0] if args.quick else list(range(args.seeds))
    sets = {"breast": SETS["breast"]} if args.quick else {k: SETS[k] for k in args.sets}
    for name, K in sets.items():
        run(name, K, seeds, ref, names)


if __name__ == "__main__":
    main()
