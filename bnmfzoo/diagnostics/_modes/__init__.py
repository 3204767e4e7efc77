"""Modes of a posterior.

Alignment (label switching), mode clustering and masses, stacking, weighted summaries.
"""
