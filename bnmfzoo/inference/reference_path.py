"""Per-mode evidence by tempered SMC from a fitted product-form reference (numeric core).

For each mode of an NMF posterior, :func:`reference_log_z` estimates the evidence ``Z_m`` of
that mode by adaptive-tempering SMC (:func:`bnmfzoo.inference.tempering.smc`) along the
geometric path from a **reference** ``q_m`` fitted to the mode to the posterior,

``pi_b ∝ q_m^(1 - b) (p0 L)^b``,  ``0 <= b <= 1``

(variational-reference tempering, Surjanovic et al. 2022; a product-form reference as in the
"tempering from a variational approximation" of Friel & Pettitt 2008's discussion). In the
language of :mod:`bnmfzoo.inference.tempering` the reference is the path's ``p0`` and the
tempered term is ``l'(x) = log p0(x) + log L(x) - log q_m(x)``, so the SMC's ``log Z`` is
``log int q_m exp(l') = log int p0 L`` over the region the particles stay in: the mode's
evidence. ``q_m`` is normalized, so no normalizer is added.

**The reference is conjugate to the family's conditionals**, so ``q^(1 - b) p0^b`` is again a
product of the same family and the family's exact Gibbs sweep runs unchanged with per-entry
prior arrays:

* Poisson NMF, Gamma priors ``Gamma(a0, b0)``: ``q`` is a product of Gammas ``Gamma(aq, bq)``
  (one per entry of ``A`` and ``W``), and ``q^(1 - b) p0^b`` is ``Gamma(b a0 + (1 - b) aq,
  b b0 + (1 - b) bq)``; the likelihood's power ``b`` is the power-posterior sweep
  (:mod:`bnmfzoo.inference.counts.tempering._power`, per-entry shapes and rates).
* Exponential-Gaussian NMF, ``Exponential(lam)`` priors: ``q`` is a product of normals
  truncated to ``[0, inf)``, ``TN(mu, s^2)``; the log density of ``q^(1 - b) p0^b`` is
  ``-Q u^2 / 2 + l u`` with ``Q = (1 - b) / s^2`` and ``l = (1 - b) mu / s^2 - b lam``, the
  per-entry prior of :func:`bnmfzoo.inference.gaussian.priors._prior_core.prior_nmf_sweep`,
  with noise precision ``b tau``. A free ``tau ~ Gamma(a0, b0)`` gets a Gamma reference
  ``Gamma(aq, bq)`` and the conditional ``Gamma(b a0 + (1 - b) aq + b n / 2, b b0 + (1 - b) bq
  + b SSE / 2)``.

**Fitting the reference.** Plain chains of the family's sweep at ``b = 1`` start from the
mode's members; their draws are aligned to the mode's representative (the column permutation
minimizing the summed angle), and ``q`` matches each entry's mean and variance, the variance
widened by ``widen`` (heavier than the posterior in every direction, so the importance weights
stay bounded near ``b = 0``). Only per-entry moments are fitted, so the error of the fit does
not grow like ``d^2 / n`` (as a full normal's does: :mod:`bnmfzoo.inference.mode_bridge`).

**Label switching.** ``q`` sits on one of the ``K!`` copies of the mode, and the particles
stay on it, so the run estimates one copy's evidence; the total is ``log K! + logsumexp_m log
Z_m`` as for the bridge (:func:`bnmfzoo.inference.mode_bridge.bridge_masses`). The share of
fit-chain draws and of final particles that left their mode is reported: a path that leaks is
not a per-mode estimate. When the copies overlap (a rank above what the data tell apart) the
route runs the check again along a path that holds every copy, with no ``log K!``: the
reference symmetrized over the copies for Beta-Dir, the orbit mixture of the product path for
the other families (:mod:`bnmfzoo.inference.tempering._label_orbit`).

**What a mode is** (the basin rule, :func:`bnmfzoo.diagnostics._modes.basins.mode_basins`).
The fit chains of all modes are pooled and clustered at the cut; clusters that chains move
between both ways are one mode. A draw has left mode ``m`` when its cluster is outside the
mode's basin (the component of the cluster nearest the mode's representative, re-centred on
its chains' draws), and a final path particle when it is outside the basin by
:func:`~bnmfzoo.diagnostics._modes.basins.outside_basin` (farther than the cut from every
cluster of the basin, and not in the tail of the basin's nearest cluster as far as the chains'
own draws reach: a broad mode's exact draws lie beyond the cut a share of the time). The
reference is fitted to all the draws inside the basin. The representative is re-centred
because a single member is one noisy draw: on GDSC IC50 at rank 5
every chain draw lies 20-24 degrees from the mode's mean, but two draws lie about 30 degrees
apart (``sqrt(2)`` times), so a cut of 30 degrees around one draw counted 22 % of a stationary
mode's draws as gone. Two modes whose chains cross both ways are reported as one.

The error of each ``log Z_m`` is the spread of ``n_runs`` independent runs; masses follow by the
delta method (:func:`bnmfzoo.inference.mode_bridge.masses_from_log_z`).

References
----------
Surjanovic, N., Syed, S., Bouchard-Cote, A. & Campbell, T. (2022). Parallel tempering with a
variational reference. NeurIPS 35.
Zhou, Y., Johansen, A. M. & Aston, J. A. D. (2016). Toward automatic model comparison: an
adaptive sequential Monte Carlo approach. J. Comput. Graph. Statist. 25(3), 701-726.
Friel, N. & Pettitt, A. N. (2008). Marginal likelihood estimation via power posteriors.
JRSS B 70(3), 589-607.
"""

