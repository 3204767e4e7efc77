"""Rank selection for Poisson NMF: the VB evidence bound (Cemgil 2009), ARD and LOO.

Run with ``nice -n 15 python -m benchmarks.reproduce.counts.rank`` (a few CPU minutes;
``--quick``: synthetic data and the breast catalogues only, fewer ranks).

1. **Known rank** (Cemgil 2009's model-order experiment in kind: data drawn from the model): a
   60 x 50 count matrix from Gamma(2, 1) x Gamma(2, 1) factors of rank 3;
   :func:`bnmfzoo.inference.select_rank_poisson` (best VB bound of 3 restarts per rank, Gamma(1,
   1) priors) over K = 1..6 must pick 3.
2. **Real data**: the same on the 21 breast cancers (K = 1..8) and the 552 ESCC genomes
   (K = 2..12), printing the bound per rank and the chosen rank beside the literature's
   (5 signatures in Nik-Zainal et al. 2012; Moody et al. 2021 report SBS1, SBS2, SBS13, SBS5,
   SBS16, SBS17a/b, SBS18, SBS40 among others for ESCC);
3. **ARD** (Tan & Févotte 2013): ``models.poisson(X, 12, ard=True)`` fitted by VB; the number of
   factors carrying at least 0.1 % of the expected total (``variational.active``);
4. **LOO** (breast only): ``BayesianNMF(K, beta_loss="kullback-leibler")`` for K = 2..7 and
   ``az.compare`` of their ``posterior_`` (PSIS-LOO on the 2,016 cells).
5. **Negative binomial** (``--nb`` runs only this; ``--quick``: without ESCC):
   :func:`bnmfzoo.inference.select_rank_nb` (VB bound with the dispersion integrated out) and
   the Poisson bound at the same ``--nb-max-iter`` (default 3000) on NB-simulated data of rank
   2 (20 seeds), breast (K = 1..8, 3 restarts) and ESCC (K = 2, 4, .., 12, 2 restarts), with the
   learned alpha per rank; and the held-out log predictive density per cell (10 % of the cells
   masked, NB and Poisson VB fitted on the rest).
6. **Cemgil (2009)'s model-order selection over data seeds** (``--cemgil`` runs only this,
   about 25 CPU minutes; :mod:`benchmarks.reproduce.counts._cemgil`): 10 matrices of 40 x 30
   drawn from the model with 3 templates, orders 1..5, the VB bound, the bound + log I!,
   Chib's (1995) estimate from the Gibbs sampler (first 6 seeds), held-out log-likelihood and
   the ML-NMF likelihood, and how often each picks each order.
"""

import argparse
import warnings

import numpy as np

import benchmarks  # noqa: F401
from bnmfzoo.datasets import load_sbs96


def evidence(X, ranks, label, literature=None):
    from bnmfzoo.inference import select_rank_poisson

    out = select_rank_poisson(X, ranks, restarts=3, random_seed=0, progressbar=False)
    print(f"\n## VB evidence bound, {label}")
    best = out["elbo"].max()
    for r, e in zip(out["ranks"], out["elbo"]):
        print(f"  K = {r:2d}: bound {e:14.1f}  (best - this: {best - e:10.1f})")
    print(f"  chosen rank: {out['rank']}" + (f"  (literature: {literature})" if literature
                                              else ""))
    return out["rank"]


def ard(X, Kmax, label):
    from bnmfzoo.inference import fit_vb_poisson
    from bnmfzoo.models import poisson

    dt = fit_vb_poisson(poisson(X, Kmax, ard=True), random_seed=0, progressbar=False)
    share = dt["variational"]["share"].values
    active = int(dt["variational"]["active"].values.sum())
    print(f"\n## ARD (VB), {label}, K max = {Kmax}: {active} active factors; shares "
          + ", ".join(f"{s:.3f}" for s in np.sort(share)[::-1]))
    return active


def loo(X, ranks, label):
    import arviz as az

    from bnmfzoo import BayesianNMF

    fits = {}
    for K in ranks:
        est = BayesianNMF(K, beta_loss="kullback-leibler", random_state=0).fit(X)
        fits[f"K={K}"] = est.posterior_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = az.compare(fits)
    print(f"\n## PSIS-LOO (az.compare), {label}")
    print(table[["rank", "elpd", "elpd_diff", "dse", "p", "weight"]].to_string())
    return table.index[0]


# --- negative binomial (``--nb``): the evidence with the dispersion integrated out -----------


def nb_synthetic(seeds):
    """NB vs Poisson bound on overdispersed NB data of rank 2 (the case of
    ``tests/counts/test_counts_vb_nb.py::test_nb_evidence_picks_known_rank_of_overdispersed_data``)."""
    from bnmfzoo.inference import select_rank_nb, select_rank_poisson

    picks = {"NB": [], "Poisson": []}
    for seed in seeds:
        rng = np.random.default_rng(seed)
        mu = rng.gamma(1.0, 20.0, (40, 2)) @ rng.gamma(1.0, 1.0, (2, 30))
        X = rng.negative_binomial(0.3 * mu, 0.3 / 1.3)
        for name, select in (("NB", select_rank_nb), ("Poisson", select_rank_poisson)):
            picks[name].append(select(X, [1, 2, 3], restarts=2, random_seed=seed,
                                      progressbar=False)["rank"])
    print(f"\n## NB data (40 x 30, rank 2, alpha = 0.3), seeds {seeds[0]}-{seeds[-1]}: rank "
          "picked among 1-3 (2 restarts)")
    for name, p in picks.items():
        print(f"  {name:8s} bound: " + ", ".join(f"K={k}: {p.count(k)}" for k in (1, 2, 3)))


