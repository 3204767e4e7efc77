"""Synthetic mutational-signature cohorts drawn from a reference catalogue (COSMIC v3.4 SBS96).

The designs follow the synthetic benchmarks of the field (Alexandrov et al. 2020, Nature
578:94; Islam et al. 2022, Cell Genomics 2:100179): known signatures from the reference
catalogue, "flat" signatures that are hard to tell apart (SBS3, SBS5, SBS40a), correlated and
co-occurring ones (SBS2 with SBS13, SBS7a/b/c), 4 to 21 signatures, 200 to 2,700 genomes,
log-normal mutation burdens and sparse exposures (each genome uses a few signatures), with
Poisson or negative-binomial (overdispersed) counts. The designs here are written in the
spirit of those papers, not copied from their files.

* :data:`DESIGNS` - the named designs;
* :func:`signature_cohort` - one seeded cohort: counts, true signatures, exposures, labels.
"""

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from bnmfzoo._base.rng import as_generator
from bnmfzoo._base.validation import fmt


@dataclass(frozen=True)
class CohortDesign:
    """A cohort design: which signatures, how often they occur together, how many mutations.

    Attributes
    ----------
    groups : tuple of (tuple of str, float)
        Signature groups and the fraction of genomes in which each group is active. The
        signatures of one group are active together (SBS2 with SBS13: APOBEC; SBS7a/b/c: UV
        light), which makes their exposures correlated.
    n_genomes : int
        Default number of genomes.
    burden_median, burden_sigma : float
        Total mutations per genome ~ LogNormal(log(median), sigma).
    description : str
        One line saying what the design tests.
    """

    groups: tuple
    n_genomes: int
    burden_median: float = 4000.0
    burden_sigma: float = 0.8
    description: str = ""

    @property
    def signatures(self):
        """The design's signature names, in the order of its groups."""
        return tuple(name for names, _ in self.groups for name in names)


#: Named designs. ``flat``: 4 signatures, SBS3/SBS5/SBS40a nearly flat and similar (pairwise
#: cosines 0.76-0.81); ``correlated``: 9 signatures with the APOBEC pair and the UV triple active
#: together; ``mixed12``: 12 signatures, 1,000 genomes; ``pancancer21``: 21 signatures, 2,700
#: genomes (the largest size of Islam et al. 2022's SBS designs).
DESIGNS = {
    "flat": CohortDesign(
        groups=((("SBS5",), 0.95), (("SBS1",), 0.8), (("SBS3",), 0.35), (("SBS40a",), 0.5)),
        n_genomes=300, description="flat, similar signatures (SBS3, SBS5, SBS40a) with SBS1"),
    "correlated": CohortDesign(
        groups=((("SBS1",), 0.8), (("SBS5",), 0.9), (("SBS2", "SBS13"), 0.4),
                (("SBS7a", "SBS7b", "SBS7c"), 0.25), (("SBS40a",), 0.4), (("SBS18",), 0.2)),
        n_genomes=500, description="co-occurring APOBEC (SBS2/SBS13) and UV (SBS7a/b/c)"),
    "mixed12": CohortDesign(
        groups=((("SBS1",), 0.8), (("SBS5",), 0.9), (("SBS40a",), 0.4), (("SBS3",), 0.2),
                (("SBS2", "SBS13"), 0.3), (("SBS7a", "SBS7b"), 0.15), (("SBS4",), 0.15),
                (("SBS17a", "SBS17b"), 0.15), (("SBS18",), 0.2)),
        n_genomes=1000, description="12 signatures of several cancer types, 1,000 genomes"),
    "pancancer21": CohortDesign(
        groups=((("SBS1",), 0.8), (("SBS5",), 0.9), (("SBS40a",), 0.35), (("SBS3",), 0.15),
                (("SBS2", "SBS13"), 0.3), (("SBS7a", "SBS7b", "SBS7c"), 0.08), (("SBS4",), 0.1),
                (("SBS17a", "SBS17b"), 0.1), (("SBS18",), 0.15), (("SBS8",), 0.1),
                (("SBS6",), 0.05), (("SBS9",), 0.05), (("SBS10a",), 0.02), (("SBS12",), 0.05),
                (("SBS15",), 0.04), (("SBS16",), 0.05), (("SBS44",), 0.04)),
        n_genomes=2700, description="21 signatures, 2,700 genomes, several rare"),
}


