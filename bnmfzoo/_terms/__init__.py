"""Implementations behind :mod:`bnmfzoo.likelihoods` (one module per term)."""
