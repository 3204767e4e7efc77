"""Count data (Poisson / Gamma-Poisson NMF): latent-count Gibbs, VB and rank selection."""
