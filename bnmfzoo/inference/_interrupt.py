"""Ctrl-C and SIGTERM during ``pm.sample``: stop after the current draw, raise to the caller.

PyMC's ``pm.sample`` catches a ``KeyboardInterrupt`` inside a chain, goes on with the next
chain and returns the draws it has (PyMC 6, ``sampling/mcmc.py::_sample``): a Ctrl-C would
leave a silently truncated result. :func:`stop_on_signals` installs, for the duration of a
serial ``pm.sample`` in the main thread, a handler of SIGINT and SIGTERM that only records the
signal (the previous handlers are restored afterwards); the per-draw callback
(:meth:`Stopper.callback`) then raises :class:`_Stop`, which PyMC does not catch, and the
caller raises :class:`SamplingInterrupted` (a ``KeyboardInterrupt``). A ``KeyboardInterrupt``
raised by a user's callback stops the same way. The latency is one draw: the compiled count
sweeps return to Python at bounded intervals (``counts/sweep.py``, ``counts/gibbs/_compiled.py``).
"""

import signal
import threading
from contextlib import contextmanager

__all__ = ["SamplingInterrupted", "Stopper", "stop_on_signals", "check_complete"]

_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM") if hasattr(signal, n))


class SamplingInterrupted(KeyboardInterrupt):
    """Sampling stopped by Ctrl-C (SIGINT), SIGTERM or a ``KeyboardInterrupt``: no result.

    Attributes
    ----------
    signum : int
        The signal that stopped it (``signal.SIGINT`` for a ``KeyboardInterrupt``).
    """

    def __init__(self, signum=signal.SIGINT, detail=""):
        self.signum = int(signum)
        name = signal.Signals(self.signum).name
        super().__init__(f"sampling interrupted ({name}){detail}: no result")


class _Stop(BaseException):
    """Raised by the per-draw callback once a signal came (PyMC lets it through)."""


class Stopper:
    """The signals received while sampling and the per-draw callback that acts on them."""

    def __init__(self, user_callback=None):
        self.received = []
        self._user = user_callback

    def handler(self, signum, frame):
        """Record the signal; :meth:`callback` raises after the current draw."""
        self.received.append(signum)

    def callback(self, *args, **kwargs):
        """``pm.sample``'s callback: stop once a signal came, else the user's callback."""
        if self.received:
            raise _Stop()
        if self._user is not None:
            try:
                self._user(*args, **kwargs)
            except KeyboardInterrupt:
                self.received.append(signal.SIGINT)
                raise _Stop() from None

    def raise_if_stopped(self):
        """Raise :class:`SamplingInterrupted` when a signal came."""
        if self.received:
            raise SamplingInterrupted(self.received[0])


@contextmanager
def stop_on_signals(user_callback=None):
    """Yield a :class:`Stopper` whose handler holds SIGINT and SIGTERM (main thread only).

    Outside the main thread, or where a handler was set from C (``signal.getsignal`` is None),
    the handlers are left alone; the callback still turns a callback's ``KeyboardInterrupt``
    into a stop, and :func:`check_complete` catches a truncated result.
    """
    stopper = Stopper(user_callback)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in _SIGNALS:
            old = signal.getsignal(sig)
            if old is None:
                continue
            try:
                signal.signal(sig, stopper.handler)
            except (ValueError, OSError):  # pragma: no cover - platform refuses
                continue
            previous[sig] = old
    try:
        try:
            yield stopper
        except _Stop:
            pass
        stopper.raise_if_stopped()
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def check_complete(dt, draws, chains):
    """Raise :class:`SamplingInterrupted` if ``dt`` has fewer chains or draws than asked.

    PyMC returns what it has after a ``KeyboardInterrupt`` it caught (fewer draws, or chains
    dropped); a result like that is never returned as complete.
    """
    children = getattr(dt, "children", None)  # a DataTree (not a MultiTrace)
    if not children or "posterior" not in children:
        return
    post = dt["posterior"]
    got_c = int(post.sizes.get("chain", chains))
    got_d = int(post.sizes.get("draw", draws))
    if got_c < chains or got_d < draws:
        raise SamplingInterrupted(detail=f" after {got_d} of {draws} draws in {got_c} of "
                                         f"{chains} chains")
