"""The options that settle a delimited file's layout, shared by ``bnmfzoo fit`` and ``masses``.

``--header`` / ``--no-header`` and ``--index-col`` override the reader's detection
(:mod:`bnmfzoo._cli.delimited`); every refusal of an ambiguous layout names one of them, so
each command that reads a matrix file accepts all three. Argparse only (no heavy imports).
"""

import argparse

__all__ = ["add_layout_options", "index_col_argument"]


def index_col_argument(text):
    """``--index-col``'s value: ``"auto"``, ``None`` (``none``) or a column number >= 0.

    >>> index_col_argument("auto"), index_col_argument("None"), index_col_argument("2")
    ('auto', None, 2)
    """
    low = text.strip().lower()
    if low == "auto":
        return "auto"
    if low == "none":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be 'auto', 'none' or a column number (0 = first), got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a column number >= 0, got {text!r}")
    return value


def add_layout_options(group):
    """Add ``--header``, ``--no-header`` and ``--index-col`` to an argparse parser or group.

    >>> p = argparse.ArgumentParser()
    >>> add_layout_options(p)
    >>> a = p.parse_args(["--header", "--index-col", "0"])
    >>> a.header, a.index_col
    (True, 0)
    """
    group.add_argument("--header", dest="header", action="store_const", const=True,
                       default="auto", help="the first row holds column names (default: "
                       "detected: a header when a cell of the first row is not a number)")
    group.add_argument("--no-header", dest="header", action="store_const", const=False,
                       help="the first row is data")
    group.add_argument("--index-col", type=index_col_argument, default="auto",
                       metavar="{auto,none,N}",
                       help="column holding row labels, 0 = first (default auto: the first "
                            "column when it holds text or the header's first cell is empty)")
