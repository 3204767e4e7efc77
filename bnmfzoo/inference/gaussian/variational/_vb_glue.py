"""PyMC glue of :func:`fit_vb`, :func:`fit_icm` and :func:`fit_multiplicative`.

Reads the spec of an ``exponential_gaussian`` / ``tri_exponential_gaussian`` model
(:func:`bnmfzoo.models._spec.get_spec`) into a plain-array
:class:`~bnmfzoo.inference.gaussian.variational._vb_problem.Problem`, and wraps the fitted arrays
in a
DataTree named as in the model. The numeric core
(:mod:`~bnmfzoo.inference.gaussian.variational._vb_core`)
never sees the spec.
"""

import numpy as np

from bnmfzoo.inference.gaussian.priors._prior_core import prior_terms
from bnmfzoo.inference.gaussian.variational._vb_problem import Observed, Problem, RateTerm
from bnmfzoo.models._recognize import try_recognize
from bnmfzoo.models._spec import spec_from_factorization

FAMILIES = ("exponential_gaussian", "tri_exponential_gaussian")


def _hyper(hyper, name, default):
    value = getattr(hyper, name, default)
    return default if value is None else value


def problem_from_model(model, *, method, priors_used=True):
    """Read a recognized Gaussian NMF / NMTF ``model`` into a :class:`Problem`.

    The constructors' priors (constant exponential rates, one ARD rate per factor) give the
    paper's problem. Other constant priors - ``Exponential`` with per-entry rates,
    ``HalfNormal(sigma)``, ``TruncatedNormal(mu, sigma, lower=0)`` - become per-entry terms
    (:attr:`Problem.prior`). ``priors_used=False`` (a fitter that ignores the priors) accepts
    any recognized factorization.
    """
    import pymc as pm

    if not isinstance(model, pm.Model):
        raise TypeError(f"{method} needs a pymc.Model, got {type(model).__name__}")
    found, reason = try_recognize(model)
    if found is None:
        raise TypeError(f"{method} needs a model of family {', '.join(FAMILIES)}; this pm.Model "
                        f"is not recognized as one: {reason}")
    spec, reason = spec_from_factorization(found)
    if found.kind not in ("nmf", "nmtf"):  # e.g. a Bernoulli, SILF or uniform-noise model
        raise TypeError(f"{method} needs a Gaussian likelihood on A @ W: {reason}")
    if spec is None:
        return _general_problem(found, method, reason, priors_used, model)
    return _spec_problem(spec)


def _spec_problem(spec):
    h = spec.hyper
    D, N = spec.mask.shape
    entries = getattr(spec, "entries", None)  # sparse data: no dense array
    obs = Observed(spec.X_values, spec.mask) if entries is None else Observed(entries)
    sigma = h.sigma
    tau_fixed = None if sigma is None else 1.0 / float(sigma) ** 2
    ard = bool(h.ard)
    if spec.family == "exponential_gaussian":
        R = int(np.atleast_1d(spec.rank)[0])
        rank = (R,)
        lam = {
            "A": np.broadcast_to(np.asarray(_hyper(h, "lambda_A", 0.1), float), (D, R)).T.copy(),
            "W": np.broadcast_to(np.asarray(_hyper(h, "lambda_W", 0.1), float), (R, N)).copy(),
        }
    else:
        K, L = (int(v) for v in spec.rank)
        rank = (K, L)
        lam = {
            "F": np.broadcast_to(np.asarray(_hyper(h, "lambda_F", 0.1), float), (D, K)).T.copy(),
            "S": np.broadcast_to(np.asarray(_hyper(h, "lambda_S", 0.1), float), (K, L)).copy(),
            "G": np.broadcast_to(np.asarray(_hyper(h, "lambda_G", 0.1), float), (N, L)).T.copy(),
        }
    return Problem(
        family=spec.family, spec=spec, obs=obs, rank=rank, lam=lam,
        alpha_tau=float(_hyper(h, "alpha_tau", 1.0)), beta_tau=float(_hyper(h, "beta_tau", 1.0)),
        tau_fixed=tau_fixed, ard=ard,
        alpha0=float(_hyper(h, "alpha0", 1.0)), beta0=float(_hyper(h, "beta0", 1.0)),
    )


_FAMILY_OF_KIND = {"nmf": "exponential_gaussian", "nmtf": "tri_exponential_gaussian"}


