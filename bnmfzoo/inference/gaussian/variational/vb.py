"""Mean-field variational Bayes for Gaussian NMF and NMTF (Brouwer, Frellsen & Lió 2017).

q(theta) is a product of truncated normals (one per factor entry), a Gamma for the noise
precision and Gammas for the ARD rates. Coordinate ascent updates one column (one element of
S) at a time and refreshes its moments at once, so the ELBO never decreases. Each sweep costs
O(|observed| x rank) through a sparse index of the observed entries.
"""

import time

import numpy as np

from bnmfzoo._base.progress import progress
from bnmfzoo._base.rng import as_generator
from bnmfzoo._base.validation import check_int, check_number
from bnmfzoo.inference.gaussian.variational import _vb_core as core
from bnmfzoo.inference.gaussian.variational import _vb_glue as glue
from bnmfzoo.inference.gaussian.variational import _vb_noise_sd as noise


def _update_ard(state):
    for key, (a, b) in core.ard_posterior(state).items():
        state.lam_ab[key] = (a, b)
        state.lam_E[key] = a / b
        state.lam_logE[key] = core.gamma_elog(a, b)


def _update_rates(state):
    """Mean-field update of every Gamma rate variable (Problem.rates).

    ``q(lambda_m) = Gamma(alpha_m + n_m, beta_m + sum of E[x] over its n_m entries)``.
    """
    for term in state.problem.rates:
        a, b = term.posterior(state.E)
        state.set_rate(term, a / b, core.gamma_elog(a, b), (a, b))


def _update_tau(state, sse):
    p = state.problem
    if p.noise_sd is not None:  # sigma ~ HalfNormal / HalfCauchy: q(tau) GIG or Gamma
        if getattr(state, "noise_q", None) is None:
            state.noise_q = noise.NoiseSDQ(*p.noise_sd[:2], p.obs.n)
        state.noise_q.update(sse)
        state.tau, state.logtau = state.noise_q.tau, state.noise_q.logtau
        return
    if p.tau_fixed is not None:
        return
    a, b = core.tau_posterior(state, sse)
    state.tau_ab = (a, b)
    state.tau = a / b
    state.logtau = float(core.gamma_elog(a, b))


def log_joint_terms(state, sse, *, entropy):
    """E_q[log p(X, theta)] (+ the entropy of q when ``entropy``): the ELBO, or the log joint.

    With zero factor variances and point values for tau and lambda (``entropy=False``) this
    is the log joint density ``log p(X, theta)`` that ICM maximizes.
    """
    p = state.problem
    n = p.obs.n
    total = 0.5 * n * (state.logtau - core.LOG_2PI) - 0.5 * state.tau * sse
    if p.noise_sd is not None:  # E[log p(tau)] + H(q(tau)), or log p(sigma) at the point
        total += (state.noise_q.elbo_terms() if entropy
                  else noise.sd_logprior(*p.noise_sd[:2], state.tau**-0.5))
    elif p.tau_fixed is None:
        total += core.gamma_logprior(p.alpha_tau, p.beta_tau, state.logtau, state.tau)
        if entropy:
            total += core.gamma_entropy(*state.tau_ab)
    for role in core.factor_roles(p):
        E = state.E[role]
        if p.prior is not None:  # per-entry prior terms: E[logc - q x^2 / 2 + lin x]
            t = p.prior[role]
            if role in state.entry_lam:  # Exponential(lambda), lambda a Gamma variable
                logc, lin = state.entry_loglam[role], -state.entry_lam[role]
            else:
                logc, lin = t["logc"], t["lin"]
            total += float(np.sum(logc - 0.5 * t["q"] * state.second(role) + lin * E))
        elif p.ard and role != "S":
            key = "AW" if role in ("A", "W") else role
            total += float(np.sum(state.lam_logE[key] * E.shape[1]
                                  - state.lam_E[key] * E.sum(axis=1)))
        else:
            lam = p.lam[role]
            total += float(np.sum(np.log(lam) - lam * E))
        if entropy:
            total += float(np.sum(core.tn_entropy(state.mu[role], state.prec[role])))
    for term in p.rates:  # E[log Gamma(lambda | alpha, beta)] (+ the entropy of q(lambda))
        total += float(np.sum(core.gamma_logprior(term.alpha, term.beta,
                                                  state.rate_logE[term.name],
                                                  state.rate_E[term.name])))
        if entropy:
            total += float(np.sum(core.gamma_entropy(*state.rate_ab[term.name])))
    if p.ard:
        for key in state.lam_E:
            total += float(np.sum(core.gamma_logprior(p.alpha0, p.beta0, state.lam_logE[key],
                                                      state.lam_E[key])))
            if entropy:
                total += float(np.sum(core.gamma_entropy(*state.lam_ab[key])))
    return float(total)


