"""Mode masses by annealed importance sampling: an estimate independent of any chain's visits.

Run with ``python -m benchmarks.speed.ais_masses [--problems ccle3 laurberg05] [--runs 40]``.

The library's version of this check, on the modes :func:`bnmfzoo.diagnostics.modes` finds in a
result (references fitted to each mode's aligned draws; a run counts for a mode only when it
ends there, which keeps the estimate unbiased), is :func:`bnmfzoo.inference.mode_evidence`;
``benchmarks/speed/mode_masses.py --default-path`` runs it beside replica exchange.

For each problem the modes are found as ``ReplicaExchangeGibbs(mode_jumps=True)`` finds them
(:func:`bnmfzoo.inference.gaussian.modes._mode_jump.discover_references`: quenched Gibbs runs from
the
chain's start and random starts, one normalized mean-field reference per mode). For each
reference ``r``, ``--runs`` independent annealed importance sampling runs (Neal 2001) from
``q_r`` to the posterior along ``p^g q_r^(1 - g)`` (``--steps`` steps, the exact tempered
Gibbs kernels of the mode jumps) give weights whose mean estimates ``Z_r``, the posterior's
normalizer over the part of the space the path reaches: the mode's share. The mass of mode
``r`` is ``Z_r / sum_s Z_s`` (references whose mean bases are within ``--same-angle`` degrees
are one mode, their estimates of its ``Z`` averaged); its error is the delta-method error
from each ``Z_r``'s standard error (the weights' spread over runs); other seeds check it. Every
annealed run's end state is labelled by its nearest reference, to confirm that the paths stay
in their modes. For ``laurberg05`` the references are also matched to the two exact
factorizations (``mass(sol1)``: the first one, as in ``replica.py``; its error adds the
references' errors in quadrature, an upper bound when two references share the solution).

This assumes the references cover every mode with mass and that each path stays in its mode
(checked by the labels); a mode no start reaches gets no reference and no mass. In high
dimensions the weights are heavy-tailed and the delta-method errors are not reliable: on
``ccle3`` (1,600 parameters, 40 runs of 1000 steps) four seeds gave the minor mode 0.096 ±
0.047, 0.002 ± 0.002, 0.016 and 0.035 ± 0.023. On ``laurberg05`` (36 entries) the
estimates agree with replica exchange on average (``benchmarks/RESULTS.md`` §3.5), but single
40-run estimates scatter by about ±45 % and their errors can understate even there: with
``bz.inference.mode_evidence`` on one run's modes, eight AIS seeds gave 0.0018-0.0255 for a
mass of 0.0042 (``mode_masses.py --ais-repeat``, RESULTS §3.7).
"""

import argparse
import math
import time

import numpy as np

from benchmarks._common import Clock  # noqa: F401  (sets one BLAS thread before numpy work)
from benchmarks.speed.replica import _problem


def _setup(name, seed):
    from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, nmf_sweep, observed_entries
    from bnmfzoo.inference.gaussian.modes._mode_jump import discover_references
    from bnmfzoo.models import exponential_gaussian
    from bnmfzoo.models._spec import get_spec

    prob = _problem(name)
    model = exponential_gaussian(prob["X"], prob["R"], **prob.get("model_kw", {}))
    spec = get_spec(model, families="exponential_gaussian", method="ais_masses")
    obs = observed_entries(spec.X, spec.mask)
    rng = np.random.default_rng(seed)
    D, N = spec.X.shape
    scale = math.sqrt(float(np.nanmean(np.asarray(prob["X"]))) / prob["R"])
    st = nmf_state(rng.exponential(scale, (D, prob["R"])), rng.exponential(scale, (prob["R"], N)),
                   1.0, None, obs)
    for _ in range(300):
        nmf_sweep(st, obs, spec.hyper, rng)
    refs = discover_references(st, obs, spec.hyper, rng)
    return prob, spec, obs, refs, rng


