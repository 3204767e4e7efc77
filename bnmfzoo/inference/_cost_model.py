"""Measured cost model: whether ``pm.sample()`` gives a recognized model our step or NUTS.

Our exact Gibbs steps are not faster than PyMC's NUTS on every model they can sample. For each
model family and likelihood they read, :data:`MEASURED` holds the ratio of effective samples
per CPU second, ours over PyMC's NUTS, both through ``pm.sample`` in the same run on the
quantities users read (``A @ W`` cells, factor entries or normalized signatures, and the noise
or dispersion), with the benchmark command that produced it. :func:`choose` picks our step when
the ratio is at least 1 and NUTS otherwise, and :func:`announce` logs one line per
``pm.sample`` call saying which sampler takes the model's variables and why. The ratios were
measured on a shared 2-core machine; rerun the commands to update them (the lowest ratio of a
benchmark is recorded, so a model is given our step only where it won on every quantity
measured, unless a note says otherwise).

Examples
--------
>>> choose("gaussian", "normal").ours
True
>>> choose("counts", "nb2").ours
False
"""

import logging
import threading
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["Measured", "MEASURED", "choose", "announce", "likelihood_key", "count_key", "quiet"]

logger = logging.getLogger("bnmfzoo")
_local = threading.local()


@contextmanager
def quiet():
    """No :func:`announce` lines inside (a competence asked by our own code, not by PyMC)."""
    before = getattr(_local, "quiet", False)
    _local.quiet = True
    try:
        yield
    finally:
        _local.quiet = before


@dataclass(frozen=True)
class Measured:
    """One measurement: ESS per CPU second, ours / PyMC NUTS, and how it was obtained.

    Attributes
    ----------
    ratio : float
        The ratio the choice uses (below 1: NUTS is chosen).
    detail : str
        What was measured (data, quantities, the range over them).
    command : str
        The benchmark command that measures it (results pages in ``docs/results/``).
    """

    ratio: float
    detail: str
    command: str


#: ``(family, likelihood) -> Measured``; families as the recognizer names them
MEASURED = {
    ("gaussian", "normal"): Measured(
        27.0, "GDSC rank 5 and CCLE IC50 rank 3, aligned factor entries, signatures and "
        "exposures: 27-52x (smallest over entries and medians; docs/results/gaussian.md)",
        "python -m benchmarks.speed.converged"),
    ("gaussian", "normal_user_priors"): Measured(
        4.9, "CCLE IC50 rank 3, Gamma, per-column precision and the HalfNormal / ARD model: "
        "tau and A @ W entries 4.9-58x (docs/results/gaussian.md)",
        "python -m benchmarks.speed.user_model --only ccle --model gamma --model col_tau --cpu"),
    ("gaussian", "student_t"): Measured(
        1.4, "CCLE IC50 rank 3, Student-t (nu = 4), both samplers from the same state, two "
        "modes: tau 6.5-15x, 200 A @ W entries smallest 1.4-3.3x, median 23-28x "
        "(docs/results/gaussian.md)",
        "python -m benchmarks.speed.student_t"),
    ("counts", "poisson"): Measured(
        5.3, "sparse counts (at most one count per observed cell on average): Reuters word "
        "counts, K = 6, factor entries, normalized signatures, exposures and A @ W: smallest "
        "5.3x, medians 12-52x; sparse synthetic 400 x 600: >= 100x "
        "(docs/results/counts_core.md)",
        "python -m benchmarks.speed.converged_counts --data reuters6"),
    ("counts", "poisson_dense"): Measured(
        0.3, "dense catalogues (more than one count per observed cell on average): breast "
        "and ESCC SBS96, K = 4 and 8: smallest over factor entries, normalized signatures "
        "and exposures 0.3-0.9x (nutpie 0.0-0.1x); dense synthetic 100 x 80, K = 4: 0.7x "
        "(docs/results/counts_core.md)",
        "python -m benchmarks.speed.converged_counts --data breast4"),
    ("counts", "poisson_dense_hmc"): Measured(
        14.7, "dense catalogues, Poisson with fixed Gamma priors, HMC on log A, log W with "
        "trajectory lengths learned during tuning and an exact rescaling move (HmcPoisson): "
        "breast and ESCC SBS96, K = 4 and 8, aligned factor entries, normalized signatures, "
        "exposures and A @ W: smallest over entries 14.7-269x, medians 6.3-121x (nutpie 0.16: "
        "smallest 1.8-67x, medians 0.9-53x) (docs/results/counts_dense.md)",
        "python -m benchmarks.speed.converged_counts --data breast4 breast8 --ours hmc (ESCC: "
        "--data escc4 escc8 --draws 1000 --tune 300 --nuts-draws 100)"),
    ("counts", "negative_binomial"): Measured(
        1.4, "100 x 96, K = 4, cells and signatures 1.4-1.9x (0.45-0.7x on 30 x 20) "
        "(docs/results/counts_core.md)", "python -m benchmarks.speed.counts_ess --likelihood nb"),
    ("counts", "nb2"): Measured(
        0.3, "A @ W cells 0.3x on 30 x 20, K = 3 (our chains at R-hat 1.12-1.27 after 2,000 "
        "draws), 0.2-0.6x on 100 x 96, K = 4 (docs/results/counts_core.md, "
        "docs/results/gaussian.md)",
        "python -m benchmarks.speed.counts_ess --likelihood nb2"),
}


