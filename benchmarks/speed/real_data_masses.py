"""Posterior masses of the modes of any matrix: the ``bnmfzoo masses`` command from a checkout.

Run with::

    nice -n 10 python -m benchmarks.speed.real_data_masses --data FILE --rank K [options]

which is ``bnmfzoo masses FILE --rank K [options]`` (:mod:`bnmfzoo._cli.masses`: the options,
the default route per family, the CPU budget and the JSON last line), with one BLAS thread. The
results pages (``docs/results/masses_*.md``) give their commands in this form.
"""

import sys

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)
from bnmfzoo._cli.masses import main

if __name__ == "__main__":
    sys.exit(main())
