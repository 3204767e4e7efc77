"""Relabel factors across draws and chains so that per-factor summaries are meaningful.

NMF posteriors are invariant to permuting the factors (and, for models whose priors do not fix
the scale, nearly invariant to rescaling them). Different chains, or one chain over time, can
therefore carry the same factor under different labels ("label switching"), which makes
``az.summary`` means and R-hat of A and W meaningless. :func:`align` matches every draw's basis
columns (scale-normalised) to a reference with the Hungarian algorithm, permutes every variable
that has the factor dim consistently (A columns, W rows, ARD rates ``lambda_``, ...), and
optionally fixes the scale (unit-l1 columns of A, compensated in W).
"""

import warnings

import numpy as np
import xarray as xr

from bnmfzoo._base.validation import fmt
from bnmfzoo.diagnostics import distances as _d
from bnmfzoo.diagnostics._modes._dims import factor_dims

#: factor dim -> (basis variable, its other dim); the pair's dims are read from the result
#: (:func:`~bnmfzoo.diagnostics._modes._dims.factor_dims`), these are ours
BASES = {"factor": ("A", "row"), "factor_row": ("F", "row"), "factor_col": ("G", "col")}
#: the tri-factorization's bases (our names)
TRI_BASES = {f: b for f, b in BASES.items() if b[0] != "A"}
#: families whose likelihood is invariant to (A D, D^-1 W) and whose priors do not fix the scale
SCALE_AMBIGUOUS = {"exponential_gaussian", "tri_exponential_gaussian", "uniform_noise"}
#: families with a scale-fixing (simplex / bounded) parameterization
SCALE_FIXED = {"silf", "beta_dir", "dir_beta", "dir_dir"}
COSTS = ("angle", "l1")


def _suffix(fdim, name):
    """Suffix of the diagnostics of one basis: none for the pair's ``A``, else ``_<dim>``."""
    return "" if name == "A" else f"_{fdim}"


def _tri_bases(post):
    """The tri-factorization's bases in the result's own dim names, or ``{}``.

    ``F`` is (<row>, <factor_row>), ``S`` (<factor_row>, <factor_col>) and ``G`` (<col>,
    <factor_col>) besides ``chain, draw``: the row factor dim is the one ``F`` and ``S`` share,
    the column factor dim the one ``S`` and ``G`` share.
    """
    if not all(v in post for v in ("F", "S", "G")):
        return {}
    own = {v: [d for d in post[v].dims if d not in ("chain", "draw")] for v in ("F", "S", "G")}
    if any(len(d) != 2 for d in own.values()):
        return {}
    f_row = [d for d in own["F"] if d in own["S"]]
    f_col = [d for d in own["G"] if d in own["S"]]
    if len(f_row) != 1 or len(f_col) != 1 or f_row == f_col:
        return {}
    row = next(d for d in own["F"] if d != f_row[0])
    col = next(d for d in own["G"] if d != f_col[0])
    return {f_row[0]: ("F", row), f_col[0]: ("G", col)}


def _bases(post, dims):
    """``{factor dim: (basis variable, its other dim)}`` of a dataset, in the result's names."""
    bases = {}
    if "A" in post:
        fd = factor_dims(post, dims=dims)
        bases[fd.factor] = ("A", fd.row)
    bases.update({f: b for f, b in (_tri_bases(post) or TRI_BASES).items()
                  if f in post.dims and b[0] in post and f not in bases})
    return bases


def _basis_values(post, fdim, name, other):
    da = post[name]
    if fdim not in da.dims or other not in da.dims:
        raise ValueError(f"variable {name!r} must have dims ({other!r}, {fdim!r}), got {da.dims}")
    da = da.transpose("chain", "draw", other, fdim)
    return np.asarray(da.values, dtype=float)


