"""Weighted particle posteriors (Masood & Doshi-Velez 2019): Q-Transform, Stein weights, SVGD."""