def elbo(state, sse=None):
    """Evidence lower bound of the current q (``sse`` = expected sum of squared errors)."""
    if sse is None:
        sse = state.expected_sse()
    return log_joint_terms(state, sse, entropy=True)


def fit_vb(
    model,
    *,
    max_iter=200,
    tol=None,
    init=None,
    random_seed=None,
    n_draws=1000,
    progressbar=True,
):
    """Fit a Gaussian NMF / NMTF model by mean-field variational Bayes (Brouwer et al. 2017).

    Works for models from :func:`bnmfzoo.models.exponential_gaussian` and
    :func:`bnmfzoo.models.tri_exponential_gaussian`, with or without ARD and with a learned
    or fixed noise level, and for any ``pm.Model`` recognized as the same factorization
    (:func:`bnmfzoo.models.recognize`) whose factor priors are ``Exponential`` (constant
    rates of any shape), ``HalfNormal(sigma)`` or ``TruncatedNormal(mu, sigma, lower=0)``
    with constant parameters: each such prior adds ``q = 1 / sigma^2`` to an entry's
    precision and ``mu q`` (or ``-lam``) to its numerator, so q stays a truncated normal.
    Exponential rates may also be elements of ``Gamma(alpha, beta)`` random variables shared in
    any pattern :func:`~bnmfzoo.models.recognize` accepts (scalar, per row or column, per
    factor shared by ``A[:, k]`` and ``W[k, :]``, on one factor or several): each gets
    ``q(lambda_m) = Gamma(alpha_m + n_m, beta_m + sum of E[x] over its n_m entries)``, the
    factor updates use ``E[lambda]``, and the ELBO includes their terms. Its draws and
    ``<name>_alpha`` / ``<name>_beta`` come back under the variable's name.
    The noise may be ``tau ~ Gamma``, a fixed sd, or a scalar ``sigma ~ HalfNormal(s)`` /
    ``HalfCauchy(s)`` with a constant scale used only as the likelihood's sd (the noise
    :class:`~bnmfzoo.inference.GibbsNoiseSD` samples): then ``q(tau = sigma^-2)`` is a
    generalized inverse Gaussian (HalfNormal) or, through the scale-mixture augmentation of the
    HalfCauchy, a Gamma with a Gamma-distributed auxiliary rate
    (:mod:`~bnmfzoo.inference.gaussian.variational._vb_noise_sd`); draws of ``sigma`` come back
    under
    its name, and the variational group holds ``<sigma>_tau_gig_p/_a/_b`` or
    ``<sigma>_tau_alpha/_beta`` and ``<sigma>_aux_alpha/_beta``.
    Missing entries never enter the updates.

    Parameters
    ----------
    model : pymc.Model
        A model built by ``exponential_gaussian`` or ``tri_exponential_gaussian``.
    max_iter : int, default 200
        Number of coordinate-ascent sweeps (the paper's GDSC setting).
    tol : float, optional
        Stop early when the relative ELBO change of a sweep falls below ``tol``. The paper
        runs a fixed number of sweeps (``tol=None``).
    init : {"random", "exp", "kmeans"} or dict, optional
        Initial means of the truncated normals (their precisions start at 1). "random" draws
        from the prior, "exp" uses the prior means, "kmeans" (NMTF) uses K-means cluster
        indicators for F and G. Default: "random" for NMF, "kmeans" for NMTF (the paper's).
    random_seed : int or numpy.random.Generator, optional
        Seeds the initialisation and the posterior draws.
    n_draws : int, default 1000
        Number of draws from q stored in the ``posterior`` group. They take
        ``8 n_draws (D + N) R`` bytes (5.8 GB for 1000 draws at 72,000 x 10,000 and R = 10:
        use fewer on large data), and the ``mse`` of each costs O(observed x R).
    progressbar : bool, default True
        Show a progress bar over sweeps.

    Returns
    -------
    xarray.DataTree
        ``posterior``: draws from q (chain=1, draw=n_draws) of the factors, ``tau`` and the ARD
        rates; ``sample_stats``: ``mse``, the training MSE of each draw's product;
        ``variational``: ``<factor>_mu`` / ``<factor>_tau`` (truncated-normal parameters),
        ``<factor>_mean`` / ``<factor>_var`` (their moments), ``tau_alpha`` / ``tau_beta``,
        ``<lambda>_alpha`` / ``<lambda>_beta``, and per-sweep traces ``elbo``, ``mse``
        (training MSE of the mean prediction) and ``time`` (cumulative seconds), dim
        ``iteration``; ``observed_data``: ``X`` (row, col), or when fewer than an eighth of
        the entries are observed ``X`` over the observed entries (dim ``X_obs``, with
        ``row`` / ``col`` labels and ``row_index`` / ``col_index`` coordinates; no dense
        D x N array anywhere). Root attrs ``method="vb"``, ``model``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> X = np.random.default_rng(0).exponential(size=(20, 15))
    >>> dt = fit_vb(exponential_gaussian(X, rank=2), max_iter=20, n_draws=10,
    ...             progressbar=False)
    >>> bool((np.diff(dt["variational"]["elbo"]) >= 0).all())
    True
    """
    problem = glue.problem_from_model(model, method="fit_vb")
    max_iter = core.check_iterations(max_iter)
    n_draws = check_int(n_draws, name="n_draws")
    if tol is not None:
        tol = check_number(tol, name="tol (None or a number)", minimum=0.0, strict=False)
    rng = as_generator(random_seed)
    if init is None:
        init = "kmeans" if problem.tri else "random"
    mus = core.init_means(problem, init, rng)
    state = core.MomentState(problem, mus)
    for role, mu in mus.items():
        state.mu[role] = mu.copy()
        state.prec[role] = np.ones_like(mu)
        state.E[role], state.V[role] = core.tn_moments(mu, state.prec[role])
    state.refresh()
    _update_tau(state, state.expected_sse())

    start = time.perf_counter()
    elbos, mses, times = [], [], []
    for _ in progress(range(max_iter), desc="VB", progressbar=progressbar):
        if problem.ard:
            _update_ard(state)
        _update_rates(state)
        core.sweep(state, core.tn_moments_rule)
        sse = state.expected_sse()
        _update_tau(state, sse)
        elbos.append(elbo(state, sse))
        mses.append(core.training_mse(state))
        times.append(time.perf_counter() - start)
        if tol is not None and len(elbos) > 1:
            if abs(elbos[-1] - elbos[-2]) <= tol * abs(elbos[-1]):
                break

    draws = _draw_q(state, rng, n_draws)
    _, draw_mse = core.draw_predictions(problem, draws)
    variational = _variational_group(state)
    variational["elbo"] = ("iteration", np.asarray(elbos))
    variational["mse"] = ("iteration", np.asarray(mses))
    variational["time"] = ("iteration", np.asarray(times))
    return glue.build_result(
        problem, draws, method="vb", sample_stats={"mse": draw_mse},
        groups={"variational": variational},
        attrs={"init": init if isinstance(init, str) else "given", "n_iter": len(elbos)},
    )


