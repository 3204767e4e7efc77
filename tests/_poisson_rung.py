"""The rank-1, 1 x 2 Poisson rung the local-move tests share (exact draws: ``_quadrature``).

The rung ``pi_b ∝ Gamma(A; AA, RA) prod_n Gamma(W_n; AW_n, RW_n) L^b`` of the counts
``POISSON_X`` (the reference's shapes and rates mixed with the prior's), its recognized problem,
exact draws moved by a kernel and their Kolmogorov-Smirnov p-values against the exact
marginals, and the one-mode start of the log Z tests.
"""

import numpy as np
from _quadrature import POISSON_RATE, POISSON_X, poisson_rung_cdfs, poisson_rung_draws
from scipy import stats

X = np.asarray(POISSON_X, float)
#: the rung's Gamma part (shapes and rates of A and of W)
AA, RA = np.array([[2.0]]), np.array([[0.5]])
AW, RW = np.array([[1.5, 0.8]]), np.array([[0.4, 1.2]])


def rung_problem():
    """The recognized problem of ``poisson(X, 1)`` with the quadrature's Gamma prior."""
    from bnmfzoo.inference.counts._problem import problem_from_factorization
    from bnmfzoo.models import poisson, recognize

    return problem_from_factorization(recognize(poisson(X[None, :], 1, a=1.0,
                                                        b=POISSON_RATE)))


def moved_exact_draws(moves, rng, b, n, n_moves):
    """``n`` exact draws of ``pi_b``, each moved by ``n_moves`` transitions of ``moves``.

    Returns ``(A0, W0, A1, W1)``: the draws before and after (``A`` of shape ``(n,)``, ``W``
    of shape ``(n, 2)``).
    """
    A0, W0 = poisson_rung_draws(rng, n, X, b, AA[0, 0], RA[0, 0], AW[0], RW[0])
    A1, W1 = np.empty_like(A0), np.empty_like(W0)
    for i in range(A0.size):
        a, w = np.array([[A0[i]]]), W0[i][None, :].copy()
        for _ in range(n_moves):
            a, w = moves.run(a, w, AA, RA, AW, RW, b, rng)
        A1[i], W1[i] = a[0, 0], w[0]
    return A0, W0, A1, W1


def rung_ks_pvalues(A, W, b):
    """Kolmogorov-Smirnov p-values of ``A``, ``W_1``, ``W_2`` against ``pi_b``'s marginals:
    ``[(name, p), ...]``."""
    cdfs = poisson_rung_cdfs(X, b, AA[0, 0], RA[0, 0], AW[0], RW[0])
    return [(name, stats.kstest(v, cdf).pvalue)
            for name, v, cdf in zip(("A", "W1", "W2"), (A, W[:, 0], W[:, 1]), cdfs, strict=True)]


def rank1_family():
    """The tempering family of ``poisson(X, 1)`` (``smc_masses.family_of_model``)."""
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.models import poisson

    return family_of_model(poisson(X[None, :], 1, a=1.0, b=POISSON_RATE))


def one_mode_reference(fam, s):
    """The mode reference (unit-norm factors) of the state ``s`` of ``fam``."""
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2

    return _unit_l2(np.asarray(fam.factors(s)[0], float)[None])


def swept_start(seed, n_sweeps=20):
    """``(fam, ref, s, rng)``: a prior draw swept ``n_sweeps`` times at ``b = 1`` and its
    mode reference, for the log Z tests against quadrature."""
    fam = rank1_family()
    rng = np.random.default_rng(seed)
    s = fam.draw_prior(rng)
    for _ in range(n_sweeps):
        fam.tempered.sweep(s, 1.0, rng)
    return fam, one_mode_reference(fam, s), s, rng