import math
import time
from dataclasses import replace

import numpy as np
from scipy.special import gammaln, logsumexp

from bnmfzoo.diagnostics._modes.basins import (
    basin_shares,
    duplicate_modes,
    fit_basins,
    kept_basins,
    outside_basin,
)
from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2, matched_angles
from bnmfzoo.diagnostics._transient import trim_transients
from bnmfzoo.inference._mass_budget import check_budget
from bnmfzoo.inference.counts.tempering._reference_poisson import (
    COPULA_LEAPFROG,
    PoissonReferenceAdapter,
)
from bnmfzoo.inference.gaussian.modes._reference_gaussian import (
    GaussianReferenceAdapter,
)
from bnmfzoo.inference.tempering import smc

__all__ = ["ReferencePath", "ReferenceDataPath", "reference_adapter", "reference_log_z",
           "drop_modes", "label_copies", "fit_copies", "other_copy", "ModeCheck",
           "WIDEN", "DUPLICATE_SHARE", "LEAK_EXTEND", "local_defaults"]

#: variance inflation of the fitted reference over the draws' per-entry variance
WIDEN = 2.0
#: a mode whose final path particles left it more often than this is not separated
MAX_LEFT = 0.05
#: two modes each holding more than this share of the other's members (final path particles
#: or fit-chain draws) in its basin are one mode reached twice: a majority, so that two
#: distinct modes a little more than the cut apart, whose broad members partly fall within the
#: cut of the other's clusters, are not taken for copies (copies share ~100 %)
DUPLICATE_SHARE = 0.5
#: a mode whose fit chains left its basin more often than :data:`MAX_LEFT` has them run this
#: many times their kept draws more before the basin rule decides
#: (:func:`fit_chains_and_basins`' ``extend``). The faces at rank 3, fit chains from the modes
#: of 16 plain chains from prior draws, 16 seeds: 7 had a leaking mode; continued by 3 x 500
#: draws, 3 of them no longer leaked, by 10 x 500, 5 (``docs/results/
#: masses_copula_reference_3.md`` section 42). The fit chains cost 2-5 CPU s per run on the
#: real matrices measured, so 10 x one mode's stays far inside the budget
LEAK_EXTEND = 10


#: per family: the local moves, leapfrog steps and kept tempering scans per run that the
#: per-mode estimators of ``check="reference_pt"`` use by default (breast SBS96, Poisson K = 4:
#: with the plain sweep the reference-path SMC's log Z lands 1-2 nats low and the tempering
#: makes too few round trips; ``docs/results/masses_reference_moves.md``)
LOCAL_DEFAULTS = {"poisson": ("sweep+shear+rescale+hmc", 20, 2500)}


def local_defaults(family_name):
    """``(local, n_leap, pt_scans)``: the default local moves of a family's reference path.

    Poisson models get the group moves and HMC (:data:`LOCAL_DEFAULTS`); every other family
    the plain sweep, 10 leapfrog steps (unused) and 500 kept scans.

    Examples
    --------
    >>> local_defaults("exponential_gaussian")
    ('sweep', 10, 500)
    """
    return LOCAL_DEFAULTS.get(family_name, ("sweep", 10, 500))


