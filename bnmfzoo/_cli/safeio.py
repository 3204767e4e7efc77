"""Writing results and reports safely, and checking sizes before anything is allocated.

Writes (:func:`write_bytes`, :func:`write_netcdf`, :func:`write_files` for several files at once,
all or none):

* **never through a symlink**: the bytes go to a new temporary file ``<name>.<random>.part``
  in the target's folder (``mkstemp``: ``O_CREAT | O_EXCL``, which never follows a link), then
  :func:`os.replace` renames it over the target; a planted symlink is *replaced* by the file,
  its target untouched.
* **nothing half-written**: any error or interrupt (Ctrl-C, SIGTERM) removes the ``.part``
  file and leaves an existing target as it was.
* **full disk**: HDF5 crashes the process (segfault) when the disk fills under it, so a
  result of up to :data:`IN_MEMORY_BYTES` (uncompressed) is encoded as netCDF **in memory**
  and written with plain ``write`` calls; ``ENOSPC`` (disk full) or ``EFBIG`` (file size
  limit) then come back as an ``OSError`` that is turned into one line (:class:`DiskFull`).
  A larger result is written by HDF5 directly, after checking that the free space exceeds
  its uncompressed size.
* **file mode**: a new file gets ``0o666`` minus the umask; an existing regular file keeps
  its mode (a ``chmod 600`` result stays ``600`` when rewritten).

Sizes (:func:`~bnmfzoo._base.memory.memory_budget`, :func:`~bnmfzoo._base.memory.check_allocation`,
here re-exported): an allocation above half of the
memory this process may use (physical memory, or ``RLIMIT_AS`` when lower) is refused with a
one-line ``ValueError`` before it is attempted.
"""

import errno
import os
import stat
import tempfile
from pathlib import Path

from bnmfzoo._base.memory import check_allocation, human, memory_budget  # noqa: F401 - re-exported

#: results up to this many bytes (uncompressed) are encoded in memory before they are written
IN_MEMORY_BYTES = 2 * 2**30


class DiskFull(OSError):
    """No space left (or file size limit reached) while writing; nothing was written."""


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(target):
    """Mode of the new file: an existing regular file's mode, else 0o666 minus the umask."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    return 0o666 & ~_umask()


def _disk_error(err, target):
    if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        why = {errno.ENOSPC: "no space left on the device", errno.EFBIG: "file size limit "
               "reached", errno.EDQUOT: "disk quota exceeded"}[err.errno]
        kept = " (the previous file is unchanged)" if os.path.lexists(target) else ""
        return DiskFull(err.errno, f"cannot write {target}: {why}; nothing was written{kept}")
    return None


def _temp_beside(target):
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(f"folder {str(parent)!r} of {str(target)!r} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f"{target.name}.", suffix=".part", dir=parent)
    return fd, tmp


def write_bytes(target, data):
    """Write ``data`` (bytes) to ``target`` atomically, never through a symlink.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> write_bytes(p, b"hello").read_bytes()
    b'hello'
    """
    target = Path(target)
    mode = _mode_for(target)
    fd, tmp = _temp_beside(target)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError as err:
            full = _disk_error(err, target)
            if full is not None:
                raise full from None
            raise
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    finally:
        if os.path.lexists(tmp):
            os.remove(tmp)
    return target


def write_files(folder, files):
    """Write ``files`` (``[(name, bytes)]``) into ``folder``: all of them, or none.

    Each file is written into a staging folder ``folder/.write-<random>.part`` first
    (:func:`write_bytes`), then every one is renamed into place; any error (a full disk:
    :class:`DiskFull`) or interrupt removes the staging folder, so no file of ``files`` was
    written or replaced. An existing regular file keeps its mode; a symlink is replaced.
    Returns the paths written.
    """
    import shutil

    folder = Path(folder)
    stage = Path(tempfile.mkdtemp(prefix=".write-", suffix=".part", dir=folder))
    try:
        try:
            for name, data in files:
                write_bytes(stage / name, data)
        except DiskFull as err:  # name the folder, not the staging place
            raise DiskFull(err.errno, str(err).replace(str(stage), str(folder))) from None
        targets = []
        for name, _ in files:
            target = folder / name
            os.chmod(stage / name, _mode_for(target))
            os.replace(stage / name, target)
            targets.append(target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return targets


def nbytes_of(dt):
    """Uncompressed bytes of every array in a DataTree."""
    return sum(var.nbytes for node in dt.subtree
               for var in node.to_dataset(inherit=False).variables.values())


def _local_scheduler():
    """A context in which xarray takes a local write lock even beside a Dask client.

    With a ``distributed.Client`` active, xarray guards netCDF writes with a distributed lock
    named after the target; an in-memory target then fails ("Semaphore or Lock ... not known").
    The arrays written here are in memory, so the local (synchronous) scheduler is right.
    """
    try:
        import dask
    except ImportError:  # pragma: no cover - dask is a dependency
        import contextlib

        return contextlib.nullcontext()
    return dask.config.set(scheduler="synchronous")


def write_netcdf(dt, target, *, encoding=None):
    """Write the DataTree ``dt`` to ``target`` (netCDF4/HDF5) safely (module docstring).

    Raises
    ------
    DiskFull
        The disk (or the file size limit) ran out; the target is unchanged.
    """
    target = Path(target)
    size = nbytes_of(dt)
    if size <= IN_MEMORY_BYTES:
        with _local_scheduler():
            view = dt.to_netcdf(None, engine="h5netcdf", encoding=encoding)
        data = bytes(view)  # the file's bytes (compressed); the encoder's buffer is freed
        view.release()
        return write_bytes(target, data)
    parent = target.parent if str(target.parent) else Path(".")
    free = os.statvfs(parent).f_bavail * os.statvfs(parent).f_frsize
    if free < size:
        raise DiskFull(errno.ENOSPC, f"cannot write {target}: the result holds {human(size)} "
                                     f"(uncompressed) and {parent} has {human(free)} free; "
                                     "nothing was written")
    mode = _mode_for(target)
    fd, tmp = _temp_beside(target)
    os.close(fd)
    try:
        with _local_scheduler():
            dt.to_netcdf(tmp, engine="h5netcdf", encoding=encoding)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    finally:
        if os.path.lexists(tmp):
            os.remove(tmp)
    return target
