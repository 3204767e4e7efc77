"""Ctrl-C stops the long-running paths outside ``pm.sample`` within 2 s, with no result.

Each test starts a child process, waits until it is inside the long step (the child prints
``READY`` from a hook placed just before it), sends SIGINT and checks: the stop is seen within
2 s of the signal (``STOPPED`` printed where the ``KeyboardInterrupt`` arrives, or the command's
one ``interrupted`` line), the process then exits by that interrupt (no result returned, no
traceback for the command, no output written) and nothing runs on.

* blocked VB on a local Dask cluster (Poisson, and NB whose dispersion is learned by Newton
  round trips to the workers): the driver waits on the workers' futures in 1 s slices, in
  which the interrupt arrives at once. The cluster is the caller's: its close (Dask's nanny
  waits up to 4 s for each worker process) is not part of the 2 s.
* per-mode bridge chains (``smc_mode_masses(check="bridge")``): Python loops over compiled
  sweeps of microseconds.
* per-mode parallel tempering along the reference path
  (``smc_mode_masses(check="reference_pt")``): Python loops over scans of compiled sweeps.
* the same along the negative binomial's Gaussian-copula path (HMC with the copula's term and
  the dispersion's slice step).
* ``bnmfzoo signatures`` (the compressive screen with its default negative-binomial sweep and
  with the Poisson one, and Chib's evidence) on a 2,000-sample cohort, where one compiled sweep
  takes ~0.4 s: the sweeps run in chunks of about ``CHUNK_SECONDS`` (``signatures/_gibbs.py``;
  before, one call ran all burn-in sweeps, minutes deaf to Ctrl-C).
* ``bnmfzoo signatures --alternatives`` during the alternatives' SMC (Python loops over
  particles and compiled sweeps).

Interpreter start-up, imports and compilation come before ``READY`` and are not timed. All are
slow tests (each child needs 20-60 s to start on a shared machine).
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]


def _env():
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache/bnmfzoo/numba"))
    env.setdefault("PYTENSOR_FLAGS", f"base_compiledir={Path.home()}/.cache/bnmfzoo/pytensor")
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests" / "signatures"),
                                         env.get("PYTHONPATH", "")])
    return env


def _interrupt(tmp_path, code, *args, startup=240):
    """Run ``code`` in a child; SIGINT 0.5 s after its READY line.

    Returns (seconds from the signal to the STOPPED / interrupted line, seconds to exit,
    return code, stdout after READY, stderr).
    """
    script = tmp_path / "child.py"
    # Ctrl-C's default action, as in a terminal (a test run in the background of a
    # non-interactive shell inherits SIGINT ignored)
    script.write_text("import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
                      + textwrap.dedent(code))
    p = subprocess.Popen([sys.executable, str(script), *args], cwd=tmp_path, env=_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + startup
        ready = False
        while time.time() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            if line.startswith("READY"):
                ready = True
                break
        assert ready, p.stderr.read()[-2000:] if p.poll() is not None else "no READY"
        time.sleep(0.5)
        sent = time.time()
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=120)
            exited = time.time() - sent
        except subprocess.TimeoutExpired:  # reported by the caller's asserts
            p.kill()
            out, err = p.communicate()
            exited = None
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    stops = [float(ln.split()[1]) for ln in out.splitlines() if ln.startswith("STOPPED")]
    seen = stops[0] - sent if stops else None
    return seen, exited, p.returncode, out, err


_BLOCKED = """
    import sys, time
    if __name__ == "__main__":  # the workers re-import this file: keep PyMC out of them
        import numpy as np, scipy.sparse as sp, distributed
        from bnmfzoo.inference.blocked import fit_blocked_vb
        kw = {"model": sys.argv[1]}
        rng = np.random.default_rng(0)
        X = sp.random(8000, 1000, density=0.05, random_state=1, format="csr",
                      data_rvs=lambda n: rng.poisson(2.0, n) + 1)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, \\
                distributed.Client(cluster) as client:
            def after(t):
                if t == 1:
                    print("READY", flush=True)
            try:
                fit_blocked_vb(X, 4, client=client, max_iter=10**6, tol=0.0, block_rows=2000,
                               _after_iteration=after, **kw)
            except KeyboardInterrupt:
                print(f"STOPPED {time.time()!r}", flush=True)
                raise
            print("RETURNED", flush=True)
