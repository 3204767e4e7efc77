"""Masood & Doshi-Velez (2016): RRT exploration and nonparametric VI (ELBO tables)."""
