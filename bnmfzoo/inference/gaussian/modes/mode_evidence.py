"""Mode masses by annealed importance sampling: an estimate independent of the chains' crossings.

:func:`bnmfzoo.diagnostics.modes` estimates a mode's mass by the fraction of draws of chains
that cross between the modes (replica exchange). :func:`mode_evidence` checks it without any
chain crossing anything: for every mode ``k`` that ``modes`` found, a normalized mean-field
reference ``q_k`` (independent truncated normals on the entries of ``A`` and ``W``, a Gamma on
``tau``; :class:`~bnmfzoo.inference.gaussian.modes._mode_jump.Reference`) is fitted to the
mode's aligned draws, and ``n_runs`` annealed importance sampling runs (Neal 2001, "Annealed
importance sampling", Statist. Comput. 11) go from ``q_k`` to the posterior along
``p^g q_k^(1 - g)`` with the exact tempered Gibbs kernels of
:func:`~bnmfzoo.inference.gaussian.modes._mode_jump.ais_forward`. For any function ``f`` of the
final state, ``E[w f(y)] = int p f`` (the unnormalized posterior): with ``f`` the indicator
that ``y`` lies in mode ``k`` (nearest mode representative by max matched angle, the rule of
``modes``), ``Z_k = mean(w 1[y in k])`` is an unbiased estimate of the unnormalized mass of
mode ``k`` — whatever the path does, runs that leave the mode count zero. The mass of mode
``k`` is ``Z_k / sum_j Z_j``; its standard error is the delta-method error from each ``Z_k``'s
standard error (the weights' spread over runs).

Caveats (stated, not hidden): a mode ``modes`` did not find gets no reference and no mass; each
mode has ``R!`` relabelled copies and a path reaches one of them, which leaves the ratios
unchanged when every mode has the same number of copies (generic NMF). **The weights can be
heavy-tailed even when they do not look it**, and then the delta-method error understates and
a single estimate is typically too low or, when a rare large weight is drawn, far too high.
Measured on ``laurberg(0.5)``, sigma 0.05 (36 entries; the minor solution holds 0.0042), on
one replica-exchange run's modes (``benchmarks/speed/mode_masses.py --ais-repeat 8``;
``benchmarks/RESULTS.md`` §3.7): with the defaults (40 runs x 1000 steps) eight AIS seeds gave
the minor mass 0.0025, 0.0018, 0.0079, 0.0096, 0.0255, 0.0039, 0.0044 and 0.0044, each with a
delta-method error of 15-85 % (0.0018 +- 0.0005), while the log-weight sd was 0.6-1.3 and the
Pareto k-hat of 40 runs 0.0-0.45; pooled over the 320 runs, 0.0069 +- 0.0026 with one run
holding 37 % of the minor mode's total weight. So ``weight_se`` is not a calibrated error
here: run ``mode_evidence`` with several seeds (or more runs) and read the spread, and look at
``pareto_k`` (Vehtari et al. 2024; above 0.5 the mean of the weights converges slowly, above
0.7 it has no reliable error) and ``max_weight_share``.
"""

import math
import time
import warnings

import numpy as np
import xarray as xr

from bnmfzoo._base.progress import progress
from bnmfzoo._base.rng import as_generator
from bnmfzoo.inference.gaussian.gibbs._core import observed_entries
from bnmfzoo.inference.gaussian.modes._mode_jump import (
    Reference,
    ais_forward,
    anneal_schedule,
    check_jump_model,
)
from bnmfzoo.models._spec import get_spec

__all__ = ["mode_evidence", "masses_from_log_evidence", "pareto_k"]


def masses_from_log_evidence(log_z, se):
    """Masses ``Z_k / sum Z`` and their delta-method errors from ``log Z_k`` and their errors.

    ``se`` are the standard errors of ``log Z_k`` (independent). A mode with ``log Z = -inf``
    (no run ended in it) gets mass 0 and error NaN.

    Examples
    --------
    >>> p, dp = masses_from_log_evidence([0.0, math.log(3.0)], [0.1, 0.1])
    >>> p.round(3).tolist(), dp.round(4).tolist()
    ([0.25, 0.75], [0.0265, 0.0265])
    """
    log_z, se = np.asarray(log_z, dtype=float), np.asarray(se, dtype=float)
    p = np.exp(log_z - np.max(log_z))
    p /= p.sum()
    J = np.diag(p) - np.outer(p, p)  # d p_k / d log Z_j
    err = np.sqrt((J**2 * np.nan_to_num(se, nan=0.0, posinf=0.0)[None, :] ** 2).sum(axis=1))
    err[~np.isfinite(log_z)] = np.nan
    return p, err


