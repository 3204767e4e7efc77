"""Variational Bayes for count NMF, with rank selection by the bound.

Poisson (``vb``, its core ``_vb_core``) and negative binomial (``vb_nb``: closed-form CRT tables).
"""
