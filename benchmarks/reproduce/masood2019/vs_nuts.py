"""Q-Transform particles vs NUTS on the SILF model of the faces (Masood & Doshi-Velez 2019).

Claim checked (issue #5; paper Sec. 7.2, Fig. 4/31-32): on the faces at ``M=50``,
``fit_particles`` with Q-Transform finishes in less time than a 1000-draw NUTS run on the same
SILF model and reaches a lower kernelized Stein discrepancy (KSD).

Protocol (bounded, for a shared machine; all times are CPU seconds of this process,
``time.process_time()``, single-threaded BLAS; wall seconds are printed beside them):

* epsilon (part of the model, identical for both methods) comes from
  ``cached_epsilon`` (``benchmarks/reproduce/masood2019/_shared.py``) and is charged to
  neither method.
* Q-Transform: ``fit_particles(model, n_particles=M, init="qtransform")``; its CPU time is the
  whole call, *including* the Stein weighting (conservative against Q-Transform; the paper's
  App. E excludes weighting), KSD = the fit's own ``diagnostics``.
* NUTS: PyMC's NUTS step method driven iteration by iteration exactly like ``pm.sample``
  (``setup_chain``, ``tune`` flag, ``stop_tuning`` at iteration ``tune``), built by
  ``pm.init_nuts(init="adapt_diag")`` at a warm start (default scikit-learn NMF projected onto
  the simplex, as ``fit_nuts``; no jitter so the warm start is kept - this favours NUTS).
  Its CPU clock starts before the warm start and includes compilation; Stein evaluations at
  checkpoints are *not* charged. It stops after ``tune + draws`` iterations or when its CPU
  clock passes ``--nuts-budget`` (default 3 x the Q-Transform CPU time). At checkpoints (CPU
  fractions 1/8, 1/4, 1/2, 1 of the budget, the end of tuning, the end) ``M`` draws are
  thinned evenly from the post-tuning draws, or - while still tuning - the last ``M`` states
  (flagged ``tuning`` in the output), and weighted by the same Stein QP and kernel as the
  particles (Stein-optimal weights and uniform weights).
* The projected CPU time of the full ``tune + draws`` run is the setup time plus ``tune+draws``
  times the mean per-iteration CPU time measured so far (all iterations measured are from
  the adaptive phase when tuning has not finished; stated in the output).

Run (full faces, 4096 x 400, rank 10): ``nice -n 10 .venv/bin/python
-m benchmarks.reproduce.masood2019.vs_nuts``; a quick subsample: ``--size 16 16 --faces 100``. The
full 1500-iteration NUTS run takes about 6 CPU hours here; ``--state FILE`` saves the chain
every ``--save-every`` CPU seconds and the same command continues it from there, so the run can
be spread over several sessions (the same ``--out`` and ``--nuts-budget`` each time).
Results: ``benchmarks/results/particles_vs_nuts_faces[...].json`` and ``.png`` (KSD vs CPU s).
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._common import RESULTS
from benchmarks.reproduce.masood2019._shared import (
    EPSILON_CACHE,
    Store,
    cached_epsilon,
    epsilon_key,
    warm_up_stein,
)
from bnmfzoo.inference.particles.baselines import values_to_factors


def _faces(size, n_faces):
    from bnmfzoo.datasets import load_faces

    X = load_faces(tuple(size))
    if n_faces < X.shape[1]:
        # every (400 / n)-th face: all subjects represented
        idx = np.linspace(0, X.shape[1] - 1, n_faces).round().astype(int)
        X = X.isel(col=idx)
    return X


def _diversity(A, w):
    """Median pairwise ||A_i - A_j||_F and the effective number of particles 1 / sum w^2."""
    M = len(A)
    d = [np.linalg.norm(A[i] - A[j]) for i in range(M) for j in range(i + 1, M)]
    return (float(np.median(d)) if d else float("nan")), float(1.0 / np.sum(np.asarray(w) ** 2))


def _dump(path, out):
    tmp = str(path) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, path)


def run_qtransform(model, M, seed, bank):
    """Q-Transform particles; returns a dict of CPU/wall times, KSD and diversity."""
    from bnmfzoo.inference import fit_particles

    warm_up_stein(model)
    dt = fit_particles(model, n_particles=M, init="qtransform", q_bank=bank, random_seed=seed,
                       progressbar=False, rejuvenate=None)  # the paper's Algorithm 1
    d = dt["diagnostics"]
    cpu, wall = float(d["cpu_time"]), float(d["wall_time"])  # the whole call, as recorded
    div, ess = _diversity(dt["particles"]["A"].values, dt["particles"]["weight"].values)
    return {
        "cpu_time": cpu, "wall_time": wall,
        "paper_time": float(d["total_time"]),  # App. E accounting (wall, weighting excluded)
        "weighting_wall_time": float(d["weighting_time"]),
        "ksd": float(d["stein_discrepancy"]),
        "ksd_uniform": float(d["stein_discrepancy_uniform"]),
        "median_pairwise_A_dist": div, "effective_particles": ess,
        "median_n_iter": float(np.median(dt["particles"]["n_iter"].values)),
    }


class NUTSRun:
    """PyMC NUTS driven one iteration at a time with a per-iteration CPU clock."""

    def __init__(self, model, info, *, tune, draws, seed):
        import pymc as pm

        from bnmfzoo._base.rng import spawn_seeds
        from bnmfzoo.inference.particles.baselines import nmf_warm_start

        self.model, self.info, self.tune, self.draws = model, info, int(tune), int(draws)
        seed_nmf, seed_init, seed_chain = spawn_seeds(seed, 3)
        c0, w0 = time.process_time(), time.perf_counter()
        A0, W0 = nmf_warm_start(info, random_seed=seed_nmf % 2**31)
        initvals = {info.names["A"]: A0, info.names["W"]: W0}
        with model:
            points, step = pm.init_nuts(init="adapt_diag", chains=1, model=model,
                                        random_seed=seed_init % 2**31, progressbar=False,
                                        quiet=True, tune=self.tune, initvals=initvals)
        self.point = points[0]
        self.step = step
        step.setup_chain(np.random.default_rng(seed_chain), self.tune, self.draws)
        step.tune = bool(self.tune)
        if hasattr(step, "reset_tuning"):
            step.reset_tuning()
        if hasattr(step, "iter_count"):
            step.iter_count = 0
        self.setup_cpu = time.process_time() - c0
        self.setup_wall = time.perf_counter() - w0
        self.i = 0
        self.iter_cpu, self.iter_wall, self.tree_depth, self.n_steps = [], [], [], []
        self.states = []  # transformed points; post-tuning draws + a window of the last states
        self._to_AW = None

    # sampler state that survives a restart (the compiled functions are rebuilt instead)
    _STEP_STATE = ("rng", "adapt_step_size", "iter_count", "step_size", "step_adapt", "tune",
                   "potential", "_step_rand", "_num_divs_sample", "divergences",
                   "_reached_max_treedepth")
    _RUN_STATE = ("i", "point", "iter_cpu", "iter_wall", "tree_depth", "n_steps", "states",
                  "tuning_window", "setup_cpu", "setup_wall", "tune", "draws")

    def save(self, path, extra):
        """Pickle the chain's full state (and ``extra``) to ``path`` atomically."""
        import pickle

        state = {"step": {k: getattr(self.step, k) for k in self._STEP_STATE},
                 "run": {k: getattr(self, k) for k in self._RUN_STATE if hasattr(self, k)},
                 "extra": extra}
        tmp = f"{path}.tmp"
        with open(tmp, "wb") as f:
            pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)

    def restore(self, path):
        """Continue a chain saved by :meth:`save`; returns its ``extra``.

        The run continues exactly where it stopped: same point, mass matrix, step-size
        adaptation and random generator, so the chain is the one an uninterrupted run draws.
        """
        import pickle

        with open(path, "rb") as f:
            state = pickle.load(f)
        for k, v in state["step"].items():
            setattr(self.step, k, v)
        self.step.integrator._potential = self.step.potential
        for k, v in state["run"].items():
            setattr(self, k, v)
        return state["extra"]

    @property
    def cpu(self):
        """CPU seconds charged to NUTS so far (setup + iterations)."""
        return self.setup_cpu + float(np.sum(self.iter_cpu))

    @property
    def wall(self):
        """Wall seconds of setup + iterations."""
        return self.setup_wall + float(np.sum(self.iter_wall))

    @property
    def done(self):
        """Whether all tune + draws iterations are done."""
        return self.i >= self.tune + self.draws

    @property
    def tuning(self):
        """Whether the sampler is still in its adaptation phase."""
        return self.i < self.tune

    def iterate(self, M):
        """One NUTS transition (``stop_tuning`` at iteration ``tune``, as ``pm.sample``)."""
        c0, w0 = time.process_time(), time.perf_counter()
        if self.i == self.tune:
            self.step.stop_tuning()
        self.point, stats = self.step.step(self.point)
        self.iter_cpu.append(time.process_time() - c0)
        self.iter_wall.append(time.perf_counter() - w0)
        s = stats[0] if isinstance(stats, list) else stats
        self.tree_depth.append(int(s.get("depth", -1)))
        self.n_steps.append(int(s.get("tree_size", -1)))
        in_tuning = self.i < self.tune
        self.i += 1
        self.states.append({k: np.array(v) for k, v in self.point.items()})
        if in_tuning and len(self.states) > M:  # keep only the last M tuning states
            self.states.pop(0)
        if self.i == self.tune:  # tuning finished: keep only post-tuning draws from now on
            self.tuning_window = list(self.states)
            self.states = []

    def thinned(self, M):
        """(A, W, source) of ``M`` states: evenly thinned post-tuning draws, else the last M."""
        if self.i > self.tune:
            states, source = self.states, "draws"
            idx = np.unique(np.round(np.linspace(0, len(states) - 1, M)).astype(int))
            if len(states) < M:
                source = f"draws ({len(states)} < M)"
        else:
            states = getattr(self, "tuning_window", self.states) if self.i == self.tune \
                else self.states
            idx = np.arange(len(states))
            source = "last states of tuning"
        if self._to_AW is None:
            self._to_AW = values_to_factors(self.model, self.info.names["A"],
                                            self.info.names["W"])
        AW = [self._to_AW(states[j]) for j in idx]
        A = np.stack([np.asarray(a) for a, _ in AW])
        W = np.stack([np.asarray(w) for _, w in AW])
        return A, W, source


