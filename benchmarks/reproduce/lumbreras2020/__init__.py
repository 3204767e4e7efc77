"""Lumbreras et al. (2020): binary NMF (parliament fit, held-out perplexity)."""
