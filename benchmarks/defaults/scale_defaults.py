"""Scale-aware defaults, outliers and compact log-likelihoods (issue #34): before/after numbers.

Run from the project root (about 2 CPU minutes)::

    python -m benchmarks.defaults.scale_defaults            # everything
    python -m benchmarks.defaults.scale_defaults --part scale

Parts:

* ``scale``: 30 x 20 rank-3 data times 1e-8 ... 1e8; relative reconstruction error
  ``||X - mean(A W)|| / ||X||`` of ``BayesianNMF(n_components=3, random_state=0)`` (Gibbs and
  VB) with the pre-#34 defaults (:data:`bnmfzoo.models.gaussian.BROUWER2017`, passed
  explicitly) and with the new data-scaled defaults, beside scikit-learn's NMF.
* ``gdsc``: GDSC IC50 (705 x 139, 79,259 observed), rank 5, 10 % of the observed entries held
  out: training and test MSE of Gibbs (2 x 300 sweeps after 300) and VB, old against new
  defaults, at x1, x1e-3 and x1e3.
* ``outlier``: GDSC with one entry set to 1.37e131 (the value found in a real drug screen):
  the warning, and ``fit_vb``'s ``tau`` and mean of ``A @ W`` with the entry kept and masked.
* ``loglik``: the warning of a GDSC Gibbs run (2 x 500 draws) whose ``log_likelihood`` is
  skipped, and the size and CPU time of that group in float64, float32 and float32 thinned by
  5, with ``az.loo`` on the thinned one.
"""

import argparse
import time
import warnings

import numpy as np

from benchmarks import _common  # noqa: F401 - one BLAS thread, BNMFZOO_DATA


def _toy():
    rng = np.random.default_rng(0)
    X = rng.exponential(size=(30, 3)) @ rng.exponential(size=(3, 20))
    return np.abs(X + 0.05 * rng.standard_normal(X.shape))


def part_scale():
    from sklearn.decomposition import NMF

    from bnmfzoo import BayesianNMF
    from bnmfzoo.models.gaussian import BROUWER2017

    X0 = _toy()
    print("scale | method | old defaults | new defaults | sklearn NMF")
    for method in ("gibbs", "vb"):
        for c in (1e-8, 1e-4, 1.0, 1e4, 1e6, 1e8):
            X = c * X0
            errs = []
            for kw in (BROUWER2017, {}):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = BayesianNMF(n_components=3, random_state=0, method=method,
                                      model_kwargs=dict(kw)).fit(X)
                errs.append(est.reconstruction_err_ / np.linalg.norm(X))
            nmf = NMF(3, init="nndsvda", max_iter=1000, random_state=0)
            A = nmf.fit_transform(X)
            sk = np.linalg.norm(X - A @ nmf.components_) / np.linalg.norm(X)
            print(f"x{c:.0e} | {method} | {errs[0]:.4g} | {errs[1]:.4g} | {sk:.4g}", flush=True)


def _posterior_mean_product(dt):
    post = dt["posterior"]
    A = post["A"].stack(s=("chain", "draw")).transpose("s", ...).values
    W = post["W"].stack(s=("chain", "draw")).transpose("s", ...).values
    return np.einsum("sik,skj->ij", A, W) / A.shape[0]


def _gdsc():
    import bnmfzoo as bz

    X = bz.datasets.load_gdsc()
    train, test = bz.datasets.holdout_mask(X, 0.1, random_seed=0)
    return X, train, test