def score_nuts(nuts, info, M, reason):
    """Stein-weight ``M`` states of the chain (evenly thinned draws) and print the row."""
    from bnmfzoo.inference.particles.weighted import weigh_particles

    A, W, source = nuts.thinned(M)
    A, W = info.project(A, W)
    res = weigh_particles(info, A, W)
    div, ess = _diversity(A, res["weight"])
    row = {
        "reason": reason, "iterations": nuts.i, "tuning": bool(nuts.tuning),
        "cpu_time": nuts.cpu, "wall_time": nuts.wall, "source": source,
        "n_particles": int(len(A)), "ksd": res["stein_discrepancy"],
        "ksd_uniform": res["stein_discrepancy_uniform"],
        "median_pairwise_A_dist": div, "effective_particles": ess,
    }
    print(f"  NUTS checkpoint [{reason}] it={nuts.i} ({source}, M={len(A)}) "
          f"CPU {nuts.cpu:.1f} s wall {nuts.wall:.1f} s  KSD {row['ksd']:.6g} "
          f"(uniform {row['ksd_uniform']:.6g})  mean tree depth "
          f"{np.mean(nuts.tree_depth[-20:]):.1f}", flush=True)
    return row


def rescore_rows(nuts, info, rows, M):
    """Recompute saved checkpoint rows from the chain's saved states (same CPU/wall times).

    A row at iteration ``i`` after tuning is scored on the first ``i - tune`` draws, a row at the
    end of tuning on the saved tuning window. Rows from inside tuning cannot be rebuilt (only
    the last ``M`` tuning states are kept) and are dropped.
    """
    full, i_end = nuts.states, nuts.i
    out = []
    try:
        for r in rows:
            if r["iterations"] < nuts.tune:
                print(f"  dropped checkpoint at iteration {r['iterations']} (inside tuning)")
                continue
            nuts.i = r["iterations"]
            nuts.states = full[: nuts.i - nuts.tune]
            new = score_nuts(nuts, info, M, r["reason"])
            out.append({**new, "cpu_time": r["cpu_time"], "wall_time": r["wall_time"]})
    finally:
        nuts.states, nuts.i = full, i_end
    return out


