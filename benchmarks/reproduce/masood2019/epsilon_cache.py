"""Precompute the SILF thresholds of the particle benchmarks (swimmer rank 16, faces rank 10).

Run: ``python -m benchmarks.reproduce.masood2019.epsilon_cache``; the values are cached by
:func:`benchmarks.reproduce.masood2019._shared.cached_epsilon` in
``benchmarks/results/epsilon_cache.json``.
"""

import argparse

from benchmarks.reproduce.masood2019._shared import cached_epsilon


def main(argv=None):
    argparse.ArgumentParser(description=__doc__).parse_args(argv)
    from bnmfzoo import datasets

    jobs = [("swimmer", datasets.swimmer().X, 16), ("faces64", datasets.load_faces((64, 64)), 10)]
    for name, X, rank in jobs:
        eps, sec = cached_epsilon(name, X, rank)
        print(f"{name}: epsilon {eps:.6g} ({sec:.0f} CPU s)", flush=True)


if __name__ == "__main__":
    main()
