"""Results of :func:`bnmfzoo.inference.smc_mode_masses` that end it early or per mode.

The ``check="reference_pt"`` result (:func:`per_mode_result`) and the
refusal of a rank whose SMC particles scatter into more modes than the data support
(:func:`unsupported_rank`), and one mode's entry of a reference-path result
(:func:`reference_mode_entry`, shared with :mod:`bnmfzoo.inference.large_route`), and the
entries of modes only the check's plain chains from prior draws found (:func:`unreached_modes`).
"""

import math
import time

import numpy as np

from bnmfzoo.diagnostics._modes.masses import mass_interval
from bnmfzoo.inference._mass_verdict import (
    MIN_CHECKED,
    NEGLIGIBLE,
    OVERLAP_ADVICE,
    CopiesOverlap,
    mass_upper_bounds,
    symmetric_note,
)

__all__ = ["per_mode_result", "unsupported_rank", "reference_mode_entry", "merge_smc_modes",
           "run_shares", "aligned_members", "unreached_modes", "MAX_MODE_SHARE", "UNREACHED"]

#: the estimator of a mode only the check's plain chains from prior draws found
UNREACHED = "smc_not_reached"
#: the check estimator of a mode bounded below 0.1 %, which gets no second estimator
NO_CHECK_BELOW = "none: below 1 %"

#: the SMC from the prior's final particles falling into more modes than this share of them
#: means the fitted factorization has components that point anywhere (the data do not support
#: the rank): K = 4 on rank-2 counts gave 101 modes from 132 particles; every established row
#: (CCLE rank 3, GDSC rank 5, breast SBS96 K = 4, parliament K = 2) gave 1-3
MAX_MODE_SHARE = 0.25


def unsupported_rank(n_modes, n_particles, rank, family, log_z, log_z_se, t0):
    """The refusal of ``rank`` when its SMC particles scatter into too many modes, else None.

    Refused when ``n_modes`` exceeds :data:`MAX_MODE_SHARE` of the ``n_particles`` final
    particles of the SMC from the prior: no mode is listed, not established, and the statement
    says in one sentence that the rank has components the data do not support and names the
    lower rank to try. Checked before the second estimator, whose per-mode work grows with the
    modes (101 modes overran a 120 s budget by 46 s).
    """
    if n_modes <= MAX_MODE_SHARE * n_particles:
        return None
    lower = max(int(rank) - 1, 1)
    statement = (f"Masses NOT established: rank {rank} has components the data do not support "
                 f"(the SMC from the prior's {n_particles} particles fell into {n_modes} "
                 f"modes, more than {MAX_MODE_SHARE:.0%} of them: components that point "
                 f"anywhere); fit rank {lower} instead (or, if rank {rank} is meant, more "
                 "particles). No mode is listed: every mode's mass is unknown, not zero.")
    return {"modes": [], "established": False, "statement": statement, "estimator": "smc",
            "log_z": log_z, "log_z_se": log_z_se, "cpu_s": time.process_time() - t0,
            "family": family.name, "final_ess": math.nan, "bridge": None, "reference": None,
            "unsupported_rank": {"rank": int(rank), "n_modes": int(n_modes),
                                 "n_particles": int(n_particles), "suggested_rank": lower},
            "settings": {"n_temperatures": []}}


def aligned_members(A, W, perm):
    """The members' factors with their columns in their mode's order (``perm`` ``(n, K)``)."""
    idx = perm[:, None, :]
    A_al = np.take_along_axis(A, np.broadcast_to(idx, A.shape), axis=2)
    W_al = np.take_along_axis(W, np.broadcast_to(perm[:, :, None], W.shape), axis=1)
    return A_al, W_al


def run_shares(label, weights, run_of, n_runs, K):
    """``(n_runs, K)``: each run's weight in each mode (each run's weights summing to 1)."""
    out = np.zeros((n_runs, K))
    for r in range(n_runs):
        m = run_of == r
        out[r] = np.bincount(label[m], weights=weights[m], minlength=K)
    return np.clip(out, 0.0, 1.0)  # a sum of weights that sum to 1 can round above 1


