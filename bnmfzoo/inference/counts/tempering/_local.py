"""Extra exact local moves of a Poisson reference-path rung (glue over the numeric kernels).

A rung of the reference path of :mod:`bnmfzoo.inference.reference_path` is ``pi_b ∝ prod
Gamma(x; a_x, r_x) * L^b`` with per-entry Gamma shapes and rates (``q^(1 - b) p0^b``). After the
power-posterior latent-count sweep, :class:`RungMoves` can run, each leaving ``pi_b``
invariant:

* ``"shear"``: the shear group move of every ordered pair of components with the rung's
  shapes and rates (:func:`bnmfzoo.inference.counts.gibbs._moves.shear_into`; ``A @ W`` is
  unchanged);
* ``"rescale"``: the rescaling group move of every component with the rung's shapes and rates
  (:func:`bnmfzoo.inference.counts.gibbs._moves.rescale_into`; ``A @ W`` is unchanged, so the
  power of the likelihood does not enter);
* ``"hmc"``: one HMC transition on ``log A, log W`` with the likelihood evaluated directly
  (:func:`bnmfzoo.inference.counts.tempering._hmc.hmc_step`), ``n_leap`` leapfrog steps of a
  size drawn uniformly in ``[0.8, 1.2] eps`` (independently of the state). The diagonal inverse
  mass is about the rung's variance of ``log x`` (:meth:`RungMoves.run`). While
  :attr:`RungMoves.adapting`, ``log eps`` moves by ``ADAPT_GAIN (acceptance - target)`` per
  transition (a constant gain, so a step size shrunk by early states far from the rung recovers)
  and an exponential average of it is kept; the caller freezes it (:meth:`RungMoves.freeze`:
  ``eps`` becomes the average) before the draws it keeps, after which the transition is a fixed
  exact kernel.

**In SMC** (:meth:`RungMoves.per_temperature`) the target changes at every tempering step, so
the step size is not adapted by the chain: every transition at temperature ``b_t`` uses one
step size, set before the first of them from the mean acceptance of all particles' HMC
transitions at the previous temperature (:func:`bnmfzoo.inference.counts.tempering._step_rule.
next_log_step`). Given the population's past the move at ``b_t`` is therefore a fixed
``pi_(b_t)``-invariant kernel, which is what the SMC's incremental weights need; adapting the
kernels from the particle system's past keeps the estimates consistent as the number of
particles grows (Beskos, Jasra, Kantas & Thiery 2016), as adapting the temperatures from the
weights already does. Each SMC run restarts from the initial step (:meth:`RungMoves.reset`),
so independent runs stay independent.

**Where.** Measured on breast SBS96 (Poisson, K = 4; ``docs/results/masses_smc_bridge.md``
§3.17), the sweep alone decorrelates ``l' = log p0 + log L - log q`` slowly only near the
posterior: integrated autocorrelation times of 30-160 sweeps at ``b >= 0.73``, 1-20 below (and
swaps decorrelate the low rungs further). So HMC runs at ``b >= HMC_FROM`` only, with
``TOP_HMC`` transitions at ``b = 1``, where it is slowest.
"""

import math

import numpy as np
from scipy.special import polygamma

from bnmfzoo.inference.counts._problem import observed_cells
from bnmfzoo.inference.counts.gibbs._moves import rescale_into, shear_into
from bnmfzoo.inference.counts.tempering._hmc import HMC_ERRORS, hmc_step
from bnmfzoo.inference.counts.tempering._hmc_copula import (
    hmc_step_copula,
    hmc_step_copula_mass,
)
from bnmfzoo.inference.counts.tempering._hmc_dense import hmc_step_dense
from bnmfzoo.inference.counts.tempering._hmc_nb import hmc_step_nb
from bnmfzoo.inference.counts.tempering._hmc_term import flat_theta, hmc_step_term
from bnmfzoo.inference.counts.tempering._step_rule import next_log_step
from bnmfzoo.inference.kernels.streams import seed_state

