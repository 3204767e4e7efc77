"""Row-blocked count VB: bit for bit the same on 1, 2, 4 workers; the serial VB's updates.

Exact equality (``np.array_equal``) across worker counts is the right check: an iteration is
deterministic, every block sum is an index-order loop and the driver adds the blocks'
statistics in block order, so no rounding differs between the runs. Against the serial VB
(``vb_iteration`` / ``nb_vb_iteration`` from the same start) only the order of float additions
differs (block sums, then the sum over blocks, against one pass over all rows), so the parameters
agree to round-off: measured 1e-14 relative after 50 iterations; the test allows 1e-10.

With a learned NB dispersion the Newton steps in ``log alpha`` add per-block scalar sums (added
in block order too); the serial and blocked ``alpha`` agree to 4e-13 relative over 40 and 150
iterations (measured), the parameters to 2e-14; the test allows 1e-8. (Without the guard's
round-off rule, a Newton step whose gain is below the objective's rounding was accepted or not
by rounding alone, and ``alpha`` differed by 3e-7.)
"""

import os
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from bnmfzoo.inference.blocked import fit_blocked_vb

distributed = pytest.importorskip("distributed")

ITERS = 40
PARAMS = ("A_shape", "A_rate", "W_shape", "W_rate", "elbo")


def _counts():
    """UMI-like sparse counts: 48 cells x 15 genes, about 60% zeros."""
    rng = np.random.default_rng(21)
    mu = rng.gamma(0.5, 1.0, size=(48, 3)) @ rng.gamma(0.5, 1.0, size=(3, 15))
    return sp.csr_matrix(rng.poisson(0.8 * mu))


CASES = {"poisson": {"model": "poisson"},
         "negative_binomial": {"model": "negative_binomial", "alpha": 2.0},
         "nb_learned_alpha": {"model": "negative_binomial"}}  # alpha ~ Gamma(2, 0.2) learned


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=4, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _addresses(client, n):
    return sorted(client.scheduler_info(n_workers=-1)["workers"])[:n]


def _iters(name):
    """40 iterations; 20 with a learned dispersion (a Dask round trip per Newton candidate)."""
    return ITERS // 2 if name == "nb_learned_alpha" else ITERS


def _fit(name, **kw):
    return fit_blocked_vb(_counts(), 3, max_iter=_iters(name), tol=0.0, random_seed=5,
                          block_rows=12, **CASES[name], **kw)


@pytest.fixture(scope="module")
def serial():
    return {name: _fit(name) for name in CASES}


def _same(a, b):
    for var in PARAMS + (("alpha_trace",) if "alpha_trace" in a["variational"] else ()):
        assert np.array_equal(a["variational"][var].values, b["variational"][var].values), var


