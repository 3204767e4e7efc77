"""Count data (Poisson / Gamma-Poisson NMF): latent-count Gibbs, replica exchange, VB.

The floor of the wing: ``_data`` (count matrix, exposures, likelihoods), ``_problem`` (a
recognized model as arrays) and ``sweep`` (the one latent-count split-and-draw sweep, with
Poisson, NB through CRT, NB2 multipliers, the power posterior and offsets as options). Above
it: ``gibbs/`` (the PyMC step, the compiled Poisson sweeps, the group moves), ``tempering/``
(the tempered paths and replica exchange) and ``variational/`` (VB fits and rank selection).
"""
