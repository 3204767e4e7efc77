"""Cost of the unconverged-chains check, and whether the estimator's default budget converges.

``python -m benchmarks.investigations.convergence_check cost``: a 200 x 100 synthetic matrix,
rank 5, 500 + 500 draws, 2 chains; per fit the CPU seconds of the fit without the check, of the
check (``convergence_message``) and of arviz-stats' ``rhat`` + ``ess(method="bulk")`` on the same
aligned draws (the check before it was vectorized); medians over fits 1-3 (fit 0 compiles).

``python -m benchmarks.investigations.convergence_check budget DATA`` (``synth``, ``ccle``,
``breast``): ``BayesianNMF`` at four budgets, three seeds each; one JSON line per fit (warned,
max R-hat, min bulk ESS, CPU s), and the largest difference from arviz-stats on the aligned
chains of seed 0. Results: ``docs/results/gaussian.md``.
"""

import argparse
import json
import statistics
import time
import warnings

import numpy as np


def _capture():
    """Wrap ``convergence_message`` to keep the aligned draws it checks and its CPU time."""
    import bnmfzoo.diagnostics._modes.alignment as al

    seen, orig = {}, al.convergence_message

    def wrapped(post, fdims, **kw):
        t0 = time.process_time()
        out = orig(post, fdims, **kw)
        seen["cpu"], seen["post"] = time.process_time() - t0, post
        return out

    al.convergence_message = wrapped
    return seen


def _arviz(post, names):
    import arviz_stats as azs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (azs.rhat(post[names], sample_dims=["chain", "draw"]),
                azs.ess(post[names], sample_dims=["chain", "draw"], method="bulk"))


def cost(n_fits=4):
    from bnmfzoo import BayesianNMF

    rng = np.random.default_rng(0)
    X = rng.gamma(2.0, 1.0, (200, 5)) @ rng.gamma(2.0, 1.0, (5, 100))
    X = X + 0.5 * rng.standard_normal(X.shape)
    seen, rows = _capture(), []
    for rep in range(n_fits):
        t0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            BayesianNMF(n_components=5, draws=500, tune=500, chains=2, random_state=rep).fit(X)
        fit = time.process_time() - t0 - seen["cpu"]
        t0 = time.process_time()
        _arviz(seen["post"], ["A", "W"])
        old = time.process_time() - t0
        print(f"fit {rep}: fit without the check {fit:.2f} CPU s, check {seen['cpu']:.3f}, "
              f"arviz-stats {old:.3f}", flush=True)
        if rep:
            rows.append((fit, seen["cpu"], old))
    f, n, o = (statistics.median(c) for c in zip(*rows))
    print(f"median: fit {f:.2f} CPU s; check {n:.3f} ({n / f:.1%} of the fit); arviz-stats "
          f"{o:.2f} ({o / f:.0%}); {o / n:.0f}x")


def _data(name):
    from bnmfzoo.datasets import load_ccle, load_sbs96

    if name == "ccle":
        return np.asarray(getattr(load_ccle(), "values", load_ccle()), float), {}
    if name == "breast":
        X = load_sbs96("breast")
        return np.asarray(getattr(X, "values", X), float), {"beta_loss": "kullback-leibler"}
    rng = np.random.default_rng(7)
    X = rng.gamma(2.0, 1.0, (100, 3)) @ rng.gamma(2.0, 1.0, (3, 60))
    return X + 0.5 * rng.standard_normal(X.shape), {}


def budget(name, budgets=((200, 100), (500, 500), (1000, 1000), (2000, 1000)), seeds=3):
    from bnmfzoo import BayesianNMF
    from bnmfzoo.diagnostics._convergence import rhat_ess_bulk

    X, kw = _data(name)
    seen, diff = _capture(), [0.0, 0.0]
    for draws, tune in budgets:
        for seed in range(seeds):
            t0 = time.process_time()
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                BayesianNMF(n_components=3, draws=draws, tune=tune, chains=2,
                            random_state=seed, **kw).fit(X)
            cpu = time.process_time() - t0
            post = seen["post"]
            r, e = zip(*(rhat_ess_bulk(post[v].values) for v in ("A", "W")))
            if seed == 0:
                rh, es = _arviz(post, ["A", "W"])
                for v, rv, ev in zip(("A", "W"), r, e):
                    diff[0] = max(diff[0], float(np.nanmax(np.abs(rh[v].values - rv))))
                    diff[1] = max(diff[1], float(np.nanmax(np.abs(es[v].values - ev))))
            print(json.dumps({
                "data": name, "draws": draws, "tune": tune, "seed": seed,
                "warned": any("after alignment" in str(w.message) for w in rec),
                "max_rhat": round(float(max(np.nanmax(v) for v in r)), 4),
                "min_ess": round(float(min(np.nanmin(v) for v in e)), 1),
                "fit_cpu": round(cpu, 2), "check_cpu": round(seen["cpu"], 3)}), flush=True)
    print(json.dumps({"data": name, "arviz_max_abs_diff_rhat": diff[0],
                      "arviz_max_abs_diff_ess": diff[1]}))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("study", choices=("cost", "budget"))
    p.add_argument("data", nargs="?", default="synth", choices=("synth", "ccle", "breast"))
    args = p.parse_args(argv)
    cost() if args.study == "cost" else budget(args.data)


if __name__ == "__main__":
    main()
