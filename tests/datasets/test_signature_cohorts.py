"""Synthetic signature cohorts: shapes and labels, same seed same cohort, counts whose mean is
the generating product, sparse exposures, overdispersion, bad arguments."""

import numpy as np
import pytest
import xarray as xr

from bnmfzoo.datasets.signature_cohorts import DESIGNS, CohortDesign, signature_cohort

_CHANNELS = [f"{a}[{s}]{b}" for s in ("C>A", "C>G", "C>T", "T>A", "T>C", "T>G")
             for a in "ACGT" for b in "ACGT"]


def _fake_reference(seed=0):
    """A reference with every design's signature name and random rows (no data needed)."""
    names = sorted({s for d in DESIGNS.values() for s in d.signatures})
    vals = np.random.default_rng(seed).gamma(0.3, 1.0, (len(names), 96)) + 1e-4
    vals /= vals.sum(1, keepdims=True)
    return xr.DataArray(vals, dims=("row", "col"), coords={"row": names, "col": _CHANNELS})


@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_shapes_labels_and_product(design):
    ref = _fake_reference()
    c = signature_cohort(design, n_genomes=40, random_seed=1, reference=ref)
    K = len(DESIGNS[design].signatures)
    assert c.rank == K and c.design == design
    assert c.counts.shape == (40, 96) and c.counts.dims == ("row", "col")
    assert list(c.counts.col.values) == _CHANNELS
    assert list(c.signatures.signature.values) == list(DESIGNS[design].signatures)
    assert c.exposures.shape == (40, K)
    np.testing.assert_allclose(c.signatures.sum("col"), 1.0, rtol=1e-12)
    # each signature row is the reference's row (renormalized)
    for k, name in enumerate(c.signatures.signature.values):
        np.testing.assert_allclose(c.signatures.values[k], ref.sel(row=name).values, rtol=1e-10)
    # the expected counts are exactly the generating product
    np.testing.assert_allclose(c.expected.values, c.exposures.values @ c.signatures.values,
                               rtol=1e-12)
    X = c.counts.values
    assert (X >= 0).all() and np.array_equal(X, np.round(X))
    # sparse exposures: every genome uses at least one signature, and not all of them
    used = (c.exposures.values > 0).sum(1)
    assert used.min() >= 1 and used.mean() < K


def test_same_seed_same_cohort_and_seeds_differ():
    ref = _fake_reference()
    a = signature_cohort("correlated", n_genomes=30, random_seed=7, reference=ref,
                         overdispersion=5.0)
    b = signature_cohort("correlated", n_genomes=30, random_seed=7, reference=ref,
                         overdispersion=5.0)
    c = signature_cohort("correlated", n_genomes=30, random_seed=8, reference=ref,
                         overdispersion=5.0)
    assert np.array_equal(a.counts.values, b.counts.values)
    assert np.array_equal(a.exposures.values, b.exposures.values)
    assert not np.array_equal(a.counts.values, c.counts.values)


def test_co_occurring_groups_are_active_together():
    c = signature_cohort("correlated", n_genomes=300, random_seed=2, reference=_fake_reference())
    E = c.exposures.to_pandas() > 0
    assert (E["SBS2"] == E["SBS13"]).all()
    assert (E["SBS7a"] == E["SBS7b"]).all() and (E["SBS7b"] == E["SBS7c"]).all()
    # and independent groups are not (SBS1 prevalence 0.8, SBS18 0.2)
    assert (E["SBS1"] != E["SBS18"]).any()


@pytest.mark.parametrize("phi", [None, 2.0])
def test_counts_have_the_generating_mean_and_variance(phi):
    """Sum of (x - mu) over all cells, standardized by the model's variance (mu for Poisson,
    mu + mu^2/phi for the negative binomial), is N(0, 1) by the CLT over 9,600 cells: |z| < 4
    fails with probability 6e-5. The variance ratio of the standardized residuals has standard
    error about sqrt(2 / 9600) ~ 0.015 for Poisson (heavier for NB: excess kurtosis), so the
    0.15 band is > 5 standard errors, and it separates Poisson (ratio 1) from NB with phi = 2
    taken as Poisson (ratio 1 + mu / phi, far above 2 at these burdens)."""
    c = signature_cohort("flat", n_genomes=100, random_seed=3, overdispersion=phi,
                         burden_median=500.0, reference=_fake_reference())
    X, mu = c.counts.values, c.expected.values
    var = mu if phi is None else mu + mu**2 / phi
    z = (X - mu).sum() / np.sqrt(var.sum())
    assert abs(z) < 4.0
    keep = mu > 1.0
    ratio = np.mean((X - mu)[keep] ** 2 / var[keep])
    assert abs(ratio - 1.0) < 0.15
    if phi is not None:  # visibly overdispersed against Poisson
        assert np.mean((X - mu)[keep] ** 2 / mu[keep]) > 2.0


def test_burden_is_lognormal_around_the_median():
    """Total expected mutations per genome ~ LogNormal(log 4000, 0.8): the median of 2,000
    draws has a standard error of about 0.8 * 1.2533 / sqrt(2000) = 0.022 on the log scale;
    0.1 is > 4 standard errors."""
    c = signature_cohort("flat", n_genomes=2000, random_seed=4, reference=_fake_reference())
    total = c.exposures.values.sum(1)
    assert abs(np.log(np.median(total)) - np.log(4000.0)) < 0.1
    assert abs(np.log(total).std() - 0.8) < 0.05


def test_custom_design_and_bad_arguments():
    ref = _fake_reference()
    d = CohortDesign(groups=((("SBS1",), 1.0), (("SBS5",), 0.5)), n_genomes=10)
    c = signature_cohort(d, random_seed=0, reference=ref)
    assert c.counts.shape == (10, 96) and c.design == "custom"
    with pytest.raises(ValueError, match="design"):
        signature_cohort("nope", reference=ref)
    with pytest.raises(TypeError, match="design"):
        signature_cohort(3, reference=ref)
    with pytest.raises(ValueError, match="n_genomes"):
        signature_cohort("flat", n_genomes=0, reference=ref)
    with pytest.raises(ValueError, match="overdispersion"):
        signature_cohort("flat", overdispersion=-1.0, reference=ref)
    with pytest.raises(ValueError, match="burden_median"):
        signature_cohort("flat", burden_median=float("nan"), reference=ref)
    with pytest.raises(TypeError, match="reference"):
        signature_cohort("flat", reference=np.ones((4, 96)))
    with pytest.raises(ValueError, match="SBS3"):
        signature_cohort("flat", reference=ref.drop_sel(row=["SBS3"]))


def test_cosmic_reference_sizes(data_home):
    """The designs' sizes on COSMIC v3.4: 4-21 signatures, 300-2,700 genomes."""
    sizes = {}
    for name in DESIGNS:
        c = signature_cohort(name, n_genomes=20, random_seed=0, data_home=data_home)
        sizes[name] = c.rank
        assert c.counts.shape == (20, 96)
    assert sizes == {"flat": 4, "correlated": 9, "mixed12": 12, "pancancer21": 21}
    assert [DESIGNS[n].n_genomes for n in sorted(DESIGNS)] == [500, 300, 1000, 2700]