def merge_smc_modes(merged, label, A, W, perm, refs, weights, run_of, n_runs):
    """The SMC from the prior's modes with each copy in ``merged`` joined to its first mode.

    ``merged``: pairs ``(i, j)``, mode ``j`` a copy of mode ``i < j`` (the per-mode route's fit
    chains showed them to be one, :func:`~bnmfzoo.inference.reference_path.fit_copies`);
    ``label`` the particles' modes, ``A`` ``(n, D, K)`` and ``W`` ``(n, K, N)`` their factors,
    ``perm`` ``(n, K)`` each particle's column order matching its mode's reference ``refs``;
    ``weights`` and ``run_of`` the particles' weights (each run's summing to 1) and runs. A
    copy's particles are relabelled and their columns matched to the first mode's reference
    again.

    Returns ``(label, mass, se, A aligned, W aligned)``: the modes renumbered in order without
    the copies, the masses and their errors from the runs' shares (as the SMC's own).

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]])
    >>> W = np.ones((3, 2, 1))
    >>> refs = np.array([np.eye(2), np.eye(2)[:, ::-1], np.eye(2)])
    >>> lab, m, _, A2, _ = merge_smc_modes([(0, 1)], np.array([0, 1, 2]), A, W,
    ...                                    np.array([[0, 1], [0, 1], [0, 1]]), refs,
    ...                                    np.array([0.5, 1.0, 0.5]), np.array([0, 1, 0]), 2)
    >>> lab.tolist(), m.tolist(), bool(np.allclose(A2[1], np.eye(2)))
    ([0, 0, 1], [0.75, 0.25], True)
    """
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2, matched_angles

    K = refs.shape[0]
    first = np.arange(K)
    for i, j in merged:
        first[j] = first[i]
    kept = np.flatnonzero(first == np.arange(K))
    new_of = np.full(K, -1)
    new_of[kept] = np.arange(kept.size)
    perm = np.array(perm, copy=True)
    moved = first[label] != label
    if moved.any():
        U = _unit_l2(np.asarray(A[moved], float))
        for k in np.unique(first[label[moved]]):
            m = first[label[moved]] == k
            perm[np.flatnonzero(moved)[m]] = matched_angles(U[m], refs[k][None])[1][:, 0]
    label = new_of[first[label]]
    shares = run_shares(label, weights, run_of, n_runs, kept.size)
    A_al, W_al = aligned_members(A, W, perm)
    return label, shares.mean(0), shares.std(0, ddof=1) / math.sqrt(n_runs), A_al, W_al


def reference_mode_entry(mass, se, size, bound, check_mass, check_se, skipped):
    """One mode's entry of a reference-path result: the mass, its interval, the check.

    ``size`` is ``(runs, particles per run)`` of the reference-path SMC that gave ``mass`` and
    ``se`` (the interval's Student-t has ``runs - 1`` degrees of freedom); ``bound`` its upper
    bound on the mode's mass; ``check_mass`` and ``check_se`` the reference tempering's. A mode
    ``skipped`` (bounded below 1 %) has no second estimator, and the entry says so.

    >>> e = reference_mode_entry(0.3, 0.02, (4, 100), 0.4, 0.31, 0.03, False)
    >>> e["estimator"], e["check_estimator"], round(e["mass_check"], 2)
    ('reference_path', 'reference_tempering', 0.31)
    """
    lo, hi = (mass_interval(mass, se, size[0] * size[1], size[0] - 1) if np.isfinite(se)
              else (0.0, 1.0))
    return {"mass": float(mass), "se": float(se), "low": lo, "high": hi,
            "estimator": "reference_path", "bound": float(bound),
            "mass_check": math.nan if skipped else float(check_mass),
            "check_se": math.nan if skipped else float(check_se),
            "check_estimator": NO_CHECK_BELOW if skipped else "reference_tempering",
            "note": (f"below 1 %: the reference-path SMC bounds its mass by {bound:.1e}, so no "
                     "second estimator" if skipped else "")}


