"""False-failure rate and power of the one-sweep enumeration tests of the collapsed samplers.

``tests/binary/test_bernoulli_gibbs.py::test_{betadir,dirdir}_sweep_keeps_the_enumerated_posterior``
start 20,000 chains from exact draws of an enumerated posterior, run one sweep and reject at
chi-square p < 1e-3. This script computes the same p-value over many seeds on the current tree
(false-failure rate and a second-level KS test of the p-values against U(0, 1)), or on a copy
with one catalog mutation applied (power)::

    nice -n 15 python -m benchmarks.mutation.enumeration_power --seeds 1000:1100
    nice -n 15 python -m benchmarks.mutation.enumeration_power --seeds 3:4 \\
        --mutant binary-betadir-stale-ratio-after-remove --configs betadir-1.0
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.mutation._harness import ROOT, apply_mutation, load_catalogs, make_copy

CONFIGS = ("betadir-1.0", "betadir-0.4", "dirdir-seq-1.0", "dirdir-seq-0.4",
           "dirdir-blocked-1.0", "dirdir-blocked-0.4")


def pvalue(config, seed, n_chains=20_000):
    """The test's p-value for ``config`` at ``seed``."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_bernoulli_gibbs as t

    family, *rest = config.split("-")
    beta = float(rest[-1])
    if family == "betadir":
        return t.betadir_invariance_pvalue(beta, seed, n_chains)
    return t.dirdir_invariance_pvalue(rest[0] == "blocked", beta, seed, n_chains)


def main(argv=None):
    """Command-line entry point (see the module docstring)."""
    from scipy import stats

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1000:1100", help="start:stop")
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--mutant", default=None, help="catalog mutation id to apply to a copy")
    p.add_argument("--out", default=None, help="append JSON records to this file")
    args = p.parse_args(argv)
    if args.mutant:
        muts = {m.id: m for ms in load_catalogs().values() for m in ms}
        tmp = Path(tempfile.mkdtemp(prefix="bnmfzoo-power-"))
        try:
            make_copy(tmp / "repo")
            apply_mutation(muts[args.mutant], tmp / "repo")
            env = dict(os.environ, PYTHONPATH=str(tmp / "repo"),
                       NUMBA_CACHE_DIR=str(tmp / "numba"), BNMFZOO_POWER_MUTANT=args.mutant)
            cmd = [sys.executable, "-m", "benchmarks.mutation.enumeration_power", "--seeds",
                   args.seeds, "--configs", args.configs]
            if args.out:
                cmd += ["--out", str(Path(args.out).resolve())]
            return subprocess.call(cmd, cwd=tmp / "repo", env=env)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    import bnmfzoo

    start, stop = (int(x) for x in args.seeds.split(":"))
    mutant = os.environ.get("BNMFZOO_POWER_MUTANT")
    if mutant and Path(bnmfzoo.__file__).resolve().parents[1] != Path.cwd().resolve():
        raise RuntimeError(f"bnmfzoo imported from {bnmfzoo.__file__}, not the mutated copy")
    for config in args.configs.split(","):
        t0 = time.process_time()
        ps = [pvalue(config, s) for s in range(start, stop)]
        cpu = (time.process_time() - t0) / len(ps)
        ks = stats.kstest(ps, "uniform").pvalue if len(ps) > 4 else float("nan")
        n_fail = sum(x < 1e-3 for x in ps)
        print(f"{config}: seeds {start}:{stop} {n_fail}/{len(ps)} below 1e-3, min p "
              f"{min(ps):.3g}, KS of p-values vs U(0,1) p = {ks:.3g}, {cpu:.1f} CPU s a seed "
              f"{'mutant ' + mutant if mutant else ''}", flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(dict(config=config, seeds=[start, stop], pvalues=ps,
                                        mutant=mutant, cpu_per_seed=cpu)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
