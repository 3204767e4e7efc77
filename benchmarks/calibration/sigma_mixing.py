"""Why does the ``sigma ~ HalfNormal`` compound step (GibbsNMF + NUTS on sigma) mix slowly?

On the same simulated data sets (the prior of ``test_sbc_sigma_halfnormal_compound_step``,
``tests/_sigma_sbc.py``) this script measures the autocorrelation time ``n / ESS`` (smallest
bulk/tail ESS, the estimator ``sbc(thin="ess")`` thins by) of

* ``compound-t<T>``: the compound step ``pm.sample()`` built before GibbsNoiseSD was
  registered (GibbsNMF on A, W, lam; PyMC's NUTS on sigma), ``T`` tuning steps;
* ``nuts-given-AW``: that NUTS kernel alone on sigma's conditional, A, W, lam frozen at the last
  state of the compound chain (is one NUTS step a near-independent draw of the conditional?);
* ``exact-sigma``: GibbsNMF on A, W, lam, then an exact draw of sigma from its conditional given
  A, W (``tau = sigma^-2 ~ GIG(p = n/2 - 1/2, a = SSR, b = 1/s^2)``), in a hand-written loop:
  the best any sigma kernel can do inside this Gibbs scheme;
* ``gamma-tau``: GibbsNMF on the issue's ``tau ~ Gamma(1, 1)`` model (A, W, lam, tau), same data;
* ``pm.sample-now``: ``pm.sample()``'s assignment today (GibbsNMF + GibbsNoiseSD, which does
  the ``exact-sigma`` draw as a registered step method).

Printed per variant: median and max over data sets of the autocorrelation time of sigma (tau)
and of the worst tested label-invariant quantity, and the time per step. Run::

    nice -n 10 python -m benchmarks.calibration.sigma_mixing --datasets 8 --draws 4000
"""

import argparse
import sys
import time

import numpy as np

from benchmarks._common import ROOT

sys.path.insert(0, str(ROOT / "tests"))
import _sigma_sbc as ss  # noqa: E402

from bnmfzoo.diagnostics.calibration import ess_bulk_tail  # noqa: E402
from bnmfzoo.inference.kernels.gig import gig_draws  # noqa: E402


def _iat(draws):
    """n / ESS per quantity (smallest bulk/tail ESS over its scalars)."""
    out = {}
    for name, x in draws.items():
        x = np.asarray(x, float).reshape(len(x), -1).T
        bulk, tail = ess_bulk_tail(x)
        out[name] = x.shape[1] / np.minimum(bulk, tail).min()
    return out


def _collect(advance, n):
    draws = {}
    for _ in range(n):
        for k, v in advance().items():
            draws.setdefault(k, []).append(np.array(v, float))
    return {k: np.array(v) for k, v in draws.items()}


