"""The Gaussian-copula reference of a negative-binomial mode and the moves of its path.

:meth:`bnmfzoo.inference.counts.tempering._reference_nb.NBReferenceAdapter.fit_copula` joins
the Gamma marginals of ``A`` and ``W`` by a Gaussian copula (the dispersion keeps its own
Gamma); a rung ``q^(1 - b) p0^b prod f_b`` of its path is moved by HMC with the copula's term on
the NB rung's density, then by the dispersion's slice step.

* **Exact target of the move.** At ``b = 0.3`` (not 0.5, where the term's weight ``1 - b`` would
  equal ``b``) on a rank-1 NB problem (2 x 3, offsets, a
  missing cell, learned dispersion) the rung has no closed form, so its draws come from
  sampling-importance-resampling of 200,000 exact draws of ``q``, weighted by ``pi_b / q``
  written out here (``b (log p0 - log q) + sum log f_b``; the copula's density is
  :class:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula`'s, itself checked against
  scipy in ``test_copula_reference.py``). The effective sample size must be above 20,000, so
  the pool's CDF error (about ``1 / sqrt(ESS) <= 0.007``) is far below the Kolmogorov-Smirnov
  critical value 0.05 of 1,500 draws at ``p = 1e-3``. Moved by 3 of the adapter's own moves,
  the draws must still match the pool's weighted marginals: 12 comparisons (5 factor entries,
  the dispersion and the 6 cells of ``A @ W``, which the copula's correlation shapes) at
  ``p >= 1e-3``, a nominal false-failure rate below 1.2 %. The dispersion's reference is set
  far from its prior, so a slice step under the prior alone instead of the rung's mixture
  keeps another target. False failures
  measured once over seeds 100-139 (``BNMFZOO_SEED_SCAN=1``): ``SEED_SCAN_RESULT``.
* **The path's evidence.** The SMC along the copula path estimates the log evidence of one NB
  cell (known by quadrature, ``tests/_quadrature.py``) within 4 standard errors of its 8 runs.
* **The term's gradient and the density.** At a step of 1e-4 the leapfrog with the NB density
  and the copula term conserves the Hamiltonian to ``O(eps^2)``; a gradient left out changes it
  by about ``1e-4`` while the transition stays exact, so only this check catches it. The
  density the move integrates is checked against the NB rung's written out (a move that kept
  the Poisson rung's instead would change the sampled law too little for 3 moves to show).
"""

import math
import os

import numpy as np
import pytest
from _counts_cases import copula_from_posterior, weighted_ks_pvalues
from _quadrature import NB_CELL_LOG_Z
from scipy import stats
from scipy.special import gammaln

import bnmfzoo as bz
from bnmfzoo.inference.reference_path import ReferencePath, reference_adapter
from bnmfzoo.inference.smc_masses import family_of_model

SEEDS = range(100, 140) if os.environ.get("BNMFZOO_SEED_SCAN") else [0]
#: measured once with BNMFZOO_SEED_SCAN=1 (seeds 100-139)
SEED_SCAN_RESULT = ("b = 0.3: 39 of 40 passed (1 Dec 2026, 278 s wall); seed 103 failed on the "
                    "dispersion at p = 0.0009, and with 6,000 draws instead of 1,500 the same "
                    "seed gave p = 0.51 there (all 12 p >= 0.012): a chance failure, within "
                    "the nominal 1.2 %")

X = np.array([[3, 1, 0], [0, 2, 4]])
ROW, COL = np.array([1.0, 2.5]), np.array([1.0, 0.5, 2.0])
MASK = np.array([[True, True, True], [False, True, True]])
A0, B0, ALPHA_PRIOR = 2.0, 1.0, (3.0, 1.0)


def _copula_path(rng, model, n_draws=3000):
    """The NB family, its HMC-moved adapter and a copula reference fitted to posterior draws."""
    fam = family_of_model(model)
    return (fam, *copula_from_posterior(fam, rng, n_draws))


def _log_f(x, r, alpha, b):
    return (gammaln(r + b * x) - gammaln(r) + r * np.log(alpha) - (r + b * x)
            * np.log(alpha + b) - b * gammaln(x + 1.0))


