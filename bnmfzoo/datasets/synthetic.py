"""Synthetic data with known factorizations.

* :func:`swimmer` - Donoho & Stodden's (2003) 256 stick-figure images, non-negative rank 16.
* :func:`laurberg` - the 6 x 6 rank-3 example (unique NMF for a < 1/2, two NMFs at a = 1/2).
* :func:`continuum` - the 7 x 9 rank-6 matrix with a continuum of exact NMFs (Masood et al.
  2016, with the typo in A_delta corrected).
* :func:`embed` - large versions B1 X B2 of any of them (A -> B1 A, W -> W B2).
* :func:`exponential_gaussian` - Brouwer et al.'s (2017) toy data (exponential factors plus
  Gaussian noise).
* :func:`bernoulli_mean` - binary data with mean exactly A @ W (Lumbreras et al. 2020).
"""

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from bnmfzoo._base.rng import as_generator
from bnmfzoo._base.validation import fmt


@dataclass
class SyntheticData:
    """A synthetic data set with its true factors.

    Attributes
    ----------
    X : xarray.DataArray
        Data, dims ``("row", "col")`` (D x N).
    A : xarray.DataArray
        True basis, dims ``("row", "factor")`` (D x R).
    W : xarray.DataArray
        True weights, dims ``("factor", "col")`` (R x N).
    X_clean : xarray.DataArray or None
        Noise-free data (``A @ W``; the Bernoulli mean for binary data).
    solutions : list of (numpy.ndarray, numpy.ndarray)
        Known exact non-negative factorizations ``(A_i, W_i)`` of ``X_clean`` where several
        exist (otherwise just the true pair).
    noise : float or None
        Standard deviation of the added Gaussian noise (0 for none; None when the data are
        not Gaussian, e.g. Bernoulli draws).
    params : dict
        Generator parameters and auxiliary matrices (e.g. ``Q``, ``B1``, ``B2``, ``delta``).
    mask : numpy.ndarray of bool or None
        True = observed, where relevant.
    name : str
        Generator name.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.datasets import laurberg
    >>> data = laurberg(0.5)
    >>> [bool(np.allclose(A @ W, data.X.values)) for A, W in data.solutions]
    [True, True]
    """

    X: xr.DataArray
    A: xr.DataArray
    W: xr.DataArray
    X_clean: xr.DataArray | None = None
    solutions: list = field(default_factory=list)
    noise: float | None = None
    params: dict = field(default_factory=dict)
    mask: np.ndarray | None = None
    name: str = ""

    @property
    def rank(self):
        """Inner dimension R of the true factorization."""
        return self.A.shape[1]


def _da(values, dims, name):
    values = np.asarray(values, dtype=float)
    coords = {d: np.arange(n) for d, n in zip(dims, values.shape)}
    return xr.DataArray(values, dims=dims, coords=coords, name=name)


def _check_sigma(sigma):
    if not np.isfinite(sigma) or sigma < 0:
        raise ValueError(f"sigma must be a finite number >= 0, got {fmt(sigma)}")
    return float(sigma)


def _make(A, W, *, sigma, rng, name, solutions=None, params=None, X_clean=None):
    """Assemble a :class:`SyntheticData` with X = A W (+ Gaussian noise of std ``sigma``)."""
    A = np.asarray(A, dtype=float)
    W = np.asarray(W, dtype=float)
    clean = A @ W if X_clean is None else np.asarray(X_clean, dtype=float)
    X = clean + sigma * rng.standard_normal(clean.shape) if sigma > 0 else clean.copy()
    return SyntheticData(
        X=_da(X, ("row", "col"), "X"),
        A=_da(A, ("row", "factor"), "A"),
        W=_da(W, ("factor", "col"), "W"),
        X_clean=_da(clean, ("row", "col"), "X_clean"),
        solutions=solutions if solutions is not None else [(A.copy(), W.copy())],
        noise=sigma,
        params=dict(params or {}, sigma=sigma),
        name=name,
    )


# --------------------------------------------------------------------------------------------
# Swimmer
# --------------------------------------------------------------------------------------------

