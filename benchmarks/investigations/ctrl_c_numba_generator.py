"""Ctrl-C in a loop of short numba calls that take a ``numpy.random.Generator``: crashes.

Python runs a signal handler at the next bytecode boundary of any Python frame, including the
``ctypes`` and typing code numba's dispatcher runs while it unboxes a generator argument; an
exception raised by the handler there crashed the process (segmentation fault). This script
counts crashes over repeated interrupts of such a loop, each in a fresh process, under three
handlers:

- ``default``: Python's own ``KeyboardInterrupt``;
- ``library``: :func:`bnmfzoo._base.interrupts.own_code_interrupts` (what the masses routes
  run under);
- ``command``: the ``bnmfzoo`` command's handler (``bnmfzoo.cli._interruptible``).

Usage::

    python -m benchmarks.investigations.ctrl_c_numba_generator [--tries 40] [--seed 0]

Each try starts a child process, sends SIGINT after a random 0.1-0.9 s of the loop and records
its exit: ``interrupted`` (the exception reached the script), ``crashed`` (killed by a signal,
SIGSEGV in the measured runs) or anything else.
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

CHILD = r"""
import os, signal, sys, threading
import numpy as np, numba
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background shell ignores SIGINT

@numba.njit(cache=True)
def kernel(a, rng):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * rng.standard_normal()
    return s

a, rng = np.ones(10), np.random.default_rng(0)
kernel(a, rng)
mode = sys.argv[1]
if mode == "library":
    from bnmfzoo._base.interrupts import own_code_interrupts as guard
elif mode == "command":
    from bnmfzoo.cli import _interruptible as guard
else:
    from contextlib import nullcontext as guard
print("ready", flush=True)
try:
    with guard():
        while True:
            kernel(a, rng)
except BaseException as err:
    print("stopped", type(err).__name__, flush=True)
    sys.exit(3)
"""


def one_try(script, mode, delay, timeout=60):
    """Run the child ``script`` in ``mode``, interrupt it ``delay`` s after it is ready."""
    p = subprocess.Popen([sys.executable, script, mode], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        p.kill()
        return "failed to start: " + p.communicate()[1][-300:]
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        return "hung"
    if p.returncode < 0:
        return f"crashed ({signal.Signals(-p.returncode).name})"
    return "interrupted" if p.returncode == 3 and "stopped" in out else f"exit {p.returncode}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modes", nargs="+", default=["default", "library", "command"])
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    env_ok = os.environ.get("NUMBA_CACHE_DIR")
    print(f"{args.tries} tries per handler, SIGINT 0.1-0.9 s into the loop "
          f"(NUMBA_CACHE_DIR {'set' if env_ok else 'unset'})")
    folder = tempfile.mkdtemp(prefix="ctrl_c_numba_")
    script = os.path.join(folder, "child.py")  # a file: numba caches the kernel beside it
    with open(script, "w") as f:
        f.write(CHILD)
    for mode in args.modes:
        outcomes = {}
        for _ in range(args.tries):
            o = one_try(script, mode, float(rng.uniform(0.1, 0.9)))
            outcomes[o] = outcomes.get(o, 0) + 1
        print(f"{mode:8s} " + ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items())),
              flush=True)


if __name__ == "__main__":
    main()
