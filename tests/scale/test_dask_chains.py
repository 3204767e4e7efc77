"""MCMC chains as Dask tasks (:func:`bnmfzoo.inference.sample`): the same bits as serial.

Every comparison is against PyMC's own serial ``pm.sample(chains=C, cores=1, random_seed=s)``
on the same model; equality is exact (``np.array_equal``), not a tolerance. The cluster is the
one of issue 21: a ``LocalCluster`` of 2 worker processes with 1 thread each (started once for
the module, about 5 s).

NUTS and fast-math: PyTensor compiles NUTS's log density with numba, by default with fast-math
flags. Measured (``/tmp`` caches, 4 x 3 model, 3 chains): with a cold compile cache the serial
run (compiled fresh) and the tasks (loading what it cached) differed by up to 1.8e-12 in
``lp``/``energy``/``energy_error`` (posterior draws equal); with warm caches, or with
``numba__fastmath=False`` and cold caches (2 of 2 runs), every bit matched. :func:`sample`
therefore compiles with strict math (``strict_math=True``).
"""

import functools

import numpy as np
import pymc as pm
import pytest

from bnmfzoo.inference import (
    CollapsedGibbsBetaDir,
    CollapsedGibbsDirDir,
    GibbsNMF,
    GibbsNMTF,
    sample,
)
from bnmfzoo.inference.chains import TIMING_STATS, chain_seeds, merge_chains
from bnmfzoo.models import beta_dir, dir_dir, exponential_gaussian, tri_exponential_gaussian

distributed = pytest.importorskip("distributed")

X = np.random.default_rng(0).exponential(size=(8, 6))
X[1, 2] = np.nan
V = (np.random.default_rng(1).random((8, 6)) < 0.4).astype(float)
KW = dict(draws=15, tune=10, chains=3, random_seed=5)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def serial(build, step=None, **kw):
    """PyMC's own serial run (the reference), PyTensor's numba code compiled without fast-math
    as :func:`sample` does (else a fresh compile and a cached one may differ in the last
    digits; see ``test_nuts_fastmath_note``)."""
    import pytensor

    model = build()
    with model, pytensor.config.change_flags(numba__fastmath=False):
        steps = step() if step is not None else None
        return pm.sample(step=steps, cores=1, progressbar=False, nuts_sampler="pymc",
                         compute_convergence_checks=False, **{**KW, **kw})


def mismatches(a, b):
    """Variables of posterior / sample_stats whose values or coordinates differ."""
    bad = []
    for group in ("posterior", "sample_stats"):
        assert set(a[group].data_vars) == set(b[group].data_vars)
        for name in a[group].data_vars:
            if name in TIMING_STATS:
                continue
            x, y = a[group][name], b[group][name]
            if x.dims != y.dims or not np.array_equal(x.values, y.values, equal_nan=True):
                bad.append(f"{group}/{name}")
        for dim in a[group].dims:
            if not np.array_equal(a[group][dim].values, b[group][dim].values):
                bad.append(f"{group} coord {dim}")
    return bad


def test_gibbs_chains_on_dask_equal_serial(client):
    build = functools.partial(exponential_gaussian, X, 2)
    ref = serial(build, GibbsNMF)
    dt = sample(build, step=GibbsNMF, client=client, **KW)
    assert mismatches(ref, dt) == []
    assert dt.posterior.sizes["chain"] == 3 and dt.attrs["dask"] == 1
    np.testing.assert_array_equal(dt["observed_data"]["X_obs"].values,
                                  ref["observed_data"]["X_obs"].values)
    # the comparison can fail: another seed gives other draws
    other = sample(build, step=GibbsNMF, client=client, **{**KW, "random_seed": 6})
    assert "posterior/A" in mismatches(ref, other)


def test_gibbs_nmtf_model_object_on_dask_equals_serial(client):
    """A pickled ``pm.Model`` (not a builder) works too; the tri-factor Gibbs step."""
    build = functools.partial(tri_exponential_gaussian, X, (2, 2))
    ref = serial(build, GibbsNMTF, chains=2)
    dt = sample(build(), step=GibbsNMTF, client=client, **{**KW, "chains": 2})
    assert mismatches(ref, dt) == []
    # a Generator seed is derived as pm.sample derives it (a copy of it is spawned)
    gen = {**KW, "chains": 2, "random_seed": np.random.default_rng(11)}
    ref = serial(build, GibbsNMTF, **gen)
    assert mismatches(ref, sample(build, step=GibbsNMTF, client=client, **gen)) == []


@pytest.mark.parametrize("family, step", [
    (beta_dir, CollapsedGibbsBetaDir),
    (dir_dir, functools.partial(CollapsedGibbsDirDir, init="prior")),
])
def test_collapsed_chains_on_dask_equal_serial(client, family, step):
    build = functools.partial(family, V, rank=3)
    ref = serial(build, step)
    assert mismatches(ref, sample(build, step=step, client=client, **KW)) == []


