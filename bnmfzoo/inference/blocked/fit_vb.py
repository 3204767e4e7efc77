"""``fit_blocked_vb``: count VB of one matrix in row blocks, serial or on Dask workers.

Each iteration is the serial count VB's coordinate ascent; the blocks' statistics are added in
block order, so the result is bit for bit the same in this process and on any number of
workers. The driver loop (:func:`run_vb`) checkpoints the blocks' ``q(A)`` and restores them
on the workers alive when one is lost.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from bnmfzoo._base.results import build_datatree
from bnmfzoo._base.validation import check_int, check_number, check_seed
from bnmfzoo.inference.blocked._chain import WorkerLost
from bnmfzoo.inference.blocked._vb import NegBinVB, PoissonVB

MODELS = ("poisson", "negative_binomial")


@dataclass
class VBResult:
    """``q`` at the end, the bound per iteration and bookkeeping."""

    aA: np.ndarray
    bA: np.ndarray
    aW: np.ndarray
    bW: np.ndarray
    elbo: np.ndarray
    converged: bool
    iter_seconds: list = field(default_factory=list)
    bytes_per_iteration: int = 0
    restarts: int = 0
    n_blocks: int = 0
    alpha: np.ndarray = None


def _check_prior(alpha_prior):
    """``(shape, rate)`` of the dispersion's Gamma prior, both positive."""
    try:
        a0, b0 = alpha_prior
    except (TypeError, ValueError):
        raise ValueError("alpha_prior must be a pair (shape, rate) of positive numbers, got "
                         f"{alpha_prior!r}") from None
    return (check_number(a0, name="alpha_prior[0]", minimum=0),
            check_number(b0, name="alpha_prior[1]", minimum=0))


def run_vb(family, source, executor, *, max_iter, tol, checkpoint_every=10, max_restarts=3,
           after_iteration=None):
    """Iterate until the bound's relative change is at most ``tol`` (or ``max_iter``).

    A :class:`~bnmfzoo.inference.blocked._chain.WorkerLost` restores the last checkpoint (every
    block's ``q(A)`` every ``checkpoint_every`` iterations, and ``q(W)``) and redoes the
    iterations since; they are deterministic, so the bits do not change.
    """
    summaries = executor.start(source, family)
    family.check(summaries)
    colstate = family.init_cols(source.shape[1], summaries)
    ckpt = (0, executor.snapshot(), colstate)
    trace, secs, alphas = [], [], []
    restarts = nbytes = 0
    converged = False
    t = 0
    while t < max_iter:
        t0 = time.perf_counter()
        try:
            colstate = family.update_alpha(executor, colstate, t)
            stats = executor.sweep(family, colstate.cols, t, keep=False)
        except WorkerLost as err:
            restarts += 1
            if restarts > max_restarts:
                raise WorkerLost(
                    f"{err}; gave up after {max_restarts} restarts from the checkpoint (a worker "
                    "lost again and again has usually run out of memory: its blocks need more "
                    "than its memory_limit; use more workers, more memory or smaller blocks)"
                ) from None
            executor.restore(ckpt[1])
            t, colstate = ckpt[0], ckpt[2]
            del trace[t:]
            del alphas[t:]
            continue
        colstate, bound = family.update_cols(family.reduce(stats), colstate)
        secs.append(time.perf_counter() - t0)
        if t == 0:
            nbytes = executor.stats_nbytes()
        trace.append(bound)
        alphas.append(colstate.cols.alpha)
        t += 1
        if len(trace) > 1 and abs(trace[-1] - trace[-2]) <= tol * abs(trace[-1]):
            converged = True
            break
        if checkpoint_every and t % checkpoint_every == 0 and t < max_iter:
            ckpt = (t, executor.snapshot(), colstate)
        if after_iteration is not None:
            after_iteration(t)
    states = executor.snapshot()
    return VBResult(np.concatenate([st.aA for st in states]),
                    np.concatenate([st.bA for st in states]), colstate.aW, colstate.bW,
                    np.array(trace), converged, secs, nbytes, restarts, source.n_blocks,
                    np.array(alphas))


