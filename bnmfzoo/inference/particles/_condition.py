"""The free variables of a particle besides ``A`` and ``W``: their conditional mode.

A particle of :func:`~bnmfzoo.inference.fit_particles` is a solution ``(A, W)`` of a
non-Bayesian solver. When the model has further free variables (a noise precision ``tau``, ARD
rates, a user's hyperparameters, ``sigma ~ HalfNormal``...), each particle is completed with
their **conditional mode given its A and W** in PyMC's value space (the unconstrained density,
log-Jacobian included, the density the Stein discrepancy is computed against): L-BFGS-B on
``model.logp`` over those variables only, started from the model's initial point. For a Gamma
precision this is ``log tau`` at the mode of ``Gamma(alpha + n/2, beta + SSE/2)`` in log space,
i.e. ``tau = (alpha + n/2) / (beta + SSE/2)``.
"""

import numpy as np
from scipy import optimize

__all__ = ["ConditionalMode"]


class ConditionalMode:
    """Conditional mode of the free variables ``extra`` of ``model`` given ``A`` and ``W``.

    Parameters
    ----------
    model : pymc.Model
    names : dict
        ``{"A": name, "W": name}``.
    extra : list of str
        Names of the other free variables.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo import likelihoods
    >>> X = np.random.default_rng(0).exponential(size=(6, 5))
    >>> with pm.Model() as m:
    ...     A = pm.Exponential("A", 1.0, shape=(6, 2))
    ...     W = pm.Exponential("W", 1.0, shape=(2, 5))
    ...     tau = pm.Gamma("tau", 1.0, 1.0)
    ...     _ = likelihoods.gaussian("X", A, W, observed=X, tau=tau)
    >>> cm = ConditionalMode(m, {"A": "A", "W": "W"}, ["tau"])
    >>> A0, W0 = np.ones((1, 6, 2)), np.ones((1, 2, 5))
    >>> sse = float(((X - A0[0] @ W0[0]) ** 2).sum())
    >>> bool(np.isclose(cm(A0, W0)["tau"][0], (1 + 15) / (1 + sse / 2), rtol=1e-5))
    True
    """

    def __init__(self, model, names, extra):
        from bnmfzoo.inference._step_glue import ValueMap

        self.model, self.extra = model, list(extra)
        self.maps = {n: ValueMap(model, n) for n in [names["A"], names["W"], *self.extra]}
        self.names = names
        start = model.initial_point()
        self.start = start
        self.value_names = [self.maps[n].value_name for n in self.extra]
        self.shapes = [np.shape(start[v]) for v in self.value_names]
        rvs = [model[n] for n in self.extra]
        self._logp = model.compile_logp()
        self._dlogp = model.compile_dlogp(vars=rvs)

    def _point(self, A, W, x):
        point = dict(self.start)
        point[self.maps[self.names["A"]].value_name] = self.maps[self.names["A"]].forward(A)
        point[self.maps[self.names["W"]].value_name] = self.maps[self.names["W"]].forward(W)
        i = 0
        for v, shape in zip(self.value_names, self.shapes, strict=True):
            size = int(np.prod(shape, dtype=np.int64))
            point[v] = np.asarray(x[i:i + size]).reshape(shape)
            i += size
        return point

    def __call__(self, A, W):
        """Constrained values ``{name: (M, ...)}`` of the extra variables for each particle."""
        x0 = np.concatenate([np.ravel(self.start[v]) for v in self.value_names]).astype(float)
        out = {n: [] for n in self.extra}
        for a, w in zip(A, W, strict=True):
            a = np.maximum(a, 1e-300)  # log transforms need positive values
            w = np.maximum(w, 1e-300)

            def f(x, a=a, w=w):
                point = self._point(a, w, x)
                return -float(self._logp(point)), -np.asarray(self._dlogp(point), dtype=float)

            res = optimize.minimize(f, x0, jac=True, method="L-BFGS-B")
            point = self._point(a, w, res.x)
            for n, v in zip(self.extra, self.value_names, strict=True):
                out[n].append(self.maps[n].backward(point[v]))
        return {n: np.stack(v) for n, v in out.items()}