def _reference_array(reference, fdim, shape):
    if isinstance(reference, dict):
        reference = reference.get(fdim)
    if reference is None:
        return None
    if isinstance(reference, xr.DataArray) and fdim in reference.dims:
        reference = reference.transpose(..., fdim)
    stack = np.ndim(getattr(reference, "values", reference)) == 3
    ref = _d.as_factor_array(reference, name="reference", min_ndim=2, max_ndim=3)
    if stack and ref.shape[1:] == shape:
        return ref  # several references (one per mode): each draw takes the nearest
    if ref.shape != shape:
        raise ValueError(f"reference must have shape {shape} (the basis of one draw), "
                         f"got {ref.shape}")
    return ref


def _match_all(Bn, ref, cost):
    """Permutations (C, S, R) matching each draw's columns to the reference's.

    The angle costs of all draws come from one matrix product of unit-l2 columns
    (``(C S R) x D`` times ``D x R``); only the R x R matchings run per draw (compiled).
    """
    C, S, D, R = Bn.shape
    flat = Bn.reshape(C * S, D, R)
    if cost == "angle":
        from bnmfzoo.diagnostics._modes.mode_clustering import angle_costs

        costs = angle_costs(_d.normalize_columns(flat, "l2"),
                            _d.normalize_columns(ref, "l2")[None])[:, 0]
        # cost[i, j]: reference column i against the draw's column j (as l1 below)
        return _d.match(np.swapaxes(costs, -1, -2)).reshape(C, S, R)
    perm = np.empty((C * S, R), dtype=np.intp)
    chunk = max(1, int(4e6 // (D * R * R)))
    for start in range(0, C * S, chunk):
        part = flat[start : start + chunk]
        perm[start : start + chunk] = _d.match(_d.l1_cost(np.broadcast_to(ref, part.shape), part))
    return perm.reshape(C, S, R)


def _find_permutations(B, ref, cost, n_iter, *, per_member=False):
    """Permutations (C, S, R) putting each draw's columns in its reference's order.

    Without a given reference (and with the angle cost) the draws are first split into modes
    (:func:`~.mode_clustering.cluster_members`) and each draw is matched to its own
    mode's representative, so draws of different modes are never forced onto one reference.
    Returns ``(perm, reference, mode_info)``; ``mode_info`` is None for a given reference.
    """
    Bn = _d.normalize_columns(B, "l1")
    C, S = B.shape[:2]
    if ref is not None and ref.ndim == 3:  # one reference per mode: match to the nearest
        from bnmfzoo.diagnostics._modes.mode_clustering import matched_angles

        dist, p = matched_angles(_d.normalize_columns(B.reshape(C * S, *B.shape[2:]), "l2"),
                                 _d.normalize_columns(ref, "l2"))
        nearest = dist.argmin(1)
        perm = p[np.arange(C * S), nearest].reshape(C, S, -1)
        return perm, _d.normalize_columns(ref[0], "l1"), None
    if ref is None and cost == "angle":
        from bnmfzoo.diagnostics._modes.mode_clustering import cluster_members

        n = C * S
        chain_of = np.repeat(np.arange(C), S)
        segment_of = None
        if not per_member:
            nseg = min(5, S)
            segment_of = chain_of * nseg + (np.tile(np.arange(S), C) * nseg) // S
        cl = cluster_members(B.reshape(n, *B.shape[2:]), segment_of=segment_of,
                             chain_of=chain_of, n_iter=max(1, n_iter))
        perm = cl["perm"].reshape(C, S, -1)
        refs = _d.normalize_columns(cl["reference"], "l1")
        info = {"label": cl["label"].reshape(C, S), "references": refs, "cut": cl["cut"]}
        return perm, refs[0], info
    fixed = ref is not None
    if ref is None:
        ref = Bn[0].mean(0)  # first chain's mean of the normalized basis
    ref = _d.normalize_columns(ref, "l1")
    perm = None
    for _ in range(1 if fixed else max(1, n_iter)):
        new = _match_all(Bn, ref, cost)
        if perm is not None and np.array_equal(new, perm):
            break
        perm = new
        # refine: mean of all aligned draws (pooled over chains), so one chain that switched
        # early does not leave a mixed reference
        ref = _d.normalize_columns(_permute(Bn, perm, -1).mean((0, 1)), "l1")
    return perm, ref, None


def _permute(values, perm, axis):
    """Reorder ``values`` along ``axis`` with a per-(chain, draw) permutation (C, S, R)."""
    moved = np.moveaxis(values, axis, -1)
    idx = perm.reshape(perm.shape[:2] + (1,) * (moved.ndim - 3) + perm.shape[2:])
    idx = np.broadcast_to(idx, moved.shape)
    return np.moveaxis(np.take_along_axis(moved, idx, axis=-1), -1, axis)


def _auto_normalize(dt, post, bases):
    model = dt.attrs.get("model")
    if model in SCALE_AMBIGUOUS:
        return True
    if model in SCALE_FIXED:
        return False
    # unknown model: a basis already on the simplex, or any factor matrix summing to one over
    # the factors (Dirichlet rows/columns of Bernoulli-mean models), has no scale to remove
    for fdim, (name, other) in bases.items():
        B = post[name]
        if np.allclose(B.sum(other), 1.0, atol=1e-6):
            return False
        for var in post.data_vars.values():
            if fdim in var.dims and var.ndim == 4:
                if np.allclose(var.sum(fdim), 1.0, atol=1e-6):
                    return False
    return True


def align(
    dt,
    *,
    reference=None,
    normalize=False,
    cost="angle",
    n_iter=5,
    group="posterior",
    rhat_threshold=1.01,
    warn=True,
    dims=None,
):
    """Relabel factors across draws and chains, within each mode, for summaries.

    For each factor dim present (the dim the basis ``A`` and the weights ``W`` share, whatever
    the model calls it: ``factor`` in ours, ``signature`` or ``k`` in a user's;
    ``factor_row`` / ``factor_col`` with ``F`` / ``G`` for a tri-factorization), every draw's
    basis columns are matched to a reference by the Hungarian algorithm on their angles (or l1
    distances of unit-l1 columns).
    Every variable of the group with that dim (A, W, ``lambda_``, a Bernoulli model's ``Wt``,
    S of a tri-factorization, ...) is permuted consistently. Values are only permuted, never
    rescaled, unless ``normalize`` asks for it.

    Without a ``reference`` the draws are first split into modes
    (:func:`~.mode_clustering.cluster_members`: stretches of each chain clustered by
    max matched angle) and each draw is matched to its own mode's representative (the aligned
    mean of the mode, refined ``n_iter`` times); the representatives of the other modes are
    labelled to match mode 0 as closely as possible. Draws of different modes are therefore
    never forced onto one reference; when the chains sit in different modes a warning names
    them (R-hat over all chains then stays large: different modes are different
    factorizations; see :func:`bnmfzoo.diagnostics.summary`). With ``cost="l1"`` (or a given
    reference) there is one reference for all draws: the first chain's mean normalised basis
    refined ``n_iter`` times by re-matching to the mean of all aligned draws.

    Parameters
    ----------
    dt : xarray.DataTree
        A result with draws of ``A`` (or ``F`` and ``G``) in ``group``.
    reference : array-like, xarray.DataArray or dict, optional
        Reference basis (D x R); for a tri-factorization a dict ``{"factor_row": F_ref,
        "factor_col": G_ref}``. Given references are used as they are (no refinement).
    normalize : {False, True, "auto"}
        Rescale each draw so the basis columns have unit l1 norm, compensating the weights
        (A -> A D^-1, W -> D W; for tri, F and G columns unit-l1 and S -> D_F S D_G), which
        removes the scale ridge of models whose priors do not fix it. Default ``False``: the
        draws keep their own scale (rescaling is not needed for R-hat of a converged chain
        and changes the reported values). ``"auto"``: on for ``exponential_gaussian``,
        ``tri_exponential_gaussian`` and ``uniform_noise`` (root attr ``model``), off for the
        simplex-parameterised ``silf``, ``beta_dir``, ``dir_beta`` and ``dir_dir``; for an
        unknown model (e.g. a bare ``pm.sample`` result), off when the basis columns, or any
        factor matrix over the factors, already sum to one, on otherwise. Hyperparameters
        such as ``lambda_`` are permuted but not rescaled.
    cost : {"angle", "l1"}
        Matching cost between normalised columns.
    n_iter : int
        Refinement passes of the default reference.
    group : str
        Group holding the draws (dims ``chain``, ``draw``).
    rhat_threshold : float
        After alignment, the (rank-normalized, split) R-hat of every entry of every variable
        with a factor dim (``A``, ``W``, ...) is computed over the chains; entries above this
        are counted (``n_rhat_above`` in the ``diagnostics`` group, per variable), and, when
        the draws sit in one mode, a warning names how many factor entries have not
        converged: aligned chains that still disagree are slow mixing within the mode, which
        alignment cannot fix (run longer). Not computed with fewer than 4 draws.
    warn : bool
        Issue the warnings (several modes; entries with R-hat above ``rhat_threshold``).
    dims : tuple or dict, optional
        The result's ``(row, factor, col)`` dims, e.g. ``("genome", "signature", "channel")``;
        default: read from the result (:func:`~bnmfzoo.diagnostics._modes._dims.factor_dims`).
        Every output keeps these names and their coordinates.

    Returns
    -------
    xarray.DataTree
        A new tree with the group aligned and a ``diagnostics`` group holding, per factor dim
        (suffix ``_factor_row`` etc. for tri dims): ``n_relabelled`` (chain; draws whose
        permutation is not the identity), ``n_switches`` (chain; draws whose permutation
        differs from the previous draw's), ``permutation`` (chain, draw, factor; the original
        label now at each position) and ``reference_A`` (the reference basis, unit-l1
        columns); ``n_rhat_above_<var>`` for each variable with a factor dim (entries with
        R-hat above ``rhat_threshold`` after alignment). A ``particles`` group holding the
        basis (dim ``particle``) is relabelled (and rescaled) against the same reference, its
        permutations stored as ``particle_permutation``. Without a given reference also
        ``mode`` (chain, draw) and ``mode_reference_A`` (mode, row, factor; unit-l1). Root
        attrs gain ``aligned = 1``, ``aligned_normalized``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo._base.results import build_datatree
    >>> rng = np.random.default_rng(0)
    >>> A0 = np.array([[1.0, 0.1], [0.9, 0.2], [0.1, 1.0]])
    >>> A = A0 * rng.lognormal(0.0, 0.05, size=(2, 4, 3, 2))  # 2 chains x 4 draws
    >>> W = rng.gamma(2.0, size=(2, 4, 2, 5))
    >>> A[1], W[1] = A[1][..., ::-1], W[1][:, ::-1]  # chain 1 has the labels swapped
    >>> out = align(build_datatree({"A": A, "W": W}), normalize=False)
    >>> out["diagnostics"]["n_relabelled"].values.tolist()
    [0, 4]
    >>> out.posterior["A"].mean(("chain", "draw")).values.round(1).tolist()
    [[1.0, 0.1], [0.9, 0.2], [0.1, 1.0]]
    """
    if not isinstance(dt, xr.DataTree):
        raise TypeError(f"dt must be an xarray.DataTree, got {type(dt).__name__}")
    if group not in dt.children:
        raise ValueError(f"group={group!r} not in the DataTree (groups: {sorted(dt.children)})")
    if cost not in COSTS:
        raise ValueError(f"cost must be one of {COSTS}, got {fmt(cost)}")
    if normalize not in ("auto", True, False):
        raise ValueError(f"normalize must be 'auto', True or False, got {normalize!r}")
    post = dt[group].to_dataset()
    if "chain" not in post.dims or "draw" not in post.dims:
        raise ValueError(f"group {group!r} must have dims 'chain' and 'draw'")
    bases = _bases(post, dims)
    if not bases:
        raise ValueError(
            f"group {group!r} has no basis to align (need A (rows x factors) and W, or F and G "
            f"of a tri-factorization); variables: {sorted(post.data_vars)}"
        )
    if normalize == "auto":
        normalize = _auto_normalize(dt, post, bases)

    mode_info = {}
    new_post, perms, refs = _align_dataset(post, bases, reference, normalize, cost, n_iter,
                                           mode_info=mode_info)
    diag = {}
    for fdim, info in mode_info.items():
        name, other = bases[fdim]
        suffix = _suffix(fdim, name)
        diag[f"mode{suffix}"] = (("chain", "draw"), info["label"])
        diag[f"mode_reference_{name}"] = ((f"mode{suffix}", other, fdim), info["references"])
        if info["references"].shape[0] > 1 and post.sizes["chain"] > 1 and warn:
            share = [sorted({int(c) for c in np.flatnonzero((info["label"] == k).any(1))})
                     for k in range(info["references"].shape[0])]
            warnings.warn(
                f"the draws of {name} sit in {len(share)} modes (chains per mode: "
                + "; ".join(f"mode {k}: {v}" for k, v in enumerate(share))
                + "); align relabels factors within each mode, but different modes are "
                "different factorizations, so R-hat over all chains stays large. Use "
                "diagnostics.modes / diagnostics.summary for per-mode results.",
                UserWarning, stacklevel=2,
            )
    for fdim, perm in perms.items():
        name, other = bases[fdim]
        suffix = _suffix(fdim, name)
        identity = np.arange(perm.shape[-1])
        relabelled = (perm != identity).any(-1)
        switched = np.zeros_like(relabelled)
        switched[:, 1:] = (perm[:, 1:] != perm[:, :-1]).any(-1)
        diag[f"n_relabelled{suffix}"] = (("chain",), relabelled.sum(1))
        diag[f"n_switches{suffix}"] = (("chain",), switched.sum(1))
        diag[f"permutation{suffix}"] = (("chain", "draw", fdim), perm)
        diag[f"reference_{name}"] = ((other, fdim), refs[fdim])
    n_modes = max([info["references"].shape[0] for info in mode_info.values()] or [1])
    rhat_counts = _rhat_counts(new_post, tuple(bases), rhat_threshold)
    for vname, (n_above, *_) in rhat_counts.items():
        diag[f"n_rhat_above_{vname}"] = ((), n_above)
    n_bad = sum(v[0] for v in rhat_counts.values())
    if warn and n_bad and n_modes == 1:
        warnings.warn(_unconverged_message(rhat_counts, rhat_threshold, new_post),
                      UserWarning, stacklevel=2)
    out = dt.copy()
    out[group] = xr.DataTree(new_post)

    # a weighted particle set is relabelled against the same reference
    if group != "particles" and "particles" in dt.children:
        pds = dt["particles"].to_dataset()
        pbases = {f: b for f, b in bases.items() if b[0] in pds and "particle" in pds[b[0]].dims}
        if pbases:
            names = [v for v in pds.data_vars if "particle" in pds[v].dims]
            sub = pds[names].rename({"particle": "draw"}).expand_dims("chain")
            prefs = refs if reference is not None else {
                f: (mode_info[f]["references"] if f in mode_info else refs[f]) for f in refs}
            new_sub, pperms, _ = _align_dataset(sub, pbases, prefs, normalize, cost, 1)
            new_sub = new_sub.isel(chain=0, drop=True).rename({"draw": "particle"})
            out["particles"] = xr.DataTree(pds.assign({v: new_sub[v] for v in names}))
            for fdim, perm in pperms.items():
                suffix = _suffix(fdim, pbases[fdim][0])
                diag[f"particle_permutation{suffix}"] = (("particle", fdim), perm[0])

    diag_ds = xr.Dataset(diag).assign_coords(
        {d: post.coords[d] for d in ("chain", "draw", *bases, "row", "col",
                                     *(other for _, other in bases.values()),
                                     *(post["W"].dims if "W" in post else ()))
         if d in post.coords}
    )
    if "diagnostics" in dt.children:
        old = dt["diagnostics"].to_dataset()
        diag_ds = old.drop_vars([v for v in diag_ds.data_vars if v in old]).merge(diag_ds)
    out["diagnostics"] = xr.DataTree(diag_ds)
    out.attrs.update({"aligned": 1, "aligned_normalized": int(bool(normalize))})
    return out


#: effective draws per entry that Vehtari et al. (2021) recommend before trusting a summary
TARGET_ESS = 400
#: draws per chain below which chains that sit apart are not told from burn-in (where more
#: draws are the remedy): the "chains sit apart" warning needs at least this many
MIN_APART_DRAWS = 1000


def _unconverged_message(counts, threshold, post, min_ess=None):
    """The warning of aligned chains that still disagree: the slowest entries and what next.

    ``counts`` is :func:`_rhat_counts`'s; with ``min_ess`` the entries with bulk ESS below it
    count as unconverged too (the estimator's check, :func:`convergence_message`).
    """
    n_bad = sum(v[0] for v in counts.values())
    draws, chains = int(post.sizes["draw"]), int(post.sizes.get("chain", 1))
    chains = int(post.attrs.get("chains_asked", chains))  # some chains left out of the check
    # worst first: largest R-hat (undefined R-hat last), then smallest ESS
    slow = sorted((e for v in counts.values() for e in v[3]),
                  key=lambda e: (-e[1] if np.isfinite(e[1]) else np.inf, e[2]))[:5]
    named = "; ".join(f"{name}: R-hat {r:.3f}, bulk ESS {ess:.0f}" if np.isfinite(r) else
                      f"{name}: bulk ESS {ess:.0f}" for name, r, ess in slow)
    min_ess_seen = min((e[2] for v in counts.values() for e in v[3]), default=np.nan)
    if np.isfinite(min_ess_seen) and min_ess_seen > 0:
        more = int(np.ceil(draws * TARGET_ESS / min_ess_seen / 100.0) * 100)
        next_run = (f"run about {more} draws per chain ({chains} chain{'s' * (chains != 1)}; now "
                    f"{draws}, bulk "
                    f"ESS {TARGET_ESS} is the usual target)")
    else:
        next_run = f"run many more draws per chain (now {draws})"
    if n_bad:
        parts = ", ".join(f"{v[0]} of {v[1]} entries of {k} (max {v[2]:.3f})"
                          for k, v in counts.items() if v[0])
        head = (f"after alignment the chains still disagree: {n_bad} factor entries have "
                f"R-hat > {threshold:g} ({parts})")
    else:
        n_low = sum(v[4] for v in counts.values())
        head = (f"after alignment {n_low} factor entries have bulk ESS < {min_ess:g} (min "
                f"{min(v[5] for v in counts.values()):.0f})")
    apart = _separated_chains(post, slow) if n_bad and draws >= MIN_APART_DRAWS else None
    if apart is not None:
        name, hi, lo = apart
        return (f"{head}; budget asked: {draws} draws x {chains} chain{'s' * (chains != 1)}. "
                f"Slowest: {named}. Label switching is undone, and the chains sit apart: the "
                f"central 90% of chain {hi}'s draws of {name} lies wholly above chain {lo}'s, "
                "so the chains stayed in different local modes for the whole run (possibly "
                "closer together than diagnostics.modes' default cut of 15 degrees) and more "
                "draws of the same chains need not bring them together. Their summaries are "
                "not to be trusted as one posterior. Next: split the chains with "
                "bnmfzoo.diagnostics.modes(result, threshold=5) and read each mode apart; "
                "sample the tempered posterior (step=bnmfzoo.inference.ReplicaExchangeGibbs(), "
                "ReplicaExchangePoisson() or ReplicaExchangeCollapsed() for a Gaussian, count "
                "or binary model) to move between them; or fit a smaller rank.")
    return (f"{head}; budget asked: {draws} draws x {chains} chain{'s' * (chains != 1)}. "
            f"Slowest: {named}. "
            "Label switching is undone, so this "
            "is slow mixing within the mode: these factor entries have not converged and "
            f"their summaries are not to be trusted. Next: {next_run}; if the draws "
            "still disagree, sample the tempered posterior (step=bnmfzoo.inference."
            "ReplicaExchangeGibbs(), ReplicaExchangePoisson() or ReplicaExchangeCollapsed() "
            "for a Gaussian, count or binary model) and check every entry with "
            "bnmfzoo.diagnostics.summary(result).")


def _separated_chains(post, slow):
    """Two chains that stayed apart on one of the ``slow`` entries, or None.

    Returns ``(entry, chain above, chain below)`` for the first entry on which two chains'
    central 90% intervals (5th to 95th percentile of their draws) do not overlap: each chain
    stayed on its own side for the whole run, so the ESS arithmetic of "run N times longer"
    does not apply (e.g. Reuters at K = 6 from one start: chains give a few documents to
    different topics for 3,000 draws without crossing).
    """
    for name, _, _ in slow:
        var, _, rest = name.partition("[")
        if var not in post or not {"chain", "draw"} <= set(post[var].dims):
            continue
        idx = tuple(int(i) for i in rest.rstrip("]").split(",")) if rest else ()
        x = post[var].transpose("chain", "draw", ...).values[(slice(None), slice(None)) + idx]
        if x.shape[0] < 2 or not np.all(np.isfinite(x)):
            continue
        lo, hi = np.percentile(x, [5, 95], axis=1)
        top, bottom = int(np.argmax(lo)), int(np.argmin(hi))
        if lo[top] > hi[bottom]:
            labels = post["chain"].values if "chain" in post.coords else np.arange(x.shape[0])
            return name, labels[top].item(), labels[bottom].item()
    return None


def convergence_message(post, fdims, *, rhat_threshold=1.01, min_ess=TARGET_ESS):
    """The unconverged-chains warning of aligned draws, or None when they look converged.

    Unconverged: an entry of a variable with a factor dim has R-hat above ``rhat_threshold``
    (over two or more chains; with one chain R-hat is not used) or bulk ESS below ``min_ess``
    (Vehtari et al. 2021). The message is :func:`align`'s: the slowest entries with their
    R-hat and bulk ESS, the budget asked and what to run next.

    Parameters
    ----------
    post : xarray.Dataset
        Aligned draws, dims ``chain``, ``draw`` first.
    fdims : tuple of str
        The factor dims (variables with one of them are checked).
    rhat_threshold, min_ess : float

    Returns
    -------
    str or None
    """
    one_chain = int(post.sizes.get("chain", 1)) < 2  # R-hat undefined: judge by ESS alone
    counts = _rhat_counts(post, tuple(fdims), np.inf if one_chain else rhat_threshold,
                          min_ess=min_ess)
    if not any(v[0] or v[4] for v in counts.values()):
        return None
    return _unconverged_message(counts, rhat_threshold, post, min_ess=min_ess)


def _rhat_counts(post, fdims, threshold, min_ess=None):
    """``{var: (n above, finite entries, max R-hat, slowest, n low ESS, min ESS)}``.

    Over the variables with a factor dim. R-hat is the rank-normalized split R-hat over the
    chains and ESS the bulk ESS (Vehtari et al. 2021), arviz-stats' numbers computed for all
    entries at once (:func:`bnmfzoo.diagnostics._convergence.rhat_ess_bulk`); entries with no
    finite R-hat (constant draws) are not counted. ``slowest`` lists up to 3 entries above the
    threshold (or, given ``min_ess``, with bulk ESS below it), worst first, as
    ``(label, R-hat, bulk ESS)``.
    """
    from bnmfzoo.diagnostics._convergence import rhat_ess_bulk

    names = [v for v, da in post.data_vars.items()
             if any(f in da.dims for f in fdims) and {"chain", "draw"} <= set(da.dims)]
    if not names or post.sizes["draw"] < 4:
        return {}
    out = {}
    for v in names:
        full, e = rhat_ess_bulk(post[v].transpose("chain", "draw", ...).values)
        r = full[np.isfinite(full)]
        low = np.isfinite(e) & (e < min_ess) if min_ess is not None else np.zeros(e.shape, bool)
        # worst first: R-hat, then (ties, e.g. one chain) the smallest ESS
        by_rhat = (np.where(np.isfinite(full), full, -np.inf) if threshold < np.inf
                   else np.zeros_like(e))
        order = np.lexsort((np.where(np.isfinite(e), e, np.inf).ravel(), -by_rhat.ravel()))
        dims = [d for d in post[v].dims if d not in ("chain", "draw")]
        slowest = [(f"{v}[{', '.join(str(int(i)) for i in idx)}]"
                    if dims else v, float(full[idx]), float(e[idx]))
                   for idx in (np.unravel_index(k, full.shape) for k in order)
                   if full[idx] > threshold or low[idx]][:3]
        out[v] = (int((r > threshold).sum()), int(r.size), float(r.max()) if r.size else np.nan,
                  slowest, int(low.sum()),
                  float(np.nanmin(e)) if np.isfinite(e).any() else np.nan)
    return out


def _align_dataset(post, bases, reference, normalize, cost, n_iter, *, per_member=False,
                   mode_info=None):
    """Align one Dataset with dims (chain, draw, ...); returns (dataset, perms, references)."""
    new_vars = {name: var for name, var in post.data_vars.items()}
    perms, refs, scales = {}, {}, {}
    for fdim, (name, other) in bases.items():
        B = _basis_values(post, fdim, name, other)
        ref = _reference_array(reference, fdim, B.shape[2:])
        perm, refs[fdim], info = _find_permutations(B, ref, cost, n_iter, per_member=per_member)
        if mode_info is not None and info is not None:
            mode_info[fdim] = info
        perms[fdim] = perm
        for vname, var in new_vars.items():
            if fdim in var.dims and "chain" in var.dims and "draw" in var.dims:
                var = var.transpose("chain", "draw", ...)
                vals = _permute(var.values, perm, var.dims.index(fdim))
                new_vars[vname] = var.copy(data=vals)
        if normalize:
            basis = new_vars[name].transpose("chain", "draw", other, fdim)
            s = basis.values.sum(2)  # (C, S, R)
            scales[fdim] = np.where(s > 0, s, 1.0)
    if normalize:
        new_vars = _rescale(new_vars, scales, bases)
    new = xr.Dataset({k: v.transpose(*post[k].dims) for k, v in new_vars.items()},
                     attrs=post.attrs)
    return new.assign_coords({c: post.coords[c] for c in post.coords}), perms, refs


def _rescale(new_vars, scales, bases):
    """Unit-l1 basis columns with compensating weights (pair or tri-factorization)."""
    out = dict(new_vars)

    def scaled(name, fdim, factor, power):
        var = out[name].transpose("chain", "draw", ...)
        axis = var.dims.index(fdim)
        shape = [1] * var.ndim
        shape[0], shape[1], shape[axis] = factor.shape[0], factor.shape[1], factor.shape[2]
        return var.copy(data=var.values * factor.reshape(shape) ** power)

    pair = [f for f, (name, _) in bases.items() if name == "A" and f in scales]
    if pair:
        f = pair[0]
        out["A"] = scaled("A", f, scales[f], -1)
        if "W" in out and f in out["W"].dims:
            out["W"] = scaled("W", f, scales[f], 1)
    for fdim, (name, _) in bases.items():  # F (factor_row) and G (factor_col), S between them
        if name in ("F", "G") and fdim in scales and name in out:
            out[name] = scaled(name, fdim, scales[fdim], -1)
            if "S" in out and fdim in out["S"].dims:
                out["S"] = scaled("S", fdim, scales[fdim], 1)
    return out
