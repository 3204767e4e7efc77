"""``bnmfzoo fit --method blocked_gibbs``: the blocked Gibbs sweep on a file, block by block.

A matrix file (``.h5ad``, Zarr, HDF5, a 10x folder: :func:`bnmfzoo.datasets.matrixfiles.
open_matrix`) is handed to :func:`bnmfzoo.inference.fit_blocked_gibbs` by its path, so the
blocks are read where they are used (this process, or each Dask worker with ``--scheduler``)
and the whole matrix is never loaded in one place. Other files (``.npz``, ``.npy``, text)
are read whole first. The result is written only when the chain has finished, atomically:
a refusal or a failure leaves no file behind.
"""

from pathlib import Path

import numpy as np

#: models the blocked sweep fits
BLOCKED_MODELS = ("poisson", "exponential_gaussian")


def _data(data, *, counts, read_other, transpose):
    """What ``fit_blocked_gibbs`` takes: a ``MatrixFile`` (read by blocks) or an array."""
    from bnmfzoo.datasets.matrixfiles import is_matrix_file, open_matrix

    path = Path(data)
    if not path.exists():
        raise FileNotFoundError(f"data file {str(path)!r} does not exist")
    if is_matrix_file(path):
        m = open_matrix(path)
        return m.T if transpose else m
    if path.suffix.lower() == ".npz":
        import scipy.sparse as sp

        from bnmfzoo._cli.declared import check_npz

        check_npz(path)
        X = sp.load_npz(path)
        return X.T if transpose else X
    X = read_other(path)
    values = np.asarray(X.values, dtype=np.float64)
    if counts and np.isnan(values).any():
        raise ValueError(f"{path}: --method blocked_gibbs fits counts with every cell observed "
                         "(the file has missing cells)")
    return values.T if transpose else values


def fit_blocked_file(data, *, model, rank, out, draws=500, tune=200, random_seed=None,
                     scheduler=None, block_rows=None, transpose=False, thin="auto",
                     keep_all=False, read_other=None, verbose=True, model_kwargs=None):
    """Fit ``model`` to ``data`` with the blocked Gibbs sweep and write ``out`` (a ``.nc``).

    Parameters
    ----------
    data : str or Path
        A matrix file read block by block, or a ``.npz``, ``.npy`` or text matrix.
    model : {"poisson", "exponential_gaussian"}
    rank : int
    out : Path
        Checked by the caller; written atomically at the end.
    scheduler : str, optional
        A Dask scheduler address: the blocks are read and swept on its workers.
    block_rows : int, optional
        Rows (or columns, for column blocks) per block.
    read_other : callable, optional
        Reads a file that is not a matrix file (text, ``.npy``, netCDF) into a labelled
        array (the command's ``read_matrix``).
    model_kwargs : dict, optional
        ``lambda_`` (both exponential rates) for the Gaussian model.

    Returns
    -------
    Path
        The file written.
    """
    from bnmfzoo._cli.safeio import write_netcdf
    from bnmfzoo._cli.sizing import auto_thin, compact
    from bnmfzoo.inference.blocked.fit import fit_blocked_gibbs

    if model not in BLOCKED_MODELS:
        raise ValueError(f"--method blocked_gibbs fits the models {', '.join(BLOCKED_MODELS)}, "
                         f"not {model!r}")
    if rank is None:
        raise ValueError("--rank is required with --method blocked_gibbs")
    kwargs = {}
    for key, value in (model_kwargs or {}).items():
        if key == "lambda_" and model == "exponential_gaussian":
            kwargs["lambda_A"] = kwargs["lambda_W"] = float(value)
        else:
            raise ValueError(f"--method blocked_gibbs takes no model option {key!r}")
    X = _data(data, counts=model == "poisson", read_other=read_other, transpose=transpose)
    if random_seed is None:  # a fresh seed, stored with the result
        random_seed = int(np.random.default_rng().integers(2**31))
    if verbose:
        shape = X.shape
        print(f"{data}: {shape[0]} x {shape[1]}, blocked Gibbs ({model}, rank {rank})"
              + (f" on {scheduler}" if scheduler else ""), flush=True)
    dt = fit_blocked_gibbs(X, rank, model=model, draws=draws, tune=tune,
                           random_seed=random_seed,
                           client=scheduler, block_rows=block_rows, **kwargs)
    dt.attrs["data_file"] = str(data)
    dt.attrs["random_seed"] = int(random_seed)
    thin = auto_thin(draws) if thin == "auto" and not keep_all else (
        1 if thin == "auto" else thin)
    dt, encoding = compact(dt, thin=thin, float32=not keep_all)
    path = write_netcdf(dt, out, encoding=encoding)
    if verbose:
        print(f"wrote {path} ({Path(path).stat().st_size / 1e6:.1f} MB)")
    return path