_SWIM_SIZE = 32
_TORSO_COL = 15
_TORSO_ROWS = range(10, 22)
# (origin row, origin col, row sign, col sign): arms from the top of the torso (pointing up
# at angle 0, sideways at 90 degrees), legs from the bottom (down at 0, sideways at 90).
_LIMBS = ((10, 14, -1, -1), (10, 16, -1, 1), (21, 14, 1, -1), (21, 16, 1, 1))
_ANGLES = np.deg2rad([0.0, 30.0, 60.0, 90.0])
_RADII = np.arange(3.0, 10.0, 0.5)


def _swimmer_parts():
    """Return the 16 limb parts (16 x 32 x 32, 0/1) and the torso (32 x 32, 0/1)."""
    parts = np.zeros((16, _SWIM_SIZE, _SWIM_SIZE))
    for limb, (r0, c0, sr, sc) in enumerate(_LIMBS):
        for pos, theta in enumerate(_ANGLES):
            rows = np.round(r0 + sr * _RADII * np.cos(theta)).astype(int)
            cols = np.round(c0 + sc * _RADII * np.sin(theta)).astype(int)
            parts[4 * limb + pos, rows, cols] = 1.0
    torso = np.zeros((_SWIM_SIZE, _SWIM_SIZE))
    torso[list(_TORSO_ROWS), _TORSO_COL] = 1.0
    return parts, torso


def swimmer(*, torso=True, sigma=0.0, random_seed=None):
    """Return the swimmer data set: 256 32 x 32 images as a 1024 x 256 pixels x images matrix.

    A stick figure (Donoho & Stodden, *When does non-negative matrix factorization give a
    correct decomposition into parts?*, NIPS 2003) with 4 limbs, each in one of 4 angular
    positions, gives 4^4 = 256 binary images; image ``j`` has limb ``l`` in position
    ``(j // 4**(3-l)) % 4`` (limbs: left arm, right arm, left leg, right leg). The 16 limb
    parts are pairwise disjoint and disjoint from the torso. ``W`` (16 x 256) is the 0/1
    indicator of the active parts; column ``4 l + p`` of ``A`` is limb ``l`` in position ``p``.

    The torso is in every image. Because each image activates exactly one position of every
    limb, it is folded into the parts: with ``torso=True`` every part carries the torso at
    intensity 1/4, and the four active parts add up to it exactly, so ``X == A @ W`` holds
    exactly with R = 16. The *non-negative* rank of ``X`` is 16 (this factorization plus a
    16-entry fooling set, checked in the tests), whereas its ordinary matrix rank is only 13:
    the four position rows of each limb in ``W`` sum to the all-ones row.

    Parameters
    ----------
    torso : bool, default True
        Draw the torso (the classic data set); False gives limbs only.
    sigma : float, default 0
        Standard deviation of Gaussian noise added to ``X`` (not clipped).
    random_seed : int or numpy.random.Generator, optional
        Seed for the noise.

    Returns
    -------
    SyntheticData
        ``X`` 1024 x 256, ``A`` 1024 x 16, ``W`` 16 x 256; ``params["image_shape"]`` is
        ``(32, 32)`` (pixels in row-major order) and ``params["positions"]`` the 256 x 4 limb
        positions.

    Examples
    --------
    >>> from bnmfzoo.datasets import swimmer
    >>> data = swimmer()
    >>> data.X.shape, data.rank
    ((1024, 256), 16)
    """
    sigma = _check_sigma(sigma)
    parts, torso_img = _swimmer_parts()
    A = parts.reshape(16, -1).T.copy()
    if torso:
        A += 0.25 * torso_img.reshape(-1, 1)
    positions = np.array(np.unravel_index(np.arange(256), (4, 4, 4, 4))).T  # 256 x 4
    W = np.zeros((16, 256))
    for limb in range(4):
        W[4 * limb + positions[:, limb], np.arange(256)] = 1.0
    data = _make(
        A,
        W,
        sigma=sigma,
        rng=as_generator(random_seed),
        name="swimmer",
        params={"image_shape": (_SWIM_SIZE, _SWIM_SIZE), "positions": positions, "torso": torso},
    )
    data.X.attrs["image_shape"] = [_SWIM_SIZE, _SWIM_SIZE]
    return data


# --------------------------------------------------------------------------------------------
# Laurberg and continuum (Masood, Doshi-Velez et al. 2016)
# --------------------------------------------------------------------------------------------

LAURBERG_Q = np.array([[-1.0, 2.0, 2.0], [2.0, -1.0, 2.0], [2.0, 2.0, -1.0]]) / 3.0


