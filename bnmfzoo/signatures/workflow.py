"""The signature workflow: how many signatures, which ones, how sure; one labelled DataTree.

:func:`extract` reads a catalogue (SigProfiler layout or a samples x channels matrix), computes
the posterior over the number of signatures, by default from the active signatures of one
overfitted run under the compressive prior of Zito & Miller (2024), several chains
(:func:`bnmfzoo.signatures.compressive.compressive_rank_posterior`), or from Chib's evidence
over independent runs (``rank_method="chib"``:
:func:`bnmfzoo.signatures.evidence.rank_posterior`), and summarizes the posterior draws at the
most probable rank: the signatures (normalized, with intervals), the exposures per sample
(mutations, with intervals) and, given a reference catalogue, the assignment of each signature
(:func:`bnmfzoo.signatures.assignment.assign`). :func:`write_outputs` writes the result as the
field's tables (``ranks.tsv``, ``signatures.tsv``, ``assignment.tsv``, ``exposures.tsv``) and
``report.html``, all or none.
"""

import time

import numpy as np
import pandas as pd
import xarray as xr

from bnmfzoo.signatures import _gibbs
from bnmfzoo.signatures.assignment import (
    align_draws,
    assign,
    assignment_table,
    normalize_draws,
    summarize_draws,
)
from bnmfzoo.signatures.compressive import compressive_rank_posterior
from bnmfzoo.signatures.evidence import rank_posterior
from bnmfzoo.signatures.formats import CHANNELS, matrix_bytes, read_catalog, read_signatures
from bnmfzoo.signatures.modes import best_mode

__all__ = ["extract", "write_outputs"]


def _catalog(catalog):
    if isinstance(catalog, xr.DataArray) and catalog.ndim == 2 and catalog.shape[1] == 96:
        if [str(c) for c in catalog.coords[catalog.dims[1]].values] == list(CHANNELS):
            return read_catalog(catalog.to_pandas().T)
    if isinstance(catalog, np.ndarray):
        raise TypeError("catalog must be a file or a labelled table (pandas.DataFrame in "
                        "SigProfiler's layout, or a samples x channels DataArray), not a bare "
                        "array: the channels are matched by name")
    return read_catalog(catalog)


#: the columns of ``ranks.tsv`` for each rank method (``rank``, ``probability``, ``low``,
#: ``high`` first)
RANK_COLUMNS = {
    "compressive": ["rank", "probability", "low", "high", "draws", "ess", "mcse"],
    "chib": ["rank", "probability", "low", "high", "log_evidence", "se", "p_best", "min_ess",
             "reliable", "evaluated", "vb_bound"],
}