def reference_adapter(family, local="sweep", n_leap=10):
    """The reference-path adapter of a family.

    ``family`` is a :func:`bnmfzoo.inference.smc_masses.family_of_model` result; a
    ``ValueError`` names why when the family has none. ``local`` (count models) adds exact
    moves after each sweep (:class:`bnmfzoo.inference.counts.tempering._local.RungMoves`:
    ``"sweep+rescale"``, ``"sweep+hmc"``, ...; ``n_leap`` leapfrog steps per HMC transition).
    A family marked ``symmetric`` gets a path that holds every label copy: Beta-Dir at
    ``K <= 4`` the reference symmetrized over the copies
    (:class:`~bnmfzoo.inference.binary._reference_symmetric.BetaDirSymmetricReference`), the
    other families and Beta-Dir above ``K = 4`` their product reference's path mixed over the
    label orbit (:class:`~bnmfzoo.inference.tempering._label_orbit.LabelOrbitAdapter`).
    """
    if getattr(family, "symmetric", False):
        from bnmfzoo.inference.binary._reference_symmetric import MAX_COPIES
        from bnmfzoo.inference.tempering._label_orbit import LabelOrbitAdapter

        base = reference_adapter(replace(family, symmetric=False), local, n_leap)
        if family.name != "beta_dir" or math.factorial(base.K) > MAX_COPIES:
            return LabelOrbitAdapter(base)  # Beta-Dir above K = 4: beyond its O(K K!) sweep
    inner = int(getattr(family.tempered, "inner_sweeps", 1) or 1)
    symmetric = bool(getattr(family, "symmetric", False))
    if family.name == "poisson":
        return PoissonReferenceAdapter(family.tempered, inner, local, n_leap)
    if family.name == "negative_binomial":  # Gamma reference, Gamma-mixed power path
        from bnmfzoo.inference.counts.tempering._reference_nb import NBReferenceAdapter

        return NBReferenceAdapter(family.tempered, inner, local, n_leap)
    if local != "sweep":
        raise ValueError(f"local={local!r} is available for count models only, not "
                         f"{family.name!r}")
    if family.name == "exponential_gaussian":
        return GaussianReferenceAdapter(family.tempered, 1)
    if family.name == "beta_dir":  # per-label categorical reference (the binary wing)
        from bnmfzoo.inference.binary._reference import BetaDirReference
        from bnmfzoo.inference.binary._reference_symmetric import BetaDirSymmetricReference

        cls = BetaDirSymmetricReference if symmetric else BetaDirReference
        return cls(family.draw_prior(np.random.default_rng(0)), inner)
    raise ValueError(f"the reference path supports Poisson, negative-binomial, "
                     f"exponential-Gaussian and Beta-Dir models, not {family.name!r}")


class ReferencePath:
    """The tempered sweep of ``q^(1 - b) (p0 L)^b``.

    A :class:`~bnmfzoo.inference.tempering.TemperedSweep` whose ``p0`` is ``q``:
    ``loglik = log p0 + log L - log q``.

    Parameters
    ----------
    adapter : object
        :func:`reference_adapter` of the family.
    q : dict
        The fitted reference (``adapter.fit``).
    """

    def __new__(cls, adapter, q):
        """The path class the adapter needs.

        An :class:`AdapterTargetPath` when the adapter has its own ``log_target``, a
        :class:`ReferenceDataPath` when it has a data term ``log_data``.
        """
        if cls is ReferencePath and callable(getattr(adapter, "log_target", None)):
            cls = AdapterTargetPath  # the label orbit's mixture path
        elif cls is ReferencePath and callable(getattr(adapter, "log_data", None)):
            cls = ReferenceDataPath  # a path that is not geometric in b
        return super().__new__(cls)

    def __init__(self, adapter, q):
        self.adapter, self.q = adapter, q
        self.dimension = adapter.dimension

    def sweep(self, state, beta, rng):
        """Exact sweep(s) of ``pi_beta`` in place (after the CPU budget's check)."""
        check_budget()
        self.adapter.sweep(self.q, state, beta, rng)

    def loglik(self, state):
        """``log p0 + log L - log q`` of ``state``."""
        a = self.adapter
        return a.log_p0(state) + a.loglik(state) - a.log_q(self.q, state)

    def copy(self, state):
        """An independent copy of ``state``."""
        return self.adapter.copy(state)

    def draw(self, rng):
        """One exact draw of ``q``."""
        return self.adapter.draw_q(self.q, rng)


class ReferenceDataPath(ReferencePath):
    """The path ``q^(1 - b) p0^b F_b`` of an adapter whose data term ``F_b`` is no power of ``L``.

    ``adapter.log_data(state, b)`` is ``log F_b`` (0 at ``b = 0``, ``log L`` at 1; the negative
    binomial's Gamma-mixed power, :mod:`bnmfzoo.inference.counts.tempering._reference_nb`).
    The SMC and the tempering's swaps and stepping stones read the path through
    :meth:`log_target`, ``log pi_b - log q`` up to the normalizer: ``b (log p0 - log q) +
    log F_b``; at ``b = 1`` it is :meth:`loglik`.
    """

    def log_target(self, state, beta):
        """``b (log p0 - log q) + log F_b`` at ``state`` (0 at ``b = 0``)."""
        a, b = self.adapter, float(beta)
        if b == 0.0:
            return 0.0
        return b * (a.log_p0(state) - a.log_q(self.q, state)) + a.log_data(state, b)

    def log_target_batch(self, states):
        """``b -> [log_target(s, b) for s in states]`` while the states are unchanged."""
        a = self.adapter
        d = np.array([a.log_p0(s) - a.log_q(self.q, s) for s in states])
        data = a.log_data_batch(states)

        def at(beta):
            b = float(beta)
            return np.zeros(d.size) if b == 0.0 else b * d + data(b)

        return at


