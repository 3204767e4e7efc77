"""Why does the compressive prior at ``c = 1 / N`` find 5-7 signatures on ``flat_nb`` (true 4)?

Run with ``nice -n 10 .venv/bin/python -m benchmarks.investigations.flat_nb_split
[--seeds 100 101] [--variants field dense poisson] [--sweeps 2000 1000] [--strength unit]
[--init kl] [--alpha 0.5]``.

The calibration's cohort (:func:`bnmfzoo.datasets.signature_cohorts.signature_cohort`,
``flat``, 100 genomes, burden median 2,000, negative binomial ``phi = 20``) is given to
:func:`bnmfzoo.signatures.compressive.compressive_rank_posterior` with the calibration's
settings (NB, 4 chains, ``--sweeps`` burn-in and kept sweeps, thin 5). Variants of the same
cohort (same seed, same signatures, same noise law), each changing one thing:

* ``field``: the calibration's cohort as drawn (sparse exposures: each signature is absent from
  5-65 % of the genomes; log-normal burdens and weights);
* ``dense``: exposures redrawn from the model's own prior, ``V_kn ~ Gamma(1, 1 / m_k)`` with
  ``m_k`` the field cohort's mean exposure of signature ``k`` (every genome uses every
  signature), then the same per-cell Gamma-Poisson noise: the model is then exactly right;
* ``poisson``: the field cohort's exposures with Poisson counts (the ``flat`` design);
* ``sparse_gamma``: the field cohort's on/off pattern with ``Gamma(1)`` exposures where on.

For each run it prints the posterior over K and the R-hat of the active counts, ``phi``'s
median and interval (generator: 20), the draws per chain at K = 2..8, and for the extracted
signatures at the most probable K (posterior mean over the aligned draws): the cosine to the
closest true signature, the fraction of all mutations it carries, the number of genomes holding
90 % of its exposure, the share of its largest genome, and the correlation of its exposures with
those of another signature matching the same truth. ``--init prior`` starts the chains from the
prior (every signature compressed), ``--alpha`` sets the signatures' Dirichlet parameter.

Found (seed 100, ``docs/results/signatures_calibration.md``): the generator's noise is the
model's (per-cell Gamma-Poisson, ``phi`` 20.6 against 20); the extra signatures are weak
near-copies of SBS5/SBS3 spread over most genomes; exposures drawn from the model's own prior
overshoot more, not less; with 8,000 + 8,000 sweeps ``P(4) = 0.998``. The overcount is the
burn-in: at ``c = 1 / N`` the extra signatures are compressed over about 4,000-5,000 sweeps.
"""

import argparse
import time
import warnings

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)
from bnmfzoo.datasets.signature_cohorts import signature_cohort
from bnmfzoo.signatures.assignment import align_draws, normalize_draws
from bnmfzoo.signatures.compressive import compressive_rank_posterior


def variant(name, seed, genomes=100, burden=2000.0, phi=20.0):
    c = signature_cohort("flat", n_genomes=genomes, burden_median=burden, overdispersion=phi,
                         random_seed=seed)
    S = c.signatures.values
    E = c.exposures.values.copy()
    rng = np.random.default_rng(10_000 + seed)
    if name == "field":
        return c.counts.values, S, E
    if name == "dense":
        E = rng.gamma(1.0, 1.0, E.shape) * E.mean(axis=0)
    elif name == "sparse_gamma":
        on = E > 0
        E = rng.gamma(1.0, 1.0, E.shape) * (E.sum(0) / np.maximum(on.sum(0), 1)) * on
    elif name != "poisson":
        raise ValueError(f"unknown variant {name!r}")
    mu = E @ S
    rate = mu if name == "poisson" else rng.gamma(phi, mu / phi)
    return rng.poisson(rate).astype(float), S, E


def describe(X, S, table):
    T_draws, V_draws = table.attrs["draws"]
    sig, expo = normalize_draws(T_draws, V_draws)
    sig, expo, _ = align_draws(sig, expo)
    W, H = sig.mean(axis=0), expo.mean(axis=0).T  # (K, D), (K, N)
    cos = (W / np.linalg.norm(W, axis=1, keepdims=True)) @ (
        S / np.linalg.norm(S, axis=1, keepdims=True)).T
    best = cos.argmax(axis=1)
    names = ["SBS5", "SBS1", "SBS3", "SBS40a"]
    lines = []
    for k in range(len(W)):
        h = np.sort(H[k])[::-1]
        n90 = int(np.searchsorted(np.cumsum(h) / h.sum(), 0.9) + 1)
        twins = [j for j in range(len(W)) if j != k and best[j] == best[k]]
        rho = (f" corr with twin {np.corrcoef(H[k], H[twins[0]])[0, 1]:+.2f}" if twins else "")
        lines.append(f"    sig {k}: {names[best[k]]} cos {cos[k, best[k]]:.3f}, share "
                     f"{H[k].sum() / X.sum():.3f}, 90% in {n90} genomes, top genome "
                     f"{h[0] / h.sum():.2f}{rho}")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[100, 101])
    p.add_argument("--variants", nargs="+", default=["field", "dense", "poisson"])
    p.add_argument("--sweeps", type=int, nargs=2, default=[2000, 1000])
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--strength", default="unit")
    p.add_argument("--a", type=float, default=1.0)
    p.add_argument("--init", default="kl", choices=("kl", "prior"))
    p.add_argument("--alpha", type=float, default=0.5, help="Dirichlet parameter of T")
    a = p.parse_args(argv)
    strength = a.strength if a.strength in ("unit", "none") else float(a.strength)
    strength = None if strength == "none" else strength
    for seed in a.seeds:
        for name in a.variants:
            X, S, E = variant(name, seed)
            t0 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table = compressive_rank_posterior(
                    X, range(2, 7), random_seed=seed, n_burn=a.sweeps[0], n_keep=a.sweeps[1],
                    thin=5, likelihood="nb", strength=strength, a=a.a, n_chains=a.chains,
                    init=a.init, alpha=a.alpha)
            probs = {int(r): round(float(p), 3) for r, p in zip(table["rank"],
                                                                 table["probability"])
                     if np.isfinite(p)}
            phi = table.attrs["phi"]
            chains = [np.bincount(c, minlength=9)[2:9].tolist()
                      for c in table.attrs["counts"]]
            print(f"seed {seed} {name}: P(K) {probs}; phi {np.median(phi):.1f} "
                  f"({np.quantile(phi, 0.05):.1f}-{np.quantile(phi, 0.95):.1f}); "
                  f"zeros in E {np.mean(E == 0):.2f}; R-hat of K {table.attrs['rhat']:.2f}; "
                  f"CPU {time.process_time() - t0:.0f} s",
                  flush=True)
            print(f"    draws per chain at K = 2..8: {chains}", flush=True)
            print("\n".join(describe(X, S, table)), flush=True)
            T_draws, V_draws = table.attrs["draws"]
            carried = np.sort(V_draws.sum(axis=2) * T_draws.sum(axis=1), axis=1) / X.sum()
            print("    mutations carried by the smallest active signatures, median over draws: "
                  + ", ".join(f"{v:.4f}" for v in np.median(carried, axis=0)[:4]), flush=True)


if __name__ == "__main__":
    main()