"""


@pytest.mark.parametrize("model", ["poisson", "negative_binomial"])
def test_blocked_vb_on_a_dask_cluster_stops_within_two_seconds(tmp_path, model):
    pytest.importorskip("distributed")
    seen, exited, code, out, err = _interrupt(tmp_path, _BLOCKED, model)
    assert seen is not None and seen < 2.0, (seen, err[-2000:])
    assert exited is not None, f"no exit 120 s after the signal: {err[-3000:]}"
    assert "RETURNED" not in out
    assert code == -signal.SIGINT  # the KeyboardInterrupt ended the process
    assert err.rstrip().splitlines()[-1] == "KeyboardInterrupt"


_BRIDGE = """
    import time
    import numpy as np
    import bnmfzoo.inference.mode_bridge as mb
    from bnmfzoo.inference import smc_mode_masses
    from bnmfzoo.models import poisson

    first = mb.bridge_masses

    def marked(*args, **kw):
        print("READY", flush=True)
        return first(*args, **kw)

    mb.bridge_masses = marked
    X = np.random.default_rng(0).poisson(3.0, size=(6, 5))
    try:
        smc_mode_masses(poisson(X, 2), n_runs=2, n_particles=20, n_moves=2, check="bridge",
                        bridge_draws=10**7, random_seed=0)
    except KeyboardInterrupt:
        print(f"STOPPED {time.time()!r}", flush=True)
        raise
    print("RETURNED", flush=True)
"""


def test_bridge_chains_stop_within_two_seconds(tmp_path):
    seen, exited, code, out, err = _interrupt(tmp_path, _BRIDGE)
    assert seen is not None and seen < 2.0, (seen, err[-2000:])
    assert exited is not None and exited < 5.0, exited  # interpreter teardown, shared machine
    assert "RETURNED" not in out and code == -signal.SIGINT
    assert err.rstrip().splitlines()[-1] == "KeyboardInterrupt"


_REFERENCE_PT = """
    import sys, time
    import numpy as np
    import bnmfzoo.inference.counts.tempering._local as local
    import bnmfzoo.inference.reference_tempering as rt
    from bnmfzoo.inference import smc_mode_masses
    from bnmfzoo.models import negative_binomial, poisson

    copula = sys.argv[1] == "nb-copula"
    if copula:  # the NB route's copula path: HMC with the copula's term, the dispersion's
        # slice step; the copula kept whatever its timing (on this tiny matrix its
        # pure-Python term is the dearer move), and READY at its first move
        rt.sweep_seconds = lambda path, betas, **k: 1e-5 if "copula" in path.q else 1e-3
        owner, name = local, "hmc_step_term"
    else:  # a mode's tempering runs, advanced together
        owner, name = rt, "run_together"
    first = getattr(owner, name)
    said = []

    def marked(*args, **kw):
        if not said:
            said.append(1)
            print("READY", flush=True)
        return first(*args, **kw)

    setattr(owner, name, marked)
    X = np.random.default_rng(0).poisson(3.0, size=(6, 5))
    model = (negative_binomial if copula else poisson)(X, 2)
    try:
        smc_mode_masses(model, n_runs=2, n_particles=20, n_moves=2, check="reference_pt",
                        pt_copula=copula, pt_scans=10**7, random_seed=0)
    except KeyboardInterrupt:
        print(f"STOPPED {time.time()!r}", flush=True)
        raise
    print("RETURNED", flush=True)
"""


@pytest.mark.parametrize("path", ["poisson", "nb-copula"])
def test_reference_pt_stops_within_two_seconds(tmp_path, path):
    seen, exited, code, out, err = _interrupt(tmp_path, _REFERENCE_PT, path)
    assert seen is not None and seen < 2.0, (seen, err[-2000:])
    assert exited is not None and exited < 5.0, exited  # interpreter teardown, shared machine
    assert "RETURNED" not in out and code == -signal.SIGINT
    assert err.rstrip().splitlines()[-1] == "KeyboardInterrupt"


_SIGNATURES = """
    import inspect, sys, time
    import numpy as np
    from _sigdata import catalog
    from bnmfzoo.cli import main
    from bnmfzoo.signatures import _gibbs

    where = sys.argv[1]
    df, _ = catalog(n_samples=2000, burden=20000, seed=1)
    df.to_csv("cohort.txt", sep="\\t", index=False)
    first = _gibbs.sweeps
    said = []

    def marked(*args, **kw):
        caller = inspect.stack()[1].filename
        if not said and where in caller:
            said.append(1)
            print("READY", flush=True)
        return first(*args, **kw)

    _gibbs.sweeps = marked
    code = main(["signatures", "cohort.txt", "--out", "out", "--ranks", "2-4", "--quiet",
                 "--rank-method", sys.argv[2], *sys.argv[3:]])
    print(f"STOPPED {time.time()!r}" if code == 130 else "RETURNED", flush=True)
    sys.exit(code)
