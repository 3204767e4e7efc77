"""Can exact HMC moves make the count sampler beat nutpie on dense catalogues? (measurement)

On a SBS96 catalogue (Poisson NMF, Gamma(1, 1) priors, :func:`bnmfzoo.models.poisson`), from
the start :mod:`benchmarks.speed.converged_counts` uses (scikit-learn's KL-NMF solution, both
chains at the same point, no jitter), 2 chains of each variant:

* ``sweep``: the compiled latent-count sweep with its group moves (shear, rescale), the
  default number of sweeps per draw
  (:func:`~bnmfzoo.inference.counts.gibbs._compiled.gibbs_sweeps`);
* ``sweep+hmc:L``: one such sweep (with shear and rescale) then one HMC transition of ``L``
  leapfrog steps on ``log A, log W`` at ``b = 1`` (the posterior;
  :func:`bnmfzoo.inference.counts.tempering._hmc.hmc_step`);
* ``hmc:L``: the HMC transition alone;
* ``fhmc:L`` (and ``sweep+fhmc:L``): the transition of ``GibbsPoisson(moves="hmc")``
  (:func:`bnmfzoo.inference.counts.gibbs._hmc_moves.hmc_transition`: the gradient alone inside
  the trajectory, the log density at its ends) with the gradient-based diagonal mass
  ``sqrt(var(theta) / var(grad))`` (nutpie's), from the later half of the burn-in so far at
  1/5, 2/5 and 3/5 of it.

HMC's diagonal inverse mass: ``shape`` is ``trigamma`` of the conditional Gamma shape of each
entry given the expected latent counts at the start (``a + A_dk sum_n W_kn X_dn / mu_dn``: the
variance of ``log x`` given the split), ``emp`` the variance of ``log x`` over the first half of
the burn-in (regularized as Stan does), then fixed. The step size is adapted during the burn-in
(``log eps += 0.1 (acceptance - target)``, running average) and frozen for the kept draws; the
leapfrog size is jittered uniformly in ``[0.8, 1.2] eps`` each transition.

Then nutpie 0.16 in the same process from the same start (compile not counted). For every
sampler: after ``align``, the bulk ESS per CPU second (burn-in and draws counted, as in the
benchmark) of the entries of ``A``, ``W``, the normalized signatures, the exposures and 500
cells of ``A @ W`` (:func:`benchmarks.speed.converged.ess_table`), min and median, plus the
ESS per step and ms per step; for nutpie the leapfrog steps per draw and the CPU ms per
gradient. Results: ``docs/results/counts_dense.md``. Run from the project root::

    nice -n 15 .venv/bin/python -m benchmarks.investigations.dense_hmc --data breast4 \
        --nutpie-path /tmp/h47/nutpie_pkg \
        --variants sweep,sweep+hmc:20,hmc:80,fhmc:16,fhmc:32,fhmc:64,sweep+fhmc:32
"""

import argparse
import math
import sys
import time

import numpy as np

import benchmarks  # noqa: F401 - environment defaults
from benchmarks.speed.converged import ess_table
from benchmarks.speed.converged_counts import DATA, load, nmf_start

QUANTITIES = ("A", "W", "signatures", "exposures", "A@W")
#: ``fhmc``'s likelihood: dense matrix products (``--dense``) or the loop over cells
DENSE = False


def build(name):
    from bnmfzoo.inference.counts._problem import problem_from_factorization
    from bnmfzoo.inference.counts.gibbs._hmc_moves import hmc_cells
    from bnmfzoo.inference.counts.gibbs._moves import problem_arrays
    from bnmfzoo.models import poisson, recognize

    X, rank = load(name)
    model = poisson(X, rank)
    prob = problem_from_factorization(recognize(model))
    arrs = problem_arrays(prob)
    cells = hmc_cells(prob, dense=DENSE)  # (rows, cols, offsets, counts, dense X, offsets)
    prior = (arrs["aA"], arrs["bA"], arrs["aWt"], arrs["bW"])
    return X, rank, model, prob, cells, prior


