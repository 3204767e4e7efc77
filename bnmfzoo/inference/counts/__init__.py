"""Count data (Poisson / Gamma-Poisson NMF): latent-count Gibbs, replica exchange, VB.

The floor of the wing: ``_data`` (count matrix, exposures, likelihoods), ``_problem`` (a
recognized model as arrays), ``sweep`` (the one latent-count split-and-draw sweep, with
Poisson, NB through CRT, NB2 multipliers, the power posterior and offsets as options) and
``_hmc_kernels`` (the Poisson log density on ``log A, log W``, its gradient and the leapfrog of
the HMC moves, tempered or not). Above it: ``gibbs/`` (the PyMC step, the compiled Poisson
sweeps, the group moves), ``tempering/`` (the tempered paths and replica exchange) and
``variational/`` (VB fits and rank selection).
"""