class _Reference(Reference):
    """:class:`Reference` whose draws keep their shapes (scipy squeezes a rank-1 ``W``)."""

    def sample(self, rng):
        A, W, tau = super().sample(rng)
        return np.reshape(A, self.mA.shape), np.reshape(W, self.mW.shape), tau


def _log_mean_exp_indicator(log_w, keep):
    """``log mean(w 1[keep])`` and the standard error of that log (delta method)."""
    log_w = np.asarray(log_w, dtype=float)
    if not keep.any():
        return -math.inf, math.nan
    m = log_w[keep].max()
    v = np.where(keep, np.exp(log_w - m), 0.0)
    mean = v.mean()
    se = v.std(ddof=1) / math.sqrt(v.size) / mean if v.size > 1 else math.inf
    return m + math.log(mean), se


def pareto_k(log_w, keep):
    """Pareto k-hat of the right tail of the weights ``exp(log_w[keep])`` (NaN below 25 runs).

    Vehtari, Simpson, Gelman, Yao & Gabry (2024), "Pareto smoothed importance sampling",
    JMLR 25: above 0.7 the mean of the weights has no reliable error (its variance may be
    infinite) and is typically too low; above 0.5 more runs are needed than the central limit
    theorem suggests (arviz-stats' ``pareto_khat``).

    Examples
    --------
    >>> lw = np.random.default_rng(0).standard_normal(200)
    >>> bool(pareto_k(lw, np.ones(200, bool)) < 0.5)
    True
    """
    from arviz_stats.base import array_stats

    log_w = np.asarray(log_w, dtype=float)[np.asarray(keep, dtype=bool)]
    # the tail holds min(S / 5, 3 sqrt(S)) weights and the fit needs >= 5 of them: S >= 25
    if log_w.size < 25:
        return math.nan
    return float(array_stats.pareto_khat(log_w[None], log_weights=True, r_eff=1.0))


def _mode_draws(result, m, k, n_fit, rng):
    """Aligned draws ``(A, W, tau or None)`` of mode ``k``, at most ``n_fit`` of them."""
    post = result["posterior"].to_dataset()
    A = post["A"].transpose("chain", "draw", "row", "factor").values
    W = post["W"].transpose("chain", "draw", "factor", "col").values
    C, S = A.shape[:2]
    A, W = A.reshape(C * S, *A.shape[2:]), W.reshape(C * S, *W.shape[2:])
    label = m["member_mode"].values.reshape(-1)
    perm = m["member_perm"].values.reshape(C * S, -1)
    sel = np.flatnonzero(label == k)
    if sel.size > n_fit:
        sel = np.sort(rng.choice(sel, n_fit, replace=False))
    Ak = np.take_along_axis(A[sel], perm[sel][:, None, :], axis=-1)
    Wk = np.take_along_axis(W[sel], perm[sel][:, :, None], axis=-2)
    taus = post["tau"].values.reshape(-1)[sel] if "tau" in post else None
    return Ak, Wk, taus


