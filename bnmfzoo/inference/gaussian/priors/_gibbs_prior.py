"""PyMC glue of :class:`~bnmfzoo.inference.GibbsNMF` for recognized models with any prior.

A model recognized by :func:`bnmfzoo.models._recognize.recognize` whose priors are not the
constructors' (constant exponential rates or one ARD rate per factor) is sampled through
:func:`bnmfzoo.inference.gaussian.priors._prior_core.prior_nmf_sweep`: each factor's prior becomes
per-entry ``(q, l)`` terms, constant ones computed once, ARD ones from the current Gamma rates,
and those depending on variables that other step methods sample (a hyperprior on a HalfNormal
scale, ``sigma ~ HalfNormal`` in the likelihood) evaluated from the point at every step.

Gamma factor priors, a noise precision per row or per column and Student-t noise go through
:func:`bnmfzoo.inference.gaussian.priors._weighted_core.weighted_nmf_sweep` instead (a
:class:`~bnmfzoo.inference.gaussian.priors._weighted_core.WeightedPlan`); every other model
keeps the sweep and the draws it had.
"""

import numpy as np

from bnmfzoo._terms._pairs import _product
from bnmfzoo.inference._step_glue import ValueMap
from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, observed_entries
from bnmfzoo.inference.gaussian.priors._prior_core import (
    NMFPriorPlan,
    PriorTerms,
    RateBlock,
    prior_nmf_sweep,
    prior_terms,
)
from bnmfzoo.inference.gaussian.priors._weighted_core import (
    WeightedPlan,
    factor_terms,
    weighted_nmf_sweep,
)
from bnmfzoo.models._graph import evaluate
from bnmfzoo.models._recognize import PRECISION_KINDS
from bnmfzoo.models._spec import GaussianHyper, exact_gibbs_only

__all__ = ["GeneralNMFMixin", "plan_from_factorization"]


def _sweep_layout(role, value):
    """A role's array (A: D x R, W: R x N) in the sweep's layout (A: D x R, W: N x R)."""
    return np.ascontiguousarray(value if role == "A" else np.asarray(value).T, dtype=float)


def _params_value(prior, env):
    """The prior's parameter arrays in the role's orientation (constants or evaluated)."""
    out = {}
    rv_shape = prior.shape[::-1] if prior.transposed else prior.shape
    for key, par in prior.params.items():
        if par.constant:
            out[key] = par.value
            continue
        value = np.broadcast_to(np.asarray(evaluate(par.graph, env), dtype=float), rv_shape)
        out[key] = value.T if prior.transposed else value
    return out


def plan_from_factorization(f):
    """:class:`NMFPriorPlan` of a recognized NMF (external parts marked ``"external"``).

    A :class:`~bnmfzoo.inference.gaussian.priors._weighted_core.WeightedPlan` around it when
    the model has Gamma factor priors, a per-row/column precision or Student-t noise.
    """
    terms = {}
    shapes = {}
    for role in ("A", "W"):
        p = f.factors[role]
        shape = _sweep_layout(role, np.empty(p.shape)).shape
        if p.rate is not None:
            index = dict(f.rates[p.rate].users)[role]
            terms[role] = PriorTerms("rate", rate=p.rate, index=_sweep_layout(role, index)
                                     .astype(np.int64))
        elif p.constant:
            params = {k: _sweep_layout(role, v) for k, v in _params_value(p, {}).items()}
            q, lin, c = factor_terms(p.family, params, shape)
            terms[role] = PriorTerms("constant", q=q, lin=lin)
            if p.family == "gamma":
                shapes[role] = c
        else:
            terms[role] = PriorTerms("external")
    rates = tuple(
        RateBlock(name=r.name, alpha=r.alpha.astype(float), beta=r.beta.astype(float),
                  users=tuple((role, _sweep_layout(role, idx).astype(np.int64))
                              for role, idx in r.users))
        for r in f.rates.values())
    scalar = f.noise.kind in ("precision", "fixed", "other")
    noise = {"precision": "precision", "fixed": "fixed", "other": "external"}.get(
        f.noise.kind, "precision")
    base = NMFPriorPlan(A=terms["A"], W=terms["W"], rates=rates, noise=noise,
                        alpha_tau=float(f.noise.alpha) if f.noise.kind == "precision" else 1.0,
                        beta_tau=float(f.noise.beta) if f.noise.kind == "precision" else 1.0,
                        sigma=f.noise.sigma)
    if exact_gibbs_only(f) is None:
        return base
    nu = f.noise.nu
    return WeightedPlan(
        base=base, shape_A=shapes.get("A"), shape_W=shapes.get("W"),
        axis=None if scalar else f.noise.kind.removesuffix("_precision"),
        alpha=None if scalar else np.asarray(f.noise.alpha, dtype=float),
        beta=None if scalar else np.asarray(f.noise.beta, dtype=float),
        nu=float(nu.value) if nu is not None and nu.constant else None,
        nu_external=nu is not None and not nu.constant)


