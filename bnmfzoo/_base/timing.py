"""Wall and CPU clocks for the timings our fitters record in their ``diagnostics`` group.

Every timed phase records wall seconds (``time.perf_counter``) and, beside them, CPU seconds of
this process (``time.process_time``; all threads of the process, so with one BLAS thread it is
the phase's own work, undisturbed by other processes on a shared machine). A wall time ``x_time``
has its CPU twin ``x_cpu_time``.
"""

import time

__all__ = ["Timer"]


class Timer:
    """Accumulating wall and CPU clock, used as a context manager.

    Each ``with`` block adds its wall and CPU seconds to ``wall`` and ``cpu``; a timer can be
    entered many times (e.g. once per optimizer step, so that work done between the blocks is not
    counted).

    Parameters
    ----------
    wall, cpu : float, optional
        Starting totals in seconds (e.g. a setup phase timed elsewhere).

    Examples
    --------
    >>> from bnmfzoo._base.timing import Timer
    >>> t = Timer()
    >>> with t:
    ...     _ = sum(range(10_000))
    >>> t.wall >= 0.0 and t.cpu >= 0.0
    True
    """

    __slots__ = ("wall", "cpu", "_w0", "_c0")

    def __init__(self, wall=0.0, cpu=0.0):
        self.wall = float(wall)
        self.cpu = float(cpu)

    def __enter__(self):
        self._w0, self._c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall += time.perf_counter() - self._w0
        self.cpu += time.process_time() - self._c0
        return False

    def __repr__(self):
        return f"Timer(wall={self.wall:.6g}, cpu={self.cpu:.6g})"
