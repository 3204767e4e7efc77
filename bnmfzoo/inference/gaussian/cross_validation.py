"""K-fold cross-validation of a fitter, serially or with one Dask task per fold.

Each fold gets its own integer seed from :func:`bnmfzoo._base.rng.spawn_seeds`, and the folds
are drawn once in the caller, so a serial run and a Dask run with the same ``random_seed`` give
identical per-fold results.
"""

import time

import numpy as np

from bnmfzoo._base.rng import spawn_seeds
from bnmfzoo._base.validation import check_int, check_matrix, check_seed

METHODS = ("vb", "icm", "multiplicative")


def _resolve(method):
    if callable(method):
        return method
    if method == "vb":
        from bnmfzoo.inference.gaussian.variational.vb import fit_vb

        return fit_vb
    if method == "icm":
        from bnmfzoo.inference.gaussian.variational.icm import fit_icm

        return fit_icm
    if method == "multiplicative":
        from bnmfzoo.inference.gaussian.variational.multiplicative import fit_multiplicative

        return fit_multiplicative
    raise ValueError(f"method must be one of {METHODS} or a callable, got {method!r}")


def posterior_prediction(dt):
    """Mean over all posterior draws of the per-draw product A @ W (or F S G^T).

    Never the product of posterior means.
    """
    post = dt["posterior"]
    if "F" in post:
        F = post["F"].values
        S = post["S"].values
        G = post["G"].values
        pred = np.einsum("cdik,cdkl,cdjl->ij", F, S, G, optimize=True)
    else:
        A = post["A"].values
        W = post["W"].values
        pred = np.einsum("cdik,cdkj->ij", A, W, optimize=True)
    return pred / (post.sizes["chain"] * post.sizes["draw"])


def _run_fold(make_model, X, train, test, method, seed, fit_kwargs):
    """Fit on ``train`` and return the test / train MSE of the posterior-mean prediction."""
    fit = _resolve(method)
    X_train = X.where(train)
    start = time.perf_counter()
    dt = fit(make_model(X_train), random_seed=seed, progressbar=False, **fit_kwargs)
    seconds = time.perf_counter() - start
    pred = posterior_prediction(dt)
    values = X.values
    return {
        "mse": float(np.mean((pred[test] - values[test]) ** 2)),
        "train_mse": float(np.mean((pred[train] - values[train]) ** 2)),
        "n_test": int(test.sum()),
        "seconds": seconds,
        "seed": seed,
    }


def cross_validate(
    make_model,
    X,
    *,
    method="vb",
    k=10,
    random_seed=None,
    client=None,
    n_workers=1,
    mask=None,
    **fit_kwargs,
):
    """K-fold cross-validation of a fitter on the observed entries of ``X``.

    Folds come from :func:`bnmfzoo.datasets.kfold_masks` (Brouwer's stratified folds, no
    empty training row or column). For each fold, ``make_model`` builds a model of the
    training data (held-out entries set to NaN), ``method`` fits it and the test MSE of the
    posterior-mean prediction (the average of A @ W over draws) is recorded.

    Parameters
    ----------
    make_model : callable
        ``make_model(X_train) -> pymc.Model``, e.g.
        ``functools.partial(bnmfzoo.models.exponential_gaussian, rank=7)``. Must be picklable
        for process-based Dask workers (a module-level function or a ``partial``).
    X : array-like or xarray.DataArray
        D x N data, NaN for missing.
    method : {"vb", "icm", "multiplicative"} or callable, default "vb"
        Fitter: ``fit_vb``, ``fit_icm``, ``fit_multiplicative`` or any callable
        ``fit(model, *, random_seed, progressbar, **fit_kwargs) -> DataTree``.
    k : int, default 10
        Number of folds.
    random_seed : int or numpy.random.Generator, optional
        Seeds the folds and (one integer per fold) the fits.
    client : distributed.Client, optional
        Run one task per fold on this Dask client.
    n_workers : int, default 1
        Without ``client``: 1 runs the folds serially in this process; more starts a local
        Dask cluster of that many single-threaded worker processes for the duration of the
        call.
    mask : array-like of bool, optional
        True = observed (combined with the NaN pattern).
    **fit_kwargs
        Passed to the fitter (e.g. ``max_iter=200``, ``n_draws=200``).

    Returns
    -------
    pandas.DataFrame
        One row per fold (index ``fold``) with ``mse`` (test), ``train_mse``, ``n_test``,
        ``seconds`` (fit time) and ``seed``; ``attrs["method"]``.

    Examples
    --------
    >>> import functools
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> X = np.random.default_rng(0).exponential(size=(30, 20))
    >>> res = cross_validate(functools.partial(exponential_gaussian, rank=2), X, k=3,
    ...                      method="icm", max_iter=20, random_seed=0)
    >>> len(res)
    3
    """
    import pandas as pd

    from bnmfzoo.datasets import kfold_masks

    if not callable(make_model):
        raise TypeError(f"make_model must be callable (X_train -> pm.Model), got {make_model!r}")
    _resolve(method)
    n_workers = check_int(n_workers, name="n_workers")
    k = check_int(k, name="k", minimum=2)
    check_seed(random_seed)
    Xda, observed = check_matrix(X, kind="real", mask=mask)
    seeds = spawn_seeds(random_seed, k + 1)
    folds = kfold_masks(observed, k, random_seed=seeds[0])
    args = [(make_model, Xda, train, test, method, seeds[f + 1], fit_kwargs)
            for f, (train, test) in enumerate(folds)]

    if client is None and n_workers == 1:
        rows = [_run_fold(*a) for a in args]
    else:
        own = None
        if client is None:
            from distributed import Client, LocalCluster

            cluster = LocalCluster(n_workers=int(n_workers), threads_per_worker=1,
                                   processes=True, dashboard_address=None)
            own = client = Client(cluster)
        try:
            futures = [client.submit(_run_fold, *a, pure=False) for a in args]
            rows = client.gather(futures)
        finally:
            if own is not None:
                own.close()
                cluster.close()
    out = pd.DataFrame(rows)
    out.index.name = "fold"
    out.attrs["method"] = method if isinstance(method, str) else getattr(method, "__name__", "")
    return out
