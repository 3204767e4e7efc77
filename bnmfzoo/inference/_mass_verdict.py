"""When are the masses of the modes established? The one rule every per-mode check calls.

Two routes, both returning the reasons a result is *not* established (an empty list: it is):

* :func:`check_reasons`: a per-mode estimator (per-mode bridge sampling,
  :mod:`bnmfzoo.inference.mode_bridge`; per-mode SMC from a fitted reference,
  :mod:`bnmfzoo.inference.reference_path`) checks the SMC from the prior. Every mode's evidence
  must be finite, no mode's draws may leave it more than ``MAX_LEFT`` of the time, and the
  per-mode total ``log K! + logsumexp_m log Z_m`` must agree with the SMC-from-prior ``log Z``
  within two combined standard errors plus ``LOG_Z_SLACK``. For the reference path that
  comparison is one-sided, as condition 5 below, and guarded: no mode's final path particles
  may sit on another label copy more than ``MAX_LEFT`` of the time (else the copies overlap
  and ``log K!`` over-counts). (The masses are compared mode by mode by
  :func:`bnmfzoo.inference.smc_mode_masses` itself.)
* :func:`per_mode_reasons`: two per-mode estimators **of different kinds** along the same
  reference path ``q^(1 - b) (p0 L)^b`` (adaptive-tempering SMC and non-reversible parallel
  tempering with stepping stone, :mod:`bnmfzoo.inference.reference_tempering`) estimate every
  mode, and the SMC from the prior only finds modes. Established when

  1. every mode (those the SMC from the prior found **and** those only plain chains from
     prior draws found, KL-refined for count models) has a finite ``log Z`` by both
     estimators;
  2. for every mode holding at least ``MIN_CHECKED`` by either, the masses agree within two
     combined standard errors, and so do the modes' ``log Z`` (plus ``LOG_Z_SLACK``);
  3. every mode is separated: no share of fit-chain draws, final SMC particles or
     parallel-tempering draws at ``b = 1`` outside the mode above ``MAX_LEFT``;
  4. every parallel-tempering run of every mode made at least ``MIN_ROUND_TRIPS`` round trips
     (the index process of a replica going from ``b = 1`` to ``b = 0`` and back): its
     stepping-stone draws at every rung have then been renewed from the exact reference draws
     many times;
  5. the SMC-from-prior total is **not significantly above** the per-mode total.

  A mode whose mass the reference-path SMC bounds below ``NEGLIGIBLE`` (:func:`mass_upper_bounds`)
  gets no parallel tempering (``skipped``): conditions 1, 2 (for the tempering), 3 (for the
  tempering's draws) and 4 do not apply to it, and it is reported as below 1 % with its bound.
  The tempering's masses are then shares among the tempered modes, so condition 2 compares the
  SMC's masses renormalized over the same modes.

**The multiple of the combined standard error.** "Within two combined standard errors" is a
95 % rule when the errors are known. Here each error is the spread of a few independent runs
(4 by default: 3 degrees of freedom), and the ratio of a difference to such an estimated error
follows Student's t, not the normal: at 3 degrees of freedom ``|t| > 2`` happens 14 % of the
time, not 5 %. :func:`agreement_factor` therefore takes the t quantile 0.975 at the
Welch-Satterthwaite degrees of freedom of the combined error (:func:`welch_dof`), never less
than 2 (the normal rule, kept for errors with many degrees of freedom). This **loosens** the
rule (3.18 instead of 2 at 3 degrees of freedom each side, about 2.45 at 3 + 3): it is the
nominal 5 % false-failure rate of the rule, stated as statistics, not fitted to a failure.

**Why skipping a negligible mode is safe.** Must-show agreement is required only of modes
holding at least ``MIN_CHECKED`` (1 %). :func:`mass_upper_bounds` bounds a mode's mass by
``expit(log Z_k - log Z_top + margin)`` (its mass is at most its share against the heaviest
mode alone), with the margin the t quantile times the combined error of the two means, plus the
low bias of an SMC ``log Z``-hat (``sd_k^2 / 2``, Jensen, for the light mode; the heavy mode's
bias only lowers the ratio, so it is left out) plus ``LOG_Z_SLACK``. A mode is skipped when that
upper end is below ``NEGLIGIBLE`` = 0.1 %: the bound would have to be wrong by a further factor
of 10 (2.3 nats beyond its margin) for the mode to reach 1 %, and the other modes' masses move
by at most its mass, far below their errors. The mode still gets the reference-path SMC and the
separation checks, its fit chains still enter the basin rule, and nothing about it is claimed as
established by two estimators.

  Why (5) is one-sided: a run of SMC gives an unbiased ``Z``-hat, so ``log Z``-hat is biased
  *low* (Jensen; by about ``sd^2 / 2`` for a run whose ``log Z``-hat has sd ``sd``) and a noisy
  run falls far below the truth more often than above it. The per-mode total sums the modes
  that were found, so it is at most the total evidence (up to its own error). An SMC-from-prior
  total far **below** the per-mode total is therefore the SMC's own noise, and says nothing
  against the masses; one significantly **above** it means posterior mass that none of the
  per-mode estimates holds (a mode never found): not established.

References
----------
Syed, S., Bouchard-Cote, A., Deligiannidis, G. & Doucet, A. (2022). Non-reversible parallel
tempering: a scalable highly parallel MCMC scheme. JRSS B 84(2), 321-350.
Xie, W., Lewis, P. O., Fan, Y., Kuo, L. & Chen, M.-H. (2011). Improving marginal likelihood
estimation for Bayesian phylogenetic model selection. Systematic Biology 60(2), 150-160.
"""

