"""Gaussian NMF and NMTF (Brouwer et al. 2017): Gibbs, VB, ICM, multiplicative updates."""
