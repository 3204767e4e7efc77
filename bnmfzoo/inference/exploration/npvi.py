"""Nonparametric variational inference for BNMF (Gershman et al. 2012; Masood & Doshi-Velez 2016).

The variational family is a weighted mixture of isotropic Gaussians over ``theta = vec(A, W)``:
``q(theta) = sum_m w_m N(theta; mu_m, s2_m I)``. Its ELBO is approximated as in the papers:

* entropy: the Jensen lower bound (weighted form of Gershman's eq. 2)
  ``H_lb = -sum_m w_m log sum_j w_j N(mu_m; mu_j, (s2_m + s2_j) I)``, computed in log space;
* expectation: the second-order expansion ``sum_m w_m [f(mu_m) + s2_m / 2 tr H(mu_m)]`` with the
  exact trace of the Hessian of the Gaussian log joint (zero for the uniform model, whose
  expectation is the zeroth-order ``sum_m w_m f(mu_m)``).

Three front ends share this arithmetic:

* :class:`OnlineNPVI` (ONVI): candidates arrive one at a time (from RRT, Gibbs or NUTS). The
  candidate's variance and weight are optimised with every earlier component fixed and earlier
  weights scaled by ``1 - w``; it is accepted only if the ELBO rises by at least a threshold,
  and then earlier components are pruned if dropping them costs less than the pruning
  threshold (Gershman et al.'s ``1e-4``).
* :func:`fit_nvi`: Gershman's fixed-``M`` NVI (the NVI-4 / NVI-10 baselines): alternate L-BFGS-B
  updates of each mean (first-order objective) and of each variance (second-order objective).
* :func:`onvi_from_draws`: MCMC draws fed through ONVI (Gibbs+ONVI, HMC/NUTS+ONVI).

The layers live in their own modules: the log joint and its scale optimum in
:mod:`~bnmfzoo.inference.exploration._target`, the mixture-ELBO arithmetic in
:mod:`~bnmfzoo.inference.exploration._mixture`, the online object in
:mod:`~bnmfzoo.inference.exploration._online`; this module holds the fitters.
"""

import numpy as np
from scipy.optimize import minimize, minimize_scalar

from bnmfzoo._base.progress import progress
from bnmfzoo._base.results import build_datatree, data_coords
from bnmfzoo._base.rng import as_generator
from bnmfzoo._base.validation import check_int, check_number
from bnmfzoo.inference.exploration._mixture import (
    _entropy_grad_means,
    entropy_lower_bound,
    mixture_elbo,
)
from bnmfzoo.inference.exploration._online import OnlineNPVI
from bnmfzoo.inference.exploration._target import LogJoint

__all__ = [
    "LogJoint",
    "OnlineNPVI",
    "entropy_lower_bound",
    "mixture_elbo",
    "fit_nvi",
    "onvi_from_draws",
    "mixture_datatree",
    "fit_npvi",
    "fit_onvi",
]


