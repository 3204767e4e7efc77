"""Simulation-based calibration of the Gibbs sweeps (GibbsNMF / GibbsNMTF numeric core).

The SBC runs the numeric sweep directly (``nmf_sweep`` / ``nmtf_sweep``, problems in
``_sbc_cases.py``), which is the code path the PyMC step methods call (``test_gibbs_step.py``
checks that the step reproduces the kernel's draws exactly for the same generator).

Tested quantities are functions of the parameters that do not depend on the arbitrary labelling
of the factors (reconstruction entries ``A W`` / ``F S G^T``, ``tau``, sorted ARD rates), plus the
raw factor entries for NMF without ARD, where the weak-signal prior lets the chain switch labels.
Any function of the parameters has uniform SBC ranks under an exact sampler.

Thinning: every simulation's chain (100 burn-in sweeps from an independent prior draw) runs
until the smallest bulk/tail ESS over its tested scalars reaches 30 (length 200 * 2^k sweeps, at
most 25,600) and is thinned by ``ceil(n / ESS)``; nothing is hard-coded. The autocorrelation
times differ by orders of magnitude between simulated data sets (NMTF with ARD: median 22,
quartiles 5-68, max 418 over 10 chains of 4000 sweeps; strong-signal data sets drift slowly along
the scale ridge of the ARD rates).

Threshold: ``SBCResult.passed(alpha=0.01)`` rejects when the smallest of the ``n_tests`` KS
p-values is below ``0.01 / n_tests`` (Bonferroni), so a correct sampler should fail with
probability <= 1%. Measured thinning and false-failure rates, each case over many seeds once
(``nice -n 10 python -m benchmarks.calibration.sbc_false_failure <case> --seeds 1000:<stop>``;
"second level" is the Bonferroni-adjusted KS test of each scalar's p-values across the seeds):

FF_GIBBS

The seeds are the ones first chosen for each case and are never moved after a failure.
"""

import pytest
from _sbc_cases import CASES, WRONG


@pytest.mark.parametrize(
    "case, seed",
    [("nmf-gram", 11), ("nmf-ard-gram", 12), ("nmf-residual", 15), ("nmf-ard-residual", 16),
     ("nmtf", 13),
     # about 30 s of CPU (its slowest chains run to the 25,600-sweep cap): slow
     pytest.param("nmtf-ard", 14, marks=pytest.mark.slow)],
)
def test_sbc_gibbs(case, seed):
    result = CASES[case].run(seed)  # 100 simulations, thinned by measured ESS
    # nearly every chain reached the ESS target of 30 within 25,600 sweeps (the rest keep
    # fewer draws: ``ceil(n / thin)`` of ``n / ESS``-spaced ones)
    assert (result.ess >= 30).mean() >= 0.9, (result.ess < 30).sum()
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)


def test_sbc_detects_wrong_sampler():
    # same test, same seed as the correct NMF sampler above, variance of the factor
    # conditionals doubled: must be rejected at the same Bonferroni level
    result = WRONG.run(11)
    assert not result.passed(alpha=0.01), result.min_pvalue


@pytest.mark.slow
@pytest.mark.parametrize("case", ["nmf-gram", "nmf-ard-gram", "nmtf", "nmtf-ard"])
def test_sbc_gibbs_long(case):
    """1000 simulations, thinned by measured ESS. NMTF with ARD: FF_LONG."""
    result = CASES[case].run(21, 1000)
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)
