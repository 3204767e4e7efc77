"""Fingerprints of the Poisson HMC moves' draws, to show a refactoring leaves them bit-identical.

SHA-256 prefixes of seeded runs of every HMC kernel of the count wing: the untempered
transition and trajectory (``counts/gibbs/_hmc_moves``, over the cells and dense), the tempered
steps (``counts/tempering/_hmc`` and ``_hmc_dense``, at ``b`` = 0.37 and 1), the non-finite
guards, ``RungMoves`` (three move sets), ``HmcTempered`` from a KL start, sizes up to the ESCC
catalogue's 96 x 552 at K = 4 (where BLAS's order of summation shows), and with ``--pm``
``HmcPoisson`` through ``pm.sample`` on a dense and a sparse matrix. Run it on two trees (a copy
of the base commit, ``git archive``, and the working tree) and compare the lines; the median CPU
milliseconds of one ESCC-sized transition of each kernel (``--timing REPEATS``) give the cost
ratio. Results: ``docs/results/counts_dense.md`` §6.

    nice -n 5 .venv/bin/python -m benchmarks.investigations.hmc_kernel_fingerprints \
        --tree /tmp/base --pm > base.txt
"""

import argparse
import hashlib
import math
import sys
import time

import numpy as np


def _h(*arrs):
    m = hashlib.sha256()
    for a in arrs:
        m.update(np.ascontiguousarray(np.asarray(a, float)).tobytes())
    return m.hexdigest()[:16]


def _problem(seed, D, N, K, miss=0.2, lam=4.0, dense_off=False):
    rng = np.random.default_rng(seed)
    seen = rng.uniform(size=(D, N)) >= miss
    rows, cols = (v.astype(np.int64) for v in np.nonzero(seen))
    offs = rng.uniform(0.5, 2.0, rows.size)
    x = rng.poisson(lam, rows.size).astype(float)
    Xd, Od = np.zeros((D, N)), np.zeros((D, N))
    Xd[rows, cols], Od[rows, cols] = x, offs
    prior = tuple(rng.uniform(0.5, 2, s) for s in ((D, K), (D, K), (N, K), (N, K)))
    return rng, (rows, cols, offs, x), (Xd, Od), prior


def kernels(out, sizes=((7, 9, 3), (33, 70, 5), (96, 552, 4), (5, 300, 1))):
    """The numba kernels, each chained over seeded transitions."""
    from bnmfzoo.inference.counts.gibbs import _hmc_moves as hm
    from bnmfzoo.inference.counts.tempering._hmc import hmc_step, log_density_grad
    from bnmfzoo.inference.counts.tempering._hmc_dense import hmc_step_dense

    empty = (np.zeros((0, 0)), np.zeros((0, 0)))
    for D, N, K in sizes:
        for form in ("cells", "dense"):
            rng, cells, grid, prior = _problem(D, D, N, K, lam=20.0 if D > 10 else 4.0)
            tA, tWt = rng.normal(size=(D, K)), rng.normal(size=(N, K))
            imA, imWt = rng.uniform(0.01, 0.1, (D, K)), rng.uniform(0.01, 0.1, (N, K))
            gA, gWt = np.empty_like(tA), np.empty_like(tWt)
            data = (*cells, *(grid if form == "dense" else empty))
            rec = []
            for _ in range(15):
                rec += hm.hmc_transition(tA, tWt, rng.standard_normal((D, K)),
                                         rng.standard_normal((N, K)), *data, *prior, imA, imWt,
                                         0.05 * rng.uniform(0.8, 1.2), 6,
                                         math.log(rng.uniform()), gA, gWt)
            uA, uWt = rng.normal(size=(D, K)), rng.normal(size=(N, K))
            for _ in range(10):
                rec += hm.hmc_trajectory(tA, tWt, rng.standard_normal((D, K)),
                                         rng.standard_normal((N, K)), *data, *prior, imA, imWt,
                                         0.05, 40, math.log(rng.uniform()), gA, gWt, True, uA,
                                         uWt, hm.NO_DIRS, hm.NO_DIRS, hm.NO_LAM)
            out[f"untempered {form} {D}x{N} K={K}"] = _h(tA, tWt, gA, gWt, rec)
            for beta in (0.37, 1.0):
                r2 = np.random.default_rng(D + 100)
                tA, tWt = r2.normal(size=(D, K)), r2.normal(size=(N, K))
                rec = []
                for _ in range(15):
                    pA, pWt = r2.standard_normal((D, K)), r2.standard_normal((N, K))
                    step, d = (hmc_step_dense, grid) if form == "dense" else (hmc_step, cells)
                    rec += step(tA, tWt, pA, pWt, *d, *prior, beta, imA, imWt,
                                0.05 * r2.uniform(0.8, 1.2), 7, math.log(r2.uniform()))
                out[f"tempered {form} b={beta} {D}x{N} K={K}"] = _h(tA, tWt, pA, pWt, rec)
    g1, g2 = np.empty((1, 1)), np.empty((2, 1))
    args = (np.array([0, 0]), np.array([0, 1]), np.ones(2), np.array([3.0, 0.0]),
            np.ones((1, 1)), np.ones((1, 1)), np.ones((2, 1)), np.ones((2, 1)), 0.5)
    out["guards"] = str([log_density_grad(np.array([[v]]), np.zeros((2, 1)), *args, g1, g2)
                         for v in (np.nan, -800.0, 800.0, 0.3)])


