"""Sizes a file declares, checked before anything in it is read (one line when refused).

Every input and result format the command reads is sized from its headers first, against the
memory budget (:func:`~bnmfzoo._base.memory.check_allocation`: half of the memory this process
may use):

* ``.npy``: the array header (:func:`check_npy`).
* ``.npz`` (:func:`check_npz`): the header of every member, read from the zip archive without
  loading it (``numpy.lib.format.read_magic`` and ``read_array_header_*`` on the member's file
  object); a member that declares more bytes than the archive holds for it, or pickled objects,
  is refused. A ``scipy.sparse`` file is then sized from its ``shape`` (a 2-element member) and
  the number of stored entries its ``data`` / ``indices`` / ``row`` / ``col`` members declare:
  the labels and factor rows of ``D + N`` rows and columns and the stored entries.
* netCDF / HDF5 (:func:`netcdf_variables`, :func:`check_netcdf`): every variable's shape and
  dtype, read lazily with ``h5netcdf``, summed over all groups (coordinates included); for a
  result (``bnmfzoo report``) a variable with a ``draw`` dim counts only the draws the report
  reads. A file whose variables declare more than :data:`MAX_RATIO` times the bytes stored
  for them is refused: zlib (deflate) never compresses more than 1032:1, so those bytes were
  never written (HDF5 fill values) and reading them would only allocate.
* delimited text (:func:`check_text`): at most one cell per two bytes of the file, each held
  as text while it is parsed (:data:`TEXT_CELL_BYTES`); when that bound exceeds the budget the
  cells are counted exactly (one pass, constant memory) before anything is parsed.
"""

import zipfile
from pathlib import Path

import numpy as np

from bnmfzoo._base.memory import check_allocation, human

#: copies of the data (as float64) a fit holds at once while it checks and models them
DATA_COPIES = 4
#: bytes per cell while delimited text is parsed (a Python str per cell, then float64)
TEXT_CELL_BYTES = 64
#: declared / stored bytes above which a variable cannot have been written (deflate's maximum
#: compression ratio is 1032:1)
MAX_RATIO = 1100
#: copies of what the report reads that it holds at once (the bounded posterior and a copy)
REPORT_COPIES = 2


def _shape_text(shape):
    return " x ".join(str(int(s)) for s in shape)


def check_cells(path, shape):
    """Refuse data whose declared shape would not fit in memory, before reading them."""
    cells = int(np.prod([int(s) for s in shape], dtype=object))
    check_allocation(8 * DATA_COPIES * cells,
                     f"{path} declares a {' x '.join(str(int(s)) for s in shape)} array "
                     f"({cells:,} cells) and a fit")


def _npy_header(fh):
    """``(shape, dtype)`` from the ``.npy`` header at the position of ``fh`` (nothing loaded)."""
    fmt_ = np.lib.format
    version = fmt_.read_magic(fh)
    read = fmt_.read_array_header_1_0 if version == (1, 0) else fmt_.read_array_header_2_0
    shape, _, dtype = read(fh, max_header_size=10_000)
    return shape, dtype


def check_npy(path):
    """Read a ``.npy`` header: refuse a pickled, complex, truncated or too large array."""
    with open(path, "rb") as fh:
        try:
            shape, dtype = _npy_header(fh)
        except ValueError as err:
            raise ValueError(f"{path} is not a valid .npy file: {err}") from None
        offset = fh.tell()
    if dtype.hasobject:
        raise ValueError(f"{path} holds Python objects (pickled); save a numeric array")
    if dtype.kind == "c":
        raise ValueError(f"{path} holds complex numbers (dtype {dtype}); NMF needs real data: "
                         "save X.real or abs(X)")
    cells = int(np.prod(shape, dtype=object))
    need = cells * dtype.itemsize
    have = path.stat().st_size - offset
    if need > have:
        raise ValueError(f"{path} declares a {' x '.join(map(str, shape))} {dtype} array "
                         f"({need:,} bytes) but holds {have:,} bytes of data (truncated or "
                         "corrupt)")
    check_cells(path, shape)


def check_data_size(path, *, rank=None):
    """Size a data file from its headers (no data read); refuse what would not fit in memory.

    Nothing happens for a file that does not exist or has an unknown suffix (the reader says
    so). :mod:`bnmfzoo._cli.declared` lists the checks of each format.
    """
    path = Path(path)
    if not path.is_file():
        return
    suffix = path.suffix.lower()
    try:
        if suffix == ".npz":
            check_npz(path, rank=rank)
        elif suffix == ".npy":
            check_npy(path)
        elif suffix in (".nc", ".netcdf", ".h5"):
            check_netcdf(path, what="the data file")
        elif suffix in (".csv", ".tsv", ".txt"):
            check_text(path)
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err}") from err


def npz_members(path):
    """``{name: (shape, dtype)}`` of the arrays of an ``.npz`` file, from their headers only.

    Raises
    ------
    ValueError
        Not a zip archive, a member that is not a ``.npy`` array, pickled objects, or a member
        declaring more bytes than the archive holds for it (truncated or forged).
    """
    members = {}
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        raise ValueError(f"{path} is not a valid .npz file (zip archive): {err}") from None
    with archive:
        for info in archive.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            with archive.open(info) as fh:
                try:
                    shape, dtype = _npy_header(fh)
                except ValueError as err:
                    raise ValueError(f"{path}: member {info.filename!r} is not a .npy array: "
                                     f"{err}") from None
                offset = fh.tell()
            if dtype.hasobject:
                raise ValueError(f"{path}: member {name!r} holds Python objects (pickled); "
                                 "save numeric arrays")
            need = int(np.prod(shape, dtype=object)) * dtype.itemsize
            have = info.file_size - offset
            if need > have:
                raise ValueError(f"{path}: member {name!r} declares a {_shape_text(shape)} "
                                 f"{dtype} array ({need:,} bytes) but holds {have:,} bytes "
                                 "(truncated or corrupt)")
            members[name] = (tuple(int(s) for s in shape), dtype)
    return members


