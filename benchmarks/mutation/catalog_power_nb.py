"""Mutations of the negative binomial's Gamma-mixed power path
(``bnmfzoo/inference/counts/tempering/_power_nb.py``), its reference path
(``_reference_nb.py``, ``reference_path.ReferenceDataPath``) and the tempering's reading of a path
that is not geometric (``reference_tempering``: swaps and the stepping stone of increments).
Each is caught by a fast exact test: a rung's sweep against importance sampling
(``tests/counts/test_counts_power_nb.py``, ``tests/tempering/test_reference_nb.py``), the log
Z of one cell against quadrature, the path's data term against its closed form."""

from benchmarks.mutation._harness import Mutation

_P = "bnmfzoo/inference/counts/tempering/_power_nb.py"
_R = "bnmfzoo/inference/counts/tempering/_reference_nb.py"
_RP = "bnmfzoo/inference/reference_path.py"
_RT = "bnmfzoo/inference/reference_tempering.py"
_H = "bnmfzoo/inference/counts/tempering/_hmc_nb.py"
_L = "bnmfzoo/inference/counts/tempering/_local.py"
_TP = "tests/counts/test_counts_power_nb.py::"
_RUNG = _TP + "test_power_nb_sweep_keeps_its_rung"
_ENDS = _TP + "test_power_nb_path_ends_and_batch_agree"
_TR = "tests/tempering/test_reference_nb.py::"
_RRUNG = _TR + "test_a_rung_of_the_nb_reference_path_keeps_its_target"
_DATA = _TR + "test_the_nb_reference_path_reads_its_data_term"
_SMCQ = _TR + "test_nb_reference_path_smc_log_z_matches_quadrature"
_PTQ = _TR + "test_nb_reference_tempering_log_z_matches_quadrature"
_SWAP = _TR + "test_the_tempering_swaps_a_path_by_its_log_target"