def exact_sigma_draw(A, W, X, rng, scale=ss.SIGMA_SCALE):
    """sigma from its conditional given A, W: tau = sigma^-2 ~ GIG(p, a, b) with p = (n-1)/2,
    a = SSR, b = 1/scale^2, i.e. tau = sqrt(b/a) * geninvgauss(p, sqrt(a b))."""
    res = (X - A @ W)[ss.MASK]
    n, a, b = res.size, float(res @ res), 1.0 / scale**2
    tau = np.sqrt(b / a) * gig_draws((n - 1) / 2, np.array([np.sqrt(a * b)]), rng)[0]
    return 1.0 / np.sqrt(tau)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", type=int, default=8)
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--burn", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    from bnmfzoo.inference import GibbsNMF

    def rec(s, sd="sigma"):
        sig = s["sigma"] if sd == "sigma" else 1 / np.sqrt(s["tau"])
        return ss.label_invariant(s["A"], s["W"], s["lam"], sig)

    import pymc as pm

    compound = ss.Chains("halfnormal", steps=lambda m: [GibbsNMF([m["A"], m["W"], m["lam"]]),
                                                        pm.NUTS([m["sigma"]])])
    default = ss.Chains("halfnormal")
    print("pm.sample's assignment:", default.assignment)
    gibbs_only = ss.Chains("halfnormal", steps=lambda m: [GibbsNMF([m["A"], m["W"], m["lam"]])])
    gamma = ss.Chains("gamma")
    print("tau ~ Gamma model:", gamma.assignment)
    rng = np.random.default_rng(a.seed)
    res = {}

    def note(name, iats, seconds):
        res.setdefault(name, []).append((iats["sigma"], max(iats.values()), seconds))

    for d in range(a.datasets):
        A, W, lam, sigma, X = ss.simulate_prior(rng)
        A0, W0, lam0, sigma0, _ = ss.simulate_prior(rng)  # independent start
        for tune in (100, 1000):
            t0 = time.perf_counter()
            adv = compound.run(X, compound.start(A0, W0, lam0, sigma0), rng.spawn(1)[0],
                               tune=tune, record=rec)
            draws = _collect(adv, a.draws)
            note(f"compound-t{tune}", _iat(draws), (time.perf_counter() - t0) / (a.draws + tune))
        # the tuned NUTS kernel alone on sigma | A, W, lam (frozen at the chain's last state)
        nuts = compound.methods[1]
        assert type(nuts).__name__ == "NUTS"
        t0 = time.perf_counter()
        sig_only = {"sigma": []}
        point = dict(compound.point)
        for _ in range(a.draws):
            point, _ = nuts.step(point)
            sig_only["sigma"].append(np.exp(point[compound.value_names["sigma"]]))
        note("nuts-given-AW", {"sigma": _iat({"sigma": np.array(sig_only["sigma"])})["sigma"]},
             (time.perf_counter() - t0) / a.draws)
        # GibbsNMF on A, W, lam + exact draw of sigma given A, W
        t0 = time.perf_counter()
        gibbs_only.run(X, gibbs_only.start(A0, W0, lam0, sigma0), rng.spawn(1)[0], tune=0,
                       record=lambda s: s)  # (sets the data and the Gibbs step's chain up)
        g = gibbs_only.methods[0]
        srng = rng.spawn(1)[0]
        box = {"point": gibbs_only.start(A0, W0, lam0, sigma0)}
        vn = gibbs_only.value_names

        def exact_step():
            p, _ = g.step(box["point"])
            s = gibbs_only.state(p)
            sig = exact_sigma_draw(s["A"], s["W"], X, srng)
            p = dict(p)
            p[vn["sigma"]] = np.log(np.asarray(sig))
            box["point"] = p
            s["sigma"] = sig
            return rec(s)

        for _ in range(a.burn):
            exact_step()
        draws = _collect(exact_step, a.draws)
        note("exact-sigma", _iat(draws), (time.perf_counter() - t0) / (a.draws + a.burn))
        # reference: the tau ~ Gamma(1, 1) model, GibbsNMF on everything
        t0 = time.perf_counter()
        adv = gamma.run(X, gamma.start(A0, W0, lam0, 1 / sigma0**2), rng.spawn(1)[0],
                        tune=a.burn, record=lambda s: rec(s, "tau"))
        draws = _collect(adv, a.draws)
        note("gamma-tau", _iat(draws), (time.perf_counter() - t0) / (a.draws + a.burn))
        t0 = time.perf_counter()
        adv = default.run(X, default.start(A0, W0, lam0, sigma0), rng.spawn(1)[0],
                          tune=a.burn, record=rec)
        draws = _collect(adv, a.draws)
        note("pm.sample-now", _iat(draws), (time.perf_counter() - t0) / (a.draws + a.burn))
        print(f"data set {d} (true sigma {sigma:.3f}): " + "; ".join(
            f"{k} {v[-1][0]:.1f}/{v[-1][1]:.1f}" for k, v in res.items()), flush=True)

    print(f"\nn / ESS over {a.datasets} data sets, {a.draws} draws each (sigma or tau | worst "
          "tested quantity): median, max; time per step")
    for k, v in res.items():
        v = np.array(v)
        print(f"  {k:15s} sigma {np.median(v[:, 0]):6.1f} (max {v[:, 0].max():6.1f}) | worst "
              f"{np.median(v[:, 1]):6.1f} (max {v[:, 1].max():6.1f}); "
              f"{1e3 * np.median(v[:, 2]):.2f} ms/step")


if __name__ == "__main__":
    main()
