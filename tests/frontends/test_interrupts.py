"""Ctrl-C and SIGTERM stop a fit: ``KeyboardInterrupt`` in Python, one line and exit 130 / 143
from the ``bnmfzoo`` command within 2 s, and never a result built from truncated chains."""

import os
import pprint
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from bnmfzoo.inference._interrupt import SamplingInterrupted

ROOT = Path(__file__).resolve().parents[2]
MAIN = threading.current_thread() is threading.main_thread()
needs_main = pytest.mark.skipif(not MAIN, reason="signal handlers need the main thread")


def _kl_estimator(**kw):
    from bnmfzoo import BayesianNMF

    return BayesianNMF(n_components=2, beta_loss="kullback-leibler", draws=100_000, tune=10,
                       chains=2, random_state=0, progressbar=False, **kw)


@needs_main
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_signal_during_python_fit_raises_keyboard_interrupt(sig):
    # the signal comes from inside sampling (draw 5 of chain 0); the fit must stop there,
    # raise, restore the handlers and leave the estimator unfitted
    signum = getattr(signal, sig)
    before = signal.getsignal(signum)
    seen = []

    def callback(*, trace, draw):
        seen.append(draw.chain)
        if len(seen) == 5:
            signal.raise_signal(signum)

    X = np.random.default_rng(0).poisson(2.0, size=(8, 6))
    est = _kl_estimator(method_kwargs={"callback": callback})
    t = time.perf_counter()
    with pytest.raises(KeyboardInterrupt) as info:
        est.fit(X)
    assert time.perf_counter() - t < 60
    assert isinstance(info.value, SamplingInterrupted) and info.value.signum == signum
    assert len(seen) == 5 and set(seen) == {0}  # stopped after the draw: chain 1 never ran
    assert signal.getsignal(signum) is before
    assert not hasattr(est, "components_") and not hasattr(est, "posterior_")


def test_keyboard_interrupt_in_a_callback_stops_every_chain():
    # PyMC alone would catch it, run chain 1 and return one chain
    from bnmfzoo.inference import sample
    from bnmfzoo.models import poisson

    X = np.random.default_rng(0).poisson(2.0, size=(8, 6))
    seen = []

    def callback(*, trace, draw):
        seen.append(draw.chain)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sample(poisson(X, 2), draws=1000, tune=0, chains=2, random_seed=1,
               progressbar=False, callback=callback)
    assert seen == [0, 0, 0]


def test_truncated_result_is_refused():
    from xarray import DataTree

    from bnmfzoo._base.results import build_datatree
    from bnmfzoo.inference._interrupt import check_complete

    dt = build_datatree({"A": np.ones((1, 7, 3, 2))})
    assert isinstance(dt, DataTree)
    check_complete(dt, draws=7, chains=1)
    with pytest.raises(KeyboardInterrupt, match="7 of 8 draws in 1 of 1"):
        check_complete(dt, draws=8, chains=1)
    with pytest.raises(KeyboardInterrupt, match="1 of 2 chains"):
        check_complete(dt, draws=7, chains=2)