@dataclass(frozen=True)
class Choice:
    """The outcome of :func:`choose`: ``ours`` and the sentence saying why."""

    ours: bool
    reason: str


def likelihood_key(found):
    """The :data:`MEASURED` key of a recognized Gaussian model (``found.noise``, priors).

    Student-t noise is ``"student_t"``; the constructors' priors (a spec of the
    ``exponential_gaussian`` family) ``"normal"``; any other recognized prior
    ``"normal_user_priors"``.
    """
    from bnmfzoo.models._spec import spec_from_factorization

    if getattr(found.noise, "nu", None) is not None:
        return "student_t"
    spec, _ = spec_from_factorization(found)
    return "normal" if spec is not None else "normal_user_priors"


#: above this many counts per observed cell on average a Poisson model is ``"poisson_dense"``
DENSE_COUNTS_PER_CELL = 1.0


def count_key(family, total, observed_cells):
    """The :data:`MEASURED` key of a recognized count model.

    A Poisson model whose counts average more than :data:`DENSE_COUNTS_PER_CELL` per observed
    cell (mutational catalogues) is ``"poisson_dense"``: there the latent-count split mixes
    slowly between overlapping components and NUTS's gradient costs no more per cell, while
    on sparse counts (words, UMIs) our sweep touches only the nonzeros.

    >>> count_key("poisson", 50_000, 96 * 21), count_key("poisson", 900, 2_000)
    ('poisson_dense', 'poisson')
    """
    if family == "poisson" and total > DENSE_COUNTS_PER_CELL * max(observed_cells, 1):
        return "poisson_dense"
    return family


def choose(family, likelihood):
    """Our step or NUTS for ``(family, likelihood)``, from :data:`MEASURED`.

    An unmeasured pair keeps our step (exact draws; nothing says NUTS is faster).
    """
    m = MEASURED.get((family, likelihood))
    if m is None:
        return Choice(True, "exact conditional draws (no measured comparison with NUTS for "
                            "this model)")
    if m.ratio >= 1.0:
        return Choice(True, f"measured {m.ratio:g}x PyMC NUTS in effective samples per CPU "
                            f"second ({m.detail}; `{m.command}`)")
    return Choice(False, f"bnmfzoo's exact step measured {m.ratio:g}x PyMC NUTS in effective "
                         f"samples per CPU second ({m.detail}; `{m.command}`)")


def announce(model, var, names, step_name, choice):
    """Log the choice once per ``pm.sample`` call: on the first of ``names`` in model order.

    ``names`` are the variables the step would take; PyMC asks each class about every free
    variable once per step assignment, so logging on the first one gives one line per call.
    """
    if getattr(_local, "quiet", False):
        return
    first = next((rv for rv in model.free_RVs if rv.name in names), None)
    if first is None or var is not first:
        return
    listed = ", ".join(rv.name for rv in model.free_RVs if rv.name in names)
    if choice.ours:
        logger.info("bnmfzoo's %s samples %s: %s", step_name, listed, choice.reason)
    else:
        logger.warning(
            "PyMC's NUTS samples %s, not bnmfzoo's %s: %s. To use it anyway: "
            "pm.sample(step=bnmfzoo.inference.%s())", listed, step_name, choice.reason,
            step_name)