class GeneralNMFMixin:
    """The general-prior mode of :class:`GibbsNMF` (used when ``self.general`` is True)."""

    def _accepts(self, found):
        return found.kind == "nmf"

    def _init_general(self, model, f, vars):
        names = {role: p.name for role, p in f.factors.items()}
        if f.noise.kind in PRECISION_KINDS:
            names["tau"] = f.noise.name
        for n in f.rates:
            names[f"rate:{n}"] = n
        if f.imputed is not None:
            names["imputed"] = f.imputed.name
        self._init_variables(model, names, vars)
        deps = set()
        for p in f.factors.values():
            if p.rate is None:
                for par in p.params.values():
                    deps |= set(par.depends_on)
        if f.noise.kind == "other":
            deps |= set(f.noise.depends_on)
        if f.noise.nu is not None:
            deps |= set(f.noise.nu.depends_on)
        deps -= set(names.values())
        self.ext_maps = {n: ValueMap(model, n) for n in sorted(deps)}
        self.factorization = f
        self.plan = plan_from_factorization(f)
        self.obs = observed_entries(f.entries)
        self.hyper = GaussianHyper(sigma=f.noise.sigma)
        self._blocks = {r if not r.startswith("rate:") else r[5:] for r in self.update_roles
                        if r != "imputed"}
        if f.imputed is not None and "imputed" not in self.update_roles and self._blocks:
            # the sweep draws A, W, tau from their conditional given the observed entries
            # only (the imputed ones marginalized out), which is right only when the imputed
            # entries are redrawn from their conditional right after it
            raise ValueError(f"{type(self).__name__} must also update {f.imputed.name!r} (PyMC's "
                             "imputation of the missing entries) when it updates the factors")

    # -- role values <-> PyMC point (orientation of transposed variables) --------------------
    def _read_role(self, point, role):
        value = self._read(point, role)
        if role in ("A", "W") and self.factorization.factors[role].transposed:
            value = value.T
        return value

    def _write_role(self, point, role, value):
        if role in ("A", "W") and self.factorization.factors[role].transposed:
            value = np.asarray(value).T
        return self._write(point, role, value)

    def _external(self, point):
        model_rvs = {n: vm._rv for n, vm in self.ext_maps.items()}
        env = {model_rvs[n]: vm.backward(point[vm.value_name]) for n, vm in self.ext_maps.items()}
        out = {}
        for role in ("A", "W"):
            if getattr(self._base_plan, role).kind != "external":
                continue
            prior = self.factorization.factors[role]
            params = {k: _sweep_layout(role, v) for k, v in _params_value(prior, env).items()}
            shape = params[next(iter(params))].shape
            if isinstance(self.plan, WeightedPlan):
                out[role] = factor_terms(prior.family, params, shape)
            else:
                out[role] = prior_terms(prior.family, params, shape)
        if self._base_plan.noise == "external":
            sd = float(np.ravel(evaluate(self.factorization.noise.graph, env))[0])
            out["tau"] = 1.0 / sd**2
        if isinstance(self.plan, WeightedPlan) and self.plan.nu_external:
            out["nu"] = float(np.ravel(evaluate(self.factorization.noise.nu.graph, env))[0])
        return out

    @property
    def _base_plan(self):
        return self.plan.base if isinstance(self.plan, WeightedPlan) else self.plan

    def _grouped_tau(self):
        return isinstance(self.plan, WeightedPlan) and self.plan.axis is not None

    def _general_state(self, point):
        if self.chain is not None:
            state, rates, written = self.chain
            fresh = [role for role in self.value_maps
                     if not np.array_equal(point[self._value_name(role)], written[role])]
            if not any(role in ("A", "W") for role in fresh):
                for role in fresh:
                    if role == "imputed":  # drawn afresh at every step
                        continue
                    value = self._read_role(point, role)
                    if role == "tau":
                        state.tau = (np.array(value, dtype=float) if self._grouped_tau()
                                     else float(value))
                    else:
                        rates[role[5:]] = np.asarray(value, dtype=float).ravel()
                return state, rates
        values = {role: self._read_role(point, role) for role in self.value_maps}
        grouped = self._grouped_tau() and "tau" in values
        state = nmf_state(values["A"], values["W"], 1.0 if grouped else values.get("tau", 1.0),
                          None, self.obs)
        if grouped:
            state.tau = np.array(values["tau"], dtype=float)
        rates = {role[5:]: np.asarray(v, dtype=float).ravel() for role, v in values.items()
                 if role.startswith("rate:")}
        return state, rates

    def _impute(self, state, external):
        """Exact draw of PyMC's imputed entries given A, W and the noise: Normal(A W, sd)."""
        imp = self.factorization.imputed
        mu = np.empty(imp.rows.size)
        _product(np.ascontiguousarray(state.A, dtype=float),
                 np.ascontiguousarray(np.asarray(state.W, dtype=float).T), imp.rows, imp.cols,
                 mu)
        plan = self._base_plan
        if plan.noise == "fixed":
            sd = float(plan.sigma)
        else:
            sd = 1.0 / np.sqrt(float(external["tau"] if plan.noise == "external"
                                     else state.tau))
        return mu + sd * self.rng.standard_normal(mu.size)

    def _general_step(self, point):
        state, rates = self._general_state(point)
        external = self._external(point)
        if isinstance(self.plan, WeightedPlan):
            weighted_nmf_sweep(state, self.obs, self.plan, self.rng, rates=rates,
                               update=self._blocks, external=external)
        else:
            prior_nmf_sweep(state, self.obs, self.plan, self.rng, rates=rates,
                            update=self._blocks, external=external)
        new_point = dict(point)
        written = {}
        values = {"A": state.A, "W": state.W, "tau": state.tau}
        for role in self.value_maps:
            if role == "imputed" and role in self.update_roles:
                written[role] = self._write_role(new_point, role, self._impute(state, external))
            elif role in self.update_roles:
                # (a flat rate is reshaped to its variable's shape by _write)
                value = rates[role[5:]] if role.startswith("rate:") else values[role]
                written[role] = self._write_role(new_point, role, value)
            else:
                written[role] = new_point[self._value_name(role)]
        self.chain = (state, rates, written)
        # (per-row/column precisions: their mean)
        stats = {"train_mse": state.train_mse(), "tau": float(np.mean(state.tau))}
        return new_point, [stats]