import math

import numpy as np

__all__ = ["check_reasons", "per_mode_reasons", "agreement_factor", "welch_dof",
           "failed_check_unknown", "failed_check_unknown_all", "advice", "CheckFailed",
           "CopiesOverlap", "OVERLAP_ADVICE", "symmetric_note",
           "mass_upper_bounds", "LOG_Z_SLACK", "MAX_LEFT", "MIN_CHECKED", "MIN_ROUND_TRIPS",
           "NEGLIGIBLE"]



class CheckFailed(str):
    """A reason saying that an estimator could not estimate a mode (too few draws, no overlap).

    A plain ``str`` to print and join; :func:`advice` recognises it by its type, not by its
    wording.

    Examples
    --------
    >>> r = CheckFailed("mode 0: the bridge failed (no overlap)")
    >>> r.startswith("mode 0"), isinstance(r, CheckFailed), isinstance("mode 0", CheckFailed)
    (True, True, False)
    """

    __slots__ = ()


#: what to run next when a mode's label copies overlap (:class:`CopiesOverlap`)
OVERLAP_ADVICE = ("The components are not told apart at this rank (a mode's label copies "
                  "overlap), which more SMC does not change: try a lower rank, or a model that "
                  "says more (a known noise level or prior scale).")


def symmetric_note(product_reasons):
    """The statement's note when a check ran again along a path that holds every label copy.

    Examples
    --------
    >>> symmetric_note(["mode 0: 30% of its draws sit on another label copy"])[:38]
    "the product reference's label copies o"
    """
    return ("the product reference's label copies overlapped (" + "; ".join(product_reasons)
            + "), so the check ran again along a path symmetrized over the label copies, "
            "whose per-mode log Z holds every copy (no log K! added)")


class CopiesOverlap(str):
    """A reason saying that a mode's label copies overlap.

    The rank's components are then not told apart, which more SMC does not change;
    :func:`advice` recognises it by its type.

    >>> isinstance(CopiesOverlap("mode 0: 79% ..."), str)
    True
    """

    __slots__ = ()


