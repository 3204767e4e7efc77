"""Moving between modes in the Gaussian family.

Tempered sweeps, replica exchange, symmetry (rescaling, Q-Transform) moves and annealed mode
jumps.
"""
