"""Collapsed variational Bayes (CVB0) for the Beta-Dir model (Lumbreras et al. 2020, §4.3).

Mean-field over the collapsed model, ``q(Z) = prod q(z_fn)``, with the zero-order Taylor update
(Lumbreras et al. 2020, Eq. 36, whose typeset parentheses are misplaced: the exponents apply to
the Beta factors)::

    q_fnk ∝ (g_k + E[L_fk^-fn]) (a_k + E[C1_nk^-fn])^v (b_k + E[C0_nk^-fn])^(1-v)
            / (a_k + b_k + E[M_nk^-fn])

swept in place over the observed entries (the same order as the Gibbs sampler). CVB0 has no
bound, so convergence is monitored with the training negative log-likelihood of
``E_q[A] E_q[W]`` (Eq. 66) and the largest change of a responsibility. The variational factors
are ``q(A_f) = Dir(g + E[L_f])`` and ``q(W_kn) = Beta(a_k + E[C1_nk], b_k + E[C0_nk])``
(Eqs. 37-38); predictions use ``E_q[A] E_q[W]`` (Eq. 39).

Memory: the responsibilities ``q`` take ``|observed| x K`` floats, the variational parameters
of CVB0 themselves (each update subtracts the entry's own ``q`` from the expected counts), on
top of the ``O((D + N) K)`` counts; the collapsed Gibbs sampler stores one label per entry
instead. Both are linear in the observed entries (``tests/binary/test_sparse_binary.py``).
"""

import numpy as np
import xarray as xr

from bnmfzoo._base.progress import progress
from bnmfzoo._base.results import build_datatree, data_coords, observed_long
from bnmfzoo._base.rng import as_generator
from bnmfzoo._base.validation import check_int, check_number
from bnmfzoo.inference.binary._core import (
    bernoulli_nll,
    bernoulli_nll_entries,
    cvb0_counts,
    cvb0_sweep,
    draw_beta,
    draw_dirichlet,
    entry_means,
)
from bnmfzoo.inference.binary._recognized import binary_spec
from bnmfzoo.inference.binary.collapsed_gibbs import spec_entries

__all__ = ["fit_cvb0"]


