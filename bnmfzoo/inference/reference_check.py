"""The reference-path check of :func:`bnmfzoo.inference.smc_mode_masses` (``check="reference"``).

The masses of the modes an SMC from the prior found are checked against a second estimator of
a different kind: each mode's evidence by tempered SMC along the path from a reference fitted
to that mode (:func:`bnmfzoo.inference.reference_path.reference_log_z`; variational-reference
tempering, Surjanovic et al. 2022). Plain chains from prior draws look for modes the SMC from
the prior did not reach; such a mode enters the check with its own path.

Two rules keep the check's cost at what its answer needs, both as on the per-mode route
(:func:`bnmfzoo.inference.reference_tempering.per_mode_check`):

* a mode only the plain chains from the prior found whose fit chains already show it to be a
  copy of an earlier mode (:func:`~bnmfzoo.inference.reference_path.fit_copies`: each holds the
  other's draws in its basin, or the basin rule joins them) is that mode reached twice and gets
  no path; copies seen only in the paths' final particles are dropped after them;
* a mode the runs of the modes before it bound below
  :data:`~bnmfzoo.inference._mass_verdict.EARLY_STOP` stops after two runs.

On the faces (400 x 256, exponential Gaussian, rank 3) the plain chains re-found a label copy
of the one mode in most seeds, and a run whose check also met a mode at e^-47 of the total ran
out of budget during the check (``docs/results/masses_gaussian_check.md`` section 44).

When either check (this one, or the per-mode route's ``check="reference_pt"``) finds a mode's
label copies overlapping, it runs again along a path that holds every copy, so its per-mode
``log Z`` does: for Beta-Dir the reference symmetrized over the copies
(:mod:`bnmfzoo.inference.binary._reference_symmetric`), for the other families the product
reference's path mixed over the label orbit, with Gibbs draws over the orbit around each sweep
(:mod:`bnmfzoo.inference.tempering._label_orbit`).
"""

import math
from dataclasses import replace

import numpy as np

from bnmfzoo.inference._mass_budget import BudgetExhausted
from bnmfzoo.inference.reference_path import (
    DUPLICATE_SHARE,
    WIDEN,
    cross_fit_shares,
    drop_modes,
    fit_chains_and_basins,
    fit_copies,
    reference_adapter,
    reference_log_z,
)

__all__ = ["reference_check", "prior_copies_dropped", "symmetric_retry", "symmetric_check",
           "reference_check_retried", "SYMMETRIC_FAMILIES"]

#: the families whose checks run again along a path holding every label copy when the copies
#: overlap
SYMMETRIC_FAMILIES = ("beta_dir", "exponential_gaussian", "poisson", "negative_binomial")


def prior_copies_dropped(family, refs, starts, rng, cut, n_smc_modes, n_chains, n_draws, thin):
    """The fit chains of every mode, without the plain chains' modes that copy an earlier one.

    Returns ``(refs, starts, fitted, dropped, record)``: ``fitted`` as
    :func:`~bnmfzoo.inference.reference_path.fit_chains_and_basins` returns it (its fit CPU
    includes the dropped modes' chains), over the kept modes; ``dropped`` the modes ``j >=
    n_smc_modes`` that :func:`~bnmfzoo.inference.reference_path.fit_copies` finds to be copies,
    in the numbering of ``refs``; ``record`` the fit chains' ``cross_fit`` shares, ``extended``
    and ``left_before`` over all of ``refs`` (that numbering). Copies among the SMC from the
    prior's own modes are kept (the check reports them as a mode counted twice).
    """
    adapter = reference_adapter(family)
    fitted = fit_chains_and_basins(family, adapter, refs, starts, rng, cut, n_chains, n_draws,
                                   thin, 50)
    record = {"cross_fit": cross_fit_shares(fitted, cut),
              "extended": fitted[1].get("extended", []),
              "left_before": fitted[1].get("left_before", fitted[1]["left"])}
    dropped = sorted(j for j in fit_copies(fitted, cut, record["cross_fit"]) if j >= n_smc_modes)
    if not dropped:
        return refs, starts, fitted, [], record
    keep = [k for k in range(refs.shape[0]) if k not in dropped]
    refs, starts = refs[keep], [starts[k] for k in keep]
    basins = fit_chains_and_basins(family, None, refs, starts, rng, cut, n_chains, n_draws,
                                   thin, 50, fits=[fitted[0][k] for k in keep],
                                   kept=(fitted[1], keep))
    return refs, starts, basins[:3] + (fitted[3] + basins[3],), dropped, record