def _prior_logc(family, q, lin, lam):
    """Log normalizing constant of each entry's prior on [0, inf)."""
    from scipy.special import log_ndtr

    if family == "exponential":
        return np.log(lam)
    return 0.5 * np.log(q) - 0.5 * np.log(2 * np.pi) - lin**2 / (2 * q) \
        - log_ndtr(lin / np.sqrt(q))


def _general_problem(f, method, reason, priors_used, model=None):
    """:class:`Problem` of a recognized factorization with constant per-entry priors."""
    what = ("Exponential (constant rates of any shape, or elements of Gamma random variables), "
            "HalfNormal(sigma) or TruncatedNormal(mu, sigma, lower=0) priors with constant "
            "parameters, tau ~ Gamma, a fixed sigma or a scalar sigma ~ HalfNormal/HalfCauchy "
            "with a constant scale, and no other free variable")
    noise_sd = None
    if f.imputed is not None:
        raise TypeError(
            f"{method} does not fill in the missing entries PyMC imputes ({f.imputed.name!r}, "
            "made because the observed data contain NaN): use bnmfzoo.likelihoods.gaussian, "
            "which leaves NaN entries out of the likelihood (or pass a mask), or GibbsNMF, "
            "which draws the imputed entries")
    for role, p in f.factors.items():
        if p.transposed:
            raise TypeError(f"{method}: {role} ({p.name!r}) is stored transposed; write it as "
                            f"a {p.shape[0]} x {p.shape[1]} variable")
        if priors_used and not p.constant and p.rate is None:
            deps = sorted({d for par in p.params.values() for d in par.depends_on})
            raise TypeError(f"{method} cannot fit this model: the {p.family} prior of {role} "
                            f"({p.name!r}) depends on {deps}; {method} implements {what}")
    if priors_used:
        from bnmfzoo.models._spec import exact_gibbs_only

        gibbs_only = exact_gibbs_only(f)
        if gibbs_only is not None:
            raise TypeError(f"{method} cannot fit this model: {gibbs_only}")
        if f.noise.kind == "other":
            noise_sd = _noise_sd(f, model, method, what)
        others = [o for o in f.others if noise_sd is None or o != noise_sd[2]]
        if others:
            raise TypeError(f"{method} cannot fit this model: it has further free variables "
                            f"{others}; {method} implements {what}")
    obs = Observed(f.entries) if f.on_demand else Observed(f.X_values, np.asarray(f.mask))
    tri = f.kind == "nmtf"
    rank = tuple(int(v) for v in f.rank) if tri else (int(f.rank),)
    lam, prior = {}, {}
    rates = _rate_terms(f, model) if priors_used else ()
    rated = {role: (r, index) for r in rates for role, index in r.users}
    for role, p in f.factors.items():
        internal = (lambda a: np.ascontiguousarray(a.T)) if role in ("A", "F", "G") else (
            lambda a: np.ascontiguousarray(a))
        if role in rated:  # exponential rates from a Gamma variable: updated by the fitter
            r, index = rated[role]
            lam[role] = (r.alpha / r.beta)[index]  # prior mean, for starting values
            prior[role] = {"family": "exponential", "q": np.zeros(index.shape),
                           "lin": -lam[role], "logc": np.log(lam[role]), "rate": r.name}
            continue
        if p.constant:
            params = {k: v.value for k, v in p.params.items()}
            q, lin = prior_terms(p.family, params, p.shape)
            q, lin = internal(q), internal(lin)
        else:  # priors ignored (priors_used=False): any placeholder of the right shape
            q, lin = internal(np.zeros(p.shape)), internal(-np.ones(p.shape))
        lam[role] = -lin
        prior[role] = {"family": p.family, "q": q, "lin": lin,
                       "logc": _prior_logc(p.family, q, lin, -lin) if p.constant else None}
    noise = f.noise
    tau_fixed = 1.0 / noise.sigma**2 if noise.kind == "fixed" else None
    precision = noise.kind == "precision"
    from bnmfzoo.models._spec import ModelSpec

    names = dict(f.var_names)
    names.setdefault("tau", None)
    if noise_sd is not None:
        names["sd"] = noise_sd[2]
    spec = ModelSpec(family=_FAMILY_OF_KIND[f.kind], X=f.X, mask=f.mask, rank=f.rank,
                     var_names=names, entries=f.entries if f.on_demand else None)
    return Problem(
        family=spec.family, spec=spec, obs=obs, rank=rank, lam=lam,
        alpha_tau=float(noise.alpha) if precision else 1.0,
        beta_tau=float(noise.beta) if precision else 1.0,
        tau_fixed=tau_fixed, ard=False, alpha0=1.0, beta0=1.0, prior=prior, rates=rates,
        noise_sd=noise_sd,
    )


