"""Binary matrices of Lumbreras, Filstroff & Fevotte (2020).

animals, lastfm, paleo, unvotes and parliament: R ``.rda`` files of ``alumbreras/NBMF`` read
with :mod:`rdata`.
"""

import numpy as np

from bnmfzoo.datasets._common import fetch, labelled_matrix, read_lines

_SOURCE = "alumbreras/NBMF@2860d35fae902cac43faabeb326e46b678e0f000 data/{}"
_CITATION = (
    "Lumbreras, Filstroff & Fevotte, Bayesian mean-parameterized nonnegative binary matrix "
    "factorization, Data Mining and Knowledge Discovery 34 (2020)"
)

# name -> (file, R object, shape, row label, col label, description)
NBMF_DATASETS = {
    "animals": (
        "animals.rda",
        "animals",
        (50, 85),
        "animal",
        "attribute",
        "Animals with attributes (Kemp et al. 2006): 1 if the animal has the attribute",
    ),
    "lastfm": (
        "lastfm.rda",
        "lastfm",
        (1226, 285),
        "user",
        "band",
        "Binarised Last.fm listening (Celma 2010): 1 if the user listened to the band",
    ),
    "paleo": (
        "paleo.rda",
        "paleo",
        (253, 902),
        "genus",
        "location",
        "NOW fossil mammals (Bingham et al. 2009 preprocessing): 1 if the genus was found at "
        "the location",
    ),
    "unvotes": (
        "unvotes.rda",
        "unvotes",
        (200, 5429),
        "country",
        "roll call",
        "UN General Assembly roll calls 1946-2017 (Voeten 2013): 1 = yes, 0 = no, NaN = absent "
        "or not a member",
    ),
    "unvotes_coldwar": (
        "unvotes100coldwar_absna.rda",
        "unvotes100coldwar",
        (100, 3638),
        "country",
        "roll call",
        "UN General Assembly roll calls 1946-1990, 100 countries (the authors' code's variant): "
        "1 = yes, 0 = no, NaN = abstention, absent or not a member",
    ),
    "parliament": (
        "catalanparliament.rda",
        "catalanparliament",
        (130, 130),
        "member",
        "member",
        "Catalan Parliament Twitter, March 2018: 1 if member (row) follows member (col); the "
        "diagonal is observed as 0",
    ),
}

_INT_NA = np.iinfo(np.int32).min  # R's NA_integer_


def _read_rda(path, obj_name):
    import rdata

    objects = rdata.read_rda(str(path), default_encoding="utf8")
    if obj_name in objects:
        obj = objects[obj_name]
    elif len(objects) == 1:
        obj = next(iter(objects.values()))
    else:
        raise ValueError(f"{path} holds {sorted(objects)}, expected an object {obj_name!r}")
    raw = np.asarray(getattr(obj, "values", obj))
    if raw.ndim != 2:
        raise ValueError(f"{path}: object {obj_name!r} is not a matrix (shape {raw.shape})")
    if np.issubdtype(raw.dtype, np.integer):
        values = np.where(raw == _INT_NA, np.nan, raw.astype(float))
    else:
        values = raw.astype(float)
    labels = []
    for axis in range(2):
        dim = obj.dims[axis] if hasattr(obj, "dims") else None
        if dim is not None and dim in getattr(obj, "coords", {}):
            labels.append(np.asarray(obj.coords[dim].values).astype(str))
        else:
            labels.append(np.arange(raw.shape[axis]))
    return values, labels[0], labels[1]


def load_nbmf(name, *, data_home=None):
    """Load one of the binary matrices used by Lumbreras et al. (2020).

    The matrices are returned in the orientation stored in the authors' repository, which is
    the orientation their code factorizes (the paper's text is inconsistent about it):

    =================== ============ =========================== =======================
    name                shape        rows x cols                 observed
    =================== ============ =========================== =======================
    ``animals``         50 x 85      animals x attributes        1.0 (density 0.37)
    ``lastfm``          1226 x 285   users x bands               1.0 (density 0.044)
    ``paleo``           253 x 902    genera x locations          1.0 (density 0.033)
    ``unvotes``         200 x 5429   countries x roll calls      0.68 (NaN = absent)
    ``unvotes_coldwar`` 100 x 3638   countries x roll calls      0.76 (NaN = abstained)
    ``parliament``      130 x 130    members x members (follows) 1.0 (density 0.26)
    =================== ============ =========================== =======================

    Transpose (``X.T``) for the paper's figures of ``animals`` (attributes x animals). For
    ``parliament`` the party of each member is attached as the coordinates ``party_row`` and
    ``party_col`` (from ``catalanparliament_labels.csv``). ``paleo``, ``unvotes`` and
    ``unvotes_coldwar`` (the Cold-War subset the authors' scripts use) are not in the
    developers' data copy; they are downloaded from the repository without a checksum.

    Parameters
    ----------
    name : {"animals", "lastfm", "paleo", "unvotes", "unvotes_coldwar", "parliament"}
        Dataset name.
    data_home : str or path-like, optional
        Data root holding ``nbmf/<file>.rda``; otherwise ``$BNMFZOO_DATA``, then the cache.

    Returns
    -------
    xarray.DataArray
        Float 0/1 values with dims ``("row", "col")``, labelled with the R dimnames; NaN for R's
        ``NA``.

    Examples
    --------
    >>> from bnmfzoo.datasets import load_nbmf
    >>> X = load_nbmf("animals")  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (50, 85)
    """
    if name not in NBMF_DATASETS:
        raise ValueError(f"name must be one of {sorted(NBMF_DATASETS)}, got {name!r}")
    fname, obj_name, shape, row_label, col_label, description = NBMF_DATASETS[name]
    rels = [f"nbmf/{fname}"]
    if name == "parliament":
        rels.append("nbmf/catalanparliament_labels.csv")
    paths = fetch(rels, data_home)
    values, rows, cols = _read_rda(paths[0], obj_name)
    if values.shape != shape:
        raise ValueError(f"{paths[0]} holds a {values.shape} matrix, expected {shape}")
    observed = values[np.isfinite(values)]
    if not np.isin(observed, (0.0, 1.0)).all():
        raise ValueError(f"{paths[0]} holds values other than 0, 1 and NA")
    row_coords = col_coords = None
    if name == "parliament":
        lines = read_lines(paths[1], encoding="utf-8")
        party = dict(ln.split(";", 1) for ln in lines[1:])
        row_coords = {"party_row": [party.get(str(m), "") for m in rows]}
        col_coords = {"party_col": [party.get(str(m), "") for m in cols]}
    return labelled_matrix(
        values,
        rows,
        cols,
        name=name,
        attrs={
            "title": f"{name} ({row_label}s x {col_label}s)",
            "description": description,
            "source": _SOURCE.format(fname),
            "citation": _CITATION,
            "data_type": "binary",
        },
        row_coords=row_coords,
        col_coords=col_coords,
    )