#: two log Z agree when within two combined errors plus this (nats): both are slightly low on
#: the log scale (Jensen), by up to about half a nat at the spreads of the runs established
LOG_Z_SLACK = 0.5
#: a mode whose draws leave it more often than this is not separated from the others
MAX_LEFT = 0.05
#: modes at or above this mass must agree between the estimators
MIN_CHECKED = 0.01
#: round trips every parallel-tempering run of every mode must make
MIN_ROUND_TRIPS = 10
#: a mode whose mass is bounded below this gets no second per-mode estimator
NEGLIGIBLE = 1e-3
#: a mode's reference-path SMC stops after two runs once they and the modes done before it
#: bound its mass below this (a thousandth of :data:`NEGLIGIBLE`; the bound's t quantile then
#: has about one degree of freedom): on breast SBS96 under the negative binomial at K = 4 the
#: second mode, 32 nats below the first, took 115-125 of the SMC's 239-267 CPU s for four runs
EARLY_STOP = 1e-6


def welch_dof(se1, dof1, se2, dof2):
    """Welch-Satterthwaite degrees of freedom of ``hypot(se1, se2)``.

    ``dof`` of an error from ``R`` independent runs is ``R - 1``; ``math.inf`` for a known
    error.

    Examples
    --------
    >>> welch_dof(1.0, 3, 1.0, 3)
    6.0
    >>> welch_dof(1.0, 3, 0.0, math.inf)
    3.0
    """
    v1, v2 = float(se1) ** 2, float(se2) ** 2
    den = (v1 * v1 / dof1 if v1 > 0 else 0.0) + (v2 * v2 / dof2 if v2 > 0 else 0.0)
    return (v1 + v2) ** 2 / den if den > 0 else math.inf


def agreement_factor(dof=math.inf):
    """How many combined standard errors two estimates may differ by: ``max(2, t_0.975(dof))``.

    See the module docstring (the t quantile where the errors come from a few runs).

    Examples
    --------
    >>> agreement_factor(), round(agreement_factor(3), 3), round(agreement_factor(6), 3)
    (2.0, 3.182, 2.447)
    """
    from scipy.stats import t as student_t

    d = float(dof)
    if not d > 0:
        return math.inf
    return 2.0 if math.isinf(d) else max(2.0, float(student_t.ppf(0.975, d)))


def _agree(diff, se1, dof1, se2, dof2, slack=0.0):
    comb = math.hypot(se1, se2)
    return abs(diff) <= agreement_factor(welch_dof(se1, dof1, se2, dof2)) * comb + slack + 1e-9


def mass_upper_bounds(run_log_z, n_done=None):
    """Upper ends of the modes' masses from per-mode SMC runs: ``(M,)``, NaN where unbounded.

    ``run_log_z`` is ``(M, R)``: each mode's ``R`` independent runs' ``log Z``-hat; with
    ``n_done`` (``(M,)``) mode ``k`` has only its first ``n_done[k]`` runs (a mode whose runs
    stopped early, :data:`EARLY_STOP`). The bound of mode ``k`` is ``expit(d_k + margin_k)``
    with ``d_k`` the difference of its mean ``log Z`` and the heaviest mode's, ``margin_k =
    agreement_factor(welch) * hypot(se_k, se_top) + sd_k^2 / 2 + LOG_Z_SLACK`` (module
    docstring; each mode's error and degrees of freedom from its own runs). The heaviest mode's
    bound is 1; a mode with a non-finite run or fewer than two runs is not bounded (NaN).

    Examples
    --------
    >>> b = mass_upper_bounds([[-10.0, -10.1, -9.9, -10.0], [-60.0, -61.0, -59.0, -60.0]])
    >>> float(b[0]), bool(b[1] < 1e-15)
    (1.0, True)
    >>> b2 = mass_upper_bounds([[-10.0, -10.1, -9.9, -10.0], [-60.0, -61.0, np.nan, np.nan]],
    ...                        n_done=[4, 2])  # two runs: a wider t quantile, a looser bound
    >>> bool(b[1] < b2[1] < 1e-15)
    True
    >>> float(mass_upper_bounds([[-10.0, -10.1, -9.9], [-2130.0, -2131.0, -2129.0]])[1])
    0.0
    """
    lz = np.atleast_2d(np.asarray(run_log_z, float))
    M, R = lz.shape
    n = np.full(M, R) if n_done is None else np.asarray(n_done, int)
    out = np.full(M, math.nan)
    rows = [lz[k, :n[k]] for k in range(M)]
    ok = np.array([r.size >= 2 and bool(np.all(np.isfinite(r))) for r in rows], bool)
    if not ok.any():
        return out
    mean = np.array([r.mean() if o else -np.inf for r, o in zip(rows, ok, strict=True)])
    sd = np.array([r.std(ddof=1) if o else math.nan for r, o in zip(rows, ok, strict=True)])
    se = sd / np.sqrt(np.maximum(n, 1))
    top = int(np.argmax(mean))
    for k in np.flatnonzero(ok):
        if k == top:
            out[k] = 1.0
            continue
        f = agreement_factor(welch_dof(se[k], n[k] - 1, se[top], n[top] - 1))
        x = mean[k] - mean[top] + f * math.hypot(se[k], se[top]) + 0.5 * sd[k] ** 2 \
            + LOG_Z_SLACK
        # the logistic function from the side whose exponential cannot overflow (ESCC SBS96:
        # restart groups 2,000 nats below the first)
        out[k] = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
    return out


