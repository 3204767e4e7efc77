"""Sizes before allocation: refuse what would not fit in memory, in one line.

An allocation above half of the memory this process may use (physical memory, or
``RLIMIT_AS`` when lower) is refused with a one-line ``ValueError`` before it is attempted.
"""

import os
import resource

__all__ = ["check_allocation", "human", "memory_budget", "peak_resident_bytes"]


def memory_budget():
    """Bytes this process may allocate for one array: half of RAM or of ``RLIMIT_AS``.

    Examples
    --------
    >>> memory_budget() > 0
    True
    """
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):  # pragma: no cover - not POSIX
        total = 2**40
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        total = min(total, soft)
    return total // 2


def human(nbytes):
    """``1.5 GB`` style size.

    Examples
    --------
    >>> human(3e9), human(2000)
    ('3 GB', '2 kB')
    """
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{int(nbytes)} bytes"


def check_allocation(nbytes, what):
    """Refuse (``ValueError``, one line) an allocation of ``nbytes`` above :func:`memory_budget`.

    Examples
    --------
    >>> check_allocation(8, "a tiny array")
    >>> check_allocation(2**70, "the data")
    Traceback (most recent call last):
    ...
    ValueError: the data would need 1.18e+09 TB in memory, more than the ... allowed ...
    """
    budget = memory_budget()
    if nbytes > budget:
        raise ValueError(f"{what} would need {human(nbytes)} in memory, more than the "
                         f"{human(budget)} allowed (half of this machine's memory or of the "
                         "process's address-space limit)")


def peak_resident_bytes():
    """Peak resident memory of this process, in bytes: ``VmHWM`` of ``/proc/self/status``.

    Not ``ru_maxrss``: on Linux a process started by fork (or vfork) and exec keeps its
    parent's peak there, so a small program started from a large test session reported the
    session's 7.4 GiB where its own peak was 1.3 GiB. ``ru_maxrss`` is the fallback where
    ``/proc`` is missing.

    Examples
    --------
    >>> peak_resident_bytes() > 0
    True
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    scale = 1 if os.uname().sysname == "Darwin" else 1024  # macOS counts bytes, Linux kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