class AdapterTargetPath(ReferencePath):
    """A path whose adapter gives its log target ``log pi_b - log pi_0``.

    The adapter's ``log_target(q, s, b)`` and ``log_target_batch(q, states)``: the mixture over
    the label orbit (:class:`~bnmfzoo.inference.tempering._label_orbit.LabelOrbitAdapter`). At
    ``b = 1`` the log target is :meth:`loglik`.
    """

    def log_target(self, state, beta):
        """The adapter's log target of ``state`` at ``beta`` (0 at ``b = 0``)."""
        return self.adapter.log_target(self.q, state, beta)

    def log_target_batch(self, states):
        """``b -> [log_target(s, b) for s in states]`` while the states are unchanged."""
        return self.adapter.log_target_batch(self.q, states)

    def loglik(self, state):
        """The log target at ``b = 1``."""
        return self.adapter.log_target(self.q, state, 1.0)


def _aligned_draws(family, adapter, ref, starts, rng, n_chains, n_draws, thin, n_burn,
                   ends=None):
    """Plain-chain draws of one mode: ``(aligned draws, bases (n, D, K), chain, log joint)``.

    ``aligned draws``: aligned to ``ref``. Every draw is kept; which of them stay in the mode
    is decided afterwards, over all modes' draws at once
    (:func:`bnmfzoo.diagnostics._modes.basins.mode_basins`). ``log joint`` is each draw's
    log-likelihood plus log prior (:func:`mode_order`). Chain ``c`` starts from a copy of
    ``starts[c % len(starts)]``; with a list ``ends``, each chain's last state is appended to
    it (so the chains can be continued).
    """
    rows, bases, chain, joint = [], [], [], []
    move = getattr(adapter, "plain_move", lambda s, rng: None)
    for c in range(n_chains):
        s = family.tempered.copy(starts[c % len(starts)])
        for _ in range(n_burn):
            family.tempered.sweep(s, 1.0, rng)
            move(s, rng)
        for _ in range(n_draws):
            for _ in range(thin):
                family.tempered.sweep(s, 1.0, rng)
                move(s, rng)
            A = np.asarray(family.factors(s)[0], float)
            _, perm = matched_angles(_unit_l2(A[None]), ref[None])
            rows.append(adapter.draws(s, perm[0, 0]))
            bases.append(A.copy())
            chain.append(c)
            joint.append(float(adapter.loglik(s)) + float(adapter.log_p0(s)))
        if ends is not None:
            ends.append(s)
    return np.array(rows), np.array(bases), np.array(chain), np.array(joint)


def mode_order(fits, inside, min_draws=8):
    """The order in which :func:`reference_log_z` estimates the modes: heaviest-looking first.

    Modes by the mean log joint (log-likelihood plus log prior) of their fit-chain draws inside
    their basin, highest first; modes with fewer than ``min_draws`` such draws (they get no
    path) last. A proxy only: it decides which modes come before a mode whose runs may stop
    early (``early_stop``), not any mass; a mode far below the heaviest is then bounded by it.

    Examples
    --------
    >>> fits = [(None, None, None, np.array([-50.0] * 10)),
    ...         (None, None, None, np.array([-9.0] * 10)),
    ...         (None, None, None, np.array([-1.0] * 3))]
    >>> mode_order(fits, [np.ones(10, bool), np.ones(10, bool), np.ones(3, bool)])
    [1, 0, 2]
    """
    def key(k):
        joint = np.asarray(fits[k][3])[inside[k]]
        return (joint.size < min_draws, -float(joint.mean()) if joint.size else 0.0, k)

    return sorted(range(len(fits)), key=key)


def _label_center(bases, ref):
    """Unit-l2 mean of the mode's draws ``bases (n, D, K)`` with columns in ``ref``'s order."""
    U = _unit_l2(np.asarray(bases, float))
    _, perm = matched_angles(U, ref[None])
    aligned = np.take_along_axis(U, perm[:, 0][:, None, :], axis=2)
    return _unit_l2(aligned.mean(0)[None])[0]


def other_copy(U, center):
    """Which draws ``U`` (unit-l2 bases) sit on another label copy of the mode: ``(n,)`` bool.

    Their columns best match the mode's centre (:func:`_label_center`) in another order.
    """
    perm = matched_angles(U, center[None])[1][:, 0]
    return np.any(perm != np.arange(center.shape[-1]), axis=1)


