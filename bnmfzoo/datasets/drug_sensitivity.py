"""Drug-sensitivity matrices of Brouwer, Frellsen & Lio (2017): GDSC IC50, CCLE IC50 / EC50.

The files are the processed matrices of ``ThomasBrouwer/BNMTF_ARD`` (tab-separated, ``nan`` for a
missing entry, rows = cell lines, columns = drugs, both sorted alphabetically ignoring case).
"""

import numpy as np

from bnmfzoo._base.validation import fmt
from bnmfzoo.datasets._common import fetch, labelled_matrix, read_table

_SOURCE = (
    "ThomasBrouwer/BNMTF_ARD@0a89e4b4971ff66c25010bd53ee2622aeaf69ae9 "
    "data/drug_sensitivity/{}/processed_all"
)
_CITATION = (
    "Brouwer, Frellsen & Lio, A comparative study of inference methods for Bayesian "
    "nonnegative matrix factorisation, ECML-PKDD 2017"
)


def _read_matrix(path, shape):
    values = np.loadtxt(path, delimiter="\t", dtype=float, ndmin=2)
    if values.shape != shape:
        raise ValueError(f"{path} holds a {values.shape} matrix, expected {shape}")
    return values


def load_gdsc(*, min_observed=3, data_home=None):
    """Load the GDSC IC50 drug-sensitivity matrix (cell lines x drugs).

    Sanger "Genomics of Drug Sensitivity in Cancer" v5.0 natural-log IC50s, exponentiated and
    capped at 100 by Brouwer et al. (31.8 % of the observed values sit exactly at the cap).
    Cell lines with fewer than ``min_observed`` observed drugs are dropped, as Brouwer's loader
    does: the default gives the 705 x 139 matrix (79,259 observed, fraction 0.8088) that every
    number of the paper refers to; ``min_observed=0`` keeps all 707 cell lines.

    Parameters
    ----------
    min_observed : int, default 3
        Minimum number of observed entries a row needs to be kept.
    data_home : str or path-like, optional
        Data root holding ``drug_sensitivity/gdsc/{ic50,drugs,cell_lines}.txt``; otherwise
        ``$BNMFZOO_DATA``, then the download cache.

    Returns
    -------
    xarray.DataArray
        Dims ``("row", "col")`` = (cell line, drug) names; NaN = not measured. Extra row
        coordinates ``cosmic_id``, ``cancer_type`` and ``tissue``.

    Examples
    --------
    >>> from bnmfzoo.datasets import load_gdsc
    >>> X = load_gdsc()  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (705, 139)
    """
    if int(min_observed) != min_observed or min_observed < 0:
        raise ValueError(f"min_observed must be a non-negative integer, got {fmt(min_observed)}")
    ic50, drugs, cells = fetch(
        [f"drug_sensitivity/gdsc/{n}.txt" for n in ("ic50", "drugs", "cell_lines")], data_home
    )
    values = _read_matrix(ic50, (707, 139))
    cell_rows = read_table(cells)
    drug_rows = read_table(drugs)
    keep = np.isfinite(values).sum(axis=1) >= min_observed
    cell_rows = [r for r, k in zip(cell_rows, keep) if k]
    return labelled_matrix(
        values[keep],
        [r[1] for r in cell_rows],
        [r[1] for r in drug_rows],
        name="gdsc_ic50",
        attrs={
            "title": "GDSC IC50 (cell lines x drugs)",
            "description": (
                "IC50 in uM (exp of GDSC v5.0 natural-log IC50, capped at 100); NaN = not "
                f"measured; rows with < {min_observed} observations dropped"
            ),
            "source": _SOURCE.format("GDSC"),
            "citation": _CITATION,
            "data_type": "real",
        },
        row_coords={
            "cosmic_id": [int(r[2]) for r in cell_rows],
            "cancer_type": [r[3] for r in cell_rows],
            "tissue": [r[4] for r in cell_rows],
        },
    )


def load_ccle(kind="ic50", *, data_home=None):
    """Load a CCLE drug-sensitivity matrix (504 cell lines x 24 drugs).

    Cancer Cell Line Encyclopedia (Barretina et al. 2012) IC50 (0.0025-8 uM, observed fraction
    0.965, 55 % at the 8 uM ceiling) or EC50 (0-10 uM; Brouwer reports 7,626 observed, 0.630).
    Brouwer's processing script initialises only the IC50 matrix with NaN, so the EC50 file holds
    uninitialised memory (subnormal numbers such as 2.2e-314) where the raw CSV has no row for a
    (cell line, drug) pair, i.e. exactly where IC50 is missing. The loader sets those entries to
    NaN: every EC50 entry that is not finite, is negative or subnormal, or whose IC50 is missing.

    Parameters
    ----------
    kind : {"ic50", "ec50"}
        Which matrix.
    data_home : str or path-like, optional
        Data root holding ``drug_sensitivity/ccle/``; otherwise ``$BNMFZOO_DATA``, then the
        download cache.

    Returns
    -------
    xarray.DataArray
        Dims ``("row", "col")`` = (cell line, drug) names; NaN = not measured.

    Examples
    --------
    >>> from bnmfzoo.datasets import load_ccle
    >>> X = load_ccle("ic50")  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (504, 24)
    """
    if kind not in ("ic50", "ec50"):
        raise ValueError(f"kind must be 'ic50' or 'ec50', got {kind!r}")
    rels = [f"drug_sensitivity/ccle/{n}.txt" for n in ("ic50", "drugs", "cell_lines")]
    if kind == "ec50":
        rels.append("drug_sensitivity/ccle/ec50.txt")
    paths = fetch(rels, data_home)
    values = _read_matrix(paths[0], (504, 24))
    description = "IC50 in uM (assay range 0.0025-8, censored at 8); NaN = not measured"
    if kind == "ec50":
        ic50 = values
        values = _read_matrix(paths[3], (504, 24))
        garbage = (
            ~np.isfinite(values)
            | (values < 0)
            | ((values != 0) & (np.abs(values) < np.finfo(float).tiny))
            | np.isnan(ic50)
        )
        values = np.where(garbage, np.nan, values)
        description = (
            "EC50 in uM (0-10); NaN = not measured (uninitialised subnormal values of the "
            "processed file, where IC50 is missing, set to NaN)"
        )
    return labelled_matrix(
        values,
        [r[1] for r in read_table(paths[2])],
        [r[1] for r in read_table(paths[1])],
        name=f"ccle_{kind}",
        attrs={
            "title": f"CCLE {kind.upper()} (cell lines x drugs)",
            "description": description,
            "source": _SOURCE.format("CCLE"),
            "citation": _CITATION,
            "data_type": "real",
        },
    )
