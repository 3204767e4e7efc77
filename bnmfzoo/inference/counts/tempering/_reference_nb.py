"""The reference path of negative-binomial NMF: a Gamma reference and the Gamma-mixed power path.

For the per-mode estimators of :mod:`bnmfzoo.inference.reference_path` and
:mod:`bnmfzoo.inference.reference_tempering`. A mode's reference ``q`` is a product of Gammas,
one per entry of ``A`` and ``W`` and one for a learned dispersion ``alpha``, matching the fit
draws' means and widened variances. The path from ``q`` to the posterior is

``pi_b ∝ q^(1 - b) p0^b prod_dn f_b(x_dn)``,

with ``f_b`` the Gamma-mixed power of :mod:`bnmfzoo.inference.counts.tempering._power_nb`
(``f_0 = 1``, ``f_1`` the NB likelihood): ``q^(1 - b) p0^b`` is again a product of Gammas
(shapes and rates mixed linearly in ``b``), so each rung is sampled by the same exact sweep
with per-entry priors. The path is not geometric in ``b`` (``f_b`` is no power of ``f_1``),
so the SMC and the tempering read it through ``log_data(state, b) = log prod f_b``
(:class:`bnmfzoo.inference.reference_path.ReferencePath`'s ``log_target``).

**A Gaussian copula over the Gamma marginals of ``A`` and ``W``** (:meth:`NBReferenceAdapter.
fit_copula`, :class:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula`, as for the Poisson
path of :mod:`bnmfzoo.inference.counts.tempering._reference_poisson`; the dispersion keeps its
own Gamma, independent): ``log pi_b`` is the product path's plus ``(1 - b) log c(z)``. Its rung
is moved by HMC on ``log A, log W`` at the current dispersion with the copula's term
(:func:`~bnmfzoo.inference.counts.tempering._hmc_term.hmc_step_term` with the NB rung's
density), then by the dispersion's slice step given the factors
(:meth:`~bnmfzoo.inference.counts.tempering._power_nb.PowerNB.alpha_step`; the copula does not
involve ``alpha``, so its conditional is the product path's). Each leaves the rung invariant.
"""

from dataclasses import replace

import numpy as np

from bnmfzoo.inference.counts.tempering._power_nb import PowerNB
from bnmfzoo.inference.kernels.gamma_copula import COPULA_FACTORS, GammaCopula, factor_blocks
from bnmfzoo.inference.kernels.gamma_fit import gamma_logpdf as _gamma_logpdf
from bnmfzoo.inference.kernels.gamma_fit import gamma_moment_fit as _gamma_fit

__all__ = ["NBReferenceAdapter"]


