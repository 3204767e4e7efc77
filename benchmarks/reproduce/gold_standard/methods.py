"""The methods compared, each as ``run(prob, model, size, seed) -> (A, W, weight)``.

``size`` is the method's one cost knob (particles, sweeps, draws, steps, paths); ``run.py``
chooses it per method so that every method gets the same CPU budget (two short calibration runs
fit ``cpu = a + b * size``). Weights are the method's own: Stein weights for the particle
methods that have them (``particles`` group), uniform for MCMC draws and variational draws.
"""

import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

SIDE_PYTHON = os.environ.get("GOLD_PATHFINDER_PYTHON", "/tmp/gold-pf-venv/bin/python")


def _particles(dt):
    p = dt["particles"]
    return p["A"].values, p["W"].values, p["weight"].values


def _draws(dt, n_max=2000):
    post = dt["posterior"]
    A = post["A"].values.reshape(-1, *post["A"].shape[2:])
    W = post["W"].values.reshape(-1, *post["W"].shape[2:])
    if A.shape[0] > n_max:
        idx = np.linspace(0, A.shape[0] - 1, n_max).round().astype(int)
        A, W = A[idx], W[idx]
    return A, W, np.full(A.shape[0], 1.0 / A.shape[0])


def particles(init, weights="stein", rejuvenate=None):
    """``fit_particles`` with ``size`` particles; ``rejuvenate=None`` is the paper's Algorithm 1,
    ``"auto"`` the library's default (exact Gibbs sweeps on these models)."""

    def run(prob, model, size, seed):
        from bnmfzoo.inference import fit_particles

        dt = fit_particles(model, n_particles=int(size), init=init, weights=weights,
                           random_seed=seed, progressbar=False, rejuvenate=rejuvenate)
        return _particles(dt)

    return run


def particles_gibbs(init, n_particles=100):
    """``n_particles`` particles, each moved by ``size`` exact Gibbs sweeps, Stein-weighted."""

    def run(prob, model, size, seed):
        from bnmfzoo.inference import fit_particles
        from bnmfzoo.inference.gaussian.gibbs.rejuvenation import GibbsRejuvenation

        dt = fit_particles(model, n_particles=n_particles, init=init, random_seed=seed,
                           rejuvenate=GibbsRejuvenation(int(size)), progressbar=False)
        return _particles(dt)

    return run