def _log_weights(xs, al, q, b):
    """``log pi_b - log q`` (up to a constant) of draws ``xs (n, 5)`` (A 2 x 1, W 1 x 3) and
    dispersions ``al (n,)`` of the 2 x 3 rank-1 problem, written out."""
    cop = q["copula"]
    A, W = xs[:, :2, None], xs[:, None, 2:]
    log_p0 = (stats.gamma.logpdf(xs, A0, scale=1.0 / B0).sum(1)
              + stats.gamma.logpdf(al, ALPHA_PRIOR[0], scale=1.0 / ALPHA_PRIOR[1]))
    z = cop.scores(xs)
    log_c = -0.5 * cop.log_det - 0.5 * np.sum(z * (cop.solve(z.T).T - z), axis=1)
    log_q = (stats.gamma.logpdf(xs, cop.a, scale=1.0 / cop.r).sum(1) + log_c
             + stats.gamma.logpdf(al, q["alpha"][0], scale=1.0 / q["alpha"][1]))
    r = al[:, None, None] * (ROW[:, None] * COL[None, :]) * (A @ W)
    log_f = np.where(MASK, _log_f(X, r, al[:, None, None], b), 0.0).sum(axis=(1, 2))
    return b * (log_p0 - log_q) + log_f


@pytest.mark.parametrize("seed", SEEDS)
def test_the_nb_copula_move_keeps_an_intermediate_rung(seed):
    """``b = 0.3``: sampling-importance-resampling draws of the rung, moved by the adapter's
    own sweep (HMC with the copula term at the dispersion, then the dispersion's slice step),
    against the pool's weighted marginals of the 5 factor entries and the dispersion."""
    rng = np.random.default_rng(seed)
    model = bz.models.negative_binomial(X, 1, a=A0, b=B0, alpha_prior=ALPHA_PRIOR,
                                        row_offset=ROW, col_offset=COL, mask=MASK)
    _, ad, q = _copula_path(rng, model)
    q["alpha"] = (20.0, 10.0)  # the dispersion's reference far from its prior Gamma(3, 1)
    C = q["copula"].U @ q["copula"].U.T
    for b_, cb in zip(q["copula"].blocks, q["copula"].block_cov, strict=True):
        C[np.ix_(b_, b_)] += cb
    assert np.abs(C[:2, 2:]).max() > 0.5, C  # a copula worth testing: A and W correlated
    path = ReferencePath(ad, q)
    b, pool = 0.3, 200_000
    xs = q["copula"].draw(rng, pool)
    al = rng.gamma(q["alpha"][0], 1.0 / q["alpha"][1], pool)
    logw = _log_weights(xs, al, q, b)
    lw0 = path.log_target(_state(xs[0], al[0]), b)  # the path's own, up to one constant
    for x, a, lw in zip(xs[1:4], al[1:4], logw[1:4], strict=True):
        assert path.log_target(_state(x, a), b) - lw0 == pytest.approx(lw - logw[0], abs=1e-8)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    ess = 1.0 / np.sum(w ** 2)
    assert ess > 20_000, ess
    n = 1500
    idx = rng.choice(pool, n, p=w)
    picked = np.column_stack([xs[idx], al[idx]])
    for _ in range(200):  # adapt the step size on the rung, then freeze it
        s = _state(*_split(picked[rng.integers(n)]))
        ad.sweep(q, s, b, rng)
    ad.freeze()
    moved = np.empty_like(picked)
    for i in range(n):
        s = _state(*_split(picked[i]))
        for _ in range(3):
            ad.sweep(q, s, b, rng)
        moved[i] = np.concatenate([s["A"].ravel(), s["W"].ravel(), [s["alpha"]]])
    assert np.mean(np.any(moved[:, :5] != picked[:, :5], axis=1)) > 0.3  # HMC moved them
    assert np.mean(moved[:, 5] != picked[:, 5]) > 0.9  # and the slice step the dispersion
    # the 5 entries, the dispersion and the 6 cells of A @ W (the copula's joint shape)
    ref = np.column_stack([xs, al, (xs[:, :2, None] * xs[:, None, 2:5]).reshape(pool, 6)])
    moved = np.column_stack([moved, (moved[:, :2, None] * moved[:, None, 2:5]).reshape(n, 6)])
    p = weighted_ks_pvalues(moved, ref, w)
    assert np.all(p >= 1e-3), (p, ess)


def _state(x, alpha):
    return {"A": np.array(x[:2], float).reshape(2, 1), "W": np.array(x[2:5], float).reshape(1, 3),
            "rates": {}, "alpha": float(alpha)}


def _split(row):
    return row[:5], row[5]


def test_the_smc_along_the_nb_copula_path_estimates_the_evidence():
    """One NB cell ([[6]], rank 1, learned dispersion): 8 SMC runs x 100 particles along the
    copula path from ``q``, ``|mean - exact| <= 4 se``."""
    from bnmfzoo.inference.tempering import log_z_summary, smc_runs

    rng = np.random.default_rng(7)
    model = bz.models.negative_binomial(np.array([[6]]), 1, a=2.0, b=1.0, alpha_prior=(4.0, 1.0))
    _, ad, q = _copula_path(rng, model, n_draws=2000)
    path = ReferencePath(ad, q)
    mean, se, _ = log_z_summary(smc_runs(path, path.draw, 8, 100, 11, n_moves=2))
    assert abs(mean - NB_CELL_LOG_Z) <= 4 * se, (mean, se, NB_CELL_LOG_Z)


