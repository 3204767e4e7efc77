"""Plain-array description of a Gaussian NMF / NMTF problem (Brouwer et al. 2017).

:class:`Observed` is the sparse index of the observed entries (so every sweep costs
O(|observed| x rank) rather than O(D x N x rank)); :class:`Problem` holds it with the ranks and
the prior hyperparameters. Pure NumPy / SciPy: a :class:`Problem` is built from a PyMC model by
:func:`bnmfzoo.inference.gaussian.variational._vb_glue.problem_from_model`, and the numeric code
never reads
its ``spec``.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from bnmfzoo._terms._pairs import _product
from bnmfzoo.inference.gaussian.gibbs._gram import PatternPaths


class Observed(PatternPaths):
    """Sparse index of the observed entries of a D x N matrix.

    Parameters
    ----------
    X : numpy.ndarray or bnmfzoo._base.entries.LongMatrix
        Data (values at unobserved entries are ignored), or the observed entries in long
        format (then without ``mask``).
    mask : numpy.ndarray of bool, optional
        True where observed.
    """

    def __init__(self, X, mask=None):
        if mask is None:  # a LongMatrix (sparse data): no dense array
            self.shape = tuple(X.shape)
            self.rows, self.cols, self.x = X.rows, X.cols, X.values
        else:
            self.shape = tuple(mask.shape)
            self.rows, self.cols = (a.astype(np.int64) for a in np.nonzero(mask))
            self.x = np.asarray(X, dtype=float)[self.rows, self.cols]
        self.n = self.x.size
        ones = np.ones(self.n)
        self.M = sp.csr_matrix((ones, (self.rows, self.cols)), shape=self.shape)
        self.MT = self.M.T.tocsr()
        self.flat = self.rows * self.shape[1] + self.cols
        # at least an eighth observed: dense BLAS products beat sparse ones
        self.dense_mask = None
        if self.shape[0] * self.shape[1] <= 8 * self.n:
            self.dense_mask = np.zeros(self.shape)
            self.dense_mask.flat[self.flat] = 1.0

    @property
    def n_observed(self):
        """Number of observed entries."""
        return self.n

    def observed_dense(self):
        """``(X with 0 where missing, observed mask)`` as dense D x N arrays."""
        X = np.zeros(self.shape)
        X.flat[self.flat] = self.x
        observed = np.zeros(self.shape, dtype=bool)
        observed.flat[self.flat] = True
        return X, observed

    def row_sum(self, w):
        """Sum ``w`` (one value per observed entry) over each row."""
        return np.bincount(self.rows, weights=w, minlength=self.shape[0])

    def col_sum(self, w):
        """Sum ``w`` (one value per observed entry) over each column."""
        return np.bincount(self.cols, weights=w, minlength=self.shape[1])

    def rows_of(self, Qt):
        """``(M @ Qt.T).T``: for K x N ``Qt``, the K x D sums of ``Qt[k, j]`` over j in row i."""
        if self.dense_mask is not None:
            return Qt @ self.dense_mask.T
        return np.asarray(self.M @ Qt.T).T

    def cols_of(self, Pt):
        """For K x D ``Pt``, the K x N sums of ``Pt[k, i]`` over observed i in column j."""
        if self.dense_mask is not None:
            return Pt @ self.dense_mask
        return np.asarray(self.MT @ Pt.T).T

    def pair_sum(self, Pt, Qt):
        """``sum over observed (i, j) of sum_k Pt[k, i] Qt[k, j]``."""
        return float(np.sum(Pt * self.rows_of(Qt)))

    def product(self, Pt, Qt):
        """``sum_k Pt[k, rows] * Qt[k, cols]`` at every observed entry (length |observed|).

        Through the dense product when at least an eighth of the entries are observed (one BLAS
        call beats ``K`` gathers there), else entry by entry; likewise :meth:`rows_of` and
        :meth:`cols_of` multiply by the dense 0/1 mask then.
        """
        if self.dense_mask is not None:
            return np.take((Pt.T @ Qt).ravel(), self.flat)
        out = np.empty(self.n)  # one numba pass, summed over k in order
        _product(np.ascontiguousarray(Pt.T, dtype=float), np.ascontiguousarray(Qt.T, dtype=float),
                 self.rows, self.cols, out)
        return out


@dataclass(frozen=True)
class RateTerm:
    """A ``Gamma(alpha, beta)`` variable whose elements are exponential rates of factor entries.

    ``users`` is ``((role, index), ...)`` with ``index`` in the internal (factor-first) layout
    of ``role``: entry ``[k, i]`` has rate ``value[index[k, i]]`` (``value`` flattened, of
    ``shape``). Its conditional (and optimal mean-field q) is
    ``Gamma(alpha + #entries, beta + sum of those entries (or their means))``.
    """

    name: str
    alpha: np.ndarray
    beta: np.ndarray
    shape: tuple
    users: tuple
    dims: tuple | None = None  # the model's dims of the variable, if it has them

    def posterior(self, values):
        """``(shape, rate)`` of the Gamma conditional given ``{role: (means of) entries}``."""
        a, b = self.alpha.copy(), self.beta.copy()
        for role, index in self.users:
            a += np.bincount(index.ravel(), minlength=a.size)
            b += np.bincount(index.ravel(), weights=values[role].ravel(), minlength=a.size)
        return a, b


@dataclass
class Problem:
    """Plain-array view of an ``exponential_gaussian`` / ``tri_exponential_gaussian`` spec."""

    family: str
    spec: object  # the model spec, opaque here: read only by _vb_glue
    obs: Observed
    rank: tuple
    lam: dict  # role -> rate array in internal (factor-first) layout, or None under ARD
    alpha_tau: float
    beta_tau: float
    tau_fixed: object  # None or float (1 / sigma**2)
    ard: bool
    alpha0: float
    beta0: float
    #: per-entry prior terms of a recognized model whose priors are not the constructors'
    #: (None for those): role -> ``{"family", "q", "lin", "logc"}`` arrays in internal layout,
    #: ``log p(x) = logc - q x^2 / 2 + lin x`` on ``x >= 0`` (``lam[role]`` is then ``-lin``)
    prior: dict | None = None
    #: Gamma random variables whose elements are exponential rates of factor entries, as
    #: :class:`RateTerm` (their roles' ``prior`` entries are exponential, with ``lin`` /
    #: ``logc`` replaced by ``-E[lambda]`` / ``E[log lambda]`` of the current q or point)
    rates: tuple = ()
    #: ``(family, scale, name)`` of a noise sd ``sigma ~ HalfNormal(scale)`` /
    #: ``HalfCauchy(scale)`` (then ``tau_fixed`` is None and ``alpha_tau``/``beta_tau`` unused;
    #: see :mod:`bnmfzoo.inference.gaussian.variational._vb_noise_sd`), else None
    noise_sd: tuple | None = None

    def prior_prec(self, role):
        """The prior's quadratic term ``q`` of ``role`` (internal layout), or None."""
        if self.prior is None:
            return None
        return self.prior[role]["q"]

    @property
    def tri(self):
        """True for the tri-factorization."""
        return self.family == "tri_exponential_gaussian"


def factor_roles(problem):
    """Factor roles of the problem in sweep order."""
    return ("F", "S", "G") if problem.tri else ("A", "W")
