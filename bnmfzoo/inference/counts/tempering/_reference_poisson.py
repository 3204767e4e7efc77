"""The reference path of Poisson NMF: a Gamma (or Gamma-copula) reference and the power sweep.

For the per-mode estimators of :mod:`bnmfzoo.inference.reference_path` and
:mod:`bnmfzoo.inference.reference_tempering`. A mode's reference ``q`` is fitted to the mode's
draws, and the path from it to the posterior is ``pi_b ∝ q^(1 - b) (p0 L)^b``.

* **A product of Gammas** (:meth:`PoissonReferenceAdapter.fit`): ``q^(1 - b) p0^b`` is again a
  product of Gammas (shapes and rates mixed linearly in ``b``), so each rung is sampled by the
  exact power-posterior latent-count sweep with per-entry priors
  (:mod:`bnmfzoo.inference.counts.tempering._power`), followed by the extra exact moves of
  ``local`` (:class:`~bnmfzoo.inference.counts.tempering._local.RungMoves`).
* **A Gaussian copula over the same Gamma marginals** (:meth:`PoissonReferenceAdapter.
  fit_copula`, :class:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula`): ``log pi_b`` is
  the product path's plus ``(1 - b) log c(z)``, ``c`` the copula density. No conjugate sweep
  exists for it, so every rung is moved by HMC on ``log A, log W`` with that term
  (:mod:`bnmfzoo.inference.counts.tempering._hmc_term`; the kicks use the copula's cheap
  surrogate gradient, the Metropolis test its exact density): the adapter is built with
  ``local="hmc"`` (the route uses ``COPULA_LEAPFROG`` leapfrog steps), the step size adapted
  as for the product path's HMC. On breast SBS96 (Poisson, K = 4) the copula fitted to the
  route's 2,000 fit draws halved the barrier of the path, and the per-mode tempering cost 1.5
  times less CPU than from the product reference (``docs/results/masses_copula_reference.md``);
  the routes now fit it to 4,000, wider and with more factors (:data:`COPULA_WIDEN`,
  :data:`POISSON_COPULA_FACTORS`).
"""

import hashlib

import numpy as np

from bnmfzoo.inference.kernels.gamma_copula import GammaCopula, factor_blocks
from bnmfzoo.inference.kernels.gamma_fit import gamma_logpdf as _gamma_logpdf
from bnmfzoo.inference.kernels.gamma_fit import gamma_moment_fit as _gamma_fit

__all__ = ["PoissonReferenceAdapter", "COPULA_LEAPFROG", "COPULA_WIDEN", "POISSON_COPULA_FACTORS"]

#: leapfrog steps of the copula reference's HMC move
COPULA_LEAPFROG = 20
#: widenings of the marginal fit under the Gaussian copula reference that the per-mode
#: tempering pilots and the per-mode SMC uses (its first). 1.0 with
#: :data:`POISSON_COPULA_FACTORS` factors: on the first 214 genomes of ESCC SBS96 (K = 4) the
#: pilot barrier from 4,000 sweep draws fell from 6.2-6.8 (0.7, 8 factors) to 5.5, and the
#: ``bnmfzoo masses`` command (fit chains of 4 x 1,000 draws) was established in 15-38 % less
#: CPU on four Poisson catalogues (``docs/results/masses_copula_reference.md`` section 26,
#: ``masses_copula_reference_2.md`` section 27)
COPULA_WIDEN = (1.0,)
#: leading factors of the Poisson copula's correlation (:class:`~bnmfzoo.inference.kernels.
#: gamma_copula.GammaCopula`): with 500 draws 16 factors at 1.0 matched 8 at 0.7 (barrier
#: 8.3-8.5 against 8.1-8.8), with 1,000-4,000 they were lower (same sections)
POISSON_COPULA_FACTORS = 16


#: the last copula fitted, ``(key, copula)``: both per-mode estimators fit one to the same
#: draws (on ESCC SBS96 at K = 4, 11,400 draws: 15-17 CPU s a fit)
_LAST_COPULA = [None]


def _copula_of(draws, widen, blocks, n_factors):
    """``GammaCopula.fit`` (deterministic), the last fit remembered by its arguments' bytes."""
    draws = np.ascontiguousarray(draws, float)
    key = (draws.shape, float(widen), int(n_factors), np.asarray(blocks).tobytes(),
           hashlib.blake2b(draws.data, digest_size=16).digest())
    last = _LAST_COPULA[0]
    if last is None or last[0] != key:
        _LAST_COPULA[0] = last = (key, GammaCopula.fit(draws, widen, blocks,
                                                       n_factors=n_factors))
    return last[1]