def fit_nvi(target, inits, *, variance=None, tol=1e-4, max_iter=50, lbfgs_iter=50):
    """Gershman et al.'s fixed-M nonparametric VI (uniform weights ``1/M``).

    Alternates, until the ELBO changes by less than ``tol``: for each component, an L-BFGS-B
    update of its mean (bounds ``>= 0``) on the first-order objective ``w f(mu) + H_lb``, then a
    1-D update of its log-variance on the second-order objective (skipped for a fixed
    ``variance``, as the paper does for the uniform model).

    Parameters
    ----------
    target : LogJoint
    inits : list of tuple of numpy.ndarray
        ``M`` starting ``(A, W)`` (random restarts; for the uniform model one feasible solution
        with a tiny jitter, as in the paper).
    variance : float, optional
        Fixed variance for every component (default: the Gaussian closed form for Gaussian
        targets, the Gaussian-surrogate closed form with ``eps^2 / 3`` for uniform ones).
    tol : float
        ELBO change for convergence.
    max_iter, lbfgs_iter : int
        Outer sweeps, and L-BFGS-B iterations per mean update.

    Returns
    -------
    OnlineNPVI
        Holding the ``M`` components (weights ``1/M``) and the ELBO trace per sweep.
    """
    t = target
    M = len(inits)
    means = np.stack([t.vec(np.maximum(A, 0), np.maximum(W, 0)) for A, W in inits])
    if variance is None:
        if t.likelihood == "gaussian":
            s2 = np.array([t.optimal_variance(*t.unvec(m)) for m in means])
        else:
            s2 = np.full(M, t.optimal_variance(*t.unvec(means[0]), sigma2=t.scale**2 / 3.0))
        fixed = t.likelihood != "gaussian"
    else:
        s2 = np.full(M, float(variance))
        fixed = True
    w = np.full(M, 1.0 / M)

    def elbo_of(means, s2):
        f = np.array([t.value(*t.unvec(m)) for m in means])
        tr = np.array([t.trace_hessian(*t.unvec(m)) for m in means])
        sq = np.sum(means**2, axis=1)
        sqd = np.maximum(sq[:, None] + sq[None, :] - 2.0 * means @ means.T, 0.0)
        return mixture_elbo(w, s2, f + 0.5 * s2 * tr, sqd, t.P), f, tr

    trace = [elbo_of(means, s2)[0]]
    for _ in range(max_iter):
        for n in range(M):
            def neg_l1(x, n=n):
                means[n] = x
                fx = t.value(*t.unvec(x))
                if not np.isfinite(fx):
                    return np.inf, np.zeros_like(x)
                gA, gW = t.grad(*t.unvec(x))
                sq = np.sum(means**2, axis=1)
                sqd = np.maximum(sq[:, None] + sq[None, :] - 2.0 * means @ means.T, 0.0)
                H = entropy_lower_bound(w, s2, sqd, t.P)
                gH = _entropy_grad_means(means, w, s2, t.P)[n]
                return -(w[n] * fx + H), -(w[n] * t.vec(gA, gW) + gH)

            x0 = means[n].copy()
            res = minimize(neg_l1, x0, jac=True, method="L-BFGS-B",
                           bounds=[(0.0, None)] * t.P, options={"maxiter": lbfgs_iter})
            means[n] = res.x if res.fun <= neg_l1(x0)[0] else x0
            if not fixed:
                tr_n = t.trace_hessian(*t.unvec(means[n]))
                f_n = t.value(*t.unvec(means[n]))
                sq = np.sum(means**2, axis=1)
                sqd = np.maximum(sq[:, None] + sq[None, :] - 2.0 * means @ means.T, 0.0)

                def neg_l2(ls, n=n, f_n=f_n, tr_n=tr_n, sqd=sqd):
                    v = s2.copy()
                    v[n] = np.exp(ls)
                    e = np.zeros(M)
                    e[n] = w[n] * (f_n + 0.5 * v[n] * tr_n)
                    return -(e[n] + entropy_lower_bound(w, v, sqd, t.P))

                c = np.log(s2[n])
                r = minimize_scalar(neg_l2, bounds=(c - 15.0, c + 15.0), method="bounded")
                s2[n] = np.exp(r.x)
        trace.append(elbo_of(means, s2)[0])
        if abs(trace[-1] - trace[-2]) < tol:
            break
    value, f, tr = elbo_of(means, s2)
    out = OnlineNPVI(t, threshold=0.0, variance=None)
    out.means = means
    out.sqnorm = np.sum(means**2, axis=1)
    out.sqdist = np.maximum(out.sqnorm[:, None] + out.sqnorm[None, :] - 2 * means @ means.T, 0.0)
    out.weights = w.copy()
    out.variances = s2.copy()
    out.fvals = f
    out.trH = tr
    out.expect = f + 0.5 * s2 * tr
    out.elbo_trace = list(trace)
    out.n_processed = out.n_accepted = M
    return out


# --------------------------------------------------------------------------------------------
# MCMC draws through ONVI
# --------------------------------------------------------------------------------------------


