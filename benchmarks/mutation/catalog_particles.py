"""Mutations of the Stein diagnostics (``bnmfzoo/diagnostics/_stein/``) and the particle methods
(``bnmfzoo/inference/particles/``): Stein kernel terms, scores' Jacobian, base-kernel
derivatives, Stein weights (QP), SVGD's repulsive term, HMC rejuvenation, resampling."""

from benchmarks.mutation._harness import Mutation

_SK = "bnmfzoo/diagnostics/_stein/_stein_kernel.py"
_SS = "bnmfzoo/diagnostics/_stein/_stein_scores.py"
_KE = "bnmfzoo/diagnostics/_stein/_kernels.py"
_WE = "bnmfzoo/diagnostics/_stein/weights.py"
_TS = "tests/diagnostics/test_stein.py"

MUTATIONS = [
    Mutation(
        id="stein-kernel-no-trace-dim-term", path=_SK,
        old="K += -2.0 * dims[name] * d1[name] - 4.0 * sqdist[name] * d2[name]",
        new="K += -4.0 * sqdist[name] * d2[name]",
        tests=(f"{_TS}::test_stein_kernel_matches_autodiff[sum]",),
        why="Stein kernel without part of its trace term tr(grad grad' k) (the -2 d F term)"),
    Mutation(
        id="stein-kernel-cross-term-halved", path=_SK,
        old="K += 2.0 * d1[name] * cross[name]",
        new="K += d1[name] * cross[name]",
        tests=(f"{_TS}::test_stein_kernel_matches_autodiff[sum]",),
        why="Stein kernel's score-gradient cross terms S^T grad' k + S'^T grad k halved"),
    Mutation(
        id="stein-kernel-score-gram-last-block", path=_SK,
        old="score_gram = score_gram + s @ s.T",
        new="score_gram = s @ s.T",
        tests=(f"{_TS}::test_stein_kernel_matches_autodiff[sum]",),
        why="stale sum: the S^T S' k term keeps only the last block's scores"),
    Mutation(
        id="stein-score-no-log-jacobian", path=_SS,
        old="            logp = model.logp(jacobian=True)\n",
        new="            logp = model.logp(jacobian=False)\n",
        tests=(f"{_TS}::test_score_exponential_gaussian_unconstrained",),
        why="missing Jacobian: the unconstrained-space score without the transform's "
            "log-Jacobian"),
    Mutation(
        id="stein-imq-second-derivative", path=_KE,
        old="f2 = self.b * (self.b - 1.0) * f / u**2",
        new="f2 = self.b * self.b * f / u**2",
        tests=(f"{_TS}::test_stein_kernel_matches_autodiff[sum]",),
        why="wrong derivative: the IMQ base kernel's second derivative d2f/dr2^2"),
    Mutation(
        id="stein-product-kernel-d1-own-factor", path=_KE,
        old="            d1[name] = parts[name][1] * others\n",
        new="            d1[name] = parts[name][1]\n",
        tests=(f"{_TS}::test_stein_kernel_matches_autodiff[product]",),
        why="product block kernel: a block's derivative misses the other blocks' factors"),
    Mutation(
        id="stein-weights-simplex-projection-off-by-one", path=_WE,
        old="theta = css[rho] / (rho + 1.0)",
        new="theta = css[rho] / (rho + 2.0)",
        tests=("tests/particles/test_stein_weights.py::test_simplex_projection",
               "tests/particles/test_stein_weights.py::test_weights_on_simplex_and_optimal[NUMPY]"),
        why="off-by-one count: the simplex projection's threshold divides by rho + 2"),
    # (K w instead of 2 K w here is an equivalent mutant: a half step converges to the same
    # optimum, and was reported NOT CAUGHT; the sign error below is the realistic bug)
    Mutation(
        id="stein-weights-gradient-sign", path=_WE,
        old="w_new = _project_simplex(y - (2.0 * (K @ y)) / lipschitz)",
        new="w_new = _project_simplex(y + (2.0 * (K @ y)) / lipschitz)",
        tests=("tests/particles/test_stein_weights.py::test_weights_on_simplex_and_optimal[NUMPY]",
               "tests/particles/test_stein_weights.py::test_solvers_agree"),
        why="wrong sign of the gradient of w^T K w: the QP's projected gradient ascends"),
    Mutation(
        id="particles-svgd-no-repulsive-term", path="bnmfzoo/inference/particles/svgd.py",
        old="              + 2 * (d1[a_name].T @ fa - d1[a_name].sum(axis=0)[:, None] * fa)) / M",
        new="              + 0 * (d1[a_name].T @ fa - d1[a_name].sum(axis=0)[:, None] * fa)) / M",
        tests=("tests/particles/test_svgd_dsgd.py::test_svgd_direction_matches_pairwise_loop",),
        why="SVGD direction without the kernel-gradient (repulsive) term for A"),
    Mutation(
        id="particles-hmc-no-kinetic-energy", path="bnmfzoo/inference/particles/rejuvenate.py",
        old="log_a = min(0.0, lpn - 0.5 * pn @ pn - h0)",
        new="log_a = min(0.0, lpn - h0)",
        tests=("tests/particles/test_particle_kernels_exact.py::"
               "test_hmc_keeps_exact_draws_exact_at_a_large_step",
               "tests/particles/test_rejuvenate.py::test_hmc_kernel_leaves_the_target_invariant"),
        why="HMC rejuvenation's acceptance ratio without the final kinetic energy"),
    Mutation(
        id="particles-rejuvenate-no-log-jacobian", path="bnmfzoo/inference/particles/rejuvenate.py",
        old="        logp = model.logp(jacobian=True)\n",
        new="        logp = model.logp(jacobian=False)\n",
        tests=("tests/particles/test_rejuvenate.py::test_value_space_matches_pymc",
               "tests/particles/test_rejuvenate.py::test_rejuvenated_particles_match_a_quadrature_posterior"),
        why="missing Jacobian: HMC rejuvenation in PyMC's value space without the log-Jacobian"),
    Mutation(
        id="particles-resample-unnormalized", path="bnmfzoo/inference/particles/weighted.py",
        old="    u = (rng.random() + np.arange(n_draws)) / n_draws\n",
        new="    u = (rng.random() + np.arange(n_draws)) / (n_draws + 1)\n",
        tests=("tests/particles/test_particle_kernels_exact.py::"
               "test_systematic_resampling_counts_are_floor_or_ceil",
               "tests/particles/test_particles.py::test_systematic_resample_property"),
        why="off-by-one count: systematic resampling's grid divides by n_draws + 1"),
]
