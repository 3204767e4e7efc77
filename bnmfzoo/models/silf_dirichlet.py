"""SILF model with a scale-fixing prior (Masood & Doshi-Velez 2019, Sec. 5.2).

* every column of ``A`` (D x R) ~ Dirichlet(1): ``A`` is column-stochastic, which fixes the scale
  of the factorization (``A S^-1, S W`` maps any NMF to its unique representative);
* ``W`` (R x N) ~ Exponential(lambda_) i.i.d.;
* likelihood ``exp(-C SILF_{eps, beta}(f_X(A, W)))`` (:func:`bnmfzoo.likelihoods.silf`).

PyMC's Dirichlet puts its simplex on the last axis; here ``A`` keeps the package convention
(``row``, ``factor``) with the simplex along ``row``. It is a ``pm.CustomDist`` whose draws are a
transposed Dirichlet (its log density is PyMC's own, derived through the transpose) and whose
value transform is PyMC's native simplex transform applied column-wise
(:class:`ColumnSimplexTransform`; value variable ``A_simplex__`` of shape (D - 1, R)).
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.logprob.transforms import SimplexTransform

from bnmfzoo._base.outliers import warn_outliers
from bnmfzoo._base.validation import check_matrix, check_positive, check_rank, fmt
from bnmfzoo._terms.silf import (
    _check_objective,
    _check_silf_params,
    epsilon_from_reference,
)
from bnmfzoo._terms.silf import (
    silf as silf_term,
)


class ColumnSimplexTransform(SimplexTransform):
    """PyMC's native simplex transform applied to each column (simplex along axis -2)."""

    name = "simplex"

    def forward(self, value, *inputs):
        """Map column-stochastic values to the unconstrained space."""
        return super().forward(pt.as_tensor(value).mT).mT

    def backward(self, value, *inputs):
        """Map unconstrained values back to column-stochastic matrices."""
        return super().backward(pt.as_tensor(value).mT).mT

    def log_jac_det(self, value, *inputs):
        """Log-Jacobian per column."""
        return super().log_jac_det(pt.as_tensor(value).mT)


def _transposed_dirichlet(a, size):
    return pm.Dirichlet.dist(a=a).mT


def column_dirichlet(name, D, R, *, alpha=1.0, dims=None):
    """A D x R matrix variable whose columns are i.i.d. Dirichlet(alpha) (inside a model).

    Parameters
    ----------
    name : str
        Variable name.
    D, R : int
        Shape: ``D`` rows (the simplex dimension) by ``R`` columns.
    alpha : float, default 1.0
        Symmetric concentration (1 = uniform on the simplex).
    dims : tuple of str, optional
        Model dims, e.g. ``("row", "factor")``.

    Returns
    -------
    pytensor.tensor.TensorVariable

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as m:
    ...     A = column_dirichlet("A", 4, 2)
    >>> m.value_vars
    [A_simplex__]
    """
    check_positive(alpha, name="alpha")
    a = np.full((R, D), float(alpha))
    return pm.CustomDist(
        name, a, dist=_transposed_dirichlet, transform=ColumnSimplexTransform(),
        ndim_supp=2, signature="(r,d)->(d,r)", dims=dims,
    )


def silf(X, rank, *, epsilon="reference", beta=0.1, C=2.0, lambda_=1.0, alpha=1.0,
         objective="frobenius", mask=None, n_reference=50, reference_factor=1.2,
         random_seed=0):
    """SILF BNMF model: Dirichlet(1) columns of ``A``, Exponential ``W``, SILF likelihood.

    Parameters
    ----------
    X : array-like or xarray.DataArray
        Non-negative D x N data; NaN (or ``mask`` False) marks missing entries, which never
        touch the likelihood.
    rank : int
        Number of factors R.
    epsilon : "reference" or float, default "reference"
        Insensitivity threshold; ``"reference"`` uses
        :func:`bnmfzoo.likelihoods.epsilon_from_reference` (1.2 x worst of 50 NMF fits).
    beta : float, default 0.1
        SILF smoothness.
    C : float, default 2.0
        Inverse temperature.
    lambda_ : float, default 1.0
        Rate of the Exponential prior on ``W``.
    alpha : float, default 1.0
        Dirichlet concentration of the columns of ``A``.
    objective : {"frobenius", "kl", "itakura_saito"}
        Objective inside the SILF.
    mask : array-like of bool, optional
        True = observed.
    n_reference, reference_factor : int, float
        Settings of the reference fits when ``epsilon="reference"``.
    random_seed : int, default 0
        Seed of the reference fits.

    Returns
    -------
    pymc.Model
        Free variables ``A`` (row, factor; value ``A_simplex__``) and ``W`` (factor, col);
        potential ``X``. Nothing is attached: :func:`bnmfzoo.models.recognize` reads the SILF
        term from the graph (family ``"silf"``, typed
        :class:`~bnmfzoo.models._spec.SilfHyper`).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import silf
    >>> X = np.random.default_rng(0).random((6, 5))
    >>> model = silf(X, 2, epsilon=1.0)
    >>> sorted(model.named_vars)
    ['A', 'W', 'X']
    """
    da, obs_mask = check_matrix(X, kind="nonnegative", mask=mask)
    rank = check_rank(rank, da.shape)
    warn_outliers(da, obs_mask)
    _check_objective(objective)
    check_positive(lambda_, name="lambda_")
    check_positive(alpha, name="alpha")
    if isinstance(epsilon, str):
        if epsilon != "reference":
            raise ValueError(f"epsilon must be 'reference' or a positive float, got {fmt(epsilon)}")
        epsilon = epsilon_from_reference(
            da, rank, n=n_reference, factor=reference_factor, mask=obs_mask,
            objective=objective, random_seed=random_seed,
        )
    epsilon, beta, C = _check_silf_params(epsilon, beta, C)
    D, N = da.shape
    coords = {"row": da["row"].values, "col": da["col"].values, "factor": np.arange(rank)}
    with pm.Model(coords=coords) as model:
        A = column_dirichlet("A", D, rank, alpha=alpha, dims=("row", "factor"))
        W = pm.Exponential("W", lam=lambda_, dims=("factor", "col"))
        silf_term("X", A, W, da, epsilon=epsilon, beta=beta, C=C, objective=objective,
                  mask=obs_mask)
    return model