class ModeCheck:
    """Is a state inside mode ``k``? The check of a tempering's ``b = 1`` replica (``in_mode``).

    Inside by :func:`~bnmfzoo.diagnostics._modes.basins.outside_basin` (the test of the mode's
    chains' own draws). Each checked state on another label copy (:func:`other_copy`) is
    counted: ``swapped`` is their share. A replica there is held at ``b = 1`` by the copy's
    reference (its ``l'`` tens of nats above the next rung's: on a 12 x 10 Poisson matrix at
    rank 2, log q fell by 77 nats while log p0 and log L stayed typical), so a run short of
    round trips with a large ``swapped`` says the copies overlap, not that it was too short.
    ``bases`` are the mode's fit-chain bases inside its basin, ``ref`` its representative.
    """

    def __init__(self, family, basins, k, cut, bases, ref):
        self.family, self.basins, self.k, self.cut = family, basins, k, cut
        self.center, self.copies = _label_center(bases, ref), []

    def __call__(self, state):
        """True when ``state`` is inside the mode (and its copy is counted)."""
        U = _unit_l2(np.asarray(self.family.factors(state)[0], float)[None])
        self.copies.append(bool(other_copy(U, self.center)[0]))
        return not bool(outside_basin(U, self.basins, self.k, self.cut)[0])

    @property
    def swapped(self):
        """Share of the checked states on another label copy (NaN before any check)."""
        return float(np.mean(self.copies)) if self.copies else math.nan


def fit_chains_and_basins(family, adapter, refs, starts, rng, cut, n_chains, n_draws, thin,
                          n_burn, fits=None, trim=False, extend=LEAK_EXTEND, kept=None):
    """Every mode's fit chains and the basin rule over all of them at once.

    Returns ``(fits [(aligned draws, bases, chain, log joint) per mode], basins (the result of
    :func:`bnmfzoo.diagnostics._modes.basins.mode_basins`), inside [per mode, which of its
    draws are inside its basin], fit_cpu)``. With ``fits`` (one per mode of ``refs``) the chains
    are not run again: only the basin rule (modes dropped as copies leave the others' basins;
    ``kept``, ``(basins before, the modes kept)``, carries a continuation's record over).
    With ``trim``, each chain's draws before its start-up transient ends (the MSER point of its
    log joint, :func:`bnmfzoo.diagnostics._transient.transient_end`) are dropped from the fits
    (on ESCC SBS96 at K = 4 they were half of every chain, and a copula fitted with them needed
    three times the SMC's temperatures: that module's docstring).

    When the chains are run here, the chains of every mode whose draws left its basin more
    often than :data:`MAX_LEFT` run ``extend`` times ``n_draws`` more draws each (0: none),
    from where they stopped, and the rule is applied again over the whole chains
    (``basins["extended"]``: those modes; ``basins["left_before"]``: the shares before). A
    chain that stopped between two clusters of one broad mode (the faces at rank 3: in one run
    a fit chain crossed 26 degrees within 500 draws, in another it stopped half-way) then
    either completes the crossing both ways, and the rule joins the clusters, or stays apart,
    and the mode still leaks.
    """
    t1 = time.process_time()
    ends = [[] for _ in range(refs.shape[0])]
    if fits is None:
        fits = [_aligned_draws(family, adapter, refs[k], starts[k], rng, n_chains, n_draws,
                               thin, n_burn, ends=ends[k]) for k in range(refs.shape[0])]
        if trim:
            fits = [_after_transients(f) for f in fits]
    basins = kept_basins(fits, refs, cut, n_chains, *kept) if kept else fit_basins(
        fits, refs, cut, n_chains)
    leaking = [k for k in range(refs.shape[0]) if ends[k] and basins["left"][k] > MAX_LEFT]
    if extend and leaking:
        left_before = basins["left"].copy()
        for k in leaking:
            more = _aligned_draws(family, adapter, refs[k], ends[k], rng, len(ends[k]),
                                  extend * n_draws, thin, 0)
            fits[k] = tuple(np.concatenate([old, new])
                            for old, new in zip(fits[k], more, strict=True))
        basins = fit_basins(fits, refs, cut, n_chains)
        basins.update(extended=leaking, left_before=left_before)
    inside = np.split(basins["inside"], np.cumsum([f[2].size for f in fits])[:-1])
    return fits, basins, inside, time.process_time() - t1


def _after_transients(fit):
    """One mode's ``(draws, bases, chain, log joint)`` without each chain's start-up transient."""
    keep, _ = trim_transients(fit[3], fit[2])
    return tuple(np.asarray(part)[keep] for part in fit)


def cross_fit_shares(fitted, cut):
    """The fit-chain draws' shares in the basins, ``(M, M)``.

    Row ``j``, column ``i``: the share of mode ``j``'s fit-chain draws inside mode ``i``'s basin
    (``fitted``: :func:`fit_chains_and_basins`' result).
    """
    fits, basins = fitted[0], fitted[1]
    out = []
    for f in fits:  # checked per mode: many modes cannot overrun the cap
        check_budget()
        out.append(basin_shares(f[1], basins["basin_refs"], cut))
    return np.stack(out)


