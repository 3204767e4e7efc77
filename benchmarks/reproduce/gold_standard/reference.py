"""Reference posteriors: long Gibbs chains per mode, mode masses from a tempered run.

A reference is built in four steps by :func:`build_reference` (the default builder,
``"gibbs_pt"``; builders are looked up in ``BUILDERS`` so another one, e.g. a replica-exchange
sampler from the library, can be plugged in by name):

1. **Mode discovery.** Exact Gibbs chains (``nmf_sweep``, A and W blocks, fixed noise) from many
   starts: the known exact solutions, 12 Q-Transform and 12 random-restart NMF particles, 6
   random starts. Their second halves are cut into segments and clustered on the max matched
   basis angle (:func:`bnmfzoo.diagnostics._modes.mode_clustering.cluster_members`).
2. **Within-mode chains.** For each mode, 4 long chains start from the final states of that
   mode's discovery chains; convergence is checked by the rank-normalized split R-hat
   (arviz-stats) of the label-invariant ``A @ W`` entries and of the mode-aligned unit-l1 basis
   ``A``; draws are relabelled by their nearest mode afterwards (a chain that leaves its mode
   contributes draws to the other mode).
3. **Mode masses** by parallel tempering with the same exact Gibbs kernel: the likelihood is
   tempered (``sigma / sqrt(beta)``, beta on a geometric ladder), adjacent replicas swap with
   the Metropolis rule, and the cold replica's draws are labelled by their nearest mode. Masses
   are the label frequencies averaged over independent runs (standard error from their spread).
4. **A check of the masses** (problems up to 150 value-space dimensions): per-mode evidence by
   bridge sampling (Meng & Wong 1996, the iterative optimal bridge, as in Gronau et al. 2017)
   between the mode's Gibbs draws in value space (log A, log W, one labelling) and a Gaussian
   fitted to them; masses ∝ evidence. Two independent estimators that agree within their errors.

The reference sample is the union of the within-mode draws, each mode weighted by its mass.
References are cached in ``benchmarks/.cache/gold_standard/<problem>-<hash>-<budget>.npz``
(git-ignored; delete the file to rebuild).
"""

import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from benchmarks._common import HERE

CACHE = HERE / ".cache" / "gold_standard"


# --------------------------------------------------------------------------------------------
# Gibbs
# --------------------------------------------------------------------------------------------

def _obs(prob):
    from bnmfzoo.inference.gaussian.gibbs._core import observed_entries

    return observed_entries(prob.X_train, prob.train)


def gibbs_chain(prob, A0, W0, n_sweeps, *, thin=1, rng, obs=None, beta=1.0):
    """``n_sweeps`` exact Gibbs sweeps (A, W) from ``(A0, W0)``; every ``thin``-th state."""
    from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, nmf_sweep

    obs = _obs(prob) if obs is None else obs
    hyper = dataclasses.replace(prob.hyper, sigma=prob.sigma / np.sqrt(beta))
    st = nmf_state(np.maximum(A0, 1e-8), np.maximum(W0, 1e-8), 1.0 / hyper.sigma ** 2,
                   None, obs)
    As, Ws = [], []
    for s in range(n_sweeps):
        nmf_sweep(st, obs, hyper, rng, update={"A", "W"})
        if (s + 1) % thin == 0:
            As.append(st.A.copy())
            Ws.append(st.W.copy())
    return np.array(As), np.array(Ws)


def _starts(prob, rng, n_q=12, n_r=12, n_rand=6):
    from bnmfzoo.inference import fit_particles

    m = prob.model()
    starts = [(a.copy(), w.copy()) for a, w in prob.known]
    for init, n in (("qtransform", n_q), ("random", n_r)):
        try:
            dt = fit_particles(m, n_particles=n, init=init,
                               random_seed=int(rng.integers(2**31)), progressbar=False,
                               rejuvenate=None)  # solver starts, as when the cache was built
        except ValueError as err:  # e.g. a diverged solver; its chains are simply not started
            print(f"    (no {init} starts: {str(err)[:80]})")
            continue
        p = dt["particles"]
        starts += list(zip(p["A"].values, p["W"].values))
    scale = np.sqrt(np.nanmean(prob.X_train) / prob.rank)
    for _ in range(n_rand):
        starts.append((rng.exponential(scale, (prob.X.shape[0], prob.rank)),
                       rng.exponential(scale, (prob.rank, prob.X.shape[1]))))
    return starts