def _finite(x):
    return x if np.isfinite(x) else math.inf


def check_reasons(name, log_z, left, total, total_se, prior_log_z, prior_log_z_se, *,
                  failed="too few draws in the mode", left_what="draws", swapped=None,
                  one_sided=False):
    """Why a per-mode check of the SMC from the prior is not established (``[]``: it is).

    Parameters
    ----------
    name : str
        The check (``"bridge"``, ``"reference path"``), as the reasons name it.
    log_z : array_like
        Per-mode ``log Z`` (non-finite: the estimator failed on that mode).
    left : array_like
        Per mode, the largest share of the check's draws that left the mode.
    total, total_se : float
        The check's total ``log Z`` and its error.
    prior_log_z, prior_log_z_se : float
        The SMC-from-prior ``log Z`` and its error.
    failed, left_what : str
        Why a mode can fail, and what left it, in the reasons' words.
    swapped : array_like, optional
        Per mode, the share of the check's final draws on another label copy of the mode
        (columns matching the mode's centre in another order). Above ``MAX_LEFT`` the ``K!``
        copies overlap, so the check's ``log K!`` over-counts its total: a reason.
    one_sided : bool
        Compare the totals one-sidedly, for a check whose per-mode estimates are SMC runs
        (unbiased ``Z``-hat, so ``log Z``-hat biased low, as the SMC from the prior's): only
        an SMC-from-prior total significantly **above** the check's fails (mass no mode's
        estimate holds); one far below is the SMC from the prior's own low noise (module
        docstring, condition 5). The swap guard above is what keeps an over-counted check
        total from passing. Not for the bridge, whose ratio estimate can err either way.

    Examples
    --------
    >>> check_reasons("bridge", [0.0], [0.0], -10.0, 0.1, -10.2, 0.1)
    []
    >>> check_reasons("bridge", [0.0, np.nan], [0.1, 0.0], -10.0, 0.1, -15.0, 0.1)[1]
    'mode 0: 10% of its draws left it (modes not separated)'
    >>> check_reasons("reference path", [0.0], [0.0], -10.0, 0.1, -15.0, 0.1, one_sided=True)
    []
    >>> len(check_reasons("reference path", [0.0], [0.0], -10.0, 0.1, -5.0, 0.1,
    ...                   one_sided=True))
    1
    """
    reasons = [CheckFailed(f"mode {k}: the {name} failed ({failed})")
               for k in np.flatnonzero(~np.isfinite(np.asarray(log_z, float)))]
    for k, lv in enumerate(left):
        if not lv <= MAX_LEFT:
            reasons.append(f"mode {k}: {lv:.0%} of its {left_what} left it (modes not "
                           "separated)")
    for k, sv in enumerate(() if swapped is None else swapped):
        if not sv <= MAX_LEFT:
            reasons.append(CopiesOverlap(f"mode {k}: {sv:.0%} of its {left_what} sit on another "
                                         "label copy (the copies overlap, so log K! "
                                         "over-counts)"))
    comb = math.hypot(_finite(prior_log_z_se), _finite(total_se))
    gap = prior_log_z - total if one_sided else abs(total - prior_log_z)
    if not gap <= 2.0 * comb + LOG_Z_SLACK:
        above = " (the SMC from the prior finds mass no mode's estimate holds)" if one_sided else ""
        reasons.append(f"{name} log Z {total:.2f} +- {total_se:.2f} vs SMC {prior_log_z:.2f} "
                       f"+- {prior_log_z_se:.2f}{above}")
    return reasons


