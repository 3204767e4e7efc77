"""Numeric kernels every inference wing may import (numba; no PyMC, no wing).

The floor under the wings: each kernel family is defined once here, and the wings import it
(``from bnmfzoo.inference.kernels import ...``); it imports no wing. Every sampler is exact and
has its own distribution test against SciPy or an exact pmf.

Random streams (:mod:`.streams`)
    ``seed_state`` (a xoshiro256+ state from a ``numpy.random.Generator``), ``next_uniform``
    (``[0, 1)``), ``open_uniform`` (``(0, 1]``), ``std_normal``, ``xoshiro_step`` and
    ``to_unit`` (the stream held in four scalars inside a loop).
Truncated normal on ``[0, inf)`` (:mod:`.truncnorm`)
    ``truncnorm_excess``, ``draw_truncnorm`` (numba, on a Generator), ``sample_truncnorm``,
    ``truncnorm_mean_var``, ``truncnorm_log_normalizer``, ``truncnorm_entropy``,
    ``truncnorm_mode``.
Generalized inverse Gaussian (:mod:`.gig`)
    ``gig_one`` (numba, on a Generator or a xoshiro state), ``gig_draws`` (Generator, one draw
    per ``b``), ``gig_sample`` (xoshiro stream).
Chinese restaurant tables (:mod:`.crt`)
    ``crt`` (by blocks, cost far below ``n``), ``crt_direct`` (one Bernoulli per customer),
    ``crt_sample``.
Gamma, binomial, multinomial and Dirichlet-multinomial (:mod:`.variates`)
    ``log_gamma``, ``binomial``, ``multinomial_into``, ``dirmult_into`` (numba, xoshiro
    stream, bounded cost), their fronts ``gamma_sample``, ``binomial_sample``,
    ``multinomial_sample``, ``dirmult_sample``, and ``gamma_draws`` (conjugate
    ``Gamma(shape, rate)`` draws from a Generator, floored at the smallest positive float).
Count variational Bayes (:mod:`.countvb`)
    ``poisson_vb_pass``, ``nb_tables``, ``psi_diff``, ``digamma_series``,
    ``lgamma_ratio_sum``, ``nonzero_means_into`` (numba passes over the nonzeros of a CSR
    block, in index order) and ``gamma_kl_elements``; deterministic, shared by the serial and
    the row-blocked count VB.
"""

from bnmfzoo.inference.kernels.countvb import (
    digamma_series,
    gamma_kl_elements,
    lgamma_ratio_sum,
    nb_tables,
    nonzero_means_into,
    poisson_vb_pass,
    psi_diff,
)
from bnmfzoo.inference.kernels.crt import crt, crt_direct, crt_sample
from bnmfzoo.inference.kernels.gig import gig_draws, gig_one, gig_sample
from bnmfzoo.inference.kernels.streams import (
    next_uniform,
    open_uniform,
    seed_state,
    std_normal,
    to_unit,
    xoshiro_step,
)
from bnmfzoo.inference.kernels.truncnorm import (
    draw_truncnorm,
    sample_truncnorm,
    truncnorm_entropy,
    truncnorm_excess,
    truncnorm_log_normalizer,
    truncnorm_mean_var,
    truncnorm_mode,
)
from bnmfzoo.inference.kernels.variates import (
    binomial,
    binomial_sample,
    dirmult_into,
    dirmult_sample,
    gamma_draws,
    gamma_sample,
    log_gamma,
    multinomial_into,
    multinomial_sample,
)

__all__ = [
    "seed_state", "next_uniform", "open_uniform", "std_normal", "xoshiro_step", "to_unit",
    "truncnorm_excess", "draw_truncnorm", "sample_truncnorm", "truncnorm_mean_var",
    "truncnorm_log_normalizer", "truncnorm_entropy", "truncnorm_mode",
    "gig_one", "gig_draws", "gig_sample",
    "crt", "crt_direct", "crt_sample",
    "log_gamma", "binomial", "multinomial_into", "dirmult_into", "gamma_sample",
    "binomial_sample", "multinomial_sample", "dirmult_sample", "gamma_draws",
    "poisson_vb_pass", "nb_tables", "psi_diff", "digamma_series", "lgamma_ratio_sum",
    "nonzero_means_into", "gamma_kl_elements",
]
