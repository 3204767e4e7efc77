"""Does a KL-NMF start help the masses route's plain chains find the heaviest mode?

The default Poisson masses route looks for modes beyond the SMC from the prior's with
``prior_chain_modes``: 8 plain Gibbs chains of 300 sweeps at ``b = 1``, each from an exact prior
draw. On Reuters 200 x 100, rank 3, the posterior holds many metastable modes hundreds of nats
apart, and one default run in four never reached the heaviest mode. This screen compares three
ways to start the same 8 x 300 sweeps (the per-mode estimators' cost is unchanged):

* ``prior``: an exact prior draw (today);
* ``kl``: a prior draw moved by ``n_kl`` KL multiplicative updates (Lee & Seung 2001;
  :func:`bnmfzoo.inference.large_route.kl_nmf_start`);
* ``best-m``: ``m`` such KL starts, of which the 8 with the highest log joint seed the chains.

For every seed it records the best chain-end log-likelihood and log joint (the log joint of
``log A, log W`` as the per-mode estimators use it) and whether a chain's aligned mean lies
within the route's cut (15 degrees, max matched angle) of the **reference**: the heaviest mode,
taken as the best log joint over ``--ref-starts`` long KL-started chains (printed with its
log-likelihood so it can be matched to the mode the default run established).

    python -m benchmarks.investigations.kl_mode_search --data /tmp/s31B/reuters_200x100.npy \
        --rank 3 --seeds 20

References
----------
Lee, D. D. & Seung, H. S. (2001). Algorithms for non-negative matrix factorization. NIPS 13.
"""

import argparse
import time

import numpy as np


def _setup(path, rank):
    from bnmfzoo._cli.masses import _build, _read
    from bnmfzoo.inference.mode_bridge import bridge_parametrisation
    from bnmfzoo.inference.smc_masses import family_of_model

    model = _build(_read(path), rank, "poisson")
    fam = family_of_model(model)
    return fam, bridge_parametrisation(model, fam)


def _log_joint(param, s):
    return float(param.log_joint(param.theta(s, np.arange(param.rank), None))[0])


def _chain(fam, s, n_sweeps, rng, n_keep=50):
    from bnmfzoo.diagnostics._modes.mode_clustering import _aligned_mean, _unit_l2

    keep_from = n_sweeps // 2
    step = max(1, -(-(n_sweeps - keep_from) // n_keep))
    kept = []
    for i in range(n_sweeps):
        fam.tempered.sweep(s, 1.0, rng)
        if i >= keep_from and (n_sweeps - 1 - i) % step == 0:
            kept.append(np.array(fam.factors(s)[0], float))
    U = _unit_l2(np.stack(kept))
    return s, _aligned_mean(U, np.ones(len(kept)), U[-1], 2)


def starts(fam, param, variant, n_chains, rng, n_kl, m):
    from bnmfzoo.inference.large_route import kl_nmf_start

    if variant == "prior":
        return [fam.draw_prior(rng) for _ in range(n_chains)]
    p = fam.tempered.problem
    if variant == "kl":
        return [kl_nmf_start(p, fam.draw_prior(rng), n_kl) for _ in range(n_chains)]
    cand = [kl_nmf_start(p, fam.draw_prior(rng), n_kl) for _ in range(m)]
    lj = np.array([_log_joint(param, s) for s in cand])
    return [cand[i] for i in np.argsort(-lj, kind="stable")[:n_chains]]


def search(fam, param, variant, seed, *, n_chains=8, n_sweeps=300, n_kl=200, m=32):
    rng = np.random.default_rng(seed)
    t0 = time.process_time()
    out = [_chain(fam, s, n_sweeps, rng) for s in starts(fam, param, variant, n_chains, rng,
                                                          n_kl, m)]
    cpu = time.process_time() - t0
    ends, means = zip(*out, strict=True)
    ll = np.array([fam.tempered.loglik(s) for s in ends])
    lj = np.array([_log_joint(param, s) for s in ends])
    search.last_ends = ends
    return np.stack(means), ll, lj, cpu


def main(argv=None):
    from bnmfzoo.diagnostics._modes.mode_clustering import matched_angles

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--rank", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--ref-starts", type=int, default=48)
    ap.add_argument("--ref-sweeps", type=int, default=1500)
    ap.add_argument("--cut", type=float, default=15.0)
    ap.add_argument("--variants", default="prior,kl:100,kl:300,best:16:200,best:32:200")
    ap.add_argument("--save", default=None, help="npz of every chain's mean, log joint, end")
    a = ap.parse_args(argv)
    saved = {"mean": [], "lj": [], "ll": [], "A": [], "W": [], "tag": []}
    fam, param = _setup(a.data, a.rank)
    t0 = time.process_time()
    U, ll, lj, _ = search(fam, param, "best", 10_000, n_chains=a.ref_starts,
                          n_sweeps=a.ref_sweeps, n_kl=300, m=a.ref_starts)
    b = int(np.argmax(lj))
    ref = U[b][None]
    d, _ = matched_angles(U, ref)
    print(f"reference: best of {a.ref_starts} KL starts x {a.ref_sweeps} sweeps "
          f"({time.process_time() - t0:.1f} CPU s): log joint {lj[b]:.1f}, log-likelihood "
          f"{ll[b]:.1f}; {int(np.sum(d[:, 0] <= a.cut))} of {a.ref_starts} chains within the "
          f"cut; chain log joints (sorted) {np.round(np.sort(lj)[::-1][:8], 1).tolist()}",
          flush=True)
    print("| variant | seeds reaching the reference | chains in it (mean of 8) | best end log "
          "joint (median, min) | CPU s per search (mean) |")
    print("|---|---|---|---|---|")
    for v in a.variants.split(","):
        parts = v.split(":")
        kw = ({} if parts[0] == "prior" else {"n_kl": int(parts[-1])} if parts[0] == "kl"
              else {"m": int(parts[1]), "n_kl": int(parts[-1])})
        hits, inside, best, cpus = [], [], [], []
        for seed in range(a.seeds):
            U, ll, lj, cpu = search(fam, param, parts[0], seed, **kw)
            d, _ = matched_angles(U, ref)
            n_in = int(np.sum(d[:, 0] <= a.cut))
            hits.append(n_in > 0)
            inside.append(n_in)
            best.append(lj.max())
            cpus.append(cpu)
            saved["mean"].append(U)
            saved["lj"].append(lj)
            saved["ll"].append(ll)
            saved["A"].append(np.stack([e["A"] for e in search.last_ends]))
            saved["W"].append(np.stack([e["W"] for e in search.last_ends]))
            saved["tag"] += [f"{v}/{seed}"] * len(lj)
            print(f"  {v} seed {seed}: {n_in} chains in the reference, best end log joint "
                  f"{lj.max():.1f} (log-likelihood {ll.max():.1f}), {cpu:.2f} CPU s", flush=True)
        print(f"| {v} | {sum(hits)} of {a.seeds} | {np.mean(inside):.2f} | "
              f"{np.median(best):.1f}, {np.min(best):.1f} | {np.mean(cpus):.2f} |", flush=True)
    if a.save:
        np.savez(a.save, ref=ref, **{k: (np.concatenate(v) if k != "tag" else np.array(v))
                                     for k, v in saved.items()})


if __name__ == "__main__":
    main()
