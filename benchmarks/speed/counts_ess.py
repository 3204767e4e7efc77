"""ESS per CPU second: GibbsPoisson against PyMC's NUTS on a Poisson NMF model NUTS can finish.

Model: :func:`bnmfzoo.models.poisson` (Gamma(1, 1) priors) on simulated counts (``--problem
synthetic``, default 30 x 20, K = 3: ``X ~ Poisson(A W)``, ``A ~ Gamma(1, 1)``, ``W ~ Gamma(1,
1/2)``) or on the 21 breast-cancer SBS96 catalogues (``--problem sbs96``, 21 x 96, 183,916
mutations). Both samplers run through plain ``pm.sample`` (2 chains, sequentially,
``cores=1``): ours is the step ``pm.sample`` assigns by itself (``GibbsPoisson``, with its
default ``sweeps_per_draw`` unless ``--sweeps`` is given), NUTS with ``nuts_sampler="pymc"``
and our steps taken out of PyMC's list (``pymc_default_steps``). CPU seconds of each
``pm.sample`` call, PyTensor compilation included (numba's kernels are loaded from their
on-disk cache once before timing). ``--w-mean 0.05`` gives sparse low counts. ``--likelihood
nb2``: PyMC's ``NegativeBinomial(mu=A @ W, alpha=alpha)`` written by hand (``alpha ~ Gamma(2,
1)``) on synthetic NB2 counts with ``alpha = 2``; ours is then the NB2 sweep of
``bnmfzoo/inference/counts/sweep.py``.

ESS (bulk, ArviZ) of

* 4 cells of ``A @ W`` (invariant to the factors' labels and scales), and
* 4 raw factor entries: ``W[k, n]`` at the first two normalized entries below and, for the
  same components, ``A[d, k]`` at the row with the largest mean (these carry the scale that the
  priors alone pin down, the direction NUTS finds hardest), and
* 4 normalized factor entries ``W[k, n] / sum_n W[k, n]`` (the signatures / topics users read:
  the largest entry of each of the first components in the Gibbs posterior mean, and one
  middle entry); each chain's components are matched to the first Gibbs chain's by the cosine
  of their mean normalized rows (Hungarian), as label switching between chains is the rule.

Both samplers start chain c at the same prior draw (``initvals``; NUTS jitters it as usual);
the max R-hat of each group is printed: where it is far above 1 the chains sit in
different modes and the ESS measures their disagreement, not the mixing within a mode. The
ratio printed is of the median ESS per CPU second (target >= 100 in issue #33).
``--loop`` adds the numeric kernel without ``pm.sample``
(:func:`bnmfzoo.inference.counts.gibbs._compiled.gibbs_sweeps`, same sweeps per draw).

Run: ``python -m benchmarks.speed.counts_ess`` (``--rows 100 --cols 80 --rank 4``,
``--problem sbs96 --rank 4``; the sparse models where the ratio passes 100:
``--rows 400 --cols 600 --rank 2 --w-mean 0.02 --nuts-draws 500``, NUTS ~300-850 CPU s;
measured numbers in ``benchmarks/RESULTS.md``, count section).
"""

import argparse
import time

import numpy as np
import pymc as pm
from scipy.optimize import linear_sum_assignment

import bnmfzoo as bz
from benchmarks._common import Clock  # noqa: F401 - one BLAS thread
from bnmfzoo.inference import pymc_default_steps


def _ess(x):
    import arviz_stats as azs

    return float(azs.ess(np.asarray(x, float), method="bulk"))


def _normalized(W):
    """(chain, draw, K, N) -> rows divided by their sums."""
    return W / W.sum(axis=-1, keepdims=True)


def _permutations(Wn, ref):
    """Per chain, the component order that best matches ``ref`` (K x N mean normalized rows)."""
    perms = []
    for c in range(Wn.shape[0]):
        m = Wn[c].mean(axis=0)
        cos = (m / np.linalg.norm(m, axis=1, keepdims=True)) @ (
            ref / np.linalg.norm(ref, axis=1, keepdims=True)).T
        rows, cols = linear_sum_assignment(-cos)
        perm = np.empty(len(rows), int)
        perm[cols] = rows  # reference component j <- chain's component perm[j]
        perms.append(perm)
    return perms