def laurberg(a=0.3, *, sigma=0.0, random_seed=None):
    """Return Laurberg's 6 x 6 rank-3 example, with a unique or two exact NMFs.

    ``W = [[a, 1, 1, a, 0, 0], [1, a, 0, 0, a, 1], [0, 0, a, 1, 1, a]]``, ``A = W.T`` and
    ``X = A W``. For ``a < 1/2`` the NMF is unique up to permutation and scaling; at
    ``a = 1/2`` there is a second one, ``(A Q, Q W)`` with
    ``Q = Q^{-1} = [[-1, 2, 2], [2, -1, 2], [2, 2, -1]] / 3``, which is non-negative exactly
    there (Masood et al. 2016, eqs. 6-7). Values ``a > 1/2`` are rejected because the list of
    solutions would not be known to be complete.

    Parameters
    ----------
    a : float, default 0.3
        In (0, 0.5]; the paper uses 0.3 (unique) and 0.5 (two modes).
    sigma : float, default 0
        Standard deviation of Gaussian noise added to ``X`` (the paper's sigma is not stated;
        1e-3 reproduces its numbers). Not clipped at 0.
    random_seed : int or numpy.random.Generator, optional
        Seed for the noise.

    Returns
    -------
    SyntheticData
        ``solutions`` holds ``(A, W)`` and, for ``a = 0.5``, ``(A Q, Q W)``; ``params["Q"]``.

    Examples
    --------
    >>> from bnmfzoo.datasets import laurberg
    >>> data = laurberg(0.5)
    >>> len(data.solutions)
    2
    """
    a = float(a)
    if not 0.0 < a <= 0.5:
        raise ValueError(f"a must be in (0, 0.5], got {fmt(a)}")
    W = np.array([[a, 1, 1, a, 0, 0], [1, a, 0, 0, a, 1], [0, 0, a, 1, 1, a]], dtype=float)
    A = W.T.copy()
    solutions = [(A.copy(), W.copy())]
    if a == 0.5:
        Q3 = 3.0 * LAURBERG_Q  # integer matrix: the products below are exact in floating point
        solutions.append(((A @ Q3) / 3.0, (Q3 @ W) / 3.0))
    return _make(
        A,
        W,
        sigma=_check_sigma(sigma),
        rng=as_generator(random_seed),
        name="laurberg",
        solutions=solutions,
        params={"a": a, "Q": LAURBERG_Q.copy()},
    )


def continuum_basis(delta):
    """Return the corrected ``A_delta`` (7 x 6) of the continuum example.

    ``A_delta = [I_6; (1 - delta) * (1, 1, 1), delta * (1, 1, 1)]``; the paper prints row 6 of
    the identity block as (0 1 0 0 0 1), a typo (then ``A_delta W != X``).
    """
    delta = float(delta)
    if not 0.0 <= delta <= 1.0:
        raise ValueError(f"delta must be in [0, 1], got {fmt(delta)}")
    return np.vstack([np.eye(6), [[1 - delta] * 3 + [delta] * 3]])


def continuum(*, delta=0.5, sigma=0.0, random_seed=None):
    """Return the 7 x 9 rank-6 matrix with a continuum of exact NMFs (Masood et al. 2016).

    Rows 1-3 of ``X`` are block indicators, rows 4-6 stride indicators, row 7 all ones;
    ``W`` = rows 1-6 and ``X = A_delta W`` for every ``delta`` in [0, 1] (see
    :func:`continuum_basis`; the paper's typo in ``A_delta`` is corrected).

    Parameters
    ----------
    delta : float, default 0.5
        Which member of the family is returned as ``A``.
    sigma : float, default 0
        Standard deviation of Gaussian noise added to ``X`` (not clipped).
    random_seed : int or numpy.random.Generator, optional
        Seed for the noise.

    Returns
    -------
    SyntheticData
        ``solutions`` = ``(A_delta, W)`` for delta = 0, 0.1, ..., 1 (``params["deltas"]``).

    Examples
    --------
    >>> from bnmfzoo.datasets import continuum
    >>> data = continuum()
    >>> data.X.shape, len(data.solutions)
    ((7, 9), 11)
    """
    W = np.zeros((6, 9))
    for i in range(3):
        W[i, 3 * i : 3 * i + 3] = 1.0  # blocks
        W[3 + i, i::3] = 1.0  # strides
    X_clean = np.vstack([W, np.ones((1, 9))])
    deltas = np.round(np.linspace(0.0, 1.0, 11), 10)
    solutions = [(continuum_basis(d), W.copy()) for d in deltas]
    return _make(
        continuum_basis(delta),
        W,
        sigma=_check_sigma(sigma),
        rng=as_generator(random_seed),
        name="continuum",
        solutions=solutions,
        params={"delta": float(delta), "deltas": deltas},
        X_clean=X_clean,
    )


