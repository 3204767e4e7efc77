"""Catalogue of the real datasets: shapes, types, observed fractions, local availability."""

from bnmfzoo.datasets._files import is_available
from bnmfzoo.datasets.faces import face_files

_GDSC = [f"drug_sensitivity/gdsc/{n}.txt" for n in ("ic50", "drugs", "cell_lines")]
_CCLE = [f"drug_sensitivity/ccle/{n}.txt" for n in ("ic50", "drugs", "cell_lines")]

# name, loader call, (rows, cols), rows x cols, type, observed fraction, files
# (observed fractions measured on the files, or the paper's value where the file is not here)
DATASETS = [
    ("gdsc", "load_gdsc()", (705, 139), "cell lines x drugs", "real", 0.8088, _GDSC),
    ("ccle_ic50", "load_ccle('ic50')", (504, 24), "cell lines x drugs", "real", 0.9648, _CCLE),
    (
        "ccle_ec50",
        "load_ccle('ec50')",
        (504, 24),
        "cell lines x drugs",
        "real",
        0.630,
        [*_CCLE, "drug_sensitivity/ccle/ec50.txt"],
    ),
    (
        "animals",
        "load_nbmf('animals')",
        (50, 85),
        "animals x attributes",
        "binary",
        1.0,
        ["nbmf/animals.rda"],
    ),
    (
        "lastfm",
        "load_nbmf('lastfm')",
        (1226, 285),
        "users x bands",
        "binary",
        1.0,
        ["nbmf/lastfm.rda"],
    ),
    (
        "paleo",
        "load_nbmf('paleo')",
        (253, 902),
        "genera x locations",
        "binary",
        1.0,
        ["nbmf/paleo.rda"],
    ),
    (
        "unvotes",
        "load_nbmf('unvotes')",
        (200, 5429),
        "countries x roll calls",
        "binary",
        0.680,
        ["nbmf/unvotes.rda"],
    ),
    (
        "unvotes_coldwar",
        "load_nbmf('unvotes_coldwar')",
        (100, 3638),
        "countries x roll calls",
        "binary",
        0.757,
        ["nbmf/unvotes100coldwar_absna.rda"],
    ),
    (
        "parliament",
        "load_nbmf('parliament')",
        (130, 130),
        "members x members",
        "binary",
        1.0,
        ["nbmf/catalanparliament.rda", "nbmf/catalanparliament_labels.csv"],
    ),
    ("faces", "load_faces()", (10304, 400), "pixels x faces", "image", 1.0, face_files()),
    (
        "faces_64",
        "load_faces((64, 64))",
        (4096, 400),
        "pixels x faces",
        "image",
        1.0,
        face_files(),
    ),
    (
        "all_aml",
        "load_all_aml()",
        (5000, 38),
        "genes x samples",
        "count",
        1.0,
        [f"all_aml/ALL_AML_{n}.txt" for n in ("data", "genes", "samples")],
    ),
    (
        "movielens_100k",
        "load_movielens_100k()",
        (943, 1682),
        "users x movies",
        "ordinal",
        0.0630,
        ["movielens_100k/u.data"],
    ),
    # count data: every entry observed (a zero is a zero count)
    ("sbs96_breast", "load_sbs96('breast')", (21, 96), "genomes x channels", "count", 1.0,
     ["counts/sbs96_21brca_cosmic/Samples_SBS.txt"]),
    ("sbs96_escc", "load_sbs96('escc')", (552, 96), "genomes x channels", "count", 1.0,
     [f"counts/sbs96_escc/ESCC_{n}.txt" for n in ("SBS96", "patient_country")]),
    ("cosmic_v3.4", "load_cosmic_signatures('v3.4')", (86, 96), "signatures x channels",
     "real", 1.0, ["counts/sbs96_21brca_cosmic/COSMIC_v3.4_SBS_GRCh37.txt"]),
    ("reuters", "load_reuters()", (395, 4258), "documents x words", "count", 1.0,
     [f"counts/text_reuters_lda/reuters.{n}" for n in ("ldac", "tokens", "titles")]),
    ("newsgroups", "load_newsgroups()", (18774, 55911), "documents x words (sparse)", "count",
     1.0, ["counts/text_20newsgroups/newsgroups.RData"]),
    ("lastfm_plays", "load_lastfm_plays()", (1892, 17632), "users x artists (sparse)", "count",
     1.0, [f"counts/lastfm_hetrec2011_2k/{n}.dat" for n in ("user_artists", "artists")]),
]


def list_datasets(*, data_home=None):
    """List the real datasets with their shape, type, observed fraction and local availability.

    Nothing is downloaded: ``available`` is True when every file of the dataset is already in
    ``data_home``, ``$BNMFZOO_DATA`` or the download cache (checksum verified).

    Parameters
    ----------
    data_home : str or path-like, optional
        Data root searched first.

    Returns
    -------
    pandas.DataFrame
        One row per dataset with columns ``name``, ``loader``, ``rows``, ``cols``, ``layout``,
        ``type`` (real / binary / count / ordinal / image), ``observed_fraction``, ``available``.

    Examples
    --------
    >>> from bnmfzoo.datasets import list_datasets
    >>> table = list_datasets()
    >>> "gdsc" in set(table["name"])
    True
    """
    import pandas as pd

    records = [
        {
            "name": name,
            "loader": loader,
            "rows": shape[0],
            "cols": shape[1],
            "layout": layout,
            "type": kind,
            "observed_fraction": observed,
            "available": is_available(files, data_home),
        }
        for name, loader, shape, layout, kind, observed, files in DATASETS
    ]
    return pd.DataFrame.from_records(records)
