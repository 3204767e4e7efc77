"""Q-Transform initializations (Masood & Doshi-Velez 2019, Algorithms 2-4).

* Algorithm 2, :func:`q_matrices` / :func:`generate_q_bank`: on small synthetic NMF problems,
  regress a random-restart NMF's factors on the top-``R_T`` SVD factors:
  ``Q_A = argmin ||A_NMF - A_SVD Q||``, ``Q_W = argmin ||W_NMF - Q W_SVD||``. The paper's bank is 20
  synthetic 12 x 12 rank-3 datasets x 5 restarts = 100 pairs, reused for every dataset. The bank
  is deterministic from its seed and cached on disk (``pooch.os_cache("bnmfzoo")`` or
  ``cache_dir=``) keyed by all its parameters.
* Algorithms 3-4, :func:`apply_q_transform`: ``A_0 = |A_SVD Q_A|``, ``W_0 = |Q_W W_SVD|`` on the
  new data, padded to the target rank with small positive random entries.

The SVD split is symmetric (``A_SVD = U sqrt(S)``, ``W_SVD = sqrt(S) V^T``) with a fixed sign rule
(Bro, Acar & Kolda 2008 by default, or scikit-learn's max-abs rule), applied identically at
generation and application (Sec. 8.4).
"""

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bnmfzoo._base.rng import as_generator, spawn_seeds
from bnmfzoo._base.validation import fmt

SIGN_RULES = ("bro", "max_abs")
_BANK_VERSION = 1


def _sign(x):
    return np.where(x >= 0, 1.0, -1.0)


def svd_symmetric(X, rank, *, sign="bro"):
    """Top-``rank`` SVD split symmetrically, with a deterministic sign convention.

    Parameters
    ----------
    X : numpy.ndarray
        D x N matrix (complete).
    rank : int
        Number of singular triplets.
    sign : {"bro", "max_abs"}
        ``"bro"``: Bro, Acar & Kolda (2008) sign flip: the left and right signs are chosen so
        that most of the data's mass projects positively on each component (for an SVD the
        residual data of component k projects as ``s_k v_k``, so
        ``s^L_k = sum_j sign(v_kj) v_kj^2`` and ``s^R_k = sum_i sign(u_ik) u_ik^2``; on conflict the
        sign with the larger magnitude wins). ``"max_abs"``: the largest-magnitude entry of
        each left vector is positive (scikit-learn ``svd_flip``).

    Returns
    -------
    A_svd : numpy.ndarray
        D x rank, ``U diag(sqrt(s))``.
    W_svd : numpy.ndarray
        rank x N, ``diag(sqrt(s)) V^T``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).random((5, 4))
    >>> A, W = svd_symmetric(X, 4)
    >>> bool(np.allclose(A @ W, X))
    True
    """
    if sign not in SIGN_RULES:
        raise ValueError(f"sign must be one of {SIGN_RULES}, got {sign!r}")
    X = np.asarray(X, dtype=float)
    if min(X.shape) <= 2000:
        U, s, Vt = np.linalg.svd(X, full_matrices=False)
        U, s, Vt = U[:, :rank], s[:rank], Vt[:rank]
    else:
        from sklearn.utils.extmath import randomized_svd

        U, s, Vt = randomized_svd(X, rank, n_iter=7, random_state=0)
    if sign == "max_abs":
        idx = np.argmax(np.abs(U), axis=0)
        flip = _sign(U[idx, np.arange(U.shape[1])])
    else:
        sl = np.sum(_sign(Vt) * Vt**2, axis=1)
        sr = np.sum(_sign(U) * U**2, axis=0)
        conflict = sl * sr < 0
        # negate the smaller-magnitude one so both agree
        sl = np.where(conflict & (np.abs(sl) < np.abs(sr)), -sl, sl)
        flip = _sign(sl)
    U = U * flip
    Vt = Vt * flip[:, None]
    root = np.sqrt(s)
    return U * root, root[:, None] * Vt


def q_matrices(A_svd, W_svd, A_nmf, W_nmf):
    """Algorithm 2's least-squares fits: ``Q_A = A_SVD^+ A_NMF`` and ``Q_W = W_NMF W_SVD^+``.

    Examples
    --------
    >>> import numpy as np
    >>> QA, QW = q_matrices(np.eye(3), np.eye(3), 2 * np.eye(3), np.eye(3))
    >>> float(QA[0, 0])
    2.0
    """
    QA = np.linalg.lstsq(A_svd, A_nmf, rcond=None)[0]
    QW = np.linalg.lstsq(W_svd.T, W_nmf.T, rcond=None)[0].T
    return QA, QW