def fit_copies(fitted, cut, shares=None):
    """Modes the fit chains alone show to be one: ``{j: i}``, mode ``j`` a copy of ``i < j``.

    Pairs that :func:`~bnmfzoo.diagnostics._modes.basins.duplicate_modes` finds in the
    fit-chain draws' shares (:data:`DUPLICATE_SHARE`) or that the basin rule joins are grouped
    transitively; each group's first mode stands for it. The same rule :func:`reference_log_z`
    applies after its runs (``duplicates``, ``joined``), before any run is spent on a copy.

    Examples
    --------
    >>> _groups([(0, 2), (1, 3), (2, 3)], 5)
    {1: 0, 2: 0, 3: 0}
    """
    shares = cross_fit_shares(fitted, cut) if shares is None else shares  # given: computed
    pairs = set(duplicate_modes(shares, max_share=DUPLICATE_SHARE))
    pairs |= set(fitted[1]["joined"])
    return _groups(sorted(pairs), len(fitted[0]))


def _groups(pairs, M):
    """``{j: first mode of j's group}`` for every mode not first in its group of ``pairs``."""
    first = list(range(M))

    def root(k):
        while first[k] != k:
            k = first[k]
        return k

    for i, j in pairs:
        a, b = root(i), root(j)
        first[max(a, b)] = min(a, b)
    return {k: root(k) for k in range(M) if root(k) != k}


def label_copies(adapter, K):
    """The ``K`` of the ``log K!`` a mode's total adds for the label copies its path leaves out.

    The rank ``K`` for a reference on one copy; ``1`` (no term) for a reference symmetrized over
    the copies (``adapter.label_copies``), whose path holds every copy already
    (:mod:`bnmfzoo.inference.binary._reference_symmetric`).
    """
    return int(getattr(adapter, "label_copies", K))


def masses_and_total(lz, se, K, offset=0.0):
    """Masses of the modes with finite ``lz`` and the total ``log K! + logsumexp - offset``.

    ``K`` counts the label copies each ``lz`` leaves out (:func:`label_copies`). Returns
    ``(mass, se of the mass, total log Z, its se)``; with no finite mode the total is ``-inf``
    with an infinite error.
    """
    from bnmfzoo.inference.mode_bridge import masses_from_log_z

    ok = np.isfinite(lz)
    mass, mse = np.zeros(lz.size), np.full(lz.size, math.nan)
    if not ok.any():
        return mass, mse, -math.inf, math.inf
    mass[ok], mse[ok] = masses_from_log_z(lz[ok], se[ok])
    total = float(gammaln(K + 1)) + float(logsumexp(lz[ok])) - offset
    return mass, mse, total, float(math.sqrt(np.sum((mass[ok] * se[ok]) ** 2)))


def _mode_path(adapter, cop, draws, widen):
    """``(path, kind)`` of one mode: the copula's when ``cop`` fits it, else the product's."""
    if cop is not None and cop.copula_widen:  # none on a label orbit too long to enumerate
        try:
            return ReferencePath(cop, cop.fit_copula(draws, cop.copula_widen[0])), "copula"
        except (ValueError, np.linalg.LinAlgError):
            pass
    return ReferencePath(adapter, adapter.fit(draws, widen)), "product"


