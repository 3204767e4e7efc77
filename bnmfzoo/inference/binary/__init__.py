"""Mean-parameterized Bernoulli NMF (Lumbreras et al. 2020): collapsed Gibbs and CVB0."""