def test_nuts_chains_on_dask_equal_serial(client):
    """NUTS: the mass-matrix adaptation starts from the mean of all chains' jittered starts,
    which every task rebuilds, so each chain matches."""
    from bnmfzoo.inference import pymc_default_steps

    build = functools.partial(exponential_gaussian, X[:4, :3], 1)
    with pymc_default_steps():  # PyMC's own choice (NUTS), not our Gibbs step for this model
        ref = serial(build)
    dt = sample(build, client=client, pymc_default_steps=True, **KW)
    assert mismatches(ref, dt) == []
    assert "step_size" in dt["sample_stats"]


def test_serial_path_is_pm_sample():
    build = functools.partial(exponential_gaussian, X, 2)
    assert mismatches(serial(build, GibbsNMF), sample(build, step=GibbsNMF, progressbar=False,
                                                      **KW)) == []


def test_chain_seeds_follow_pm_sample():
    """``chain_seeds`` is PyMC 6.4's derivation: spawn one generator per chain, draw a seed."""
    rngs, seeds = chain_seeds(5, 3)
    ref = np.random.default_rng(5).spawn(3)
    assert seeds == [r.integers(2**30) for r in ref]
    assert [r.integers(2**40) for r in rngs] == [r.integers(2**40) for r in ref]


def test_merge_chains_numbers_chains():
    from bnmfzoo._base.results import build_datatree

    trees = [build_datatree({"a": np.full((1, 2), c)}, observed_data={"y": np.ones(3)})
             for c in range(3)]
    out = merge_chains(trees)
    np.testing.assert_array_equal(out.posterior["chain"].values, [0, 1, 2])
    np.testing.assert_array_equal(out.posterior["a"].values[:, 0], [0, 1, 2])
    assert "chain" not in out["observed_data"].dims


def test_run_method_and_estimator_use_the_client(client):
    from bnmfzoo import BayesianNMF
    from bnmfzoo._registry import run_method

    build = functools.partial(exponential_gaussian, X, 2)
    ref = run_method("gibbs", build(), progressbar=False, **KW)
    dt = run_method("gibbs", build(), progressbar=False, client=client, **KW)
    assert mismatches(ref, dt) == []
    Xf = np.nan_to_num(X, nan=1.0)
    a = BayesianNMF(2, draws=10, tune=5, random_state=0).fit(Xf)
    b = BayesianNMF(2, draws=10, tune=5, random_state=0, client=client).fit(Xf)
    np.testing.assert_array_equal(a.components_, b.components_)
    with pytest.raises(ValueError, match="does not run on a Dask client"):
        run_method("vb", build(), client=client)


def test_bad_arguments(client):
    build = functools.partial(exponential_gaussian, X, 2)
    with pytest.raises(TypeError, match="not an instance"):
        with build():
            step = GibbsNMF()
        sample(build, step=step, client=client, **KW)
    with pytest.raises(TypeError, match="does not accept cores"):
        sample(build, step=GibbsNMF, client=client, cores=2, **KW)
    with pytest.raises(TypeError, match="chains must be an integer >= 1, got 2.0"):
        sample(build, step=GibbsNMF, chains=2.0)
    with pytest.raises(ValueError, match="chains must be an integer >= 1, got 0"):
        sample(build, step=GibbsNMF, chains=np.int64(0))
    with pytest.raises(ValueError, match="random_seed must be a non-negative integer"):
        sample(build, step=GibbsNMF, random_seed=-1)
    with pytest.raises(TypeError, match="model must be a pymc.Model"):
        sample("model", step=GibbsNMF)


def test_cli_scheduler_matches_serial(client, tmp_path):
    """``bnmfzoo fit --scheduler ADDRESS``: the file written equals the serial run's draws."""
    import xarray as xr

    from bnmfzoo import cli

    np.savetxt(tmp_path / "x.csv", np.nan_to_num(X, nan=1.0), delimiter=",")
    args = ["fit", str(tmp_path / "x.csv"), "--rank", "2", "--draws", "10", "--tune", "5",
            "--chains", "2", "--seed", "4", "--quiet"]
    assert cli.main([*args, "--out", str(tmp_path / "serial.nc")]) == 0
    assert cli.main([*args, "--out", str(tmp_path / "dask.nc"),
                     "--scheduler", client.scheduler.address]) == 0
    a = xr.open_datatree(tmp_path / "serial.nc")
    b = xr.open_datatree(tmp_path / "dask.nc")
    assert mismatches(a, b) == []
    assert cli.main([*args, "--method", "vb", "--out", str(tmp_path / "vb.nc"),
                     "--scheduler", client.scheduler.address]) == 2


def test_automatic_step_choice_on_dask_equals_serial(client):
    """step=None on a recognized model: PyMC picks GibbsNMF (bnmfzoo registers it) in this
    process and on every worker alike, so the Dask chains are the serial chains."""
    build = functools.partial(exponential_gaussian, X, 2)
    ref = serial(build)
    dt = sample(build, client=client, **KW)
    assert "train_mse" in dt["sample_stats"]  # GibbsNMF's own statistic: our step ran
    assert mismatches(ref, dt) == []