@dataclass
class SignatureCohort:
    """A synthetic cohort with its generating signatures and exposures.

    Attributes
    ----------
    counts : xarray.DataArray
        Mutation counts, dims ``("row", "col")`` = (genome, channel), integer-valued floats.
    signatures : xarray.DataArray
        True signatures, dims ``("signature", "col")``, each row sums to 1.
    exposures : xarray.DataArray
        Expected mutations of each signature in each genome, dims ``("row", "signature")``
        (zero where a genome does not use a signature).
    expected : xarray.DataArray
        ``exposures @ signatures``: the mean of ``counts`` given the exposures.
    overdispersion : float or None
        Negative-binomial shape ``phi`` (variance ``mu + mu**2 / phi``); None for Poisson.
    design : str
        Design name.
    params : dict
        The settings used (seed, genomes, burdens).
    """

    counts: xr.DataArray
    signatures: xr.DataArray
    exposures: xr.DataArray
    expected: xr.DataArray
    overdispersion: float | None = None
    design: str = ""
    params: dict = field(default_factory=dict)

    @property
    def rank(self):
        """The number of true signatures."""
        return self.signatures.shape[0]


def _reference(reference, data_home):
    if reference is None:
        from bnmfzoo.datasets.counts import load_cosmic_signatures

        return load_cosmic_signatures("v3.4", data_home=data_home)
    if not isinstance(reference, xr.DataArray) or reference.ndim != 2:
        raise TypeError("reference must be a 2-D xarray.DataArray (signature x channel) such as "
                        f"load_cosmic_signatures() returns, got {type(reference).__name__}")
    return reference


def _positive_or_none(value, name):
    if value is None:
        return None
    if isinstance(value, bool) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0 or None, got {fmt(value)}")
    return float(value)


def _active(groups, n, rng):
    """``(n, G)`` bool: which groups each genome uses; every genome uses at least one."""
    prev = np.array([p for _, p in groups])
    act = rng.uniform(size=(n, len(groups))) < prev
    empty = ~act.any(1)
    act[empty, int(np.argmax(prev))] = True
    return act


