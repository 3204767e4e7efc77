"""Real datasets of the papers, synthetic generators with known answers, masks and splits.

Loaders return ``xarray.DataArray`` with dims ``("row", "col")``, labelled coordinates and NaN
for missing entries. Files are looked up in ``data_home=``, then ``$BNMFZOO_DATA``, then a user
cache filled by :mod:`pooch` downloads checked against sha256 sums.
"""

from bnmfzoo._base.lazy import lazy_namespace

_NAMES = {
    "load_gdsc": ".drug_sensitivity",
    "load_ccle": ".drug_sensitivity",
    "load_nbmf": ".nbmf",
    "load_faces": ".faces",
    "load_all_aml": ".all_aml",
    "load_movielens_100k": ".movielens",
    "load_sbs96": ".counts",
    "load_cosmic_signatures": ".counts",
    "load_reuters": ".counts",
    "load_newsgroups": ".counts",
    "load_lastfm_plays": ".counts",
    "SparseCounts": ".counts",
    "read_h5ad": ".singlecell",
    "read_10x_mtx": ".singlecell",
    "write_10x_mtx": ".singlecell",
    "open_matrix": ".matrixfiles",
    "list_datasets": ".registry",
    "swimmer": ".synthetic",
    "laurberg": ".synthetic",
    "continuum": ".synthetic",
    "exponential_gaussian": ".synthetic",
    "bernoulli_mean": ".synthetic",
    "embed": ".synthetic",
    "SyntheticData": ".synthetic",
    "signature_cohort": ".signature_cohorts",
    "SignatureCohort": ".signature_cohorts",
    "holdout_mask": ".splits",
    "kfold_masks": ".splits",
    "holdout_columns": ".splits",
}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES)
__all__ = sorted(_NAMES)
