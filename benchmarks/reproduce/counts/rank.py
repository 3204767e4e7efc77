"""Rank selection for Poisson NMF: the VB evidence bound (Cemgil 2009), ARD and LOO.

Run with ``nice -n 15 python -m benchmarks.reproduce.counts.rank`` (a few CPU minutes;
``--quick``: synthetic data and the breast catalogues only, fewer ranks).

1. **Known rank** (Cemgil 2009, Sec. 5's experiment in kind: data drawn from the model): a
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
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
