"""Gibbs step method for exponential-Gaussian BNMF (Schmidt et al. 2009; Brouwer et al. 2017).

The PyMC glue around :func:`bnmfzoo.inference.gaussian.gibbs._core.nmf_sweep` (and, for other
priors,
:mod:`~bnmfzoo.inference.gaussian.priors._gibbs_prior`): it recognizes the model from its graph
(:func:`bnmfzoo.models.recognize`), converts PyMC's value space (``A_log__`` ...) to the
factor values and back with the model's own transforms
(:class:`~bnmfzoo.inference._step_glue.TransformedStep`), and keeps the sampler's exact internal
state (and the residual on the observed entries) between steps in its sampling state
(:class:`GibbsState`), so a chain run through ``pm.sample`` is the same sequence of draws as the
numeric kernel run with the same generator, and a restored ``step.sampling_state`` continues it
exactly.
"""

from dataclasses import field

import numpy as np
import pymc as pm
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from bnmfzoo.inference._assignment import announce, choose, likelihood_key
from bnmfzoo.inference._step_glue import TransformedStep, model_of_var
from bnmfzoo.inference.gaussian.gibbs._core import (
    nmf_state,
    nmf_sweep,
    observed_entries,
)
from bnmfzoo.inference.gaussian.gibbs._mixing import OVERRELAX, check_overrelax
from bnmfzoo.inference.gaussian.priors._gibbs_prior import GeneralNMFMixin
from bnmfzoo.models._recognize import try_recognize
from bnmfzoo.models._spec import spec_from_factorization
from bnmfzoo.models._value_checks import OutOfRange

__all__ = ["GibbsNMF", "GibbsState"]

_KIND_TEXT = {"nmf": "X ~ A W", "nmtf": "X ~ F S G^T", "bernoulli": "X ~ Bernoulli(A W)",
              "silf": "a SILF likelihood on A W", "uniform": "uniform noise on A W"}


@dataclass_state
class GibbsState(StepMethodState):
    """Sampling state of :class:`GibbsNMF` and :class:`GibbsNMTF` (``step.sampling_state``).

    Attributes
    ----------
    var_names, rng
        As in every PyMC step method: the updated value variables and the generator's state.
    chain : tuple or None
        ``(numeric state, written)``: the sampler's exact numeric state
        (:class:`~bnmfzoo.inference.gaussian.gibbs._core.NMFState` or ``NMTFState``, with the
        residual it keeps) and the value-space arrays it last wrote into the point; None
        before the first step of a chain. Restoring it continues the chain bit for bit
        (reading the factors back from the point would round them through ``exp(log(x))``).
    """

    chain: tuple | None = field(default=None)


