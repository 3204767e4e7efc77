"""Gold-standard comparison of posterior approximations on small multimodal BNMF problems.

Run ``python -m benchmarks.reproduce.gold_standard.run [--quick]``; see :mod:`.run`.
"""