def shape_mass(X, A, W, prior):
    """``trigamma`` of the conditional Gamma shapes given the expected split at ``(A, W)``."""
    from scipy.special import polygamma

    R = np.asarray(X, float) / np.maximum(A @ W, 1e-300)
    sA = prior[0] + A * (R @ W.T)
    sWt = prior[2] + (W * (A.T @ R)).T
    return polygamma(1, sA), polygamma(1, sWt)


class Hmc:
    """One chain's HMC transitions: adapted step, frozen after the burn-in."""

    def __init__(self, cells, prior, n_leap, mass, target=0.8, eps=0.05, fast=False):
        self.cells, self.prior, self.n_leap, self.fast = cells, prior, n_leap, fast
        self.gA, self.gWt = np.zeros(mass[0].shape), np.zeros(mass[1].shape)
        self.imA, self.imWt = (np.ascontiguousarray(m) for m in mass)
        self.log_eps = self.bar = math.log(eps)
        self.target, self.n, self.adapting, self.acc = target, 0, True, []

    def restart(self):
        self.n = 0

    def freeze(self):
        self.log_eps, self.adapting, self.acc = self.bar, False, []

    def __call__(self, A, W, rng):
        from bnmfzoo.inference.counts.tempering._hmc import hmc_step

        tA = np.log(A)
        tWt = np.ascontiguousarray(np.log(W).T)
        pA, pWt = rng.standard_normal(tA.shape), rng.standard_normal(tWt.shape)
        eps = math.exp(self.log_eps) * rng.uniform(0.8, 1.2)
        if self.fast:
            from bnmfzoo.inference.counts.gibbs._hmc_moves import hmc_transition

            code, la = hmc_transition(tA, tWt, pA, pWt, *self.cells, *self.prior, self.imA,
                                self.imWt, eps, self.n_leap, math.log(rng.uniform()),
                                self.gA, self.gWt)
        else:
            code, la = hmc_step(tA, tWt, pA, pWt, *self.cells[:4], self.prior[0], self.prior[1],
                                self.prior[2], self.prior[3], 1.0, self.imA, self.imWt, eps,
                                self.n_leap, math.log(rng.uniform()))
        if code == 2:
            raise FloatingPointError("HMC start not finite")
        acc = math.exp(la)
        self.acc.append(acc)
        if self.adapting:
            self.n += 1
            self.log_eps += 0.1 * (acc - self.target)
            w = max(1.0 / self.n, 0.02)
            self.bar = (1 - w) * self.bar + w * self.log_eps
        return np.exp(tA), np.ascontiguousarray(np.exp(tWt).T)