class PoissonReferenceAdapter:
    """Poisson NMF with constant Gamma priors: Gamma reference, power-posterior sweep.

    A reference ``q`` with a ``"copula"`` entry (:meth:`fit_copula`) is drawn, evaluated and
    moved as the Gaussian copula over its Gamma marginals (module docstring).
    """

    name = "poisson"
    #: the copula reference's widenings and factors (module constants)
    copula_widen = COPULA_WIDEN
    copula_factors = POISSON_COPULA_FACTORS

    def __init__(self, tempered, inner_sweeps=1, local="sweep", n_leap=10):
        from bnmfzoo.inference.counts.tempering._local import RungMoves

        problem = tempered.problem
        if problem.family != "poisson":
            raise ValueError("the reference path supports Poisson count models (the negative "
                             f"binomial has no power-posterior sweep), got {problem.family!r}")
        if problem.rates:
            raise ValueError("the reference path needs constant prior rates (the model has "
                             "rate variables)")
        self.problem, self.inner = problem, int(inner_sweeps)
        self.tempered = tempered
        D, N = problem.shape
        K = problem.rank
        self.aA = np.broadcast_to(problem.aA, (D, K)).astype(float)
        self.aW = np.broadcast_to(problem.aW, (K, N)).astype(float)
        self.bA = np.broadcast_to(problem.bA, (D, K)).astype(float)
        self.bW = np.broadcast_to(problem.bW, (K, N)).astype(float)
        self.dimension = (D + N) * K
        self._rung = (None, None)
        self.moves = RungMoves(problem, local, n_leap=n_leap)
        self.blocks = factor_blocks(D, N, K)

    def freeze(self):
        """Freeze the adapted step size of the extra moves (:class:`RungMoves`)."""
        self.moves.freeze()

    def _state(self, flat):
        D, N = self.problem.shape
        K = self.problem.rank
        return {"A": flat[:D * K].reshape(D, K).copy(), "W": flat[D * K:].reshape(K, N).copy(),
                "rates": {}, "alpha": None}

    def draws(self, state, perm):
        return np.concatenate([state["A"][:, perm].ravel(), state["W"][perm].ravel()])

    def fit(self, draws, widen):
        D, N = self.problem.shape
        K = self.problem.rank
        a, b = _gamma_fit(draws, widen)
        n = D * K
        return {"aA": a[:n].reshape(D, K), "bA": b[:n].reshape(D, K),
                "aW": a[n:].reshape(K, N), "bW": b[n:].reshape(K, N)}

    def fit_copula(self, draws, widen, n_factors=None):
        """:meth:`fit` plus the Gaussian copula of the draws' normal scores.

        ``q["copula"]`` is a :class:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula` with
        the same marginals; its blocks are the rows of ``A`` and the columns of ``W``; it keeps
        ``n_factors`` factors (default :attr:`copula_factors`).
        """
        q = self.fit(draws, widen)
        n_factors = self.copula_factors if n_factors is None else n_factors
        q["copula"] = _copula_of(draws, widen, self.blocks, n_factors)
        return q

    def draw_q(self, q, rng):
        if "copula" in q:
            return self._state(q["copula"].draw(rng))
        tiny = np.finfo(float).tiny
        return {"A": np.maximum(rng.gamma(q["aA"], 1.0 / q["bA"]), tiny),
                "W": np.maximum(rng.gamma(q["aW"], 1.0 / q["bW"]), tiny),
                "rates": {}, "alpha": None}

    def log_q(self, q, s):
        if "copula" in q:
            return q["copula"].logpdf(self.draws(s, slice(None)))
        return (_gamma_logpdf(s["A"], q["aA"], q["bA"])
                + _gamma_logpdf(s["W"], q["aW"], q["bW"]))

    def log_p0(self, s):
        return _gamma_logpdf(s["A"], self.aA, self.bA) + _gamma_logpdf(s["W"], self.aW, self.bW)

    def loglik(self, s):
        return float(self.tempered.loglik(s))

    def copy(self, s):
        return self.tempered.copy(s)

    def sweep(self, q, s, beta, rng):
        from dataclasses import replace

        from bnmfzoo.inference.counts.sweep import power_rung, sweep

        b = float(beta)
        if not 0.0 < b <= 1.0:
            raise ValueError(f"beta must lie in (0, 1], got {beta!r}")
        prob = replace(self.problem, aA=b * self.aA + (1.0 - b) * q["aA"],
                       bA=b * self.bA + (1.0 - b) * q["bA"],
                       aW=b * self.aW + (1.0 - b) * q["aW"],
                       bW=b * self.bW + (1.0 - b) * q["bW"])
        if "copula" in q:
            if self.moves.sweep or not self.moves.hmc:
                raise ValueError("a copula reference's path is moved by HMC alone: build the "
                                 "adapter with local='hmc'")
            A, W = self.moves.run(s["A"], s["W"], prob.aA, prob.bA, prob.aW, prob.bW, b, rng,
                                  ref_shapes=(q["aA"], q["aW"]), copula=q["copula"])
            s.update(A=A, W=W)
            return
        rung = None
        if b < 1.0:
            if self._rung[0] != b:
                self._rung = (b, power_rung(self.problem, b))
            rung = self._rung[1]
        if self.moves.sweep:
            for _ in range(self.inner):
                s.update(sweep(prob, s, rng, power=rung))
        A, W = self.moves.run(s["A"], s["W"], prob.aA, prob.bA, prob.aW, prob.bW, b, rng,
                              ref_shapes=(q["aA"], q["aW"]))
        s.update(A=A, W=W)
