"""The likelihood part of recognition: which observed Normal is on ``A @ W`` and its entries.

:func:`observed_product` finds the one observed ``pm.Normal`` whose mean is ``A @ W`` (or
``F @ S @ G.T``) on a selection of its entries, which free variables play the roles (stored
transposed or not), and the observed entries in long format
(:class:`~bnmfzoo._base.entries.LongMatrix`): the likelihood's data placed at the (row, col) pairs
the mean selects, found by evaluating the mean at probe factor values (row codes, column codes,
a random point). Nothing here forms a D x N array beyond what the model's own graph forms
(a model on the pair path, :func:`bnmfzoo._terms.gaussian.observed_mean`, forms none): the
probes cost O(selected x rank) each. :func:`bnmfzoo.models._recognize.recognize` adds the
priors; fitters that only need the data (e.g. the particle methods on a model whose priors are
not recognized) read this part alone.
"""

from dataclasses import dataclass

import numpy as np
import xarray as xr

from bnmfzoo._base.entries import DenseOnDemand, LongMatrix
from bnmfzoo._terms._pairs import _product
from bnmfzoo.models._graph import (
    data_identity,
    depends_on,
    evaluate,
    observed_data,
    rv_params,
    shape_of,
)

__all__ = ["NotRecognized", "ObservedProduct", "observed_product", "DENSE_MIN_FRACTION"]

_CACHE_ATTR = "_bnmfzoo_observed_product"


class NotRecognized(TypeError):
    """The model is not a factorization our methods recognize (the message says why)."""



@dataclass(frozen=True, eq=False)
class ObservedProduct:
    """The Gaussian likelihood on a factorized matrix, and its observed entries.

    Attributes
    ----------
    obs : pytensor.tensor.TensorVariable
        The observed random variable; ``mu`` and ``sd`` its mean and sd graphs.
    kind : str
        ``"nmf"`` (``X ~ A W``) or ``"nmtf"`` (``X ~ F S G^T``).
    assignment : dict
        Role (``"A"``, ``"W"`` or ``"F"``, ``"S"``, ``"G"``) -> ``(random variable,
        transposed)``.
    rank : int or tuple of int
    entries : bnmfzoo._base.entries.LongMatrix
        The observed entries (row-major; NaN data dropped).
    X : xarray.DataArray
        D x N (``row``, ``col``), NaN where not observed: dense when at least
        :data:`DENSE_MIN_FRACTION` of the entries are observed, else a
        :class:`~bnmfzoo._base.entries.DenseOnDemand` view.
    mask : numpy.ndarray of bool or DenseOnDemand
    """

    obs: object
    mu: object
    sd: object
    kind: str
    assignment: dict
    rank: object
    entries: LongMatrix
    X: xr.DataArray
    mask: object
    nu: object = None

    @property
    def name(self):
        """Name of the observed variable."""
        return self.obs.name

    @property
    def names(self):
        """Role -> variable name."""
        return {role: rv.name for role, (rv, _) in self.assignment.items()}


def _fingerprint(model):
    data = []
    for rv in model.observed_RVs:
        data.append(data_identity(model, rv))
    return (tuple(id(v) for v in model.basic_RVs), tuple(id(p) for p in model.potentials),
            tuple(data))



def observed_product(model, *, memo=None):
    """The :class:`ObservedProduct` of ``model`` (memoized on it), or raise NotRecognized.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from bnmfzoo import likelihoods
    >>> X = np.arange(12.0).reshape(4, 3)
    >>> X[0, 1] = np.nan
    >>> with pm.Model() as model:
    ...     A = pm.Beta("A", 1.0, 1.0, shape=(4, 2))
    ...     W = pm.Beta("W", 1.0, 1.0, shape=(2, 3))
    ...     _ = likelihoods.gaussian("X", A, W, observed=X, sigma=1.0)
    >>> p = observed_product(model)
    >>> p.names, p.entries.n_observed, p.entries.rows[:3].tolist()
    ({'A': 'A', 'W': 'W'}, 11, [0, 0, 1])
    """
    key = _fingerprint(model)
    cached = getattr(model, _CACHE_ATTR, None)
    if cached is not None and cached[0] == key:
        if isinstance(cached[1], NotRecognized):
            raise cached[1]
        return cached[1]
    try:
        result = _observed_product(model, {} if memo is None else memo)
    except NotRecognized as err:
        result = err
    try:
        setattr(model, _CACHE_ATTR, (key, result))
    except AttributeError:  # pragma: no cover - a model without __dict__
        pass
    if isinstance(result, NotRecognized):
        raise result
    return result


