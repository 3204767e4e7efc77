"""The field's file formats: SigProfilerMatrixGenerator catalogues and COSMIC signature tables.

Both are delimited text tables with **channels as rows**: a first column of SBS96 channel
names in SigProfiler notation (``A[C>A]A``: the mutated base in brackets between its 5' and 3'
neighbours; the column is headed ``MutationType``, ``Mutation Types`` or ``Type`` depending on
the tool) and one column per sample (a catalogue of counts) or per signature (a reference
catalogue whose columns sum to 1). Files ending in ``.csv`` are comma-separated, others
tab-separated. Two older layouts name a channel in two columns and are read too: ``Type``,
``SubType`` (``C>A``, ``ACA``: the PCAWG-era SigProfiler tables of Alexandrov et al. 2020) and
COSMIC v2's ``Substitution Type``, ``Trinucleotide``, ``Somatic Mutation Type`` (its third
column already in SigProfiler notation; the empty columns its trailing tabs make are dropped).

A table with the channels in its header and one row per sample (or signature) is read as
its transpose. Inside bnmfzoo a catalogue is **samples x channels** (``X ~ A @ W`` puts the
signatures in the rows of ``W``, as :func:`bnmfzoo.datasets.load_sbs96` does):
:func:`read_catalog` transposes, :func:`write_matrix` transposes back. Channels are put in
SigProfiler's order (the labels sorted, which is the order of SigProfilerMatrixGenerator's and
COSMIC's files) whatever their order in the file.

Refused, each with one line naming the file: rows that are not the 96 SBS channels (missing,
extra, repeated or misspelt ones), values that are not numbers, negative or non-integer counts,
samples with zero mutations. Writes go through :func:`bnmfzoo._cli.safeio.write_files`: every
file of a result, or none.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["CHANNELS", "read_catalog", "read_signatures", "write_matrix", "matrix_bytes"]

#: The 96 SBS channels in SigProfiler's order (``A[C>A]A``, ``A[C>A]C``, ...).
CHANNELS = tuple(sorted(f"{five}[{sub}]{three}"
                        for sub in ("C>A", "C>G", "C>T", "T>A", "T>C", "T>G")
                        for five in "ACGT" for three in "ACGT"))
_CHANNEL_SET = frozenset(CHANNELS)


_SUBSTITUTIONS = frozenset(("C>A", "C>G", "C>T", "T>A", "T>C", "T>G"))


def _two_column_channels(df):
    """``df`` indexed by channel when its first 2 (COSMIC v2: 3) columns name one, or None.

    ``Type`` / ``SubType`` = ``C>A`` / ``ACA`` gives ``A[C>A]A``; a context whose middle base
    is not the substitution's reference base gives ``"C>A AGA"``, which the channel check
    refuses by name. COSMIC v2's third column, ``A[C>A]A`` already, is dropped when it agrees.

    >>> df = pd.DataFrame({"Type": ["C>A"], "SubType": ["ACG"], "SBSa": ["1"]})
    >>> list(_two_column_channels(df).index), list(_two_column_channels(df).columns)
    (['A[C>A]G'], ['SBSa'])
    """
    if df.shape[1] < 3:
        return None
    sub = df.iloc[:, 0].astype(str).str.strip().str.upper()
    tri = df.iloc[:, 1].astype(str).str.strip().str.upper()
    if not (sub.isin(_SUBSTITUTIONS).all() and (tri.str.len() == 3).all()):
        return None
    channels = (tri.str[0] + "[" + sub + "]" + tri.str[2]).where(tri.str[1] == sub.str[0],
                                                                 sub + " " + tri)
    drop = 2
    if df.shape[1] > 3 and (df.iloc[:, 2].astype(str).str.strip() == channels).all():
        drop = 3  # COSMIC v2: "Somatic Mutation Type", the same channel written out
    out = df.iloc[:, drop:].copy()
    out.index = list(channels)
    return out


def _without_empty_columns(df):
    """Drop unnamed columns with no value (a trailing delimiter on every line)."""
    empty = [c for c in df.columns if str(c).startswith("Unnamed:")
             and df[c].astype(str).str.strip().isin(("", "nan")).all()]
    return df.drop(columns=empty)


def _read_table(source, what):
    """``(channel labels, column labels, string cells, name)`` of a file or DataFrame."""
    if isinstance(source, pd.DataFrame):
        df = source.copy()
        name = what
        if (not df.columns.empty and not _looks_like_channels(df.index)
                and not _looks_like_channels([str(c).strip() for c in df.columns])):
            two = _two_column_channels(df)
            df = two if two is not None else df.set_index(df.columns[0])
        if not _looks_like_channels(df.index) and _looks_like_channels(
                [str(c).strip() for c in df.columns]):
            df = df.T
        cells = df.astype(str).to_numpy()
        return [str(v) for v in df.index], [str(c) for c in df.columns], cells, name
    path = Path(source)
    name = str(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} {path}: no such file")
    sep = "," if path.suffix.lower() == ".csv" else "\t"
    try:
        df = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False,
                         encoding="utf-8-sig")
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"{name}: not a delimited table ({first})") from None
    df = _without_empty_columns(df)
    two = _two_column_channels(df)
    df = two if two is not None else df.set_index(df.columns[0])
    if df.shape[1] == 0:
        raise ValueError(f"{name}: no sample columns (expected a channel column, then one "
                         "column per sample, separated by "
                         f"{'commas' if sep == ',' else 'tabs'})")
    df.index = [str(v).strip() for v in df.index]
    df.columns = [str(c).strip() for c in df.columns]
    if not _looks_like_channels(df.index) and _looks_like_channels(df.columns):
        df = df.T  # samples (signatures) as rows, the channels in the header: unambiguous
    return list(df.index), list(df.columns), df.to_numpy(), name


def _looks_like_channels(labels):
    return len(labels) > 0 and all(str(v) in _CHANNEL_SET for v in labels)


def _channel_order(channels, name):
    """Positions putting the rows ``channels`` in SigProfiler's order; refuse anything else."""
    seen = {}
    for i, c in enumerate(channels):
        if c in seen:
            raise ValueError(f"{name}: channel {c!r} appears twice (rows {seen[c] + 2} and "
                             f"{i + 2})")
        seen[c] = i
    unknown = [c for c in channels if c not in _CHANNEL_SET]
    missing = [c for c in CHANNELS if c not in seen]
    if unknown or missing:
        parts = []
        if unknown:
            parts.append(f"{len(unknown)} row(s) that are not SBS96 channels, e.g. "
                         f"{unknown[0]!r}")
        if missing:
            parts.append(f"{len(missing)} channel(s) missing, e.g. {missing[0]!r}")
        raise ValueError(f"{name}: the rows must be the 96 SBS channels (A[C>A]A ...); found "
                         f"{len(channels)} rows, " + "; ".join(parts))
    return np.array([seen[c] for c in CHANNELS])


