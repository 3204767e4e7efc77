"""Harness of the ``sigma ~ HalfNormal`` compound-step SBC (``test_recognize_sbc.py``) and of its
mixing diagnosis (``benchmarks/calibration/sigma_mixing.py``).

The model is the issue's user model with ``sigma ~ HalfNormal(1)`` in place of ``tau ~ Gamma``,
on a tiny matrix (:data:`D` x :data:`N`, rank :data:`R`, one held-out entry). Its data are a
``pm.Data`` container, so the model -- and the step methods PyMC assigns to it -- are built
and compiled **once**; each simulation swaps the data in with ``pm.set_data`` and re-reads the
observed entries into the Gibbs step. A chain is then driven exactly as ``pm.sample`` drives one
(``pymc.sampling.mcmc._iter_sample``: ``setup_chain``, ``reset_tuning``, ``stop_tuning`` after
the tuning steps, ``step.step(point)``), on the same ``CompoundStep`` that
``assign_step_methods`` + ``instantiate_steppers`` build inside ``pm.sample``.
"""

import numpy as np
import pymc as pm
from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
from pymc.step_methods import CompoundStep

from bnmfzoo.inference.gaussian.gibbs._core import observed_entries

D, N, R = 4, 3, 2
MASK = np.ones((D, N), dtype=bool)
MASK[0, 1] = False  # a held-out entry never enters the likelihood
SIGMA_SCALE = 1.0  # sigma ~ HalfNormal(SIGMA_SCALE)


def simulate_prior(rng, rank=R):
    """One draw ``(A, W, lam, sigma, X)`` of the model's prior and data (X: NaN where held
    out), in NumPy, independently of PyMC."""
    lam = rng.gamma(2.0, 1 / 2.0, size=rank)
    A = np.abs(rng.normal(size=(D, rank)))
    W = rng.exponential(1 / lam[:, None], size=(rank, N))
    sigma = abs(SIGMA_SCALE * rng.normal())
    X = A @ W + sigma * rng.normal(size=(D, N))
    X[~MASK] = np.nan
    return A, W, lam, sigma, X


def label_invariant(A, W, lam, sigma):
    """Label-invariant functions of the model (its factors are exchangeable a priori): A W,
    each row of A and column of W sorted over the factors, sorted rates, sigma. Works on one
    state or on stacked draws (leading axis)."""
    return {"AW": A @ W, "A_sorted": np.sort(A, axis=-1), "W_sorted": np.sort(W, axis=-2),
            "lam": np.sort(lam, axis=-1), "sigma": np.asarray(sigma)}


def sigma_model(X=None, noise="halfnormal", rank=R):
    """The user model, data in ``pm.Data("x_obs")`` (the observed entries, row-major).

    ``noise``: ``"halfnormal"`` (``sigma ~ HalfNormal(1)``), ``"halfcauchy"``
    (``sigma ~ HalfCauchy(1)``) or ``"gamma"`` (``tau ~ Gamma(1, 1)``, the issue's model, the
    reference of the diagnosis).
    """
    X = np.where(MASK, 1.0, np.nan) if X is None else X
    with pm.Model() as model:
        A = pm.HalfNormal("A", 1.0, shape=(D, rank))
        lam = pm.Gamma("lam", 2.0, 2.0, shape=rank)
        W = pm.Exponential("W", lam[:, None], shape=(rank, N))
        x = pm.Data("x_obs", X[MASK])
        if noise == "halfnormal":
            pm.Normal("X", mu=(A @ W)[MASK], sigma=pm.HalfNormal("sigma", SIGMA_SCALE),
                      observed=x)
        elif noise == "halfcauchy":
            pm.Normal("X", mu=(A @ W)[MASK], sigma=pm.HalfCauchy("sigma", 1.0), observed=x)
        elif noise == "gamma":
            pm.Normal("X", mu=(A @ W)[MASK], tau=pm.Gamma("tau", 1.0, 1.0), observed=x)
        else:
            raise ValueError(noise)
    return model


def assigned(model):
    """``{(step class name, sorted variable names)}`` as ``pm.sample`` assigns them."""
    return {(c.__name__, tuple(sorted(model.values_to_rvs[v].name for v in vs)))
            for c, vs in assign_step_methods(model)[1].items() if vs}


class Chains:
    """Model and steps compiled once; :meth:`run` samples one chain on new data.

    ``steps``: None for PyMC's own assignment (as ``pm.sample()`` without ``step=``); or a
    callable ``model -> list of step methods``.
    """

    def __init__(self, noise="halfnormal", steps=None, rank=R):
        self.model = sigma_model(noise=noise, rank=rank)
        self.rank = rank
        self.noise = noise
        self.sd_name = "tau" if noise == "gamma" else "sigma"
        with self.model:
            if steps is None:
                self.assignment = assigned(self.model)
                ip = self.model.initial_point()
                methods = instantiate_steppers(self.model, [],
                                               assign_step_methods(self.model)[1],
                                               initial_point=ip)
            else:
                self.assignment = None
                methods = steps(self.model)
        methods = methods if isinstance(methods, list) else [methods]
        self.step = CompoundStep(methods) if len(methods) > 1 else methods[0]
        self.methods = methods
        self.value_names = {rv.name: self.model.rvs_to_values[rv].name
                            for rv in self.model.free_RVs}

    def set_data(self, X):
        """Swap the data in: the ``pm.Data`` container (read by NUTS's compiled log density)
        and the observed entries of our steps (``obs``, read once at their construction)."""
        with self.model:
            pm.set_data({"x_obs": X[MASK]})
        obs = observed_entries(X)
        for m in self.methods:
            if hasattr(m, "obs"):
                m.obs = obs

    def start(self, A, W, lam, sd):
        """A point (value space) at the given constrained values."""
        val = {"A": A, "W": W, "lam": lam, self.sd_name: sd}
        return {self.value_names[k]: np.log(np.asarray(v, dtype=float)) for k, v in val.items()}

    def state(self, point):
        return {k: np.exp(point[v]) for k, v in self.value_names.items()}

    def run(self, X, start, rng, *, tune, record):
        """Sample one chain on data ``X`` from ``start`` as ``pm.sample`` does: ``tune``
        tuning steps, then ``record(state) -> dict`` is handed each following state; returns a
        ``step() -> dict`` callable continuing the chain (for :func:`run_to_ess`). The chain's
        current point is ``self.point``."""
        self.set_data(X)
        step = self.step
        step.setup_chain(rng, tune, 0)
        step.tune = bool(tune)
        if hasattr(step, "reset_tuning"):
            step.reset_tuning()
        if hasattr(step, "iter_count"):
            step.iter_count = 0
        point = dict(start)
        for _ in range(tune):
            point, _ = step.step(point)
        step.stop_tuning()
        self.point = point

        def advance():
            self.point, _ = step.step(self.point)
            return record(self.state(self.point))

        return advance
