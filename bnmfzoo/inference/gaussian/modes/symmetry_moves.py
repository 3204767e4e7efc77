"""Symmetry moves as a PyMC step method, to compose with :class:`~bnmfzoo.inference.GibbsNMF`.

PyMC glue around :func:`bnmfzoo.inference.gaussian.modes._symmetry.apply_moves`; the moves
themselves
(exact rescaling from its generalized-inverse-Gaussian conditional, Q-Transform
Metropolis-Hastings) are described there. :class:`~bnmfzoo.inference.ReplicaExchangeGibbs`
applies the same moves inside every replica (its ``symmetry=`` option).
"""

import math
from dataclasses import field

import numpy as np
import pymc as pm
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from bnmfzoo.inference._step_glue import TransformedStep
from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, observed_entries
from bnmfzoo.inference.gaussian.modes._symmetry import MOVES, apply_moves
from bnmfzoo.models._spec import get_spec

__all__ = ["SymmetryMoves", "SymmetryState"]


@dataclass_state
class SymmetryState(StepMethodState):
    """Sampling state of :class:`SymmetryMoves`: the Q-Transform step size and step count."""

    q_scale: float = field(default=0.05)
    n_steps: int = 0
    tune: bool = False


class SymmetryMoves(TransformedStep):
    """Moves along ``(A Q, Q^-1 W)`` for exponential-Gaussian BNMF, leaving ``A @ W`` fixed.

    ``"rescale"`` draws, for every factor, the scale ``c`` of ``A[:, k] c``, ``W[k, :] / c``
    from its exact conditional (a generalized inverse Gaussian, with the map's Jacobian
    ``c^(D - N)`` and the Haar measure ``dc / c``); ``"qtransform"`` proposes
    ``Q = expm(eps Z)`` and accepts by Metropolis-Hastings with the prior ratio and
    ``|det Q|^(D - N)``. Use it beside a sampler of the other blocks, e.g.
    ``step=[GibbsNMF(), SymmetryMoves()]``.

    Parameters
    ----------
    moves : tuple of str
        A non-empty subset of ``("rescale", "qtransform")``, applied in that order.
    q_scale : float
        Initial Q-Transform step size, tuned towards acceptance 0.3 while PyMC tunes.
    model : pymc.Model, optional
        A model built by :func:`bnmfzoo.models.exponential_gaussian`.
    rng : numpy.random.Generator or int, optional
        Only used outside ``pm.sample``.

    Notes
    -----
    Sample stat ``q_accept``: the Q-Transform acceptance probability (NaN when off).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.inference import GibbsNMF
    >>> from bnmfzoo.models import exponential_gaussian
    >>> X = np.random.default_rng(0).exponential(size=(6, 5))
    >>> with exponential_gaussian(X, 2):
    ...     idata = pm.sample(draws=50, tune=50, chains=1, random_seed=1, progressbar=False,
    ...                       step=[GibbsNMF(), SymmetryMoves()])  # doctest: +SKIP
    """

    name = "symmetry_moves"
    stats_dtypes_shapes = {"q_accept": (np.float64, [])}
    _state_class = SymmetryState

    def __init__(self, vars=None, *, moves=("rescale",), q_scale=0.05, model=None, rng=None,
                 blocked=True, initial_point=None, compile_kwargs=None):
        model = pm.modelcontext(model)
        spec = get_spec(model, families="exponential_gaussian", method=type(self).__name__)
        names = {r: n for r, n in spec.var_names.items() if r in ("A", "W", "lambda_")}
        if vars is None:
            vars = [model.rvs_to_values[model[names["A"]]], model.rvs_to_values[model[names["W"]]]]
        self._init_variables(model, names, vars)
        if self.update_roles != {"A", "W"}:
            raise ValueError(f"{type(self).__name__} updates exactly A and W, got "
                             f"{sorted(self.update_roles)}")
        moves = tuple(moves)
        if not moves or set(moves) - set(MOVES):
            raise ValueError(f"moves must be a non-empty subset of {MOVES}, got {moves!r}")
        if not (isinstance(q_scale, (int, float)) and 0 < q_scale < math.inf):
            raise ValueError(f"q_scale must be a positive number, got {q_scale!r}")
        self.moves = moves
        self.hyper = spec.hyper
        self.obs = observed_entries(spec.X, spec.mask)
        self.initial_q_scale = float(q_scale)
        self.q_scale = float(q_scale)
        self.n_steps = 0
        self.rng = get_random_generator(rng)

    def setup_chain(self, rng, tune, draws):
        """Take this chain's generator; reset the step size."""
        super().setup_chain(rng, tune, draws)
        self.q_scale = self.initial_q_scale
        self.n_steps = 0
        self.tune = int(tune) > 0  # PyMC's multiprocess sampler does not set it

    def step(self, point):
        """Apply the moves to the point's ``A`` and ``W``."""
        values = {role: self._read(point, role) for role in self.value_maps}
        st = nmf_state(values["A"], values["W"], 1.0, values.get("lambda_"), self.obs)
        prob = apply_moves(st, self.hyper, self.rng, self.moves, eps=self.q_scale)
        self.n_steps += 1
        if getattr(self, "tune", False) and not math.isnan(prob):
            self.q_scale *= math.exp((prob - 0.3) / math.sqrt(self.n_steps))
        new_point = dict(point)
        self._write(new_point, "A", st.A)
        self._write(new_point, "W", st.W)
        return new_point, [{"q_accept": float(prob)}]
