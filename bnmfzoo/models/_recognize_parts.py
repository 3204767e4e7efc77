"""The pieces of a recognized model that every family's recognizer shares, and its result.

:class:`Parameter` and :class:`FactorPrior` (a factor's prior and its parameters),
:class:`Imputed` (PyMC's imputation variable of missing entries), :func:`_selection` (which
elements of a variable a graph picks) and :func:`_users` (who uses a variable). The family
recognizers (:mod:`bnmfzoo.models._recognize_binary`, ``_recognize_counts``,
``_recognize_terms``) and :mod:`bnmfzoo.models._recognize` import them from here, so the
dispatcher can import the family recognizers without a cycle. :class:`ModelSpec`, what our
inference methods read about a model, is built from a recognized model by
:mod:`bnmfzoo.models._spec` and by the Bernoulli recognizer; it lives here, below both.
"""

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from bnmfzoo.models._graph import evaluate, shape_of

__all__ = ["Parameter", "FactorPrior", "Imputed", "ModelSpec"]


@dataclass(frozen=True, eq=False)
class Parameter:
    """One prior parameter, as a PyTensor expression.

    Attributes
    ----------
    graph : pytensor.tensor.TensorVariable
    value : numpy.ndarray or None
        Its value broadcast to the shape of the variable it parameterizes, when it depends on
        no random variable; else None.
    depends_on : tuple of str
        Names of the free random variables it depends on.
    """

    graph: object
    value: np.ndarray | None
    depends_on: tuple = ()

    @property
    def constant(self):
        """True when the parameter depends on no random variable."""
        return self.value is not None


@dataclass(frozen=True, eq=False)
class FactorPrior:
    """Prior of one factor.

    Attributes
    ----------
    role : str
        ``"A"``, ``"W"``, ``"F"``, ``"S"`` or ``"G"``.
    name : str
        The PyMC variable.
    family : str
        ``"exponential"``, ``"halfnormal"``, ``"truncated_normal"`` or ``"gamma"``.
    shape : tuple of int
        Shape of the role (``A``: D x R, ``W``: R x N, ``F``: D x K, ``S``: K x L, ``G``: N x L).
    transposed : bool
        The variable holds the role's transpose (e.g. ``W`` written as an N x R variable).
    params : dict
        ``{"lam"}``, ``{"sigma"}``, ``{"mu", "sigma"}`` or ``{"alpha", "beta"}`` (shape, rate) ->
        :class:`Parameter`, values in the role's orientation.
    rate : str or None
        Name of the :class:`GammaRate` whose elements are this factor's exponential rates.
    """

    role: str
    name: str
    family: str
    shape: tuple
    transposed: bool
    params: dict
    rate: str | None = None

    @property
    def constant(self):
        """True when every parameter is a constant."""
        return all(p.constant for p in self.params.values())


@dataclass(frozen=True, eq=False)
class Imputed:
    """PyMC's automatic imputation variable of the likelihood's missing (NaN) entries.

    Attributes
    ----------
    name : str
        The free variable (``"<likelihood>_unobserved"``).
    rv : pytensor variable
    rows, cols : numpy.ndarray of int64
        The entry of the product each of its elements is (flattened in its own order).
    offsets : numpy.ndarray or None
        Count models: the constant offset of each element's mean (``o * (A @ W)[rows, cols]``).
    """

    name: str
    rv: object
    rows: np.ndarray
    cols: np.ndarray
    offsets: np.ndarray | None = None


def _selection(graph, rv, shape, transposed, memo):
    """Index map when ``graph`` (broadcast to ``shape``) picks elements of ``rv``, else None."""
    n_shape = shape_of(rv, memo)
    n = int(np.prod(n_shape, dtype=np.int64))
    codes = np.arange(1.0, n + 1).reshape(n_shape)
    try:
        got = np.asarray(evaluate(graph, {rv: codes}), dtype=float)
        oriented = shape[::-1] if transposed else shape
        got = np.broadcast_to(got, oriented)
        idx = np.rint(got).astype(np.int64) - 1
        if idx.min() < 0 or idx.max() >= n or not np.allclose(got, idx + 1, rtol=1e-12):
            return None
        test = np.random.default_rng(1).uniform(0.5, 2.0, size=n_shape)
        got = np.broadcast_to(np.asarray(evaluate(graph, {rv: test}), dtype=float), oriented)
        if not np.allclose(got, test.ravel()[idx], rtol=1e-12):
            return None
    except Exception:  # noqa: BLE001 - not a selection
        return None
    return np.ascontiguousarray(idx.T if transposed else idx)


def _users(model, rv):
    """Variables and potentials whose graphs depend on ``rv`` (other than ``rv`` itself)."""
    from pytensor.graph.traversal import ancestors

    rvs = list(model.basic_RVs)
    out = []
    for other in rvs + list(model.potentials):
        if other is rv:
            continue
        inputs = other.owner.inputs if other.owner is not None else []
        if rv in set(ancestors(inputs, blockers=rvs)):  # direct use, not through another RV
            out.append(other)
    return out


@dataclass(frozen=True)
class ModelSpec:
    """Description of a bnmfzoo model.

    Attributes
    ----------
    family : str
        ``"exponential_gaussian"``, ``"tri_exponential_gaussian"``, ``"silf"``,
        ``"uniform_noise"``, ``"beta_dir"``, ``"dir_beta"`` or ``"dir_dir"``.
    X : xarray.DataArray
        The data (row, col); NaN where not observed.
    mask : numpy.ndarray of bool
        True where observed.
    rank : int or tuple of int
        R, or (K, L) for the tri-factorization.
    hyper : GaussianHyper, SilfHyper, UniformHyper or a Bernoulli family's dataclass
        The hyperparameters as typed fields, exactly as the model uses them (None when a
        method builds a spec without them).
    var_names : dict
        Role -> PyMC variable name (e.g. ``{"A": "A", "W": "W", "tau": "tau"}``).
    entries : bnmfzoo._base.entries.LongMatrix or None
        The observed entries in long format when fewer than an eighth of the entries are
        observed (:data:`bnmfzoo.models._observed.DENSE_MIN_FRACTION`), whatever form the data
        came in; ``X`` and ``mask`` are then :class:`~bnmfzoo._base.entries.DenseOnDemand` views,
        built densely only if read, and sparse-aware methods (Gibbs, VB, ICM, multiplicative
        updates) use ``entries`` instead. None when ``X`` and ``mask`` are dense arrays.
    """

    family: str
    X: xr.DataArray
    mask: np.ndarray
    rank: object
    hyper: object = None
    var_names: dict = field(default_factory=dict)
    entries: object = None

    @property
    def X_values(self):
        """Data as a float array with zeros where unobserved (safe for masked products)."""
        return np.where(self.mask, np.nan_to_num(self.X.values), 0.0)