def per_mode_reasons(smc, pt, prior_log_z, prior_log_z_se, n_modes,
                     min_trips=MIN_ROUND_TRIPS, *, skipped=(), prior_dof=math.inf):
    """Why two per-mode estimators along the reference path do not establish the masses.

    See the module docstring for the five conditions.

    Parameters
    ----------
    smc, pt : dict
        Per-mode results of the two estimators: ``log_z``, ``log_z_se``, ``mass``, ``se``,
        ``log_z_total``, ``log_z_total_se``, and the shares that left each mode: ``left`` and
        ``path_left`` (SMC), ``left`` and ``pt_left`` (parallel tempering); ``pt`` also
        ``round_trips`` (``(M, runs)``, per run).
    prior_log_z, prior_log_z_se : float
        The SMC-from-prior ``log Z`` and its error (only a total significantly above the
        per-mode total fails).
    n_modes : int
        Modes the SMC from the prior and the plain chains from prior draws found together: each
        must be among the per-mode estimates.
    min_trips : int
        Round trips required of every parallel-tempering run.
    skipped : sequence of int
        Modes bounded below ``NEGLIGIBLE`` that got no parallel tempering
        (:func:`mass_upper_bounds`): only the reference-path SMC's conditions apply to them.
    prior_dof : float
        Degrees of freedom of ``prior_log_z_se`` (runs - 1; ``math.inf``: known). The other
        errors' come from the number of runs in ``run_log_z`` of ``smc`` and ``pt`` (the
        agreement multiple is :func:`agreement_factor`).

    Examples
    --------
    >>> one = {"log_z": [-5.0], "log_z_se": [0.1], "mass": [1.0], "se": [0.0],
    ...        "log_z_total": -5.0, "log_z_total_se": 0.1, "left": [0.0], "path_left": [0.0],
    ...        "pt_left": [0.0], "round_trips": [[12, 15]]}
    >>> per_mode_reasons(one, one, -9.0, 3.0, 1)
    []
    >>> per_mode_reasons(one, one, -2.0, 0.1, 1)[0][:38]
    'the SMC from the prior finds log Z -2.'
    """
    reasons = []
    skip = {int(k) for k in skipped}
    lz_s, lz_p = np.asarray(smc["log_z"], float), np.asarray(pt["log_z"], float)
    if lz_s.size != n_modes or lz_p.size != n_modes:
        reasons.append(f"{n_modes} modes were found but {lz_s.size} (reference-path SMC) and "
                       f"{lz_p.size} (reference-path tempering) were estimated")
        return reasons
    for k in range(n_modes):
        for what, lz in (("reference-path SMC", lz_s), ("reference-path tempering", lz_p)):
            if not np.isfinite(lz[k]) and not (k in skip and lz is lz_p):
                reasons.append(CheckFailed(f"mode {k}: the {what} failed (too few draws in "
                                           "the mode)"))
    if reasons:
        return reasons
    m_s, m_p = np.asarray(smc["mass"], float), np.asarray(pt["mass"], float)
    s_s, s_p = np.asarray(smc["se"], float), np.asarray(pt["se"], float)
    e_s, e_p = np.asarray(smc["log_z_se"], float), np.asarray(pt["log_z_se"], float)
    d_s, d_p = _dof(smc), _dof(pt)
    # the tempering's masses are shares among the modes it tempered: the SMC's are put on the
    # same footing (Reuters "words": a mode skipped at 2.5e-6 left the SMC's heaviest mode at
    # 0.9999975 +- 1e-7 against the tempering's 1 +- 0, a spurious disagreement)
    kept = float(sum(m_s[k] for k in range(n_modes) if k not in skip))
    if skip and kept > 0.0:
        m_s, s_s = m_s / kept, s_s / kept
    for k in range(n_modes):
        if k in skip or max(m_s[k], m_p[k]) < MIN_CHECKED:
            continue
        if not _agree(m_s[k] - m_p[k], s_s[k], d_s, s_p[k], d_p):
            reasons.append(f"mode {k}: mass {m_s[k]:.3f} +- {s_s[k]:.3f} (reference-path SMC) "
                           f"vs {m_p[k]:.3f} +- {s_p[k]:.3f} (reference-path tempering)")
        if not _agree(lz_s[k] - lz_p[k], e_s[k], d_s, e_p[k], d_p, LOG_Z_SLACK):
            reasons.append(f"mode {k}: log Z {lz_s[k]:.2f} +- {e_s[k]:.2f} (reference-path "
                           f"SMC) vs {lz_p[k]:.2f} +- {e_p[k]:.2f} (reference-path tempering)")
    shares = {"fit-chain draws": np.maximum(smc["left"], pt["left"]),
              "final SMC particles": smc["path_left"], "tempering draws at b = 1":
              pt["pt_left"]}
    for k in range(n_modes):
        shares_k = shares if k not in skip else {  # no tempering draws
            w: v for w, v in shares.items() if not w.startswith("tempering")}
        worst = max(shares_k, key=lambda w: shares_k[w][k])
        if not shares_k[worst][k] <= MAX_LEFT:
            reasons.append(f"mode {k}: {shares_k[worst][k]:.0%} of its {worst} left it (modes "
                           "not separated)")
    copies = () if smc.get("symmetric") else smc.get("swapped", ())  # a symmetric path's
    for k, sv in enumerate(copies):  # particles spread over the copies by design
        if not sv <= MAX_LEFT:
            reasons.append(CopiesOverlap(f"mode {k}: {sv:.0%} of its final SMC particles sit on "
                                         "another label copy (the copies overlap, so log K! "
                                         "over-counts)"))
    trips = [np.asarray(t, float) for t in pt["round_trips"]]
    for k, sv in enumerate(() if pt.get("symmetric") else pt.get("pt_swapped", ())):  # why a
        # run is short of round trips (a symmetric path holds no replica on one copy)
        short = k < len(trips) and not (trips[k].size and trips[k].min() >= min_trips)
        if k not in skip and short and np.isfinite(sv) and sv > MAX_LEFT:
            reasons.append(CopiesOverlap(
                f"mode {k}: {sv:.0%} of its tempering draws at b = 1 sit on another label copy "
                "(the copies overlap: a replica that crossed is held at b = 1 by the copy's "
                "reference, so a run falls short of round trips)"))
    for k, t in enumerate(trips):
        if k not in skip and not (t.size and t.min() >= min_trips):
            reasons.append(f"mode {k}: a tempering run made {t.min() if t.size else 0:.0f} "
                           f"round trips (at least {min_trips} needed)")
    total, total_se = float(smc["log_z_total"]), float(smc["log_z_total_se"])
    comb = math.hypot(_finite(prior_log_z_se), _finite(total_se))
    f = agreement_factor(welch_dof(_finite(prior_log_z_se), prior_dof, _finite(total_se), d_s))
    if prior_log_z > total + f * comb + LOG_Z_SLACK:
        reasons.append(f"the SMC from the prior finds log Z {prior_log_z:.2f} +- "
                       f"{prior_log_z_se:.2f}, above the per-mode total {total:.2f} +- "
                       f"{total_se:.2f}: mass the per-mode estimates do not hold")
    return reasons


