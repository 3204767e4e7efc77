"""Annealed mode jumps as a PyMC step method, to compose with :class:`~bnmfzoo.inference.GibbsNMF`.

PyMC glue around :func:`bnmfzoo.inference.gaussian.modes._mode_jump.mode_jump`; the move itself
(annealed importance sampling within Metropolis-Hastings between mean-field references of the
modes, exact for any settings) is described there. :class:`~bnmfzoo.inference.ReplicaExchangeGibbs`
applies the same jumps to its cold replica (its ``mode_jumps=`` option).
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
from bnmfzoo.inference.gaussian.modes._mode_jump import (
    anneal_schedule,
    check_jump_model,
    check_jump_settings,
    jump_step,
)
from bnmfzoo.inference.gaussian.modes._symmetry import apply_moves
from bnmfzoo.models._spec import get_spec

__all__ = ["ModeJumps", "ModeJumpState"]


@dataclass_state
class ModeJumpState(StepMethodState):
    """Sampling state of :class:`ModeJumps`: the references (None before the first jump)."""

    references: list | None = field(default=None)
    n_steps: int = 0


class ModeJumps(TransformedStep):
    """Jumps between the modes of exponential-Gaussian BNMF by annealed importance sampling.

    Every ``jump_every`` steps, the current ``(A, W, tau)`` is annealed down to the mean-field
    reference of its mode, a state drawn from another mode's reference is annealed up to the
    posterior, and the new state is accepted by Metropolis-Hastings with the ratio of the two
    annealing weights (:mod:`bnmfzoo.inference.gaussian.modes._mode_jump`). The references are found
    at the chain's first jump by ``n_starts`` quenched Gibbs runs from random starts and the
    chain's state. The move leaves the posterior invariant for any settings; they decide how
    often it is accepted. Use it beside a sampler of the blocks, e.g.
    ``step=[GibbsNMF(), ModeJumps()]``.

    Parameters
    ----------
    jump_every : int
        Steps between jumps (the steps in between return the point unchanged).
    n_anneal : int
        Annealing steps per path; a jump costs about ``2 n_anneal`` Gibbs sweeps.
    n_starts : int
        Random starts searched for modes.
    rescale : bool
        Also draw, at every step, the scale of each factor ``A[:, k] c, W[k, :] / c`` from its
        exact conditional (the ``"rescale"`` move of :class:`~bnmfzoo.inference.SymmetryMoves`).
        Off by default. A state far out on that ridge is in the tails of its mode's reference,
        which lowers its jumps' acceptance. Rescaling raised the mean acceptance on CCLE IC50
        rank 3 (0.003-0.010 against 0.001-0.006) but gave max R-hat <= 1.01 in only 2 of 4
        seeds, against 4 of 4 without it (``benchmarks/RESULTS.md`` §3.5).
    model : pymc.Model, optional
        An exponential-Gaussian NMF without ARD (built by
        :func:`bnmfzoo.models.exponential_gaussian` or written by hand).
    rng : numpy.random.Generator or int, optional
        Only used outside ``pm.sample``.

    Notes
    -----
    Sample stats: ``jump_accept`` (acceptance probability, NaN when no jump was proposed or
    only one mode was found) and ``n_references`` (modes found, 0 before the first jump).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.inference import GibbsNMF
    >>> from bnmfzoo.models import exponential_gaussian
    >>> X = np.random.default_rng(0).exponential(size=(8, 6))
    >>> with exponential_gaussian(X, 2, sigma=0.5):  # a fixed noise sd works too
    ...     steps = [GibbsNMF(), ModeJumps(n_anneal=20, n_starts=4)]
    ...     idata = pm.sample(draws=50, tune=50, chains=2, step=steps, random_seed=1,
    ...                       progressbar=False)  # doctest: +SKIP
    """

    name = "mode_jumps"
    stats_dtypes_shapes = {"jump_accept": (np.float64, []), "n_references": (np.int64, [])}
    _state_class = ModeJumpState

    def __init__(self, vars=None, *, jump_every=10, n_anneal=500, n_starts=8, rescale=False,
                 model=None, rng=None, blocked=True, initial_point=None, compile_kwargs=None):
        model = pm.modelcontext(model)
        spec = get_spec(model, families="exponential_gaussian", method=type(self).__name__)
        check_jump_model(spec.hyper)
        check_jump_settings(jump_every, n_anneal, n_starts)
        self._init_variables(model, spec.var_names, vars)
        if set(self.value_maps) - self.update_roles:
            raise ValueError(f"{type(self).__name__} must update every free variable of the "
                             f"model; not assigned: "
                             f"{sorted(set(self.value_maps) - self.update_roles)}")
        self.hyper = spec.hyper
        self.obs = observed_entries(spec.X, spec.mask)
        self.jump_every, self.n_starts = int(jump_every), int(n_starts)
        self.rescale = bool(rescale)
        self.gammas = anneal_schedule(n_anneal)
        self.references = None
        self.n_steps = 0
        self.rng = get_random_generator(rng)

    def setup_chain(self, rng, tune, draws):
        """Take this chain's generator; forget the previous chain's references."""
        super().setup_chain(rng, tune, draws)
        self.references = None
        self.n_steps = 0

    def step(self, point):
        """Rescale the factors (if ``rescale``); propose a jump every ``jump_every`` steps."""
        due = self.n_steps % self.jump_every == 0
        self.n_steps += 1
        if not (due or self.rescale):
            return point, [{"jump_accept": math.nan,
                            "n_references": len(self.references or ())}]
        values = {role: self._read(point, role) for role in self.value_maps}
        tau = values.get("tau", 1.0 / float(self.hyper.sigma or 1.0) ** 2)
        st = nmf_state(values["A"], values["W"], tau, None, self.obs)
        if self.rescale:
            apply_moves(st, self.hyper, self.rng, ("rescale",))
        prob, moved = math.nan, self.rescale
        if due:
            new, prob, self.references = jump_step(st, self.obs, self.hyper, self.references,
                                                   self.gammas, self.rng, n_starts=self.n_starts)
            moved, st = moved or new is not st, new
        stats = [{"jump_accept": float(prob), "n_references": len(self.references or ())}]
        if not moved:  # the point itself, not a round trip through the transforms
            return point, stats
        new_point = dict(point)
        out = {"A": st.A, "W": st.W, "tau": st.tau}
        for role in self.value_maps:
            self._write(new_point, role, out[role])
        return new_point, stats
