"""Write four small synthetic matrices (Gaussian, binary, counts) to try the masses command on.

Usage::

    python -m benchmarks.investigations.unseen_small_matrices OUT_FOLDER
    python -m benchmarks.speed.real_data_masses --data OUT_FOLDER/gauss40x25.csv --rank 3

- ``gauss40x25.csv``: ``A W`` with Gamma(1, 1) factors at rank 3, plus N(0, 0.3^2) noise,
  clipped at 0, no header;
- ``binary60x30.txt``: Bernoulli entries of ``sigmoid(U V)`` with standard normal ``U``
  (60 x 3) and ``V`` (3 x 30), whitespace separated;
- ``counts30x50.csv``: Poisson counts of ``A W`` with Gamma(1, 2) ``A`` (30 x 4) and
  Gamma(0.5, 2) ``W`` (4 x 50), a header row of column names;
- ``binary40x20.txt``: Bernoulli entries of ``A W`` with ``A`` (40 x 2) Beta(0.5, 0.5) rows
  normalized to sum 1 and ``W`` (2 x 20) Beta(0.5, 0.5), from its own generator (seed 2028;
  the design of ``docs/results/masses_copula_reference_3.md`` section 41, not its draws),
  whitespace separated.
"""

import sys
from pathlib import Path

import numpy as np


def write(folder, seed=70):
    """Write the four matrices into ``folder`` (created if missing); return their paths."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    r = np.random.default_rng(seed)
    X = np.clip(r.gamma(1.0, 1.0, (40, 3)) @ r.gamma(1.0, 1.0, (3, 25))
                + r.normal(0, 0.3, (40, 25)), 0, None)
    np.savetxt(out / "gauss40x25.csv", X, delimiter=",", fmt="%.4f")
    u = r.random((60, 30))
    r.beta(1, 3, (60, 3)), r.dirichlet(np.full(3, 0.5), 30)  # drawn and unused in the runs
    p = 1 / (1 + np.exp(-(r.normal(0, 1, (60, 3)) @ r.normal(0, 1, (3, 30)))))
    np.savetxt(out / "binary60x30.txt", (u < p).astype(int), fmt="%d")
    C = r.poisson(r.gamma(1.0, 2.0, (30, 4)) @ r.gamma(0.5, 2.0, (4, 50)))
    np.savetxt(out / "counts30x50.csv", C, delimiter=",", fmt="%d",
               header=",".join(f"c{j}" for j in range(50)), comments="")
    b = np.random.default_rng(2028)
    A = b.beta(0.5, 0.5, (40, 2))
    A /= A.sum(1, keepdims=True)
    W = b.beta(0.5, 0.5, (2, 20))
    np.savetxt(out / "binary40x20.txt", (b.random((40, 20)) < A @ W).astype(int), fmt="%d")
    return [out / n for n in ("gauss40x25.csv", "binary60x30.txt", "counts30x50.csv",
                              "binary40x20.txt")]


if __name__ == "__main__":
    for path in write(sys.argv[1]):
        print(path)