def embed(data, *, shape=(500, 50), sigma=None, random_seed=None):
    """Embed a small problem into a large one: ``X_large = B1 X B2`` (Masood et al. 2016).

    ``B1`` (``shape[0]`` x D) and ``B2`` (N x ``shape[1]``) have iid U(0, 1) entries (the paper
    does not give the distribution; U(0, 1) reproduces its "All Modes" distances). The
    noise-free matrix is embedded and noise is added afterwards. Every factorization maps to
    one of the large matrix: ``A_large = B1 A``, ``W_large = W B2`` (the paper misprints the
    latter).

    Parameters
    ----------
    data : SyntheticData
        Small problem (e.g. :func:`laurberg` or :func:`continuum`).
    shape : tuple of int, default (500, 50)
        (D_large, N_large).
    sigma : float, optional
        Noise standard deviation; default ``data.noise``.
    random_seed : int or numpy.random.Generator, optional
        Seed for B1, B2 and the noise.

    Returns
    -------
    SyntheticData
        With ``params["B1"]``, ``params["B2"]``.

    Examples
    --------
    >>> from bnmfzoo.datasets import embed, laurberg
    >>> big = embed(laurberg(0.5), random_seed=0)
    >>> big.X.shape, len(big.solutions)
    ((500, 50), 2)
    """
    if not isinstance(data, SyntheticData):
        raise TypeError(f"data must be a SyntheticData, got {type(data).__name__}")
    try:
        d_large, n_large = (int(s) for s in shape)
    except (TypeError, ValueError) as err:
        raise TypeError(f"shape must be a pair of ints, got {fmt(shape)}") from err
    if d_large < 1 or n_large < 1:
        raise ValueError(f"shape must be positive, got {fmt(shape)}")
    sigma = _check_sigma(data.noise or 0.0 if sigma is None else sigma)
    rng = as_generator(random_seed)
    clean = (data.X_clean if data.X_clean is not None else data.X).values
    B1 = rng.random((d_large, clean.shape[0]))
    B2 = rng.random((clean.shape[1], n_large))
    solutions = [(B1 @ A_i, W_i @ B2) for A_i, W_i in data.solutions]
    params = {k: v for k, v in data.params.items() if k != "sigma"}
    params.update(B1=B1, B2=B2, embedded=data.name)
    return _make(
        B1 @ data.A.values,
        data.W.values @ B2,
        sigma=sigma,
        rng=rng,
        name=f"{data.name}_large",
        solutions=solutions,
        params=params,
        X_clean=B1 @ clean @ B2,
    )


# --------------------------------------------------------------------------------------------
# Generative models
# --------------------------------------------------------------------------------------------


def _positive(value, name):
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {fmt(value)}")
    return float(value)