def _numbers(cells, rows, cols, name):
    """Float array of the string cells; the first non-number is named by row and column."""
    try:
        return np.asarray(cells, dtype=float)
    except (TypeError, ValueError):
        for i in range(cells.shape[0]):
            for j in range(cells.shape[1]):
                try:
                    float(cells[i, j])
                except (TypeError, ValueError):
                    raise ValueError(f"{name}: value {cells[i, j]!r} at channel {rows[i]}, "
                                     f"column {cols[j]} is not a number") from None
        raise


def _first_bad(mask, rows, cols, values):
    i, j = (int(v[0]) for v in np.nonzero(mask))
    return f"{values[i, j]!r} at channel {rows[i]}, column {cols[j]}"


def read_catalog(source):
    """Read a mutational catalogue in SigProfiler's layout; return samples x channels counts.

    Parameters
    ----------
    source : str, path-like or pandas.DataFrame
        A tab-separated file (comma-separated when it ends in ``.csv``) whose first column
        holds the 96 channel names and whose other columns are samples, as written by
        SigProfilerMatrixGenerator (``*.SBS96.all``) and read by SigProfilerExtractor; or a
        DataFrame in the same layout (channels in its index or first column).

    Returns
    -------
    xarray.DataArray
        Float counts with dims ``("row", "col")`` = (sample, channel), channels in
        SigProfiler's order.

    Raises
    ------
    ValueError
        One line naming the file: the rows are not the 96 channels, a value is not a number,
        a count is negative, non-integer or not finite, or a sample has no mutation.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"MutationType": list(CHANNELS)[::-1], "s1": range(96),
    ...                    "s2": 1})
    >>> X = read_catalog(df)
    >>> X.dims, X.shape, str(X.col[0].item()), int(X.sel(row="s1", col="A[C>A]A"))
    (('row', 'col'), (2, 96), 'A[C>A]A', 95)
    """
    rows, cols, cells, name = _read_table(source, "catalogue")
    order = _channel_order(rows, name)
    values = _numbers(cells, rows, cols, name)
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        raise ValueError(f"{name}: counts must be non-negative and finite; found "
                         f"{_first_bad(bad, rows, cols, cells)}")
    frac = values != np.round(values)
    if frac.any():
        raise ValueError(f"{name}: counts must be integers; found "
                         f"{_first_bad(frac, rows, cols, cells)}")
    if len(set(cols)) != len(cols):
        dup = next(c for c in cols if cols.count(c) > 1)
        raise ValueError(f"{name}: sample {dup!r} appears in two columns")
    empty = [c for c, total in zip(cols, values.sum(axis=0)) if total == 0]
    if empty:
        raise ValueError(f"{name}: {len(empty)} sample(s) with zero mutations, e.g. "
                         f"{empty[0]!r}; remove them")
    values = values[order]
    return xr.DataArray(values.T, dims=("row", "col"),
                        coords={"row": np.asarray(cols), "col": np.asarray(CHANNELS)},
                        name="catalog", attrs={"source": name, "data_type": "count"})