MUTATIONS = [
    Mutation(
        id="power-nb-latent-t-dropped", path=_P,
        old="            return c * base + out\n",
        new="            return c * base\n",
        tests=(_RUNG,),
        why="the latent t of the fractional counts leaves the rates: the sweep samples the "
            "rung with Gamma(r + n) / Gamma(r) in place of Gamma(r + beta x) / Gamma(r)"),
    Mutation(
        id="power-nb-rate-linear-in-beta", path=_P,
        old="        c = alpha * math.log1p(beta / alpha)  # the rate of A W per unit offset\n",
        new=("        c = beta * alpha * math.log1p(1.0 / alpha)"
             "  # the rate of A W per unit offset\n"),
        tests=(_RUNG,),
        why="the rung's Gamma-mixture factor (alpha / (alpha + beta))^r replaced by the NB's "
            "raised to beta: another target below beta = 1"),
    Mutation(
        id="power-nb-beta-variable-shape", path=_P,
        old="            g1 = rng.gamma(r + rung.data.counts[frac] - rung.delta[frac])\n",
        new="            g1 = rng.gamma(r + rung.data.counts[frac])\n",
        tests=(_RUNG,),
        why="u ~ Beta(r + n, delta) instead of Beta(r + n - delta, delta): t too small"),
    Mutation(
        id="power-nb-dispersion-slice-at-beta-one", path=_P,
        old="                x, lfact, a * mu, a * tot, a, beta)\n",
        new="                x, lfact, a * mu, a * tot, a, 1.0)\n",
        tests=(_RUNG,),
        why="the dispersion's slice step targets the posterior's conditional at every rung"),
    Mutation(
        id="power-nb-log-target-without-zeros", path=_P,
        old="            return nz.sum(axis=1) + tot * np.log(alpha / (alpha + beta))\n",
        new="            return nz.sum(axis=1)\n",
        tests=(_ENDS,),
        why="the batched log target (the SMC's next-beta search) drops the zero cells' term"),
    Mutation(
        id="reference-nb-weights-swapped", path=_R,
        old="        mix = dict(aA=b * self.aA + (1.0 - b) * q[\"aA\"], "
            "bA=b * self.bA + (1.0 - b) * q[\"bA\"],\n",
        new="        mix = dict(aA=(1.0 - b) * self.aA + b * q[\"aA\"], "
            "bA=(1.0 - b) * self.bA + b * q[\"bA\"],\n",
        tests=(_RRUNG,),
        why="the rung's prior mixes the reference and the prior of A with swapped weights"),
    Mutation(
        id="reference-nb-dispersion-prior-unmixed", path=_R,
        old="        if self.learn_alpha:\n            (a0, b0), (aq, bq)",
        new="        if False:\n            (a0, b0), (aq, bq)",
        tests=(_RRUNG,),
        why="the dispersion keeps the prior's Gamma at every rung, not q^(1 - b) p0^b"),
    Mutation(
        id="reference-data-path-prior-ratio-dropped", path=_RP,
        old=("        return b * (a.log_p0(state) - a.log_q(self.q, state))"
             " + a.log_data(state, b)\n"),
        new="        return a.log_data(state, b)\n",
        tests=(_DATA, _SMCQ),
        why="the reference path's log target forgets b (log p0 - log q): the SMC's weights and "
            "the tempering's swaps follow another path than the sweeps sample"),
    Mutation(
        id="reference-pt-path-swaps-read-as-geometric", path=_RT,
        old="        prob, acc = swap_pass(states, betas, ll, rng, parity, targets)\n",
        new="        prob, acc = swap_pass(states, betas, ll, rng, parity)\n",
        tests=(_SWAP,),
        why="the kept scans swap a path that is not geometric as if it were (b' - b) l'"),
    Mutation(
        id="reference-pt-path-stepping-stone-geometric", path=_RT,
        old="    if _targets(rungs) is not None:\n        log_z, terms = stepping_stone_path(",
        new="    if False:\n        log_z, terms = stepping_stone_path(",
        tests=(_PTQ,),
        why="the stepping stone of a path that is not geometric computed as (b' - b) l'"),
    Mutation(
        id="nb-mode-width-at-the-smc-moves", path="bnmfzoo/inference/smc_masses.py",
        old='                   lambda s: (s["A"], s["W"]), width_sweeps=WIDTH_SWEEPS)\n',
        new=('                   lambda s: (s["A"], s["W"]),\n'
             '                   width_sweeps=WIDTH_SWEEPS if poisson else 0)\n'),
        tests=("tests/tempering/test_smc_masses.py::"
               "test_a_count_modes_width_is_measured_over_more_sweeps",),
        why="an NB mode's width measured 2 sweeps apart: the cut splits one broad mode into "
            "many, each estimated (and the run refused as one mode counted twice)"),
    Mutation(
        id="nb-chain-starts-from-raw-prior-draws", path="bnmfzoo/inference/mode_bridge.py",
        old="    if (fam_name in (\"poisson\", \"negative_binomial\") and problem is not None\n",
        new="    if (fam_name in (\"poisson\",) and problem is not None\n",
        tests=("tests/tempering/test_kl_chain_starts.py::"
               "test_kl_starts_are_the_best_of_the_refined_prior_draws",),
        why="the NB's mode search starts from raw prior draws, not the best KL-refined ones"),
    Mutation(
        id="nb-hmc-density-without-the-shape-term", path=_H,
        old="        lp += r * la\n",
        new="",
        tests=(_TR + "test_the_nb_rungs_hmc_density_and_gradient_are_the_paths",),
        why="the NB rung's HMC density drops r log(alpha / (alpha + b)): HMC's Metropolis test "
            "targets another density than the sweep"),
    Mutation(
        id="nb-hmc-gradient-digamma-shifted", path=_H,
        old="            g = ao * (digamma(r + bx) - digamma(r) + la)\n",
        new="            g = ao * (digamma(r + bx + 1.0) - digamma(r) + la)\n",
        tests=(_TR + "test_the_nb_rungs_hmc_density_and_gradient_are_the_paths",),
        why="a gradient that is not the density's: exact still, but the trajectories drift"),
    Mutation(
        id="rung-moves-nb-runs-the-poisson-kernel", path=_L,
        old="        if self.nb:\n            return hmc_step_nb(",
        new="        if False:\n            return hmc_step_nb(",
        tests=(_TR + "test_a_rung_with_hmc_keeps_its_target",),
        why="an NB rung moved by the Poisson rung's HMC: it keeps Poisson^b, not the NB path"),
    Mutation(
        id="nb-narrower-reference-never-used", path=_RT,
        old=("            if lw < fitted[k][4]:\n"
             "                betas, q, fitted[k] = bw, qw, (\"marginal\",)"),
        new=("            if False:\n"
             "                betas, q, fitted[k] = bw, qw, (\"marginal\",)"),
        tests=(_TR + "test_the_nb_tempering_starts_from_the_narrower_reference_when_its_path_is_"
                     "shorter",),
        why="the narrower reference is piloted but the tempering still starts from the "
            "default's longer ladder (barrier 17 against 12 on breast SBS96)"),
    Mutation(
        id="nb-narrower-reference-wrong-widening-recorded", path=_RT,
        old='("marginal",) + fitted[k][1:3] + (w, lw)',
        new='("marginal",) + fitted[k][1:3] + (widen, lw)',
        tests=(_TR + "test_the_nb_tempering_starts_from_the_narrower_reference_when_its_path_is_"
                     "shorter",),
        why="the command reports the default widening for a run tempered from the narrower one"),
]
