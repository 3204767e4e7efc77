"""Investigations: one-off measurements that explain a behaviour (why a ladder makes no round
trip, which mode a start lands in, a sampler's acceptance over its parameter range).

Unlike ``benchmarks/speed/`` they do not time ours against a baseline, and ``make bench`` does not
run them. Each prints what its section of ``benchmarks/RESULTS.md`` quotes; the logs of long
runs are kept in ``logs/``. Run one with ``python -m benchmarks.investigations.<name>``.
"""
