"""Do the fit chains of a leaking mode settle if they run longer? The faces' light modes.

Run with ``python -m benchmarks.investigations.leaking_fit_chains FILE RANK [--seeds 0 1 ...]
[--extend 3]``.

The reference check's fit chains (4 chains x 500 draws, thin 2, 50 burn-in sweeps per mode,
as ``bnmfzoo masses`` runs them) start from the modes that plain chains from prior draws find
(:func:`bnmfzoo.inference.mode_bridge.prior_chain_modes`, 16 chains of 300 sweeps, every
chain's mode new). Per seed the script prints the basin rule's share of each mode's draws that
left it (:func:`bnmfzoo.inference.reference_path.fit_chains_and_basins`), the pairs it joined,
and the same after the leaking modes' chains ran ``--extend`` times their 500 draws more (the
rule re-run over the whole chains; the logs of section 42 say 1,500 and 5,000 more draws, i.e.
``--extend 3`` and ``10``). ``docs/results/masses_copula_reference_3.md`` section 42.
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)


def main(argv=None):
    from bnmfzoo.inference.mode_bridge import prior_chain_modes
    from bnmfzoo.inference.reference_path import fit_chains_and_basins, reference_adapter
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.models import exponential_gaussian

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data")
    p.add_argument("rank", type=int)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    p.add_argument("--cut", type=float, default=15.0)
    p.add_argument("--extend", type=int, default=10, help="times the 500 draws")
    a = p.parse_args(argv)
    X = np.load(a.data) if a.data.endswith(".npy") else np.loadtxt(a.data)
    family = family_of_model(exponential_gaussian(X, a.rank))
    adapter = reference_adapter(family)
    for seed in a.seeds:
        rng = np.random.default_rng(seed)
        t0 = time.process_time()
        refs, states, _, _ = prior_chain_modes(family, np.zeros((0,) + X.shape[:1] + (a.rank,)),
                                               a.cut, rng, n_chains=16, n_sweeps=300)
        _, basins, _, _ = fit_chains_and_basins(family, adapter, refs, states, rng, a.cut,
                                                4, 500, 2, 50, extend=a.extend)
        before = basins.get("left_before", basins["left"])
        print(f"seed {seed}: {refs.shape[0]} modes ({[len(s) for s in states]} chains); "
              f"left {np.round(before, 3).tolist()}; extended {basins.get('extended', [])}; "
              f"then left {np.round(basins['left'], 3).tolist()}, joined {basins['joined']}; "
              f"{time.process_time() - t0:.1f} CPU s", flush=True)


if __name__ == "__main__":
    main()
