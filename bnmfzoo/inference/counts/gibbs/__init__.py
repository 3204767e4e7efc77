"""Latent-count Gibbs as a PyMC step: the compiled Poisson sweeps and the exact group moves.

``gibbs_poisson`` (the step :class:`GibbsPoisson`, and PyMC's imputed counts), ``_compiled``
(many Poisson sweeps in one numba call), ``_moves`` (rescaling and shear moves), ``_hmc_moves``
(HMC on the log factors, ``moves="hmc"``) and ``hmc_poisson`` (the step ``HmcPoisson`` that
``pm.sample()`` gives dense Poisson catalogues). The sweep itself
is :mod:`bnmfzoo.inference.counts.sweep`.
"""