def log_mean_exp(x):
    """``log(mean(exp(x)))`` and its standard error (delta method)."""
    x = np.asarray(x, dtype=float)
    m = x.max()
    w = np.exp(x - m)
    mean = w.mean()
    se = w.std(ddof=1) / math.sqrt(w.size) / mean if w.size > 1 else math.inf
    return m + math.log(mean), se


def masses(log_z, se):
    """Masses ``Z_r / sum Z`` and their delta-method errors from ``log Z_r`` with errors."""
    log_z, se = np.asarray(log_z), np.asarray(se)
    p = np.exp(log_z - log_z.max())
    p /= p.sum()
    # d p_r / d log Z_s = p_r (delta_rs - p_s); independent log Z errors
    J = np.diag(p) - np.outer(p, p)
    return p, np.sqrt((J**2 * se[None, :] ** 2).sum(axis=1))


def run(name, runs, steps, seed, same_angle=5.0):
    from bnmfzoo.inference.gaussian.modes._mode_jump import _nearest, ais_forward, anneal_schedule

    c0 = time.process_time()
    prob, spec, obs, refs, rng = _setup(name, seed)
    gammas = anneal_schedule(steps)
    log_z, se, stay = [], [], []
    for r, ref in enumerate(refs):
        lw, ends = [], []
        for _ in range(runs):
            y, w = ais_forward(ref, obs, spec.hyper, gammas, rng)
            lw.append(w)
            ends.append(_nearest(refs, y, spec.hyper))
        lz, s = log_mean_exp(lw)
        log_z.append(lz)
        se.append(s)
        stay.append(float(np.mean(np.array(ends) == r)))
        print(f"  {name} seed {seed} reference {r}: log Z = {lz:.3f} ± {s:.3f} (log-weight sd "
              f"{np.std(lw):.2f}; {stay[-1]:.2f} of the runs end nearest their reference)",
              flush=True)
    groups = same_mode_groups(refs, same_angle)
    # references of one mode estimate the same Z: average them (summing would count it twice)
    g_log_z, g_se = [], []
    for g in groups:
        z = np.exp(np.array(log_z)[g] - max(log_z))
        dz = z * np.array(se)[g]
        g_log_z.append(max(log_z) + math.log(z.mean()))
        g_se.append(math.sqrt((dz**2).sum()) / len(g) / z.mean())
    p, dp = masses(g_log_z, g_se)
    line = ", ".join(f"{a:.4f} ± {b:.4f}" for a, b in zip(p, dp, strict=True))
    extra = ""
    if prob.get("data") is not None:
        from bnmfzoo.diagnostics import angle_distance

        sols = [s[0] for s in prob["data"].solutions]
        near = [int(np.argmin([angle_distance(refs[g[0]].mA, s) for s in sols]))
                for g in groups]
        # "sol1" is the first known factorization (index 0), as in replica.py
        on1 = np.array(near) == 0
        m1, e1 = float(p[on1].sum()), float(np.sqrt((dp[on1] ** 2).sum()))
        extra = f"; modes nearest solution {near}; mass(sol1) = {m1:.4f} ± {e1:.4f}"
    print(f"{name} seed {seed}: {len(refs)} references in {len(groups)} modes {groups}, "
          f"masses {line}{extra}; cpu {time.process_time() - c0:.1f} s", flush=True)
    return p, dp


def same_mode_groups(refs, same_angle):
    """Group references whose mean bases are within ``same_angle`` degrees (matched columns)."""
    from bnmfzoo.diagnostics import angle_distance

    groups = []
    for i, ref in enumerate(refs):
        for g in groups:
            if angle_distance(refs[g[0]].mA, ref.mA) < same_angle:
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=["ccle3", "laurberg05"])
    parser.add_argument("--runs", type=int, default=40, help="annealed runs per reference")
    parser.add_argument("--steps", type=int, default=1000, help="annealing steps per run")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--same-angle", type=float, default=5.0,
                        help="references whose mean bases are closer (degrees) are one mode")
    args = parser.parse_args()
    for name in args.problems:
        for seed in args.seeds:
            run(name, args.runs, args.steps, seed, args.same_angle)


if __name__ == "__main__":
    main()