def peek_nuts(model, state_path, Ms, tune, draws, seed):
    """Score the draws saved in ``state_path`` at each ``M`` without touching the run."""
    from bnmfzoo.inference.particles.weighted import resolve_nmf_model

    info = resolve_nmf_model(model, method="bench")
    nuts = NUTSRun(model, info, tune=tune, draws=draws, seed=seed)
    nuts.restore(state_path)
    return [score_nuts(nuts, info, M, "peek at the saved state") for M in Ms]


def add_to_ksd_table(path, rows, tune, draws):
    """Replace the NUTS rows of a ``masood2019.ksd_time`` table with peeked ``rows``."""
    with open(path) as f:
        table = json.load(f)
    store = Store(table["dataset"], table["model"], {}, {"nuts"}, path=path)
    store.run("nuts", source="masood2019.vs_nuts --peek", tune=tune, draws=draws)
    done = rows[0]["iterations"] >= tune + draws  # every row scores the same saved state
    for r in rows:
        store.add(method="nuts", M=r["n_particles"], stage="final" if done else "checkpoint",
                  step=max(r["iterations"] - tune, 0), cpu=r["cpu_time"], wall=r["wall_time"],
                  ksd=r["ksd"], ksd_uniform=r["ksd_uniform"],
                  budget=f"{draws} draws after {tune} tuning (masood2019.vs_nuts)")
    print(f"  NUTS rows written to {path} ({'final' if done else 'checkpoint'})", flush=True)


