"""Variational Bayes, ICM and multiplicative updates (Brouwer et al. 2017)."""
