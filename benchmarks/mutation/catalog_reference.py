"""Mutations of the per-mode evidence along the reference path
(``bnmfzoo/inference/reference_path.py``): the tempered term ``log p0 + log L - log q`` (the
reference's sign, the prior dropped), the power posterior's rung kept stale, the tempered noise
precision. Each is caught by a fast test whose answer is known by quadrature (rank-1 Poisson
and exponential-Gaussian models on a 1 x 2 matrix). Swapping the weights of the reference and
the prior in the per-entry conjugate priors, or leaving the truncated normal's linear term
untempered, was tried and is NOT caught by these rank-1 tests (the log Z shifts by about 0.06
nats against a tolerance of 4 x 0.02: a rank-1 posterior's scale ridge makes the fitted
reference of an entry close to its prior); those two are not listed."""

from benchmarks.mutation._harness import Mutation

_RPO = "bnmfzoo/inference/counts/tempering/_reference_poisson.py"
_RP = "bnmfzoo/inference/reference_path.py"
_RG = "bnmfzoo/inference/gaussian/modes/_reference_gaussian.py"
_T = "tests/tempering/test_reference_path.py::"
_POIS = _T + "test_poisson_mode_log_z_matches_quadrature"
_GAUS = _T + "test_gaussian_mode_log_z_matches_quadrature"

MUTATIONS = [
    Mutation(
        id="reference-log-q-sign-flipped", path=_RP,
        old="return a.log_p0(state) + a.loglik(state) - a.log_q(self.q, state)",
        new="return a.log_p0(state) + a.loglik(state) + a.log_q(self.q, state)",
        tests=(_POIS, _GAUS),
        why="wrong sign of the reference in the incremental weight: the path ends at "
            "p0 L q^2, not the posterior, so the mode's log Z is wrong"),
    Mutation(
        id="reference-stale-power-rung", path=_RPO,
        old="            if self._rung[0] != b:\n",
        new="            if self._rung[0] is None:\n",
        tests=(_POIS,),
        why="the power posterior's latent counts kept from the first temperature: the sweep "
            "at every later b samples the likelihood raised to the first b"),
    Mutation(
        id="reference-prior-dropped-from-tempered-term", path=_RP,
        old="return a.log_p0(state) + a.loglik(state) - a.log_q(self.q, state)",
        new="return a.loglik(state) - a.log_q(self.q, state)",
        tests=(_POIS, _GAUS),
        why="the prior missing from the incremental weight while the sweeps still temper it: "
            "the weights and the moves target different paths"),
    Mutation(
        id="reference-noise-precision-untempered", path=_RG,
        old='ext["tau"] = b * tau',
        new='ext["tau"] = tau',
        tests=(_GAUS,),
        why="the likelihood's precision not multiplied by b: the sweep samples q^(1-b) p0^b L "
            "instead of q^(1-b) (p0 L)^b"),
]