def summarize(A, W, cells, entries, ref, rows):
    """ESS of the A @ W ``cells``, of the normalized ``entries`` (k, n) of W, and of the raw
    factor entries ``W[k, n]`` and ``A[n_k, k]`` (``n_k``: the row with the largest mean
    ``A[:, k]`` in the first Gibbs chain, ``rows[k]``); max R-hat of each group."""
    import arviz_stats as azs

    perms = _permutations(_normalized(W), ref)
    A = np.stack([A[c][:, :, p] for c, p in enumerate(perms)])
    W = np.stack([W[c][:, p, :] for c, p in enumerate(perms)])
    Wn = _normalized(W)
    # only the cells asked for: the whole (chain, draw, D, N) product would need GBs
    groups = [[np.einsum("cdk,cdk->cd", A[:, :, i, :], W[:, :, :, j]) for i, j in cells],
              [Wn[:, :, k, n] for k, n in entries],
              [W[:, :, k, n] for k, n in entries[:2]]
              + [A[:, :, rows[k], k] for k, _ in entries[:2]]]
    ess = [np.array([_ess(x) for x in g]) for g in groups]
    rhat = tuple(max(float(azs.rhat(np.asarray(x, float))) for x in g) for g in groups)
    return *ess, rhat


def _data(args):
    if args.problem == "sbs96":
        X = np.asarray(bz.datasets.load_sbs96("breast").values)
        return np.rint(X).astype(np.int64)
    rng = np.random.default_rng(args.seed)
    D, N, K = args.rows, args.cols, args.rank
    mu = rng.gamma(1.0, 1.0, (D, K)) @ rng.gamma(1.0, args.w_mean, (K, N))
    if args.likelihood == "nb2":  # NB2 with alpha = 2: variance mu + mu^2 / 2
        return rng.negative_binomial(2.0, 2.0 / (2.0 + mu))
    if args.likelihood == "nb":  # n = alpha mu with alpha = 2: variance 1.5 mu
        return rng.negative_binomial(2.0 * mu, 2.0 / 3.0)
    return rng.poisson(mu)


