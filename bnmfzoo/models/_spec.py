"""What our inference methods need to know about a model.

For the Gaussian families (``exponential_gaussian``, ``tri_exponential_gaussian``) the
:class:`ModelSpec` is the result of recognizing the model's graph
(:func:`bnmfzoo.models._recognize.recognize`, then :func:`spec_from_factorization`): our own
constructors attach nothing and go through the same path as a user's own ``pm.Model``, so a
user model with exponential priors (constant rates or ARD Gamma rates) gets the same spec as
ours. The data come from the likelihood's observed values and the entries its mean selects, in
long format (no D x N array when few entries are observed). The SILF and uniform-noise families
are recognized the same way, from their likelihood terms
(:mod:`bnmfzoo.models._recognize_terms`), and the Bernoulli families from their
``pm.Bernoulli`` likelihood (:meth:`bnmfzoo.models._recognize_binary.BernoulliFactorization.spec`):
no constructor attaches anything to its model. Step methods and fitters read the spec with
:func:`get_spec` (or :func:`find_spec`), which raises a clear ``TypeError`` saying which prior or
likelihood made the difference.

Hyperparameters are typed, frozen dataclasses (:class:`GaussianHyper`, :class:`SilfHyper`,
:class:`UniformHyper`; the Bernoulli families'
:class:`~bnmfzoo.models._recognize_binary.BinaryPriors`), not dictionaries.
"""

from dataclasses import dataclass

import numpy as np

from bnmfzoo.models._recognize_parts import ModelSpec


@dataclass(frozen=True)
class GaussianHyper:
    """Hyperparameters of ``exponential_gaussian`` and ``tri_exponential_gaussian`` models.

    Attributes
    ----------
    alpha_tau, beta_tau : float
        Gamma prior of the noise precision ``tau`` (shape, rate); 1.0 when ``sigma`` is fixed.
    sigma : float or None
        The fixed noise sd, or None when ``tau`` is learned.
    ard : bool
        True when the exponential rates are ARD Gamma variables (one per factor).
    alpha0, beta0 : float
        Gamma prior (shape, rate) of the ARD rates (1.0 without ARD).
    lambda_A, lambda_W : float or None
        Constant exponential rates of ``A`` and ``W`` (NMF; None with ARD or for NMTF).
    lambda_F, lambda_S, lambda_G : float or None
        Constant exponential rates of ``F``, ``S`` and ``G`` (NMTF; ``lambda_F`` and
        ``lambda_G`` None with ARD).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> h = find_spec(exponential_gaussian(np.ones((4, 3)), 2, lambda_=0.1)).hyper
    >>> h.lambda_A, h.sigma, h.ard
    (0.1, None, False)
    """

    alpha_tau: float = 1.0
    beta_tau: float = 1.0
    sigma: float | None = None
    ard: bool = False
    alpha0: float = 1.0
    beta0: float = 1.0
    lambda_A: float | None = None
    lambda_W: float | None = None
    lambda_F: float | None = None
    lambda_S: float | None = None
    lambda_G: float | None = None


@dataclass(frozen=True)
class SilfHyper:
    """Hyperparameters of a SILF model (:func:`bnmfzoo.likelihoods.silf`).

    Attributes
    ----------
    epsilon, beta, C : float
        Insensitivity threshold, smoothness and inverse temperature of the SILF.
    objective : str
        ``"frobenius"``, ``"kl"`` or ``"itakura_saito"``.
    lambda_ : float or None
        Constant exponential rate of ``W`` (None when ``W``'s prior is another).
    alpha : float or None
        Symmetric Dirichlet concentration of ``A``'s columns
        (:func:`bnmfzoo.models.silf_dirichlet.column_dirichlet`), None for another prior.

    Examples
    --------
    >>> SilfHyper(epsilon=1.0, beta=0.1, C=2.0).objective
    'frobenius'
    """

    epsilon: float
    beta: float
    C: float
    objective: str = "frobenius"
    lambda_: float | None = None
    alpha: float | None = None


@dataclass(frozen=True)
class UniformHyper:
    """Hyperparameters of a uniform-noise model (:func:`bnmfzoo.likelihoods.uniform`).

    Attributes
    ----------
    epsilon : float
        Half-width of the noise box.
    lambda_A, lambda_W : float or None
        Constant exponential rates of ``A`` and ``W`` (None for other priors).

    Examples
    --------
    >>> UniformHyper(epsilon=0.5, lambda_A=1.0, lambda_W=1.0).epsilon
    0.5
    """

    epsilon: float
    lambda_A: float | None = None
    lambda_W: float | None = None


def find_spec(model):
    """The :class:`ModelSpec` of ``model`` (recognized from its graph), or None.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> find_spec(exponential_gaussian(np.ones((4, 3)), 2)).family
    'exponential_gaussian'
    """
    import pymc as pm

    if not isinstance(model, pm.Model):
        return None
    spec, _ = _recognized_spec(model)
    return spec