def _noise_sd(f, model, method, what):
    """``(family, scale, name)`` of a HalfNormal / HalfCauchy noise sd, else a TypeError."""
    from bnmfzoo.inference.gaussian.gibbs.noise_sd import noise_sd_prior

    if f.kind != "nmf":
        family, scale = None, "a HalfNormal / HalfCauchy noise sd is implemented for X ~ A W only"
    else:
        family, scale, name, _ = (None, "no model", None, None) if model is None \
            else noise_sd_prior(model)
    if family is None:  # scale is the reason then
        raise TypeError(f"{method} cannot fit this model: the noise sd depends on "
                        f"{list(f.noise.depends_on)} ({scale}); {method} implements {what}")
    return family, scale, name


def _rate_terms(f, model):
    """:class:`RateTerm` of each Gamma rate variable of a recognized factorization."""
    out = []
    named = getattr(model, "named_vars_to_dims", {}) or {}
    for rate in f.rates.values():
        dims = named.get(rate.name)
        users = tuple((role, np.ascontiguousarray(index.T if role in ("A", "F", "G") else index))
                      for role, index in rate.users)
        out.append(RateTerm(name=rate.name, alpha=np.asarray(rate.alpha, float),
                            beta=np.asarray(rate.beta, float), shape=tuple(rate.shape),
                            users=users, dims=tuple(dims) if dims else None))
    return tuple(out)


ROLE_DIMS = {
    "A": ["row", "factor"],
    "W": ["factor", "col"],
    "F": ["row", "factor_row"],
    "S": ["factor_row", "factor_col"],
    "G": ["col", "factor_col"],
    "tau": [],
    "sd": [],
    "lambda_": ["factor"],
    "lambda_F": ["factor_row"],
    "lambda_G": ["factor_col"],
}


def role_dims(problem, role):
    """Dims of ``role``; a Gamma rate variable ``"rate:<name>"`` gets ``<name>_dim_<i>``."""
    if role.startswith("rate:"):
        name = role.removeprefix("rate:")
        term = next(r for r in problem.rates if r.name == name)
        if term.dims is not None and all(d is not None for d in term.dims):
            return list(term.dims)  # the model's own dims
        return [f"{name}_dim_{i}" for i in range(len(term.shape))]
    return ROLE_DIMS[role]


def var_name(problem, role):
    """PyMC variable name the model uses for ``role`` (falls back to the role itself)."""
    return problem.spec.var_names.get(role) or role


def result_coords(problem):
    """Coordinates for the DataTree: the data's row/col labels and integer factor indices."""
    from bnmfzoo._base.results import data_coords

    coords = data_coords(problem.spec.X)
    if problem.tri:
        coords["factor_row"] = np.arange(problem.rank[0])
        coords["factor_col"] = np.arange(problem.rank[1])
    else:
        coords["factor"] = np.arange(problem.rank[0])
    return coords


def build_result(problem, draws, *, method, sample_stats=None, groups=None, attrs=None):
    """Wrap posterior ``draws`` ({role: (chain, draw, ...)} in public layout) in a DataTree.

    ``draws`` may hold the roles A/W (or F/S/G), ``tau``, ``lambda_`` (``lambda_F``,
    ``lambda_G``) and ``rate:<name>`` (a Gamma rate variable of a recognized model).
    Variables are named as in the model's spec.
    """
    from bnmfzoo._base.results import build_datatree, observed_long

    posterior, dims = {}, {}
    for role, arr in draws.items():
        name = var_name(problem, role)
        posterior[name] = arr
        dims[name] = role_dims(problem, role)
    entries = getattr(problem.spec, "entries", None)
    if entries is None:
        dims["X"] = ["row", "col"]
        observed = {"X": np.asarray(problem.spec.X.values, dtype=float)}
    else:  # sparse data: long format, never a dense D x N array
        observed = observed_long(entries)
    return build_datatree(
        posterior,
        sample_stats=sample_stats,
        observed_data=observed,
        coords=result_coords(problem),
        dims=dims,
        groups=groups,
        attrs={"method": method, "model": problem.family, **(attrs or {})},
    )