def reference_log_z(family, refs, starts, rng, *, cut, n_runs=4, n_particles=100, n_moves=5,
                    cess=0.9, n_chains=4, n_draws=200, thin=2, n_burn=50, widen=WIDEN,
                    offset=0.0, local="sweep", n_leap=10, early_stop=None, fitted=None,
                    copula=False):
    """Per-mode evidence along the reference path, and the masses and total it implies.

    Parameters
    ----------
    family : object
        :func:`bnmfzoo.inference.smc_masses.family_of_model` (``tempered``, ``factors``,
        ``name``).
    refs : numpy.ndarray
        ``(M, D, K)`` unit-l2 representatives of the modes.
    starts : list of list
        Per mode, states to start its plain chains from.
    rng : numpy.random.Generator
    cut : float
        Max matched angle (degrees) of the clusters of the basin rule (module docstring).
    n_runs, n_particles, n_moves, cess : int, int or callable, int, float
        Independent SMC runs per mode and their settings (:func:`~bnmfzoo.inference.tempering.smc`);
        ``n_particles(k, path, position=i)``, when callable, sizes mode ``k``'s runs once its
        path is fitted (``i``: its place in the order the modes are estimated, ``order``).
    n_chains, n_draws, thin, n_burn : int
        Plain chains per mode for the reference fit: kept draws per chain, sweeps between them,
        sweeps discarded.
    widen : float
        Variance inflation of the reference over the draws' per-entry variance.
    offset : float
        ``log evidence - (the prior SMC's log Z)`` of the family (0 for the likelihood
        families).
    local, n_leap : str, int
        Poisson models: each SMC move is the latent-count sweep (``"sweep"``) or adds exact
        moves after it (``"sweep+shear+rescale+hmc"``: the group moves and, at ``b >= 0.7``,
        HMC of ``n_leap`` leapfrog steps;
        :class:`bnmfzoo.inference.counts.tempering._local.RungMoves`). HMC's step size is set
        at each temperature from the population's acceptance at the previous one and fixed for
        all of that temperature's moves (:meth:`~bnmfzoo.inference.counts.tempering._local.
        RungMoves.per_temperature`), so each move is an exact kernel of its temperature given
        the past; every run starts from the same initial step, so the runs stay independent.
    early_stop : float, optional
        A mode's runs stop after two once :func:`~bnmfzoo.inference._mass_verdict.
        mass_upper_bounds` over them and the modes estimated before it bounds its mass below
        this (``runs_done`` says how many it had; its error then comes from those). The modes
        are estimated heaviest-looking first (:func:`mode_order`), so a far mode is bounded by
        the heaviest one.
    fitted : tuple, optional
        :func:`fit_chains_and_basins`' result for these ``refs`` (the chains are not run
        again).
    copula : bool
        Poisson models: each mode's path starts from the Gaussian copula over its marginal fit
        (``fit_copula`` at the adapter's first ``copula_widen``) and is moved by HMC with the
        copula's term alone (``COPULA_LEAPFROG`` leapfrog steps), not from the product of
        Gammas with ``local``'s moves (a mode whose copula cannot be fitted keeps the product). On a
        96 x 214 SBS96 catalogue at K = 4 the product path's runs (48 particles, about 150
        temperatures, 222 CPU s) were 2.3 nats below the tempering's ``log Z`` with a standard
        error of 0.33; the copula's (40-44 temperatures, 66 CPU s) were within theirs
        (``docs/results/masses_copula_reference.md``).

    Returns
    -------
    dict
        ``log_z``, ``log_z_se`` (per mode, one copy), ``run_log_z`` (``(M, n_runs)``),
        ``mass``, ``se``, ``left`` (share of plain-chain draws outside the mode's basin),
        ``path_left`` (weighted share of final path particles outside the basin,
        :func:`~bnmfzoo.diagnostics._modes.basins.outside_basin`), ``swapped`` (weighted share
        of final path particles whose columns best match the mode's centre in another order:
        another label copy, so the copies overlap and ``log K!`` over-counts),
        ``n_temperatures``, ``log_z_total`` and ``log_z_total_se``
        (``log K! + logsumexp``), ``joined`` (pairs of modes whose chains cross both ways),
        ``cross_path`` and ``cross_fit`` (``(M, M)``: row ``j``, column ``i``, the share of mode
        ``j``'s final path particles (weighted; NaN when it got no path) and of its fit-chain
        draws inside mode ``i``'s basin, :func:`~bnmfzoo.diagnostics._modes.basins.
        basin_shares`), ``duplicates`` (pairs of modes each holding more than
        :data:`DUPLICATE_SHARE` of the other's members in its basin: one mode reached twice,
        :func:`~bnmfzoo.diagnostics._modes.basins.duplicate_modes`; the masses and total above
        still count both, :func:`drop_modes` joins them),
        ``basin_groups`` (the clusters of each basin), ``cpu_s``, ``cpu_s_mode`` (the SMC
        runs' CPU seconds per mode), ``fit_cpu_s``, ``local_acceptance`` (per mode, the lowest
        mean HMC acceptance of one temperature over its runs; NaN without HMC),
        ``local_steps`` (per mode, the last run's ``(b, HMC step, mean acceptance)`` of each
        temperature with HMC), ``runs_done`` (per mode: its runs; fewer than ``n_runs`` where
        ``early_stop`` ended them, the rest of ``run_log_z`` NaN), ``order`` (the order the
        modes were estimated in, :func:`mode_order`).
    """
    from bnmfzoo.inference._mass_verdict import mass_upper_bounds

    t0 = time.process_time()
    adapter = reference_adapter(family, local, n_leap)
    cop = reference_adapter(family, "hmc", COPULA_LEAPFROG) if copula and (
        family.name == "poisson") else None
    for ad in (adapter, cop):
        if getattr(ad, "moves", None) is not None:
            ad.moves.per_temperature()
    M, K = refs.shape[0], refs.shape[2]
    lz, se = np.full(M, -np.inf), np.full(M, np.inf)
    run_lz = np.full((M, n_runs), np.nan)
    left, path_left, swapped = np.zeros(M), np.zeros(M), np.zeros(M)
    cross_path = np.full((M, M), np.nan)
    temps, cpu_mode, acc_local, steps = ([[] for _ in range(M)], np.zeros(M),
                                         np.full(M, np.nan), [[]] * M)
    fits, basins, inside, fit_cpu = fitted if fitted is not None else fit_chains_and_basins(
        family, adapter, refs, starts, rng, cut, n_chains, n_draws, thin, n_burn)
    left[:] = basins["left"]
    done = np.zeros(M, dtype=np.int64)
    cross_fit = cross_fit_shares((fits, basins), cut)
    # every mode's path and random numbers first, in the modes' order: a mode's runs do not
    # depend on the order they are estimated in (mode_order)
    paths, seed_of, kind = {}, {}, [None] * M
    for k in range(M):
        draws = fits[k][0][inside[k]]
        if draws.shape[0] < 8:
            continue
        try:
            paths[k], kind[k] = _mode_path(adapter, cop, draws, widen)
        except ValueError:
            continue
        seed_of[k] = np.random.SeedSequence(int(rng.integers(2**63))).spawn(n_runs)
    order = mode_order(fits, inside)
    for i, k in enumerate(order):
        if k not in paths:
            continue
        path, seeds = paths[k], seed_of[k]
        moves = getattr(path.adapter, "moves", None)
        n_k = n_particles(k, path, position=i) if callable(n_particles) else n_particles
        far, swap, ends, end_w = [], [], [], []
        center = _label_center(fits[k][1][inside[k]], refs[k])
        t1 = time.process_time()
        for r, sd in enumerate(seeds):
            if moves is not None:
                moves.reset()
            run = smc(path, path.draw, n_k, np.random.default_rng(sd), cess=cess,
                      n_moves=n_moves)
            run_lz[k, r] = run.log_z
            if moves is not None and moves.steps():
                steps[k] = moves.steps()
                acc_local[k] = np.fmin(acc_local[k], min(a for _, _, a in steps[k]))
            temps[k].append(int(run.betas.size))
            U = _unit_l2(np.stack([np.asarray(family.factors(s)[0], float)
                                   for s in run.states]))
            # a particle has left the mode when it lies outside the basin (the clusters its
            # chains connect both ways), by the test of the chains' own draws (outside_basin)
            far.append(float(run.weights[outside_basin(U, basins, k, cut)].sum()))
            ends.append(U)
            end_w.append(run.weights / n_runs)
            # a particle whose columns best match the mode's centre in another order sits
            # on another label copy: then the copies overlap and log K! over-counts
            swap.append(float(run.weights[other_copy(U, center)].sum()))
            done[k] = r + 1
            before = order[:i + 1]  # this mode and the ones estimated before it
            if early_stop is not None and 2 <= r + 1 < n_runs and i and mass_upper_bounds(
                    run_lz[before], n_done=done[before])[i] < early_stop:
                break
        cpu_mode[k] = time.process_time() - t1
        path_left[k] = float(np.mean(far))
        swapped[k] = float(np.mean(swap))
        cross_path[k] = basin_shares(np.concatenate(ends), basins["basin_refs"], cut,
                                     np.concatenate(end_w))
        z = run_lz[k, :done[k]]
        lz[k] = float(z.mean())
        se[k] = float(z.std(ddof=1) / math.sqrt(z.size)) if z.size > 1 else math.inf
    mass, mse, total, total_se = masses_and_total(lz, se, label_copies(adapter, K), offset)
    return {"log_z": lz, "log_z_se": se, "run_log_z": run_lz, "runs_done": done,
            "symmetric": bool(getattr(adapter, "symmetric", False)),
            "order": order,
            "mass": mass, "se": mse,
            "left": left, "path_left": path_left, "swapped": swapped,
            "n_temperatures": temps,
            "log_z_total": total, "log_z_total_se": total_se,
            "joined": basins["joined"], "basin_groups": basins["groups"],
            "cross_path": cross_path, "cross_fit": cross_fit,
            "duplicates": duplicate_modes(cross_path, cross_fit, max_share=DUPLICATE_SHARE),
            "cpu_s": time.process_time() - t0, "cpu_s_mode": cpu_mode, "fit_cpu_s": fit_cpu,
            "local_acceptance": acc_local, "local_steps": steps, "reference": kind,
            "extended": basins.get("extended", []),
            "left_before": basins.get("left_before", basins["left"])}