def onvi_from_draws(target, A_draws, W_draws, *, threshold=None, variance=None,
                    progressbar=False, prune_threshold=None):
    """Feed MCMC draws (Gibbs, HMC, NUTS) one by one through :class:`OnlineNPVI`.

    Each draw is rescaled first (:meth:`LogJoint.rescale`; AW is unchanged).

    Parameters
    ----------
    target : LogJoint
    A_draws, W_draws : numpy.ndarray
        ``(S, D, R)`` and ``(S, R, N)`` (chains flattened in order).
    threshold, variance
        As for :class:`OnlineNPVI`.
    progressbar : bool
    prune_threshold : float or "reference", optional
        As for :class:`OnlineNPVI`.

    Returns
    -------
    OnlineNPVI
    """
    onvi = OnlineNPVI(target, threshold=threshold, variance=variance,
                      prune_threshold=prune_threshold)
    for s in progress(range(len(A_draws)), desc="ONVI", progressbar=progressbar):
        onvi.propose(*target.rescale(A_draws[s], W_draws[s]))
    return onvi


def mixture_datatree(onvi, X, *, n_draws=500, random_seed=None, method, model_name,
                     diagnostics=None, attrs=None):
    """Package a fitted mixture as a DataTree.

    Draws from the mixture go in ``posterior``, the mixture itself in ``variational``.
    """
    A, W, comp = onvi.sample(check_int(n_draws, name="n_draws"), random_seed=random_seed)
    coords = {**data_coords(X), "factor": np.arange(onvi.target.rank)}
    coords["component"] = np.arange(onvi.n_components)
    groups = {"variational": onvi.to_dataset()}
    if diagnostics:
        groups["diagnostics"] = diagnostics
    return build_datatree(
        {"A": A[None], "W": W[None]},
        sample_stats={"component": comp[None]},
        observed_data={"X": np.asarray(X.values, dtype=float)},
        coords=coords,
        groups=groups,
        attrs={"method": method, "model": model_name, "elbo": onvi.elbo(),
               "n_components": onvi.n_components, **(attrs or {})},
    )


# --------------------------------------------------------------------------------------------
# model-level front ends returning DataTrees
# --------------------------------------------------------------------------------------------


def fit_npvi(model, *, n_components=4, restarts=None, max_iter=50, tol=1e-4, n_draws=500,
             random_seed=None, progressbar=True):
    """Fixed-M nonparametric VI (Gershman et al. 2012): the NVI-4 / NVI-10 baselines.

    Parameters
    ----------
    model : pymc.Model
        A :func:`bnmfzoo.models.uniform_noise` or fixed-sigma
        :func:`bnmfzoo.models.exponential_gaussian` model.
    n_components : int
        M (the paper's baselines use 4 and 10).
    restarts : list of tuple of numpy.ndarray, optional
        Starting ``(A, W)``. Default: ``M`` Lin restarts (Gaussian) or, for the uniform model,
        one feasible Lin solution with a 1e-9 relative jitter per component (the paper: "a
        single feasible initialization").
    max_iter, tol : int, float
        Sweeps and ELBO-change convergence criterion.
    n_draws : int
        Draws from the fitted mixture stored in ``posterior``.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool

    Returns
    -------
    xarray.DataTree
        As :func:`~bnmfzoo.inference.fit_rrt`, with ``method="npvi"``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> from bnmfzoo.inference.exploration.npvi import fit_npvi
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((8, 2)) @ rng.random((2, 6)) + 0.01 * rng.random((8, 6))
    >>> dt = fit_npvi(exponential_gaussian(X, 2, sigma=0.01), n_components=2, max_iter=2,
    ...               random_seed=0, progressbar=False)
    >>> dt["variational"].sizes["component"]
    2
    """
    from bnmfzoo._base.nmf_solvers import lin_pg_nmf
    from bnmfzoo._base.rng import spawn_seeds
    from bnmfzoo.models._spec import get_spec

    spec = get_spec(model, families=("uniform_noise", "exponential_gaussian"), method="fit_npvi")
    target = LogJoint.from_model(model, method="fit_npvi")
    n_components = check_int(n_components, name="n_components")
    max_iter, n_draws = check_int(max_iter, name="max_iter"), check_int(n_draws, name="n_draws")
    tol = check_number(tol, name="tol", minimum=0.0, strict=False)
    rng = as_generator(random_seed)
    s_init, s_draw = spawn_seeds(rng, 2)
    if restarts is None:
        n_lin = n_components if target.likelihood == "gaussian" else 1
        restarts = [lin_pg_nmf(spec.X_values, spec.rank, mask=spec.mask, random_seed=s)
                    for s in progress(spawn_seeds(s_init, n_lin), desc="Lin restarts",
                                      progressbar=progressbar)]
    restarts = list(restarts)
    if target.likelihood == "uniform":
        A0, W0 = target.rescale(*restarts[0])
        jit = as_generator(s_init)
        restarts = [(A0 * (1 + 1e-9 * jit.standard_normal(A0.shape)), W0)
                    for _ in range(n_components)]
    inits = (restarts * n_components)[:n_components]
    nvi = fit_nvi(target, inits, max_iter=max_iter, tol=tol)
    return mixture_datatree(nvi, spec.X, n_draws=n_draws, random_seed=s_draw, method="npvi",
                            model_name=spec.family, attrs={"likelihood": target.likelihood})