def moves(out, pm_sample=False):
    """``RungMoves``, ``HmcTempered`` from a KL start and (``pm_sample``) ``HmcPoisson``."""
    from bnmfzoo.inference.counts._problem import problem_from_factorization
    from bnmfzoo.inference.counts.tempering._local import RungMoves
    from bnmfzoo.inference.large_route import LARGE_LOCAL, HmcTempered, kl_nmf_start
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.models import poisson, recognize

    X = np.random.default_rng(7).poisson(5.0, size=(6, 8))
    prob = problem_from_factorization(recognize(poisson(X, 2, a=1.0, b=0.5)))
    for local in ("shear+rescale+hmc", "sweep+hmc", "hmc"):
        rng = np.random.default_rng(11)
        mv = RungMoves(prob, local, n_leap=5, eps=0.2, hmc_from=0.0)
        A, W = rng.gamma(2, 1, (6, 2)), rng.gamma(2, 1, (2, 8))
        aA, rA, aW, rW = np.ones((6, 2)), np.full((6, 2), 0.5), np.ones((2, 8)), np.full((2, 8),
                                                                                          0.5)
        for _ in range(30):
            for b in (0.3, 1.0):
                A, W = mv.run(A, W, aA, rA, aW, rW, b, rng)
        out[f"RungMoves {local}"] = _h(A, W, [mv.acceptance(), mv.eps])
    fam = family_of_model(poisson(X, 2, a=1.0, b=0.5))
    ht = HmcTempered(fam.tempered, LARGE_LOCAL, 5)
    rng = np.random.default_rng(5)
    s = kl_nmf_start(fam.tempered.problem, fam.draw_prior(rng), 50)
    for _ in range(30):
        ht.sweep(s, 1.0, rng)
        ht.sweep(s, 0.5, rng)
    out["HmcTempered"] = _h(*[np.asarray(f, float) for f in fam.factors(s)], [ht.loglik(s)])
    if pm_sample:
        import logging
        import warnings

        import pymc as pm

        import bnmfzoo as bz
        from bnmfzoo.inference.counts.gibbs.hmc_poisson import HmcPoisson

        logging.disable(logging.WARNING)
        warnings.filterwarnings("ignore")
        for name, X in (("dense", np.random.default_rng(0).poisson(30.0, size=(8, 6))),
                        ("sparse", np.random.default_rng(1).poisson(0.4, size=(12, 10)))):
            for seed in (1, 2):
                with bz.models.poisson(X, 2):
                    idata = pm.sample(step=HmcPoisson(), draws=40, tune=60, chains=1,
                                      progressbar=False, random_seed=seed,
                                      compute_convergence_checks=False)
                out[f"pm.sample HmcPoisson {name} seed {seed}"] = _h(
                    idata.posterior["A"].values, idata.posterior["W"].values)


def timing(repeats):
    """Median CPU ms of one transition of 10 leapfrog steps of each kernel, ESCC-sized."""
    from bnmfzoo.inference.counts.gibbs import _hmc_moves as hm
    from bnmfzoo.inference.counts.tempering._hmc import hmc_step
    from bnmfzoo.inference.counts.tempering._hmc_dense import hmc_step_dense

    D, N, K = 96, 552, 4
    _, cells, grid, prior = _problem(0, D, N, K, miss=0.0, lam=20.0)
    empty = (np.zeros((0, 0)), np.zeros((0, 0)))
    im = (np.full((D, K), 0.01), np.full((N, K), 0.01))
    rng = np.random.default_rng(0)
    tA0, tW0 = np.log(rng.gamma(5, 1, (D, K))), np.log(rng.gamma(5, 1, (N, K)))

    def run(kind):
        tA, tWt, z1, z2 = tA0.copy(), tW0.copy(), np.zeros((D, K)), np.zeros((N, K))
        if kind.startswith("untempered"):
            data = (*cells, *(grid if kind.endswith("dense") else empty))
            hm.hmc_transition(tA, tWt, z1, z2, *data, *prior, *im, 1e-3, 10, 0.0,
                              np.empty_like(tA), np.empty_like(tWt))
        else:
            step, d = (hmc_step_dense, grid) if kind.endswith("dense") else (hmc_step, cells)
            step(tA, tWt, z1, z2, *d, *prior, 0.5, *im, 1e-3, 10, 0.0)

    for kind in ("untempered cells", "untempered dense", "tempered cells", "tempered dense"):
        run(kind)
        ts = []
        for _ in range(repeats):
            c = time.process_time()
            run(kind)
            ts.append(time.process_time() - c)
        print(f"ms {kind} {1e3 * np.median(ts):.3f}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--tree", help="the source tree to import bnmfzoo from (default: installed)")
    p.add_argument("--pm", action="store_true", help="also HmcPoisson through pm.sample")
    p.add_argument("--timing", type=int, default=0, help="repeats of the timing (0: none)")
    a = p.parse_args(argv)
    if a.tree:
        sys.path.insert(0, a.tree)
    import bnmfzoo

    print(f"tree {bnmfzoo.__file__}", flush=True)
    out = {}
    kernels(out)
    moves(out, a.pm)
    for k, v in out.items():
        print(k, v)
    if a.timing:
        timing(a.timing)


if __name__ == "__main__":
    main()