def nb_evidence(X, ranks, label, *, literature, restarts, max_iter):
    """NB bound (``select_rank_nb``) and Poisson bound at the same iterations, side by side."""
    import time

    from bnmfzoo.inference import select_rank_nb, select_rank_poisson

    t0 = time.process_time()
    nb = select_rank_nb(X, ranks, restarts=restarts, max_iter=max_iter, random_seed=0,
                        progressbar=False)
    t1 = time.process_time()
    po = select_rank_poisson(X, ranks, restarts=restarts, max_iter=max_iter, random_seed=0,
                             progressbar=False)
    t2 = time.process_time()
    print(f"\n## NB vs Poisson VB evidence, {label} (best of {restarts} restarts, "
          f"max_iter {max_iter}; CPU {t1 - t0:.0f} s NB, {t2 - t1:.0f} s Poisson)")
    print("   K   NB bound (alpha integrated)  best-this  alpha   sd(log a)  point-bound"
          "   Poisson bound  best-this")
    for i, r in enumerate(nb["ranks"]):
        print(f"  {r:2d} {nb['elbo'][i]:16.1f} {nb['elbo'].max() - nb['elbo'][i]:18.1f}"
              f" {nb['alpha'][i]:7.3f} {nb['log_alpha_sd'][i]:9.4f}"
              f" {nb['point'][i] - nb['elbo'][i]:11.1f} {po['elbo'][i]:16.1f}"
              f" {po['elbo'].max() - po['elbo'][i]:10.1f}")
    print(f"  chosen rank: NB {nb['rank']}, Poisson {po['rank']} (literature: {literature})")
    return nb, po


def nb_heldout(X, ranks, label, *, frac=0.1, draws=200, max_iter):
    """Held-out log predictive density per masked cell (a random ``frac`` of the cells), NB and
    Poisson VB fitted on the rest (``mask=``), ``log mean_s p(x | A_s, W_s)`` over draws of q."""
    from scipy import stats
    from scipy.special import logsumexp

    from bnmfzoo.inference import fit_vb_nb, fit_vb_poisson
    from bnmfzoo.models import negative_binomial, poisson

    observed = np.random.default_rng(1).uniform(size=X.shape) >= frac
    rows, cols = np.nonzero(~observed)
    x = X[rows, cols]
    print(f"\n## Held-out log predictive per cell, {label} ({x.size} cells masked, "
          f"{draws} draws of q, max_iter {max_iter})")
    print("   K   NB mean   Poisson mean   NB median  Poisson median  (a few outlying cells "
          "dominate means)")
    cells = {"NB": {}, "Poisson": {}}
    for K in ranks:
        out = []
        for fit, build in ((fit_vb_nb, negative_binomial), (fit_vb_poisson, poisson)):
            dt = fit(build(X, K, mask=observed), max_iter=max_iter, n_draws=draws,
                     random_seed=0, progressbar=False)
            A = dt["posterior"]["A"].values[0]
            W = dt["posterior"]["W"].values[0]
            mu = np.einsum("sik,ski->si", A[:, rows, :], W[:, :, cols])
            if fit is fit_vb_nb:
                a = float(dt["variational"]["alpha"])
                lp = stats.nbinom.logpmf(x, a * mu, a / (1.0 + a))
            else:
                lp = stats.poisson.logpmf(x, mu)
            per_cell = logsumexp(lp, axis=0) - np.log(draws)
            cells["NB" if fit is fit_vb_nb else "Poisson"][K] = per_cell
            out += [float(np.mean(per_cell)), float(np.median(per_cell))]
        print(f"  {K:2d} {out[0]:9.4f} {out[2]:12.4f} {out[1]:11.4f} {out[3]:13.4f}", flush=True)
    for name, by_rank in cells.items():  # paired over the same cells
        best = max(by_rank, key=lambda k: by_rank[k].mean())
        gaps = {k: by_rank[best] - v for k, v in by_rank.items() if k != best}
        diffs = ", ".join(f"K={k}: {g.mean():.4f} +- {g.std() / np.sqrt(g.size):.4f} "
                          f"(median {np.median(g):.4f}, worst cell {g.max():.0f})"
                          for k, g in gaps.items())
        print(f"  {name}: best mean at K = {best}; best - this per cell (paired se): {diffs}")


