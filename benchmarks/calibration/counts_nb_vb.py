"""NB variational Bayes (``fit_vb_nb``) against the NB Gibbs sampler, and its cost per iteration.

1. Posterior means on a tiny model (6 x 5 NB counts of rank 2 with alpha = 3, fitted at K = 1
   and K = 2): ``E_q[(A W)_dn]`` of VB against the Gibbs chain's mean of ``(A W)_dn``
   (``--sweeps`` sweeps after 1,000 burn-in, batch-means MCSE), with a fixed and a learned
   dispersion. Prints the relative differences, their size in Gibbs MCSE, the ratio of VB's
   to Gibbs's posterior standard deviations (mean-field VB is known to under-disperse) and
   alpha.
2. CPU per iteration of ``fit_vb_nb`` against ``fit_vb_poisson`` on a sparse matrix (default
   2,000 x 5,000, 5 % nonzeros, K = 6; medians over the iterations of one run each).

Run: ``nice -n 15 python -m benchmarks.calibration.counts_nb_vb``
"""

import argparse
import time

import numpy as np
import scipy.sparse as sp

import bnmfzoo as bz
from benchmarks._common import Clock  # noqa: F401 - one BLAS thread
from bnmfzoo.inference.counts._problem import problem_from_factorization
from bnmfzoo.inference.counts.sweep import initial_state
from bnmfzoo.inference.counts.sweep import sweep as gibbs_sweep
from bnmfzoo.inference.counts.variational._vb_core import vb_init, vb_iteration
from bnmfzoo.inference.counts.variational.vb_nb import nb_vb_iteration


def _batch_mcse(x, n_batches=40):
    means = np.array([b.mean(axis=0) for b in np.array_split(x, n_batches)])
    return means.std(axis=0, ddof=1) / np.sqrt(n_batches)


def compare(D, N, K, sweeps, seed):
    rng = np.random.default_rng(seed)
    mu = rng.gamma(2, 1, (D, 2)) @ rng.gamma(2, 1, (2, N))
    X = rng.negative_binomial(3.0 * mu, 3.0 / 4.0)
    print(f"data {D} x {N} (true rank 2), fitted K = {K}, total count {X.sum()}, zeros "
          f"{np.mean(X == 0):.2f}")
    for label, kw in (("alpha fixed at 3", {"alpha": 3.0}), ("alpha ~ Gamma(2, 0.2)", {})):
        model = bz.models.negative_binomial(X, K, a=1.0, b=1.0, **kw)
        dt = bz.inference.fit_vb_nb(model, tol=1e-10, max_iter=20_000, random_seed=seed,
                                    progressbar=False)
        post = dt["posterior"]
        vb_aw = np.einsum("sdk,skn->sdn", post["A"].values[0], post["W"].values[0])
        var = dt["variational"]
        vb_mean = (var["A_shape"].values / var["A_rate"].values) @ (
            var["W_shape"].values / var["W_rate"].values)
        prob = problem_from_factorization(bz.models.recognize(model))
        g = np.random.default_rng(seed + 1)
        s = initial_state(prob, g)
        aw, al = [], []
        t0 = time.process_time()
        for t in range(sweeps + 1000):
            s = gibbs_sweep(prob, s, g)
            if t >= 1000:
                aw.append(s["A"] @ s["W"])
                al.append(s["alpha"])
        cpu = time.process_time() - t0
        aw = np.array(aw)
        gm, se = aw.mean(0), _batch_mcse(aw)
        rel = np.abs(vb_mean - gm) / gm
        z = np.abs(vb_mean - gm) / se
        sd_ratio = vb_aw.std(0) / aw.std(0)
        print(f"[{label}] VB {int(dt['diagnostics']['n_iter'])} iterations; Gibbs {sweeps} "
              f"sweeps ({cpu:.1f} CPU s)")
        print(f"  E[AW] relative difference VB - Gibbs: median {np.median(rel):.4f}, max "
              f"{rel.max():.4f}; in Gibbs MCSE: median {np.median(z):.1f}, max {z.max():.1f}")
        print(f"  posterior sd of AW, VB / Gibbs: median {np.median(sd_ratio):.2f}, range "
              f"{sd_ratio.min():.2f}-{sd_ratio.max():.2f}")
        print(f"  alpha: VB {float(var['alpha']):.3f}; Gibbs mean {np.mean(al):.3f} "
              f"(sd {np.std(al):.3f})")


def cost(D, N, K, density, iters, seed):
    rng = np.random.default_rng(seed)
    X = sp.random_array((D, N), density=density, rng=rng, format="csr")
    X.data = rng.negative_binomial(2.0, 0.3, size=X.nnz) + 1.0
    out = {}
    for name, model in (("poisson", bz.models.poisson(X, K)),
                        ("nb (alpha fixed)", bz.models.negative_binomial(X, K, alpha=10.0)),
                        ("nb (learned alpha)", bz.models.negative_binomial(X, K))):
        prob = problem_from_factorization(bz.models.recognize(model))
        state = vb_init(prob, np.random.default_rng(seed))
        alpha = 10.0
        times = []
        for _ in range(iters):
            t0 = time.process_time()
            if prob.family == "poisson":
                state, _ = vb_iteration(prob, state)
            else:
                state, alpha, _ = nb_vb_iteration(prob, state, alpha)
            times.append(time.process_time() - t0)
        out[name] = float(np.median(times[1:]))
        print(f"{name}: {1e3 * out[name]:.1f} ms CPU per iteration (median of {iters - 1}), "
              f"{X.nnz} nonzeros")
    for name in ("nb (alpha fixed)", "nb (learned alpha)"):
        print(f"ratio {name} / Poisson: {out[name] / out['poisson']:.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=int, default=40_000)
    ap.add_argument("--iters", type=int, default=11)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    for K in (1, 2):
        compare(6, 5, K, a.sweeps, a.seed)
    cost(2000, 5000, 6, 0.05, a.iters, a.seed)


if __name__ == "__main__":
    main()
