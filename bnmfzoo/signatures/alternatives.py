"""Alternative sets of signatures at one rank, each with its posterior mass.

Where signatures overlap, more than one set of signatures can explain a catalogue about
equally well (a rotation of the factors that stays non-negative; Laurberg et al. 2008). This
module runs :func:`bnmfzoo.inference.smc_mode_masses` on the **Gamma-Poisson NMF at a fixed
rank K** and reports each mode it finds as an *alternative*: a set of K normalized signatures
(columns of ``A`` divided by their sums, aligned within the mode), their total exposures, their
best reference matches (:func:`bnmfzoo.signatures.assignment.assign` on the mode's members,
resampled by weight), and the mode's posterior mass with its interval.

**Which posterior.** The masses are those of the model

    ``Y_dn ~ Poisson((A W)_dn)``, ``A_dk ~ Gamma(a, b)``, ``W_kn ~ Gamma(a, b)``

(channels ``d``, samples ``n``; :func:`bnmfzoo.models.poisson`) **at that K**, not of the
compressive model that gives ``P(K | data)`` (:mod:`bnmfzoo.signatures.compressive`), and not
averaged over K. The default rate ``b = a sqrt(K / m)``, with ``m`` the mean count per cell,
gives ``E[(A W)_dn] = K (a / b)^2 = m``: the prior is centred on the catalogue's own scale
(``b = 1`` would put the prior mean of a cell at ``K`` mutations, orders of magnitude below a
genome catalogue, and the SMC would spend most of its temperatures moving the scale).

**What a mass means here.** A mode is a cluster of SMC particles whose signature sets lie
within a few degrees of each other (max matched angle between the columns of ``A``,
:func:`bnmfzoo.diagnostics._modes.mode_clustering.cluster_members`); its mass is the mean over
independent SMC runs of its weighted share, with a 95 % interval. The shares are among the
modes the particles reached: a mode no particle reached has an **unknown** mass, not zero
(reported as a row ``unknown``; when plain chains from the prior found such a mode it is
listed with ``reached = False`` and a missing mass). ``established`` is true only when the SMC
and the independent check (a reference path inside each mode, or bridge sampling) agree for
every mode holding at least 1 % and every run was healthy; otherwise ``statement`` says why
and the masses are indicative only.

References
----------
Laurberg, H., Christensen, M. G., Plumbley, M. D., Hansen, L. K. and Jensen, S. H. (2008).
Theorems on positive data: on the uniqueness of NMF. Computational Intelligence and
Neuroscience, 764206.
Zhou, Y., Johansen, A. M. and Aston, J. A. D. (2016). Toward automatic model comparison: an
adaptive sequential Monte Carlo approach. J. Comput. Graph. Statist. 25, 701-726.
"""

import math
import time

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["alternative_signatures", "alternatives_from_masses", "alternatives_table",
           "alternatives_bytes", "ALTERNATIVE_COLUMNS"]

#: the columns of ``alternatives.tsv`` (:func:`alternatives_table`)
ALTERNATIVE_COLUMNS = ["alternative", "mass", "mass_low", "mass_high", "mass_check",
                       "reached", "established", "signature", "mutations", "share",
                       "best_match", "match_probability", "cosine", "call", "cosine_to_first"]

#: member draws resampled (by weight) per alternative for the reference assignment
N_ASSIGN = 200


def _counts(catalog):
    """Samples x channels counts as float, with channel labels when the input has them."""
    channels = None
    if isinstance(catalog, xr.DataArray):
        if catalog.ndim != 2:
            raise ValueError(f"catalog must be 2-D (samples x channels), got dims {catalog.dims}")
        channels = [str(c) for c in catalog.coords[catalog.dims[1]].values] \
            if catalog.dims[1] in catalog.coords else None
        values = catalog.values
    elif isinstance(catalog, pd.DataFrame):
        raise TypeError("catalog must be a samples x channels array or DataArray; read a "
                        "SigProfiler table with bnmfzoo.signatures.read_catalog first")
    else:
        values = catalog
    try:
        X = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"catalog must hold numbers ({err})") from None
    if X.ndim != 2 or min(X.shape) < 1:
        raise ValueError(f"catalog must be a 2-D samples x channels array, got shape {X.shape}")
    if not np.isfinite(X).all() or (X < 0).any() or (X != np.round(X)).any():
        raise ValueError("catalog must hold non-negative integer counts")
    if X.sum() <= 0:
        raise ValueError("catalog holds no mutations")
    return X, channels


