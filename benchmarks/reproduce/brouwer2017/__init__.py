"""Brouwer, Frellsen & Lio (2017): convergence, cross-validation, noise and sparsity."""