@dataclass(frozen=True)
class QBank:
    """A bank of Q-Transform pairs.

    Attributes
    ----------
    QA : numpy.ndarray
        (n_pairs, R_SVD, R_T).
    QW : numpy.ndarray
        (n_pairs, R_T, R_SVD).
    generation_time : float
        Seconds it took to generate the bank (counted in Q-Transform runtimes, as in App. E).
    params : dict
        The generation parameters (the cache key).
    """

    QA: np.ndarray
    QW: np.ndarray
    generation_time: float
    params: dict

    def __len__(self):
        return self.QA.shape[0]

    @property
    def transfer_rank(self):
        """``R_T``, the number of transferred components."""
        return self.QA.shape[2]


def synthetic_source(rng, *, size=12, rank=3, noise=0.05):
    """One synthetic source ``max(0, A W + sigma xi)``, ``A, W ~ U[0, 1]``, ``sigma ∝ mean(AW)``.

    Examples
    --------
    >>> synthetic_source(np.random.default_rng(0)).shape
    (12, 12)
    """
    A = rng.random((size, rank))
    W = rng.random((rank, size))
    M = A @ W
    return np.maximum(M + noise * M.mean() * rng.standard_normal(M.shape), 0.0)


def _bank_key(params):
    blob = json.dumps({"version": _BANK_VERSION, **params}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _default_cache_dir():
    import pooch

    return Path(pooch.os_cache("bnmfzoo"))


def generate_q_bank(*, n_datasets=20, n_restarts=5, size=12, rank=3, noise=0.05, sign="bro",
                    max_iter=200, tol=1e-4, random_seed=0, cache=True, cache_dir=None):
    """Build (or load from the disk cache) the bank of ``n_datasets x n_restarts`` Q pairs.

    Parameters
    ----------
    n_datasets : int, default 20
        Synthetic ``size x size`` sources of rank ``rank``.
    n_restarts : int, default 5
        Random-restart NMFs per source (scikit-learn ``cd``, ``init="random"``).
    size : int, default 12
        Source dimension.
    rank : int, default 3
        ``R_T = R_SVD``.
    noise : float, default 0.05
        Noise standard deviation relative to the mean of ``A W`` (clipped at 0).
    sign : {"bro", "max_abs"}
        SVD sign rule (must match the one used when applying the bank).
    max_iter, tol
        NMF solver settings.
    random_seed : int, default 0
        Must be an int (it is part of the cache key).
    cache : bool, default True
        Read/write ``qbank-<key>.npz`` in ``cache_dir``.
    cache_dir : str or pathlib.Path, optional
        Default ``pooch.os_cache("bnmfzoo")``.

    Returns
    -------
    QBank

    Examples
    --------
    >>> bank = generate_q_bank(n_datasets=2, n_restarts=2, cache=False)
    >>> len(bank), bank.QA.shape[1:]
    (4, (3, 3))
    """
    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning

    if isinstance(random_seed, bool) or not isinstance(random_seed, (int, np.integer)):
        raise TypeError(f"random_seed must be an int for a cacheable bank, got {fmt(random_seed)}")
    for label, val in (("n_datasets", n_datasets), ("n_restarts", n_restarts),
                       ("size", size), ("rank", rank)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < 1:
            raise ValueError(f"{label} must be a positive integer, got {fmt(val)}")
    if rank > size:
        raise ValueError(f"rank must be <= size, got rank={rank}, size={size}")
    if sign not in SIGN_RULES:
        raise ValueError(f"sign must be one of {SIGN_RULES}, got {sign!r}")
    params = dict(n_datasets=int(n_datasets), n_restarts=int(n_restarts), size=int(size),
                  rank=int(rank), noise=float(noise), sign=sign, max_iter=int(max_iter),
                  tol=float(tol), random_seed=int(random_seed))
    path = None
    if cache:
        folder = Path(cache_dir) if cache_dir is not None else _default_cache_dir()
        path = folder / f"qbank-{_bank_key(params)}.npz"
        if path.exists():
            with np.load(path) as data:
                return QBank(data["QA"], data["QW"], float(data["generation_time"]), params)
    import warnings

    t0 = time.perf_counter()
    QA = np.empty((n_datasets * n_restarts, rank, rank))
    QW = np.empty_like(QA)
    seeds = spawn_seeds(int(random_seed), n_datasets)
    k = 0
    for seed in seeds:
        rng = as_generator(seed)
        Xs = synthetic_source(rng, size=size, rank=rank, noise=noise)
        A_svd, W_svd = svd_symmetric(Xs, rank, sign=sign)
        for restart_seed in spawn_seeds(rng, n_restarts):
            nmf = NMF(n_components=rank, init="random", solver="cd", beta_loss="frobenius",
                      max_iter=max_iter, tol=tol, random_state=restart_seed % (2**31 - 1))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                A_nmf = nmf.fit_transform(Xs)
            QA[k], QW[k] = q_matrices(A_svd, W_svd, A_nmf, nmf.components_)
            k += 1
    gen_time = time.perf_counter() - t0
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{np.random.default_rng().integers(1 << 30)}.tmp.npz")
        np.savez(tmp, QA=QA, QW=QW, generation_time=gen_time)
        tmp.replace(path)
    return QBank(QA, QW, gen_time, params)


def apply_q_transform(X, QA, QW, rank, *, rng=None, svd=None, mode="abs", pad_scale=1e-3,
                      sign="bro"):
    """Algorithms 3 and 4: a Q-Transform initialization of ``X`` at rank ``rank``.

    Parameters
    ----------
    X : numpy.ndarray
        Complete D x N data (complete missing entries first).
    QA, QW : numpy.ndarray
        One pair, ``R_SVD x R_T`` and ``R_T x R_SVD``.
    rank : int
        Target NMF rank.
    rng : numpy.random.Generator, optional
        For the padding entries.
    svd : tuple of numpy.ndarray, optional
        Precomputed :func:`svd_symmetric` of ``X`` at rank ``R_SVD`` (shared by all particles).
    mode : {"abs", "clip"}
        Non-negativity step: the paper's absolute value or the demo's clipping at 0.
    pad_scale : float
        Padding entries are ``U[0, 1] * pad_scale * sqrt(mean(X) / rank)`` (small and positive,
        so they barely change the product and do not stall multiplicative updates).
    sign : {"bro", "max_abs"}
        SVD sign rule when ``svd`` is not given.

    Returns
    -------
    A0, W0 : numpy.ndarray
        D x rank and rank x N non-negative initializations.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((10, 3)) @ rng.random((3, 8))
    >>> A0, W0 = apply_q_transform(X, np.eye(3), np.eye(3), 5, rng=rng)
    >>> A0.shape, W0.shape
    ((10, 5), (5, 8))
    """
    if mode not in ("abs", "clip"):
        raise ValueError(f"mode must be 'abs' or 'clip', got {mode!r}")
    rng = as_generator(rng)
    QA = np.asarray(QA, dtype=float)
    QW = np.asarray(QW, dtype=float)
    r_svd, r_t = QA.shape
    if QW.shape != (r_t, r_svd):
        raise ValueError(f"QW must have shape {(r_t, r_svd)} to match QA {QA.shape}")
    if svd is None:
        svd = svd_symmetric(X, r_svd, sign=sign)
    A_svd, W_svd = svd
    if A_svd.shape[1] < r_svd:  # fewer rows or columns than R_SVD: the missing singular
        k = A_svd.shape[1]      # values are 0, so their vectors contribute nothing
        A_svd = np.hstack([A_svd, np.zeros((A_svd.shape[0], r_svd - k))])
        W_svd = np.vstack([W_svd, np.zeros((r_svd - k, W_svd.shape[1]))])
    A_q = A_svd @ QA
    W_q = QW @ W_svd
    nonneg = np.abs if mode == "abs" else (lambda m: np.maximum(m, 0.0))
    A0, W0 = nonneg(A_q), nonneg(W_q)
    if rank > r_t:
        pad = rank - r_t
        scale = pad_scale * np.sqrt(max(float(np.mean(X)), 1e-12) / rank)
        A0 = np.hstack([A0, scale * rng.random((A0.shape[0], pad))])
        W0 = np.vstack([W0, scale * rng.random((pad, W0.shape[1]))])
    elif rank < r_t:
        A0, W0 = A0[:, :rank], W0[:rank]
    return A0, W0


class QTransformInit:
    """Picklable particle initializer ``init(X, rank, rng, mask=None)`` using one bank pair.

    Parameters
    ----------
    QA, QW : numpy.ndarray
        One pair of the bank.
    svd : tuple, optional
        Shared SVD of the (completed) data.
    X_complete : numpy.ndarray, optional
        The completed data to transform when ``X`` has missing entries.
    mode, pad_scale, sign
        As in :func:`apply_q_transform`.
    """

    def __init__(self, QA, QW, *, svd=None, X_complete=None, mode="abs", pad_scale=1e-3,
                 sign="bro"):
        self.QA, self.QW = QA, QW
        self.svd, self.X_complete = svd, X_complete
        self.mode, self.pad_scale, self.sign = mode, pad_scale, sign

    def __call__(self, X, rank, rng, mask=None):
        """Return ``(A0, W0)`` for ``X``."""
        Xc = self.X_complete if self.X_complete is not None else X
        return apply_q_transform(Xc, self.QA, self.QW, rank, rng=rng, svd=self.svd,
                                 mode=self.mode, pad_scale=self.pad_scale, sign=self.sign)
