"""Mutations of GibbsNMF's weighted sweep (issue 34, item 3): the exact Gamma-prior conditional,
per-row/column noise precisions, Student-t noise through its scale mixture, and their
recognition."""

from benchmarks.mutation._harness import Mutation

_WC = "bnmfzoo/inference/gaussian/priors/_weighted_core.py"
_GC = "bnmfzoo/inference/gaussian/priors/_gamma_conditional.py"
_PC = "bnmfzoo/inference/gaussian/priors/_prior_core.py"
_REC = "bnmfzoo/models/_recognize.py"
_T = "tests/models/test_recognize_weighted.py"
_SBC = f"{_T}::test_sbc_weighted"

MUTATIONS = [
    Mutation(
        id="prior-gamma-shape-term-dropped", path=_WC,
        old="np.ascontiguousarray(-b), np.ascontiguousarray(a - 1.0)",
        new="np.ascontiguousarray(-b), np.zeros(shape)",
        tests=(f"{_SBC}[gamma]",),
        why="conditional missing a term: the Gamma prior's (a - 1) log u is dropped, so the "
            "sweep samples Exponential(b) priors"),
    Mutation(
        id="prior-gamma-accept-missing-log", path=_GC,
        old="if rng.standard_exponential() >= c * (u - 1.0 - math.log(u)):",
        new="if rng.standard_exponential() >= c * (u - 1.0):",
        tests=(f"{_T}::test_gamma_conditional_distribution",),
        why="conditional missing a term: the truncated-normal envelope's acceptance drops the "
            "(a - 1) log x part of the density"),
    Mutation(
        id="prior-col-tau-shape-counts-missing", path=_WC,
        old="shape = plan.alpha + 0.5 * np.bincount(group, minlength=size)",
        new="shape = plan.alpha + 0.5 * (obs.shape[0] if plan.axis == \"col\" "
            "else obs.shape[1])",
        tests=(f"{_SBC}[gamma_col_tau]",),
        why="wrong missing-data mask: the per-column precision's Gamma shape counts the "
            "column's missing entries"),
    Mutation(
        id="prior-student-lambda-rate-no-nu", path=_WC,
        old="1.0 / (0.5 * (nu + scale * resid * resid))",
        new="1.0 / (0.5 * (scale * resid * resid))",
        tests=("tests/gaussian/test_exact_conditionals_gaussian.py::"
               "test_weighted_sweep_every_entry_follows_its_conditional[col_tau_student]",
               f"{_SBC}[student]"),
        why="wrong rate of a conjugate update: the Student-t latent precision's rate misses "
            "the prior's nu / 2"),
    Mutation(
        id="prior-col-tau-applied-per-row", path=_WC,
        old="        return tau[group], tau",
        new="        return tau[obs.rows if plan.axis == \"col\" else obs.cols], tau",
        tests=("tests/gaussian/test_exact_conditionals_gaussian.py::"
               "test_weighted_sweep_every_entry_follows_its_conditional[row_tau]",
               "tests/gaussian/test_exact_conditionals_gaussian.py::"
               "test_weighted_sweep_every_entry_follows_its_conditional[col_tau_student]",
               f"{_SBC}[row_tau]", f"{_SBC}[gamma_col_tau]"),
        why="wrong index: a per-column precision weighs the entries of row j (and per-row "
            "ones the entries of column i)"),
    Mutation(
        id="prior-weighted-precision-unweighted", path=_WC,
        old="s2 += wb[e] * b[e]",
        new="s2 += b[e] * b[e]",
        tests=(f"{_SBC}[row_tau]",),
        why="conditional missing a term: the factor's conditional precision ignores the "
            "entries' noise weights (the linear term keeps them)"),
    Mutation(
        id="prior-student-tau-ignores-lambda", path=_WC,
        old="sq = resid * resid if lam is None else lam * resid * resid",
        new="sq = resid * resid",
        tests=("tests/gaussian/test_exact_conditionals_gaussian.py::"
               "test_weighted_sweep_every_entry_follows_its_conditional[col_tau_student]",
               f"{_SBC}[student]"),
        why="stale sufficient statistic: the Student-t scale's Gamma rate sums r^2 instead of "
            "lambda r^2"),
    Mutation(
        id="prior-recognize-gamma-params-swapped", path=_REC,
        old='out = {"alpha": a, "beta": _param(beta, shape, free, transposed, memo)}',
        new='out = {"beta": a, "alpha": _param(beta, shape, free, transposed, memo)}',
        tests=(f"{_T}::test_recognized_forms",),
        why="misread parameter: a Gamma prior's shape taken as its rate"),
    # exact conditionals of every entry (tests/gaussian/test_exact_conditionals.py)
    Mutation(
        id="exact-prior-halfsweep-drops-prior", path=_PC,
        old="lin = tau * (s1 + old * s2) + Lin[i, k]", new="lin = tau * (s1 + old * s2)",
        tests=("tests/gaussian/test_exact_conditionals.py::"
               "test_nmf_prior_sweep_every_entry_follows_its_truncated_normal[residual]",),
        why="conditional missing a term: the residual-path per-entry prior conditional without "
            "the prior's linear term"),
    Mutation(
        id="exact-prior-gram-drops-prior", path=_PC,
        old="lin = tau * (c[k] - t[k] + old * g[k, k]) + Lin[i, k]",
        new="lin = tau * (c[k] - t[k] + old * g[k, k])",
        tests=("tests/gaussian/test_exact_conditionals.py::"
               "test_nmf_prior_sweep_every_entry_follows_its_truncated_normal[gram]",),
        why="conditional missing a term: the Gram-path per-entry prior conditional without the "
            "prior's linear term"),
    # exact conditionals of the weighted sweep (tests/gaussian/test_exact_conditionals_gaussian.py)
    Mutation(
        id="exact-weighted-drops-prior-precision", path=_WC,
        old="prec = s2 + Q[i, k]", new="prec = s2",
        tests=("tests/gaussian/test_exact_conditionals_gaussian.py::"
               "test_weighted_sweep_every_entry_follows_its_conditional[col_tau_student]",),
        why="conditional missing a term: the weighted sweep's per-entry conditional precision "
            "without the prior's quadratic term (a HalfNormal factor)"),
    # the collapsed Metropolis-Hastings update of Student-t precisions
    # (tests/gaussian/test_student_collapsed.py)
    Mutation(
        id="prior-student-collapsed-proposal-ratio-flipped", path=_WC,
        old="(np.log1p(z * z / df) - np.log1p(z_old * z_old / df))",
        new="(np.log1p(z_old * z_old / df) - np.log1p(z * z / df))",
        tests=("tests/gaussian/test_student_collapsed.py::test_collapsed_precision_keeps_the_conditional",),
        why="wrong acceptance ratio: the independence proposal's density ratio inverted"),
    Mutation(
        id="prior-student-collapsed-always-accepts", path=_WC,
        old="if np.log(rng.random()) < log_ratio:",
        new="if np.log(rng.random()) < np.inf:",
        tests=("tests/gaussian/test_student_collapsed.py::test_collapsed_precision_keeps_the_conditional",),
        why="missing accept/reject: the Laplace proposal taken as an exact draw"),
    Mutation(
        id="prior-student-collapsed-exponent-nu", path=_WC,
        old="- 0.5 * (nu + 1.0) * acc",
        new="- 0.5 * nu * acc",
        tests=("tests/gaussian/test_student_collapsed.py::test_collapsed_precision_keeps_the_conditional",),
        why="conditional with a wrong term: the marginal Student-t likelihood's exponent "
            "(nu + 1) / 2 taken as nu / 2"),
    Mutation(
        id="prior-student-collapsed-jacobian-dropped", path=_WC,
        old="        a = alpha[g] + 0.5 * n\n",
        new="        a = alpha[g] + 0.5 * n - 1.0\n",
        tests=("tests/gaussian/test_student_collapsed.py::test_collapsed_precision_keeps_the_conditional",),
        why="missing Jacobian: the target in log tau without the factor tau of the change of "
            "variables"),
]