def unreached_modes(extra, details, n_found, shape, check):
    """Entries, reasons and notes for the modes only the check's plain chains found.

    ``extra`` is ``[(mass, se)]`` of those modes by the check (``"reference"`` or ``"bridge"``);
    ``details`` the check's details (for the reference path: ``run_log_z``, ``(M, runs)`` over
    the ``n_found`` modes the SMC from the prior found and then these, and ``runs_done``);
    ``shape`` is ``(D, R, C)``. A mode no SMC particle reached blocks ``established``
    (its SMC mass is unknown: a mode of real mass the SMC from the prior misses is the
    failure the check is there to catch), **unless** the reference-path SMC bounds its mass
    below :data:`~bnmfzoo.inference._mass_verdict.NEGLIGIBLE` by
    :func:`~bnmfzoo.inference._mass_verdict.mass_upper_bounds`, the bound under which
    ``check="reference_pt"`` skips a mode's second estimator (its module docstring says why that
    is safe). Such a mode is listed with the reference-path mass, interval ``[0, bound]``,
    ``check_estimator`` :data:`NO_CHECK_BELOW` and a ``note``: an SMC from the prior reaches a
    mode with about its mass, so none of a few thousand particles reaching a mode below 0.1 %
    is what a correct run does, not a failure. The bridge gives no per-run ``log Z``, so it
    bounds nothing and its unreached modes always block.

    Examples
    --------
    >>> ent, why, notes = unreached_modes([(1e-20, 1e-20), (0.4, 0.05)],
    ...     {"run_log_z": [[0.0, 0.1, -0.1, 0.0], [-46.0, -46.2, -45.9, -46.1],
    ...                    [-0.4, -0.3, -0.5, -0.4]], "runs_done": [4, 4, 4]},
    ...     1, (5, 2, 3), "reference")
    >>> [e["estimator"] for e in ent], len(why), len(notes)
    (['reference_path', 'smc_not_reached'], 1, 1)
    """
    D, R, C = shape
    bound = np.full(n_found + len(extra), math.nan)
    if check == "reference" and details is not None and details.get("run_log_z") is not None:
        run_lz = np.asarray(details["run_log_z"], float)
        if run_lz.ndim == 2 and run_lz.shape[0] == bound.size:
            bound = mass_upper_bounds(run_lz, details.get("runs_done"))
    what = "reference-path" if check == "reference" else "bridge"
    entries, reasons, notes = [], [], []
    for j, (mk, sk) in enumerate(extra):
        b = float(bound[n_found + j])
        empty = {"n_members": 0, "A": np.zeros((0, D, R)), "W": np.zeros((0, R, C)),
                 "member_weight": np.zeros(0)}
        if b < NEGLIGIBLE:  # NaN (unbounded) is not below
            note = (f"below 1 %: no SMC particle from the prior reached it, as expected of a "
                    f"mode this light; the reference-path SMC bounds its mass by {b:.1e}, so "
                    "no second estimator")
            notes.append(f"a mode only plain chains from prior draws found is bounded below "
                         f"{b:.1e} by the reference path alone")
            entries.append({"mass": float(mk), "se": float(sk), "low": 0.0, "high": b,
                            "estimator": "reference_path", "bound": b,
                            "mass_check": math.nan, "check_se": math.nan,
                            "check_estimator": NO_CHECK_BELOW, "note": note,
                            **empty})
            continue
        known = (f"{what} mass {mk:.3f} +- {sk:.3f}" if np.isfinite(mk)
                 else f"its {what} mass unknown: the check failed")
        bounded = (f", bounded by {b:.1e}, not below {NEGLIGIBLE:.1%}" if np.isfinite(b) else "")
        reasons.append(f"plain chains from prior draws found a mode no SMC particle reached "
                       f"({known}{bounded})")
        entries.append({"mass": 0.0, "se": math.nan, "low": 0.0, "high": 1.0,
                        "estimator": UNREACHED, "mass_check": float(mk), "check_se": float(sk),
                        "check_estimator": "reference_path" if check == "reference" else "bridge",
                        **empty})
    return entries, reasons, notes