def run_variant(variant, X, prob, cells, prior, A0, W0, burn, draws, seed, mass_kind,
                target=0.8):
    from bnmfzoo.inference.counts.gibbs._compiled import default_sweeps_per_draw, gibbs_sweeps

    kind, _, leap = variant.partition(":")
    parts = kind.split("+")
    n_sw = default_sweeps_per_draw(prob) if parts == ["sweep"] else 1
    out_A, out_W, cpu, accs, eps = [], [], 0.0, [], []
    for chain in range(2):
        rng = np.random.default_rng([seed, chain])
        state = {"A": A0.copy(), "W": W0.copy(), "rates": {}}
        fast = "fhmc" in parts
        hmc = Hmc(cells, prior, int(leap), shape_mass(X, A0, W0, prior), target,
                  fast=fast) \
            if ("hmc" in parts or fast) else None
        ghist = []
        keepA = np.empty((draws,) + A0.shape)
        keepW = np.empty((draws,) + W0.shape)
        hist = []
        t0 = time.process_time()
        for t in range(burn + draws):
            if "sweep" in parts:
                state = gibbs_sweeps(prob, state, rng, n_sw)
            if hmc is not None:
                state["A"], state["W"] = hmc(state["A"], state["W"], rng)
                if fast and t < burn:  # gradient-based diagonal mass (nutpie's), windows
                    ghist.append((np.concatenate([np.log(state["A"]).ravel(),
                                                  np.log(state["W"]).T.ravel()]),
                                  np.concatenate([hmc.gA.ravel(), hmc.gWt.ravel()])))
                    if t + 1 in (burn // 5, 2 * burn // 5, 3 * burn // 5):
                        th = np.array([h[0] for h in ghist[len(ghist) // 2:]])
                        gr = np.array([h[1] for h in ghist[len(ghist) // 2:]])
                        v = np.sqrt(np.var(th, 0) / np.maximum(np.var(gr, 0), 1e-12))
                        v = np.clip(v, 1e-6, 1e3)
                        hmc.imA = np.ascontiguousarray(v[:A0.size].reshape(A0.shape))
                        hmc.imWt = np.ascontiguousarray(v[A0.size:].reshape(W0.shape[::-1]))
                        hmc.restart()
                if not fast and t < burn // 2 and mass_kind == "emp":
                    hist.append(np.concatenate([np.log(state["A"]).ravel(),
                                                np.log(state["W"]).T.ravel()]))
                if not fast and t == burn // 2 - 1 and mass_kind == "emp":
                    n = len(hist)
                    v = np.var(np.array(hist), axis=0)
                    v = n / (n + 5.0) * v + 1e-3 * 5.0 / (n + 5.0)
                    hmc.imA = np.ascontiguousarray(v[:A0.size].reshape(A0.shape))
                    hmc.imWt = np.ascontiguousarray(v[A0.size:].reshape(W0.shape[::-1]))
                    hmc.restart()
                if t == burn - 1:
                    hmc.freeze()
            if t >= burn:
                keepA[t - burn], keepW[t - burn] = state["A"], state["W"]
        cpu += time.process_time() - t0
        out_A.append(keepA)
        out_W.append(keepW)
        if hmc is not None:
            accs.append(float(np.mean(hmc.acc)))
            eps.append(math.exp(hmc.log_eps))
    return np.array(out_A), np.array(out_W), cpu, accs, eps, n_sw


def run_nutpie(model, A0, W0, burn, draws, seed):
    import nutpie

    t = time.process_time()
    compiled = nutpie.compile_pymc_model(model, initial_points={"A": A0, "W": W0},
                                         jitter_rvs=set())
    comp = time.process_time() - t
    t = time.process_time()
    tr = nutpie.sample(compiled, draws=draws, tune=burn, chains=2, cores=1, seed=seed,
                       progress_bar=False, save_warmup=True)
    cpu = time.process_time() - t
    post = tr.posterior if hasattr(tr, "posterior") else tr["posterior"]
    ss = tr.sample_stats if hasattr(tr, "sample_stats") else tr["sample_stats"]
    n_steps = np.asarray(ss["n_steps"].values, float)
    wn = tr.warmup_sample_stats if hasattr(tr, "warmup_sample_stats") else \
        tr["warmup_sample_stats"]
    n_warm = np.asarray(wn["n_steps"].values, float)
    total_grads = n_steps.sum() + n_warm.sum()
    info = {"compile_s": comp, "leapfrogs_per_draw": float(n_steps.mean()),
            "warm_leapfrogs_per_draw": float(n_warm.mean()),
            "ms_per_gradient": 1e3 * cpu / total_grads,
            "step_size": float(np.mean(ss["step_size"].values)),
            "depth": float(np.mean(ss["depth"].values)) if "depth" in ss else math.nan,
            "divergences": int(np.asarray(ss["diverging"].values).sum())}
    return np.asarray(post["A"].values), np.asarray(post["W"].values), cpu, info


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", choices=list(DATA), default="breast4")
    p.add_argument("--variants", default="sweep,sweep+hmc:10,sweep+hmc:20,hmc:20,hmc:40")
    p.add_argument("--mass", choices=("shape", "emp"), default="emp")
    p.add_argument("--burn", type=int, default=500)
    p.add_argument("--draws", type=int, default=2000)
    p.add_argument("--nutpie-burn", type=int, default=300)
    p.add_argument("--nutpie-draws", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--target", type=float, default=0.8, help="HMC acceptance target")
    p.add_argument("--cells", type=int, default=500)
    p.add_argument("--nutpie-path", default=None)
    p.add_argument("--dense", action="store_true",
                   help="fhmc: the dense (matrix product) form of the likelihood")
    a = p.parse_args(argv)
    global DENSE
    DENSE = a.dense
    if a.nutpie_path:  # before pandas is imported: its strings then use pyarrow, as nutpie needs
        sys.path.append(a.nutpie_path)
    X, rank, model, prob, cells, prior = build(a.data)
    D, N = X.shape
    rng = np.random.default_rng(0)
    flat = np.sort(rng.choice(D * N, size=min(a.cells, D * N), replace=False))
    cell_idx = np.divmod(flat, N)
    A0, W0 = nmf_start(X, rank)
    # numba caches (not timed)
    run_variant("sweep+hmc:2", X, prob, cells, prior, A0, W0, 4, 2, 0, "shape")
    run_variant("fhmc:2", X, prob, cells, prior, A0, W0, 4, 2, 0, "shape")
    tables, lines = {}, []
    for v in a.variants.split(","):
        A, W, cpu, accs, eps, n_sw = run_variant(v, X, prob, cells, prior, A0, W0, a.burn,
                                                 a.draws, a.seed, a.mass, a.target)
        tables[v] = ess_table(A, W, cpu, cell_idx)
        steps = 2 * (a.burn + a.draws)
        extra = f", acc {np.round(accs, 2).tolist()}, eps {np.round(eps, 4).tolist()}" \
            if accs else f", {n_sw} sweeps per step"
        lines.append(f"{v:16s} {a.burn}+{a.draws} x 2 steps, {cpu:6.1f} CPU s, "
                     f"{1e3 * cpu / steps:.3f} ms/step{extra}")
        print(lines[-1], flush=True)
        print("   " + "  ".join(f"{q}: min {tables[v][q][0]:.2f} med {tables[v][q][1]:.1f} "
                                f"(ESS/step min {tables[v][q][3] / (2 * a.draws):.4f}, "
                                f"R-hat {tables[v][q][2]:.3f})" for q in QUANTITIES),
              flush=True)
    if a.nutpie_path:
        A, W, cpu, info = run_nutpie(model, A0, W0, a.nutpie_burn, a.nutpie_draws, a.seed)
        tables["nutpie"] = ess_table(A, W, cpu, cell_idx)
        steps = 2 * (a.nutpie_burn + a.nutpie_draws)
        lines.append(f"{'nutpie':16s} {a.nutpie_burn}+{a.nutpie_draws} x 2 draws, {cpu:6.1f} "
                     f"CPU s, {1e3 * cpu / steps:.3f} ms/draw, {info}")
        print(lines[-1], flush=True)
        print("   " + "  ".join(f"{q}: min {tables['nutpie'][q][0]:.2f} med "
                                f"{tables['nutpie'][q][1]:.1f} (ESS/draw min "
                                f"{tables['nutpie'][q][3] / (2 * a.nutpie_draws):.4f}, R-hat "
                                f"{tables['nutpie'][q][2]:.3f})" for q in QUANTITIES),
              flush=True)
    print(f"\n{a.data}: ESS per CPU s, min over entries of each quantity (median); ratio to "
          "nutpie of the lowest min and of the lowest median")
    base = tables.get("nutpie")
    for v, tab in tables.items():
        mins = [tab[q][0] for q in QUANTITIES]
        meds = [tab[q][1] for q in QUANTITIES]
        r = ""
        if base is not None and v != "nutpie":
            bmin = min(base[q][0] for q in QUANTITIES)
            bmed = min(base[q][1] for q in QUANTITIES)
            r = f"  ratio min {min(mins) / bmin:.2f}, median {min(meds) / bmed:.2f}"
        print(f"  {v:16s} " + " ".join(f"{m:7.2f}({d:6.1f})" for m, d in zip(mins, meds)) + r)


if __name__ == "__main__":
    main()