# Two workers for the 4 blocks in the fast suite (blocks on different workers, and two blocks
# sharing one); all on one worker and one block per worker are slow (about 27 s together).
@pytest.mark.parametrize("n_workers", [pytest.param(1, marks=pytest.mark.slow), 2,
                                       pytest.param(4, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", list(CASES))
def test_bitwise_equal_to_serial(client, serial, name, n_workers):
    dt = _fit(name, client=client, workers=_addresses(client, n_workers))
    assert dt.attrs["n_blocks"] == 4 and dt.attrs["n_iter"] == _iters(name)
    _same(dt, serial[name])
    # another seed starts elsewhere: the equality above is not vacuous
    other = fit_blocked_vb(_counts(), 3, max_iter=2, random_seed=6, block_rows=12,
                           **CASES[name])
    assert not np.array_equal(other["variational"]["elbo"].values,
                              serial[name]["variational"]["elbo"].values[:2])


def test_workers_never_import_pymc(client, serial):
    _fit("poisson", client=client)

    def loaded():
        return sorted(m for m in ("pymc", "pytensor", "arviz") if m in sys.modules)

    assert all(v == [] for v in client.run(loaded).values())


@pytest.mark.parametrize("name", list(CASES))
def test_elbo_never_decreases(serial, name):
    elbo = serial[name]["variational"]["elbo"].values
    assert np.all(np.diff(elbo) >= -1e-9 * np.abs(elbo[1:])), np.diff(elbo).min()
    assert elbo[-1] > elbo[0] + 1.0


def _serial_start(family, X, block_rows):
    """The blocked start as one whole-matrix ``VBState`` of the serial VB."""
    from bnmfzoo.inference.blocked._blocks import ArraySource
    from bnmfzoo.inference.blocked._families import summarize
    from bnmfzoo.inference.counts.variational._vb_core import VBState

    src = ArraySource(sp.csr_matrix(X, dtype=float), block_rows)
    cs = family.init_cols(X.shape[1], [summarize(src.load(b)) for b in range(src.n_blocks)])
    rows = [family.start_rows(b, int(src.bounds[b + 1] - src.bounds[b]), cs.cols.scale)
            for b in range(src.n_blocks)]
    return VBState(np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows]),
                   cs.aW, cs.bW, {})


@pytest.mark.parametrize("name", list(CASES))
def test_agrees_with_serial_vb(serial, name):
    import bnmfzoo as bz
    from bnmfzoo.inference.blocked._vb import NegBinVB, PoissonVB
    from bnmfzoo.inference.counts._problem import counts_spec
    from bnmfzoo.inference.counts.variational._vb_core import vb_iteration
    from bnmfzoo.inference.counts.variational.vb_nb import nb_vb_iteration

    X = _counts()
    alpha = 2.0
    if name == "poisson":
        _, problem = counts_spec(bz.models.poisson(X, 3), method="test")
        state = _serial_start(PoissonVB(3, 5), X, 12)
    elif name == "negative_binomial":
        _, problem = counts_spec(bz.models.negative_binomial(X, 3, alpha=2.0), method="test")
        state = _serial_start(NegBinVB(3, 5, 2.0), X, 12)
    else:  # the model's default prior, the blocked default, the serial start a0 / b0
        _, problem = counts_spec(bz.models.negative_binomial(X, 3), method="test")
        assert problem.alpha_prior == (2.0, 0.2)
        state = _serial_start(NegBinVB(3, 5, None, alpha_prior=(2.0, 0.2)), X, 12)
        alpha = 2.0 / 0.2
    trace, alphas = [], []
    for _ in range(_iters(name)):
        if name == "poisson":
            state, bound = vb_iteration(problem, state)
        else:
            state, alpha, bound = nb_vb_iteration(problem, state, alpha)
        trace.append(bound)
        alphas.append(alpha)
    var = serial[name]["variational"]
    rtol = 1e-10 if name != "nb_learned_alpha" else 1e-8
    for key, ref in zip(PARAMS, (state.aA, state.bA, state.aW, state.bW, np.array(trace))):
        np.testing.assert_allclose(var[key].values, ref, rtol=rtol, err_msg=key)
    if name == "nb_learned_alpha":
        np.testing.assert_allclose(var["alpha_trace"].values, alphas, rtol=rtol)
        assert float(var["alpha"]) == var["alpha_trace"].values[-1] == serial[name].attrs["alpha"]
        assert abs(alphas[-1] - alphas[0]) > 1.0  # the dispersion did move


@pytest.mark.slow  # a worker process restarts (imports the package again): ~20 s
def test_worker_killed_mid_run_same_bits(client, serial):
    killed = []

    def after(t):
        if t == 15 and not killed:
            target = _addresses(client, 4)[1]
            try:
                client.run(os._exit, 1, workers=[target])
            except Exception:  # noqa: BLE001 - the worker dies while answering
                pass
            killed.append(t)

    dt = _fit("poisson", client=client, checkpoint_every=10, _after_iteration=after)
    client.wait_for_workers(4, timeout=60)
    assert killed and dt.attrs["restarts"] >= 1
    _same(dt, serial["poisson"])


def test_bad_arguments_one_clear_error():
    with pytest.raises(ValueError, match="alpha_prior must be a pair"):
        fit_blocked_vb(_counts(), 2, model="negative_binomial", alpha_prior=3.0)
    with pytest.raises(ValueError, match=r"alpha_prior\[1\] must be > 0"):
        fit_blocked_vb(_counts(), 2, model="negative_binomial", alpha_prior=(2.0, 0.0))
    with pytest.raises(ValueError, match="model must be one of"):
        fit_blocked_vb(_counts(), 2, model="gaussian")
    with pytest.raises(ValueError, match="non-negative integer counts"):
        fit_blocked_vb(np.full((4, 3), 0.5), 2)


def test_deferred_pymc_process_still_loads_step_modules():
    """A worker with PyMC deferred: the blocked core imports no PyMC, a step module still works.

    The step registration imports the step modules as soon as PyMC loads; PyMC must therefore
    load before a step module starts, or the step module's import fails half-way.
    """
    import subprocess

    code = ("import sys\n"
            "import bnmfzoo.inference.blocked._dask, bnmfzoo.inference.blocked._vb\n"
            "assert 'pymc' not in sys.modules\n"
            "from bnmfzoo.inference.counts.gibbs.gibbs_poisson import GibbsPoisson\n"
            "from pymc.step_methods import STEP_METHODS\n"
            "assert GibbsPoisson in STEP_METHODS\n")
    env = {**os.environ, "BNMFZOO_DEFER_PYMC": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