def test_small_steps_conserve_the_hamiltonian_with_the_nb_term():
    """At a step of 1e-4 every ``log_acc`` is above -1e-6 with the NB rung's density and the
    copula term, and that density is the rung's written out (module docstring); the dense form
    is refused for the NB rung."""
    from bnmfzoo.inference.counts.tempering._hmc_term import hmc_step_term

    rng = np.random.default_rng(11)
    model = bz.models.negative_binomial(X, 1, a=A0, b=B0, alpha_prior=ALPHA_PRIOR,
                                        row_offset=ROW, col_offset=COL, mask=MASK)
    _, ad, q = _copula_path(rng, model, n_draws=500)
    b = 0.5
    shapes = [b * np.asarray(p0, float) + (1 - b) * np.asarray(qq, float) for p0, qq in (
        (ad.aA, q["aA"]), (ad.bA, q["bA"]), (ad.aW.T, q["aW"].T), (ad.bW.T, q["bW"].T))]
    shapes = tuple(np.ascontiguousarray(v) for v in shapes)
    imA, imW = np.full((2, 1), 0.25), np.full((3, 1), 0.3)
    cells = ad.moves.cells
    for x in q["copula"].draw(rng, 20):
        tA, tW = np.log(x[:2]).reshape(2, 1), np.log(x[2:]).reshape(3, 1)
        code, log_acc = hmc_step_term(tA, tW, rng.standard_normal((2, 1)),
                                      rng.standard_normal((3, 1)), cells, False, shapes, b,
                                      imA, imW, 1e-4, 3, -np.inf, q["copula"].copula_theta,
                                      1 - b, alpha=1.7)
        assert code == 0 and log_acc > -1e-6, (code, log_acc)
    # the density it integrates is the NB rung's with the term (differences between states
    # against the formula written out: shapes on log x, log f_b of the observed cells)
    from bnmfzoo.inference.counts.tempering._hmc_term import _density_grad

    alpha, vals, hand = 1.7, [], []
    for x in q["copula"].draw(rng, 4):
        tA, tW = np.log(x[:2]).reshape(2, 1), np.log(x[2:]).reshape(3, 1)
        vals.append(_density_grad(tA, tW, cells, False, shapes, b, np.empty_like(tA),
                                  np.empty_like(tW), q["copula"].copula_theta, 1 - b, True,
                                  None, alpha))
        r = alpha * (ROW[:, None] * COL[None, :]) * np.outer(x[:2], x[2:])
        hand.append(np.sum(shapes[0] * tA - shapes[1] * np.exp(tA))
                    + np.sum(shapes[2] * tW - shapes[3] * np.exp(tW))
                    + np.where(MASK, _log_f(X, r, alpha, b), 0.0).sum()
                    + (1 - b) * q["copula"].copula_theta(np.log(x))[0])
    assert np.allclose(np.diff(vals), np.diff(hand), atol=1e-8), (vals, hand)
    with pytest.raises(ValueError, match="cell loop"):
        hmc_step_term(tA, tW, rng.standard_normal((2, 1)), rng.standard_normal((3, 1)), cells,
                      True, shapes, b, imA, imW, 1e-4, 3, -np.inf, q["copula"].copula_theta,
                      1 - b, alpha=1.7)


def test_the_nb_adapter_moves_each_path_by_its_own_moves():
    """The copula path refuses the sweep; the product path refuses HMC alone (it needs the
    sweep, which moves the dispersion); ``local`` is the sweep's or ``hmc`` alone."""
    rng = np.random.default_rng(0)
    model = bz.models.negative_binomial(X, 1, a=A0, b=B0, alpha_prior=ALPHA_PRIOR,
                                        row_offset=ROW, col_offset=COL, mask=MASK)
    fam, ad, q = _copula_path(rng, model, n_draws=50)
    s = fam.draw_prior(rng)
    with pytest.raises(ValueError, match="HMC alone"):
        reference_adapter(fam).sweep(q, s, 0.5, rng)
    product = {k: v for k, v in q.items() if k != "copula"}
    with pytest.raises(ValueError, match="moved by the sweep"):
        ad.sweep(product, s, 0.5, rng)
    with pytest.raises(ValueError, match="hmc' alone"):
        reference_adapter(fam, "shear+hmc")
    assert math.isfinite(ad.log_q(q, ad.draw_q(q, rng)))