def extract(catalog, ranks=range(2, 13), reference=None, *, rank_method="compressive",
            cutoff=0.9, level=0.9, n_chains=4, k_max=None, n_runs=2, n_burn=None, n_keep=None,
            block_rows=1, block_burn=20, block_keep=100, screen=True, window=(1, 1),
            n_starts=0, likelihood=None, shape=1.0, strength=None, alternatives=False,
            budget_s=None, prior="de_novo", n_novel=5,
            alternatives_options=None, random_seed=None, progress=None):
    """Extract mutational signatures with a posterior over their number.

    Parameters
    ----------
    catalog : str, path-like, pandas.DataFrame or xarray.DataArray
        Counts in SigProfiler's layout (a ``MutationType`` column, one column per sample), a
        file of it, or a samples x channels DataArray (:func:`bnmfzoo.datasets.load_sbs96`).
    ranks : iterable of int
        Numbers of signatures reported (``"chib"``: compared under a uniform prior over them;
        ``"compressive"``: every rank a draw visits is reported too).
    reference : str, path-like, pandas.DataFrame or xarray.DataArray, optional
        A reference catalogue (e.g. COSMIC v3.4 SBS96) for the assignment.
    rank_method : {"compressive", "chib"}
        ``"compressive"`` (default): ``P(K | data)`` is the fraction of draws of an overfitted
        model (``k_max`` signatures) under the compressive prior with ``K`` active signatures
        (:func:`bnmfzoo.signatures.compressive.compressive_rank_posterior`); ``"chib"``: from
        Chib's evidence of each rank (:func:`bnmfzoo.signatures.evidence.rank_posterior`).
    cutoff : float
        Cosine below which a signature matches no reference signature (``novel``).
    level : float
        Level of every interval.
    n_chains, k_max
        ``"compressive"``: chains, and signatures of the overfitted model (default
        ``min(2 * max(ranks), 20)``).
    n_runs : int
        ``"chib"``: Chib runs per evaluated rank (one: the within-run error; more: also their
        spread).
    n_burn, n_keep
        Gibbs burn-in and kept sweeps of each chain or run (defaults: 2000 and 1000 for
        ``"compressive"``, 300 and 400 for ``"chib"``).
    block_rows, block_burn, block_keep
        ``"chib"``: rows per block of Chib's estimate and the sweeps of each block's run
        (:func:`bnmfzoo.signatures.evidence.chib_log_evidence`).
    screen, window
        ``"chib"``: the variational screen of the ranks
        (:func:`bnmfzoo.signatures.evidence.rank_posterior`): Chib's estimate only where the
        bound and then the evidence point; other ranks are reported as not evaluated.
    n_starts : int
        Chains run again at the most probable rank from ``n_starts`` other starts (the first a
        consensus of resampled KL-NMF fits, :func:`bnmfzoo.signatures.modes.best_mode`); the
        draws reported are those of the chain, these or the rank route's, with the highest mean
        log joint density. Where co-occurring signatures make local modes that blend them,
        this finds the more probable unblended mode; 0 (default) keeps the rank route's draws.
    likelihood : {"nb", "poisson"}, optional
        The counts' likelihood; default ``"nb"`` for ``"compressive"``, ``"poisson"`` for
        ``"chib"`` (its only one). ``"nb"``: negative binomial, a
        Gamma(phi, phi) multiplier per cell with one ``phi`` for the catalogue, sampled with
        the rest (:mod:`bnmfzoo.signatures._gibbs`); real catalogues are overdispersed, and
        under a Poisson likelihood the extra variance is absorbed by extra active signatures,
        so ``P(K)`` puts its mass on too many. ``"poisson"``: Poisson counts (faster; right
        when the counts are Poisson).
    shape : float or "random"
        ``"compressive"``: the Gamma shape ``a`` of the exposures, which also sets how hard
        the prior compresses an unused signature (default 1, Zito & Miller's); ``"random"``
        learns it, ``a ~ Gamma(1, 1)`` (:mod:`bnmfzoo.signatures._shape`), reported as
        ``shape_median`` and ``shape_interval``; not the default, because a learned ``a``
        weakens the compression and over-counts signatures absent from many samples
        (:func:`bnmfzoo.signatures.compressive.compressive_rank_posterior`).
    strength : float or "unit", optional
        ``"compressive"``: a compression strength ``c`` apart from the exposures' shape,
        ``mu_k ~ InvGamma(c N + 1, epsilon c N)``; ``"unit"`` is ``c = 1 / N`` (about 20-30
        nats charged per active signature at any cohort size, against about ``a N (log(m /
        epsilon) - 1.39)`` by default; :mod:`bnmfzoo.signatures.compressive`). None (default):
        ``c = a``, Zito & Miller's prior. ``"unit"`` compresses slowly: give it ``n_burn``
        of 6,000 or more (2,000 leaves an overcount on cohorts of 100 genomes; the note's
        R-hat flags it). Converged, it is no better calibrated than the default on
        co-occurring signatures, so it is not the default.
    prior : {"de_novo", "reference"}
        ``"de_novo"``: every signature de novo (default), or the prior informed by
        ``reference`` (Zito & Miller 2024's informative version,
        :mod:`bnmfzoo.signatures.compressive`): each reference signature gets a Dirichlet prior
        centred on it and ``n_novel`` de novo signatures stand beside them, all compressed.
        ``P(K)`` is then the posterior of the number of active reference and de novo
        signatures under that prior, which presumes the catalogue's signatures are close to
        the reference's; where the reference lacks one, a de novo signature must take it up.
        Not the default: on synthetic cohorts of 100 genomes with co-occurring signatures it
        is as confidently one short as the de novo prior (two UV signatures merged), and its
        chains disagree more often (the note's R-hat says so).
    n_novel : int
        ``prior="reference"``: de novo signatures beside the reference (default 5).
    alternatives : bool or int
        Also list alternative signature sets with their posterior masses at the most
        probable rank (``True``) or at the rank given, from SMC under the Gamma-Poisson NMF at
        that rank, not the compressive model
        (:func:`bnmfzoo.signatures.alternatives.alternative_signatures`); off by default (it
        costs minutes).
    budget_s : float, optional
        CPU seconds allowed to the whole call. The Gibbs sweeps check it between chunks of
        about a quarter of a second (the clock includes compiling the kernels on a first run
        without numba's cache): when it runs out, a ``ValueError`` says how far the run got
        and what to run next, and nothing is returned (no unfinished chains are
        summarized). With ``alternatives``, their SMC gets what is left
        (:func:`~bnmfzoo.inference.smc_mode_masses`'s ``budget_s``). None (default): no
        limit; a run that finishes within its budget has the same numbers as without one.
    alternatives_options : dict, optional
        Further options of :func:`~bnmfzoo.signatures.alternatives.alternative_signatures`
        (``n_particles``, ``n_runs``, ...).
    random_seed : int, optional
        Same seed, same result.
    progress : callable, optional
        Called with a line of text after each run.

    Returns
    -------
    xarray.DataTree
        ``ranks`` (``probability``, ``low``, ``high`` along ``rank``, and the method's own
        columns: :data:`RANK_COLUMNS`), ``signatures`` (``mean``, ``low``, ``high`` along
        ``signature``, ``channel``), ``exposures`` (``mean``, ``low``, ``high`` along ``sample``,
        ``signature``), ``assignment`` (with a reference: one row per signature and the
        match probabilities along ``reference``), ``alternatives`` (with ``alternatives``:
        :func:`~bnmfzoo.signatures.alternatives.alternative_signatures`); the root's attrs
        hold ``rank`` (the most
        probable), ``note`` (ranks that cannot be told apart), ``cpu_seconds``.

    Examples
    --------
    >>> from bnmfzoo.datasets import load_sbs96
    >>> dt = extract(load_sbs96("breast"), ranks=[2, 3], random_seed=0)  # doctest: +SKIP
    >>> dt["ranks"].to_dataframe()  # doctest: +SKIP
    >>> dt = extract("catalog.txt", ranks=range(2, 9), likelihood="poisson")  # doctest: +SKIP
    """
    t0 = time.process_time()
    X = _catalog(catalog)
    ref = None
    if reference is not None:
        ref = (reference if isinstance(reference, xr.DataArray)
               and "signature" in reference.dims else read_signatures(reference))
        ref = ref.transpose("signature", "channel") if "channel" in ref.dims else ref
    if not (0 < cutoff <= 1):
        raise ValueError(f"cutoff must be a cosine in (0, 1], got {cutoff}")
    if not (0 < level < 1):
        raise ValueError(f"level must be in (0, 1), got {level}")
    if not (alternatives is None or isinstance(alternatives, bool) or (
            isinstance(alternatives, (int, np.integer)) and alternatives >= 1)):
        raise ValueError(f"alternatives must be True, False or a rank >= 1, got "
                         f"{alternatives!r}")
    if budget_s is not None and not (isinstance(budget_s, (int, float, np.number))
                                     and not isinstance(budget_s, bool)
                                     and np.isfinite(budget_s) and budget_s > 0):
        raise ValueError(f"budget_s must be a positive number of CPU seconds, got {budget_s!r}")
    budget = (budget_s, None if budget_s is None else t0 + budget_s, t0)
    if likelihood is None:
        likelihood = "poisson" if rank_method == "chib" else "nb"
    if likelihood not in ("nb", "poisson"):
        raise ValueError(f"likelihood must be 'nb' or 'poisson', got {likelihood!r}")
    if rank_method == "chib" and strength is not None:
        raise ValueError("strength is an option of rank_method='compressive'")
    if rank_method == "chib" and likelihood != "poisson":
        raise ValueError("likelihood='nb' needs rank_method='compressive' (Chib's route is "
                         "Poisson only): pass likelihood='poisson'")
    if prior not in ("de_novo", "reference"):
        raise ValueError(f"prior must be 'de_novo' or 'reference', got {prior!r}")
    informed = None
    if prior == "reference":
        if ref is None or rank_method != "compressive" or k_max is not None:
            raise ValueError("prior='reference' needs a reference, rank_method='compressive' "
                             "and no k_max (the reference's signatures plus n_novel)")
        informed = ref.sel(channel=list(X.coords[X.dims[1]].values)).values.T
    if rank_method == "compressive":
        table = _budgeted(
            budget, "the compressive run", compressive_rank_posterior, X.values, ranks,
            k_max=k_max, n_chains=n_chains,
            n_burn=2000 if n_burn is None else n_burn,
            n_keep=1000 if n_keep is None else n_keep, thin=5, level=level,
            likelihood=likelihood, a=shape, strength=strength, random_seed=random_seed,
            progress=progress, **({} if informed is None else dict(reference=informed,
                                                                   n_novel=n_novel)))
        lik = ("negative-binomial (Gamma-Poisson, one shape phi)" if likelihood == "nb"
               else "Poisson")
        method = (f"{lik} NMF with the compressive prior of Zito & Miller (2024), "
                  f"{n_chains} Gibbs chains at {table.attrs['k_max']} signatures"
                  + ("" if informed is None else
                     f" ({informed.shape[1]} centred on the reference's, {n_novel} de novo)")
                  + "; P(K) is the fraction of draws with K active signatures")
    elif rank_method == "chib":
        table = _budgeted(budget, "Chib's evidence runs", rank_posterior, X.values, ranks,
                          n_runs=n_runs, n_burn=300 if n_burn is None else n_burn,
                          n_keep=400 if n_keep is None else n_keep,
                          block_rows=block_rows, block_burn=block_burn,
                          block_keep=block_keep, screen=screen, window=window,
                          level=level, random_seed=random_seed, progress=progress)
        if not table["reliable"].any():
            raise ValueError("no rank has a reliable evidence estimate (" + table.attrs["note"]
                             + "); run more sweeps (n_keep, --keep) or compare fewer ranks")
        method = ("Poisson NMF, Gibbs sampling from the variational means; ranks screened by "
                  "the variational bound, evidence by Chib (1995)")
    else:
        raise ValueError(f"rank_method must be 'compressive' or 'chib', got {rank_method!r}")
    best = int(table["rank"][table["probability"].fillna(-1.0).idxmax()])
    T_draws, V_draws = table.attrs["draws"]
    if n_starts:  # several starts at the chosen rank, the most probable mode kept
        picked = _budgeted(budget, f"the chains from other starts at rank {best}", best_mode,
                           np.asarray(X.values).T, best, n_starts=n_starts - 1,
                           chains=[(T_draws, V_draws)],
                           random_seed=np.random.SeedSequence(random_seed).spawn(1)[0])
        T_draws, V_draws = picked["T_draws"], picked["V_draws"]
    sig, expo = normalize_draws(T_draws, V_draws)
    sig, expo, moved = align_draws(sig, expo)
    # order the signatures by total exposure, largest first
    order = np.argsort(-expo.mean(axis=0).sum(axis=0), kind="stable")
    sig, expo = sig[:, order], expo[:, :, order]
    labels = [f"Sig{k + 1}" for k in range(best)]
    samples = X.coords["row"].values
    s_mean, s_lo, s_hi = summarize_draws(sig, level)
    e_mean, e_lo, e_hi = summarize_draws(expo, level)
    ranks_ds = xr.Dataset(
        {c: ("rank", table[c].to_numpy()) for c in RANK_COLUMNS[rank_method][1:]},
        coords={"rank": table["rank"].to_numpy()})
    ranks_ds.attrs["rank_method"] = rank_method
    sig_ds = xr.Dataset({n: (("signature", "channel"), v) for n, v in
                         (("mean", s_mean), ("low", s_lo), ("high", s_hi))},
                        coords={"signature": labels, "channel": list(CHANNELS)})
    sig_ds["draws"] = (("draw", "signature", "channel"), sig)
    exp_ds = xr.Dataset({n: (("sample", "signature"), v) for n, v in
                         (("mean", e_mean), ("low", e_lo), ("high", e_hi))},
                        coords={"sample": samples, "signature": labels})
    nodes = {"ranks": ranks_ds, "signatures": sig_ds, "exposures": exp_ds}
    if ref is not None:
        assign_table, probs = assign(sig, ref, cutoff=cutoff, level=level, labels=labels)
        a_ds = xr.Dataset.from_dataframe(assign_table.set_index("signature"))
        a_ds["match_probability"] = probs
        nodes["assignment"] = a_ds
    if alternatives is not False and alternatives is not None:
        from bnmfzoo.signatures.alternatives import alternative_signatures

        alt_rank = best if alternatives is True else alternatives
        alt_seed = int(np.random.SeedSequence(random_seed).spawn(2)[1].generate_state(1)[0])
        left = None if budget_s is None else budget_s - (time.process_time() - t0)
        if left is not None and left <= 0:
            raise ValueError(f"budget_s = {budget_s:g} CPU s ran out before the alternatives' "
                             f"SMC (P(K) took {time.process_time() - t0:.1f} s): nothing is "
                             "returned; raise budget_s (--budget) by the minutes the "
                             "alternatives need, or run them alone (alternative_signatures)")
        nodes["alternatives"] = alternative_signatures(
            X, alt_rank, ref, cutoff=cutoff, budget_s=left, random_seed=alt_seed,
            **(alternatives_options or {}))
        if progress is not None:
            progress("alternatives: " + nodes["alternatives"].attrs["statement"])
    dt = xr.DataTree.from_dict({f"/{k}": v for k, v in nodes.items()})
    dt.attrs.update(rank=best, note=table.attrs["note"], level=level, cutoff=cutoff,
                    n_runs=n_runs, n_samples=int(X.shape[0]), n_mutations=int(X.values.sum()),
                    n_draws=int(sig.shape[0]), draws_permuted=int(moved),
                    cpu_seconds=time.process_time() - t0, rank_method=rank_method,
                    method=method, likelihood=likelihood)
    if table.attrs.get("strength") is not None:
        dt.attrs.update(strength=float(table.attrs["strength"]))
    if table.attrs.get("a") is not None:
        a = table.attrs["a"]
        dt.attrs.update(shape_median=float(np.median(a)),
                        shape_interval=[float(v) for v in np.quantile(
                            a, [0.5 - level / 2, 0.5 + level / 2])])
    if table.attrs.get("phi") is not None:
        phi = table.attrs["phi"]
        dt.attrs.update(phi_median=float(np.median(phi)),
                        phi_interval=[float(v) for v in np.quantile(
                            phi, [0.5 - level / 2, 0.5 + level / 2])])
    return dt


