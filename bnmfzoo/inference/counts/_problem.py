"""The numeric problem of a recognized count model: data, exposures, priors (no PyMC).

:func:`problem_from_factorization` turns a
:class:`~bnmfzoo.models._recognize_counts.CountFactorization` into a :class:`CountProblem` the
sweep of :mod:`bnmfzoo.inference.counts.sweep` works on, :func:`log_likelihood` its
log-likelihood in each family, and :func:`rate_conditionals` gives
the conjugate Gamma conditionals of the rate variables (ARD per factor, Gopalan et al. 2015's
per-row and per-column rates, or any other Gamma variable whose elements are factor rates).
"""

from dataclasses import dataclass, field, replace

import numpy as np

from bnmfzoo.inference.counts._data import (
    CountMatrix,
    Exposure,
    cell_means,
    nb2_cell_loglik,
    nb_loglik,
    nonzero_means,
    nonzero_offsets,
    poisson_loglik,
    total_mean,
)

__all__ = ["CountProblem", "problem_from_factorization", "prior_rates", "rate_conditionals",
           "counts_spec", "observed_cells", "log_likelihood", "nb2_loglik", "poisson_problem"]


@dataclass(frozen=True, eq=False)
class CountProblem:
    """Everything the count samplers need, as arrays.

    Attributes
    ----------
    family : str
    data : CountMatrix
    expo : Exposure
    offsets_nz : numpy.ndarray
        ``o_dn`` of each nonzero (CSR order).
    aA, aW : numpy.ndarray
        Gamma shapes (D x K, K x N).
    bA, bW : numpy.ndarray or None
        Constant Gamma rates, or None when they are elements of a rate variable.
    rate_of : dict
        Role -> ``(rate name, index array in the role's shape)``.
    rates : dict
        Name -> ``(alpha, beta, shape)`` of the rate variable's Gamma prior (flattened).
    alpha : float or None
        Constant NB dispersion.
    alpha_prior : tuple or None
        ``(shape, rate)`` of a learned NB dispersion.
    cells : tuple or None
        NB2 models: :func:`observed_cells` (the sweep draws one multiplier per observed cell).
    """

    family: str
    data: CountMatrix
    expo: Exposure
    offsets_nz: np.ndarray
    aA: np.ndarray
    aW: np.ndarray
    bA: np.ndarray | None
    bW: np.ndarray | None
    rate_of: dict = field(default_factory=dict)
    rates: dict = field(default_factory=dict)
    alpha: float | None = None
    alpha_prior: tuple | None = None
    cells: tuple | None = None

    @property
    def shape(self):
        """(D, N)."""
        return self.data.shape

    @property
    def rank(self):
        """K."""
        return self.aA.shape[1]


def poisson_problem(data, expo, aA, bA, aW, bW):
    """A Poisson :class:`CountProblem` with constant Gamma priors, built from arrays.

    For runs of :func:`~bnmfzoo.inference.counts.sweep.sweep` on a :class:`CountMatrix`
    without a PyMC model (benchmarks); ``aA, bA`` are D x K, ``aW, bW`` K x N.
    """
    return CountProblem("poisson", data, expo, nonzero_offsets(data, expo),
                        np.asarray(aA, float), np.asarray(aW, float), np.asarray(bA, float),
                        np.asarray(bW, float))


def problem_from_factorization(f):
    """:class:`CountProblem` of a recognized count model ``f``."""
    D, N = f.shape
    data = CountMatrix.from_entries(f.nz_rows, f.nz_cols, f.nz_counts, (D, N))
    e = f.exposure
    if e["kind"] == "separable":
        expo = Exposure("separable", np.asarray(e["row_offset"], float),
                        np.asarray(e["col_offset"], float), np.asarray(e["rows"], np.int64),
                        np.asarray(e["cols"], np.int64))
    else:
        expo = Exposure("entries", np.ones(D), np.ones(N), np.asarray(e["rows"], np.int64),
                        np.asarray(e["cols"], np.int64), np.asarray(e["offsets"], float))
    rate_of = {}
    for role, p in f.factors.items():
        if p.rate_var is not None:
            rate_of[role] = (p.rate_var, np.asarray(p.rate_index, np.int64))
    rates = {name: (r.alpha, r.beta, r.shape) for name, r in f.rates.items()}
    A, W = f.factors["A"], f.factors["W"]
    problem = CountProblem(
        family=f.family, data=data, expo=expo, offsets_nz=nonzero_offsets(data, expo),
        aA=np.asarray(A.shape, float), aW=np.asarray(W.shape, float),
        bA=None if A.rate is None else np.asarray(A.rate, float),
        bW=None if W.rate is None else np.asarray(W.rate, float),
        rate_of=rate_of, rates=rates, alpha=f.alpha,
        alpha_prior=None if f.alpha_var is None else (f.alpha_var[1], f.alpha_var[2]))
    if f.family == "nb2":
        problem = replace(problem, cells=observed_cells(problem))
    return problem


