"""One rule for numeric header rows and numeric row-label columns, shared by every text reader.

A reader of delimited text (a matrix, :mod:`bnmfzoo._cli.delimited`; ``row,col,value``
entries, :func:`bnmfzoo._fitcli.read_long`) decides from the cells whether line 1 holds column
names and whether column 1 holds row labels. Text is names; these two functions decide the
cases where they are **numbers**:

* **a numeric first line** (:func:`numeric_header`) is a header when its N cells are exactly
  the integers ``0, 1, ..., N-1`` or ``1, 2, ..., N``, written as integers (pandas' default
  column names: ``DataFrame.to_csv(index=False)`` writes ``0,1,...,19``), and either N >= 5 or
  the cells below hold a number that is not an integer (real-valued data, where a row of
  exactly 0..N-1 is not data). Over **integer data with N < 5** it stays data, as every
  numeric first line did before this rule: a first row ``1,2,3`` of counts, ``0,1`` of binary
  data or the entry ``0,1,2`` of a ``row,col,value`` file is plausible data (pass
  ``--header`` for pandas' names over so few integer columns). When line 2 continues the
  count (``N, N+1, ...``: ``numpy.arange`` data, or names?) it is **refused as ambiguous**,
  naming ``--header`` / ``--no-header``. Any other numeric first line is data.
* **a numeric first column** (:func:`consecutive_ids`) of consecutive integers ``0..D-1`` or
  ``1..D`` (at least 3 rows) is row labels only under an **empty corner cell** over numeric
  column names (pandas' ``to_csv`` layout with its default index); anywhere else it is
  refused as ambiguous, naming ``--index-col 0`` / ``--index-col none``: in a count matrix a
  first column 0, 1, 2, ... may be data, so it is never taken silently either way.

Examples
--------
>>> numeric_header(["0", "1", "2", "3", "4"], ["3", "0", "2", "1", "7"], integral=True)
(True, '')
>>> numeric_header(["0", "1", "2"], ["3", "0", "2"], integral=True)
(False, '')
>>> numeric_header(["0", "1", "2", "3", "4"], ["5", "6", "7", "8", "9"], integral=True)[0] is None
True
>>> numeric_header(["0", "1", "2"], ["0.5", "1.25", "2"], integral=False)
(True, '')
>>> numeric_header(["4", "1", "2"], ["3", "0", "2"], integral=True)
(False, '')
"""

import math

__all__ = ["consecutive_ids", "integer_start", "numeric_header"]

#: a first line 0..N-1 / 1..N of at least this many cells is a header even over integer data
#: (fewer over integer data: data)
MIN_HEADER_CELLS = 5


def _int_text(cell):
    """The integer a cell spells plainly (``"3"``, ``"-1"``), else None (``"3.0"`` is None)."""
    text = cell.strip()
    body = text[1:] if text[:1] in "+-" else text
    return int(text) if body.isdigit() else None


def integer_start(cells):
    """0 or 1 when ``cells`` spell ``0..N-1`` or ``1..N`` as plain integers, else None.

    Examples
    --------
    >>> integer_start(["1", "2", "3"]), integer_start(["0", "1"]), integer_start(["0", "2"])
    (1, 0, None)
    """
    ints = [_int_text(c) for c in cells]
    if not ints or None in ints or ints[0] not in (0, 1):
        return None
    return ints[0] if ints == list(range(ints[0], ints[0] + len(ints))) else None


def numeric_header(first, second=None, *, integral):
    """Whether a line of numbers ``first`` is a header: ``(True | False | None, reason)``.

    ``second`` is line 2's cells (the same columns), ``integral`` whether every number below
    line 1 is an integer. ``None`` means ambiguous; ``reason`` then says why, for the
    reader's message (module docstring).
    """
    start = integer_start(first)
    n = len(first)
    if start is None or n < 2 or (n < MIN_HEADER_CELLS and integral):
        return False, ""
    if second is not None and len(second) == n \
            and integer_start_at(second, start + n):
        return None, (f"line 2 continues the count of line 1 ({first[0]}, ..., {first[-1]}, "
                      f"then {second[0]}, ...): numbers as data, or column names over data")
    return True, ""


def integer_start_at(cells, start):
    """Whether ``cells`` spell ``start, start+1, ...`` as plain integers."""
    ints = [_int_text(c) for c in cells]
    return None not in ints and ints == list(range(start, start + len(ints)))


def consecutive_ids(cells):
    """Whether ``cells`` are consecutive integers from 0 or 1 (``"2.0"`` counts; NaN does not).

    Examples
    --------
    >>> consecutive_ids(["0", "1", "2"]), consecutive_ids(["1", "2.0", "3"])
    (True, True)
    >>> consecutive_ids(["2", "3"])
    False
    """
    try:
        values = [float(c) for c in cells]
    except ValueError:
        return False
    if not all(math.isfinite(v) and v == int(v) for v in values):
        return False
    return values == [values[0] + i for i in range(len(values))] and values[0] in (0.0, 1.0)
