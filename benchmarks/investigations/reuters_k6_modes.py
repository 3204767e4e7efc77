"""Reuters at K = 6: where the chains of the count sweep disagree (diagnosis, not a benchmark).

``run`` samples :func:`bnmfzoo.models.poisson` on the Reuters word counts (395 x 4,258, K = 6)
with the default sweep ``GibbsPoisson()``, 4 chains, either all from the benchmark's common
KL-NMF start (``common``, as :mod:`benchmarks.speed.converged_counts`) or each from its own
KL-NMF solution (``random``: scikit-learn MU from random inits, seeds 100-103), and saves every
second draw of ``A`` and ``W`` (float32; the full draws of a 4 x 4,000-draw run take 3.6 GB).
``report`` prints, for a saved run: the library's alignment warning, the modes of
:func:`bnmfzoo.diagnostics.modes` (default cut and 8 / 5 degrees), the highest R-hat entries
after ``align``, the components' expected counts per chain, the angles between the chains'
mean topics, each chain's Poisson log-likelihood, the documents whose topic shares differ
between chains (with a 6-block trace of the worst), and R-hat over subsets of chains.
Results: ``docs/results/counts_dense.md`` section 9. Run from the project root::

    nice -n 10 python -m benchmarks.investigations.reuters_k6_modes run common 3000 1000 c.npz
    nice -n 10 python -m benchmarks.investigations.reuters_k6_modes report c.npz
"""

import sys
import time
import warnings

import numpy as np

import benchmarks  # noqa: F401 - environment defaults


def run(mode, draws, tune, out):
    import pymc as pm

    from benchmarks.speed.converged_counts import load, nmf_start
    from bnmfzoo.inference import GibbsPoisson
    from bnmfzoo.models import poisson

    X, K = load("reuters6")
    if mode == "common":
        A0, W0 = nmf_start(X, K)
        iv = [{"A": A0, "W": W0}] * 4
    else:
        from sklearn.decomposition import NMF

        iv = []
        for s in range(4):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = NMF(K, beta_loss="kullback-leibler", solver="mu", init="random",
                          max_iter=500, random_state=100 + s)
                A = est.fit_transform(X.astype(float))
            iv.append({"A": np.maximum(A, 1e-3), "W": np.maximum(est.components_, 1e-3)})
    with poisson(X, K):
        t = time.process_time()
        dt = pm.sample(draws=draws, tune=tune, chains=4, cores=1, random_seed=1,
                       progressbar=False, compute_convergence_checks=False, initvals=iv,
                       step=GibbsPoisson())
        cpu = time.process_time() - t
    post = dt["posterior"]
    np.savez(out, A=post["A"].values[:, ::2].astype(np.float32),
             W=post["W"].values[:, ::2].astype(np.float32), cpu=cpu)
    print(f"{out}: {cpu:.1f} CPU s, {1e3 * cpu / (4 * (draws + tune)):.2f} ms per draw")


def _tree(A, W):
    import xarray as xr

    return xr.DataTree.from_dict({"posterior": xr.Dataset({
        "A": (("chain", "draw", "row", "factor"), A),
        "W": (("chain", "draw", "factor", "col"), W)})})


def _angles(U, V):
    Un = U / np.linalg.norm(U, axis=-1, keepdims=True)
    Vn = V / np.linalg.norm(V, axis=-1, keepdims=True)
    return np.degrees(np.arccos(np.clip(Un @ Vn.T, -1, 1)))