"""


@pytest.mark.parametrize("where,method,likelihood", [
    ("compressive", "compressive", ()),  # the default: negative binomial
    ("compressive", "compressive", ("--likelihood", "poisson")),
    ("evidence", "chib", ())])
def test_signatures_command_stops_within_two_seconds(tmp_path, where, method, likelihood):
    seen, exited, code, out, err = _interrupt(tmp_path, _SIGNATURES, where, method, *likelihood)
    assert code == 130, err[-2000:]
    assert seen is not None and seen < 2.0, seen
    assert exited is not None and exited < 5.0, exited  # interpreter teardown, shared machine
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines == ["bnmfzoo signatures: interrupted; no result written"], err[-2000:]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert sorted(f.name for f in tmp_path.iterdir()) == ["child.py", "cohort.txt"]


_ALTERNATIVES = """
    import sys, time
    import bnmfzoo.inference as inference
    from _sigdata import catalog
    from bnmfzoo.cli import main

    df, _ = catalog(n_samples=40, burden=400, seed=1)
    df.to_csv("cohort.txt", sep="\\t", index=False)
    first = inference.smc_mode_masses

    def marked(*args, **kw):
        print("READY", flush=True)
        return first(*args, **kw)

    inference.smc_mode_masses = marked  # alternative_signatures imports it when called
    code = main(["signatures", "cohort.txt", "--out", "out", "--ranks", "2", "--quiet",
                 "--chains", "1", "--burn", "20", "--keep", "40", "--alternatives",
                 "--particles", "1000"])
    print(f"STOPPED {time.time()!r}" if code == 130 else "RETURNED", flush=True)
    sys.exit(code)
"""


def test_signature_alternatives_stop_within_two_seconds(tmp_path):
    seen, exited, code, out, err = _interrupt(tmp_path, _ALTERNATIVES)
    assert code == 130, err[-2000:]
    assert seen is not None and seen < 2.0, seen
    assert exited is not None and exited < 5.0, exited  # interpreter teardown, shared machine
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines == ["bnmfzoo signatures: interrupted; no result written"], err[-2000:]
    assert sorted(f.name for f in tmp_path.iterdir()) == ["child.py", "cohort.txt"]


_HMC_POISSON = """
    import time
    import numpy as np
    import pymc as pm
    import bnmfzoo  # noqa: F401  (registers the steps)
    from bnmfzoo.inference.counts.gibbs import _hmc_moves

    first, calls = _hmc_moves.HmcAdapter.transition, []

    def marked(self, *args, **kw):
        calls.append(1)
        if len(calls) == 60:  # after the first mass window: trajectories to the U-turn
            print("READY", flush=True)
        return first(self, *args, **kw)

    _hmc_moves.HmcAdapter.transition = marked
    rng = np.random.default_rng(0)
    X = rng.poisson(rng.gamma(1, 1, (3000, 8)) @ rng.gamma(1, 1, (8, 1000)) * 3)
    with pm.Model():
        A = pm.Gamma("A", 1.0, 1.0, shape=(3000, 8))
        W = pm.Gamma("W", 1.0, 1.0, shape=(8, 1000))
        pm.Poisson("X", mu=A @ W, observed=X)
        try:
            pm.sample(draws=200, tune=200, chains=1, progressbar=False,
                      compute_convergence_checks=False)
        except BaseException:
            print(f"STOPPED {time.time()!r}", flush=True)
            raise
    print("RETURNED", flush=True)
"""


def test_hmc_poisson_on_a_large_dense_matrix_stops_within_two_seconds(tmp_path):
    """pm.sample's default for dense Poisson counts (HmcPoisson) on 3000 x 1000 at K = 8: one
    gradient takes ~65 ms, so 1024 leapfrog steps took 12 s before the default cap
    (``_hmc_moves.leap_cap``) bounded a transition's work."""
    seen, exited, code, out, err = _interrupt(tmp_path, _HMC_POISSON)
    assert seen is not None and seen < 2.0, (seen, err[-2000:])
    assert exited is not None, f"no exit 120 s after the signal: {err[-3000:]}"
    assert "RETURNED" not in out and code != 0
