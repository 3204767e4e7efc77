"""Delimited text (``.csv``, ``.tsv``, ``.txt``) as a labelled matrix, never guessing silently.

The layout rules (``header="auto"``, ``index_col="auto"``; the full list is in
:mod:`bnmfzoo._fitcli`). Cells are classified as *numbers* (``float`` parses them), *missing*
(empty, NA, NaN, ...) or *text*.

* **first column** (cells below line 1): all text -> row labels; all numbers/missing -> data;
  mostly text with some numbers -> labels (a number can be a label); mostly numbers with some
  text -> refused at the first text cell, with its line and column (a typo such as ``1.1.1``
  is never turned into a label column). A column of consecutive integers from 0 or 1 is
  refused as ambiguous (row IDs or data?), except under an empty corner cell (pandas'
  ``to_csv`` layout; :mod:`bnmfzoo._base.labels` holds the rule every text reader shares).
* **first row** (cells after a label column): all text -> header; all numbers/missing -> data,
  except (a) the integers ``0..N-1`` or ``1..N`` (pandas' default column names, written by
  ``to_csv(index=False)``): a header when N >= 5 or the data are not all integers, refused
  as ambiguous when line 2 continues the count (:func:`bnmfzoo._base.labels.numeric_header`);
  (b) below an **empty corner cell** with a label column, which is pandas' ``to_csv`` layout
  (a header of numeric names such as years or IDs); mostly text with some numbers ->
  header; mostly numbers with some text -> refused at the first text cell (a typo such as
  ``3.1x`` is never turned into a header). A text corner cell over a first row of numbers is
  ambiguous (a header with numeric names, or a data row with a label?) and refused.

Every refusal names the line and column and the option that settles it (``--header``,
``--no-header``, ``--index-col``). Integer labels (``"1990"``) come back as integers.
"""

from collections import Counter

import numpy as np
import xarray as xr

from bnmfzoo._base.labels import consecutive_ids, integer_start, numeric_header
from bnmfzoo._base.validation import fmt

#: separator of a file whose first line has no ``,``, tab or ``;`` but blanks between its cells
#: (``numpy.savetxt``'s layout): runs of blanks separate cells, as in :func:`numpy.loadtxt`
WHITESPACE = r"\s+"

NA_STRINGS = frozenset({"", "na", "nan", "n/a", "null", "none", "-nan"})


def _sniff_sep(path, suffix):
    if suffix == ".tsv":
        return "\t"
    with open(path, encoding="utf-8-sig") as fh:
        for line in fh:
            if line.strip():
                counts = {sep: line.count(sep) for sep in (",", "\t", ";")}
                best = max(counts, key=counts.get)
                if counts[best]:
                    return best
                return WHITESPACE if len(line.split()) > 1 else ","
    return ","


def _is_na(cell):
    return cell.strip().lower() in NA_STRINGS


def _is_number(cell):
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _numeric_or_na(cells):
    return [_is_na(c) or _is_number(c) for c in cells]


def _kind(cell):
    return "na" if _is_na(cell) else "number" if _is_number(cell) else "text"


def _mix(cells):
    """``"text"``, ``"number"`` (numbers and missing), ``"mostly_text"`` or ``"mostly_number"``."""
    kinds = Counter(_kind(c) for c in cells)
    if not kinds["text"]:
        return "number"
    if not kinds["number"]:
        return "text"
    return "mostly_text" if kinds["text"] > kinds["number"] else "mostly_number"


def _first_text(cells):
    return next(i for i, c in enumerate(cells) if _kind(c) == "text")


def _labels(values):
    """Labels as integers when every one is an integer written plainly, else as text."""
    try:
        ints = [int(v) for v in values]
    except ValueError:
        return [str(v) for v in values]
    return ints if [str(i) for i in ints] == list(values) else [str(v) for v in values]


def _label_column(col0, lines, path, where):
    """Whether the cells ``col0`` (file lines ``lines``) are row labels; refuse a typo."""
    mix = _mix(col0)
    if mix == "mostly_number":
        i = _first_text(col0)
        raise ValueError(f"{path} line {lines[i]}, column 1: {col0[i]!r} is not a number, but "
                         f"the other cells of column 1{where} are numbers (a typo? if column 1 "
                         "holds row labels, pass --index-col 0)")
    return mix in ("text", "mostly_text")