def fit_blocked_vb(X, rank, *, model="poisson", alpha=None, alpha_prior=(2.0, 0.2), a=1.0,
                   b=1.0, max_iter=200, tol=1e-7, random_seed=0, client=None, block_rows=None,
                   checkpoint_every=10, timeout=600.0, max_restarts=3, workers=None,
                   _after_iteration=None):
    """Variational Bayes of Poisson or negative-binomial NMF in row blocks, serial or on Dask.

    The mean-field coordinate ascent of Cemgil (2009) (the negative binomial through its
    expected Chinese-restaurant tables, Zhou & Carin 2015), the same updates as
    :func:`bnmfzoo.inference.fit_vb_poisson` and :func:`bnmfzoo.inference.fit_vb_nb` with
    ``A, W ~ Gamma(a, b)``: each block of rows keeps its ``q(A)`` where it lives, the blocks'
    expected table sums (K x N) and sums of ``E[A]`` (K) are added in block order, and ``q(W)``
    is updated once on the driver. No step is random after the start (drawn from a stream per
    block), so the result is bit for bit the same with ``client=None`` and with any number of
    workers; the bound (ELBO) never decreases.

    With ``model="negative_binomial"`` and ``alpha=None`` the dispersion is learned as in
    :func:`bnmfzoo.inference.fit_vb_nb`: a point estimate under ``alpha ~ Gamma(*alpha_prior)``
    (VB-EM), raised before each iteration by up to three guarded Newton steps in
    ``log alpha`` from the prior mean. Each step's sums over the non-zeros (the data term and
    its derivatives) are scalars per block, added in block order like the other statistics
    (one round trip to the workers per Newton candidate). The ``elbo`` is then a bound on
    ``log p(X | alpha) + log p(alpha)`` at the estimate.

    Parameters
    ----------
    X : array-like, scipy.sparse matrix, anndata.AnnData or block source
        D x N non-negative integer counts, every cell observed (as in
        :func:`bnmfzoo.inference.fit_blocked_gibbs`; a block source lets each worker load its
        own rows).
    rank : int
        Number of factors K.
    model : {"poisson", "negative_binomial"}
    alpha : float, optional
        The negative binomial's dispersion (``X ~ NB(alpha (A W), alpha / (1 + alpha))``),
        fixed; ``None`` (with ``model="negative_binomial"``): learned.
    alpha_prior : tuple of float
        Shape and rate of the Gamma prior of a learned ``alpha`` (default ``(2, 0.2)``, that of
        :func:`bnmfzoo.models.negative_binomial`); ignored when ``alpha`` is given.
    a, b : float
        Gamma shape and rate of ``A`` and ``W``.
    max_iter : int
    tol : float
        Stop when the bound changes by at most ``tol`` times its magnitude.
    random_seed : int
        Seed of the random start.
    client : distributed.Client or str, optional
        Spread the blocks over its workers (a string: the scheduler's address); ``None``: every
        block in this process, in order.
    block_rows : int, optional
        Rows per block (default: about 4 M stored entries per block).
    checkpoint_every : int
        Iterations between checkpoints of the blocks' ``q(A)``; a worker lost mid-run resumes
        from the last one with the same bits.
    timeout : float
        Seconds one iteration may take on the workers before ``TimeoutError`` names the
        stalled blocks and workers.
    max_restarts : int
        Lost-worker restarts allowed before the error is raised.
    workers : list of str, optional
        Addresses of the workers to use (default: every worker of ``client``).

    Returns
    -------
    xarray.DataTree
        Group ``variational``: ``A_shape``, ``A_rate`` (row, factor), ``W_shape``, ``W_rate``
        (factor, col) of the Gamma factors of ``q``, their means ``A_mean``, ``W_mean`` and
        ``elbo`` per iteration (the bound at the start of each) and, for the negative
        binomial, ``alpha`` (the final dispersion) and ``alpha_trace`` (the one of each
        iteration); attributes ``elbo``, ``converged``, ``n_iter``, ``iter_seconds`` (median),
        ``bytes_per_iteration`` (the block step's; a learned ``alpha`` adds a few scalars per
        Newton candidate), ``n_blocks``, ``restarts``, ``alpha`` (and ``alpha_prior`` when
        learned).

    References
    ----------
    Cemgil, A. T. (2009). Bayesian inference for nonnegative matrix factorisation models.
    Computational Intelligence and Neuroscience, 785152.
    Zhou, M. & Carin, L. (2015). Negative binomial process count and mixture modeling. IEEE
    TPAMI 37(2), 307-320.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).poisson(2.0, size=(30, 8))
    >>> dt = fit_blocked_vb(X, 2, max_iter=50, block_rows=10)
    >>> dt["variational"]["A_shape"].shape
    (30, 2)
    >>> bool(np.all(np.diff(dt["variational"]["elbo"].values) >= 0))
    True
    >>> X = np.random.default_rng(0).negative_binomial(2.0, 0.4, size=(30, 8))
    >>> dt = fit_blocked_vb(X, 2, model="negative_binomial", max_iter=50, block_rows=10)
    >>> bool(dt["variational"]["alpha"] > 0 and dt["variational"]["alpha_trace"].size == 50)
    True
    """
    from bnmfzoo.inference.blocked.fit import _as_source, executor_for

    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    seed = check_seed(random_seed)
    max_iter = check_int(max_iter, name="max_iter")
    tol = check_number(tol, name="tol", minimum=0.0, strict=False)
    checkpoint_every = check_int(checkpoint_every, name="checkpoint_every", minimum=0)
    timeout = check_number(timeout, name="timeout", minimum=0)
    a = check_number(a, name="a", minimum=0)
    b = check_number(b, name="b", minimum=0)
    K = check_int(rank, name="rank")
    if model == "negative_binomial":
        if alpha is None:
            alpha_prior = _check_prior(alpha_prior)
        else:
            alpha, alpha_prior = check_number(alpha, name="alpha", minimum=0), None
        family = NegBinVB(K, seed, alpha, a=a, b=b, alpha_prior=alpha_prior)
    else:
        if alpha is not None:
            raise ValueError("alpha: a dispersion is for model='negative_binomial'")
        family = PoissonVB(K, seed, a=a, b=b)
    source, row_labels, col_labels = _as_source(X, "poisson", block_rows)
    D, N = source.shape
    if K > min(D, N):
        raise ValueError(f"rank must be at most min(D, N) = {min(D, N)}, got {K}")
    with executor_for(client, source, family, timeout=timeout, workers=workers) as executor:
        res = run_vb(family, source, executor, max_iter=max_iter, tol=tol,
                     checkpoint_every=checkpoint_every, max_restarts=max_restarts,
                     after_iteration=_after_iteration)
    coords = {"row": np.arange(D) if row_labels is None else np.asarray(row_labels),
              "col": np.arange(N) if col_labels is None else np.asarray(col_labels),
              "factor": np.arange(K), "iteration": np.arange(res.elbo.size)}
    var = {"A_shape": (("row", "factor"), res.aA), "A_rate": (("row", "factor"), res.bA),
           "W_shape": (("factor", "col"), res.aW), "W_rate": (("factor", "col"), res.bW),
           "A_mean": (("row", "factor"), res.aA / res.bA),
           "W_mean": (("factor", "col"), res.aW / res.bW),
           "elbo": (("iteration",), res.elbo)}
    attrs = {"method": "blocked_vb", "model": model, "elbo": float(res.elbo[-1]),
             "converged": int(res.converged), "n_iter": int(res.elbo.size),
             "iter_seconds": float(np.median(res.iter_seconds)),
             "bytes_per_iteration": int(res.bytes_per_iteration),
             "n_blocks": int(res.n_blocks), "restarts": int(res.restarts)}
    if model == "negative_binomial":
        var["alpha"] = ((), np.float64(res.alpha[-1]))
        var["alpha_trace"] = (("iteration",), res.alpha)
        attrs["alpha"] = float(res.alpha[-1])
        if alpha_prior is not None:
            attrs["alpha_prior"] = [float(v) for v in alpha_prior]
    return build_datatree({}, coords=coords, groups={"variational": var}, attrs=attrs)
