"""Does the ridge-free reference fit shorten the Gaussian tempering path? (an experiment)

Run with::

    python -m benchmarks.investigations.gaussian_ridge_free_reference \
        --data drug_sensitivity/ccle/ic50.txt --rank 3 --check reference_pt \
        --pt-trips 15 --pt-scans 2500 --moves 2

``bnmfzoo masses`` with the exponential-Gaussian reference adapter given the shape that
:func:`bnmfzoo.inference.counts.tempering._scale_fit.ridge_free_fit` reads, so that the
tempering also pilots the truncated-normal reference fitted to scale-normalized draws and
keeps whichever has the lower barrier (the Poisson route's rule). Everything else is the
command as shipped. On CCLE IC50 at rank 3 the pilot barriers were 24.1 (per-entry fit) and
24.6 (ridge-free), so the scale ridge is not what makes the Gaussian path long
(``docs/results/masses_copula_reference_3.md`` section 41).
"""

import sys
from types import SimpleNamespace

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)
from bnmfzoo.inference.gaussian.modes._reference_gaussian import GaussianReferenceAdapter


def main(argv=None):
    """The command with the Gaussian adapter's ridge-free candidate switched on."""
    GaussianReferenceAdapter.problem = property(
        lambda self: SimpleNamespace(shape=(self.D, self.N), rank=self.K))
    from bnmfzoo._cli.masses import main as masses_main

    try:
        return masses_main(argv)
    finally:
        del GaussianReferenceAdapter.problem


if __name__ == "__main__":
    sys.exit(main())
