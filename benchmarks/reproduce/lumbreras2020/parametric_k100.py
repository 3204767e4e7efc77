"""Where the parametric Beta-Dir model with K = 100 puts its posterior mass (parliament data).

The paper's K = 100 runs use the truncated nonparametric prior (``gamma_k = 1 / K``:
``beta_dir(V, truncation=100)``). ``beta_dir(V, rank=100)`` is a different model: a
Dirichlet(1, ..., 1) prior on each row's 100 weights, i.e. 100 prior pseudo-counts against the
130 votes of a row. Its fits sit at a "spread" state (about half of the components active, rows'
weights near uniform, predictions near the column means, NLL about 10,390 against 4,900 for the
nonparametric fit). This script tests whether that state is the model's posterior or a place
where the collapsed sampler is stuck, with three pieces of evidence:

1. collapsed Gibbs on the parametric model started **at the nonparametric fit's good state**
   (its assignments Z, NLL about 7,100 under the parametric prior's conditional means): does the
   chain stay there or go to the spread state, and does it ever come back over long runs?
2. the same from the CVB0 start (the library's default start), for several seeds and long runs;
3. an independent sampler: PyMC's NUTS on the uncollapsed model ``beta_dir(V, rank=100)`` (A and
   W explicit, no shared code with the collapsed sampler), started at the good state's
   conditional means.

Measured (Nov 2026, ``python -m benchmarks.reproduce.lumbreras2020.parametric_k100``, 5 min of
CPU): the good states (nonparametric NLL 4,891-5,055, 6-7 active components) score NLL
7,084-7,174 and log p(V, Z) -30,600 to -30,850 under the parametric prior. From there the
collapsed chains are at NLL 10,387-10,399 by the first check (sweep 1,250; sweep 250 in a
2,000-sweep run), the same level as from the CVB0 start, and over 4 seeds x 2 starts x 10,000
sweeps no chain went below NLL 10,381. NUTS on the uncollapsed model, started at the good state's
conditional means (NLL 5,298), gave draws with NLL 10,364-10,498 after its 100 tuning steps and
a posterior-mean NLL of 10,388 (no divergences). The log joint ``log p(V, Z)`` *falls* from about
-30,700 at the good state to about -86,000 in the spread state: the spread state wins by the
number of assignments it covers, not by the probability of any one of them. Conclusion: the
spread state is the posterior of the parametric K = 100 model, for two samplers that share no
code; the model, not the sampler, is the wrong choice for the paper's experiment (use
``truncation=100``).

Run: ``python -m benchmarks.reproduce.lumbreras2020.parametric_k100 [--quick]`` (5 min of CPU,
of which NUTS 2; ``--quick``: 2,000 sweeps, 2 seeds, NUTS 50 + 50).
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)
from bnmfzoo.datasets import load_nbmf
from bnmfzoo.inference.binary._core import BetaDirChain, bernoulli_nll, observed_entries
from bnmfzoo.inference.binary.collapsed_gibbs import cvb0_start
from bnmfzoo.models import beta_dir

K = 100


def _nll(chain, V, mask):
    A, W = chain.conditional_means()
    return bernoulli_nll(V, mask, A @ W)


def _active(chain):
    return int(((chain.L.sum(0) / chain.L.sum()) >= 0.5 / chain.K).sum())


def _run(chain, sweeps, rng, V, mask, label, every):
    """Sweep, printing NLL / log joint / active components; returns the NLL trajectory."""
    nlls = []
    for s in range(1, sweeps + 1):
        chain.sweep(rng)
        if s % every == 0:
            nlls.append(_nll(chain, V, mask))
            print(f"  {label:<34} sweep {s:6d}  NLL {nlls[-1]:8.0f}  log p(V,Z) "
                  f"{chain.log_joint():9.0f}  active {_active(chain):3d}", flush=True)
    return np.array(nlls)


def good_state(V, mask, rng, sweeps):
    """A nonparametric (truncation=100) chain after ``sweeps`` sweeps from the CVB0 start."""
    rows, cols, v = observed_entries(V, mask)
    ones = np.ones(K)
    chain = BetaDirChain(rows, cols, v, *V.shape, ones / K, ones, ones, rng)
    cvb0_start(chain, rng)
    for _ in range(sweeps):
        chain.sweep(rng)
    return chain


def collapsed(V, mask, seeds, sweeps):
    rows, cols, v = observed_entries(V, mask)
    ones = np.ones(K)
    every = max(sweeps // 8, 1)
    worst = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        good = good_state(V, mask, rng, 1000)
        print(f"[seed {seed}] nonparametric good state: NLL {_nll(good, V, mask):.0f}, "
              f"active {_active(good)}")
        par = BetaDirChain(rows, cols, v, *V.shape, ones, ones, ones, rng, z=good.z.copy())
        print(f"[seed {seed}] same Z under the parametric prior: NLL {_nll(par, V, mask):.0f}, "
              f"log p(V,Z) {par.log_joint():.0f}")
        a = _run(par, sweeps, rng, V, mask, "parametric, from the good state", every)
        par2 = BetaDirChain(rows, cols, v, *V.shape, ones, ones, ones, rng)
        cvb0_start(par2, rng)
        print(f"[seed {seed}] parametric CVB0 start: NLL {_nll(par2, V, mask):.0f}")
        b = _run(par2, sweeps, rng, V, mask, "parametric, from CVB0", every)
        worst.append(min(a.min(), b.min()))
    return worst


def nuts(V, mask, X, tune, draws):
    import pymc as pm

    good = good_state(V, mask, np.random.default_rng(0), 1000)
    A0, W0 = good.conditional_means()
    A0 = (A0 + 1e-3) / (A0 + 1e-3).sum(axis=1, keepdims=True)  # interior of the simplex
    W0 = np.clip(W0, 1e-3, 1 - 1e-3)
    print(f"NUTS start (good state's conditional means): NLL {bernoulli_nll(V, mask, A0 @ W0):.0f}")
    t = time.perf_counter()
    from bnmfzoo.inference import pymc_default_steps

    # NUTS on the uncollapsed model: PyMC's own choice, not a bnmfzoo step it may prefer
    with beta_dir(X, rank=K), pymc_default_steps():
        idata = pm.sample(tune=tune, draws=draws, chains=1, initvals={"A": A0, "W": W0},
                          random_seed=1, progressbar=False, compute_convergence_checks=False)
    P = np.einsum("sdk,skn->sdn", idata["posterior"]["A"].values[0],
                  idata["posterior"]["W"].values[0])
    per_draw = [bernoulli_nll(V, mask, p) for p in P]
    print(f"NUTS {tune} + {draws} steps, {time.perf_counter() - t:.0f} s: NLL of the draws "
          f"{min(per_draw):.0f}-{max(per_draw):.0f}, of the posterior mean "
          f"{bernoulli_nll(V, mask, P.mean(axis=0)):.0f}, divergences "
          f"{int(idata['sample_stats']['diverging'].values.sum())}")
    return bernoulli_nll(V, mask, P.mean(axis=0))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    X = load_nbmf("parliament")
    V = X.values
    mask = ~np.isnan(V)
    seeds, sweeps, tune, draws = ((0, 1), 2000, 50, 50) if args.quick else \
        ((0, 1, 2, 3), 10_000, 100, 100)
    print(f"== parliament {V.shape}, beta_dir(V, rank={K}) (parametric, gamma_k = 1)")
    worst = collapsed(V, mask, seeds, sweeps)
    nll_nuts = nuts(V, mask, X, tune, draws)
    print(f"\nlowest NLL reached by any parametric collapsed chain: {min(worst):.0f} "
          f"(nonparametric fits: about 4,900; paper 4,863)")
    print(f"NUTS (independent sampler) posterior-mean NLL: {nll_nuts:.0f}")


if __name__ == "__main__":
    main()