class _GibbsFactorization(TransformedStep):
    """Shared PyMC glue of :class:`GibbsNMF` and :class:`GibbsNMTF` (see their docstrings)."""

    family = ""
    kind = ""
    factor_roles = ()
    stats_dtypes_shapes = {
        "train_mse": (np.float64, []),
        "tau": (np.float64, []),
    }
    _state_class = GibbsState
    #: every update is a draw from an exact conditional: no tuning, usable as a rejuvenation
    #: kernel (:func:`bnmfzoo.inference.particles.rejuvenate.exact_step_for`)
    exact_conditionals = True

    def __init__(
        self,
        vars=None,
        *,
        model=None,
        rng=None,
        blocked=True,
        initial_point=None,
        compile_kwargs=None,
    ):
        model = pm.modelcontext(model)
        name = type(self).__name__
        found, reason = try_recognize(model)
        if found is None:
            raise TypeError(f"{name} cannot sample this model: {reason}")
        spec, reason = spec_from_factorization(found)
        self.general = spec is None or spec.family != self.family
        if self.general:
            if not self._accepts(found):
                if found.kind != self.kind:
                    reason = (f"{name} samples {_KIND_TEXT[self.kind]} models; this model is "
                              f"{_KIND_TEXT[found.kind]}")
                else:
                    reason = self._refusal(found) or reason
                raise TypeError(f"{name} cannot sample this model: {reason}")
            self._init_general(model, found, vars)
        else:  # the constructors' exact path (same draws as ever)
            self._init_variables(model, spec.var_names, vars)
            self.spec = spec
            self.hyper = spec.hyper
            # the entries in long format (row-major, as np.nonzero of a dense mask would order
            # them): no dense array, and the same draws whatever form the data came in
            self.obs = observed_entries(found.entries)
        self.recognized = found
        self.rng = get_random_generator(rng)
        self.chain = None

    def _accepts(self, found):
        """True when the general (per-entry prior) sweep handles ``found``."""
        return False

    def _refusal(self, found):
        """Why the general sweep does not handle ``found`` (None: no better reason)."""
        return None

    def _init_general(self, model, found, vars):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def _roles_of(cls, found):
        """Variable names this step can update in the recognized model (None: none)."""
        spec, _ = spec_from_factorization(found)
        if spec is not None and spec.family == cls.family:
            return {v for v in spec.var_names.values() if v}
        return None

    @classmethod
    def competence(cls, var, has_grad=True):
        """IDEAL for the variables of a recognized model this step updates, else INCOMPATIBLE.

        Unless our step was measured slower than NUTS on this kind of model
        (:mod:`bnmfzoo.inference._assignment`): then COMPATIBLE, so NUTS takes the variables;
        either way one log line says which sampler and why. ``pm.sample()`` asks every class
        in ``pymc.step_methods.STEP_METHODS`` for each free variable and takes the most
        competent; NUTS answers PREFERRED for continuous
        variables, so IDEAL (as pymc-bart's PGBART does) is what makes the choice ours
        regardless of the list's order. The model is the one in context, or else the one
        ``pm.sample(model=...)`` is assigning steps for.
        """
        from pymc.step_methods.compound import Competence

        try:
            model = model_of_var(var)
            if model is None or var not in model.free_RVs:
                return Competence.INCOMPATIBLE
            found, _ = try_recognize(model)
            names = None if found is None else cls._roles_of(found)
        except OutOfRange:  # ours, but data or constants out of range: say so, don't decline
            raise
        except Exception:  # noqa: BLE001 - no model in context, or an unreadable graph
            return Competence.INCOMPATIBLE
        if names and var.name in names:
            # our step or NUTS, from the measured cost model, said in one log line
            if cls.kind == "nmf":
                choice = choose("gaussian", likelihood_key(found))
            else:
                choice = choose(f"gaussian_{cls.kind}", "normal")
            announce(model, var, names, cls.__name__, choice)
            return Competence.IDEAL if choice.ours else Competence.COMPATIBLE
        return Competence.INCOMPATIBLE

    def setup_chain(self, rng, tune, draws):
        """Take this chain's generator and forget the previous chain's state."""
        super().setup_chain(rng, tune, draws)
        self.chain = None

    # -- subclasses: numeric state <-> role values ------------------------------------------
    def _new_state(self, values):  # pragma: no cover - abstract
        raise NotImplementedError

    def _sweep(self, state):  # pragma: no cover - abstract
        raise NotImplementedError

    def _values(self, state):  # pragma: no cover - abstract
        raise NotImplementedError

    def _set_value(self, state, role, value):  # pragma: no cover - abstract
        raise NotImplementedError

    # -- PyMC interface ---------------------------------------------------------------------
    def _state_from_point(self, point):
        """Reuse the chain's exact state when the point still holds what we wrote last."""
        if self.chain is not None:
            state, written = self.chain
            fresh = [
                role for role in self.value_maps
                if not np.array_equal(point[self._value_name(role)], written[role])
            ]
            if not any(role in self.factor_roles for role in fresh):
                for role in fresh:  # e.g. tau sampled by another step method
                    self._set_value(state, role, self._read(point, role))
                return state
        values = {role: self._read(point, role) for role in self.value_maps}
        return self._new_state(values)

    def step(self, point):
        """One full sweep over the assigned blocks; returns ``(point, [stats])``."""
        if self.general:
            return self._general_step(point)
        state = self._state_from_point(point)
        self._sweep(state)
        values = self._values(state)
        new_point = dict(point)
        written = {}
        for role in self.value_maps:
            if role in self.update_roles:
                written[role] = self._write(new_point, role, values[role])
            else:
                written[role] = new_point[self._value_name(role)]
        self.chain = (state, written)
        sigma = self.hyper.sigma
        tau = 1.0 / sigma**2 if sigma is not None else state.tau
        stats = {"train_mse": state.train_mse(), "tau": float(tau)}
        return new_point, [stats]