def fit_cvb0(model, *, max_iter=500, tol=1e-6, random_seed=None, n_draws=100, progressbar=True):
    """Fit a Beta-Dir (or Dir-Beta) model by collapsed variational Bayes (CVB0).

    Parameters
    ----------
    model : pymc.Model
        From :func:`bnmfzoo.models.beta_dir` (or :func:`~bnmfzoo.models.dir_beta`, fitted as
        Beta-Dir on the transpose).
    max_iter : int
        Maximum number of sweeps (paper: 500).
    tol : float
        Stop when no responsibility changed by more than ``tol`` in a sweep.
    random_seed : int or numpy.random.Generator, optional
        Seeds the random one-hot initialization over all K components (paper) and the draws.
    n_draws : int
        Number of i.i.d. draws from ``q(A) q(W)`` stored in the ``posterior`` group.
    progressbar : bool
        Show a progress bar over iterations.

    Returns
    -------
    xarray.DataTree
        ``posterior`` (A, W draws from q, one chain), ``sample_stats`` (``nll``: training
        negative log-likelihood of each draw's ``A @ W``), ``observed_data`` (X), and
        ``variational`` with ``A_mean``, ``W_mean``, ``X_mean`` (= E_q[A] E_q[W], Eq. 39; for a
        model built from sparse data, ``X_mean`` and ``observed_data`` are over the observed
        entries only, dim ``X_obs``), the
        Dirichlet / Beta parameters of q, the expected counts, the component mass, and the
        traces ``nll`` and ``max_delta`` over iterations. Root attrs ``method="cvb0"``,
        ``model``, ``n_iter`` and ``converged``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import beta_dir
    >>> from bnmfzoo.inference import fit_cvb0
    >>> V = (np.random.default_rng(0).random((20, 15)) < 0.3).astype(float)
    >>> dt = fit_cvb0(beta_dir(V, rank=10), max_iter=50, random_seed=0, progressbar=False)
    >>> dt["variational"]["nll"].dims
    ('iteration',)
    """
    spec = binary_spec(model, families=("beta_dir", "dir_beta"), method="fit_cvb0")
    max_iter = check_int(max_iter, name="max_iter")
    tol = check_number(tol, name="tol", minimum=0.0, strict=False)
    n_draws = check_int(n_draws, name="n_draws")
    rng = as_generator(random_seed)
    transpose = spec.family == "dir_beta"
    h = spec.hyper
    g = h.eta if transpose else h.gamma
    a, b = h.alpha, h.beta
    rows, cols, v, (D, N) = spec_entries(spec)
    K = int(spec.rank)
    entries = spec.entries
    if entries is None:  # dense data: the training NLL from the D x N product, as always
        Xk, mk = spec.X_values, spec.mask
        Xk, mk = (Xk.T, mk.T) if transpose else (Xk, mk)

        def nll(A, W):
            return bernoulli_nll(Xk, mk, A @ W)
    else:  # sparse data: means of the observed entries only

        def nll(A, W):
            return bernoulli_nll_entries(v, entry_means(rows, cols, A, W))
    q = np.zeros((rows.shape[0], K))
    q[np.arange(rows.shape[0]), rng.integers(0, K, size=rows.shape[0])] = 1.0

    nll_trace, delta_trace = [], []
    converged = False
    for _ in progress(total=int(max_iter), desc="CVB0", progressbar=progressbar):
        # recompute the expected counters each sweep so round-off cannot accumulate
        L, C1, C0 = cvb0_counts(rows, cols, v, q, D, N)
        delta = cvb0_sweep(rows, cols, v, q, L, C1, C0, g, a, b)
        EA, EW = _means(g, a, b, L, C1, C0)
        nll_trace.append(nll(EA, EW))
        delta_trace.append(delta)
        if delta < tol:
            converged = True
            break
    L, C1, C0 = cvb0_counts(rows, cols, v, q, D, N)
    EA, EW = _means(g, a, b, L, C1, C0)
    conc = g + L
    alpha_q, beta_q = (a + C1).T, (b + C0).T
    draws_A = np.empty((int(n_draws), D, K))
    draws_W = np.empty((int(n_draws), K, N))
    for s in range(int(n_draws)):
        draws_A[s] = draw_dirichlet(rng, conc)
        draws_W[s] = draw_beta(rng, alpha_q, beta_q)
    nll_draws = np.array([nll(A, W) for A, W in zip(draws_A, draws_W)])

    if transpose:  # back to the model's orientation: A = W_chain.T, W = A_chain.T
        A_post, W_post = draws_W.transpose(0, 2, 1), draws_A.transpose(0, 2, 1)
        A_mean, W_mean = EW.T, EA.T
        variational = {
            "W_concentration": (("factor", "col"), conc.T),
            "A_alpha": (("row", "factor"), alpha_q.T),
            "A_beta": (("row", "factor"), beta_q.T),
            "expected_col_counts": (("factor", "col"), L.T),
            "expected_ones": (("row", "factor"), C1),
            "expected_zeros": (("row", "factor"), C0),
        }
    else:
        A_post, W_post = draws_A, draws_W
        A_mean, W_mean = EA, EW
        variational = {
            "A_concentration": (("row", "factor"), conc),
            "W_alpha": (("factor", "col"), alpha_q),
            "W_beta": (("factor", "col"), beta_q),
            "expected_row_counts": (("row", "factor"), L),
            "expected_ones": (("factor", "col"), C1.T),
            "expected_zeros": (("factor", "col"), C0.T),
        }
    mass = q.sum(axis=0) / q.shape[0]
    observed = {"X": spec.X.values} if entries is None else observed_long(entries)
    variational.update({
        "A_mean": (("row", "factor"), A_mean),
        "W_mean": (("factor", "col"), W_mean),
        "X_mean": ((("row", "col"), A_mean @ W_mean) if entries is None else xr.DataArray(
            entry_means(entries.rows, entries.cols, A_mean, W_mean), dims="X_obs",
            coords={k: observed[k] for k in ("X_obs", "row_index", "col_index")})),
        "component_mass": (("factor",), mass),
        "nll": (("iteration",), np.array(nll_trace)),
        "max_delta": (("iteration",), np.array(delta_trace)),
    })
    coords = data_coords(spec.X)
    coords["factor"] = np.arange(K)
    return build_datatree(
        {"A": A_post[None], "W": W_post[None]},
        sample_stats={"nll": nll_draws[None]},
        observed_data=observed,
        coords=coords,
        groups={"variational": variational},
        attrs={"method": "cvb0", "model": spec.family, "n_iter": len(nll_trace),
               "converged": int(converged), "tol": float(tol)},
    )


def _means(g, a, b, L, C1, C0):
    conc = g + L
    EA = conc / conc.sum(axis=1, keepdims=True)
    EW = ((a + C1) / (a + b + C1 + C0)).T
    return EA, EW