def reference_check(family, states, label, weights, clusters, log_z, log_z_se, rng, *,
                    n_runs=4, n_particles=100, n_moves=5, cess=0.9, n_chains=4, n_draws=200,
                    thin=2, widen=WIDEN, prior_chains=8, prior_sweeps=300):
    """The reference-path check of :func:`bnmfzoo.inference.smc_mode_masses`.

    Returns ``(mass (K,), se (K,), extra [(mass, se) of modes only plain chains from the
    prior found], reasons [why not established], details dict)``, as
    :func:`bnmfzoo.inference.mode_bridge.bridge_check` does. In ``details`` the modes are
    numbered as the SMC from the prior's and then the plain chains' (``dropped``: the copies
    left out, before or after their paths; ``cross_fit``: the fit chains' shares over all of
    them).
    """
    from bnmfzoo.inference._mass_verdict import EARLY_STOP, check_reasons
    from bnmfzoo.inference.mode_bridge import check_modes

    K = clusters["reference"].shape[0]
    nan = np.full(K, math.nan)
    try:
        reference_adapter(family)
    except ValueError as err:
        return nan, nan, [], [f"the reference check is not available: {err}"], None
    refs, cut = clusters["reference"], clusters["cut"]
    all_refs, starts, near, prior_cpu = check_modes(family, states, label, weights, clusters,
                                                    rng, n_chains, prior_chains, prior_sweeps)
    kept_refs, starts, fitted, before, record = prior_copies_dropped(
        family, all_refs, starts, rng, cut, K, n_chains, n_draws, thin)
    keep = [k for k in range(all_refs.shape[0]) if k not in before]  # kept -> original number
    out = reference_log_z(family, kept_refs, starts, rng, cut=cut, n_runs=n_runs,
                          n_particles=n_particles, n_moves=n_moves, cess=cess,
                          n_chains=n_chains, n_draws=n_draws, thin=thin, widen=widen,
                          early_stop=EARLY_STOP, fitted=fitted)
    # a mode only the plain chains from the prior found that is a copy of, or joined with, an
    # earlier mode by its path's final particles is that mode reached twice: estimated once
    dup = sorted(set(out["duplicates"]) | set(out["joined"]))
    drop = sorted({j for _, j in dup if j >= K})
    if drop:
        out = drop_modes(out, drop, refs.shape[2])
    reasons = check_reasons("reference path", out["log_z"],
                            np.maximum(out["left"], out["path_left"]), out["log_z_total"],
                            out["log_z_total_se"], log_z, log_z_se,
                            left_what="chain draws or path particles",
                            swapped=None if out.get("symmetric") else out["swapped"],
                            one_sided=True)
    reasons += [f"modes {keep[k]} and {keep[j]}: plain chains cross between them both ways, so "
                "they are one mode (the basin rule); their union's mass is the sum"
                for k, j in out["joined"] if j not in drop]
    reasons += [f"modes {keep[k]} and {keep[j]}: each holds more than {DUPLICATE_SHARE:.0%} of "
                "the other's draws or path particles in its basin, so they are one mode "
                "counted twice" for k, j in out["duplicates"] if j not in drop]
    details = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in out.items()}
    details.update(prior_chains=prior_chains, prior_ends_in_smc_modes=(
        None if near is None else int(np.sum(near >= 0))), prior_cpu_s=prior_cpu,
        n_runs=n_runs, n_particles=n_particles, n_chains=n_chains, n_draws=n_draws,
        widen=widen, cpu_s=out["cpu_s"] + fitted[3], fit_cpu_s=fitted[3],
        dropped=sorted(before + [keep[j] for j in drop]), **record)
    extra = list(zip(out["mass"][K:].tolist(), out["se"][K:].tolist(), strict=True))
    return out["mass"][:K], out["se"][:K], extra, reasons, details


def symmetric_retry(family, reasons, rank):
    """Whether to run a check again along the symmetrized reference.

    The path then holds every label copy: Beta-Dir's reference is symmetrized over the copies
    (:mod:`bnmfzoo.inference.binary._reference_symmetric`, ``K <= 4``), the other families (and
    Beta-Dir above) run along their path's mixture over the label orbit
    (:mod:`bnmfzoo.inference.tempering._label_orbit`).
    Yes for a model of a family in :data:`SYMMETRIC_FAMILIES` whose check gave ``reasons`` that
    its label copies overlap (:class:`~bnmfzoo.inference._mass_verdict.CopiesOverlap`), at a
    rank up to :data:`~bnmfzoo.inference.tempering._label_orbit.MAX_ORBIT_RANK`.
    """
    from bnmfzoo.inference._mass_verdict import CopiesOverlap
    from bnmfzoo.inference.tempering._label_orbit import MAX_ORBIT_RANK

    return (family.name in SYMMETRIC_FAMILIES and not getattr(family, "symmetric", False)
            and rank <= MAX_ORBIT_RANK
            and any(isinstance(r, CopiesOverlap) for r in reasons))


def _budget_reason(err):
    return (f"{err} during the check along a path symmetrized over the label copies, "
            "run after the copies overlapped: raise the budget")


def symmetric_check(family, pm, smc_found, rng, kw):
    """The per-mode check along the symmetrized reference, or ``pm`` with why it could not run.

    ``pm`` is :func:`~bnmfzoo.inference.reference_tempering.per_mode_check`'s result with the
    product reference, ``smc_found`` ``(states, label, weights, clusters, log_z, log_z_se)``
    of the SMC from the prior, ``kw`` the check's settings. The result keeps the product
    reference's reasons (``product_reasons``) for the record.
    """
    from bnmfzoo.inference.reference_tempering import per_mode_check

    try:
        sym = per_mode_check(replace(family, symmetric=True), *smc_found, rng, **kw)
    except BudgetExhausted as err:
        return {**pm, "reasons": list(pm["reasons"]) + [_budget_reason(err)]}
    return {**sym, "product_reasons": [str(r) for r in pm["reasons"]]}


def reference_check_retried(family, smc_found, rng, retry_rng, kw):
    """:func:`reference_check`, run again along the symmetrized reference when it should be.

    When :func:`symmetric_retry` says so, the result is the symmetrized check's, its details
    holding the product reference's reasons (``product_reasons``); ``retry_rng`` drives it.
    """
    out = reference_check(family, *smc_found, rng, **kw)
    if not symmetric_retry(family, out[3], smc_found[3]["reference"].shape[2]):
        return out
    try:
        sym = reference_check(replace(family, symmetric=True), *smc_found, retry_rng, **kw)
    except BudgetExhausted as err:
        return (*out[:3], [*out[3], _budget_reason(err)], out[4])
    return (*sym[:4], {**(sym[4] or {}), "product_reasons": [str(r) for r in out[3]]})
