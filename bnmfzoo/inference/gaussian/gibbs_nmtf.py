"""Gibbs step method for exponential-Gaussian BNMTF ``X ~ F S G^T`` (Brouwer & Lio 2017).

PyMC glue around :func:`bnmfzoo.inference.gaussian._core.nmtf_sweep`; the shared glue lives in
:mod:`bnmfzoo.inference.gaussian.gibbs_nmf`.
"""

import numpy as np

from bnmfzoo.inference.gaussian._core import nmtf_state, nmtf_sweep
from bnmfzoo.inference.gaussian.gibbs_nmf import _GibbsFactorization

__all__ = ["GibbsNMTF"]


class GibbsNMTF(_GibbsFactorization):
    """Blocked Gibbs sampler for :func:`bnmfzoo.models.tri_exponential_gaussian` models.

    One step is one sweep (Brouwer et al. 2017): ARD rates ``lambda_F``, ``lambda_G``
    (Gamma), the columns of ``F`` (blocks of independent truncated normals), the entries of
    ``S`` in row-major order, the columns of ``G``, then ``tau`` (skipped with a fixed
    ``sigma``). Cost O(|observed| x (K + L + K L)) per sweep.

    Parameters
    ----------
    vars : list, optional
        Variables to update (default: all of ``F``, ``S``, ``G``, ``tau``, ``lambda_F``,
        ``lambda_G`` in the model).
    model : pymc.Model, optional
        A model built by :func:`bnmfzoo.models.tri_exponential_gaussian`.
    rng : numpy.random.Generator or int, optional
        Only used outside ``pm.sample``.

    Notes
    -----
    Sample stats: ``train_mse`` and ``tau``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.models import tri_exponential_gaussian
    >>> X = np.random.default_rng(0).exponential(size=(6, 5))
    >>> with tri_exponential_gaussian(X, (2, 2)):
    ...     idata = pm.sample(draws=50, tune=50, chains=1, step=GibbsNMTF(),
    ...                       random_seed=1, progressbar=False)  # doctest: +SKIP
    """

    name = "gibbs_nmtf"
    family = "tri_exponential_gaussian"
    kind = "nmtf"
    factor_roles = ("F", "S", "G")

    def _new_state(self, values):
        return nmtf_state(values["F"], values["S"], values["G"], values.get("tau", 1.0),
                          values.get("lambda_F"), values.get("lambda_G"), self.obs)

    def _sweep(self, state):
        nmtf_sweep(state, self.obs, self.hyper, self.rng, update=self.update_roles)

    def _values(self, state):
        return {"F": state.F, "S": state.S, "G": state.G, "tau": state.tau,
                "lambda_F": state.lambda_F, "lambda_G": state.lambda_G}

    def _set_value(self, state, role, value):
        if role == "tau":
            state.tau = float(value)
        else:
            setattr(state, role, np.array(value, dtype=float))