def _dims(D, N, R):
    for name, v in (("D", D), ("N", N), ("R", R)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {fmt(v)}")
    return int(D), int(N), int(R)


def exponential_gaussian(D=100, N=80, R=10, *, lambda_=1.0, tau=1.0, random_seed=None):
    """Return Brouwer et al.'s (2017) toy data: exponential factors plus Gaussian noise.

    ``A_dr ~ Exp(lambda_)``, ``W_rn ~ Exp(lambda_)`` (rate ``lambda_``, mean ``1/lambda_``)
    and ``X = A W + N(0, 1/tau)``; the noise is not clipped, so a few entries may be negative
    (as in the authors' files). The defaults are the paper's 100 x 80, K = 10, unit rates and
    unit noise, where the optimal attainable MSE is 1.

    Parameters
    ----------
    D, N, R : int
        Rows, columns, rank.
    lambda_ : float, default 1
        Rate of the exponential priors.
    tau : float, default 1
        Noise precision.
    random_seed : int or numpy.random.Generator, optional
        Seed.

    Returns
    -------
    SyntheticData

    Examples
    --------
    >>> from bnmfzoo.datasets import exponential_gaussian
    >>> data = exponential_gaussian(random_seed=0)
    >>> data.X.shape
    (100, 80)
    """
    D, N, R = _dims(D, N, R)
    lambda_ = _positive(lambda_, "lambda_")
    tau = _positive(tau, "tau")
    rng = as_generator(random_seed)
    A = rng.exponential(1.0 / lambda_, size=(D, R))
    W = rng.exponential(1.0 / lambda_, size=(R, N))
    return _make(
        A,
        W,
        sigma=1.0 / np.sqrt(tau),
        rng=rng,
        name="exponential_gaussian",
        params={"lambda_": lambda_, "tau": tau},
    )


_BERNOULLI_MODELS = ("beta_dir", "dir_beta", "dir_dir")


def _hyper(value, R, name):
    try:
        arr = np.broadcast_to(np.asarray(value, dtype=float), (R,)).copy()
    except (TypeError, ValueError):
        arr = None
    if arr is None or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be positive, a scalar or a length-{R} vector; "
                         f"got {fmt(value)}")
    return arr


def bernoulli_mean(
    D=100,
    N=100,
    R=4,
    *,
    model="beta_dir",
    alpha=1.0,
    beta=1.0,
    gamma=1.0,
    eta=1.0,
    random_seed=None,
):
    """Draw binary data whose mean is exactly ``A @ W`` (Lumbreras et al. 2020).

    ``X_dn ~ Bernoulli([A W]_dn)`` with no link function; the three constraint sets keep
    ``A W`` in [0, 1] (Lumbreras' W, H are our A, W):

    * ``"beta_dir"``: rows of ``A`` ~ Dir(gamma), ``W_rn`` ~ Beta(alpha_r, beta_r);
    * ``"dir_beta"``: ``A_dr`` ~ Beta(alpha_r, beta_r), columns of ``W`` ~ Dir(eta);
    * ``"dir_dir"``: rows of ``A`` ~ Dir(gamma), columns of ``W`` ~ Dir(eta).

    The defaults are the paper's Fig. 2 synthetic set (100 x 100, K = 4, all
    hyperparameters 1).

    Parameters
    ----------
    D, N, R : int
        Rows, columns, number of components.
    model : {"beta_dir", "dir_beta", "dir_dir"}
        Which constraint set.
    alpha, beta : float or array of length R
        Beta shape parameters of the [0, 1]-valued factor.
    gamma : float or array of length R
        Dirichlet parameter of the rows of ``A``.
    eta : float or array of length R
        Dirichlet parameter of the columns of ``W``.
    random_seed : int or numpy.random.Generator, optional
        Seed.

    Returns
    -------
    SyntheticData
        ``X`` 0/1, ``X_clean`` = ``A @ W`` (the Bernoulli mean), ``noise`` None.

    Examples
    --------
    >>> from bnmfzoo.datasets import bernoulli_mean
    >>> data = bernoulli_mean(20, 30, 3, model="dir_dir", random_seed=0)
    >>> sorted(set(data.X.values.ravel().tolist()))
    [0.0, 1.0]
    """
    if model not in _BERNOULLI_MODELS:
        raise ValueError(f"model must be one of {_BERNOULLI_MODELS}, got {model!r}")
    D, N, R = _dims(D, N, R)
    alpha, beta = _hyper(alpha, R, "alpha"), _hyper(beta, R, "beta")
    gamma, eta = _hyper(gamma, R, "gamma"), _hyper(eta, R, "eta")
    rng = as_generator(random_seed)
    if model == "dir_beta":
        A = rng.beta(alpha, beta, size=(D, R))
    else:
        A = rng.dirichlet(gamma, size=D)
    if model == "beta_dir":
        W = rng.beta(alpha[:, None], beta[:, None], size=(R, N))
    else:
        W = rng.dirichlet(eta, size=N).T
    mean = np.clip(A @ W, 0.0, 1.0)
    X = (rng.random((D, N)) < mean).astype(float)
    data = _make(A, W, sigma=0.0, rng=rng, name=f"bernoulli_{model}", X_clean=mean)
    data.X.values[...] = X
    data.noise = None
    data.params = {"model": model, "alpha": alpha, "beta": beta, "gamma": gamma, "eta": eta}
    return data
