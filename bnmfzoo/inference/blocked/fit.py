"""``fit_blocked_gibbs``: one matrix's Gibbs sweep split into row blocks, serial or on Dask.

The column factors' sufficient statistics are reduced across blocks each sweep and the column
factors drawn once on the driver; each block has its own random stream, so the chain is bit for
bit the same in this process and on any number of Dask workers.
"""

from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp

from bnmfzoo._base.results import build_datatree
from bnmfzoo._base.validation import check_int, check_number, check_seed
from bnmfzoo.inference.blocked._blocks import ArraySource, default_block_rows
from bnmfzoo.inference.blocked._chain import SerialExecutor, WorkerLost, run_chain
from bnmfzoo.inference.blocked._families import GaussianFamily, PoissonFamily
from bnmfzoo.inference.blocked._sources import column_view, swap_axes

MODELS = ("poisson", "exponential_gaussian")


@contextmanager
def executor_for(client, source, family, *, timeout, workers):
    """The executor of a blocked run: serial without ``client``, else Dask workers.

    ``client`` is a ``distributed.Client`` or a scheduler address (connected here, closed on
    exit). The workers' memory limits are checked against ``source``'s blocks first.
    """
    own_client = None
    if client is None:
        executor = SerialExecutor()
    else:
        from bnmfzoo.inference.blocked._dask import DaskExecutor, connect

        if isinstance(client, str):
            client = own_client = connect(client, timeout=min(timeout, 10.0))
        executor = DaskExecutor(client, timeout=timeout, workers=workers)
    try:
        if client is not None:
            executor.check_memory(source, family)
        yield executor
    finally:
        executor.close()
        if own_client is not None:
            own_client.close()


def _as_source(X, model, block_rows):
    """A block source for ``X`` (a source passes through; arrays become CSR blocks)."""
    from bnmfzoo.inference.blocked._sources import as_file_source

    files = as_file_source(X, model, block_rows)  # a path, MatrixFile or FileSource
    if files is not None:
        return files, files.row_labels, files.col_labels
    if hasattr(X, "load") and hasattr(X, "n_blocks"):
        return X, None, None
    from bnmfzoo.datasets.singlecell import as_sparse_counts

    row_labels = col_labels = None
    labelled = as_sparse_counts(X, integral=model == "poisson")
    if labelled is not None:
        X, row_labels, col_labels = labelled
    if sp.issparse(X):
        csr = sp.csr_matrix(X, dtype=np.float64)
        if model == "exponential_gaussian" and not np.all(np.isfinite(csr.data)):
            raise ValueError("X: a stored entry is not finite (sparse X lists observed "
                             "entries only; leave a missing entry out)")
    else:
        arr = np.asarray(X, dtype=np.float64)
        if arr.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got shape {arr.shape}")
        if model == "poisson":
            if np.isnan(arr).any():
                raise ValueError("X: the Poisson blocked sweep needs every count observed "
                                 "(X holds NaN)")
            csr = sp.csr_matrix(arr)
        else:
            obs = ~np.isnan(arr)
            if np.isinf(arr).any():
                raise ValueError("X holds an infinite entry")
            r, c = np.nonzero(obs)
            csr = sp.csr_matrix((arr[r, c], (r, c)), shape=arr.shape)
            csr.data[csr.data == 0] = 0.0  # stored zeros are observed
    if csr.shape[0] < 1 or csr.shape[1] < 1:
        raise ValueError(f"X has shape {csr.shape}: it needs at least one row and one column")
    if model == "poisson":
        d = csr.data
        if d.size and (not np.all(np.isfinite(d)) or d.min() < 0 or np.any(d != np.floor(d))):
            raise ValueError("X: a count model needs non-negative integer counts; X holds "
                             "non-integer or negative values (normalized data? pass the raw "
                             "counts)")
    rows = check_int(block_rows, name="block_rows", allow_none=True) or default_block_rows(
        csr.shape[0], csr.nnz)
    return ArraySource(csr, rows), row_labels, col_labels