def read_signatures(source):
    """Read a reference catalogue (COSMIC layout); return signatures x channels, rows sum to 1.

    Parameters
    ----------
    source : str, path-like or pandas.DataFrame
        Channels as rows (first column ``Type`` / ``MutationType``, or the two-column layouts
        of the module's docstring), one column per signature, e.g.
        ``COSMIC_v3.4_SBS_GRCh37.txt`` or ``sigProfiler_SBS_signatures_2018_03_28.csv``.
        Columns are rescaled to sum to 1.

    Returns
    -------
    xarray.DataArray
        Dims ``("signature", "channel")``.

    Examples
    --------
    >>> import pandas as pd
    >>> ref = read_signatures(pd.DataFrame({"Type": list(CHANNELS), "SBSa": 2.0}))
    >>> ref.dims, float(ref.sel(signature="SBSa").sum())
    (('signature', 'channel'), 1.0)
    """
    rows, cols, cells, name = _read_table(source, "reference catalogue")
    order = _channel_order(rows, name)
    values = _numbers(cells, rows, cols, name)
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        raise ValueError(f"{name}: signature entries must be non-negative and finite; found "
                         f"{_first_bad(bad, rows, cols, cells)}")
    if len(set(cols)) != len(cols):
        raise ValueError(f"{name}: a signature name appears in two columns")
    totals = values.sum(axis=0)
    if (totals <= 0).any():
        raise ValueError(f"{name}: signature {cols[int(np.argmin(totals))]!r} is all zeros")
    values = (values / totals)[order]
    return xr.DataArray(values.T, dims=("signature", "channel"),
                        coords={"signature": np.asarray(cols), "channel": np.asarray(CHANNELS)},
                        name="reference", attrs={"source": name})


def matrix_bytes(values, labels, *, channels=CHANNELS, float_format="%.6g"):
    """SigProfiler-layout TSV bytes: ``MutationType`` then one column per label.

    ``values`` is ``(len(labels), 96)`` (samples or signatures in rows, as inside bnmfzoo) or a
    labelled DataArray / DataFrame of that shape; it is written transposed (channels as rows).
    """
    values = np.asarray(values, dtype=float)
    labels = [str(v) for v in labels]
    if values.shape != (len(labels), len(channels)):
        raise ValueError(f"values must have shape ({len(labels)}, {len(channels)}), got "
                         f"{values.shape}")
    df = pd.DataFrame(values.T, columns=labels)
    df.insert(0, "MutationType", list(channels))
    return df.to_csv(sep="\t", index=False, float_format=float_format,
                     lineterminator="\n").encode()


def write_matrix(matrix, path, *, float_format="%.6g"):
    """Write a samples (or signatures) x channels matrix in SigProfiler's layout, atomically.

    Parameters
    ----------
    matrix : xarray.DataArray or pandas.DataFrame
        Labelled ``(n, 96)`` matrix whose columns are the channels (any order: they are
        written in SigProfiler's order); counts are written as integers.
    path : str or path-like
        Target file; written in full or not at all.

    Returns
    -------
    pathlib.Path
    """
    from bnmfzoo._cli.safeio import write_files

    if isinstance(matrix, xr.DataArray):
        matrix = matrix.to_pandas()
    if not isinstance(matrix, pd.DataFrame):
        raise TypeError(f"matrix must be a labelled DataArray or DataFrame, got "
                        f"{type(matrix).__name__}")
    cols = [str(c) for c in matrix.columns]
    order = _channel_order(cols, "matrix")
    values = matrix.to_numpy(dtype=float)[:, order]
    integer = np.isfinite(values).all() and (values == np.round(values)).all()
    data = matrix_bytes(values, matrix.index, float_format="%d" if integer else float_format)
    path = Path(path)
    (target,) = write_files(path.parent, [(path.name, data)])
    return target
