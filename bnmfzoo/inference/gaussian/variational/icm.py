"""Iterated conditional modes for Gaussian NMF and NMTF (Brouwer, Frellsen & Lió 2017, §2.3).

The Gibbs sweep with every draw replaced by the mode of its conditional: max(mu, floor) for a
truncated-normal column (the authors floor every factor entry at 0.1 so that whole columns do
not collapse to zero), (a - 1) / b for the Gamma noise precision and ARD rates. Each update
maximizes the log joint density over its block (within the floor), so the objective never
decreases. Each sweep costs O(|observed| x rank).
"""

import time

import numpy as np

from bnmfzoo._base.progress import progress
from bnmfzoo._base.rng import as_generator
from bnmfzoo._base.validation import check_int, check_number
from bnmfzoo.inference.gaussian.variational import _vb_core as core
from bnmfzoo.inference.gaussian.variational import _vb_glue as glue
from bnmfzoo.inference.gaussian.variational._vb_noise_sd import sd_mode
from bnmfzoo.inference.gaussian.variational.vb import log_joint_terms


def _mode_rule(floor):
    def rule(mu, prec):
        if np.ndim(mu) == 0:
            return max(mu, floor), 0.0
        return np.maximum(mu, floor), np.zeros_like(mu)

    return rule


def _set_tau_mode(state):
    p = state.problem
    if p.noise_sd is not None:  # sigma ~ HalfNormal / HalfCauchy: closed-form mode in sigma
        sigma = sd_mode(*p.noise_sd[:2], p.obs.n, state.expected_sse())
        state.tau = sigma**-2
        state.logtau = float(np.log(state.tau))
        return
    if p.tau_fixed is not None:
        return
    a, b = core.tau_posterior(state, state.expected_sse())
    state.tau = (a - 1.0) / b
    state.logtau = float(np.log(state.tau))


def _set_ard_mode(state):
    for key, (a, b) in core.ard_posterior(state).items():
        state.lam_E[key] = (a - 1.0) / b
        state.lam_logE[key] = np.log(state.lam_E[key])


def _set_rate_modes(state):
    """Each Gamma rate variable at the mode of its conditional, (a - 1) / b."""
    for term in state.problem.rates:
        a, b = term.posterior(state.E)
        mode = (a - 1.0) / b
        with np.errstate(divide="ignore"):  # a - 1 <= 0 only for an unused element, alpha <= 1
            state.set_rate(term, mode, np.log(mode))


def log_joint(state):
    """Log joint density log p(X, theta) at the current point (the ICM objective)."""
    return log_joint_terms(state, state.expected_sse(), entropy=False)


