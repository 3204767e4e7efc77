"""Geweke (2004) successive-conditional check of the sigma ~ HalfNormal compound step.

Alternates ``X ~ p(X | A, W, sigma)`` (NumPy) with one step of the compound step on the
compiled-once harness of ``tests/_sigma_sbc.py`` (``ours``: pm.sample()'s GibbsNMF + GibbsNoiseSD;
``nuts``: GibbsNMF + NUTS on sigma). A correct kernel leaves the prior invariant, so the chain's
averages of indicator functions match exact prior probabilities; printed with
``z = (mean - exact) / (sd / sqrt(ESS))``. Run::

    nice -n 10 python -m benchmarks.calibration.sigma_geweke ours 40000

(J. Geweke 2004, "Getting it right: joint distribution tests of posterior simulators", JASA 99.)
"""
import sys
import time

from benchmarks._common import ROOT

sys.path.insert(0, str(ROOT / "tests"))
import _sigma_sbc as ss  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from bnmfzoo.diagnostics.calibration import ess_bulk_tail  # noqa: E402


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    which, n = argv[0], int(argv[1])
    seed = int(argv[2]) if len(argv) > 2 else 0
    if which == "nuts":
        import pymc as pm

        from bnmfzoo.inference import GibbsNMF

        ch = ss.Chains(steps=lambda m: [GibbsNMF([m["A"], m["W"], m["lam"]]),
                                        pm.NUTS([m["sigma"]])])
    else:
        ch = ss.Chains()
    print("steps:", ch.assignment or [type(m).__name__ for m in ch.methods])
    rng = np.random.default_rng(seed)
    A, W, lam, sigma, X = ss.simulate_prior(rng)
    ch.run(X, ch.start(A, W, lam, sigma), rng, tune=200 if which == "nuts" else 0,
           record=lambda s: s)
    point, out, t = ch.point, [], time.perf_counter()
    for _ in range(n):
        s = ch.state(point)
        X = s["A"] @ s["W"] + s["sigma"] * rng.normal(size=(ss.D, ss.N))
        X[~ss.MASK] = np.nan
        ch.set_data(X)
        for m in ch.methods:  # the Gibbs step's cached residual belongs to the old data
            if hasattr(m, "chain"):
                m.chain = None
        point, _ = ch.step.step(point)
        s = ch.state(point)
        out.append(np.r_[s["sigma"] < 0.5, s["lam"] < 1, s["A"].ravel() < 0.5,
                         s["W"].ravel() < 1, s["sigma"]])
    x = np.array(out, float).T
    p_half = stats.halfnorm.cdf(0.5)
    expect = np.r_[p_half, [stats.gamma.cdf(1, 2, scale=0.5)] * ss.R, [p_half] * (ss.D * ss.R),
                   [1 - (2 / 3) ** 2] * (ss.R * ss.N),  # P(W < 1) = 1 - E[exp(-lam)]
                   np.sqrt(2 / np.pi)]
    ess = ess_bulk_tail(x)[0]
    z = (x.mean(1) - expect) / (x.std(1) / np.sqrt(ess))
    names = (["P(sigma<.5)"] + [f"P(lam{k}<1)" for k in range(ss.R)]
             + [f"P(A{i}<.5)" for i in range(ss.D * ss.R)]
             + [f"P(W{i}<1)" for i in range(ss.R * ss.N)] + ["E sigma"])
    print(f"{which}: {n} steps, {time.perf_counter() - t:.0f} s; max |z| {np.abs(z).max():.2f}")
    for nm, m, e, zz, es in zip(names, x.mean(1), expect, z, ess):
        print(f"  {nm:12s} {m:.4f} vs {e:.4f}  z {zz:+.2f}  ess {es:.0f}")


if __name__ == "__main__":
    main()