def _as_in_a_terminal():
    """The child's Ctrl-C disposition as in a terminal's foreground job: a test run in the
    background of a non-interactive shell inherits SIGINT ignored, and a command started so
    keeps ignoring it until its own handlers are set (the start-up test then saw the fit run
    to the end; measured once with the suite started by ``nohup ... &``)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _env():
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache/bnmfzoo/numba"))
    env.setdefault("PYTENSOR_FLAGS", f"base_compiledir={Path.home()}/.cache/bnmfzoo/pytensor")
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("sig,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_cli_stops_within_two_seconds_on_huge_counts(tmp_path, sig, code):
    # 25 cells at 2**31 - 1: the negative-binomial fit that used to run for hours, deaf to
    # signals. Send the signal once sampling started; exit within 2 s (+ 1 s for a loaded
    # machine), one line on stderr, no output file.
    rng = np.random.default_rng(0)
    X = rng.poisson(3.0, size=(30, 20))
    X.flat[rng.choice(600, 25, replace=False)] = 2**31 - 1
    data, out = tmp_path / "x.npy", tmp_path / "fit.nc"
    np.save(data, X)
    cmd = [sys.executable, "-m", "bnmfzoo.cli", "fit", str(data), "--model",
           "negative_binomial", "--rank", "2", "--out", str(out), "--draws", "100000"]
    p = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, preexec_fn=_as_in_a_terminal)
    lines = []
    try:
        deadline = time.time() + 120
        while time.time() < deadline:  # PyMC announces the sampling on stderr
            line = p.stderr.readline()
            if not line:
                break
            lines.append(line)
            if "GibbsPoisson" in line:
                break
        assert any("GibbsPoisson" in ln for ln in lines), lines
        time.sleep(1.0)
        t = time.perf_counter()
        p.send_signal(getattr(signal, sig))
        rest = p.stderr.read()
        p.wait(timeout=30)
        elapsed = time.perf_counter() - t
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == code
    assert elapsed < 3.0, f"{elapsed:.2f} s to stop"
    tail = [ln for ln in rest.splitlines() if ln.strip()]
    assert len(tail) == 1 and "interrupted" in tail[0] and "Traceback" not in rest, rest
    assert not out.exists()
    assert [f.name for f in tmp_path.iterdir()] == ["x.npy"]  # no temporary file left


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("sig,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_cli_signal_at_start_up_prints_one_line(tmp_path, sig, code):
    # before the command's own handlers are set (while PyMC is imported)
    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(0).poisson(2.0, size=(6, 5)))
    cmd = [sys.executable, "-m", "bnmfzoo.cli", "fit", str(data), "--model", "poisson",
           "--rank", "2", "--out", str(tmp_path / "fit.nc")]
    p = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, preexec_fn=_as_in_a_terminal)
    time.sleep(0.6)
    p.send_signal(getattr(signal, sig))
    _, err = p.communicate(timeout=30)
    assert p.returncode == code, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "interrupted" in lines[0], err
    assert not (tmp_path / "fit.nc").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_interrupt_python_ignored_is_sent_again():
    """The command's handler raises ``Interrupted``; where that raise lands in code whose
    exceptions Python ignores (a weakref callback in the import machinery: seen once in CI at
    start-up, which printed 'Exception ignored in ...' above the one line), the unraisable
    hook sends the signal again instead of printing, so it takes effect at the next point.
    Other unraisable exceptions still reach the previous hook. Deterministic."""
    from types import SimpleNamespace

    from bnmfzoo._fitcli import Interrupted
    from bnmfzoo.cli import _interruptible

    seen = []
    before = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        with pytest.raises(Interrupted):
            with _interruptible():
                sys.unraisablehook(SimpleNamespace(exc_value=Interrupted(signal.SIGINT)))
                for _ in range(1000):  # the handler runs at the next bytecode boundary
                    time.sleep(0.001)
                raise AssertionError("the interrupt was lost")
        with _interruptible():
            other = SimpleNamespace(exc_value=ValueError("x"))
            sys.unraisablehook(other)
        assert seen == [other]
        assert sys.unraisablehook == seen.append  # restored on the way out
    finally:
        sys.unraisablehook = before


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_interrupt_raised_in_del_is_sent_again_without_a_traceback(capfd):
    """Where Python itself calls the unraisable hook (an ``Interrupted`` raised in ``__del__``),
    a signal sent again from inside the hook ran the handler inside the hook: its raise was
    "ignored in sys.unraisablehook" and a traceback printed above the one line (a start-up
    SIGINT in CI, once). The hook now sends the signal again from another thread, so the
    handler's raise lands after the hook, in the command's own code. Deterministic."""
    from bnmfzoo._fitcli import Interrupted
    from bnmfzoo.cli import _interruptible

    class Dying:
        def __del__(self):
            raise Interrupted(signal.SIGINT)

    with pytest.raises(Interrupted):
        with _interruptible():
            d = Dying()
            del d  # CPython reports the raise through sys.unraisablehook
            for _ in range(1000):
                time.sleep(0.001)
            raise AssertionError("the interrupt was lost")
    assert "Exception ignored" not in capfd.readouterr().err


@needs_main
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_signal_landing_inside_the_unraisable_hook_is_sent_again(capfd, monkeypatch):
    """The signal the hook sends again can land before the hook has returned: on a loaded
    machine the sending thread can run before the main thread leaves the hook (CI, twice: the
    raise was "ignored in sys.unraisablehook" and the interrupt lost). Here it lands there
    always: the first timer started delivers its signal at once, inside ``Timer.start``. The
    handler sees the hook's frame and sends it once more. One signal in all, so none is left
    for the tests after this one. Deterministic."""
    from bnmfzoo._fitcli import Interrupted
    from bnmfzoo.cli import _interruptible

    class Dying:
        def __del__(self):
            raise Interrupted(signal.SIGINT)

    class EagerTimer(threading.Timer):
        fired = []

        def start(self):  # the first timer's signal arrives before start() returns
            if not self.fired:
                self.fired.append(True)
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
                return  # (sent: the timer itself need not run)
            super().start()

    monkeypatch.setattr(threading, "Timer", EagerTimer)
    with pytest.raises(Interrupted):
        with _interruptible():
            d = Dying()
            del d
            for _ in range(1000):
                time.sleep(0.001)
            raise AssertionError("the interrupt was lost")
    assert EagerTimer.fired
    assert "Exception ignored" not in capfd.readouterr().err


def _sigint_in(seconds):
    """SIGINT to the main thread ``seconds`` from now (a started, cancellable timer)."""
    timer = threading.Timer(seconds, signal.pthread_kill,
                            (threading.main_thread().ident, signal.SIGINT))
    timer.start()
    return timer


@needs_main
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_interrupt_in_library_code_is_raised_at_the_next_own_line(monkeypatch):
    """The command's handler raises at once only in own code (the package, the caller). A
    signal landing in library code (here the standard library; in the field, the ``ctypes``
    and typing code numba's dispatcher runs while it unboxes a kernel's generator argument,
    where the raise crashed the process: ``bnmfzoo masses``, 3 of 41 Ctrl-Cs) is raised at the
    next own line: the library call completes and the line after it raises. With no own line
    within ``DEFER_S`` the signal comes again and raises wherever it lands. Deterministic."""
    from bnmfzoo import _fitcli
    from bnmfzoo._fitcli import INTERRUPT, RECEIVED, Interrupted
    from bnmfzoo.cli import _interruptible

    monkeypatch.setattr(_fitcli, "DEFER_S", 30.0)  # the deferral alone, no second signal
    wrapped, after = [], []
    trace = sys.gettrace()

    def tracer(frame, event, arg):  # a debugger's or coverage's, put back afterwards
        return None

    sys.settrace(tracer)
    with pytest.raises(Interrupted) as err:
        with _interruptible():
            _sigint_in(0.1)  # lands in the standard library's pure-Python textwrap (0.7 s)
            wrapped.append(textwrap.wrap("ab " * 800_000, 7))
            after.append(True)  # not run: the first own line after the call raises
    assert len(wrapped) == 1 and len(wrapped[0]) == 400_000 and not after
    restored = sys.gettrace()
    sys.settrace(trace)
    assert err.value.signum == signal.SIGINT and restored is tracer

    monkeypatch.setattr(_fitcli, "DEFER_S", 0.2)
    rows = [{f"k{i}": [i, (i, str(i))]} for i in range(300_000)]
    with pytest.raises(Interrupted):
        with _interruptible():
            t0 = time.monotonic()
            _sigint_in(0.2)
            pprint.pformat(rows)  # pure Python, about 3 s unloaded: raised inside it
            raise AssertionError("the deferred interrupt was lost")
    assert 0.4 < time.monotonic() - t0 < 2.0
    assert not INTERRUPT.is_set() and not RECEIVED and sys.gettrace() is trace
    with pytest.raises(Interrupted):  # in own code: at once
        with _interruptible():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                time.sleep(0.001)
            raise AssertionError("the interrupt was lost")


@needs_main
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_library_loops_raise_keyboard_interrupt_in_own_code_only(monkeypatch):
    """``own_code_interrupts`` (the masses routes and every non-MCMC method of ``run_method``
    run under it) gives Python's default Ctrl-C the same rule: a ``KeyboardInterrupt`` at the
    next own line, the handler restored after; a handler the caller set is left alone.
    Deterministic."""
    import xarray as xr

    from bnmfzoo import _registry
    from bnmfzoo._base.interrupts import own_code_interrupts
    from bnmfzoo.inference._mass_budget import with_budget

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        wrapped, after = [], []
        with pytest.raises(KeyboardInterrupt):
            with own_code_interrupts():
                _sigint_in(0.1)
                wrapped.append(textwrap.wrap("ab " * 800_000, 7))
                after.append(True)
        assert len(wrapped) == 1 and not after
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

        @with_budget
        def handler_inside(budget_s=None):
            return signal.getsignal(signal.SIGINT)

        assert handler_inside() is not signal.default_int_handler
        seen = []

        def fitter(model, **kwargs):
            seen.append(signal.getsignal(signal.SIGINT))
            return xr.DataTree()

        monkeypatch.setattr(_registry, "resolve", lambda path: fitter)
        _registry.run_method("vb", None)
        assert seen and seen[0] is not signal.default_int_handler
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, lambda *a: None)  # the caller's own handler: kept
        assert handler_inside() is signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)