def fit_onvi(model, draws, *, threshold=None, variance=None, n_draws=500, random_seed=None,
             progressbar=True, prune_threshold=None):
    """Feed MCMC draws (Gibbs, NUTS, ...) through online NVI (the paper's Gibbs/HMC+ONVI).

    Parameters
    ----------
    model : pymc.Model
        A :func:`bnmfzoo.models.uniform_noise` or fixed-sigma
        :func:`bnmfzoo.models.exponential_gaussian` model.
    draws : xarray.DataTree or tuple of numpy.ndarray
        A result of ``pm.sample`` (its ``posterior`` ``A`` and ``W``; chains are fed one after
        the other) or ``(A_draws, W_draws)`` shaped ``(S, D, R)``, ``(S, R, N)``.
    threshold, variance
        See :class:`OnlineNPVI`.
    n_draws : int
        Draws from the fitted mixture stored in ``posterior``.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool
    prune_threshold : float or "reference", optional
        See :class:`OnlineNPVI`.

    Returns
    -------
    xarray.DataTree
        As :func:`~bnmfzoo.inference.fit_rrt`, with ``method="onvi"``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> from bnmfzoo.inference.exploration.npvi import fit_onvi
    >>> rng = np.random.default_rng(0)
    >>> A, W = rng.random((8, 2)), rng.random((2, 6))
    >>> model = exponential_gaussian(A @ W, 2, sigma=0.01)
    >>> dt = fit_onvi(model, (A[None], W[None]), progressbar=False)
    >>> int(dt.attrs["n_components"])
    1
    """
    from bnmfzoo.models._spec import get_spec

    spec = get_spec(model, families=("uniform_noise", "exponential_gaussian"), method="fit_onvi")
    target = LogJoint.from_model(model, method="fit_onvi")
    if isinstance(draws, tuple):
        A_draws, W_draws = (np.asarray(d, dtype=float) for d in draws)
    else:
        post = draws["posterior"]
        A_draws = np.asarray(post[spec.var_names["A"]].transpose("chain", "draw", ...).values)
        W_draws = np.asarray(post[spec.var_names["W"]].transpose("chain", "draw", ...).values)
        A_draws = A_draws.reshape((-1,) + A_draws.shape[2:])
        W_draws = W_draws.reshape((-1,) + W_draws.shape[2:])
    D, N = target.shape
    R = target.rank
    if A_draws.ndim != 3 or A_draws.shape[1:] != (D, R) or W_draws.shape != (
            A_draws.shape[0], R, N):
        raise ValueError(f"draws must be A (S, {D}, {R}) and W (S, {R}, {N}); got "
                         f"{A_draws.shape} and {W_draws.shape}")
    onvi = onvi_from_draws(target, A_draws, W_draws, threshold=threshold, variance=variance,
                           progressbar=progressbar, prune_threshold=prune_threshold)
    return mixture_datatree(onvi, spec.X, n_draws=n_draws, random_seed=random_seed,
                            method="onvi", model_name=spec.family,
                            attrs={"likelihood": target.likelihood})
