"""Gibbs sweeps with per-entry prior terms for user-written Gaussian models.

HalfNormal, TruncatedNormal and Gamma-shared exponential rates on NMF and NMTF factors, and
GIG draws.
"""