class NBReferenceAdapter:
    """NB NMF with constant Gamma priors: Gamma reference, Gamma-mixed power path (module doc).

    The members :func:`bnmfzoo.inference.reference_path.reference_adapter` promises, and
    ``log_data(s, b)`` / ``log_data_batch(states)``: the path's data term. ``local`` adds
    exact moves after the sweep (:class:`~bnmfzoo.inference.counts.tempering._local.
    RungMoves`; ``"sweep+hmc"``: HMC at the dispersion the sweep left, at ``b >= 0.7``, of
    ``n_leap`` leapfrog steps); the sweep already ends with the group moves. A reference with
    a ``"copula"`` entry (:meth:`fit_copula`) is moved by HMC and the dispersion's slice step
    alone (``local="hmc"``; module docstring).
    """

    name = "negative_binomial"

    #: narrower widenings of the marginal fit the tempering also pilots (:func:`bnmfzoo.
    #: inference.reference_tempering.reference_pt_log_z`): on breast SBS96 at K = 4 the pilot
    #: barrier fell from 15.6-17.3 at the default 2 to 11.9-12.4 at 0.7, and one tempering run
    #: reached 10 round trips in 98 CPU s against 174 (``docs/results/masses_nb_route_2.md``
    #: section 16)
    tempering_widen = (0.7,)
    #: the copula reference's widenings and factors: those the negative binomial's pilots were
    #: measured with (the Poisson adapter's are wider, with more factors)
    copula_widen = (0.7,)
    copula_factors = COPULA_FACTORS

    def __init__(self, tempered, inner_sweeps=1, local="sweep", n_leap=10):
        from bnmfzoo.inference.counts.tempering._local import RungMoves

        problem = tempered.problem
        if problem.family != "negative_binomial":
            raise ValueError(f"NBReferenceAdapter needs an NB problem, got {problem.family!r}")
        if problem.rates:
            raise ValueError("the reference path needs constant prior rates (the model has "
                             "rate variables)")
        self.problem, self.tempered = problem, tempered
        self.path = PowerNB(problem, inner_sweeps)
        D, N = problem.shape
        K = problem.rank
        self.aA = np.broadcast_to(problem.aA, (D, K)).astype(float)
        self.aW = np.broadcast_to(problem.aW, (K, N)).astype(float)
        self.bA = np.broadcast_to(problem.bA, (D, K)).astype(float)
        self.bW = np.broadcast_to(problem.bW, (K, N)).astype(float)
        self.learn_alpha = problem.alpha_prior is not None
        self.dimension = (D + N) * K + self.learn_alpha
        parts = str(local).split("+")
        if "sweep" not in parts and parts != ["hmc"]:
            raise ValueError(f"the NB reference path's local moves need the sweep (it moves "
                             f"the dispersion), or are 'hmc' alone for a copula reference, "
                             f"got {local!r}")
        self.moves = RungMoves(problem, local, n_leap=n_leap)
        self.blocks = factor_blocks(D, N, K)

    def freeze(self):
        """Freeze the adapted step size of the extra moves (:class:`RungMoves`)."""
        self.moves.freeze()

    def draws(self, state, perm):
        x = [state["A"][:, perm].ravel(), state["W"][perm].ravel()]
        if self.learn_alpha:
            x.append([float(state["alpha"])])
        return np.concatenate(x)

    def fit(self, draws, widen):
        D, N = self.problem.shape
        K = self.problem.rank
        a, b = _gamma_fit(draws, widen)
        n, m = D * K, (D + N) * K
        q = {"aA": a[:n].reshape(D, K), "bA": b[:n].reshape(D, K),
             "aW": a[n:m].reshape(K, N), "bW": b[n:m].reshape(K, N)}
        if self.learn_alpha:
            q["alpha"] = (float(a[m]), float(b[m]))
        return q

    def fit_copula(self, draws, widen, n_factors=None):
        """:meth:`fit` plus the Gaussian copula of the normal scores of ``A`` and ``W``.

        ``q["copula"]`` is a :class:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula` with
        the same marginals over the draws' ``A`` and ``W`` entries (blocks: the rows of ``A``
        and the columns of ``W``); the dispersion's Gamma stays independent of them.
        """
        q = self.fit(draws, widen)
        m = self.blocks.size
        n_factors = self.copula_factors if n_factors is None else n_factors
        q["copula"] = GammaCopula.fit(np.asarray(draws)[:, :m], widen, self.blocks,
                                      n_factors=n_factors)
        return q

    def draw_q(self, q, rng):
        tiny = np.finfo(float).tiny
        if "copula" in q:
            D, N = self.problem.shape
            K = self.problem.rank
            x = q["copula"].draw(rng)
            A, W = x[:D * K].reshape(D, K).copy(), x[D * K:].reshape(K, N).copy()
        else:
            A = np.maximum(rng.gamma(q["aA"], 1.0 / q["bA"]), tiny)
            W = np.maximum(rng.gamma(q["aW"], 1.0 / q["bW"]), tiny)
        alpha = self.problem.alpha
        if self.learn_alpha:
            alpha = max(float(rng.gamma(q["alpha"][0], 1.0 / q["alpha"][1])), tiny)
        return {"A": A, "W": W, "rates": {}, "alpha": alpha}

    def log_q(self, q, s):
        if "copula" in q:
            out = q["copula"].logpdf(np.concatenate([s["A"].ravel(), s["W"].ravel()]))
        else:
            out = (_gamma_logpdf(s["A"], q["aA"], q["bA"])
                   + _gamma_logpdf(s["W"], q["aW"], q["bW"]))
        if self.learn_alpha:
            out += _gamma_logpdf(float(s["alpha"]), *q["alpha"])
        return out

    def log_p0(self, s):
        out = _gamma_logpdf(s["A"], self.aA, self.bA) + _gamma_logpdf(s["W"], self.aW, self.bW)
        if self.learn_alpha:
            out += _gamma_logpdf(float(s["alpha"]), *self.problem.alpha_prior)
        return out

    def loglik(self, s):
        return float(self.tempered.loglik(s))

    def log_data(self, s, b):
        """``log prod_dn f_b(x_dn)`` at ``s`` (0 at ``b = 0``; the NB log-likelihood at 1)."""
        return self.path.log_target(s, b)

    def log_data_batch(self, states):
        """``b -> [log_data(s, b) for s in states]`` while the states are unchanged."""
        return self.path.log_target_batch(states)

    def copy(self, s):
        return self.tempered.copy(s)

    def sweep(self, q, s, beta, rng):
        b = float(beta)
        if not 0.0 < b <= 1.0:
            raise ValueError(f"beta must lie in (0, 1], got {beta!r}")
        mix = dict(aA=b * self.aA + (1.0 - b) * q["aA"], bA=b * self.bA + (1.0 - b) * q["bA"],
                   aW=b * self.aW + (1.0 - b) * q["aW"], bW=b * self.bW + (1.0 - b) * q["bW"])
        if self.learn_alpha:
            (a0, b0), (aq, bq) = self.problem.alpha_prior, q["alpha"]
            mix["alpha_prior"] = (b * a0 + (1.0 - b) * aq, b * b0 + (1.0 - b) * bq)
        if "copula" in q:
            if self.moves.sweep or not self.moves.hmc:
                raise ValueError("a copula reference's path is moved by HMC alone: build the "
                                 "adapter with local='hmc'")
            A, W = self.moves.run(s["A"], s["W"], mix["aA"], mix["bA"], mix["aW"], mix["bW"],
                                  b, rng, ref_shapes=(q["aA"], q["aW"]), alpha=s["alpha"],
                                  term=q["copula"].copula_theta,
                                  term_grad=q["copula"].surrogate_grad)
            s.update(A=A, W=W, alpha=self.path.alpha_step(
                replace(self.problem, **mix), A, W, s["alpha"], b, rng))
            return
        if not self.moves.sweep:
            raise ValueError("the NB path from a product reference is moved by the sweep: "
                             "build the adapter with local='sweep' (or 'sweep+hmc')")
        self.path.sweep_with(replace(self.problem, **mix), s, b, rng)
        A, W = self.moves.run(s["A"], s["W"], mix["aA"], mix["bA"], mix["aW"], mix["bW"], b,
                              rng, ref_shapes=(q["aA"], q["aW"]), alpha=s["alpha"])
        s.update(A=A, W=W)