def get_spec(model, *, families, method):
    """Return the :class:`ModelSpec` of ``model`` or raise a ``TypeError`` naming ``method``.

    Parameters
    ----------
    model : pymc.Model
    families : str or tuple of str
        The families ``method`` can handle.
    method : str
        Name used in the error message (e.g. ``"GibbsNMF"``).
    """
    if isinstance(families, str):
        families = (families,)
    import pymc as pm

    if not isinstance(model, pm.Model):
        raise TypeError(f"{method} needs a pymc.Model, got {type(model).__name__}")
    spec, reason = _recognized_spec(model)
    if spec is None:
        raise TypeError(
            f"{method} needs a model of family {', '.join(families)}; this pm.Model is not "
            f"recognized as one: {reason}"
        )
    if spec.family not in families:
        raise TypeError(
            f"{method} fits {', '.join(families)} models, not a {spec.family!r} model"
        )
    return spec


def _uniform(value):
    """The single value of a constant array, or None when it varies."""
    v = np.asarray(value, dtype=float).ravel()
    return float(v[0]) if v.size and np.all(v == v[0]) else None


def _per_factor(rate, users, roles_axes):
    """True when ``rate`` (GammaRate) is one rate per factor used as ``roles_axes`` says."""
    if len(rate.shape) != 1 or dict(users).keys() != roles_axes.keys():
        return False
    for role, idx in users:
        axis = roles_axes[role]
        expected = np.arange(idx.shape[axis])
        expected = expected[None, :] if axis == 1 else expected[:, None]
        if not np.array_equal(idx, np.broadcast_to(expected, idx.shape)):
            return False
    return _uniform(rate.alpha) is not None and _uniform(rate.beta) is not None


def spec_from_factorization(f):
    """``(ModelSpec, None)`` for a recognized exponential-prior model, else ``(None, reason)``.

    The spec's family is ``"exponential_gaussian"`` (``X ~ A W``) or
    ``"tri_exponential_gaussian"``, with the hyperparameters of those constructors: constant
    scalar exponential rates, or one ARD Gamma rate per factor (shared by ``A[:, k]`` and
    ``W[k, :]``; per column of ``F`` and of ``G``), a Gamma precision ``tau`` or a fixed
    ``sigma``, and no other free variable.
    """
    if f.kind in ("silf", "uniform"):  # our terms (bnmfzoo.models._recognize_terms)
        return spec_from_term(f)
    if f.kind not in ("nmf", "nmtf"):  # e.g. a Bernoulli model (bnmfzoo.inference.binary)
        return None, f"the likelihood {f.likelihood!r} is not Gaussian ({f.family} model)"
    roles = ("A", "W") if f.kind == "nmf" else ("F", "S", "G")
    for role in roles:
        p = f.factors[role]
        if p.family != "exponential":
            return None, (f"the prior of {role} ({p.name!r}) is {p.family}; this method "
                          "implements Exponential priors (constant rates or ARD Gamma rates)")
        if p.transposed:
            return None, f"{role} ({p.name!r}) is stored transposed"
    if f.noise.kind == "other":
        return None, (f"the noise sd depends on {list(f.noise.depends_on)}; this method needs "
                      "tau ~ Gamma or a fixed sigma")
    reason = exact_gibbs_only(f)
    if reason is not None:
        return None, reason
    if f.others:
        return None, f"the model has further free variables {list(f.others)}"
    if f.imputed is not None:
        return None, (f"the model imputes the likelihood's missing entries ({f.imputed.name!r}, "
                      "PyMC's automatic imputation of NaN data)")
    hyper = {"alpha_tau": f.noise.alpha if f.noise.kind == "precision" else 1.0,
             "beta_tau": f.noise.beta if f.noise.kind == "precision" else 1.0,
             "sigma": f.noise.sigma, "ard": bool(f.rates), "alpha0": 1.0, "beta0": 1.0}
    # (a dict while it is assembled; the spec holds a frozen GaussianHyper)
    var_names = {role: f.factors[role].name for role in roles}
    var_names["tau"] = f.noise.name
    ard_axes = {"A": 1, "W": 0} if f.kind == "nmf" else None
    if f.kind == "nmf":
        if f.rates:
            rate = next(iter(f.rates.values()))
            if len(f.rates) != 1 or not _per_factor(rate, rate.users, ard_axes):
                return None, ("the exponential rates are Gamma variables, but not one rate per "
                              "factor shared by A[:, k] and W[k, :]")
            hyper.update(alpha0=_uniform(rate.alpha), beta0=_uniform(rate.beta),
                         lambda_A=None, lambda_W=None)
            var_names["lambda_"] = rate.name
        else:
            var_names["lambda_"] = None
        ard_roles = ()
    else:
        ard_roles = ("F", "G") if f.rates else ()
        if f.rates:
            rF = f.rates.get(f.factors["F"].rate)
            rG = f.rates.get(f.factors["G"].rate)
            ok = (len(f.rates) == 2 and rF is not None and rG is not None
                  and _per_factor(rF, rF.users, {"F": 1}) and _per_factor(rG, rG.users, {"G": 1})
                  and _uniform(rF.alpha) == _uniform(rG.alpha)
                  and _uniform(rF.beta) == _uniform(rG.beta))
            if not ok:
                return None, ("the exponential rates are Gamma variables, but not one rate per "
                              "column of F and of G with the same prior")
            hyper.update(alpha0=_uniform(rF.alpha), beta0=_uniform(rF.beta), lambda_F=None,
                         lambda_G=None)
        var_names["lambda_F"] = f.factors["F"].rate
        var_names["lambda_G"] = f.factors["G"].rate
    for role in roles:
        p = f.factors[role]
        if (f.kind == "nmf" and f.rates) or role in ard_roles:
            continue
        lam = p.params["lam"]
        value = _uniform(lam.value) if lam.constant else None
        if value is None:
            return None, (f"the exponential rate of {role} is not one constant (per-entry "
                          "rates need GibbsNMF)")
        hyper[f"lambda_{role}"] = value
    family = "exponential_gaussian" if f.kind == "nmf" else "tri_exponential_gaussian"
    spec = ModelSpec(family=family, X=f.X, mask=f.mask, rank=f.rank, hyper=GaussianHyper(**hyper),
                     var_names=var_names, entries=f.entries if f.on_demand else None)
    return spec, None


