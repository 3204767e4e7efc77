"""Gibbs step method for exponential-Gaussian BNMTF ``X ~ F S G^T`` (Brouwer & Lio 2017).

PyMC glue around :func:`bnmfzoo.inference.gaussian.gibbs._core.nmtf_sweep`; the shared glue lives in
:mod:`bnmfzoo.inference.gaussian.gibbs.gibbs_nmf`.
"""

import numpy as np

from bnmfzoo.inference.gaussian.gibbs._core import nmtf_state, nmtf_sweep
from bnmfzoo.inference.gaussian.gibbs.gibbs_nmf import _GibbsFactorization
from bnmfzoo.inference.gaussian.priors._gibbs_prior_nmtf import GeneralNMTFMixin, unsupported_reason

__all__ = ["GibbsNMTF"]


class GibbsNMTF(GeneralNMTFMixin, _GibbsFactorization):
    """Blocked Gibbs sampler for Gaussian tri-factorization models ``X ~ F S G^T``.

    For :func:`bnmfzoo.models.tri_exponential_gaussian` models (or the same written by hand)
    one step is one sweep (Brouwer et al. 2017): ARD rates ``lambda_F``, ``lambda_G``
    (Gamma), the columns of ``F`` (blocks of independent truncated normals), the entries of
    ``S`` in row-major order, the columns of ``G``, then ``tau`` (skipped with a fixed
    ``sigma``). Any other ``pm.Model`` recognized as ``X ~ Normal(F @ S @ G.T, ...)`` whose
    factor priors are ``HalfNormal(sigma)``, ``TruncatedNormal(mu, sigma, lower=0)`` or
    ``Exponential`` with constant parameters (scalars or per-entry arrays), or exponential
    rates that are elements of ``Gamma`` random variables, is sampled by the same sweep with
    per-entry prior terms (:func:`bnmfzoo.inference.gaussian.priors._prior_nmtf.prior_nmtf_sweep`):
    each conditional is still an exact truncated normal (or Gamma for the rates).
    ``pm.sample()`` without ``step=`` chooses it for such models (:meth:`competence`).
    Cost ``O(|observed| x (K + L + K L))`` per sweep.

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

    @classmethod
    def _roles_of(cls, found):
        names = super()._roles_of(found)
        if names is None and found.kind == "nmtf" and unsupported_reason(found) is None:
            names = set(found.var_names.values())
        return names

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

