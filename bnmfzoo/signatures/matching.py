"""Matching discovered signatures to true (or reference) ones: cosines, Hungarian pairs, F1.

The field reports signature discovery as precision, recall and F1 at a cosine cutoff
(Alexandrov et al. 2020, *Nature* 578:94; Islam et al. 2022, *Cell Genomics* 2:100179), and
published F1 moves by 0.1-0.5 with the cutoff, so :func:`discovery_scores` reports several.

**The matching rule.** Signatures are compared by cosine similarity (each signature as a
vector over the channels; the cosine does not depend on its scale). Found and true signatures
are paired **one to one** by the Hungarian algorithm (Kuhn 1955;
:func:`scipy.optimize.linear_sum_assignment`), maximizing the total cosine over the pairs;
``min(n_found, n_true)`` pairs are formed. At a cutoff ``c``, a pair is a *true positive* when
its cosine is ``>= c``. Then ``precision = TP / n_found``, ``recall = TP / n_true`` and
``F1 = 2 TP / (n_found + n_true)`` (the harmonic mean of the two; 0 when ``TP = 0``;
precision is 0 when nothing was found). One found signature can never count for two true
ones (a blend of SBS2 and SBS13 matches one of them at most), and the pairing is made once,
before the cutoff, so TP can only fall as the cutoff rises.
"""

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

__all__ = ["as_signature_matrix", "cosine_matrix", "match_signatures", "discovery_scores"]

_CHANNEL_COLUMNS = ("MutationType", "Mutation Types", "Type", "mutation_type")


def _is_channel_labels(labels):
    labels = [str(v) for v in labels]
    return len(labels) >= 6 and all(
        len(v) == 7 and v[1] == "[" and v[3] == ">" and v[5] == "]" for v in labels)


def as_signature_matrix(signatures, *, name="signatures"):
    """``(values, signature labels, channel labels or None)`` of signatures given any way.

    Parameters
    ----------
    signatures : array-like, pandas.DataFrame or xarray.DataArray
        A 2-D array of shape ``(n_signatures, n_channels)``; or a labelled table either way
        round: a DataFrame in SigProfiler's layout (a ``MutationType`` column, or channel
        labels such as ``A[C>A]A`` as its index, and one column per signature) is transposed;
        a DataArray whose first dimension carries channel labels likewise.
    name : str
        The argument's name, used in error messages.

    Returns
    -------
    values : numpy.ndarray, shape (n_signatures, n_channels)
    labels : numpy.ndarray of str
        Signature labels (``"0", "1", ...`` for a plain array).
    channels : numpy.ndarray of str or None
        Channel labels, when the input carried them.

    Examples
    --------
    >>> v, labels, channels = as_signature_matrix(np.eye(3))
    >>> v.shape, labels.tolist(), channels is None
    ((3, 3), ['0', '1', '2'], True)
    """
    channels = None
    if isinstance(signatures, pd.DataFrame):
        df = signatures
        for col in _CHANNEL_COLUMNS:
            if col in df.columns:
                df = df.set_index(col)
                break
        if _is_channel_labels(df.index):
            df = df.T
        values, labels = df.to_numpy(), df.index.to_numpy()
        if _is_channel_labels(df.columns):
            channels = np.asarray(df.columns, dtype=str)
    elif hasattr(signatures, "dims") and hasattr(signatures, "coords"):
        da = signatures
        if da.ndim != 2:
            raise ValueError(f"{name} must be 2-D (signatures x channels), got dims {da.dims}")
        first, second = da.dims
        if first in da.coords and _is_channel_labels(da.coords[first].values):
            da = da.transpose(second, first)
            first, second = second, first
        values = da.values
        labels = (da.coords[first].values if first in da.coords
                  else np.arange(da.shape[0]))
        if second in da.coords and _is_channel_labels(da.coords[second].values):
            channels = np.asarray(da.coords[second].values, dtype=str)
    else:
        values = np.asarray(signatures)
        if values.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array (n_signatures, n_channels), got "
                             f"shape {values.shape}")
        labels = np.arange(values.shape[0])
    try:
        values = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must hold numbers ({err})") from None
    if not np.isfinite(values).all() or (values < 0).any():
        raise ValueError(f"{name} holds negative or non-finite entries")
    if values.size and (values.sum(axis=1) <= 0).any():
        raise ValueError(f"{name} holds a signature that is all zeros (no direction)")
    return values, np.asarray(labels).astype(str), channels