def per_mode_result(pm, runs, mass, se, label, A_al, W_al, weights, log_z, log_z_se, log_z_sd,
                     family, budget_s, smc_cpu, t0, ref_size):
    """The result of ``check="reference_pt"``: per-mode masses, the SMC from the prior beside."""
    reasons, notes = list(pm["reasons"]), []
    K, n_runs = mass.size, len(runs)
    if budget_s is not None and smc_cpu > budget_s:
        reasons.append(f"the SMC alone used {smc_cpu:.0f} CPU s of a {budget_s:g} s budget")
    min_ess = min(r.final_ess for r in runs)
    if min_ess < 0.1 or not log_z_sd < 2.0:
        notes.append(f"the SMC from the prior (mode finding only) ended with an ESS of "
                     f"{min_ess:.1%} and its runs' log Z sd {log_z_sd:.2f} nats")
    for i, j in pm.get("merged", ()):
        notes.append(f"the SMC from the prior's modes {i} and {j} are one mode (the fit chains "
                     f"from each stay in the other's basin), merged before the per-mode "
                     f"estimates")
    if pm.get("product_reasons"):
        notes.append(symmetric_note(pm["product_reasons"]))
    smc_o, pt_o = pm["smc"], pm["pt"]
    M = K if smc_o is None else len(smc_o["log_z"])
    nan = np.full(M, math.nan)
    ms, ss = (nan, nan) if smc_o is None else (smc_o["mass"], smc_o["se"])
    # no check mass when the tempering did not run, or was too dear to start on a mode
    not_run = pt_o is None or bool(np.isfinite(pt_o.get("too_dear", nan[:, None])[:, 0]).any())
    mp, sp = (nan, nan) if not_run else (pt_o["mass"], pt_o["se"])
    D, R = A_al.shape[1:]
    modes, upper = [], pm.get("upper", nan)
    for k in range(M):
        m = label == k
        entry = reference_mode_entry(ms[k], ss[k], ref_size, upper[k], mp[k], sp[k],
                                     k in pm.get("skipped", ()))
        modes.append({**entry,
                      "smc_prior_mass": float(mass[k]) if k < K else math.nan,
                      "smc_prior_se": float(se[k]) if k < K else math.nan,
                      "n_members": int(m.sum()),
                      "A": A_al[m] if k < K else np.zeros((0, D, R)),
                      "W": W_al[m] if k < K else np.zeros((0, R, W_al.shape[2])),
                      "member_weight": weights[m] / n_runs if k < K else np.zeros(0)})
    established = not reasons
    unknown = ("Modes neither the SMC from the prior nor the plain chains from prior draws "
               "(KL-refined for count models) reached are not listed: their mass is unknown, "
               "not zero; masses are shares among the modes found.")
    total = "" if smc_o is None else (f" Per-mode total log Z {smc_o['log_z_total']:.2f} +- "
                                      f"{smc_o['log_z_total_se']:.2f}; SMC from the prior "
                                      f"{log_z:.2f} +- {log_z_se:.2f}.")
    if established:
        statement = (f"{M} mode(s); the reference-path SMC and parallel tempering agree for "
                     f"every mode holding >= {MIN_CHECKED:.0%}." + total + " " + unknown)
    else:
        # inside a budget the runs are sized from it: when a reason names the CPU to add,
        # that is the advice (pt_scans is then only a cap)
        overlap = [isinstance(r, CopiesOverlap) for r in reasons]
        advice = (" Raise the budget (budget_s; --budget on the command line) as said: the "
                  "runs are sized from it." if any("raise the budget" in r for r in reasons)
                  else "" if all(overlap) else " Run longer tempering (pt_scans), more "
                  "reference runs or particles (reference_runs, reference_particles) or longer "
                  "fit chains (bridge_draws).")
        if any(overlap):  # more of the same does not separate the copies
            advice = " " + OVERLAP_ADVICE + advice
        statement = ("Masses NOT established: " + "; ".join(reasons) + "." + advice + total
                     + " " + unknown)
    if notes:
        statement += " Note: " + "; ".join(notes) + "."
    details = {"smc": smc_o, "pt": pt_o, **{k: v for k, v in pm.items()
                                             if k not in ("smc", "pt")}}
    return {"modes": modes, "established": established, "statement": statement,
            "estimator": "reference_path", "log_z": log_z, "log_z_se": log_z_se,
            "cpu_s": time.process_time() - t0, "family": family.name, "final_ess": min_ess,
            "bridge": None, "reference": smc_o, "per_mode": details,
            "settings": {"n_runs": n_runs, "n_particles": runs[0].log_weights.size,
                         "n_temperatures": [int(r.betas.size) for r in runs]}}
