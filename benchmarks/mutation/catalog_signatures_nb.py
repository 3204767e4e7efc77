"""Mutations of the negative-binomial likelihood of the signatures' Gibbs sweep
(``bnmfzoo/signatures/_gibbs.py``: ``_nb_sweeps``, ``_phi_logpost``, ``_phi_slice``) and of its
option in the compressive rank posterior (``bnmfzoo/signatures/compressive.py``)."""

from benchmarks.mutation._harness import Mutation

_GIBBS = "bnmfzoo/signatures/_gibbs.py"
_COMP = "bnmfzoo/signatures/compressive.py"
_T = "tests/signatures/test_signature_nb.py"
_THETA = f"{_T}::test_theta_step_is_its_gamma_conditional"
_LOGP = f"{_T}::test_phi_log_density_is_the_negative_binomial_likelihood"
_SLICE = f"{_T}::test_phi_slice_step_keeps_its_posterior"
_GEWEKE = f"{_T}::test_whole_sweep_keeps_the_prior"
_E2E = f"{_T}::test_overdispersed_catalogue_gets_its_number_of_signatures"

MUTATIONS = [
    Mutation(
        id="nb-theta-rate-without-mean", path=_GIBBS,
        old="np.random.gamma(phi + Yd[d, n], 1.0 / (phi + lam[d, n])),",
        new="np.random.gamma(phi + Yd[d, n], 1.0 / (phi + 1.0)),",
        tests=(_THETA, _GEWEKE),
        why="theta's Gamma rate forgets the cell's mean (T V)_dn"),
    Mutation(
        id="nb-theta-shape-without-count", path=_GIBBS,
        old="np.random.gamma(phi + Yd[d, n], 1.0 / (phi + lam[d, n])),",
        new="np.random.gamma(phi, 1.0 / (phi + lam[d, n])),",
        tests=(_THETA, _GEWEKE),
        why="theta's Gamma shape forgets the cell's count"),
    Mutation(
        id="nb-exposure-rate-poisson", path=_GIBBS,
        old="1.0 / (bn + rk[k] + C[n, k])),",
        new="1.0 / (bn + rk[k] + 1.0)),",
        tests=(_GEWEKE,),
        why="the exposures' rate is the Poisson one (sum_d T_dk = 1), not sum_d theta_dn T_dk"),
    Mutation(
        id="nb-signatures-always-accept", path=_GIBBS,
        old="            if math.log(1.0 - np.random.random()) < log_r:\n",
        new="            if math.log(1.0 - np.random.random()) < log_r or True:\n",
        tests=(_GEWEKE,),
        why="the tilted-Dirichlet proposal is accepted without its Metropolis-Hastings "
            "correction"),
    Mutation(
        id="nb-signatures-ratio-sign", path=_GIBBS,
        old="            log_r = -(u_new - u_old) + A * (math.log(u_new) - math.log(u_old))\n",
        new="            log_r = (u_new - u_old) - A * (math.log(u_new) - math.log(u_old))\n",
        tests=(_GEWEKE,),
        why="the Metropolis-Hastings ratio of the signature step is inverted"),
    Mutation(
        id="nb-signature-weights-stale-theta", path=_GIBBS,
        old="                    W[d, k] += th * Vt[n, k]\n",
        new="                    W[d, k] += Vt[n, k]\n",
        tests=(_GEWEKE,),
        why="the signatures' tilt ignores theta (the Poisson weights sum_n V_kn)"),
    Mutation(
        id="nb-phi-no-jacobian", path=_GIBBS,
        old="    lp = a_p * eta - b_p * phi + D * N * phi * eta\n",
        new="    lp = (a_p - 1.0) * eta - b_p * phi + D * N * phi * eta\n",
        tests=(_LOGP, _SLICE),
        why="the density of log phi misses the Jacobian of the log transform"),
    Mutation(
        id="nb-phi-no-lgamma", path=_GIBBS,
        old="        lp += hs[i] * (math.lgamma(xs[i] + phi) - lg)\n",
        new="        lp += hs[i] * (math.lgamma(xs[i] + phi) - lg) * 0.0\n",
        tests=(_LOGP, _SLICE),
        why="the negative-binomial likelihood of phi misses its Gamma-function terms"),
    Mutation(
        id="nb-slice-shrinks-wrong-side", path=_GIBBS,
        old="        if eta < eta0:\n",
        new="        if eta > eta0:\n",
        tests=(_SLICE,),
        why="the slice sampler shrinks the bracket on the wrong side of the current point"),
    Mutation(
        id="nb-option-ignored", path=_COMP,
        old='init, nb=likelihood == "nb", shape=shape,',
        new="init, nb=False, shape=shape,",
        tests=(_E2E,),
        why="likelihood='nb' runs the Poisson model"),
]
