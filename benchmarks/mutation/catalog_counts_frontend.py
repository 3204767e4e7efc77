"""Mutations of the count-data front end (``bnmfzoo/_estimator_counts.py``) and loaders."""

from benchmarks.mutation._harness import Mutation

_EST = "bnmfzoo/_estimator_counts.py"
_T = "tests/test_estimator_counts.py::"

MUTATIONS = [
    Mutation(id="counts-score-counts-missing-cells", path=_EST,
             old="return rows, cols, X[rows, cols], total, int(mask.sum())",
             new="return rows, cols, X[rows, cols], total, int(mask.size)",
             tests=(_T + "test_score_is_poisson_loglik_per_entry",),
             why="score averages over missing cells too"),
    Mutation(id="counts-loglik-drops-log-factorial", path=_EST,
             old="ll = float(np.sum(x * np.log(mu) - gammaln(x + 1.0)) - total(A, W))",
             new="ll = float(np.sum(x * np.log(mu)) - total(A, W))",
             tests=(_T + "test_score_is_poisson_loglik_per_entry",),
             why="Poisson log-likelihood without the -log x! term"),
    Mutation(id="counts-sparse-zeros-dropped", path=_EST,
             old="return float(A.sum(0) @ W.sum(1))",
             new="return float(np.einsum('ek,ke->', A[C.row], W[:, C.col]))",
             tests=(_T + "test_sparse_input_is_zero_counts",),
             why="unstored sparse entries treated as missing instead of zero counts"),
    Mutation(id="counts-transform-mask-ignored", path=_EST,
             old="denom = mask.astype(float) @ H.T",
             new="denom = np.ones_like(X) @ H.T",
             tests=(_T + "test_transform_solves_kl_problem",),
             why="KL loadings count missing cells as zeros"),
    Mutation(id="counts-kl-error-missing-term", path=_EST,
             old="div = float(np.sum(x * np.log(x / mu)) - x.sum() + total(A, W))",
             new="div = float(np.sum(x * np.log(x / mu)) + total(A, W))",
             tests=(_T + "test_fit_recovers_factors",),
             why="generalized KL divergence without its -sum x term"),
    Mutation(id="counts-loader-not-transposed", path="bnmfzoo/datasets/counts.py",
             old="values.T, samples, channels, name=f\"sbs96_{name}\"",
             new="values, samples, channels, name=f\"sbs96_{name}\"",
             tests=("tests/test_datasets_counts.py::test_sbs96_breast",),
             why="catalogues returned channels x samples with swapped labels"),
]