def run_nuts(model, M, tune, draws, budget, seed, on_checkpoint, *, state_path=None,
             save_every=900.0, rescore=False):
    """Run NUTS until ``tune + draws`` iterations or ``budget`` CPU seconds; score checkpoints.

    With ``state_path`` the chain is saved there every ``save_every`` CPU seconds and at the
    end, and continued from it when the file exists, so a run longer than one session can be
    spread over several (its CPU clock is the sum of the pieces; the rebuilding of compiled
    functions on a restart is not charged, as the first compilation was). ``rescore``: score the
    saved checkpoint rows again (:func:`rescore_rows`) before continuing.
    """
    from bnmfzoo.inference.particles.weighted import resolve_nmf_model

    info = resolve_nmf_model(model, method="bench")
    nuts = NUTSRun(model, info, tune=tune, draws=draws, seed=seed)
    rows = []
    if state_path is not None and os.path.exists(state_path):
        setup = nuts.setup_cpu
        rows = nuts.restore(state_path)["rows"]
        if rescore:
            if nuts.done and rows and rows[-1]["reason"] == "finished":
                rows = rows[:-1]  # scored again below
            rows = rescore_rows(nuts, info, rows, M)
        print(f"  NUTS continued from {state_path}: iteration {nuts.i}, {nuts.cpu:.1f} CPU s so "
              f"far (rebuilding took {setup:.1f} CPU s, not charged)", flush=True)
    else:
        print(f"  NUTS setup (warm start + init_nuts + compile): {nuts.setup_cpu:.1f} CPU s "
              f"({nuts.setup_wall:.1f} wall s)", flush=True)
    marks = sorted(m for m in {budget * f for f in (0.125, 0.25, 0.5)} if m > nuts.cpu)
    next_save = nuts.cpu + save_every

    def checkpoint(reason):
        rows.append(score_nuts(nuts, info, M, reason))
        on_checkpoint(nuts, rows)

    while not nuts.done and nuts.cpu < budget:
        nuts.iterate(M)
        if nuts.i == nuts.tune and nuts.i >= 2:
            checkpoint("end of tuning")
        while marks and nuts.cpu >= marks[0]:
            marks.pop(0)
            if nuts.i >= 2 and not nuts.done and nuts.cpu < budget:
                checkpoint(f"{nuts.cpu / budget:.3g} x budget")
        if state_path is not None and nuts.cpu >= next_save:
            nuts.save(state_path, {"rows": rows})
            next_save = nuts.cpu + save_every
            print(f"  NUTS state saved at iteration {nuts.i} ({nuts.cpu:.0f} CPU s)", flush=True)
    checkpoint("finished" if nuts.done else "budget exhausted")
    if state_path is not None:
        nuts.save(state_path, {"rows": rows})
    return nuts, rows