def exact_gibbs_only(f):
    """Why ``f`` needs GibbsNMF's weighted sweep (None when it does not).

    Gamma factor priors, a noise precision per row or per column and Student-t noise are
    sampled by :class:`~bnmfzoo.inference.GibbsNMF`
    (:mod:`bnmfzoo.inference.gaussian.priors._weighted_core`) only; the constructors' spec,
    variational Bayes, ICM and the tri-factorization steps refuse them with this reason.
    """
    gamma = [r for r, p in f.factors.items() if p.family == "gamma"]
    if gamma:
        return (f"the prior of {', '.join(gamma)} is Gamma; only GibbsNMF samples Gamma factor "
                "priors (exact draws of their log-concave conditionals)")
    if f.noise.kind in ("row_precision", "col_precision"):
        axis = "row" if f.noise.kind == "row_precision" else "column"
        return (f"the noise precision {f.noise.name!r} is one per {axis}; only GibbsNMF samples "
                "per-row or per-column precisions")
    if f.noise.student:
        return ("the likelihood is Student-t; only GibbsNMF samples it (through its normal "
                "scale mixture)")
    return None


def spec_from_model(model):
    """:func:`spec_from_factorization` of the recognized ``model``; raises ``TypeError``."""
    from bnmfzoo.models._recognize import recognize

    spec, reason = spec_from_factorization(recognize(model))
    if spec is None:
        raise TypeError(reason)
    return spec


def _recognized_spec(model):
    from bnmfzoo.models._recognize import try_recognize

    f, reason = try_recognize(model)
    if f is None:
        return None, reason
    if getattr(f, "kind", None) == "bernoulli":  # bnmfzoo.models._recognize_binary
        return f.spec()
    return spec_from_factorization(f)


def spec_from_term(f):
    """``(ModelSpec, None)`` of a recognized SILF or uniform-noise model, else ``(None, reason)``.

    The family is the constructor's (``"silf"``, ``"uniform_noise"``) when the priors are its:
    column-Dirichlet ``A`` and a constant exponential rate of ``W`` (SILF,
    :func:`bnmfzoo.models.silf`); constant exponential rates of ``A`` and ``W`` (uniform noise,
    :func:`bnmfzoo.models.uniform_noise`, what ``fit_rrt`` and ``fit_npvi`` need). Other priors
    are recognized (:func:`bnmfzoo.models.recognize`) but give no spec; the particle methods
    use the recognized data and the model's own density.
    """
    if f.others:
        return None, f"the model has further free variables {list(f.others)}"
    if f.kind == "silf" and not (f.simplex_columns and f.lambda_W is not None):
        return None, ("the SILF model's priors are not silf()'s (A with Dirichlet columns, "
                      "W ~ Exponential with one constant rate)")
    if f.kind == "uniform" and (f.lambda_A is None or f.lambda_W is None):
        return None, ("the uniform-noise model's priors are not Exponential with one constant "
                      "rate each on A and W")
    if f.kind == "silf":
        hyper = SilfHyper(epsilon=f.epsilon, beta=f.beta, C=f.C, objective=f.objective,
                          lambda_=f.lambda_W, alpha=f.alpha)
    else:
        hyper = UniformHyper(epsilon=f.epsilon, lambda_A=f.lambda_A, lambda_W=f.lambda_W)
    return ModelSpec(family=f.family, X=f.X, mask=f.mask, rank=f.rank, hyper=hyper,
                     var_names=f.var_names), None