def observed_cells(problem):
    """``(rows, cols, offsets, counts)`` of every observed cell (zeros included), row-major."""
    D, N = problem.shape
    e = problem.expo
    if e.kind == "separable":
        seen = np.ones((D, N), dtype=bool)
        seen[e.rows, e.cols] = False
        rows, cols = (a.astype(np.int64) for a in np.nonzero(seen))
        offsets = e.row_offset[rows] * e.col_offset[cols]
    else:
        order = np.lexsort((e.cols, e.rows))
        rows, cols, offsets = e.rows[order], e.cols[order], e.offsets[order]
    counts = np.zeros(rows.size)
    data = problem.data
    flat = rows * np.int64(N) + cols
    nz_flat = data.rows() * np.int64(N) + np.asarray(data.cols, np.int64)
    counts[np.searchsorted(flat, nz_flat)] = data.counts
    return rows, cols, np.asarray(offsets, float), counts


def prior_rates(problem, rate_values):
    """``(bA, bW)``: the Gamma rates of the factor entries at the rate variables' values."""
    out = []
    for role, const in (("A", problem.bA), ("W", problem.bW)):
        if const is not None:
            out.append(const)
        else:
            name, idx = problem.rate_of[role]
            out.append(np.asarray(rate_values[name], float).ravel()[idx])
    return tuple(out)


def rate_conditionals(problem, A, W):
    """Name -> ``(shape, rate)`` arrays (the rate variable's shape) of its Gamma conditional.

    ``lambda | A, W ~ Gamma(alpha + sum of the users' shapes, beta + sum of the users'
    values)``, summed over the factor entries whose rate is that element.
    """
    out = {}
    for name, (alpha, beta, shape) in problem.rates.items():
        size = int(np.prod(shape, dtype=np.int64))
        a_post = np.array(alpha, float, copy=True)
        b_post = np.array(beta, float, copy=True)
        for role, value, a in (("A", A, problem.aA), ("W", W, problem.aW)):
            if role in problem.rate_of and problem.rate_of[role][0] == name:
                idx = problem.rate_of[role][1].ravel()
                a_post += np.bincount(idx, weights=a.ravel(), minlength=size)
                b_post += np.bincount(idx, weights=value.ravel(), minlength=size)
        out[name] = (a_post.reshape(shape), b_post.reshape(shape))
    return out


def counts_spec(model, *, method):
    """``(factorization, CountProblem)`` of ``model`` or a ``TypeError`` saying why not."""
    import pymc as pm

    from bnmfzoo.models._recognize import try_recognize

    if not isinstance(model, pm.Model):
        raise TypeError(f"{method} needs a pymc.Model, got {type(model).__name__}")
    found, reason = try_recognize(model)
    if found is None:
        raise TypeError(f"{method} needs a Poisson or negative-binomial factorization of counts; "
                        f"this pm.Model is not recognized as one: {reason}")
    if getattr(found, "kind", None) != "counts":
        raise TypeError(f"{method} needs a Poisson or negative-binomial factorization of counts; "
                        "this model's likelihood is not a count likelihood")
    cache = getattr(model, "_bnmfzoo_count_problem", None)
    if cache is not None and cache[0] is found:
        return found, cache[1]
    problem = problem_from_factorization(found)
    try:
        model._bnmfzoo_count_problem = (found, problem)
    except AttributeError:  # pragma: no cover
        pass
    return found, problem


def nb2_loglik(problem, state):
    """NB2 log-likelihood of the observed cells at ``state`` (``A``, ``W``, ``alpha``)."""
    rows, cols, offsets, x = problem.cells
    mu = cell_means(state["A"], state["W"], rows, cols, offsets)
    return float(np.sum(nb2_cell_loglik(x, mu, float(state["alpha"]))))


def log_likelihood(problem, state):
    """Log-likelihood of the observed cells at ``state`` (Poisson, NB or NB2)."""
    A, W = state["A"], state["W"]
    if problem.family == "nb2":
        return nb2_loglik(problem, state)
    if problem.family == "poisson":
        return poisson_loglik(problem.data, problem.expo, A, W, problem.offsets_nz)
    mu_nz = nonzero_means(problem.data, A, W, problem.offsets_nz)
    return nb_loglik(float(state["alpha"]), problem.data, mu_nz, total_mean(problem.expo, A, W))