def _observed_product(model, memo):
    free = list(model.free_RVs)
    obs = _find_likelihood(model)
    params = rv_params(obs)
    nu = None
    if type(obs.owner.op).__name__ == "StudentTRV":  # (nu, mu, sigma): a scale mixture
        nu, mu, sd = params
    else:
        mu, sd = params
    factor_rvs = depends_on(mu, free)
    if len(factor_rvs) not in (2, 3):
        raise NotRecognized(
            f"the mean of {obs.name!r} depends on {_names(factor_rvs)}; recognized: A @ W (two "
            "factors) or F @ S @ G.T (three), and nothing else")
    shapes = {rv: shape_of(rv, memo) for rv in factor_rvs}
    kind, assignment, rows, cols, (D, N), rank = _match_product(mu, factor_rvs, shapes)
    entries = _entries(model, obs, rows, cols, (D, N), _coords(model, assignment, kind, D, N))
    X, mask = _views(entries, obs.name)
    return ObservedProduct(obs=obs, mu=mu, sd=sd, kind=kind, assignment=assignment, rank=rank,
                           entries=entries, X=X, mask=mask, nu=nu)


def _names(rvs):
    return sorted(rv.name for rv in rvs)


def _find_likelihood(model, extra_ops=()):
    """The one observed variable that depends on free variables.

    A Normal, or one of ``extra_ops`` (e.g. ``"BernoulliRV"``, read by
    :mod:`bnmfzoo.models._recognize_binary`).
    """
    free = list(model.free_RVs)
    candidates = []
    for obs in model.observed_RVs:
        if depends_on(obs, free):
            candidates.append(obs)
    if not candidates:
        raise NotRecognized("the model has no observed variable that depends on free variables "
                            "(expected a Gaussian likelihood on A @ W)")
    if len(candidates) > 1:
        raise NotRecognized(f"the model has several likelihoods ({_names(candidates)}); one "
                            "observed Normal on A @ W is recognized")
    obs = candidates[0]
    op = type(obs.owner.op).__name__
    if op not in ("NormalRV", "StudentTRV") and op not in extra_ops:
        raise NotRecognized(
            f"the likelihood {obs.name!r} is a {op.removesuffix('RV')} distribution; recognized: "
            "a Normal or StudentT observed on A @ W (bnmfzoo.likelihoods.gaussian, pm.Normal, "
            "pm.StudentT), or a "
            "Bernoulli with p=A @ W (bnmfzoo.likelihoods.bernoulli_mean or pm.Bernoulli), "
            "uniform noise (bnmfzoo.likelihoods.uniform) or a SILF potential "
            "(bnmfzoo.likelihoods.silf)")
    return obs