def _reference(reference, n_channels, channels):
    if reference is None:
        return None
    if not (isinstance(reference, xr.DataArray) and reference.ndim == 2):
        from bnmfzoo.signatures.formats import read_signatures

        reference = read_signatures(reference)
    if "channel" in reference.dims:
        reference = reference.transpose(..., "channel")
        if channels is not None and "channel" in reference.coords:
            ref_ch = [str(c) for c in reference.coords["channel"].values]
            if set(ref_ch) == set(channels) and ref_ch != channels:
                reference = reference.sel(channel=channels)
    if reference.shape[1] != n_channels:
        raise ValueError(f"reference has {reference.shape[1]} channels per signature and the "
                         f"catalog {n_channels}")
    return reference


def _tried_and_next(out, n_modes):
    """``(tried, next)``: the settings run, and what to run when not established.

    The advice names both the Python argument and the command-line option.
    """
    st = out.get("settings", {})
    R, P, M = st.get("n_runs"), st.get("n_particles"), st.get("n_moves")
    temps = st.get("n_temperatures") or []
    cpu = float(out.get("cpu_s", math.nan))
    text = out.get("statement", "")
    check = "none" if "no check" in text else out["modes"][0].get("check_estimator", "?")
    tried = (f"tried {R} SMC runs x {P} particles, {M} sweeps per move"
             + (f", {min(temps)}-{max(temps)} temperatures per run" if temps else "")
             + f", check {check}, {n_modes} mode(s) found; {cpu:.0f} CPU s")
    if out.get("established"):
        return tried, ""
    steps = []
    if "no check" in text:
        steps.append("run the check (check='auto', the default; it costs about the SMC's "
                     "CPU again per mode found)")
    if any(w in text for w in ("log Z disagree", "ESS", "SMC alone used")) or not steps:
        steps.append(f"twice the particles, n_particles={2 * P} (command line: --particles "
                     f"{2 * P}), or more sweeps per move (n_moves={2 * M}); the CPU grows in "
                     f"proportion: about {2 * cpu:.0f} s at this run's cost"
                     if P and M else "more particles or sweeps per move")
    if n_modes > 3:
        steps.append(f"{n_modes} modes within {R * P if R and P else 'the'} particles may "
                     "mean the runs have not settled rather than that the posterior has "
                     f"{n_modes} distinct sets of signatures: read an alternative whose "
                     "signatures all have cosine_to_first above 0.95 as the same set as "
                     "Alt1")
    return tried, "Next: " + "; ".join(steps) + "."


def _check_budget(model, budget_s, n_runs, n_particles, n_moves, options, rng):
    """The pilot's CPU seconds; a clear ``ValueError`` when the SMC would not fit ``budget_s``.

    The cost per particle and run is measured on a pilot of 2 runs x 4 particles (no check):
    the number of temperatures an adaptive run needs does not depend on its particles, so the
    SMC's cost is about ``n_runs x n_particles`` times it. A smaller run before it (2 runs x 2
    particles, not timed) compiles the kernels on a cold cache: timed, the compile made the
    pilot 40 times dearer on the symmetric test cohort (1.97 CPU s per particle and run
    against 0.05), and the budget was refused where a twentieth of it sufficed.
    """
    from bnmfzoo.inference import smc_mode_masses

    if not (isinstance(budget_s, (int, float)) and not isinstance(budget_s, bool)
            and budget_s > 0):
        raise ValueError(f"budget_s must be a positive number of CPU seconds, got {budget_s!r}")
    start = time.process_time()
    kw = {k: options[k] for k in ("cess", "inner_sweeps") if k in options}
    smc_mode_masses(model, n_runs=2, n_particles=2, n_moves=n_moves, check=None,
                    random_seed=rng, **kw)  # compiles on a cold cache: not timed
    t0 = time.process_time()
    pilot = smc_mode_masses(model, n_runs=2, n_particles=4, n_moves=n_moves, check=None,
                            random_seed=rng, **kw)
    per = (time.process_time() - t0) / 8
    need = per * n_runs * n_particles
    used = time.process_time() - start
    if need + used <= budget_s:
        return used
    temps = pilot["settings"]["n_temperatures"]
    fit = int(budget_s / (2 * per * n_runs))
    run = (f"run n_particles={fit} (command line: --particles {fit}), which spends about half "
           f"of it on the SMC, or raise budget_s (--budget) to about {2 * need:.0f}"
           if fit >= 2 else f"raise budget_s (--budget) to at least {8 * per * n_runs:.0f}")
    raise ValueError(f"budget_s = {budget_s:g} CPU s cannot hold the alternatives' SMC at "
                     f"{n_runs} runs x {n_particles} particles: a pilot (2 runs x 4 particles, "
                     f"{min(temps)}-{max(temps)} temperatures) took {per:.2f} CPU s per particle "
                     f"and run on this catalogue, so the SMC alone needs about {need:.0f} s and "
                     f"its check about as much again per mode found; {run}")