def _draw_q(state, rng, n_draws):
    p = state.problem
    draws = {}
    for role in core.factor_roles(p):
        mu, prec = state.mu[role], state.prec[role]
        x = core.tn_sample(mu, prec, rng, size=(n_draws, *mu.shape))
        if role in ("A", "F", "G"):
            x = np.swapaxes(x, 1, 2)
        draws[role] = x[None]
    if p.noise_sd is not None:
        draws["sd"] = state.noise_q.draw_sd(rng, n_draws)[None]
    elif p.tau_fixed is None:
        a, b = state.tau_ab
        draws["tau"] = rng.gamma(a, 1.0 / b, size=(1, n_draws))
    for key, (a, b) in state.lam_ab.items():
        role = "lambda_" if key == "AW" else f"lambda_{key}"
        draws[role] = rng.gamma(a, 1.0 / b, size=(1, n_draws, a.size))
    for term in p.rates:
        a, b = state.rate_ab[term.name]
        x = rng.gamma(a, 1.0 / b, size=(n_draws, a.size))
        draws[f"rate:{term.name}"] = x.reshape(1, n_draws, *term.shape)
    return draws


def _variational_group(state):
    p = state.problem
    out = {}
    for role in core.factor_roles(p):
        name = glue.var_name(p, role)
        dims = glue.ROLE_DIMS[role]
        for suffix, arr in (("mu", state.mu[role]), ("tau", state.prec[role]),
                            ("mean", state.E[role]), ("var", state.V[role])):
            out[f"{name}_{suffix}"] = (dims, core.to_public(role, arr))
    if p.noise_sd is not None:
        for key, value in state.noise_q.variational(p.noise_sd[2]).items():
            out[key] = ((), float(value))
    elif p.tau_fixed is None:
        out["tau_alpha"] = ((), float(state.tau_ab[0]))
        out["tau_beta"] = ((), float(state.tau_ab[1]))
    for key, (a, b) in state.lam_ab.items():
        role = "lambda_" if key == "AW" else f"lambda_{key}"
        name = glue.var_name(p, role)
        out[f"{name}_alpha"] = (glue.ROLE_DIMS[role], a)
        out[f"{name}_beta"] = (glue.ROLE_DIMS[role], b)
    for term in p.rates:
        a, b = state.rate_ab[term.name]
        dims = glue.role_dims(p, f"rate:{term.name}")
        out[f"{term.name}_alpha"] = (dims, a.reshape(term.shape))
        out[f"{term.name}_beta"] = (dims, b.reshape(term.shape))
    return out