def report(path):
    from scipy.optimize import linear_sum_assignment

    import bnmfzoo as bz
    from benchmarks.speed.converged_counts import load
    from bnmfzoo.diagnostics._convergence import rhat_ess_bulk
    from bnmfzoo.diagnostics._modes.mode_clustering import chains_by_mode

    f = np.load(path)
    A, W = f["A"].astype(float), f["W"].astype(float)
    C, S = A.shape[:2]
    print(f"{path}: {C} chains x {S} kept draws, sampling {float(f['cpu']):.1f} CPU s")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        al = bz.diagnostics.align(_tree(A, W))["posterior"]
    for r in rec:
        print("align warning:", r.message)
    for th in (15.0, 8.0, 5.0):
        m = bz.diagnostics.modes(_tree(A, W), threshold=th, warn=False)["modes"].to_dataset()
        print(f"modes (cut {th:g} deg): {m.sizes['mode']}, chains by mode {chains_by_mode(m)}, "
              f"angles {np.round(m['angle'].values, 1).tolist()}")
    Aa, Wa = al["A"].values, al["W"].values
    for v, arr in (("A", Aa), ("W", Wa)):
        r, e = rhat_ess_bulk(arr)
        top = np.unravel_index(np.argsort(-np.nan_to_num(r).ravel())[:6], r.shape)
        print(f"{v}: max R-hat {np.nanmax(r):.3f}, entries > 1.01: {(r > 1.01).sum()} of "
              f"{r.size}, min / median bulk ESS {np.nanmin(e):.0f} / {np.nanmedian(e):.0f}; "
              f"highest {list(zip(*[i.tolist() for i in top]))}")
    tot = Aa.sum(2) * Wa.sum(3)
    print("expected counts per component, chain means:\n", np.round(tot.mean(1)))
    T = Wa / Wa.sum(-1, keepdims=True)
    Tm = T.mean(1)
    for c in range(1, C):
        cost = _angles(Tm[0], Tm[c])
        i, j = linear_sum_assignment(cost)
        print(f"mean topics, chain 0 vs {c}: matched angles {np.round(cost[i, j], 1).tolist()}")
    X, _ = load("reuters6")
    X = X.tocoo()
    for c in range(C):
        ll = [float((X.data * np.log(np.einsum("ik,ki->i", A[c, s][X.row],
                                                   W[c, s][:, X.col]))).sum()
                    - A[c, s].sum(0) @ W[c, s].sum(1))
              for s in np.linspace(0, S - 1, 20).astype(int)]
        print(f"chain {c}: Poisson log-likelihood (20 draws) mean {np.mean(ll):.0f} sd "
              f"{np.std(ll):.0f}")
    share = Aa * Wa.sum(-1)[:, :, None, :]
    share = share / share.sum(-1, keepdims=True)
    m = share.mean(1)
    spread = (m.max(0) - m.min(0)).max(-1)
    worst = np.argsort(-spread)[:10]
    L = np.asarray(X.tocsr().sum(1)).ravel()
    print(f"documents whose chain-mean topic share differs by > 0.3: {(spread > 0.3).sum()}, "
          f"> 0.1: {(spread > 0.1).sum()} of {m.shape[1]}; worst {worst.tolist()} (spread "
          f"{np.round(spread[worst], 2).tolist()}, lengths {L[worst].astype(int).tolist()})")
    d = int(worst[0])
    k2 = np.argsort(-np.abs(m[:, d].max(0) - m[:, d].min(0)))[:2]
    print(f"document {d}: share of topics {k2.tolist()} per chain, 6 blocks of draws")
    for c in range(C):
        b = share[c, :, d][:, k2].reshape(6, S // 6, 2).mean(1)
        print(f"  chain {c}: " + " | ".join(f"{x:.2f} {y:.2f}" for x, y in b))
    subsets = [list(range(C))] + [[c for c in range(C) if c != o] for o in range(C)]
    for sub in subsets:
        al2 = bz.diagnostics.align(_tree(A[sub], W[sub]), warn=False)["posterior"]
        out = []
        for v in ("A", "W"):
            r, e = rhat_ess_bulk(al2[v].values)
            out.append(f"{v} max R-hat {np.nanmax(r):.3f} (> 1.01: {(r > 1.01).sum()}), "
                       f"min ESS {np.nanmin(e):.0f}")
        print(f"chains {sub}: " + "; ".join(out))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "run":
        run(argv[1], int(argv[2]), int(argv[3]), argv[4])
    elif argv and argv[0] == "report":
        report(argv[1])
    else:
        print(__doc__)


if __name__ == "__main__":
    main()
