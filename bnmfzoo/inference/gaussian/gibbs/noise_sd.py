"""Gibbs step for the noise sd ``sigma ~ HalfNormal(s)`` or ``HalfCauchy(beta)`` of a Gaussian NMF.

``sigma`` of ``X_ij ~ Normal((A W)_ij, sigma)`` with a HalfNormal or HalfCauchy prior has no
conjugate prior, so :class:`~bnmfzoo.inference.GibbsNMF` leaves it to another step method
(``pm.sample()`` used to give it NUTS). Its conditional given the factors is still one-
dimensional and depends on them only through the residual sum of squares over the ``n``
observed entries, ``SSR``:

* ``HalfNormal(s)``: ``tau = sigma^-2`` is generalized inverse Gaussian,
  ``p(tau | A, W) ∝ tau^(p - 1) exp(-(SSR tau + 1 / (s^2 tau)) / 2)`` with ``p = (n - 1)/2``,
  drawn exactly (``tau = sqrt(b / a) * gig(p, sqrt(a b))``, ``a = SSR``, ``b = 1/s^2``; Hörmann &
  Leydold 2014, :mod:`~bnmfzoo.inference.kernels.gig`);
* ``HalfCauchy(beta)``: the scale-mixture representation ``sigma^2 | c ~ InvGamma(1/2, 1/c)``,
  ``c ~ InvGamma(1/2, 1/beta^2)`` (Makalic & Schmidt 2016, "A simple sampler for the horseshoe
  estimator", IEEE Signal Processing Letters 23(1)) gives a two-stage kernel: ``c`` from its
  conditional given ``sigma``, then ``sigma^2 | c, A, W ~ InvGamma((n + 1)/2, SSR/2 + 1/c)``. The
  auxiliary ``c`` is drawn afresh at every step and not kept, so the step leaves
  ``p(sigma | A, W, X)`` invariant (a data-augmentation kernel, not an independent draw).

The step is registered next to :class:`~bnmfzoo.inference.GibbsNMF`, so ``pm.sample()`` on such
a model prints ``GibbsNMF: [A, W, lam]`` and ``GibbsNoiseSD: [sigma]`` -- still a compound step.

Why (``nice -n 10 python -m benchmarks.calibration.sigma_mixing --datasets 10 --draws 4000``,
the 4 x 3, rank-2 model of the compound-step SBC with ``sigma ~ HalfNormal(1)``): the
autocorrelation time ``n / ESS`` of sigma under GibbsNMF + PyMC's NUTS was median 10.3 (max
38.8) steps with 100 tuning steps, 8.9 (38.3) with 1000; NUTS alone on sigma's conditional had
2.6 (one NUTS step is not an independent draw); with this exact draw it is 6.0 (26.2), at
about half the time per step (1.1 against 2.0-2.2 ms). The rest is the Gibbs coupling of sigma
with A W, which no sigma kernel removes (``tau ~ Gamma(1, 1)`` in its place: 3.1).
"""

import numpy as np
import pymc as pm
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from bnmfzoo.inference._step_glue import TransformedStep, model_of_var
from bnmfzoo.inference.gaussian.gibbs._core import observed_entries
from bnmfzoo.inference.kernels.gig import gig_draws
from bnmfzoo.models._graph import depends_on, evaluate, rv_params
from bnmfzoo.models._recognize import _users, try_recognize

__all__ = ["GibbsNoiseSD"]

_FAMILIES = {"HalfNormalRV": "halfnormal", "HalfCauchyRV": "halfcauchy"}


def noise_sd_prior(model):
    """Read the model's noise sd prior: ``(family, scale, sd_name, factorization)``.

    That is when the noise sd is a scalar ``HalfNormal``/``HalfCauchy`` variable with a
    constant scale used only as the likelihood's sd; else ``(None, reason, None, None)``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo import likelihoods
    >>> with pm.Model() as model:
    ...     A = pm.Exponential("A", 1.0, shape=(3, 2))
    ...     W = pm.Exponential("W", 1.0, shape=(2, 2))
    ...     obs = likelihoods.gaussian("X", A, W, observed=np.ones((3, 2)),
    ...                                sigma=pm.HalfCauchy("s", 2.0))
    >>> noise_sd_prior(model)[:3]
    ('halfcauchy', 2.0, 's')
    """
    found, reason = try_recognize(model)
    if found is None:
        return None, reason, None, None
    noise = found.noise
    if found.kind != "nmf" or noise.kind != "other" or len(noise.depends_on) != 1:
        return None, "the likelihood's noise is not one free sd variable", None, None
    if noise.student:  # the sd's conditional below is the Gaussian likelihood's
        return None, "the likelihood is Student-t, not Normal", None, None
    rv = model[noise.depends_on[0]]
    family = _FAMILIES.get(type(rv.owner.op).__name__)
    if family is None or rv.ndim != 0:
        return None, f"{rv.name!r} is not a scalar HalfNormal or HalfCauchy", None, None
    params = rv_params(rv)  # HalfNormal: (loc, sigma); HalfCauchy: (beta,)
    scale, locs = params[-1], params[:-1]
    free = list(model.free_RVs)
    if (any(p in free or depends_on(p, free) for p in params)
            or any(float(evaluate(loc)) != 0.0 for loc in locs)):
        return None, f"the prior of {rv.name!r} has a random or shifted scale", None, None
    users = _users(model, rv)
    if [u.name for u in users] != [found.likelihood]:
        return None, f"{rv.name!r} is used outside the likelihood's sd", None, None
    if found.imputed is not None:
        return None, "the likelihood imputes missing entries (they depend on sigma)", None, None
    for v in (0.7, 2.3):  # the likelihood's sd is sigma itself
        if not np.isclose(float(np.ravel(evaluate(noise.graph, {rv: np.asarray(v)}))[0]), v,
                          rtol=1e-12):
            return None, f"the likelihood's sd is a function of {rv.name!r}", None, None
    return family, float(evaluate(scale)), rv.name, found