def fit_blocked_gibbs(X, rank, *, model="poisson", draws=200, tune=100, random_seed=0,
                      client=None, block_rows=None, a=1.0, b=1.0, lambda_A=1.0, lambda_W=1.0,
                      alpha_tau=1.0, beta_tau=1.0, tau=None, keep_rows=False,
                      checkpoint_every=10, timeout=600.0, max_restarts=3, workers=None,
                      axis="auto", _after_sweep=None):
    """Gibbs sampling of Poisson or exponential-Gaussian NMF in row blocks, serial or on Dask.

    Each sweep is an exact Gibbs sweep of the posterior: every block of rows draws its rows of
    ``A`` given the column factors (count models: after splitting its counts into latent
    components, Cemgil 2009), the blocks' statistics are summed in block order, and ``W`` (and
    ``tau``) are drawn from their full conditionals (Schmidt et al. 2009). A block's stream
    depends on ``(random_seed, sweep, block)``, so the result is the same bit for bit with
    ``client=None`` and with any number of workers.

    Parameters
    ----------
    X : array-like, scipy.sparse matrix, anndata.AnnData, path or block source
        D x N data. Counts (``model="poisson"``): non-negative integers, every cell observed
        (sparse: the non-zero counts). Gaussian: NaN marks a missing entry; sparse input
        lists the observed entries (explicit zeros included). A path (``.h5ad``, Zarr, HDF5,
        10x folder: :func:`bnmfzoo.datasets.matrixfiles.open_matrix`) or a block source
        (:class:`~bnmfzoo.inference.blocked.FileSource`,
        :class:`~bnmfzoo.inference.blocked.SyntheticCountSource`) lets each worker read its
        own rows, so no process holds the whole matrix.
    rank : int
        Number of factors K.
    model : {"poisson", "exponential_gaussian"}
    draws, tune : int
        Kept and discarded sweeps.
    random_seed : int
    client : distributed.Client or str, optional
        Spread the blocks over its workers (a string: the scheduler's address); ``None``:
        every block in this process, in order.
    block_rows : int, optional
        Rows per block (default: about 4 M stored entries per block). It fixes the streams:
        the same value gives the same chain on any cluster.
    a, b : float
        Gamma shape and rate of ``A`` and ``W`` (Poisson).
    lambda_A, lambda_W, alpha_tau, beta_tau : float
        Exponential rates of ``A`` and ``W`` and Gamma prior of ``tau`` (Gaussian).
    tau : float, optional
        A fixed noise precision instead of the Gamma prior (Gaussian).
    keep_rows : bool
        Keep every draw of ``A`` (moves ``D K`` numbers per draw to this process); by default
        only the posterior mean and the last draw of ``A`` are returned.
    checkpoint_every : int
        Sweeps between checkpoints of the row states; a worker lost mid-chain resumes from the
        last one with the same bits.
    timeout : float
        Seconds one sweep may take on the workers before ``TimeoutError`` names the stalled
        blocks and workers.
    max_restarts : int
        Lost-worker restarts allowed before the error is raised.
    workers : list of str, optional
        Addresses of the workers to use (default: every worker of ``client``); a lost worker's
        blocks move to the ones alive.
    axis : {"auto", "rows", "cols"}
        The axis cut into blocks. ``"cols"`` fits ``X^T`` in row blocks (``lambda_A`` and
        ``lambda_W`` swapped) and swaps the factors back; ``"auto"`` does so when ``X`` has
        more columns than rows and can be transposed (not a synthetic source).

    Returns
    -------
    xarray.DataTree
        ``posterior``: ``W`` (chain, draw, factor, col), ``tau`` (Gaussian), ``A`` with
        ``keep_rows``; group ``rows``: ``A_mean`` and ``A_last`` (row, factor); attributes
        ``sweep_seconds`` (median), ``bytes_per_sweep``, ``n_blocks``, ``restarts``. With
        column blocks: ``posterior`` ``A`` (chain, draw, row, factor) and ``tau``, ``W`` with
        ``keep_rows``; group ``cols``: ``W_mean`` and ``W_last`` (factor, col); attribute
        ``blocks="cols"``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).poisson(2.0, size=(30, 8))
    >>> dt = fit_blocked_gibbs(X, 2, draws=5, tune=5, block_rows=10)
    >>> dt.posterior["W"].shape
    (1, 5, 2, 8)
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    seed = check_seed(random_seed)
    draws = check_int(draws, name="draws")
    tune = check_int(tune, name="tune", minimum=0)
    checkpoint_every = check_int(checkpoint_every, name="checkpoint_every", minimum=0)
    timeout = check_number(timeout, name="timeout", minimum=0)
    X, by_cols = column_view(X, axis, model)
    if by_cols:  # fit X^T in row blocks: the priors of A and W trade places
        lambda_A, lambda_W = lambda_W, lambda_A
    source, row_labels, col_labels = _as_source(X, model, block_rows)
    D, N = source.shape
    K = check_int(rank, name="rank")
    if K > min(D, N):
        raise ValueError(f"rank must be at most min(D, N) = {min(D, N)}, got {K}")
    if model == "poisson":
        family = PoissonFamily(K, seed, a=check_number(a, name="a", minimum=0),
                               b=check_number(b, name="b", minimum=0))
    else:
        family = GaussianFamily(
            K, seed, lambda_A=check_number(lambda_A, name="lambda_A", minimum=0),
            lambda_W=check_number(lambda_W, name="lambda_W", minimum=0),
            alpha_tau=check_number(alpha_tau, name="alpha_tau", minimum=0),
            beta_tau=check_number(beta_tau, name="beta_tau", minimum=0),
            tau=None if tau is None else check_number(tau, name="tau", minimum=0))
    with executor_for(client, source, family, timeout=timeout, workers=workers) as executor:
        try:
            res = run_chain(family, source, executor, draws=draws, tune=tune,
                            keep_rows=keep_rows, checkpoint_every=checkpoint_every,
                            max_restarts=max_restarts, after_sweep=_after_sweep)
        except WorkerLost as err:  # lost again and again: name the blocks and the limit
            if client is None:
                raise
            phase = str(err).split(":")[0]
            raise MemoryError(executor.loss_message(
                err, f"{phase} (after {max_restarts} restart(s) from the checkpoint)")) from None
    dt = _datatree(res, model, row_labels, col_labels, D, N, K)
    return swap_axes(dt) if by_cols else dt


def _datatree(res, model, row_labels, col_labels, D, N, K):
    posterior = {"W": res.W[None]}
    if model == "exponential_gaussian":
        posterior["tau"] = res.tau[None]
    if res.A_draws is not None:
        posterior["A"] = res.A_draws[None]
    coords = {"row": np.arange(D) if row_labels is None else np.asarray(row_labels),
              "col": np.arange(N) if col_labels is None else np.asarray(col_labels),
              "factor": np.arange(K)}
    rows = {"A_mean": (("row", "factor"), res.A_mean), "A_last": (("row", "factor"), res.A_last)}
    attrs = {"method": "blocked_gibbs", "model": model,
             "sweep_seconds": float(np.median(res.sweep_seconds)),
             "bytes_per_sweep": int(res.bytes_per_sweep), "n_blocks": int(res.n_blocks),
             "restarts": int(res.restarts)}
    return build_datatree(posterior, coords=coords, groups={"rows": rows}, attrs=attrs)