def _dof(out):
    """Degrees of freedom of a per-mode estimator's errors: its runs per mode minus one."""
    r = np.asarray(out.get("run_log_z", np.zeros((0, 0))), float)
    return float(r.shape[1] - 1) if r.ndim == 2 and r.shape[1] > 1 else math.inf


def failed_check_unknown(mass, se):
    """A check's per-mode masses, all unknown (NaN) when it failed on any mode.

    A check that could not estimate one mode's evidence (``se`` not finite: too few draws, or
    no overlap) gives the other modes shares among the modes it did estimate, which are not
    masses: nothing of it is compared with the SMC (its failure is already a reason).

    Examples
    --------
    >>> failed_check_unknown([1.0, 0.0], [0.0, math.nan])[0].tolist()
    [nan, nan]
    >>> failed_check_unknown([0.7, 0.3], [0.1, 0.1])[0].tolist()
    [0.7, 0.3]
    """
    m, s = np.asarray(mass, float), np.asarray(se, float)
    if np.all(np.isfinite(s)) or np.all(np.isnan(m)):
        return m, s
    return np.full(m.shape, math.nan), np.full(s.shape, math.nan)


def failed_check_unknown_all(mass, se, extra):
    """:func:`failed_check_unknown` over the SMC's modes and the modes only plain chains found.

    ``extra`` lists ``(mass, se)`` of the modes no SMC particle reached (or is None). A check
    that failed on any mode of either kind gives no mass to any: the extra modes' check masses
    are shares among the modes it did estimate, as the others' are. Returns ``(mass, se,
    extra)`` in the same layout.

    Examples
    --------
    >>> m, s, extra = failed_check_unknown_all([1.0], [0.0], [(0.0, math.nan)])
    >>> m.tolist(), extra
    ([nan], [(nan, nan)])
    >>> failed_check_unknown_all([0.6], [0.1], [(0.4, 0.1)])[2]
    [(0.4, 0.1)]
    """
    K = len(mass)
    extra = list(extra or [])
    m = np.concatenate([np.asarray(mass, float), [float(e[0]) for e in extra]])
    s = np.concatenate([np.asarray(se, float), [float(e[1]) for e in extra]])
    m, s = failed_check_unknown(m, s)
    return m[:K], s[:K], list(zip(m[K:].tolist(), s[K:].tolist())) or None