def _weighted_draws(sig, weight, n, rng):
    """``n`` member draws resampled by weight (all members when there are at most ``n``)."""
    if sig.shape[0] <= n:
        return sig
    p = weight / weight.sum()
    return sig[rng.choice(sig.shape[0], size=n, p=p)]


def alternative_signatures(catalog, rank, reference=None, *, cutoff=0.9, a=1.0, b=None,
                           n_runs=4, n_particles=500, n_moves=5, max_alternatives=10,
                           budget_s=None, random_seed=None, **masses_options):
    """Alternative signature sets at one rank and their posterior masses (module docstring).

    Parameters
    ----------
    catalog : array-like or xarray.DataArray, shape (n_samples, n_channels)
        Mutation counts, samples x channels (:func:`bnmfzoo.signatures.read_catalog`'s layout).
    rank : int
        Number of signatures K (e.g. the most probable one of
        :func:`bnmfzoo.signatures.extract`).
    reference : xarray.DataArray, str or path-like, optional
        Reference signatures (``signature`` x ``channel``, e.g. COSMIC v3.4 SBS96) for the best
        matches.
    cutoff : float
        Cosine below which a signature matches no reference signature (``novel``).
    a, b : float
        Gamma shape and rate of the entries of ``A`` and ``W``; ``b`` defaults to
        ``a sqrt(K / m)`` (``m``: mean count per cell), which centres the prior on the data's
        scale.
    n_runs, n_particles, n_moves : int
        Independent SMC runs, particles per run and sweeps per move
        (:func:`bnmfzoo.inference.smc_mode_masses`; fewer particles miss light modes).
    max_alternatives : int
        Alternatives listed one by one, heaviest first; the rest are summed into one row
        ``other``.
    budget_s : float, optional
        CPU seconds allowed to the SMC (passed to :func:`~bnmfzoo.inference.smc_mode_masses`).
        A pilot of 2 runs x 4 particles measures the cost per particle first; when the SMC
        would not fit, a ``ValueError`` says which ``n_particles`` fits. Measured on the 21
        breast genomes (96 x 21, K = 5): 0.85 CPU s per particle and run at ``n_moves = 5``
        (about 300 temperatures), so the defaults (4 x 500) need about 1,700 CPU s for the SMC
        alone.
    random_seed : int, optional
        Same seed, same result.
    **masses_options
        Further options of :func:`~bnmfzoo.inference.smc_mode_masses` (``check``,
        ``reference_runs``, ``reference_particles``, ``prior_chains``, ...).

    Returns
    -------
    xarray.Dataset
        Along ``alternative`` (``Alt1``, ``Alt2``, ... heaviest first, then ``other`` and
        ``unknown``): ``mass``, ``mass_low``, ``mass_high`` (95 %), ``mass_se``,
        ``mass_check`` (the independent estimate), ``check_agrees`` (within two combined
        errors), ``reached`` (an SMC particle reached the mode); along ``alternative``,
        ``signature`` (``Sig1`` ... ``SigK``, ordered by mutations within each alternative):
        ``mutations`` (expected total), ``best_match``, ``match_probability``, ``cosine``,
        ``call`` (with a reference), ``cosine_to_first`` (best cosine to a signature of
        ``Alt1``: which signatures differ between alternatives); along ``alternative``,
        ``signature``, ``channel``: ``signatures`` (weighted mean over the mode's members).
        ``attrs``: ``rank``, ``established``, ``statement``, ``tried`` (the settings run and
        their CPU), ``next`` (what to run when not established), ``model``, ``mass_listed`` (sum of
        the listed masses), ``unknown`` (what is not known), ``log_z``, ``log_z_se``,
        ``cpu_seconds``, the prior's ``a`` and ``b``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Y = rng.poisson(rng.gamma(1, 50, (12, 2)) @ rng.dirichlet(np.ones(6), 2))
    >>> alt = alternative_signatures(Y, 2, n_runs=2, n_particles=30, check=None,
    ...                              random_seed=0)  # doctest: +SKIP
    >>> alt["mass"].sel(alternative="Alt1").item() > 0.5  # doctest: +SKIP
    True
    """
    from bnmfzoo.inference import smc_mode_masses
    from bnmfzoo.models import poisson

    t0 = time.process_time()
    X, channels = _counts(catalog)
    N, D = X.shape
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not (
            1 <= rank <= min(N, D)):
        raise ValueError(f"rank must be an integer in [1, {min(N, D)}] (samples and channels "
                         f"of the catalog), got {rank!r}")
    K = int(rank)
    if not (0 < cutoff <= 1):
        raise ValueError(f"cutoff must be a cosine in (0, 1], got {cutoff}")
    if not (np.isfinite(a) and a > 0):
        raise ValueError(f"a must be positive and finite, got {a!r}")
    if b is None:
        b = a * math.sqrt(K / X.mean())
    elif not (np.isfinite(b) and b > 0):
        raise ValueError(f"b must be positive and finite, got {b!r}")
    if isinstance(max_alternatives, bool) or not isinstance(max_alternatives,
                                                            (int, np.integer)) \
            or max_alternatives < 1:
        raise ValueError(f"max_alternatives must be an integer >= 1, got {max_alternatives!r}")
    ref = _reference(reference, D, channels)
    seeds = np.random.SeedSequence(random_seed).spawn(3)
    model = poisson(X.T, K, a=float(a), b=float(b))
    if budget_s is not None:  # the SMC gets what the pilot left
        budget_s -= _check_budget(model, budget_s, n_runs, n_particles, n_moves,
                                  masses_options, np.random.default_rng(seeds[2]))
    out = smc_mode_masses(model, n_runs=n_runs, n_particles=n_particles, n_moves=n_moves,
                          budget_s=budget_s, random_seed=np.random.default_rng(seeds[0]),
                          **masses_options)
    out["prior"] = (float(a), float(b))
    ds = alternatives_from_masses(out, catalog, ref, cutoff=cutoff,
                                  max_alternatives=max_alternatives,
                                  random_seed=np.random.default_rng(seeds[1]))
    ds.attrs["cpu_seconds"] = time.process_time() - t0
    return ds


