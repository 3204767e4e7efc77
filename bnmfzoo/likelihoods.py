"""Likelihood terms usable inside any user-written ``pm.Model``.

Examples
--------
>>> import numpy as np, pymc as pm
>>> from bnmfzoo import likelihoods
>>> X = np.abs(np.random.default_rng(0).normal(size=(6, 5)))
>>> with pm.Model(coords={"row": range(6), "col": range(5), "factor": range(2)}) as model:
...     A = pm.HalfNormal("A", 1.0, dims=("row", "factor"))   # your own prior
...     W = pm.Exponential("W", 1.0, dims=("factor", "col"))
...     _ = likelihoods.gaussian("X", A, W, observed=X, sigma=0.5)
"""

from bnmfzoo._base.lazy import lazy_namespace

_NAMES = {
    "gaussian": "bnmfzoo._terms.gaussian",
    "silf": "bnmfzoo._terms.silf",
    "epsilon_from_reference": "bnmfzoo._terms.silf",
    "uniform": "bnmfzoo._terms.uniform",
    "bernoulli_mean": "bnmfzoo._terms.bernoulli",
    "poisson": "bnmfzoo._terms.poisson",
    "negative_binomial": "bnmfzoo._terms.poisson",
}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES)
__all__ = sorted(_NAMES)