def advice(reasons, check):
    """What to run next, from the reasons a result is not established (one sentence or two).

    A reason of type :class:`CheckFailed` asks for more draws of the check (or another
    check); any other reason for more SMC.

    Examples
    --------
    >>> advice([CheckFailed("mode 0: the bridge failed (no overlap)")], "bridge")[:45]
    'The bridge could not estimate every mode: run'
    >>> advice(["the runs' log Z disagree (sd 3.10 nats)"], "bridge")[:23]
    'Run more SMC runs or pa'
    >>> advice([CopiesOverlap("mode 0: 79% of its draws sit on another label copy")],
    ...        "reference")[:50]
    'The components are not told apart at this rank (a '
    """
    out, failed = [], [isinstance(r, CheckFailed) for r in reasons]
    overlap = [isinstance(r, CopiesOverlap) for r in reasons]
    if any(failed):
        out.append(f"The {check} could not estimate every mode: run it with more draws per "
                   "mode (bridge_draws), or choose another check (check='reference' or "
                   "'ais').")
    if any(overlap):
        out.append(OVERLAP_ADVICE)
    if not all(f or o for f, o in zip(failed, overlap, strict=True)):
        out.append("Run more SMC runs or particles (n_runs, n_particles), more moves (n_moves) "
                   "or a higher cess.")
    return " ".join(out)
