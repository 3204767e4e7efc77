"""Chib's evidence estimate (``bnmfzoo/signatures/evidence.py``) against an exact one.

The estimate gives the signature workflow its posterior over ranks and checks the VB bound's
rank choice (Cemgil 2009's model-order experiment), so it must itself be right. The model:
Dirichlet(1) signatures, Gamma(1, 1) exposures, Poisson counts. On a 3 x 3 matrix with two
well-separated factors the Gibbs chain stays in one of the 2 relabellings, so the relabelling
average matters (log 2 = 0.69 nats) and is checked too.

Tolerance: the exact value is a prior Monte-Carlo average (standard error 0.04 with 200,000
draws, delta method; exact seeds 0-2 gave -48.00, -47.99, -48.01). Over 50 seeds Chib's
estimate had mean -47.95 and sd 0.011 (one row per block) or 0.012 (one block), largest
deviation from the exact value 0.08. 0.35 nats is about 8 combined standard deviations, and
below the 0.69 a missing relabelling term would cost: false-failure rate below 1e-6 under normal
errors (none of the 100 runs came near). At rank 1 the ordinates are exact (every count goes to
the one signature): sd 5e-15 over 50 seeds, 0.012 from the exact value. About 7 CPU seconds.
"""

import math

import numpy as np
import pytest

from bnmfzoo.signatures.checks import exact_log_evidence
from bnmfzoo.signatures.evidence import chib_log_evidence

PRIOR = (1.0, 1.0, 1.0)  # Dirichlet(1) signatures, Gamma(1, 1) exposures, as in the exact value

X = np.array([[12, 0, 1], [0, 15, 10], [9, 1, 0]])


@pytest.fixture(scope="module")
def exact():
    value, se = exact_log_evidence(X, 2, n_prior=200_000, random_seed=0)
    assert se < 0.12
    return value


@pytest.mark.parametrize("block_rows", [1, 5])
def test_chib_matches_exact_evidence_with_label_switching(exact, block_rows):
    """One block of rows (5 >= 3 rows) or three (one row each: the reduced runs)."""
    out = chib_log_evidence(X, 2, prior=PRIOR, n_burn=300, n_keep=2000,
                            block_rows=block_rows, random_seed=3)
    assert abs(out["log_evidence"] - exact) < 0.35
    # the chain stayed in one labelling: without the average the ordinate is log 2 too high
    assert abs(out["log_ord_T_no_perm"] - out["log_ord_T"] - math.log(2)) < 0.05


def test_chib_rank_one_matches_exact_evidence():
    Y = np.array([[1, 1, 0], [2, 6, 0], [2, 4, 0]])
    exact, _ = exact_log_evidence(Y, 1, n_prior=50_000, random_seed=0)
    out = chib_log_evidence(Y, 1, prior=PRIOR, n_burn=200, n_keep=1000, random_seed=0)
    assert abs(out["log_evidence"] - exact) < 0.1
    assert out["log_ord_T"] == out["log_ord_T_no_perm"]