def signature_cohort(design="flat", *, n_genomes=None, overdispersion=None, burden_median=None,
                     random_seed=None, reference=None, data_home=None):
    """Draw one synthetic cohort of SBS96 catalogues from known reference signatures.

    Each genome ``d`` has a total burden ``T_d ~ LogNormal(log(burden_median), sigma)``; each
    signature group of the design is active in genome ``d`` with the group's prevalence (at
    least one group per genome); the active groups get weights ``LogNormal(0, 1)``, split
    inside a group by ``Dirichlet(2, ..., 2)``, normalized to sum 1. The exposures are
    ``E = T_d * weights`` (expected mutations per signature) and the counts are
    ``Poisson(E @ S)``, or, with ``overdispersion=phi``, negative binomial with the same mean
    and variance ``mu + mu**2 / phi`` (a Gamma(phi, phi / mu) rate per cell, then Poisson).

    Parameters
    ----------
    design : str or CohortDesign
        A key of :data:`DESIGNS` (``"flat"``, ``"correlated"``, ``"mixed12"``,
        ``"pancancer21"``) or a :class:`CohortDesign`.
    n_genomes : int, optional
        Number of genomes (default: the design's).
    overdispersion : float, optional
        Negative-binomial shape ``phi > 0``; None (default) draws Poisson counts.
    burden_median : float, optional
        Median mutations per genome (default: the design's).
    random_seed : int or numpy.random.Generator, optional
        Seed; the same seed gives the same cohort.
    reference : xarray.DataArray, optional
        Reference signatures (signature x channel, labelled rows); default COSMIC v3.4 from
        :func:`bnmfzoo.datasets.load_cosmic_signatures`.
    data_home : str or path-like, optional
        Where to look for the reference file.

    Returns
    -------
    SignatureCohort

    References
    ----------
    Alexandrov, L. B. et al. (2020). The repertoire of mutational signatures in human cancer.
    Nature 578, 94-101.
    Islam, S. M. A. et al. (2022). Uncovering novel mutational signatures by de novo extraction
    with SigProfilerExtractor. Cell Genomics 2, 100179.

    Examples
    --------
    >>> from bnmfzoo.datasets.signature_cohorts import signature_cohort
    >>> c = signature_cohort("flat", n_genomes=50, random_seed=0)  # doctest: +SKIP
    >>> c.counts.shape, c.rank  # doctest: +SKIP
    ((50, 96), 4)
    """
    if isinstance(design, str):
        if design not in DESIGNS:
            raise ValueError(f"design must be one of {sorted(DESIGNS)} or a CohortDesign, "
                             f"got {design!r}")
        name, spec = design, DESIGNS[design]
    elif isinstance(design, CohortDesign):
        name, spec = "custom", design
    else:
        raise TypeError(f"design must be a str or a CohortDesign, got {type(design).__name__}")
    n = spec.n_genomes if n_genomes is None else n_genomes
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n_genomes must be an integer >= 1, got {fmt(n)}")
    phi = _positive_or_none(overdispersion, "overdispersion")
    median = _positive_or_none(spec.burden_median if burden_median is None else burden_median,
                               "burden_median")
    ref = _reference(reference, data_home)
    names = [str(v) for v in ref[ref.dims[0]].values]
    missing = [s for s in spec.signatures if s not in names]
    if missing:
        raise ValueError(f"reference lacks the design's signatures {missing}")
    S = np.asarray(ref.values, float)[[names.index(s) for s in spec.signatures]]
    if not np.isfinite(S).all() or (S < 0).any() or (S.sum(1) <= 0).any():
        raise ValueError("reference holds negative, non-finite or all-zero signatures")
    S = S / S.sum(1, keepdims=True)
    rng = as_generator(random_seed)
    n = int(n)
    burden = np.exp(rng.normal(np.log(median), spec.burden_sigma, n))
    act = _active(spec.groups, n, rng)
    group_w = rng.lognormal(0.0, 1.0, act.shape) * act
    group_w /= group_w.sum(1, keepdims=True)
    cols = []
    for g, (members, _) in enumerate(spec.groups):
        split = rng.dirichlet(np.full(len(members), 2.0), n) if len(members) > 1 else np.ones(
            (n, 1))
        cols.append(group_w[:, [g]] * split)
    E = burden[:, None] * np.concatenate(cols, axis=1)
    mu = E @ S
    rate = rng.gamma(phi, mu / phi) if phi is not None else mu
    X = rng.poisson(rate).astype(float)
    genomes = np.array([f"genome{d:04d}" for d in range(n)])
    channels = np.asarray(ref[ref.dims[1]].values)
    sig = list(spec.signatures)
    attrs = {"design": name, "data_type": "count"}
    return SignatureCohort(
        counts=xr.DataArray(X, dims=("row", "col"), coords={"row": genomes, "col": channels},
                            name="counts", attrs=attrs),
        signatures=xr.DataArray(S, dims=("signature", "col"),
                                coords={"signature": sig, "col": channels}, name="signatures"),
        exposures=xr.DataArray(E, dims=("row", "signature"),
                               coords={"row": genomes, "signature": sig}, name="exposures"),
        expected=xr.DataArray(mu, dims=("row", "col"), coords={"row": genomes, "col": channels},
                              name="expected"),
        overdispersion=phi, design=name,
        params={"n_genomes": n, "burden_median": median, "burden_sigma": spec.burden_sigma,
                "random_seed": random_seed if isinstance(random_seed, (int, np.integer))
                else None},
    )