def _auto_header(first, cols, col0_is_labels, corner, path, second=None, integral=None):
    """Whether line 1 (``first``: its cells in file columns ``cols``) is a header row.

    ``second``: line 2's cells in the same columns; ``integral()``: whether every number below
    line 1 is an integer (for :func:`~bnmfzoo._base.labels.numeric_header`).
    """
    mix = _mix(first)
    if mix in ("text", "mostly_text"):
        return True
    if mix == "mostly_number":
        i = _first_text(first)
        hint = "pass --header" if cols[i] else (  # the corner names a column of row IDs?
            "pass --header --index-col 0 when column 1 holds row IDs (pandas' to_csv of a "
            "named index), --header --index-col none when it is data")
        raise ValueError(f"{path} line 1, column {cols[i] + 1}: {first[i]!r} is not a number, "
                         "but the other cells of line 1 are numbers (a typo? if line 1 is a "
                         f"header row, {hint})")
    if integer_start(first) is not None:  # the shared rule for a numeric header
        decision, reason = numeric_header(first, second,
                                          integral=integral() if integral else True)
        if decision is None:
            raise ValueError(f"{path} line 1: {reason}; pass --header or --no-header")
        if decision:
            return True
    if col0_is_labels and corner == "":
        return True  # pandas' to_csv layout: empty corner cell, numeric column names
    if col0_is_labels and corner is not None and not _is_na(corner):
        raise ValueError(f"{path} line 1, column 1: is line 1 a header with numeric column names "
                         f"({first[0]}, ...) under the row-label column name {corner!r}, or a "
                         "data row labelled so? Pass --header or --no-header")
    return False


def _read_delimited(path, *, header="auto", index_col="auto"):
    import pandas as pd

    if header not in ("auto", True, False):
        raise ValueError(f"header must be 'auto', True or False, got {header!r}")
    sep = _sniff_sep(path, path.suffix.lower())
    lines = _record_lines(path, sep)
    try:
        raw = pd.read_csv(path, sep=sep, header=None, dtype=str, keep_default_na=False,
                          na_filter=False, skip_blank_lines=True, encoding="utf-8-sig",
                          skipinitialspace=True)
    except pd.errors.EmptyDataError as err:
        raise ValueError(f"{path} is empty") from err
    except pd.errors.ParserError as err:  # e.g. "Expected 3 fields in line 5, saw 4"
        raise ValueError(f"{path}: rows of different lengths: {err}".strip()) from err
    if raw.shape[0] == 0:
        raise ValueError(f"{path} is empty (no data rows)")
    if len(lines) != raw.shape[0]:  # pragma: no cover - csv and pandas disagree on the layout
        raise ValueError(f"cannot read {path}: inconsistent line structure")
    cells = raw.to_numpy(dtype=object)
    cells = np.vectorize(lambda c: c.strip(), otypes=[object])(cells)
    n_rows, n_cols = cells.shape
    first = list(cells[0])

    # -- row-label column and header row, decided together --------------------------------
    idx = None
    if index_col not in ("auto", None):
        if isinstance(index_col, bool) or int(index_col) != index_col \
                or not 0 <= index_col < n_cols:
            raise ValueError(f"index_col must be a column number from 0 to {n_cols - 1} "
                             f"for {path}, got {fmt(index_col)}")
        idx = int(index_col)
    labels_auto = index_col == "auto" and n_cols > 1
    if labels_auto:  # decide from the cells below line 1 (or line 1 alone in a 1-line file)
        below = list(cells[1:, 0]) if n_rows > 1 else [first[0]]
        if _label_column(below, lines[1:] if n_rows > 1 else lines, path, " below line 1"):
            idx = 0
    if header == "auto":
        if n_cols == 1:
            has_header = not all(_numeric_or_na(first))
        else:
            cols = [j for j in range(n_cols) if j != idx]
            if idx is None and labels_auto and first[0] == "" and n_rows > 1 \
                    and all(_numeric_or_na(first[1:])):
                has_gap = any(_is_na(c) for c in first[1:]) or any(_is_na(c)
                                                                   for c in cells[1:, 0])
                if has_gap:  # names and row labels are never missing: line 1 is data
                    has_header = False
                elif not consecutive_ids(list(cells[1:, 0])):
                    raise ValueError(
                        f"{path} line 1, column 1 is empty and the rest of line 1 and of column "
                        "1 are numbers: a header with numeric column names over a numeric "
                        "row-label column (pandas' to_csv layout), or data with a missing "
                        "first cell? Pass --header --index-col 0, or --no-header")
                else:
                    has_header, idx = True, 0  # to_csv layout with a default 0..n-1 index
            else:
                def integral():
                    return all(_is_na(c) or _is_integral(c) for c in cells[1:, cols].ravel())

                has_header = _auto_header(
                    [first[j] for j in cols], cols, idx is not None,
                    first[idx] if idx is not None else None, path,
                    [cells[1, j] for j in cols] if n_rows > 1 else None, integral)
    else:
        has_header = bool(header)
        if has_header and labels_auto and idx is None and n_cols > 2 \
                and not _numeric_or_na([first[0]])[0] and all(_numeric_or_na(first[1:])):
            raise ValueError(f"{path} line 1: column 1 is named {first[0]!r} and the others "
                             f"by numbers ({first[1]}, ...): is column 1 row IDs (pandas' "
                             "to_csv of a named index) or data? Pass --index-col 0 or "
                             "--index-col none")
    names = first if has_header else None
    body = cells[1:] if has_header else cells
    body_lines = lines[1:] if has_header else lines
    if body.shape[0] == 0:
        raise ValueError(f"{path} has a header row but no data rows")
    if index_col == "auto" and idx is None and n_cols > 1 and body.shape[0] >= 3:
        col0 = list(body[:, 0])
        if all(c != "" and _is_number(c) for c in col0) and consecutive_ids(col0):
            head = f" {names[0]!r}" if has_header else ""
            raise ValueError(
                f"the first column{head} of {path} holds consecutive integers "
                f"({col0[0]}, {col0[1]}, {col0[2]}, ...): row IDs or data? Pass "
                "--index-col 0 to use it as row labels or --index-col none to read it as data"
            )
    if idx is not None:
        if body.shape[1] == 1:
            raise ValueError(f"{path} has only one column; it cannot be both labels and data")
        raw_labels = [str(c) for c in body[:, idx]]
        empty = [i for i, c in enumerate(raw_labels) if c == ""]
        if empty:
            raise ValueError(f"{path} line {body_lines[empty[0]]}, column {idx + 1}: empty row "
                             "label")
        row_labels = _labels(raw_labels)
        keep = [j for j in range(body.shape[1]) if j != idx]
    else:
        row_labels = None
        keep = list(range(body.shape[1]))
    data = body[:, keep]
    col_names = _labels([names[j] for j in keep]) if has_header else None
    values = _numbers(data, keep, col_names, body_lines, path)
    D, N = values.shape
    row = row_labels if row_labels is not None else np.arange(D)
    col = col_names if col_names is not None else np.arange(N)
    _unique(row, "row labels in column", idx, body_lines, path)
    if col_names is not None:
        _unique(col, "column names in the header row", None, None, path)
    X = xr.DataArray(values, dims=("row", "col"), coords={"row": row, "col": col})
    return X, dict(shape=(D, N), n_missing=int(np.isnan(values).sum()), header=has_header,
                   index_col=idx, index_name=(names[idx] if has_header and idx is not None
                                              else ""))