class GibbsNMF(GeneralNMFMixin, _GibbsFactorization):
    """Blocked Gibbs sampler for Gaussian NMF models, ours or a user's own ``pm.Model``.

    Works on any model :func:`bnmfzoo.models.recognize` reads as ``X ~ Normal(A @ W, ...)``
    on the observed entries. For the constructors' priors (constant exponential rates, one ARD
    rate per factor; :func:`bnmfzoo.models.exponential_gaussian` or the same written by hand)
    one step is Brouwer et al.'s sweep (2017): ARD rates ``lambda_[k]`` (Gamma), then the
    columns ``A[:, k]`` and rows ``W[k, :]`` for ``k = 1..R`` (each a block of independent
    truncated normals), then the noise precision ``tau`` (Gamma; skipped with a fixed
    ``sigma``). By default two exact moves speed the mixing of the factors within their mode
    (the smallest effective sample size of the aligned factor entries per CPU second is about
    10x that of the plain sweep on GDSC): each factor entry is updated by an overrelaxed move
    that leaves its truncated-normal conditional invariant (Adler 1981; Neal 1998), and each
    sweep ends with an exact rescaling of every factor,
    ``A[:, k] c``, ``W[k, :] / c`` with ``c`` from its generalized inverse Gaussian conditional
    (Liu & Sabatti 2000); ``overrelax=0, rescale=False`` gives Brouwer et al.'s plain sweep.
    For other recognized priors - ``HalfNormal``, ``TruncatedNormal(lower=0)``,
    per-entry exponential rates, Gamma rates per row, column, factor or scalar - the same sweep
    runs with per-entry prior terms
    (:func:`bnmfzoo.inference.gaussian.priors._prior_core.prior_nmf_sweep`), and parameters that
    depend
    on variables other steps sample (a hyperprior, ``sigma ~ HalfNormal``) are read from the
    point at every step. ``Gamma(a, b)`` factor priors with ``a >= 1`` (each entry drawn exactly
    from its log-concave conditional), one noise precision per row or per column
    (``tau[None, :]``, conjugate Gamma draws over the observed entries) and Student-t noise
    (``pm.StudentT(nu, A @ W, sigma)``, through latent per-entry precisions drawn afresh at
    every step; a free ``nu`` is left to another step method) run through the weighted sweep
    of :mod:`bnmfzoo.inference.gaussian.priors._weighted_core`. Each half-sweep costs
    ``O(|observed| x R)`` through the residual, or less
    through Gram matrices shared by rows with the same missing-data pattern (fully observed and
    block-missing data; chosen automatically, same draws either way). Draws are written in
    PyMC's value space (``A_log__`` ...). The generator comes from
    ``pm.sample(random_seed=...)``, so runs are reproducible with any number of chains and
    cores.

    ``import bnmfzoo`` registers this class in PyMC's ``STEP_METHODS``: ``pm.sample()`` without
    ``step=`` assigns it the factors, ``tau`` and the Gamma rates of a recognized model
    (:meth:`competence`), and PyMC's defaults the rest, as a compound step.

    Parameters
    ----------
    vars : list, optional
        Variables to update (default: the factors, ``tau`` and the Gamma rates in the model);
        the others may be given to another step method (e.g. ``pm.NUTS([tau])``).
    model : pymc.Model, optional
        A recognized model; any other raises ``TypeError`` saying which likelihood, prior or
        dependency made the difference.
    rng : numpy.random.Generator or int, optional
        Only used outside ``pm.sample`` (which hands each chain its own generator).
    overrelax : float
        ``alpha`` in (-1, 0] of the overrelaxed updates (default -0.9; 0: fresh Gibbs draws).
        Used with the constructors' priors (exponential rates, ARD).
    rescale : bool
        The exact rescaling move after each sweep (default True; constructors' priors).

    Notes
    -----
    Sample stats: ``train_mse`` (mean squared residual on the observed entries for the current
    draw) and ``tau``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.models import exponential_gaussian
    >>> X = np.random.default_rng(0).exponential(size=(6, 5))
    >>> with exponential_gaussian(X, 2):
    ...     idata = pm.sample(draws=50, tune=50, chains=1, step=GibbsNMF(),
    ...                       random_seed=1, progressbar=False)  # doctest: +SKIP
    """

    name = "gibbs_nmf"
    family = "exponential_gaussian"
    kind = "nmf"
    factor_roles = ("A", "W")

    def __init__(self, vars=None, *, model=None, rng=None, overrelax=OVERRELAX, rescale=True,
                 **kwargs):
        self.overrelax = check_overrelax(overrelax)
        self.rescale = bool(rescale)
        super().__init__(vars, model=model, rng=rng, **kwargs)

    @classmethod
    def _roles_of(cls, found):
        if found.kind != "nmf":
            return None
        return set(found.var_names.values())

    def _new_state(self, values):
        return nmf_state(values["A"], values["W"], values.get("tau", 1.0),
                         values.get("lambda_"), self.obs)

    def _sweep(self, state):
        nmf_sweep(state, self.obs, self.hyper, self.rng, update=self.update_roles,
                  overrelax=self.overrelax, rescale=self.rescale)

    def _values(self, state):
        return {"A": state.A, "W": state.W, "tau": state.tau, "lambda_": state.lambda_}

    def _set_value(self, state, role, value):
        if role == "tau":
            state.tau = float(value)
        else:
            state.lambda_ = np.array(value, dtype=float)