def mode_evidence(result, model, *, modes_tree=None, n_runs=40, n_anneal=1000, n_fit=500,
                  random_seed=None, progressbar=True):
    """Masses of the modes of an MCMC result by annealed importance sampling (AIS).

    Parameters
    ----------
    result : xarray.DataTree
        An MCMC result of an exponential-Gaussian model (``posterior`` with ``A`` and ``W``),
        e.g. from ``pm.sample(step=ReplicaExchangeGibbs())``.
    model : pymc.Model
        The model the result was sampled from (:func:`bnmfzoo.models.exponential_gaussian`,
        exponential priors with fixed rates, no ARD).
    modes_tree : xarray.DataTree, optional
        The output of :func:`bnmfzoo.diagnostics.modes` on ``result`` (computed if omitted).
    n_runs : int
        AIS runs per mode.
    n_anneal : int
        Annealing steps per run (``g_k = (k / n_anneal)^2``).
    n_fit : int
        Most draws of a mode used to fit its reference.
    random_seed : int or numpy.random.Generator, optional
        Seed.
    progressbar : bool
        Show a progress bar over the runs.

    Returns
    -------
    xarray.Dataset
        Dims ``mode`` (as in ``modes``) and ``run``: ``weight`` (AIS mass of each mode),
        ``weight_se`` (delta-method standard error; it understates when the weights are
        heavy-tailed, see above: a warning names modes with ``pareto_k`` above 0.7 or a
        largest weight above half the total), ``log_evidence`` (``log Z_k`` up to the
        constant shared by all modes) and ``log_evidence_se``, ``stay`` (fraction of mode
        ``k``'s runs that end in mode ``k``), ``log_weight_sd`` (spread of the log weights),
        ``pareto_k`` (Pareto k-hat of the kept weights' right tail, :func:`pareto_k`; NaN with
        fewer than 10 kept runs), ``max_weight_share`` (the largest kept weight's share of
        their sum; near 1 means the estimate rests on one run),
        ``log_weight`` and ``end_mode`` (mode, run). Attrs ``estimator="ais"``, ``n_runs``,
        ``n_anneal``, ``cpu_seconds``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo.models import exponential_gaussian
    >>> from bnmfzoo.inference import GibbsNMF
    >>> X = np.array([[1.0, 0.0], [0.0, 0.9]])
    >>> model = exponential_gaussian(X, 1, sigma=0.2, lambda_=1.0)
    >>> with model:
    ...     idata = pm.sample(step=GibbsNMF(), draws=500, tune=200, chains=2,
    ...                       random_seed=1, progressbar=False)  # doctest: +SKIP
    >>> ev = mode_evidence(idata, model, n_runs=10, n_anneal=100,
    ...                    random_seed=0, progressbar=False)  # doctest: +SKIP
    """
    from bnmfzoo.diagnostics import modes
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2, matched_angles

    if not isinstance(result, xr.DataTree) or "posterior" not in result.children:
        raise TypeError("result must be an xarray.DataTree with a posterior group")
    for name, value in (("n_runs", n_runs), ("n_anneal", n_anneal), ("n_fit", n_fit)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 2:
            raise ValueError(f"{name} must be an integer >= 2, got {value!r}")
    spec = get_spec(model, families="exponential_gaussian", method="mode_evidence")
    check_jump_model(spec.hyper)
    obs = observed_entries(spec.X, spec.mask)
    rng = as_generator(random_seed)
    m = (modes_tree if modes_tree is not None else modes(result, warn=False))["modes"]
    if m.attrs.get("source") != "posterior":
        raise ValueError("mode_evidence needs the modes of posterior draws (source 'posterior')")
    K = m.sizes["mode"]
    refs_unit = m["reference"].values
    gammas = anneal_schedule(int(n_anneal))
    c0 = time.process_time()
    refs = []
    for k in range(K):
        Ak, Wk, taus = _mode_draws(result, m, k, int(n_fit), rng)
        if spec.hyper.sigma is not None:
            taus = None
        refs.append(_Reference.fit(Ak, Wk, taus))
    log_w = np.empty((K, int(n_runs)))
    end = np.empty((K, int(n_runs)), dtype=int)
    for i in progress(range(K * int(n_runs)), desc="AIS", progressbar=progressbar):
        k, r = divmod(i, int(n_runs))
        y, log_w[k, r] = ais_forward(refs[k], obs, spec.hyper, gammas, rng)
        end[k, r] = int(matched_angles(_unit_l2(y.A[None]), refs_unit)[0][0].argmin())
    log_z, se, khat = np.empty(K), np.empty(K), np.empty(K)
    for k in range(K):
        log_z[k], se[k] = _log_mean_exp_indicator(log_w[k], end[k] == k)
        khat[k] = pareto_k(log_w[k], end[k] == k)
    keep = end == np.arange(K)[:, None]
    lw_keep = np.where(keep, log_w, -np.inf)
    with np.errstate(invalid="ignore"):
        top = np.exp(lw_keep.max(axis=1) - np.logaddexp.reduce(lw_keep, axis=1))
    p, dp = masses_from_log_evidence(log_z, se)
    heavy = np.flatnonzero((khat > 0.7) | (top > 0.5))
    if heavy.size:
        warnings.warn(
            "mode_evidence: the AIS weights of mode(s) "
            + ", ".join(f"{k} (k-hat {khat[k]:.2f}, largest weight {top[k]:.0%} of the total)"
                        for k in heavy)
            + " rest on one or a few runs: their mass and weight_se are not reliable (a single"
            " estimate is usually too low, sometimes far too high). Run more runs (n_runs) or "
            "several random_seed values and compare.", UserWarning, stacklevel=2)
    return xr.Dataset(
        {"weight": ("mode", p), "weight_se": ("mode", dp), "log_evidence": ("mode", log_z),
         "log_evidence_se": ("mode", se), "stay": ("mode", (end == np.arange(K)[:, None]).mean(1)),
         "log_weight_sd": ("mode", log_w.std(axis=1)), "pareto_k": ("mode", khat),
         "max_weight_share": ("mode", top),
         "log_weight": (("mode", "run"), log_w),
         "end_mode": (("mode", "run"), end)},
        coords={"mode": np.arange(K), "run": np.arange(int(n_runs))},
        attrs={"estimator": "ais", "n_runs": int(n_runs), "n_anneal": int(n_anneal),
               "cpu_seconds": time.process_time() - c0},
    )