def _model(X, K, likelihood):
    """``bz.models.poisson``, ``bz.models.negative_binomial`` (``alpha ~ Gamma(2, 1)``), or
    PyMC's own NB (NB2) written by hand with the same priors."""
    if likelihood == "poisson":
        return bz.models.poisson(X, K)
    if likelihood == "nb":
        return bz.models.negative_binomial(X, K, alpha_prior=(2.0, 1.0))
    D, N = X.shape
    with pm.Model() as model:
        A = pm.Gamma("A", 1.0, 1.0, shape=(D, K))
        W = pm.Gamma("W", 1.0, 1.0, shape=(K, N))
        pm.NegativeBinomial("X", mu=A @ W, alpha=pm.Gamma("alpha", 2.0, 1.0), observed=X)
    return model


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problem", choices=("synthetic", "sbs96"), default="synthetic")
    p.add_argument("--rows", type=int, default=30)
    p.add_argument("--cols", type=int, default=20)
    p.add_argument("--rank", type=int, default=3)
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic data")
    p.add_argument("--w-mean", type=float, default=2.0,
                   help="prior mean of the simulated W entries (small: sparse counts)")
    p.add_argument("--draws", type=int, default=2000)
    p.add_argument("--nuts-draws", type=int, default=None, help="default: --draws")
    p.add_argument("--sweeps", type=int, default=None,
                   help="GibbsPoisson sweeps_per_draw (default: the step's own choice)")
    p.add_argument("--loop", action="store_true", help="also time the kernel without pm.sample")
    p.add_argument("--skip-nuts", action="store_true")
    p.add_argument("--likelihood", choices=("poisson", "nb", "nb2"), default="poisson",
                   help="nb: bz.models.negative_binomial (n = alpha mu), nb2: "
                        "pm.NegativeBinomial(mu=A @ W, alpha=alpha); alpha ~ Gamma(2, 1), data "
                        "drawn with alpha = 2")
    args = p.parse_args(argv)
    if args.loop and args.likelihood != "poisson":
        p.error("--loop times the compiled Poisson sweeps only")
    X = _data(args)
    D, N = X.shape
    K = args.rank
    model = _model(X, K, args.likelihood)
    cells = [(0, 0), (D // 2, N // 2), (D - 1, N - 1), (1, N - 2)]
    res = {}
    with model:
        step = bz.inference.GibbsPoisson(
            **({} if args.sweeps is None else {"sweeps_per_draw": args.sweeps}))
        print(f"{args.problem} {args.likelihood} {D} x {N}, K = {K}, {int(X.sum())} counts, "
              f"GibbsPoisson sweeps_per_draw = {step.sweeps_per_draw}")
        # NB2: pm.sample() alone gives NUTS (bnmfzoo.inference._assignment), so ours is passed
        kw = {} if args.sweeps is None and args.likelihood != "nb2" else {"step": step}
        # both samplers start each chain at the same prior draw (dispersed starts)
        rng = np.random.default_rng(5)
        kw["initvals"] = [{"A": rng.gamma(1.0, 1.0, (D, K)), "W": rng.gamma(1.0, 1.0, (K, N))}
                          for _ in range(2)]
        # numba kernels load from (or fill) their on-disk cache once per install: not timed
        step.draw_state(step._state_from_point(model.initial_point()))
        t0 = time.process_time()
        g = pm.sample(draws=args.draws, tune=500, chains=2, cores=1, random_seed=1,
                      progressbar=False, compute_convergence_checks=False, **kw)
        cpu = time.process_time() - t0
        A, W = g.posterior["A"].values, g.posterior["W"].values
        ref = _normalized(W)[0].mean(axis=0)
        order = np.argsort(-ref.max(axis=1))
        entries = [(int(k), int(np.argmax(ref[k]))) for k in order[:3]]
        entries.append((int(order[0]), N // 2))
        rows = np.argmax(A[0].mean(axis=0), axis=0)
        res["gibbs"] = (cpu, *summarize(A, W, cells, entries, ref, rows))
        if not args.skip_nuts:
            with pymc_default_steps():
                t0 = time.process_time()
                n = pm.sample(draws=args.nuts_draws or args.draws, tune=1000, chains=2,
                              cores=1, random_seed=2, nuts_sampler="pymc", progressbar=False,
                              compute_convergence_checks=False, initvals=kw["initvals"])
                cpu = time.process_time() - t0
            res["nuts"] = (cpu, *summarize(n.posterior["A"].values, n.posterior["W"].values,
                                           cells, entries, ref, rows))
    if args.loop:
        from bnmfzoo.inference.counts._problem import counts_spec
        from bnmfzoo.inference.counts.gibbs._compiled import gibbs_sweeps
        from bnmfzoo.inference.counts.sweep import initial_state

        _, prob = counts_spec(model, method="benchmark")
        rng = np.random.default_rng(3)
        t0 = time.process_time()
        As, Ws = [], []
        for c in range(2):
            s = initial_state(prob, rng)
            s.update(kw["initvals"][c])
            s = gibbs_sweeps(prob, s, rng, 500 * step.sweeps_per_draw)
            a, w = [], []
            for _ in range(args.draws):
                s = gibbs_sweeps(prob, s, rng, step.sweeps_per_draw)
                a.append(s["A"])
                w.append(s["W"])
            As.append(a)
            Ws.append(w)
        cpu = time.process_time() - t0
        res["loop"] = (cpu, *summarize(np.array(As), np.array(Ws), cells, entries, ref, rows))
    print(f"A@W cells {cells}; normalized entries (k, n) of W {entries}")
    groups = ("A@W", "normalized", "raw W, A")
    for name, (cpu, *ess, rhat) in res.items():
        print(f"{name:6s}: {cpu:7.1f} CPU s")
        for g, e, r in zip(groups, ess, rhat):
            print(f"    {g:10s}: max R-hat {r:.3f}; ESS {np.round(e).astype(int).tolist()}; "
                  f"ESS/s {np.round(e / cpu, 1).tolist()}")
    if "nuts" in res:
        for name in [n for n in res if n != "nuts"]:
            r = [np.median(res[name][i] / res[name][0]) / np.median(res["nuts"][i] /
                                                                    res["nuts"][0])
                 for i in (1, 2, 3)]
            print(f"ratio of median ESS/s, {name} / NUTS: A@W {r[0]:.1f}, normalized entries "
                  f"{r[1]:.1f}, raw factor entries {r[2]:.1f} (target >= 100; only where "
                  "both samplers' R-hat is near 1)")


if __name__ == "__main__":
    main()