@dataclass_state
class NoiseSDState(StepMethodState):
    """Sampling state of :class:`GibbsNoiseSD` (``var_names`` and ``rng``: it keeps no other)."""


class GibbsNoiseSD(TransformedStep):
    """Draws the noise sd of a Gaussian NMF from its conditional given the factors.

    For ``sigma ~ HalfNormal(s)`` an exact draw (generalized inverse Gaussian in ``sigma^-2``);
    for ``sigma ~ HalfCauchy(beta)`` a two-stage data-augmentation kernel (see the module
    docstring). Each step costs ``O(|observed| x R)`` for the residual. Competent (IDEAL) for such
    a ``sigma`` of a model :func:`bnmfzoo.models.recognize` reads as ``X ~ Normal(A W, sigma)``
    when ``sigma`` is used nowhere else; ``import bnmfzoo`` registers it, so ``pm.sample()``
    assigns it ``sigma`` and :class:`~bnmfzoo.inference.GibbsNMF` the factors and rates.

    Parameters
    ----------
    vars : list, optional
        The sd variable (the default).
    model : pymc.Model, optional
    rng : numpy.random.Generator or int, optional
        Only used outside ``pm.sample`` (which hands each chain its own generator).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo import likelihoods
    >>> X = np.random.default_rng(0).exponential(size=(5, 4))
    >>> with pm.Model() as model:
    ...     A = pm.HalfNormal("A", 1.0, shape=(5, 2))
    ...     W = pm.Exponential("W", 1.0, shape=(2, 4))
    ...     obs = likelihoods.gaussian("X", A, W, observed=X, sigma=pm.HalfNormal("sigma", 1.0))
    >>> step = GibbsNoiseSD(model=model, rng=0)
    >>> point, stats = step.step(model.initial_point())
    >>> bool(np.isclose(np.exp(point["sigma_log__"]), stats[0]["sigma"]))
    True
    """

    name = "gibbs_noise_sd"
    stats_dtypes_shapes = {"sigma": (np.float64, [])}
    _state_class = NoiseSDState
    exact_conditionals = False  # the HalfCauchy kernel is not an independent conditional draw

    def __init__(self, vars=None, *, model=None, rng=None, blocked=True, initial_point=None,
                 compile_kwargs=None):
        model = pm.modelcontext(model)
        family, scale, sd_name, found = noise_sd_prior(model)
        if family is None:
            raise TypeError(f"GibbsNoiseSD cannot sample this model: {scale}")
        self.family, self.scale, self.found = family, scale, found
        roles = {"sd": sd_name, **{r: p.name for r, p in found.factors.items()}}
        self._init_variables(model, roles, [model[sd_name]] if vars is None else vars)
        if self.update_roles != {"sd"}:
            raise ValueError(f"GibbsNoiseSD updates only {sd_name!r}")
        self.transposed = {r: p.transposed for r, p in found.factors.items()}
        self.obs = observed_entries(found.entries)
        self.rng = get_random_generator(rng)

    @classmethod
    def competence(cls, var, has_grad=True):
        """IDEAL for the sd of a recognized NMF as described above, else INCOMPATIBLE."""
        from pymc.step_methods.compound import Competence

        try:
            model = model_of_var(var)
            if model is None or var not in model.free_RVs:
                return Competence.INCOMPATIBLE
            family, _, sd_name, _ = noise_sd_prior(model)
        except Exception:  # noqa: BLE001 - no model in context, or an unreadable graph
            return Competence.INCOMPATIBLE
        if family is not None and var.name == sd_name:
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def ssr(self, point):
        """Residual sum of squares of the observed entries at the point's A, W."""
        A, W = (self._read(point, r) for r in ("A", "W"))
        A = A.T if self.transposed["A"] else A
        W = W.T if self.transposed["W"] else W
        o = self.obs
        mean = np.einsum("ik,ki->i", A[o.rows], W[:, o.cols])
        r = o.values - mean
        return float(r @ r)

    def draw(self, ssr, sigma):
        """A new sd given ``ssr`` (and, for HalfCauchy, the current ``sigma``)."""
        n = self.obs.values.size
        if not (np.isfinite(ssr) and ssr > 0):
            raise FloatingPointError(f"GibbsNoiseSD: residual sum of squares {ssr!r} (need a "
                                     "finite positive value)")
        if self.family == "halfnormal":
            a, b = ssr, 1.0 / self.scale**2
            tau = np.sqrt(b / a) * gig_draws((n - 1) / 2, np.array([np.sqrt(a * b)]),
                                             self.rng)[0]
            return 1.0 / np.sqrt(tau)
        # HalfCauchy: c | sigma ~ InvGamma(1, 1/beta^2 + 1/sigma^2), then sigma^2 | c
        c = (1.0 / self.scale**2 + 1.0 / sigma**2) / self.rng.gamma(1.0)
        var = (ssr / 2 + 1.0 / c) / self.rng.gamma((n + 1) / 2)
        return np.sqrt(var)

    def step(self, point):
        """One draw of the sd; returns ``(point, [stats])``."""
        sigma = self.draw(self.ssr(point), float(self._read(point, "sd")))
        new_point = dict(point)
        self._write(new_point, "sd", sigma)
        return new_point, [{"sigma": float(sigma)}]