def _budgeted(budget, stage, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with its Gibbs sweeps stopped at the budget's deadline.

    ``budget`` is ``(budget_s, deadline, t0)``; when the sweeps stop
    (:class:`bnmfzoo.signatures._gibbs.BudgetExceeded`), one ``ValueError`` says where the run
    was, what the whole run would need, and what to run next.
    """
    budget_s, deadline, t0 = budget
    try:
        with _gibbs.budget(deadline):
            return fn(*args, **kwargs)
    except _gibbs.BudgetExceeded as err:
        where = err.where or f"{stage} ({err.done} of {err.n_sweeps} sweeps of one run)"
        need = ("" if err.needed is None else
                f" At {1e3 * err.per_sweep:.2g} ms per sweep the whole run's sweeps need about "
                f"{err.needed:.0f} CPU s.")
        raise ValueError(
            f"budget_s = {budget_s:g} CPU s ran out after {time.process_time() - t0:.1f} s, in "
            f"{where}; nothing is returned or written.{need} Raise budget_s (--budget), or "
            "run fewer sweeps, chains or ranks (n_burn, n_keep, n_chains, ranks; --burn, "
            "--keep, --chains, --ranks)."
        ) from None


def _tables(dt):
    """The four TSV tables of a result, as ``[(name, bytes)]``."""
    r = dt["ranks"].to_dataset().to_dataframe().reset_index()
    cols = RANK_COLUMNS[dt["ranks"].attrs.get("rank_method", "chib")]
    files = [("ranks.tsv", r[cols].to_csv(sep="\t", index=False, float_format="%.6g",
                                          lineterminator="\n").encode())]
    s = dt["signatures"]
    files.append(("signatures.tsv", matrix_bytes(s["mean"].values,
                                                 s["signature"].values)))
    e = dt["exposures"]
    cols = {"Samples": e["sample"].values}
    for k in e["signature"].values:
        for part, suffix in (("mean", ""), ("low", "_low"), ("high", "_high")):
            cols[f"{k}{suffix}"] = e[part].sel(signature=k).values
    files.append(("exposures.tsv", pd.DataFrame(cols).to_csv(
        sep="\t", index=False, float_format="%.6g", lineterminator="\n").encode()))
    if "assignment" in dt:
        a = assignment_table(dt)
        files.append(("assignment.tsv", a.to_csv(sep="\t", index=False, float_format="%.6g",
                                                 lineterminator="\n").encode()))
    if "alternatives" in dt:
        from bnmfzoo.signatures.alternatives import alternatives_bytes

        alt = dt["alternatives"].to_dataset()
        files.append(("alternatives.tsv", alternatives_bytes(alt)))
    return files


def write_outputs(dt, out_dir):
    """Write the result's tables and ``report.html`` into ``out_dir``: every file, or none.

    ``ranks.tsv``, ``signatures.tsv``, ``exposures.tsv``, ``assignment.tsv`` (with a
    reference) and ``report.html``; a folder created here is removed again on failure.

    Returns
    -------
    list of pathlib.Path
    """
    from pathlib import Path

    from bnmfzoo._cli.safeio import write_files
    from bnmfzoo.signatures.html import report_html

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"output folder {out} exists and is not a folder")
    files = _tables(dt) + [("report.html", report_html(dt).encode())]
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        return write_files(out, files)
    except BaseException:
        if created:  # leave no empty folder behind
            out.rmdir()
        raise