def summarize_nuts(nuts):
    """Per-iteration statistics and the projected CPU time of the full run."""
    it = np.asarray(nuts.iter_cpu)
    total = nuts.tune + nuts.draws
    post = it[nuts.tune:]
    per_iter = float(np.mean(post)) if len(post) else float(np.mean(it))
    return {
        "iterations": nuts.i, "tune": nuts.tune, "draws": nuts.draws, "finished": nuts.done,
        "setup_cpu": nuts.setup_cpu, "setup_wall": nuts.setup_wall,
        "cpu_time": nuts.cpu, "wall_time": nuts.wall,
        "mean_iter_cpu": float(np.mean(it)), "median_iter_cpu": float(np.median(it)),
        "mean_iter_cpu_post_tuning": float(np.mean(post)) if len(post) else None,
        "projection_basis": "post-tuning iterations" if len(post) else
        "adaptation-phase iterations only (tuning unfinished)",
        "projected_cpu_total": nuts.setup_cpu + total * per_iter,
        "mean_tree_depth": float(np.mean(nuts.tree_depth)),
        "mean_n_steps": float(np.mean(nuts.n_steps)),
        "iter_cpu": it.tolist(), "tree_depth": nuts.tree_depth,
    }


def plot(path, q, rows, title):
    """KSD against CPU seconds: Q-Transform point and NUTS checkpoints (log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([q["cpu_time"]], [q["ksd"]], "o", color="C3", ms=8, label="Q-Transform (Stein w)")
    ax.plot([q["cpu_time"]], [q["ksd_uniform"]], "o", mfc="none", color="C3",
            label="Q-Transform (uniform w)")
    t = [r["cpu_time"] for r in rows]
    ax.plot(t, [r["ksd"] for r in rows], "s-", color="C0", label="NUTS thinned (Stein w)")
    ax.plot(t, [r["ksd_uniform"] for r in rows], "s--", mfc="none", color="C0",
            label="NUTS thinned (uniform w)")
    for r in rows:
        ax.annotate(f"it {r['iterations']}{' (tune)' if r['tuning'] else ''}",
                    (r["cpu_time"], r["ksd"]), fontsize=7, xytext=(3, 3),
                    textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("CPU seconds (process time, 1 thread)")
    ax.set_ylabel("KSD  w^T K w")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, nargs=2, default=(64, 64))
    p.add_argument("--faces", type=int, default=400)
    p.add_argument("--rank", type=int, default=10)
    p.add_argument("--M", type=int, default=50)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--tune", type=int, default=500)
    p.add_argument("--nuts-budget", type=float, default=None,
                   help="NUTS CPU-second budget (default: 3 x the Q-Transform CPU time)")
    p.add_argument("--budget-factor", type=float, default=3.0)
    p.add_argument("--epsilon", type=float, default=None,
                   help="SILF threshold (default: the cached value, n=50)")
    p.add_argument("--wait-epsilon", action="store_true",
                   help="poll the epsilon cache until another process has filled it")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="JSON path (PNG alongside)")
    p.add_argument("--state", default=None,
                   help="save the NUTS chain here and continue it from here when it exists "
                        "(the Q-Transform result is then read from --out, not recomputed)")
    p.add_argument("--save-every", type=float, default=900.0,
                   help="CPU seconds between saves of --state")
    p.add_argument("--rescore", action="store_true",
                   help="with --state: score the saved checkpoints again from the saved draws "
                        "(after a fix to the scoring) and rewrite the verdict")
    p.add_argument("--ksd-table", default=None, metavar="JSON",
                   help="with --peek: put the rows into this masood2019.ksd_time table "
                        "(e.g. benchmarks/results/ksd_time_faces_silf.json), replacing its NUTS "
                        "rows; they count as final only once the run has finished")
    p.add_argument("--peek", type=int, nargs="+", default=None, metavar="M",
                   help="score the draws saved in --state at these M (e.g. 5 25 50), write "
                        "them to <out>.peek.json and exit; the run itself is not touched")
    a = p.parse_args()

    from bnmfzoo.inference.particles.qtransform import generate_q_bank
    from bnmfzoo.models import silf

    full = tuple(a.size) == (64, 64) and a.faces >= 400
    tag = "faces" if full else f"faces_{a.size[0]}x{a.size[1]}_{a.faces}"
    out_path = Path(a.out) if a.out else RESULTS / f"particles_vs_nuts_{tag}.json"
    RESULTS.mkdir(exist_ok=True)
    X = _faces(a.size, a.faces)
    D, N = X.shape
    name = "faces64" if full else tag
    if a.epsilon is None:
        w0 = time.perf_counter()
        if a.wait_epsilon:  # another process is computing it: poll the cache, don't duplicate
            key = epsilon_key(name, X, a.rank, 50, 1.2, 0)
            while True:
                if EPSILON_CACHE.exists():
                    with open(EPSILON_CACHE) as f:
                        if key in json.load(f):
                            break
                time.sleep(20)
        eps, eps_sec = cached_epsilon(name, X, a.rank)
        print(f"epsilon = {eps:.6g} (cache; 50 reference fits took {eps_sec:.0f} CPU s, "
              f"charged to neither method; lookup {time.perf_counter() - w0:.1f} s)", flush=True)
    else:
        eps, eps_sec = a.epsilon, None
    model = silf(X, a.rank, epsilon=eps)
    bank = generate_q_bank()
    print(f"[{D} pixels ({a.size[0]}x{a.size[1]}) x {N} faces, rank {a.rank}, M={a.M}] "
          f"Q bank: {len(bank)} pairs, {bank.generation_time:.2f} s (paper: < 0.5 s)",
          flush=True)
    out = {"data": {"D": D, "N": N, "size": list(a.size), "rank": a.rank, "M": a.M},
           "epsilon": eps, "epsilon_cpu_seconds": eps_sec, "seed": a.seed,
           "clock": "CPU seconds (time.process_time), single-threaded BLAS; machine shared"}

    if a.peek:
        if a.state is None or not os.path.exists(a.state):
            raise SystemExit("--peek needs an existing --state file")
        rows = peek_nuts(model, a.state, a.peek, a.tune, a.draws, a.seed)
        _dump(out_path.with_suffix(".peek.json"), {**out, "nuts_peek": rows})
        if a.ksd_table:
            add_to_ksd_table(Path(a.ksd_table), rows, a.tune, a.draws)
        return

    resuming = a.state is not None and os.path.exists(a.state)
    if resuming:  # a continued run: same Q-Transform result, same NUTS budget
        with open(out_path) as f:
            previous = json.load(f)
        q = previous["qtransform"]
        print("  Q-Transform: result of the first piece of this run (read from "
              f"{out_path})", flush=True)
    else:
        q = run_qtransform(model, a.M, a.seed, bank)
    out["qtransform"] = q
    _dump(out_path, out)
    print(f"  Q-Transform: CPU {q['cpu_time']:.1f} s (wall {q['wall_time']:.1f} s; App. E time "
          f"{q['paper_time']:.1f} s), KSD {q['ksd']:.6g} (uniform {q['ksd_uniform']:.6g}), "
          f"1/sum w^2 {q['effective_particles']:.1f}", flush=True)

    budget = a.nuts_budget if a.nuts_budget is not None else a.budget_factor * q["cpu_time"]
    out["nuts_budget_cpu"] = budget
    print(f"  NUTS: tune={a.tune}, draws={a.draws}, CPU budget {budget:.1f} s", flush=True)

    def save(nuts, rows):
        out["nuts"] = summarize_nuts(nuts)
        out["nuts_checkpoints"] = rows
        _dump(out_path, out)

    nuts, rows = run_nuts(model, a.M, a.tune, a.draws, budget, a.seed, save,
                          state_path=a.state, save_every=a.save_every, rescore=a.rescore)
    s = out["nuts"]
    last = rows[-1]
    verdict = {
        "time_ratio_q_over_nuts_spent": q["cpu_time"] / s["cpu_time"],
        "time_ratio_q_over_nuts_projected": q["cpu_time"] / s["projected_cpu_total"],
        "ksd_ratio_q_over_nuts": q["ksd"] / last["ksd"],
        "ksd_ratio_q_over_nuts_uniform": q["ksd_uniform"] / last["ksd_uniform"],
        "q_faster": bool(q["cpu_time"] < (s["cpu_time"] if s["finished"]
                                          else max(s["cpu_time"], budget))),
        "q_lower_ksd": bool(q["ksd"] < last["ksd"]),
    }
    out["verdict"] = verdict
    _dump(out_path, out)
    png = out_path.with_suffix(".png")
    plot(png, q, rows, f"SILF faces {D}x{N}, rank {a.rank}, M={a.M}")

    print("\n=== Q-Transform vs NUTS (CPU seconds) ===")
    print(f"  Q-Transform M={a.M}: CPU {q['cpu_time']:.1f} s (wall {q['wall_time']:.1f} s), "
          f"KSD {q['ksd']:.6g}")
    if s["finished"]:
        print(f"  NUTS finished {a.tune}+{a.draws} iterations in {s['cpu_time']:.1f} CPU s "
              f"(wall {s['wall_time']:.1f} s), KSD {last['ksd']:.6g}")
    else:
        print(f"  NUTS had NOT finished {a.tune}+{a.draws} iterations after {s['cpu_time']:.1f} "
              f"CPU s (budget {budget:.1f} s = {budget / q['cpu_time']:.2f} x Q-Transform): "
              f"{s['iterations']} iterations done ({'still tuning' if nuts.tuning else 'sampling'}"
              f"), mean {s['mean_iter_cpu']:.2f} CPU s/iteration, mean tree depth "
              f"{s['mean_tree_depth']:.1f}")
        print(f"  projected CPU time of the full {a.tune + a.draws}-iteration run: "
              f"{s['projected_cpu_total']:.0f} s (basis: {s['projection_basis']})")
        print(f"  => Q-Transform finished in {q['cpu_time']:.1f} CPU s < NUTS unfinished after "
              f"{s['cpu_time']:.1f} CPU s (projected {s['projected_cpu_total']:.0f} s; ratio "
              f"{verdict['time_ratio_q_over_nuts_projected']:.3g})")
    print(f"  KSD: Q-Transform {q['ksd']:.6g} vs NUTS {last['ksd']:.6g} ({last['source']}, "
          f"M={last['n_particles']}) -> ratio {verdict['ksd_ratio_q_over_nuts']:.3g} "
          f"(uniform weights: {q['ksd_uniform']:.6g} vs {last['ksd_uniform']:.6g}, ratio "
          f"{verdict['ksd_ratio_q_over_nuts_uniform']:.3g})")
    print(f"  diversity median ||Ai-Aj||: Q {q['median_pairwise_A_dist']:.4g} vs NUTS "
          f"{last['median_pairwise_A_dist']:.4g}")
    print("  paper (Fig. 4, 31-32; no numbers given): Q-Transform lowest KSD in least time; "
          "HMC collections not diverse")
    print(f"  results: {out_path}  plot: {png}")


if __name__ == "__main__":
    main()