def _match_product(mu, factor_rvs, shapes):
    """Find roles: ``(kind, {role: (rv, transposed)}, rows, cols)`` or raise NotRecognized."""
    import itertools

    rng = np.random.default_rng(0)
    n = len(factor_rvs)
    roles = ("A", "W") if n == 2 else ("F", "S", "G")
    for perm in itertools.permutations(factor_rvs):
        for flips in itertools.product((False, True), repeat=n):
            dims = [shapes[rv][::-1] if f else shapes[rv] for rv, f in zip(perm, flips)]
            if any(len(d) != 2 for d in dims):
                continue
            if n == 2:
                (D, R), (R2, N) = dims
                ok = R == R2
            else:
                (D, K), (K2, L), (N, L2) = dims
                ok = K == K2 and L == L2
            if not ok:
                continue

            def run(values, perm=perm, flips=flips):
                env = {rv: (v.T if f else v) for rv, f, v in zip(perm, flips, values)}
                return np.asarray(evaluate(mu, env), dtype=float)

            try:
                found = _probe(run, D, N, R if n == 2 else (K, L))
                if found is None:
                    continue
                r, c = found
                if n == 2:
                    test = [rng.uniform(0.5, 1.5, size=(D, R)), rng.uniform(0.5, 1.5, size=(R, N))]
                    left, right_t = test[0], test[1].T
                else:
                    test = [rng.uniform(0.5, 1.5, size=(D, K)), rng.uniform(0.5, 1.5, size=(K, L)),
                            rng.uniform(0.5, 1.5, size=(N, L))]
                    left, right_t = test[0] @ test[1], test[2]
                got = run(test)
            except Exception:  # noqa: BLE001 - a wrong orientation fails in the graph's ops
                continue
            if got.shape != r.shape:
                continue
            # the product at the selected entries only: O(selected x rank), never D x N
            expected = np.empty(r.size)
            _product(np.ascontiguousarray(left), np.ascontiguousarray(right_t),
                     r.ravel(), c.ravel(), expected)
            got = got.ravel()
            if not np.all(np.abs(got - expected) <= 1e-12 + 1e-10 * np.abs(expected)):
                continue
            assignment = {role: (rv, f) for role, rv, f in zip(roles, perm, flips)}
            rank = R if n == 2 else (K, L)
            return ("nmf" if n == 2 else "nmtf"), assignment, r, c, (D, N), rank
    names = [rv.name for rv in factor_rvs]
    raise NotRecognized(
        f"the mean of the likelihood depends on {names} but is not A @ W (nor F @ S @ G.T) on "
        "a selection of its entries (nothing else, e.g. an intercept, may enter the mean)")


def _probe(run, D, N, rank):
    """``(rows, cols)`` of the entries the mean selects, from probes of the factors, or None.

    With two or more factors (``K, L >= 2`` for ``F S G^T``) one probe suffices: column 0 of
    the left factor holds the row codes ``i + 1`` and column 1 ones, row 0 of the right factor
    ones and row 1 the column codes ``(j + 1) (D + 1)``, so entry ``(i, j)`` of the product is
    the integer ``(i + 1) + (j + 1) (D + 1)`` (sums of two exact products of integers). With
    rank 1, one probe for the rows and one for the columns.
    """
    R = rank if np.ndim(rank) == 0 else min(rank)
    tri = np.ndim(rank) != 0

    def factors(left_cols, right_rows):
        K, L = (rank, rank) if not tri else rank
        a = np.zeros((D, K))
        w = np.zeros((L, N))
        for k, col in enumerate(left_cols):
            a[:, k] = col
        for k, row in enumerate(right_rows):
            w[k, :] = row
        if not tri:
            return [a, w]
        s = np.zeros((K, L))
        s[np.arange(len(left_cols)), np.arange(len(left_cols))] = 1.0
        return [a, s, np.ascontiguousarray(w.T)]

    ones_d, ones_n = np.ones(D), np.ones(N)
    row_codes, col_codes = np.arange(1.0, D + 1), np.arange(1.0, N + 1)
    if R >= 2 and (D + 1.0) * (N + 2.0) < 2.0**52:
        codes = run(factors([row_codes, ones_d], [ones_n, col_codes * (D + 1)]))
        # float arithmetic is exact here (integers below 2^52; the quotient's fractional part
        # r / (D + 1) stays far from 0 and 1), and much faster than integer division
        cf = np.floor(codes / (D + 1.0))
        rf = codes - cf * (D + 1.0)
        r = rf.astype(np.int64)
        if not np.array_equal(r, rf):
            return None
        r -= 1
        c = cf.astype(np.int64) - 1
    else:
        rows = run(factors([row_codes], [ones_n]))
        cols = run(factors([ones_d], [col_codes]))
        if rows.shape != cols.shape:
            return None
        r, c = rows.astype(np.int64), cols.astype(np.int64)
        if not (np.array_equal(r, rows) and np.array_equal(c, cols)):
            return None
        r, c = r - 1, c - 1
    if r.size and (r.min() < 0 or r.max() >= D or c.min() < 0 or c.max() >= N):
        return None
    return r, c