def alternatives_from_masses(masses, catalog, reference=None, *, cutoff=0.9,
                             max_alternatives=10, random_seed=None):
    """The alternatives table of a finished :func:`~bnmfzoo.inference.smc_mode_masses` run.

    ``masses`` must come from a Poisson NMF of ``catalog`` transposed (channels x samples, as
    :func:`alternative_signatures` builds it), so that the columns of each mode's ``A`` are
    signatures. Parameters and result as :func:`alternative_signatures`.
    """
    from bnmfzoo.signatures.assignment import assign, normalize_draws

    t0 = time.process_time()
    X, channels = _counts(catalog)
    N, D = X.shape
    if not (isinstance(masses, dict) and "modes" in masses and masses["modes"]):
        raise TypeError("masses must be the dict smc_mode_masses returns, with modes")
    K = int(masses["modes"][0]["A"].shape[2])
    if masses["modes"][0]["A"].shape[1] != D:
        raise ValueError(f"masses' factors have {masses['modes'][0]['A'].shape[1]} rows and the "
                         f"catalog {D} channels: the model must be Poisson NMF of the catalog "
                         "transposed (channels x samples)")
    if not (0 < cutoff <= 1):
        raise ValueError(f"cutoff must be a cosine in (0, 1], got {cutoff}")
    if isinstance(max_alternatives, bool) or not isinstance(max_alternatives,
                                                            (int, np.integer)) \
            or max_alternatives < 1:
        raise ValueError(f"max_alternatives must be an integer >= 1, got {max_alternatives!r}")
    ref = _reference(reference, D, channels)
    rng = np.random.default_rng(random_seed)
    out = masses
    a, b = out.get("prior", (math.nan, math.nan))
    modes = out["modes"]
    reached = sorted((m for m in modes if m["n_members"] > 0), key=lambda m: -m["mass"])
    not_reached = [m for m in modes if m["n_members"] == 0]
    shown = reached[:max_alternatives]
    rest = reached[max_alternatives:]
    labels = [f"Sig{k + 1}" for k in range(K)]
    names = [f"Alt{i + 1}" for i in range(len(shown))]
    sigs, totals, assigned = [], [], []
    for m in shown:
        s, e = normalize_draws(m["A"], m["W"])  # (n, K, D), (n, N, K)
        w = np.asarray(m["member_weight"], float)
        w = w / w.sum() if w.sum() > 0 else np.full(w.size, 1.0 / w.size)
        tot = np.einsum("n,nk->k", w, e.sum(axis=1))
        order = np.argsort(-tot, kind="stable")
        s = s[:, order]
        sigs.append(np.einsum("n,nkd->kd", w, s))
        totals.append(tot[order])
        if ref is not None:
            table, _ = assign(_weighted_draws(s, w, N_ASSIGN, rng), ref, cutoff=cutoff,
                              labels=labels)
            assigned.append(table)
    n_rows = len(shown) + (1 if rest else 0) + len(not_reached) + 1
    alt_names = (names + (["other"] if rest else [])
                 + [f"NotReached{i + 1}" for i in range(len(not_reached))] + ["unknown"])
    nan = np.full(n_rows, math.nan)
    mass, low, high, se, chk, chk_se = (nan.copy() for _ in range(6))
    for i, m in enumerate(shown):
        mass[i], low[i], high[i], se[i] = m["mass"], m["low"], m["high"], m["se"]
        chk[i], chk_se[i] = m["mass_check"], m["check_se"]
    if rest:
        i = len(shown)
        mass[i] = sum(m["mass"] for m in rest)
        se[i] = math.sqrt(sum(m["se"] ** 2 for m in rest))
        chk[i] = sum(m["mass_check"] for m in rest)
    for j, m in enumerate(not_reached):
        i = len(shown) + (1 if rest else 0) + j
        chk[i], chk_se[i] = m["mass_check"], m["check_se"]
    agrees = np.abs(mass - chk) <= 2.0 * np.hypot(se, chk_se) + 1e-9
    agrees[~(np.isfinite(mass) & np.isfinite(chk))] = False
    is_reached = np.array([True] * (len(shown) + (1 if rest else 0))
                          + [False] * (len(not_reached) + 1))
    sig_arr = np.full((n_rows, K, D), math.nan)
    tot_arr = np.full((n_rows, K), math.nan)
    first_cos = np.full((n_rows, K), math.nan)
    for i in range(len(shown)):
        sig_arr[i], tot_arr[i] = sigs[i], totals[i]
        u = sigs[i] / np.linalg.norm(sigs[i], axis=1, keepdims=True)
        u0 = sigs[0] / np.linalg.norm(sigs[0], axis=1, keepdims=True)
        first_cos[i] = (u @ u0.T).max(axis=1)
    ch = channels if channels is not None else [str(d) for d in range(D)]
    ds = xr.Dataset(
        {"mass": ("alternative", mass), "mass_low": ("alternative", low),
         "mass_high": ("alternative", high), "mass_se": ("alternative", se),
         "mass_check": ("alternative", chk), "check_se": ("alternative", chk_se),
         "check_agrees": ("alternative", agrees), "reached": ("alternative", is_reached),
         "mutations": (("alternative", "signature"), tot_arr),
         "cosine_to_first": (("alternative", "signature"), first_cos),
         "signatures": (("alternative", "signature", "channel"), sig_arr)},
        coords={"alternative": alt_names, "signature": labels, "channel": ch})
    if ref is not None:
        best = np.full((n_rows, K), "", dtype=object)
        prob, cos = np.full((n_rows, K), math.nan), np.full((n_rows, K), math.nan)
        call = np.full((n_rows, K), "", dtype=object)
        for i, t in enumerate(assigned):
            best[i], prob[i] = t["best_match"].to_numpy(), t["probability"].to_numpy()
            cos[i], call[i] = t["cosine"].to_numpy(), t["call"].to_numpy()
        ds["best_match"] = (("alternative", "signature"), best.astype(str))
        ds["match_probability"] = (("alternative", "signature"), prob)
        ds["cosine"] = (("alternative", "signature"), cos)
        ds["call"] = (("alternative", "signature"), call.astype(str))
    listed = float(np.nansum(mass))
    unknown = ("The mass of modes no SMC particle reached is unknown, not zero: the listed "
               "masses are shares among the modes the particles reached"
               + (f"; {len(not_reached)} mode(s) found only by plain chains from the prior "
                  "have no SMC mass" if not_reached else ""))
    tried, advice = _tried_and_next(out, len(modes))
    ds.attrs.update(
        rank=K, established=bool(out["established"]), statement=out["statement"],
        tried=tried, next=advice,
        model=(f"Gamma-Poisson NMF at K = {K} (A, W entries ~ Gamma({a:g}, {b:.4g})), not the "
               "compressive model of P(K | data)"),
        mass_listed=listed, unknown=unknown, log_z=float(out["log_z"]),
        log_z_se=float(out["log_z_se"]), a=float(a), b=float(b), cutoff=float(cutoff),
        n_modes=len(modes), cpu_seconds=time.process_time() - t0,
        masses_cpu_seconds=float(out["cpu_s"]))
    return ds


