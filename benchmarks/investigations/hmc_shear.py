"""Does the exact shear move after each HMC transition speed up dense catalogues? (measurement)

``GibbsPoisson(moves="hmc")`` (the step ``pm.sample()`` gives dense Poisson catalogues) with and
without ``shear=True``: after each HMC transition and its rescaling, the exact shear move of
every ordered pair of components (:func:`bnmfzoo.inference.counts.gibbs._moves.shear_into`:
``W_j + t W_k``, ``A_k - t A_j`` with ``t`` from its exact conditional; ``A @ W`` unchanged). The
variant ``shear-kept`` runs the shear in the kept draws only (the tuning, and so the learned
trajectory lengths, as without it); ``nostretch`` and ``shear-nostretch`` keep the learned
lengths at the bulk's U-turn times (``HmcAdapter(stretch=False)``), without and with the shear.

Each run: 2 chains of ``--draws`` + ``--tune`` from scikit-learn's KL-NMF solution (both chains
at the same point, no jitter, as :mod:`benchmarks.speed.converged_counts`), one process, one
BLAS thread; after ``align``, the bulk ESS per CPU second (tuning counted) of every entry of
``A``, ``W``, the normalized signatures, the exposures and 500 cells of ``A @ W``
(:func:`benchmarks.speed.converged.ess_table`). Printed per run: CPU s, the learned leapfrog
steps (mean, last chain), the slow time the lengths were stretched to, per quantity
``min ESS/s / max R-hat``, and ``MIN``, the smallest min ESS/s of the five. Data
(``--data``): ``breastK<k>`` (the 21 breast SBS96 catalogues at rank k), ``escc4`` / ``escc8``
(the 552 ESCC catalogues), ``sub<source>_<n>_<k>`` (``n`` catalogues of ``breast`` or ``escc``
drawn with seed ``n``, rank k)::

    python -m benchmarks.investigations.hmc_shear --data breastK4 --seeds 1 2 3
    python -m benchmarks.investigations.hmc_shear --data subescc_60_4 --variants base shear
"""

import argparse
import time

import numpy as np

import benchmarks  # noqa: F401 - environment defaults
from benchmarks.speed.converged import arrays, ess_table
from benchmarks.speed.converged_counts import load as load_row
from benchmarks.speed.converged_counts import nmf_start


def load(name):
    """``(X, K)`` of a ``--data`` name (module docstring)."""
    import bnmfzoo as bz

    if name.startswith("sub"):
        source, n, rank = name[3:].split("_")
        X = np.rint(np.asarray(bz.datasets.load_sbs96(source).values)).astype(np.int64)
        keep = np.sort(np.random.default_rng(int(n)).choice(X.shape[0], int(n), replace=False))
        return X[keep], int(rank)
    if name.startswith("breastK"):
        return load_row("breast4")[0], int(name[len("breastK"):])
    return load_row(name)


def _kept_only(step):
    """Run the step's shear in its kept transitions only (variant ``shear-kept``)."""
    hmc = step._hmc
    full = hmc.transition

    def transition(A, Wt, rng, tune):
        hmc.shear = not tune
        return full(A, Wt, rng, tune)

    hmc.transition = transition


def run(name, draws, tune, seeds, variants):
    import pymc as pm

    from bnmfzoo.inference import GibbsPoisson
    from bnmfzoo.models import poisson

    X, rank = load(name)
    D, N = X.shape
    flat = np.sort(np.random.default_rng(0).choice(D * N, size=min(500, D * N), replace=False))
    cells = np.divmod(flat, N)
    A0, W0 = nmf_start(X, rank)
    with poisson(X, rank):
        pm.sample(draws=2, tune=1, chains=1, cores=1, random_seed=0, progressbar=False,
                  compute_convergence_checks=False, step=GibbsPoisson(moves="hmc", shear=True))
        for seed in seeds:
            for v in variants:
                step = GibbsPoisson(moves="hmc", shear=v not in ("base", "nostretch"))
                if v == "shear-kept":
                    _kept_only(step)
                if v.endswith("nostretch"):  # kept lengths at the bulk's U-turn times
                    step._hmc.stretch = False
                t = time.process_time()
                dt = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                               progressbar=False, compute_convergence_checks=False, step=step,
                               initvals=[{"A": A0, "W": W0}] * 2)
                sec = time.process_time() - t
                s = step.hmc_state
                tab = ess_table(*arrays(dt["posterior"]), sec, cells)
                print(f"{name} seed {seed} {v:10s} {sec:6.1f} s leaps "
                      f"{np.mean(s['leaps']):6.1f} slow time {s.get('slow_time', np.nan):.2f} "
                      + " ".join(f"{q}:{tab[q][0]:.1f}/{tab[q][2]:.3f}" for q in tab)
                      + f"  MIN {min(tab[q][0] for q in tab):.1f}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", nargs="+", default=["breastK4"])
    p.add_argument("--draws", type=int, default=2000)
    p.add_argument("--tune", type=int, default=500)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--variants", nargs="+", default=["base", "shear"],
                   choices=("base", "shear", "shear-kept", "nostretch",
                            "shear-nostretch"))
    a = p.parse_args(argv)
    for name in a.data:
        run(name, a.draws, a.tune, a.seeds, a.variants)


if __name__ == "__main__":
    main()
