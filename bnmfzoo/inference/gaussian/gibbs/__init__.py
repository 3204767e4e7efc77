"""Gibbs step methods of the Gaussian family.

The sweeps (numba), the missing-data Gram path, truncated-normal draws, the noise-sd step and
particle rejuvenation.
"""
