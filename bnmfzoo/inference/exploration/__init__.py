"""Posterior exploration (Masood & Doshi-Velez 2016): RRT and online nonparametric VI."""
