"""CPU timings recorded beside wall timings (``bnmfzoo._base.timing`` and the particle fitters)."""

import time

import numpy as np
import pytest

from bnmfzoo._base.timing import Timer
from bnmfzoo.inference import fit_dsgd, fit_particles, fit_svgd
from bnmfzoo.inference.particles.qtransform import generate_q_bank
from bnmfzoo.models import silf


def _data(seed=0, D=8, N=7, R=3):
    rng = np.random.default_rng(seed)
    return rng.random((D, R)) @ rng.random((R, N)) + 0.05 * rng.random((D, N))


@pytest.fixture(scope="module")
def model():
    return silf(_data(), 3, n_reference=5, random_seed=1)


def test_timer_separates_cpu_from_wall_and_accumulates():
    t = Timer()
    with t:
        time.sleep(0.05)  # waiting: wall time passes, this process uses (almost) no CPU
    assert t.wall >= 0.05
    # a sleeping process is charged scheduler overhead only (microseconds); 0.03 s leaves room
    assert t.cpu < 0.03
    wall_before, cpu_before = t.wall, t.cpu
    with t:  # busy work adds CPU time to the same totals
        x = np.zeros(200)
        for _ in range(20000):
            x += 1.0
    assert t.cpu > cpu_before and t.wall > wall_before
    assert Timer(wall=1.0, cpu=2.0).cpu == 2.0


def test_fit_particles_records_cpu_time(model, tmp_path):
    bank = generate_q_bank(n_datasets=2, n_restarts=3, cache_dir=tmp_path)
    dt = fit_particles(model, n_particles=4, q_bank=bank, random_seed=0, progressbar=False)
    per_particle = dt["particles"]["cpu_time"].values
    d = dt["diagnostics"]
    assert per_particle.shape == (4,) and (per_particle >= 0).all()
    # the whole call contains every particle's init and solve and the SVD (disjoint intervals
    # of one monotone process clock)
    assert float(d["cpu_time"]) >= per_particle.sum() + float(d["svd_cpu_time"]) - 1e-9
    assert float(d["wall_time"]) > 0


def test_gradient_fitters_record_cpu_checkpoints(model):
    dt = fit_svgd(model, n_particles=3, n_steps=10, checkpoints=[0, 5, 10], random_seed=0,
                  progressbar=False)
    d = dt["diagnostics"]
    cpu = d["checkpoint_cpu_time"].values
    assert cpu.shape == d["checkpoint_time"].shape and (np.diff(cpu) >= 0).all()
    assert float(d["total_cpu_time"]) == pytest.approx(cpu[-1])
    dt = fit_dsgd(model, n_particles=3, n_steps=5, random_seed=0, progressbar=False)
    d = dt["diagnostics"]
    # the graph compilation is part of the setup, which starts the clock
    assert 0 <= float(d["compile_cpu_time"]) <= d["checkpoint_cpu_time"].values[0] + 1e-9
    assert float(d["compile_time"]) >= 0
