"""Paper experiment protocols: they combine data, models, inference and diagnostics.

The top floor (beside the estimator and the command line): nothing else in the package imports
it. :mod:`~bnmfzoo.experiments.sampling_quality` is the protocol of Masood, Pan & Doshi-Velez
(2016), used by its notebook, its test and its reproduction in ``benchmarks/``.
"""