def _pair(found, truth, name_found="found", name_truth="truth"):
    a, la, ca = as_signature_matrix(found, name=name_found)
    b, lb, cb = as_signature_matrix(truth, name=name_truth)
    if ca is not None and cb is not None:
        if set(ca) != set(cb) or len(set(ca)) != len(ca):
            raise ValueError(f"{name_found} and {name_truth} are labelled with different "
                             "channels")
        pos = {c: i for i, c in enumerate(ca)}
        a = a[:, [pos[c] for c in cb]]  # found put in the truth's channel order
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{name_found} has {a.shape[1]} channels per signature and "
                         f"{name_truth} {b.shape[1]} (signatures must be rows; transpose?)")
    return a, la, b, lb


def cosine_matrix(found, truth):
    """Cosine similarity of every found signature (rows) with every true one (columns).

    Examples
    --------
    >>> cosine_matrix([[1, 0], [1, 1]], [[2, 0]]).round(4).tolist()
    [[1.0], [0.7071]]
    """
    a, _, b, _ = _pair(found, truth)
    return _cosines(a, b)


def _cosines(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.clip(a @ b.T, 0.0, 1.0)


def match_signatures(found, truth):
    """The one-to-one Hungarian pairing of found with true signatures, best total cosine.

    Parameters
    ----------
    found, truth : array-like, pandas.DataFrame or xarray.DataArray
        Signatures as rows ``(n, n_channels)``, or labelled tables (see
        :func:`as_signature_matrix`; labelled channels are matched by name).

    Returns
    -------
    pandas.DataFrame
        One row per pair (``min(n_found, n_true)`` rows), sorted by decreasing cosine: columns
        ``found``, ``truth`` (labels) and ``cosine``.

    Examples
    --------
    >>> match_signatures([[0, 1], [1, 0.1]], [[1, 0], [0, 1]]).round(3).to_dict("list")
    {'found': ['0', '1'], 'truth': ['1', '0'], 'cosine': [1.0, 0.995]}
    """
    a, la, b, lb = _pair(found, truth)
    cos = _cosines(a, b)
    if cos.size == 0:
        return pd.DataFrame({"found": [], "truth": [], "cosine": []})
    rows, cols = linear_sum_assignment(cos, maximize=True)
    out = pd.DataFrame({"found": la[rows], "truth": lb[cols], "cosine": cos[rows, cols]})
    return out.sort_values("cosine", ascending=False, kind="stable").reset_index(drop=True)


def discovery_scores(found, truth, cutoffs=(0.8, 0.9, 0.95)):
    """Precision, recall and F1 of discovered signatures at cosine cutoffs (the field's way).

    Pairs are formed once by the Hungarian algorithm on cosine similarity (module docstring);
    at each cutoff ``c`` a pair with cosine ``>= c`` is a true positive.

    Parameters
    ----------
    found : array-like, pandas.DataFrame or xarray.DataArray
        The discovered signatures, ``(n_found, 96)`` (or labelled, either orientation).
    truth : array-like, pandas.DataFrame or xarray.DataArray
        The true signatures, ``(n_true, 96)``.
    cutoffs : sequence of float
        Cosine cutoffs in ``(0, 1]``.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``cutoff``; columns ``precision``, ``recall``, ``f1``, ``true_positives``,
        ``n_found`` and ``n_true``.

    Examples
    --------
    >>> truth = np.eye(4)[:3] + 0.01
    >>> found = np.array([[1, 0.01, 0.01, 0.01], [0.4, 0.6, 0.01, 0.01]])
    >>> scores = discovery_scores(found, truth)
    >>> scores["f1"].round(3).tolist(), scores["n_found"].tolist()
    ([0.8, 0.4, 0.4], [2, 2, 2])
    """
    cutoffs = np.atleast_1d(np.asarray(cutoffs, dtype=float))
    if cutoffs.ndim != 1 or not ((cutoffs > 0) & (cutoffs <= 1)).all():
        raise ValueError(f"cutoffs must be cosines in (0, 1], got {cutoffs.tolist()}")
    a, _, b, _ = _pair(found, truth)
    pairs = match_signatures(a, b)["cosine"].to_numpy()
    n_found, n_true = a.shape[0], b.shape[0]
    rows = []
    for c in cutoffs:
        tp = int((pairs >= c).sum())
        precision = tp / n_found if n_found else 0.0
        recall = tp / n_true if n_true else 0.0
        f1 = 2 * tp / (n_found + n_true) if tp else 0.0
        rows.append((precision, recall, f1, tp, n_found, n_true))
    return pd.DataFrame(rows, index=pd.Index(cutoffs, name="cutoff"),
                        columns=["precision", "recall", "f1", "true_positives", "n_found",
                                 "n_true"])