#: the data are kept as dense D x N arrays (``Factorization.X``, ``.mask``) when at least this
#: fraction of the entries is observed (a dense float64 copy then costs at most 64 bytes per
#: observed entry, against 24 in long format); below it ``X`` and ``mask`` are
# : :class:`~bnmfzoo._base.entries.DenseOnDemand` views of the long-format entries, which sparse-
# aware
#: methods (Gibbs, VB, ICM, multiplicative updates) read instead.
DENSE_MIN_FRACTION = 1 / 8


def _entries(model, obs, rows, cols, shape, coords):
    """The observed entries as a row-major :class:`LongMatrix` (NaN values dropped)."""
    D, N = shape
    values = np.asarray(observed_data(model, obs), dtype=float)
    if values.shape != rows.shape:
        raise NotRecognized(f"the observed data of {obs.name!r} have shape {values.shape}, the "
                            f"mean {rows.shape}")
    return long_matrix(rows, cols, values, shape, coords, obs.name)


def long_matrix(rows, cols, values, shape, coords, name):
    """The entries ``values`` at ``(rows, cols)`` as a row-major :class:`LongMatrix`.

    NaN values are dropped; an entry given twice raises :class:`NotRecognized` naming the
    likelihood ``name``.
    """
    D, N = shape
    rows, cols, values = rows.ravel(), cols.ravel(), values.ravel()
    flat = rows * np.int64(N) + cols
    if flat.size > 1 and not (flat[1:] > flat[:-1]).all():
        order = np.argsort(flat, kind="stable")
        rows, cols, values, flat = rows[order], cols[order], values[order], flat[order]
        if (flat[1:] == flat[:-1]).any():
            raise NotRecognized(f"the likelihood {name!r} observes some entry of the "
                                "product twice")
    keep = ~np.isnan(values)
    if not keep.all():
        rows, cols, values, flat = rows[keep], cols[keep], values[keep], flat[keep]
    out = LongMatrix(shape=(int(D), int(N)), rows=np.ascontiguousarray(rows),
                     cols=np.ascontiguousarray(cols), values=np.ascontiguousarray(values),
                     row_labels=np.asarray(coords["row"]), col_labels=np.asarray(coords["col"]))
    out.__dict__["flat_index"] = flat  # the cached property, already computed
    return out


def _views(entries, name):
    """``(X, mask)``: dense arrays, or DenseOnDemand views when few entries are observed."""
    D, N = entries.shape
    coords = {"row": entries.row_labels, "col": entries.col_labels}
    if D * N * DENSE_MIN_FRACTION <= entries.n_observed:
        X, mask = entries.to_dense(), entries.dense_mask()
    else:
        X, mask = DenseOnDemand(entries, "X"), DenseOnDemand(entries, "mask")
    return xr.DataArray(X, dims=("row", "col"), coords=coords, name=name), mask


def _coords(model, assignment, kind, D, N):
    dims = model.named_vars_to_dims
    row_role, col_role = ("A", "W") if kind == "nmf" else ("F", "G")
    coords = {"row": np.arange(D), "col": np.arange(N)}
    for role, key, axis_if_plain in ((row_role, "row", 0), (col_role, "col", 1 if kind == "nmf"
                                                             else 0)):
        rv, transposed = assignment[role]
        d = dims.get(rv.name)
        if not d:
            continue
        axis = (1 - axis_if_plain) if transposed else axis_if_plain
        name = d[axis]
        if name is not None and name in model.coords and model.coords[name] is not None:
            values = np.asarray(model.coords[name])
            if values.size == coords[key].size:
                coords[key] = values
    return coords