__all__ = ["RungMoves", "LOCAL_MOVES"]

#: adaptation of ``log eps``: gain per transition and weight of the running average
ADAPT_GAIN, ADAPT_AVERAGE = 0.1, 0.02
#: HMC runs at rungs with ``b >= HMC_FROM`` only, ``TOP_HMC`` transitions at ``b = 1``
HMC_FROM, TOP_HMC = 0.7, 2
#: the moves ``local`` may join with ``+`` (they run in this order)
LOCAL_MOVES = ("sweep", "shear", "rescale", "hmc")


class RungMoves:
    """Exact moves of one rung run after (or instead of) the latent-count sweep.

    Parameters
    ----------
    problem : CountProblem
        A Poisson or negative-binomial problem (its observed cells, offsets and counts).
    local : str
        Moves of :data:`LOCAL_MOVES` joined by ``+`` (``"sweep+rescale+hmc"``); ``"sweep"``
        is the latent-count sweep the caller runs, the others run here in the order of
        :data:`LOCAL_MOVES`.
    n_leap : int
        Leapfrog steps per HMC transition.
    eps : float
        The starting HMC step size.
    target : float
        The acceptance rate the step size is adapted to.
    hmc_from, top_hmc : float or None, int
        HMC runs at rungs ``b >= hmc_from`` only, ``top_hmc`` transitions at ``b = 1`` and one
        elsewhere (where the latent-count sweep's ``l'`` is slow: module docstring). ``None``:
        :data:`HMC_FROM` with the sweep, ``0`` without it (HMC is then the only move that
        changes ``A @ W``, so it runs at every rung).
    dense : bool or None
        HMC by dense matrix products over the whole ``D x N`` grid
        (:func:`bnmfzoo.inference.counts.tempering._hmc_dense.hmc_step_dense`: the same exact
        transition, several times cheaper on a mostly observed matrix) instead of the loop over
        the observed cells. ``None``: dense without the sweep (the large-matrix route), the cell
        loop with it (so the draws of the sweep routes are unchanged).
    copula_mass : bool
        A compiled copula rung's HMC transition takes the copula's correlation (scaled by the
        diagonal inverse mass) as its inverse mass (:meth:`run`); ``False``: the diagonal.
    """

    def __init__(self, problem, local="sweep", *, n_leap=10, eps=0.2, target=0.8,
                 hmc_from=None, top_hmc=TOP_HMC, dense=None, copula_mass=True):
        parts = str(local).split("+")
        if not parts or len(set(parts)) != len(parts) or not set(parts) <= set(LOCAL_MOVES):
            raise ValueError(f"local must be moves of {LOCAL_MOVES} joined by '+', got "
                             f"{local!r}")
        if isinstance(n_leap, bool) or not isinstance(n_leap, (int, np.integer)) or n_leap < 1:
            raise ValueError(f"n_leap must be an integer >= 1, got {n_leap!r}")
        if not (0.0 < float(eps) < math.inf and 0.0 < float(target) < 1.0):
            raise ValueError(f"eps must be positive and target in (0, 1), got {eps!r}, "
                             f"{target!r}")
        self.sweep, self.rescale, self.hmc = "sweep" in parts, "rescale" in parts, \
            "hmc" in parts
        self.shear = "shear" in parts
        if hmc_from is None:
            hmc_from = HMC_FROM if self.sweep else 0.0
        self.hmc_from, self.top_hmc, self._mass = float(hmc_from), int(top_hmc), (None,)
        self.copula_mass = bool(copula_mass)
        self.n_leap, self.log_eps, self.target = int(n_leap), math.log(float(eps)), \
            float(target)
        self.adapting, self.n_adapt, self.n_try, self.acc_sum = True, 0, 0, 0.0
        self.log_eps_bar = self.log_eps
        self.log_eps0, self.population, self._temp = self.log_eps, False, math.nan
        self._t_sum, self._t_n, self.history = 0.0, 0, []
        if self.hmc:
            rows, cols, offs, x = observed_cells(problem)
            self.cells = (np.ascontiguousarray(rows, np.int64), np.ascontiguousarray(
                cols, np.int64), np.ascontiguousarray(offs, float), np.ascontiguousarray(
                x, float))
        self.nb = problem.family == "negative_binomial"  # HMC of the NB rung (_hmc_nb)
        self.dense = (not self.sweep and not self.nb) if dense is None else bool(dense)
        if self.hmc and self.dense and self.nb:
            raise ValueError("the dense HMC move is written for Poisson models; NB rungs run "
                             "the cell loop (local with 'sweep', or dense=False)")
        if self.hmc and self.dense:
            D, N = problem.shape
            X, Of = np.zeros((D, N)), np.zeros((D, N))
            X[rows, cols], Of[rows, cols] = x, offs
            self.grid = (X, Of)

    @property
    def eps(self):
        """The current HMC step size."""
        return math.exp(self.log_eps)

    def freeze(self):
        """Stop adapting and reset the acceptance counters.

        The step size becomes the running average of the adapted log steps.
        """
        if self.adapting and self.n_adapt:
            self.log_eps = self.log_eps_bar
        self.adapting, self.n_try, self.acc_sum = False, 0, 0.0

    def per_temperature(self):
        """Adapt the step size between temperatures from the population (SMC), never within.

        From now on, :meth:`run` sets the step size once at each new ``beta``
        (:func:`~bnmfzoo.inference.counts.tempering._step_rule.next_log_step` of the mean
        acceptance over every transition at the previous ``beta``) and keeps it for every
        transition at that ``beta``; ``beta`` falling below the last one starts a new run
        (:meth:`reset`). :attr:`history` lists ``(beta, step, mean acceptance)`` of every
        temperature with HMC transitions.
        """
        self.freeze()
        self.population = True
        self.reset()

    def reset(self):
        """Back to the initial step size, for a new SMC run (the history is cleared)."""
        self.log_eps, self._temp, self._t_sum, self._t_n = self.log_eps0, math.nan, 0.0, 0
        self.history = []

    def _next_temperature(self, beta):
        if beta < self._temp:  # a new run
            self.reset()
        elif self._t_n:
            acc = self._t_sum / self._t_n
            self.history.append((self._temp, self.eps, acc))
            self.log_eps = next_log_step(self.log_eps, acc, self.target)
        self._temp, self._t_sum, self._t_n = beta, 0.0, 0

    def steps(self):
        """Each temperature's ``(beta, step, mean HMC acceptance)`` so far, the current one too.

        Only temperatures with HMC transitions are listed (:meth:`per_temperature`).
        """
        cur = [(self._temp, self.eps, self._t_sum / self._t_n)] if self._t_n else []
        return self.history + cur

    def start_from(self, other):
        """Start adapting from ``other``'s step size (a neighbouring rung's)."""
        self.log_eps = self.log_eps_bar = other.log_eps

    def acceptance(self):
        """Mean HMC acceptance probability since the last :meth:`freeze` (NaN if none)."""
        return self.acc_sum / self.n_try if self.n_try else math.nan

    def run(self, A, W, aA, rA, aW, rW, beta, rng, ref_shapes=None, alpha=None, term=None,
            term_grad=None, copula=None):
        """The extra moves on ``(A, W)`` at the rung's shapes and rates; returns new ``(A, W)``.

        ``aA, rA`` (D x K) and ``aW, rW`` (K x N): the Gamma part ``q^(1 - b) p0^b`` of the
        rung; ``beta``: the likelihood's power. ``ref_shapes``: the reference's Gamma shapes
        ``(aA (D x K), aW (K x N))``; given, HMC's inverse mass is ``trigamma(a_ref) (1 - b /
        2)`` (the reference's variance of ``log x`` at ``b = 0``, half of it at ``b = 1``, as
        the reference is fitted with twice the posterior's variance), else ``trigamma(a)`` of
        the rung's own shapes. ``alpha``: the dispersion of a negative-binomial rung (HMC then
        targets the Gamma-mixed power path's rung at that dispersion,
        :func:`bnmfzoo.inference.counts.tempering._hmc_nb.hmc_step_nb`). ``term``: a further
        log-density term ``theta -> (value, gradient)`` of the rung, weighted ``1 - b``
        (the Gaussian copula of a copula reference; HMC is then
        :func:`bnmfzoo.inference.counts.tempering._hmc_term.hmc_step_term`, and the shear and
        rescaling moves, exact only for a product of Gammas, are refused); ``term_grad``: the
        gradient field its kicks use in place of ``term``'s (``hmc_step_term``). ``copula``:
        a :class:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula` as that term (its
        ``copula_theta`` and surrogate kicks); on dense Poisson counts its trajectory runs
        compiled (:func:`~bnmfzoo.inference.counts.tempering._hmc_copula.hmc_step_copula`,
        the same transition), starting from the exact ``theta`` its last move ended at
        (:meth:`~bnmfzoo.inference.kernels.gamma_copula.GammaCopula.log_point`), whose copula
        term the copula's memo holds. With :attr:`copula_mass` (the default) that compiled
        transition takes the copula's correlation, scaled by the diagonal inverse mass, as
        its inverse mass (:func:`~bnmfzoo.inference.counts.tempering._hmc_copula.
        hmc_step_copula_mass`): on ESCC SBS96 at K = 4, with a copula fitted to 2,200
        latent-count sweep draws, the integrated autocorrelation time at ``b = 1`` fell from
        14.9 to 2.5 transitions for ``l'`` and from 16.6 to 1.0 for the log of a column sum
        of ``A`` (a scale ridge), at 1.26 times the CPU per transition (section 32 of
        ``docs/results/masses_copula_reference_2.md``).
        """
        if copula is not None:
            term, term_grad = copula.copula_theta, copula.surrogate_grad
        if term is not None and (self.shear or self.rescale):
            raise ValueError("a rung with an extra term runs HMC only (no shear or rescaling "
                             "move)")
        if self.population and beta != self._temp:
            self._next_temperature(float(beta))
        if not (self.rescale or self.hmc or self.shear):
            return A, W
        A = np.array(A, dtype=float, order="C", copy=True)
        Wt = np.array(np.asarray(W, float).T, order="C", copy=True)
        if not (np.all(np.isfinite(A)) and np.all(np.isfinite(Wt)) and np.all(A > 0)
                and np.all(Wt > 0)):
            raise FloatingPointError("the factors are not finite and positive")
        aWt, rWt = np.ascontiguousarray(aW.T, float), np.ascontiguousarray(rW.T, float)
        aA, rA = np.ascontiguousarray(aA, float), np.ascontiguousarray(rA, float)
        if self.shear and A.shape[1] > 1:
            shear_into(A, Wt, aA, rA, aWt, rWt, seed_state(rng))
        if self.rescale:
            code = rescale_into(A, Wt, rA, rWt, aA.sum(0) - aWt.sum(0), seed_state(rng))
            if code:
                raise FloatingPointError("the rescaling move met a zero or non-finite scale sum")
        n_hmc = 0 if not self.hmc or beta < self.hmc_from else (
            self.top_hmc if beta == 1.0 else 1)
        if n_hmc:
            if self._mass[0] != beta:  # the inverse mass of this rung
                if ref_shapes is None:
                    self._mass = (beta, polygamma(1, aA), polygamma(1, aWt))
                else:
                    f = 1.0 - 0.5 * beta
                    self._mass = (beta, f * polygamma(1, np.ascontiguousarray(ref_shapes[0])),
                                  f * polygamma(1, np.ascontiguousarray(ref_shapes[1].T)))
            compiled = copula is not None and self.dense and not self.nb
            if compiled:  # from the exact log the last move ended at (the copula's memo)
                theta = copula.log_point(np.concatenate([A.ravel(), Wt.T.ravel()]))
                tA = theta[:A.size].reshape(A.shape)
                tWt = np.ascontiguousarray(theta[A.size:].reshape(Wt.shape[::-1]).T)
            else:
                tA, tWt = np.log(A), np.log(Wt)
            if compiled and self.copula_mass:  # the copula's correlation as the mass
                scale = np.sqrt(flat_theta(self._mass[1], self._mass[2]))
        for _ in range(n_hmc):
            if compiled and self.copula_mass:
                eps = self.eps * rng.uniform(0.8, 1.2)
                code, log_acc = hmc_step_copula_mass(
                    tA, tWt, self.grid, (aA, rA, aWt, rWt), float(beta), scale, eps,
                    self.n_leap, math.log(rng.uniform()), copula, 1.0 - float(beta), rng)
            else:
                code, log_acc = self._diagonal_step(tA, tWt, (aA, rA, aWt, rWt), beta, rng,
                                                    compiled, copula, term, term_grad, alpha)
            if code == 2:
                raise FloatingPointError(f"HMC: {HMC_ERRORS[2]}")
            acc = math.exp(log_acc)
            self.n_try += 1
            self.acc_sum += acc
            self._t_n += 1
            self._t_sum += acc
            if self.adapting:
                self.n_adapt += 1
                self.log_eps += ADAPT_GAIN * (acc - self.target)
                w = max(1.0 / self.n_adapt, ADAPT_AVERAGE)
                self.log_eps_bar = (1.0 - w) * self.log_eps_bar + w * self.log_eps
        if n_hmc:
            if compiled:
                x = copula.exp_point(flat_theta(tA, tWt))
                A, Wt = x[:A.size].reshape(A.shape), x[A.size:].reshape(Wt.shape[::-1]).T
            else:
                A, Wt = np.exp(tA), np.exp(tWt)
            if not (np.all(A > 0) and np.all(Wt > 0)):
                raise FloatingPointError("HMC moved a factor entry to zero")
        return A, np.ascontiguousarray(Wt.T)

    def _diagonal_step(self, tA, tWt, shapes, beta, rng, compiled, copula, term, term_grad,
                       alpha):
        """One HMC transition with the diagonal inverse mass, in place; ``(code, log_acc)``."""
        aA, rA, aWt, rWt = shapes
        pA, pWt = rng.standard_normal(tA.shape), rng.standard_normal(tWt.shape)
        eps = self.eps * rng.uniform(0.8, 1.2)
        if compiled:
            return hmc_step_copula(
                tA, tWt, pA, pWt, self.grid, shapes, float(beta), self._mass[1],
                self._mass[2], eps, self.n_leap, math.log(rng.uniform()), copula,
                1.0 - float(beta))
        if term is not None:
            return hmc_step_term(
                tA, tWt, pA, pWt, self.grid if self.dense else self.cells, self.dense,
                shapes, float(beta), self._mass[1], self._mass[2], eps, self.n_leap,
                math.log(rng.uniform()), term, 1.0 - float(beta), term_grad,
                float(alpha) if self.nb else None)
        if self.nb:
            return hmc_step_nb(tA, tWt, pA, pWt, *self.cells, aA, rA, aWt, rWt, float(beta),
                               float(alpha), self._mass[1], self._mass[2], eps, self.n_leap,
                               math.log(rng.uniform()))
        step, data = (hmc_step_dense, self.grid) if self.dense else (hmc_step, self.cells)
        return step(tA, tWt, pA, pWt, *data, aA, rA, aWt, rWt, float(beta), self._mass[1],
                    self._mass[2], eps, self.n_leap, math.log(rng.uniform()))
