"""PyMC glue of :class:`~bnmfzoo.inference.GibbsNMTF` for recognized models with other priors.

A model recognized as ``X ~ F S G^T`` whose priors are not the constructors' (constant
exponential rates, ARD Gamma rates per column of ``F`` and ``G``) is sampled through
:func:`bnmfzoo.inference.gaussian.priors._prior_nmtf.prior_nmtf_sweep`: ``HalfNormal(sigma)``,
``TruncatedNormal(mu, sigma, lower=0)`` and ``Exponential`` priors with constant parameters
(scalars or per-entry arrays) become per-entry ``(q, l)`` terms computed once; exponential rates
that are elements of ``Gamma`` random variables are drawn from their Gamma conditionals in the
sweep. The noise is ``tau ~ Gamma`` or a fixed ``sigma``.
"""

import numpy as np

from bnmfzoo.inference.gaussian.gibbs._core import nmtf_state, observed_entries
from bnmfzoo.inference.gaussian.priors._gibbs_prior import _params_value
from bnmfzoo.inference.gaussian.priors._prior_core import PriorTerms, RateBlock, prior_terms
from bnmfzoo.inference.gaussian.priors._prior_nmtf import ROLES, NMTFPriorPlan, prior_nmtf_sweep

__all__ = ["GeneralNMTFMixin", "nmtf_plan", "unsupported_reason"]


def unsupported_reason(f):
    """Why the general NMTF sweep cannot sample the recognized ``f`` (None when it can)."""
    if f.kind != "nmtf":
        return "not a tri-factorization"
    for role in ROLES:
        p = f.factors[role]
        if not p.constant and p.rate is None:
            deps = sorted({d for par in p.params.values() for d in par.depends_on})
            return (f"the {p.family} prior of {role} ({p.name!r}) depends on {deps}; GibbsNMTF "
                    "implements priors with constant parameters and Gamma exponential rates")
    if f.noise.kind == "other":
        return (f"the noise sd depends on {list(f.noise.depends_on)}; GibbsNMTF implements "
                "tau ~ Gamma or a fixed sigma")
    from bnmfzoo.models._spec import exact_gibbs_only

    gibbs_only = exact_gibbs_only(f)
    if gibbs_only is not None:
        return f"{gibbs_only}, not GibbsNMTF"
    if f.imputed is not None:
        return (f"GibbsNMTF does not draw PyMC's imputed entries ({f.imputed.name!r}); use "
                "bnmfzoo.likelihoods or select the observed entries in the likelihood")
    return None


def nmtf_plan(f):
    """:class:`NMTFPriorPlan` of a recognized tri-factorization (roles' own layout)."""
    terms = {}
    for role in ROLES:
        p = f.factors[role]
        if p.rate is not None:
            index = dict(f.rates[p.rate].users)[role]
            terms[role] = PriorTerms("rate", rate=p.rate,
                                     index=np.ascontiguousarray(index, dtype=np.int64))
        else:
            params = _params_value(p, {})
            terms[role] = PriorTerms("constant", *prior_terms(p.family, params, p.shape))
    rates = tuple(
        RateBlock(name=r.name, alpha=r.alpha.astype(float), beta=r.beta.astype(float),
                  users=tuple((role, np.ascontiguousarray(idx, dtype=np.int64))
                              for role, idx in r.users))
        for r in f.rates.values())
    precision = f.noise.kind == "precision"
    return NMTFPriorPlan(F=terms["F"], S=terms["S"], G=terms["G"], rates=rates,
                         noise="precision" if precision else "fixed",
                         alpha_tau=f.noise.alpha if precision else 1.0,
                         beta_tau=f.noise.beta if precision else 1.0, sigma=f.noise.sigma)


class GeneralNMTFMixin:
    """The general-prior mode of :class:`GibbsNMTF` (used when ``self.general`` is True)."""

    def _accepts(self, found):
        return unsupported_reason(found) is None

    def _refusal(self, found):
        return unsupported_reason(found)

    def _init_general(self, model, f, vars):
        names = {role: p.name for role, p in f.factors.items()}
        if f.noise.kind == "precision":
            names["tau"] = f.noise.name
        for n in f.rates:
            names[f"rate:{n}"] = n
        self._init_variables(model, names, vars)
        self.factorization = f
        self.plan = nmtf_plan(f)
        self.obs = observed_entries(f.entries)
        self.hyper = {"sigma": f.noise.sigma}
        self._blocks = {r if not r.startswith("rate:") else r[5:] for r in self.update_roles}

    def _read_role(self, point, role):
        value = self._read(point, role)
        if role in ROLES and self.factorization.factors[role].transposed:
            value = value.T
        return value

    def _write_role(self, point, role, value):
        if role in ROLES and self.factorization.factors[role].transposed:
            value = np.asarray(value).T
        return self._write(point, role, value)

    def _general_state(self, point):
        if self.chain is not None:
            state, rates, written = self.chain
            fresh = [role for role in self.value_maps
                     if not np.array_equal(point[self._value_name(role)], written[role])]
            if not any(role in ROLES for role in fresh):
                for role in fresh:  # e.g. tau sampled by another step method
                    value = self._read_role(point, role)
                    if role == "tau":
                        state.tau = float(value)
                    else:
                        rates[role[5:]] = np.asarray(value, dtype=float).ravel()
                return state, rates
        values = {role: self._read_role(point, role) for role in self.value_maps}
        state = nmtf_state(values["F"], values["S"], values["G"], values.get("tau", 1.0), None,
                           None, self.obs)
        rates = {role[5:]: np.asarray(v, dtype=float).ravel() for role, v in values.items()
                 if role.startswith("rate:")}
        return state, rates

    def _general_step(self, point):
        state, rates = self._general_state(point)
        prior_nmtf_sweep(state, self.obs, self.plan, self.rng, rates=rates, update=self._blocks)
        new_point = dict(point)
        written = {}
        values = {"F": state.F, "S": state.S, "G": state.G, "tau": state.tau}
        for role in self.value_maps:
            if role in self.update_roles:
                value = rates[role[5:]] if role.startswith("rate:") else values[role]
                written[role] = self._write_role(new_point, role, value)
            else:
                written[role] = new_point[self._value_name(role)]
        self.chain = (state, rates, written)
        stats = {"train_mse": state.train_mse(), "tau": float(state.tau)}
        return new_point, [stats]