def _numbers(data, keep, col_names, body_lines, path):
    values = np.empty(data.shape)
    for (i, j), cell in np.ndenumerate(data):
        if _is_na(cell):
            values[i, j] = np.nan
            continue
        try:
            values[i, j] = float(cell)
        except ValueError:
            col = f"column {keep[j] + 1}" + (f" ({col_names[j]!r})" if col_names else "")
            raise ValueError(f"{path} line {body_lines[i]}, {col}: {cell!r} is not a number "
                             "(missing values: empty, NA or NaN)") from None
        if not np.isfinite(values[i, j]) and not np.isnan(values[i, j]):
            col = f"column {keep[j] + 1}" + (f" ({col_names[j]!r})" if col_names else "")
            raise ValueError(f"{path} line {body_lines[i]}, {col}: {cell!r} is infinite as a "
                             "float64 (|x| > 1.8e308); rescale the data")
    return values


def _unique(labels, what, idx, lines, path):
    seen = {}
    for i, v in enumerate(labels):
        if v in seen:
            where = (f" {idx + 1}: {v!r} on lines {lines[seen[v]]} and {lines[i]}"
                     if idx is not None else f": {v!r} appears twice")
            raise ValueError(f"{path}: the {what}{where} (labels must be unique)")
        seen[v] = i


def _record_lines(path, sep):
    """File line of each non-blank record; refuse rows whose number of fields differs."""
    import csv

    lines, width, first = [], None, None
    with open(path, encoding="utf-8-sig", newline="") as fh:
        if sep == WHITESPACE:
            reader = ((i, line.split()) for i, line in enumerate(fh, 1))
        else:
            rows = csv.reader(fh, delimiter=sep, skipinitialspace=True)
            reader = ((rows.line_num, record) for record in rows)
        start = 1
        for end, record in reader:
            line, start = start, end + 1
            if not record:
                continue
            if width is None:
                width, first = len(record), line
            elif len(record) != width:
                raise ValueError(
                    f"{path} line {line} has {len(record)} field{'s' * (len(record) != 1)}, "
                    f"expected {width} like line {first} (every row needs the same number of "
                    "cells; write NA for a missing value)"
                )
            lines.append(line)
    return np.asarray(lines, dtype=int)


def _is_integral(cell):
    """A number that is an integer; a non-finite one does not decide (True)."""
    try:
        value = float(cell)
    except ValueError:
        return False
    return not (value == value and abs(value) != float("inf")) or value == int(value)