def unit_l1(A):
    return A / np.maximum(A.sum(-2, keepdims=True), 1e-300)


def label_by_mode(A, refs):
    """Nearest mode (max matched angle) and the permutation aligning each basis to it."""
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2, matched_angles

    dist, perm = matched_angles(_unit_l2(A), refs)
    lab = dist.argmin(1)
    rows = np.arange(A.shape[0])
    return lab, perm[rows, lab], dist[rows, lab]


def aligned(A, W, perm):
    """``A[:, perm]``, ``W[perm]`` per member (so the columns follow the mode's order)."""
    Aa = np.take_along_axis(A, perm[:, None, :], axis=2)
    Wa = np.take_along_axis(W, perm[:, :, None], axis=1)
    return Aa, Wa


def discover_modes(prob, rng, *, n_sweeps, seg=5):
    from bnmfzoo.diagnostics._modes.mode_clustering import cluster_members

    obs = _obs(prob)
    ends, A_all, seg_of, chain_of = [], [], [], []
    starts = _starts(prob, rng)
    thin = max(1, n_sweeps // 200)
    for c, (A0, W0) in enumerate(starts):
        A, W = gibbs_chain(prob, A0, W0, n_sweeps, thin=thin, rng=rng, obs=obs)
        half = A[A.shape[0] // 2:]
        ends.append((A[-1], W[-1]))
        A_all.append(half)
        seg_of.append(c * seg + np.arange(half.shape[0]) * seg // half.shape[0])
        chain_of.append(np.full(half.shape[0], c))
    A_all = np.concatenate(A_all)
    res = cluster_members(A_all, segment_of=np.concatenate(seg_of),
                          chain_of=np.concatenate(chain_of), threshold=prob.threshold)
    chain_of = np.concatenate(chain_of)
    chain_mode = np.array([np.bincount(res["label"][chain_of == c]).argmax()
                           for c in range(len(starts))])
    return {"refs": res["reference"], "cut": res["cut"], "ends": ends,
            "chain_mode": chain_mode, "n_starts": len(starts)}


def rhat_max(x):
    """Max rank-normalized split R-hat over the trailing dims of ``x`` (chain, draw, ...)."""
    from arviz_stats.base import array_stats

    x = np.asarray(x, dtype=float).reshape(x.shape[0], x.shape[1], -1)
    keep = x.std(axis=(0, 1)) > 0
    r = array_stats.rhat(np.moveaxis(x[..., keep], (0, 1), (-2, -1)), chain_axis=-2,
                         draw_axis=-1)
    return float(np.nanmax(r))


def within_mode_chains(prob, disc, rng, *, n_sweeps, n_chains=4, n_keep=500):
    obs = _obs(prob)
    out = []
    for k in range(disc["refs"].shape[0]):
        members = np.flatnonzero(disc["chain_mode"] == k)
        if members.size == 0:
            continue
        chains_A, chains_W = [], []
        thin = max(1, n_sweeps // n_keep)
        for c in range(n_chains):
            A0, W0 = disc["ends"][members[c % members.size]]
            A, W = gibbs_chain(prob, A0, W0, n_sweeps, thin=thin, rng=rng, obs=obs)
            h = A.shape[0] // 5  # 20 % burn-in (the chains start inside the mode)
            chains_A.append(A[h:])
            chains_W.append(W[h:])
        A = np.stack(chains_A)
        W = np.stack(chains_W)
        c_, d_ = A.shape[:2]
        lab, perm, _ = label_by_mode(A.reshape(c_ * d_, *A.shape[2:]), disc["refs"])
        Aa, Wa = aligned(A.reshape(c_ * d_, *A.shape[2:]), W.reshape(c_ * d_, *W.shape[2:]), perm)
        AW = np.einsum("sdr,srn->sdn", Aa, Wa)
        rh_aw = rhat_max(AW.reshape(c_, d_, -1))
        rh_a = rhat_max(unit_l1(Aa).reshape(c_, d_, -1))
        out.append({"mode": k, "A": Aa, "W": Wa, "label": lab, "rhat_AW": rh_aw,
                    "rhat_A": rh_a, "stay": float(np.mean(lab == k)), "n_chains": n_chains})
    return out


# --------------------------------------------------------------------------------------------
# mode masses
# --------------------------------------------------------------------------------------------

def tempered_masses(prob, disc, rng, *, n_sweeps, n_runs=4, n_temps=None, beta_min=None):
    """Mode masses from parallel tempering (exact Gibbs at each temperature)."""
    from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, nmf_sweep

    obs = _obs(prob)
    n_obs = obs.n_observed
    if beta_min is None:  # the hottest replica's noise sd ~ the data's own spread
        beta_min = min(0.5, (prob.sigma / np.nanstd(prob.X_train)) ** 2)
    if n_temps is None:  # ladder spacing from the tempered log-likelihood's sd ~ sqrt(n/2)
        n_temps = int(np.clip(np.ceil(np.log(1 / beta_min) * np.sqrt(n_obs / 2) / 2.0), 4, 48))
    betas = np.geomspace(1.0, beta_min, n_temps)
    K = disc["refs"].shape[0]
    counts, swaps, switches = [], [], []
    for run in range(n_runs):
        states = []
        for t in range(n_temps):
            A0, W0 = disc["ends"][int(rng.integers(len(disc["ends"])))]
            states.append(nmf_state(np.maximum(A0, 1e-8), np.maximum(W0, 1e-8),
                                    betas[t] / prob.sigma**2, None, obs))
        hypers = [dataclasses.replace(prob.hyper, sigma=prob.sigma / np.sqrt(b)) for b in betas]
        labs, n_acc, n_try = [], 0, 0
        for s in range(n_sweeps):
            for t in range(n_temps):
                nmf_sweep(states[t], obs, hypers[t], rng, update={"A", "W"})
            ll = np.array([-0.5 * st.sse / prob.sigma**2 for st in states])
            for t in range(s % 2, n_temps - 1, 2):
                n_try += 1
                if np.log(rng.random()) < (betas[t] - betas[t + 1]) * (ll[t + 1] - ll[t]):
                    states[t], states[t + 1] = states[t + 1], states[t]
                    ll[t], ll[t + 1] = ll[t + 1], ll[t]
                    n_acc += 1
            if s >= n_sweeps // 5 and s % 5 == 0:
                labs.append(states[0].A.copy())
        lab = label_by_mode(np.array(labs), disc["refs"])[0]
        counts.append(np.bincount(lab, minlength=K) / lab.size)
        swaps.append(n_acc / max(n_try, 1))
        switches.append(int(np.sum(lab[1:] != lab[:-1])))
    counts = np.array(counts)
    return {"mass": counts.mean(0), "se": counts.std(0, ddof=1) / np.sqrt(n_runs),
            "runs": counts, "swap_rate": float(np.mean(swaps)), "switches": switches,
            "n_temps": n_temps, "beta_min": float(beta_min)}


def _log_target(prob, theta, D, R, N):
    """Log joint in value space (log A, log W) with the log-Jacobian, vectorized over rows."""
    A = np.exp(theta[:, : D * R]).reshape(-1, D, R)
    W = np.exp(theta[:, D * R:]).reshape(-1, R, N)
    resid = np.where(prob.train, prob.X - np.einsum("sdr,srn->sdn", A, W), 0.0)
    n = prob.train.sum()
    ll = -0.5 * (resid**2).sum((1, 2)) / prob.sigma**2 - n * np.log(prob.sigma * np.sqrt(2 * np.pi))
    lp = (D * R + R * N) * np.log(prob.lam) - prob.lam * (A.sum((1, 2)) + W.sum((1, 2)))
    return ll + lp + theta.sum(1)


def bridge_masses(prob, modes, refs, rng, *, n_iter=200):
    """Per-mode log evidence by iterative bridge sampling; masses ∝ evidence."""
    D, N = prob.X.shape
    R = prob.rank
    logZ, err = [], []
    for m in modes:
        sel = m["label"] == m["mode"]
        th = np.log(np.maximum(np.concatenate([m["A"][sel].reshape(sel.sum(), -1),
                                               m["W"][sel].reshape(sel.sum(), -1)], axis=1),
                                1e-300))
        n1 = th.shape[0] // 2
        fit, post = th[:n1], th[n1:]  # fit the proposal on one half, bridge with the other
        mu, cov = fit.mean(0), np.cov(fit.T) + 1e-9 * np.eye(th.shape[1])
        L = np.linalg.cholesky(cov)
        n2 = post.shape[0]
        prop = mu + rng.standard_normal((n2, th.shape[1])) @ L.T
        logdet = 2 * np.log(np.diag(L)).sum()

        def log_g(x):
            z = np.linalg.solve(L, (x - mu).T)
            return -0.5 * (z**2).sum(0) - 0.5 * logdet - 0.5 * th.shape[1] * np.log(2 * np.pi)

        l1 = _log_target(prob, post, D, R, N) - log_g(post)  # q/g at posterior draws
        l2 = _log_target(prob, prop, D, R, N) - log_g(prop)  # q/g at proposal draws
        # the target is the posterior restricted to this mode's region: proposal draws nearer
        # another mode's representative count as zero density
        in_mode = label_by_mode(np.exp(prop[:, : D * R]).reshape(-1, D, R), refs)[0] == m["mode"]
        l2 = np.where(in_mode, l2, -np.inf)
        s1, s2 = n2 / (n2 + n2), n2 / (n2 + n2)
        lz = np.median(l2)
        for _ in range(n_iter):
            num = np.logaddexp.reduce(l2 - np.logaddexp(np.log(s1) + l2 - lz, np.log(s2))) \
                - np.log(n2)
            den = np.logaddexp.reduce(-np.logaddexp(np.log(s1) + l1 - lz, np.log(s2))) \
                - np.log(n2)
            new = num - den
            if abs(new - lz) < 1e-10:
                break
            lz = new
        # relative error (Fruhwirth-Schnatter 2004, independent draws assumed): spread of the
        # estimate over 4 disjoint quarters of the draws
        q = []
        for part in np.array_split(np.arange(n2), 4):
            a, b = l1[part], l2[part]
            z = lz
            for _ in range(100):
                z = (np.logaddexp.reduce(b - np.logaddexp(np.log(s1) + b - z, np.log(s2)))
                     - np.logaddexp.reduce(-np.logaddexp(np.log(s1) + a - z, np.log(s2))))
            q.append(z)
        logZ.append(lz)
        err.append(float(np.std(q, ddof=1) / 2.0))
    logZ = np.array(logZ)
    mass = np.exp(logZ - np.logaddexp.reduce(logZ))
    return {"logZ": logZ, "logZ_se": np.array(err), "mass": mass}


# --------------------------------------------------------------------------------------------
# builder
# --------------------------------------------------------------------------------------------

BUDGETS = {"quick": dict(disc=1000, within=4000, pt=3000, pt_runs=3, keep=500),
           "full": dict(disc=2000, within=20000, pt=10000, pt_runs=4, keep=2500)}


def build_gibbs_pt(prob, *, budget="full", random_seed=0, log=print):
    """The default reference builder (see the module docstring)."""
    b = BUDGETS[budget]
    rng = np.random.default_rng(random_seed)
    t0 = time.process_time()
    disc = discover_modes(prob, rng, n_sweeps=b["disc"])
    log(f"  {prob.name}: {disc['refs'].shape[0]} modes from {disc['n_starts']} Gibbs chains "
        f"(cut {disc['cut']:.1f} deg)")
    modes = within_mode_chains(prob, disc, rng, n_sweeps=b["within"], n_keep=b["keep"])
    for m in modes:
        log(f"    mode {m['mode']}: R-hat A@W {m['rhat_AW']:.3f}, aligned A {m['rhat_A']:.3f}, "
            f"draws staying in the mode {m['stay']:.3f}")
    K = disc["refs"].shape[0]
    pt = tempered_masses(prob, disc, rng, n_sweeps=b["pt"], n_runs=b["pt_runs"])
    log(f"    PT ({pt['n_temps']} temperatures, beta_min {pt['beta_min']:.2g}, swap rate "
        f"{pt['swap_rate']:.2f}, cold-replica mode switches per run {pt['switches']}): masses "
        + ", ".join(f"{m:.3f}±{s:.3f}" for m, s in zip(pt["mass"], pt["se"])))
    check = None
    dim = prob.rank * sum(prob.X.shape)
    if dim <= 150 and len(modes) == K:
        check = bridge_masses(prob, modes, disc["refs"], rng)
        log("    bridge-sampling masses " + ", ".join(f"{m:.3f}" for m in check["mass"])
            + " (log Z se " + ", ".join(f"{e:.2f}" for e in check["logZ_se"]) + ")")
    # pool the within-mode draws, relabelled by nearest mode, each mode weighted by its mass
    A = np.concatenate([m["A"] for m in modes])
    W = np.concatenate([m["W"] for m in modes])
    lab, perm, _ = label_by_mode(A, disc["refs"])
    A, W = aligned(A, W, perm)
    mass = pt["mass"]
    counts = np.bincount(lab, minlength=K)
    w = np.where(counts[lab] > 0, mass[lab] / np.maximum(counts[lab], 1), 0.0)
    w = w / w.sum()
    meta = {
        "builder": "gibbs_pt", "budget": budget, "n_modes": int(K), "cut": disc["cut"],
        "rhat_AW": [m["rhat_AW"] for m in modes], "rhat_A": [m["rhat_A"] for m in modes],
        "stay": [m["stay"] for m in modes], "mass": mass.tolist(), "mass_se": pt["se"].tolist(),
        "pt_swap_rate": pt["swap_rate"], "pt_switches": pt["switches"],
        "pt_n_temps": pt["n_temps"],
        "bridge_mass": None if check is None else check["mass"].tolist(),
        "bridge_logZ_se": None if check is None else check["logZ_se"].tolist(),
        "cpu_seconds": time.process_time() - t0,
    }
    return {"A": A, "W": W, "weight": w, "label": lab, "refs": disc["refs"], "meta": meta}


BUILDERS = {"gibbs_pt": build_gibbs_pt}


def load_reference(prob, *, builder="gibbs_pt", budget="full", rebuild=False, log=print):
    """Cached reference of ``prob`` (built by ``BUILDERS[builder]`` when absent)."""
    path = CACHE / f"{prob.key()}-{builder}-{budget}.npz"
    if path.exists() and not rebuild:
        z = np.load(path)
        ref = {k: z[k] for k in ("A", "W", "weight", "label", "refs")}
        ref["meta"] = json.loads(str(z["meta"]))
        log(f"  {prob.name}: reference from {path}")
        return ref
    ref = BUILDERS[builder](prob, budget=budget, log=log)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **{k: ref[k] for k in ("A", "W", "weight", "label", "refs")},
                        meta=json.dumps(ref["meta"]))
    return ref


def _main():
    import argparse

    from benchmarks.reproduce.gold_standard.problems import PROBLEMS, make_problem

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args()
    for name in args.problems:
        ref = load_reference(make_problem(name), budget="quick" if args.quick else "full",
                             rebuild=args.rebuild)
        print(json.dumps(ref["meta"], indent=1))


if __name__ == "__main__":
    _main()


__all__ = ["BUILDERS", "build_gibbs_pt", "load_reference", "Path"]