def alternatives_table(ds):
    """``alternatives.tsv``'s table: one row per (alternative, signature), heaviest first.

    Columns :data:`ALTERNATIVE_COLUMNS`. The ``other``, ``NotReached*`` and ``unknown`` rows
    have no signatures (one row each, ``signature`` empty); an unknown mass is written
    ``unknown``, never 0. ``share`` is the signature's share of the alternative's mutations.
    """
    established = bool(ds.attrs.get("established", False))
    has_ref = "best_match" in ds
    rows = []
    for alt in ds["alternative"].values:
        d = ds.sel(alternative=alt)
        mass = float(d["mass"])
        head = [str(alt), mass, float(d["mass_low"]), float(d["mass_high"]),
                float(d["mass_check"]), bool(d["reached"]), established]
        tot = d["mutations"].values
        if not np.isfinite(tot).any():
            rows.append(head + [""] + [math.nan] * 2 + [""] + [math.nan] * 2 + ["", math.nan])
            continue
        for k, sig in enumerate(ds["signature"].values):
            rows.append(head + [str(sig), tot[k], tot[k] / tot.sum()]
                        + ([str(d["best_match"].values[k]),
                            float(d["match_probability"].values[k]),
                            float(d["cosine"].values[k]), str(d["call"].values[k])]
                           if has_ref else ["", math.nan, math.nan, ""])
                        + [float(d["cosine_to_first"].values[k])])
    return pd.DataFrame(rows, columns=ALTERNATIVE_COLUMNS)


def alternatives_bytes(ds):
    """``alternatives.tsv`` as bytes: a missing mass written ``unknown``, other gaps empty."""
    t = alternatives_table(ds)
    t["mass"] = ["unknown" if not np.isfinite(v) else f"{v:.6g}" for v in t["mass"]]
    for col in ("mass_low", "mass_high", "mass_check"):
        t[col] = ["" if not np.isfinite(v) else f"{v:.6g}" for v in t[col]]
    return t.to_csv(sep="\t", index=False, float_format="%.6g", lineterminator="\n").encode()