def drop_modes(out, drop, K, offset=0.0):
    """:func:`reference_log_z`'s result without the modes ``drop`` (copies of kept modes).

    A mode that :func:`~bnmfzoo.diagnostics._modes.basins.duplicate_modes` finds to be a copy
    of another is the same region of the posterior reached twice, so both per-mode estimates
    are of one evidence: keeping one copy's estimate and dropping the other counts that
    evidence once (with both, its mass is split between the copies and the total is ``log 2``
    too high). Per-mode entries are restricted to the kept modes (in order), and the masses
    and total are recomputed over them (:func:`masses_and_total`); the ``(M, M)`` shares and
    the pairs keep the original numbering, and ``dropped`` lists the dropped modes.
    """
    drop = {int(j) for j in drop}
    keep = [k for k in range(len(out["log_z"])) if k not in drop]
    new = dict(out)
    for key in ("log_z", "log_z_se", "run_log_z", "left", "path_left", "swapped", "cpu_s_mode",
                "local_acceptance", "runs_done"):
        new[key] = np.asarray(out[key])[keep]
    for key in ("n_temperatures", "local_steps"):
        new[key] = [out[key][k] for k in keep]
    new["mass"], new["se"], new["log_z_total"], new["log_z_total_se"] = masses_and_total(
        new["log_z"], new["log_z_se"], 1 if out.get("symmetric") else K, offset)
    new["dropped"] = sorted(drop)
    return new
