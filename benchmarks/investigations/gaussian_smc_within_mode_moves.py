"""Do the within-mode moves narrow the Gaussian SMC from the prior's log Z spread? (experiment)

Run with::

    python -m benchmarks.investigations.gaussian_smc_within_mode_moves \
        drug_sensitivity/ccle/ic50.txt 3 VARIANT 8 100 2

``VARIANT``: ``plain`` (the library's tempered sweep), ``rescale`` (the exact rescaling move of
:func:`~bnmfzoo.inference.gaussian.gibbs._mixing.rescale_factors` after each sweep: ``A W``,
hence the tempered likelihood, is unchanged, so the move is exact at every ``beta``) or
``over_rescale`` (also the overrelaxed factor updates, ``alpha`` = -0.9). Then runs, particles
per run and sweeps per step of :func:`bnmfzoo.inference.tempering.smc.smc` from the prior
(seeds ``[7, r]``). Prints each run's log Z, steps and CPU s, then the mean and sd. On CCLE
IC50 at rank 3 (8 x 100 x 2): sd 1.63 (plain), 3.08 (rescale), 3.29 (over_rescale), means
-25,364.6, -25,364.3 and -25,360.9 against the per-mode -25,358.3
(``docs/results/masses_copula_reference_3.md`` section 41): not adopted.

Three optional arguments after those: the target CESS (default 0.9), the waste-free chain
length ``P`` (default ``none``; Dau & Chopin 2022) and the first run's seed index (default 0,
to split runs over processes). A waste-free run of ``N`` particles and ``m`` sweeps per chain
step makes as many sweeps as a plain run of ``N`` particles and ``m`` sweeps per step (on the
faces it took 1.26 times the CPU). Section 43 of ``docs/results/masses_copula_reference_3.md``
compares the settings at equal cost on the faces.
"""

import math
import sys
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)


def main(argv=None):
    """Run the runs of one variant and print their log Z."""
    from bnmfzoo._cli.masses import _build, _read
    from bnmfzoo.inference.gaussian.gibbs import _core
    from bnmfzoo.inference.gaussian.gibbs._mixing import OVERRELAX, rescale_factors
    from bnmfzoo.inference.gaussian.modes._tempering import _tau_of
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.inference.tempering.smc import smc

    a = sys.argv[1:] if argv is None else argv
    path, rank, variant = a[0], int(a[1]), a[2]
    n_runs, n_particles, n_moves = int(a[3]), int(a[4]), int(a[5])
    cess = float(a[6]) if len(a) > 6 else 0.9
    waste_free = int(a[7]) if len(a) > 7 and a[7] != "none" else None
    first = int(a[8]) if len(a) > 8 else 0  # runs first .. first + n_runs - 1 (to split)
    X = np.load(path) if path.endswith(".npy") else _read(path, "auto", None)
    fam = family_of_model(_build(np.asarray(X, float), rank, "exponential_gaussian"))
    tg = fam.tempered
    obs, hyper = tg.obs, tg.hyper

    def sweep(state, beta, rng):  # the tempered sweep's order, with the moves added
        beta = float(beta)
        lam_A, lam_W = _core.factor_rates(state, obs, hyper, rng, _core.NMF_BLOCKS)
        alpha = OVERRELAX if "over" in variant else 0.0
        _core._nmf_halves(state, obs, beta * _tau_of(state, hyper), lam_A, lam_W, rng, True,
                          True, "auto", alpha)
        if "rescale" in variant:
            sse = state.sse
            rescale_factors(state.A, state.Wt, lam_A, lam_W, rng)
            state._resid, state._sse = None, sse
        if hyper.sigma is None:
            state.tau = float(_core._gamma(hyper.alpha_tau + 0.5 * beta * obs.n_observed,
                                           hyper.beta_tau + 0.5 * beta * state.sse, rng))

    if variant != "plain":
        tg.sweep = sweep
    z = []
    for r in range(first, first + n_runs):
        t = time.process_time()
        run = smc(tg, fam.draw_prior, n_particles, np.random.default_rng([7, r]),
                  n_moves=n_moves, cess=cess, waste_free=waste_free)
        z.append(run.log_z)
        print(variant, cess, waste_free, r, round(run.log_z, 2), len(run.betas),
              round(time.process_time() - t, 1), flush=True)
    z = np.array(z)
    sd = float(z.std(ddof=1)) if z.size > 1 else math.nan
    print("SUMMARY", variant, cess, waste_free, "mean", round(float(z.mean()), 2), "sd",
          round(sd, 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