def fit_icm(
    model,
    *,
    max_iter=500,
    init=None,
    floor=0.1,
    burn_in=None,
    thinning=1,
    random_seed=None,
    progressbar=True,
):
    """Fit a Gaussian NMF / NMTF model by iterated conditional modes (MAP estimate).

    Parameters
    ----------
    model : pymc.Model
        A model built by ``exponential_gaussian`` or ``tri_exponential_gaussian`` (with or
        without ARD, learned or fixed noise), or any ``pm.Model`` recognized as the same
        factorization with constant ``Exponential``, ``HalfNormal`` or
        ``TruncatedNormal(lower=0)`` factor priors (the conditional of each entry is then a
        truncated normal, whose mode is used), or exponential rates that are elements of
        ``Gamma(alpha, beta)`` random variables (set to their conditional mode
        ``(alpha + n - 1) / (beta + sum of the n entries)`` before each sweep). The noise may
        be ``tau ~ Gamma``, a fixed sd, or a scalar ``sigma ~ HalfNormal(s)`` /
        ``HalfCauchy(s)`` with a constant scale (set after each sweep to the mode in
        ``sigma`` of its conditional, a closed form; the posterior holds ``sigma``).
    max_iter : int, default 500
        Number of sweeps (the paper's GDSC setting).
    init : {"random", "exp", "kmeans"} or dict, optional
        "random" draws from the prior, "exp" uses the prior means, "kmeans" (NMTF) sets F and
        G to K-means cluster indicators + 0.2. Default: "random" for NMF, "kmeans" for NMTF.
        Initial values are raised to ``floor``.
    floor : float, default 0.1
        Every factor entry is kept at or above ``floor`` (the authors' ``MINIMUM_TN``);
        0 gives plain ICM.
    burn_in : int, optional
        If given, the ``posterior`` group holds the iterates ``burn_in, burn_in + thinning,
        ...`` as draws (the paper averages them for predictions); otherwise only the final
        point (draw=1).
    thinning : int, default 1
        Thinning of the stored iterates when ``burn_in`` is given.
    random_seed : int or numpy.random.Generator, optional
        Seeds the initialisation.
    progressbar : bool, default True
        Show a progress bar over sweeps.

    Returns
    -------
    xarray.DataTree
        ``posterior`` (chain=1): the factors, ``tau`` and ARD rates at the final point (or the
        kept iterates); ``sample_stats``: ``mse`` of each stored draw; ``diagnostics``:
        per-sweep traces ``mse`` (training MSE), ``objective`` (log joint density) and
        ``time`` (cumulative seconds), dim ``iteration``; ``observed_data``: ``X``. Root
        attrs ``method="icm"``, ``model``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> X = np.random.default_rng(0).exponential(size=(20, 15))
    >>> dt = fit_icm(exponential_gaussian(X, rank=2), max_iter=50,
    ...              progressbar=False)
    >>> dt["posterior"]["A"].shape
    (1, 1, 20, 2)
    """
    problem = glue.problem_from_model(model, method="fit_icm")
    max_iter = core.check_iterations(max_iter)
    floor = check_number(floor, name="floor", minimum=0.0, strict=False)
    thinning = core.check_iterations(thinning, "thinning")
    if burn_in is not None:
        burn_in = check_int(burn_in, name="burn_in", minimum=0)
        if burn_in >= max_iter:
            raise ValueError(f"burn_in must be an integer in [0, max_iter) = [0, {max_iter}), "
                             f"got {burn_in}")
    rng = as_generator(random_seed)
    if init is None:
        init = "kmeans" if problem.tri else "random"
    values = core.init_means(problem, init, rng, kmeans_offset=0.2)
    values = {role: np.maximum(v, floor) for role, v in values.items()}
    state = core.MomentState(problem, values)
    _set_tau_mode(state)
    rule = _mode_rule(floor)

    kept = []
    start = time.perf_counter()
    mses, objective, times = [], [], []
    for it in progress(range(max_iter), desc="ICM", progressbar=progressbar):
        if problem.ard:
            _set_ard_mode(state)
        _set_rate_modes(state)
        with np.errstate(divide="ignore"):  # a column of zeros (floor=0): mode -> floor
            core.sweep(state, rule)
        _set_tau_mode(state)
        mses.append(core.training_mse(state))
        times.append(time.perf_counter() - start)
        objective.append(log_joint(state))
        if burn_in is not None and it >= burn_in and (it - burn_in) % thinning == 0:
            kept.append(_point(state))
    if not kept:
        kept.append(_point(state))
    draws = {role: np.stack([k[role] for k in kept])[None] for role in kept[0]}
    _, draw_mse = core.draw_predictions(problem, draws)
    diagnostics = {
        "mse": ("iteration", np.asarray(mses)),
        "objective": ("iteration", np.asarray(objective)),
        "time": ("iteration", np.asarray(times)),
    }
    return glue.build_result(
        problem, draws, method="icm", sample_stats={"mse": draw_mse},
        groups={"diagnostics": diagnostics},
        attrs={"init": init if isinstance(init, str) else "given", "floor": float(floor)},
    )


def _point(state):
    p = state.problem
    out = {role: core.to_public(role, state.E[role]).copy() for role in core.factor_roles(p)}
    if p.noise_sd is not None:
        out["sd"] = np.asarray(state.tau**-0.5, dtype=float)
    elif p.tau_fixed is None:
        out["tau"] = np.asarray(state.tau, dtype=float)
    for key, lam in state.lam_E.items():
        out["lambda_" if key == "AW" else f"lambda_{key}"] = lam.copy()
    for term in p.rates:
        out[f"rate:{term.name}"] = state.rate_E[term.name].reshape(term.shape).copy()
    return out