def gibbs(prob, model, size, seed, n_chains=4):
    """``n_chains`` exact Gibbs chains from random exponential starts; second halves kept."""
    from benchmarks.reproduce.gold_standard.reference import gibbs_chain

    rng = np.random.default_rng(seed)
    scale = np.sqrt(np.nanmean(prob.X_train) / prob.rank)
    n = int(size)
    thin = max(1, n // 500)
    As, Ws = [], []
    for _ in range(n_chains):
        A0 = rng.exponential(scale, (prob.X.shape[0], prob.rank))
        W0 = rng.exponential(scale, (prob.rank, prob.X.shape[1]))
        A, W = gibbs_chain(prob, A0, W0, n, thin=thin, rng=rng)
        As.append(A[A.shape[0] // 2:])
        Ws.append(W[W.shape[0] // 2:])
    A, W = np.concatenate(As), np.concatenate(Ws)
    return A, W, np.full(A.shape[0], 1.0 / A.shape[0])


def qt_gibbs_chains(prob, model, size, seed, n_chains=4):
    """``n_chains`` exact Gibbs chains started at Q-Transform particles (the paper's
    Algorithm 1, no rejuvenation); second halves kept, uniform weights. Multi-chain Gibbs
    whose starts are good factorizations instead of random points."""
    from benchmarks.reproduce.gold_standard.reference import gibbs_chain
    from bnmfzoo.inference import fit_particles

    dt = fit_particles(model, n_particles=n_chains, init="qtransform", random_seed=seed,
                       progressbar=False, rejuvenate=None)
    A0s, W0s = dt["particles"]["A"].values, dt["particles"]["W"].values
    rng = np.random.default_rng(seed)
    n = int(size)
    thin = max(1, n // 500)
    As, Ws = [], []
    for A0, W0 in zip(A0s, W0s):
        A, W = gibbs_chain(prob, A0, W0, n, thin=thin, rng=rng)
        As.append(A[A.shape[0] // 2:])
        Ws.append(W[W.shape[0] // 2:])
    A, W = np.concatenate(As), np.concatenate(Ws)
    return A, W, np.full(A.shape[0], 1.0 / A.shape[0])


def nuts(prob, model, size, seed, n_chains=2):
    """PyMC's NUTS. ``import bnmfzoo`` makes ``pm.sample()`` choose GibbsNMF on these models,
    so PyMC's own choice is restored explicitly (an earlier run of this table without it
    measured 2-chain Gibbs under the name NUTS)."""
    import pymc as pm

    from bnmfzoo.inference import pymc_default_steps

    n = int(size)
    with model, pymc_default_steps():
        dt = pm.sample(draws=n, tune=n, chains=n_chains, cores=1, nuts_sampler="pymc",
                       random_seed=seed, progressbar=False, compute_convergence_checks=False)
    return _draws(dt)


def advi(prob, model, size, seed):
    from bnmfzoo.inference import fit_advi

    dt = fit_advi(model, n=int(size), n_particles=10, n_draws=1000, random_seed=seed,
                  progressbar=False)
    return _draws(dt)


def svgd(prob, model, size, seed):
    from bnmfzoo.inference import fit_svgd

    dt = fit_svgd(model, n_particles=20, n_steps=int(size), checkpoints=[int(size)],
                  random_seed=seed, progressbar=False)
    return _particles(dt)


def dsgd(prob, model, size, seed):
    from bnmfzoo.inference import fit_dsgd

    dt = fit_dsgd(model, n_particles=10, n_steps=int(size), checkpoints=[int(size)],
                  random_seed=seed, progressbar=False)
    return _particles(dt)


def pathfinder(prob, model, size, seed):
    """Multi-path Pathfinder in the side venv (see ``pathfinder_side.py``); child CPU counted."""
    if not Path(SIDE_PYTHON).exists():
        raise RuntimeError(f"no side environment for pymc-extras at {SIDE_PYTHON}")
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        np.savez(src, X=prob.X_train, rank=prob.rank, sigma=prob.sigma, lam=prob.lam,
                 num_paths=int(size), seed=seed)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTENSOR_FLAGS"] = "base_compiledir=/tmp/gold-pf-pytensor"
        script = Path(__file__).with_name("pathfinder_side.py")
        out = subprocess.run([SIDE_PYTHON, str(script), str(src), str(dst)], env=env,
                             capture_output=True, text=True, timeout=1200)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
        z = np.load(dst)
        A, W = z["A"], z["W"]
    return A, W, np.full(A.shape[0], 1.0 / A.shape[0])


#: name -> (run, first calibration size, largest size, fixed size?). Pathfinder runs at a fixed
#: 4 paths without calibration: compiling its graphs in the side process alone takes ~45 CPU s,
#: more than the budget, so its row reports the CPU it used.
METHODS = {
    "default": (particles("qtransform", rejuvenate="auto"), 4, 400, False),
    "qt_stein": (particles("qtransform"), 10, 400, False),
    "rr_stein": (particles("random"), 10, 400, False),
    "rr_uniform": (particles("random", "uniform"), 10, 400, False),
    "qt_rejuv_stein": (particles("qtransform", rejuvenate=100), 4, 200, False),
    "qt_gibbs_stein": (particles_gibbs("qtransform"), 10, 100000, False),
    "rr_gibbs_stein": (particles_gibbs("random"), 10, 100000, False),
    "gibbs": (gibbs, 200, 200000, False),
    "qt_gibbs_chains": (qt_gibbs_chains, 200, 200000, False),
    "nuts": (nuts, 50, 20000, False),
    "advi": (advi, 500, 200000, False),
    "svgd": (svgd, 50, 50000, False),
    "dsgd": (dsgd, 50, 50000, False),
    "pathfinder": (pathfinder, 4, 4, True),
}