def nb_ard(X, Kmax, label, *, max_iter):
    """ARD (per-factor Gamma rates) in the NB model, fitted by ``fit_vb_nb``."""
    from bnmfzoo.inference import fit_vb_nb
    from bnmfzoo.models import negative_binomial

    dt = fit_vb_nb(negative_binomial(X, Kmax, ard=True), max_iter=max_iter, n_draws=1,
                   random_seed=0, progressbar=False)
    share = dt["variational"]["share"].values
    active = int(dt["variational"]["active"].values.sum())
    print(f"\n## ARD (NB VB), {label}, K max = {Kmax}: {active} active factors "
          f"(alpha {float(dt['variational']['alpha']):.3f}, {int(dt['diagnostics']['n_iter'])} "
          "iterations); shares " + ", ".join(f"{s:.3f}" for s in np.sort(share)[::-1]))
    return active


def nb_dispersion(X, K, label, *, max_iter, bins=6):
    """Is the NB variance ``mu (1 + 1 / alpha)`` right? Mean Pearson ratio ``(x - mu)^2 / mu``
    by bins of the fitted mean ``mu = E[A] E[W]`` beside the model's ``1 + 1 / alpha``."""
    from bnmfzoo.inference import fit_vb_nb
    from bnmfzoo.models import negative_binomial

    dt = fit_vb_nb(negative_binomial(X, K), max_iter=max_iter, n_draws=1, random_seed=0,
                   progressbar=False)
    v = dt["variational"]
    mu = (v["A_shape"].values / v["A_rate"].values) @ (v["W_shape"].values
                                                       / v["W_rate"].values)
    alpha = float(v["alpha"])
    ratio = (X - mu) ** 2 / mu
    edges = np.quantile(mu, np.linspace(0.0, 1.0, bins + 1))
    which = np.clip(np.searchsorted(edges, mu, side="right") - 1, 0, bins - 1)
    print(f"\n## NB dispersion check, {label}, K = {K}: alpha = {alpha:.3f}, model variance / "
          f"mean = 1 + 1/alpha = {1 + 1 / alpha:.2f}; mean Pearson ratio by bin of fitted mean")
    for b in range(bins):
        sel = which == b
        print(f"  mu in [{edges[b]:9.1f}, {edges[b + 1]:9.1f}]: {sel.sum():6d} cells, "
              f"(x - mu)^2 / mu = {ratio[sel].mean():9.2f}")


def main_nb(args):
    nb_synthetic(list(range(20)))
    breast = load_sbs96("breast").values
    nb_evidence(breast, range(1, 9), "21 breast cancers", restarts=3,
                max_iter=args.nb_max_iter, literature="5 (Nik-Zainal et al. 2012)")
    nb_heldout(breast, range(1, 9), "21 breast cancers", max_iter=args.nb_max_iter)
    nb_dispersion(breast, 5, "21 breast cancers", max_iter=args.nb_max_iter)
    nb_ard(breast, 12, "21 breast cancers", max_iter=args.nb_max_iter)
    if not args.quick:
        escc = load_sbs96("escc").values
        # every other rank (a fit costs 1-2 CPU min at 3000 iterations)
        nb_evidence(escc, range(2, 13, 2), "552 ESCC genomes", restarts=2,
                    max_iter=args.nb_max_iter, literature="about 8-11 (Moody 2021)")
        nb_heldout(escc, (4, 8, 12), "552 ESCC genomes", max_iter=args.nb_max_iter)
        nb_dispersion(escc, 8, "552 ESCC genomes", max_iter=args.nb_max_iter)
        nb_ard(escc, 16, "552 ESCC genomes", max_iter=args.nb_max_iter)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--nb", action="store_true",
                        help="only the negative-binomial evidence and held-out section")
    parser.add_argument("--nb-max-iter", type=int, default=3000)
    parser.add_argument("--cemgil", action="store_true",
                        help="only Cemgil (2009)'s model-order experiment over data seeds")
    parser.add_argument("--cemgil-seeds", type=int, default=10)
    parser.add_argument("--cemgil-chib-seeds", type=int, default=6)
    args = parser.parse_args(argv)
    if args.nb:
        return main_nb(args)
    if args.cemgil:
        from benchmarks.reproduce.counts._cemgil import cemgil

        return cemgil(replicates=args.cemgil_seeds, chib_replicates=args.cemgil_chib_seeds)
    rng = np.random.default_rng(0)
    X = rng.poisson(rng.gamma(2.0, 1.0, (60, 3)) @ rng.gamma(2.0, 1.0, (3, 50)))
    evidence(X, range(1, 7), "synthetic 60 x 50, true rank 3", literature="3 (true)")
    breast = load_sbs96("breast").values
    evidence(breast, range(1, 9 if not args.quick else 7), "21 breast cancers",
             literature="5 (Nik-Zainal et al. 2012)")
    ard(breast, 12, "21 breast cancers")
    loo(breast, range(2, 8) if not args.quick else (3, 5), "21 breast cancers")
    if not args.quick:
        escc = load_sbs96("escc").values
        evidence(escc, range(2, 13), "552 ESCC genomes", literature="about 8-11 (Moody 2021)")
        ard(escc, 16, "552 ESCC genomes")


if __name__ == "__main__":
    main()