def part_gdsc():
    import pymc as pm

    import bnmfzoo as bz
    from bnmfzoo.inference import GibbsNMF, fit_vb
    from bnmfzoo.models.gaussian import BROUWER2017, scale_defaults

    X, train, test = _gdsc()
    Xtr = X.where(train)
    print("GDSC", X.shape, "observed", int(train.sum() + test.sum()), "test", int(test.sum()),
          "automatic:", scale_defaults(Xtr, 5))
    print("scale | defaults | method | train MSE | test MSE | E[tau] (x1 units) | CPU s")
    for c in (1.0, 1e-3, 1e3):
        for name, kw in (("old", BROUWER2017), ("new", {})):
            for method in ("gibbs", "vb"):
                t = time.process_time()
                model = bz.models.exponential_gaussian(Xtr * c, 5, **kw)
                if method == "gibbs":
                    with model:
                        dt = pm.sample(step=GibbsNMF(), draws=300, tune=300, chains=2,
                                       random_seed=0, progressbar=False,
                                       compute_convergence_checks=False)
                else:
                    dt = fit_vb(model, random_seed=0, n_draws=100, progressbar=False)
                pred = _posterior_mean_product(dt) / c
                tr, te = (np.mean((pred - X.values)[m] ** 2) for m in (train, test))
                tau = float(dt["posterior"]["tau"].mean()) * c**2
                print(f"x{c:g} | {name} | {method} | {tr:.1f} | {te:.1f} | {tau:.4g} | "
                      f"{time.process_time() - t:.1f}", flush=True)


def part_outlier():
    import bnmfzoo as bz
    from bnmfzoo.inference import fit_vb

    X, _, _ = _gdsc()
    obs = ~np.isnan(X.values)
    i, j = (int(v[0]) for v in np.nonzero(obs))
    Xo = X.copy()
    Xo[i, j] = 1.37e131
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = bz.models.exponential_gaussian(Xo, 5)
    shown = [str(w.message) for w in caught if "entr" in str(w.message)]
    print("warning:", shown[0][:400] if shown else "NONE")
    for name, data in (("kept", Xo), ("masked", Xo.where(Xo < 1e100))):
        m = model if name == "kept" else bz.models.exponential_gaussian(data, 5)
        dt = fit_vb(m, random_seed=0, n_draws=20, progressbar=False)
        pred = _posterior_mean_product(dt)
        other = obs.copy()
        other[i, j] = False
        mse = np.mean((pred - X.values)[other] ** 2)
        print(f"{name}: E[tau] = {float(dt['posterior']['tau'].mean()):.4g}, "
              f"mean of A @ W = {pred.mean():.4g} (data mean {np.nanmean(X.values):.4g}), "
              f"MSE on the other entries {mse:.4g}")


def part_loglik():
    import arviz_stats as azs

    import bnmfzoo as bz
    from bnmfzoo.inference import sample
    from bnmfzoo.inference.chains import _with_log_likelihood

    X, _, _ = _gdsc()
    model = bz.models.exponential_gaussian(X, 5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dt = sample(model, draws=500, tune=200, chains=2, random_seed=0, progressbar=False)
    print("auto, 2 x 500 draws: log_likelihood recorded:", "log_likelihood" in dt.children,
          [str(w.message)[:420] for w in caught if "log_likelihood" in str(w.message)])
    for mode, thin in ((True, 1), ("float32", 1), ("float32", 5)):
        one = dt.copy()
        t = time.process_time()
        _with_log_likelihood(one, model, mode, thin)
        cpu = time.process_time() - t
        ll = one["log_likelihood"]["X"]
        line = (f"log_likelihood={mode!r}, thin={thin}: {ll.nbytes / 1e6:.0f} MB "
                f"({dict(ll.sizes)}), CPU {cpu:.1f} s")
        if thin > 1:
            t = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                elpd = float(azs.loo(one).elpd)
            line += f"; az.loo CPU {time.process_time() - t:.1f} s, elpd {elpd:.1f}"
        print(line, flush=True)
        del one, ll


PARTS = {"scale": part_scale, "gdsc": part_gdsc, "outlier": part_outlier,
         "loglik": part_loglik}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=sorted(PARTS), action="append")
    args = parser.parse_args()
    for name in args.part or list(PARTS):
        print(f"== {name}")
        PARTS[name]()


if __name__ == "__main__":
    main()
