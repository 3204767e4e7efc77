"""ESS per CPU second: GibbsPoisson against PyMC's NUTS on a Poisson NMF model NUTS can finish.

Model: :func:`bnmfzoo.models.poisson` on simulated counts (default 30 x 20, K = 3, Gamma(1, 1)
priors). Both samplers run through ``pm.sample`` (2 chains, sequentially, ``cores=1``), NUTS
with ``nuts_sampler="pymc"`` and our steps taken out of PyMC's list (``pymc_default_steps``).
ESS (bulk, ArviZ) of a few entries of ``A @ W`` (a Deterministic: the factor entries themselves
are not identified up to label switching), divided by the CPU seconds of ``pm.sample``
(compilation included for both); ``loop``: the same sweep in a plain Python loop
(:func:`bnmfzoo.inference.counts._gibbs.gibbs_sweep`, no ``pm.sample`` overhead). Prints the
per-entry ESS/s and the ratio of medians (target
>= 100).

Run: ``python -m benchmarks.speed.counts_ess``
"""

import argparse
import time

import numpy as np
import pymc as pm

import bnmfzoo as bz
from benchmarks._common import Clock  # noqa: F401 - one BLAS thread
from bnmfzoo.inference import pymc_default_steps


def _ess(idata, cells):
    import arviz_stats as azs

    aw = idata.posterior["AW"]
    ess = azs.ess(aw, method="bulk")
    return np.array([float(ess.values[i, j]) for i, j in cells])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=30)
    p.add_argument("--cols", type=int, default=20)
    p.add_argument("--rank", type=int, default=3)
    p.add_argument("--draws", type=int, default=2000)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    D, N, K = args.rows, args.cols, args.rank
    X = rng.poisson(rng.gamma(1.0, 1.0, (D, K)) @ rng.gamma(1.0, 2.0, (K, N)))
    model = bz.models.poisson(X, K)
    with model:
        pm.Deterministic("AW", model["A"] @ model["W"], dims=("row", "col"))
    cells = [(0, 0), (D // 2, N // 2), (D - 1, N - 1), (1, N - 2)]
    res = {}
    with model:
        t0 = time.process_time()
        g = pm.sample(draws=args.draws, tune=500, chains=2, cores=1, random_seed=1,
                      progressbar=False, compute_convergence_checks=False)
        res["gibbs"] = (time.process_time() - t0, _ess(g, cells))
        with pymc_default_steps():
            t0 = time.process_time()
            n = pm.sample(draws=args.draws, tune=1000, chains=2, cores=1, random_seed=2,
                          nuts_sampler="pymc", progressbar=False,
                          compute_convergence_checks=False)
            res["nuts"] = (time.process_time() - t0, _ess(n, cells))
    # the same sweep without pm.sample's per-step overhead (the numeric loop a fitter runs)
    from bnmfzoo.inference.counts._gibbs import gibbs_sweep, initial_state
    from bnmfzoo.inference.counts._problem import counts_spec

    _, prob = counts_spec(model, method="benchmark")
    rng = np.random.default_rng(3)
    t0 = time.process_time()
    chains = []
    for _ in range(2):
        s = initial_state(prob, rng)
        out = []
        for t in range(500 + args.draws):
            s = gibbs_sweep(prob, s, rng)
            if t >= 500:
                aw = s["A"] @ s["W"]
                out.append([aw[i, j] for i, j in cells])
        chains.append(out)
    cpu = time.process_time() - t0
    import arviz_stats as azs

    arr = np.array(chains)
    res["loop"] = (cpu, np.array([float(azs.ess(arr[:, :, c], method="bulk"))
                                  for c in range(len(cells))]))
    for name, (cpu, ess) in res.items():
        print(f"{name:6s}: {cpu:7.1f} CPU s, ESS bulk of A@W cells {np.round(ess).tolist()}, "
              f"ESS/s {np.round(ess / cpu, 1).tolist()}")
    ratio = np.median(res["gibbs"][1] / res["gibbs"][0]) / np.median(
        res["nuts"][1] / res["nuts"][0])
    print(f"ratio of median ESS/s, GibbsPoisson / NUTS: {ratio:.1f} (target >= 100)")
    ratio = np.median(res["loop"][1] / res["loop"][0]) / np.median(
        res["nuts"][1] / res["nuts"][0])
    print(f"ratio of median ESS/s, numeric Gibbs loop / NUTS: {ratio:.1f}")


if __name__ == "__main__":
    main()
