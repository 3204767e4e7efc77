"""Interrupts that land in the package's own code (or the user's), never inside a kernel's call.

A Python signal handler runs at the next bytecode boundary of *any* Python frame, including
Python code that a C extension calls in the middle of its own work. Numba's dispatcher does
that when it unboxes a ``numpy.random.Generator`` argument (``ctypes`` and typing code), and
an exception raised by the handler there crashes the process with a segmentation fault: a loop
of short kernel calls taking a generator crashed in 58 of 100 Ctrl-Cs
(``benchmarks/investigations/ctrl_c_numba_generator.py``), ``bnmfzoo masses`` in 3 of 41.
:class:`Deferral` raises such an interrupt instead at the next line of *own code* (the
package's modules, or code outside the interpreter's library and the installed packages: the
user's script or notebook cell), where a raise is an ordinary Python exception.
:func:`own_code_interrupts` applies that rule to Ctrl-C in the library's long loops; the
``bnmfzoo`` command applies it to every command.

Examples
--------
>>> from bnmfzoo._base.interrupts import own_code
>>> own_code(__file__), own_code("<frozen importlib._bootstrap>")
(True, False)
"""

import os
import signal
import sys
import sysconfig
import threading
import time
from contextlib import contextmanager

__all__ = ["Deferral", "own_code", "own_code_interrupts"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIBRARY = tuple(sorted({os.path.abspath(p) + os.sep for key in ("stdlib", "platstdlib",
                                                                  "purelib", "platlib")
                         if (p := sysconfig.get_paths().get(key))}))


def own_code(filename):
    """Whether a frame of ``filename`` is own code, where an interrupt may be raised at once.

    True for the package's modules, and for files outside the interpreter's standard library
    and the installed packages (a script, a test, a notebook cell); False for those libraries
    and for code without a file (``<frozen ...>``, ``<string>``).
    """
    if not filename or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    return path.startswith(_PACKAGE) or not path.startswith(_LIBRARY)


class Deferral:
    """An exception to raise at the next line (or call) of own code of the main thread.

    :meth:`arm` sets a trace function on the interrupted stack's own frames and on calls that
    follow (``sys.settrace``), and it raises the exception at the first own line that runs:
    after the library or C call the signal interrupted has returned. Library frames are not
    traced. :meth:`disarm` drops a waiting exception; :meth:`close` (the caller's ``finally``)
    also puts back the trace function in place before :meth:`arm` (a debugger's, coverage's),
    which Python removes when a trace function raises.
    """

    def __init__(self):
        self.exc = None
        self._frames = []
        self._previous = self._since = None
        self._armed = False

    @property
    def pending(self):
        """Whether an exception waits for own code."""
        return self.exc is not None

    def waited(self):
        """Seconds the waiting exception has waited (0 when none waits)."""
        return 0.0 if self.exc is None else time.monotonic() - self._since

    def arm(self, exc, frame):
        """Raise ``exc`` at the next own line run after ``frame`` (the interrupted frame).

        Call it last in a signal handler: an own function the handler called after it would
        raise inside the handler.
        """
        if self.exc is not None:
            return
        self.exc, self._since = exc, time.monotonic()
        if not self._armed:
            self._previous, self._armed = sys.gettrace(), True
        f = frame
        while f is not None:
            if own_code(f.f_code.co_filename):
                self._frames.append((f, f.f_trace))
                f.f_trace = self._trace
            f = f.f_back
        sys.settrace(self._trace)

    def disarm(self):
        """Drop the waiting exception (returned) and stop tracing the frames for it."""
        exc, self.exc = self.exc, None
        if exc is not None:
            sys.settrace(self._previous)
        for f, old in self._frames:
            f.f_trace = old
        self._frames.clear()
        return exc

    def close(self):
        """:meth:`disarm`, and put back the trace function that was in place before."""
        self.disarm()
        if self._armed:
            sys.settrace(self._previous)
            self._previous, self._armed = None, False

    def _trace(self, frame, event, arg):
        if not own_code(frame.f_code.co_filename):
            return None
        if event in ("call", "line") and self.exc is not None:
            raise self.disarm()
        return self._trace


@contextmanager
def own_code_interrupts():
    """While inside, Ctrl-C raises ``KeyboardInterrupt`` only in own code (see the module).

    Only where Python's default SIGINT handler is in place, in the main thread: a handler the
    caller set (the ``bnmfzoo`` command's, a notebook's) is left alone. A second Ctrl-C
    before the first took effect raises at once, wherever it lands.

    Examples
    --------
    >>> import signal
    >>> from bnmfzoo._base.interrupts import own_code_interrupts
    >>> before = signal.getsignal(signal.SIGINT)
    >>> with own_code_interrupts():
    ...     pass
    >>> signal.getsignal(signal.SIGINT) is before
    True
    """
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    deferral = Deferral()

    def handler(signum, frame):
        if deferral.pending or frame is None or own_code(frame.f_code.co_filename):
            deferral.disarm()
            raise KeyboardInterrupt
        deferral.arm(KeyboardInterrupt(), frame)

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        deferral.close()
        signal.signal(signal.SIGINT, signal.default_int_handler)