def check_npz(path, *, rank=None):
    """Size a ``scipy.sparse`` ``.npz`` file from its headers; return ``(shape, stored)``.

    The memory a fit needs is bounded by the labels and factor rows of its ``D + N`` rows and
    columns (``rank`` components, 1 when not known) and its stored entries, each held
    :data:`DATA_COPIES` times; above :func:`~bnmfzoo._base.memory.memory_budget` the file is
    refused before any of its arrays is loaded.
    """
    members = npz_members(path)
    if "shape" not in members or "format" not in members:
        raise ValueError(f"{path} is not a scipy.sparse .npz file (scipy.sparse.save_npz): it "
                         f"has no 'shape' or 'format' member (members: {sorted(members)})")
    shape_of, dtype_of = members["shape"]
    if shape_of != (2,) or dtype_of.kind not in "iu":
        raise ValueError(f"{path}: member 'shape' must hold 2 integers (a matrix), got a "
                         f"{_shape_text(shape_of) or 'scalar'} {dtype_of} array")
    with np.load(path, allow_pickle=False) as z:  # 2 integers, checked above
        D, N = (int(s) for s in z["shape"])
    if D < 0 or N < 0:
        raise ValueError(f"{path} declares a negative shape ({D} x {N})")
    stored = max((int(np.prod(members[k][0], dtype=object)) for k in ("data", "indices", "row",
                                                                      "col") if k in members),
                 default=0)
    need = DATA_COPIES * (8 * (D + N) * (1 + int(rank or 1)) + 24 * stored)
    check_allocation(need, f"{path} declares a {D} x {N} sparse matrix ({D + N:,} rows and "
                           f"columns, {stored:,} stored entries) and a fit")
    return (D, N), stored


def netcdf_variables(path):
    """Every variable of a netCDF4 / HDF5 file, from its metadata only.

    Returns ``[(group/name, dims, shape, itemsize, stored bytes)]``, or ``None`` when the file
    is not HDF5 (netCDF3).
    """
    import h5netcdf
    import h5py

    if not h5py.is_hdf5(path):
        return None
    out = []
    try:
        with h5netcdf.File(path, "r", phony_dims="access") as f:
            def walk(group, prefix):
                for name, var in group.variables.items():
                    try:
                        stored = int(var._h5ds.id.get_storage_size())
                    except (AttributeError, OSError):  # pragma: no cover - h5py internals
                        stored = None
                    out.append((f"{prefix}/{name}", tuple(var.dimensions), tuple(var.shape),
                                int(var.dtype.itemsize) if var.dtype.kind != "O" else 8,
                                stored))
                for name, child in group.groups.items():
                    walk(child, f"{prefix}/{name}")

            walk(f, "")
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(f"cannot read {path} as netCDF4/HDF5: "
                         f"{str(err).splitlines()[0] if str(err) else type(err).__name__}"
                         ) from None
    return out


def check_netcdf(path, *, what, copies=DATA_COPIES, max_draws=None):
    """Refuse a netCDF / HDF5 file whose variables would not fit in memory, before reading.

    ``max_draws``: a variable with a ``draw`` dim counts only that many draws (what a reader
    that thins them loads). Also refuses variables declaring more than :data:`MAX_RATIO`
    times the bytes stored for them (never written; module docstring). A file that is not
    HDF5 (netCDF3) stores its variables uncompressed: its size bounds what it holds.
    """
    path = Path(path)
    variables = netcdf_variables(path)
    if variables is None:
        check_allocation(copies * path.stat().st_size, f"{what} {path}")
        return 0
    total = 0
    declared = stored = 0
    largest = (-1, "", ())
    for name, dims, shape, itemsize, size_on_disk in variables:
        nbytes = int(np.prod(shape, dtype=object)) * itemsize
        largest = max(largest, (nbytes, name, shape))
        declared += nbytes
        stored += size_on_disk or 0
        if max_draws is not None and "draw" in dims:
            draws = shape[dims.index("draw")]
            if draws > max_draws:
                nbytes = nbytes // draws * max_draws
        total += nbytes
    biggest = f"the largest, {largest[1]}: {_shape_text(largest[2])}" if variables else ""
    check_allocation(copies * total, f"{what} {path} ({human(total)} of variables; {biggest})")
    if declared > MAX_RATIO * stored + 2**20:
        raise ValueError(f"{path} declares {human(declared)} of variables ({biggest}) but "
                         f"stores {human(stored)} for them, more than any zlib compression can "
                         "hold (1032:1): most of it was never written (a forged or unfinished "
                         "file); nothing was read")
    return total


def _count_cells(path):
    """Upper bound on the cells of a delimited file, in one pass of constant memory.

    Separators (``,``, tab, ``;``, blank) and line ends are counted.
    """
    cells = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 24):
            cells += sum(block.count(c) for c in (b",", b"\t", b";", b" ", b"\n"))
    return cells + 1


def check_text(path):
    """Refuse a delimited file whose cells would not fit in memory while parsed.

    A file of ``S`` bytes has at most ``S / 2 + 1`` cells; when that bound is above the budget,
    the separators and line ends are counted first (constant memory) before anything is parsed.
    """
    from bnmfzoo._base.memory import memory_budget

    path = Path(path)
    size = path.stat().st_size
    if TEXT_CELL_BYTES * (size // 2 + 1) <= memory_budget():
        return
    cells = _count_cells(path)
    check_allocation(TEXT_CELL_BYTES * cells,
                     f"{path} ({human(size)} of text, up to {cells:,} cells) parsed")
