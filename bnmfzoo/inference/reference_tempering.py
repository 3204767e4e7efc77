"""Per-mode evidence by non-reversible parallel tempering along a fitted reference path.

The second per-mode estimator of :func:`bnmfzoo.inference.smc_mode_masses`, of a different kind
from the adaptive-tempering SMC of :mod:`bnmfzoo.inference.reference_path` on the same path

``pi_b ∝ q_m^(1 - b) (p0 L)^b = q_m exp(b l')``,  ``l' = log p0 + log L - log q_m``,

with ``q_m`` a reference fitted to plain-chain draws of mode ``m`` (the adapters and sweeps of
:class:`~bnmfzoo.inference.reference_path.ReferencePath`).

**Parallel tempering** (:func:`reference_pt`). Replicas sit on a ladder ``1 = b_0 > ... >
b_{n-1} = 0``; each scan sweeps every replica at its ``b`` (at ``b = 0`` the replica is an
exact, independent draw of ``q``: the reference of Surjanovic et al. 2022), then proposes
swaps of neighbours alternating between even and odd pairs (the non-reversible scheme of Syed
et al. 2022; :func:`~bnmfzoo.inference.tempering.swap_pass`). The ladder starts from a short
adaptive SMC's schedule along the path, thinned to about ``2 Lambda + 1`` rungs, and is
retuned in rounds of doubling length to equal rejection rates
(:class:`~bnmfzoo.inference.tempering.LadderTuner`, growing where the barrier asks); then it
is frozen and the draws are kept.

**Stepping stone** (Xie et al. 2011). With the ladder sorted increasingly,
``log Z = sum_i log mean_t exp((b_{i+1} - b_i) l'(x_t^(i)))`` over the kept draws ``x^(i)``
of rung ``i``: each factor estimates ``Z_(i+1) / Z_i`` by importance sampling from rung
``i``, and ``Z_0 = 1`` (``q`` is normalized). Its error is the spread of ``n_runs``
independent runs.

**Round trips** (:func:`count_round_trips`). A replica's index process completes a round trip
when, having been at ``b = 1``, it reaches ``b = 0`` and comes back to ``b = 1`` (Syed et al.
2022, Sec. 3.4; the bookkeeping of :class:`~bnmfzoo.inference.tempering.ReplicaSet`). Each
trip brings to ``b = 1`` a state renewed from an exact draw of ``q``. The communication
barrier ``Lambda`` is the sum of the frozen ladder's rejection rates.

**Local moves.** Each scan runs the family's exact sweep at every rung, plus for Poisson models
``local``'s group moves and HMC (:class:`bnmfzoo.inference.counts.tempering._local.RungMoves`;
step sizes adapted in tuning, then frozen). A round trip takes at least about ``N (2 + 2 sum_i
r_i / (1 - r_i))`` scans (``N`` rungs, rejection rates ``r_i``; Syed et al. 2022).

A mode's runs advance together (:func:`~bnmfzoo.inference.tempering._runs.run_together`): with a
CPU share, the runs short of the verdict's round trips go first.

A Ctrl-C stops the Python loop over compiled sweeps at once (no result).

References
----------
Syed, S., Bouchard-Cote, A., Deligiannidis, G. & Doucet, A. (2022). Non-reversible parallel
tempering: a scalable highly parallel MCMC scheme. JRSS B 84(2), 321-350.
Surjanovic, N., Syed, S., Bouchard-Cote, A. & Campbell, T. (2022). Parallel tempering with a
variational reference. NeurIPS 35.
Xie, W., Lewis, P. O., Fan, Y., Kuo, L. & Chen, M.-H. (2011). Improving marginal likelihood
estimation for Bayesian phylogenetic model selection. Systematic Biology 60(2), 150-160.
"""

import math
import time

import numpy as np

from bnmfzoo.inference._mass_budget import (
    cpu_short_reasons,
    product_barrier_cap,
    run_allowance,
    sweep_seconds,
    tempering_need,
    tempering_start_floor,
    too_dear_reasons,
)
from bnmfzoo.inference._mass_verdict import MIN_ROUND_TRIPS
from bnmfzoo.inference.counts.tempering._reference_poisson import COPULA_LEAPFROG
from bnmfzoo.inference.reference_path import (
    DUPLICATE_SHARE,
    WIDEN,
    ModeCheck,
    ReferencePath,
    fit_chains_and_basins,
    label_copies,
    masses_and_total,
    reference_adapter,
)
from bnmfzoo.inference.tempering import LadderTuner, swap_pass
from bnmfzoo.inference.tempering._ladder import pilot_ladder
from bnmfzoo.inference.tempering._path_targets import (
    PathTargets,
    stepping_stone,
    stepping_stone_path,
)
from bnmfzoo.inference.tempering._runs import PTRun, count_round_trips, drive, run_together

__all__ = ["PTRun", "reference_pt", "stepping_stone", "stepping_stone_path", "count_round_trips",
           "pilot_ladder", "reference_pt_log_z", "run_allowance", "tempering_need"]

#: kept scans between checks of ``stop_trips`` / ``max_cpu_s`` in :func:`reference_pt`
TRIP_CHECK = 25
#: kept scans before ``stop_trips`` may end a run: the stepping stone's terms are means over
#: the kept scans, so a run that made its trips early still averages 200 draws per rung (the
#: two established Poisson matrices of ``masses_default_route`` made a round trip every 28-37
#: scans, so 15 trips take about 500)
MIN_KEPT_SCANS = 200
#: scans of a mode's runs' first ladder-tuning round (each later round twice the one before)
FIRST_ROUND = 16


def _targets(rungs):
    """:class:`PathTargets` of the rungs' path when it is not geometric, else ``None``."""
    path = rungs.path(1.0)
    return PathTargets(path) if callable(getattr(path, "log_target", None)) else None


def _check_ladder(betas):
    b = np.asarray(betas, float)
    if b.ndim != 1 or b.size < 3 or b[0] != 1.0 or b[-1] != 0.0 or \
            not np.all(np.diff(b) < 0):
        raise ValueError(f"betas must decrease from 1 to 0 with at least 3 rungs, got {betas!r}")
    return b.copy()


class _Rungs:
    """Per-rung copies of the adapter (each keeps its own cached tempered terms)."""

    def __init__(self, adapter_of, q):
        self.adapter_of, self.q, self.paths, self.frozen = adapter_of, q, {}, False
        self.old = {}

    def path(self, b):
        if b not in self.paths:
            self.paths[b] = ReferencePath(self.adapter_of(), self.q)
            moves = getattr(self.paths[b].adapter, "moves", None)
            if moves is not None and self.old:  # adapt on from the nearest old rung's
                near = min(self.old, key=lambda c: abs(c - b))
                moves.start_from(self.old[near])
            if self.frozen:
                _freeze(self.paths[b])
        return self.paths[b]

    def retune(self, betas):
        """After the ladder changed: rungs still on it keep their adapted local moves.

        New rungs start adapting from the nearest old rung's.
        """
        keep = set(float(b) for b in betas)
        self.old = {b: p.adapter.moves for b, p in self.paths.items()
                    if getattr(p.adapter, "moves", None) is not None}
        self.paths = {b: p for b, p in self.paths.items()
                      if b in keep and getattr(p.adapter, "freeze", None) is not None}

    def freeze(self):
        """Freeze every rung's adapted local move (before the kept scans)."""
        self.frozen = True
        for p in self.paths.values():
            _freeze(p)

    def acceptance(self, betas):
        """Each rung's mean HMC acceptance since the freeze (NaN without HMC)."""
        out = []
        for b in betas:
            moves = getattr(self.path(float(b)).adapter, "moves", None)
            out.append(moves.acceptance() if moves is not None else math.nan)
        return np.array(out)


def _freeze(path):
    freeze = getattr(path.adapter, "freeze", None)
    if freeze is not None:
        freeze()


def _scan(rungs, states, betas, rng, n_sweeps):
    for i, b in enumerate(betas):
        if b == 0.0:
            states[i] = rungs.path(0.0).draw(rng)  # the reference: an exact, independent draw
        else:
            p = rungs.path(float(b))
            for _ in range(n_sweeps):
                p.sweep(states[i], float(b), rng)
    ll = [rungs.path(1.0).loglik(s) for s in states]
    bad = [float(betas[i]) for i, v in enumerate(ll) if not math.isfinite(v)]
    if bad:
        raise FloatingPointError(f"the tempered log density l' is not finite at b = {bad}")
    return ll


def reference_pt(adapter_of, q, rng, betas, *, n_scans=500, n_tune_rounds=4, first_round=16,
                 n_burn=None, n_sweeps=1, grow=True, max_rungs=200, in_mode=None,
                 check_every=5, stop_trips=None, max_cpu_s=None, min_scans=MIN_KEPT_SCANS):
    """One non-reversible parallel-tempering run along ``q^(1 - b) (p0 L)^b``.

    Parameters
    ----------
    adapter_of : callable
        ``adapter_of()`` returns a fresh :func:`~bnmfzoo.inference.reference_path.
        reference_adapter` of the family (one per rung).
    q : dict
        The fitted reference (``adapter.fit``).
    rng : numpy.random.Generator
    betas : array_like
        The starting ladder, decreasing from 1 to 0 (:func:`pilot_ladder`).
    n_scans : int
        Scans kept on the frozen ladder (stepping stone, round trips, rejection rates); with
        ``stop_trips`` or ``max_cpu_s``, the most kept.
    n_tune_rounds, first_round : int
        Tuning rounds (the first ``first_round`` scans long, each next twice as long).
    n_burn : int, optional
        Scans discarded after tuning (default ``n_scans // 10``; at most 100 with
        ``stop_trips``, where ``n_scans`` is only a cap).
    n_sweeps : int
        Exact sweeps of each replica per scan.
    grow, max_rungs : bool, int
        Let tuning add rungs where the barrier asks (:class:`~bnmfzoo.inference.tempering.
        LadderTuner`), up to ``max_rungs``.
    in_mode : callable, optional
        ``in_mode(state) -> bool``, checked on the ``b = 1`` replica every ``check_every``
        kept scans (``PTRun.left``).
    stop_trips : int, optional
        End the kept scans once the run's round trips (summed over its replicas) reach this,
        but not before ``min_scans`` (checked every :data:`TRIP_CHECK` scans).
    max_cpu_s : float, optional
        End the kept scans once the run (tuning included) has used this many CPU seconds
        (checked every :data:`TRIP_CHECK` scans): its share of a budget; the round trips
        then say whether the run was long enough.

    Returns
    -------
    PTRun
    """
    if n_burn is None:
        n_burn = int(n_scans) // 10 if stop_trips is None else min(int(n_scans) // 10, 100)
    return drive(pt_blocks(adapter_of, q, rng, betas, n_scans=n_scans,
                           n_tune_rounds=n_tune_rounds, first_round=first_round, n_burn=n_burn,
                           n_sweeps=n_sweeps, grow=grow, max_rungs=max_rungs, in_mode=in_mode,
                           check_every=check_every),
                 stop_trips=stop_trips, max_cpu_s=max_cpu_s, min_scans=min_scans)


def pt_blocks(adapter_of, q, rng, betas, *, n_scans, n_tune_rounds, first_round, n_burn,
              n_sweeps, grow, max_rungs, in_mode, check_every):
    """:func:`reference_pt` as a generator of blocks of :data:`TRIP_CHECK` kept scans.

    Yields ``(kept scans, labels so far, CPU s of this run)`` after each block (the CPU while
    suspended is not counted) and takes back ``None`` to go on or why to stop (``"cpu"``,
    ``"trips"``: :attr:`PTRun.stopped`); returns the :class:`PTRun`
    (:mod:`bnmfzoo.inference.tempering._runs` drives it).
    """
    t0 = time.process_time()
    betas = _check_ladder(betas)
    n_scans, n_sweeps = int(n_scans), int(n_sweeps)
    if n_scans < 2 or n_sweeps < 1:
        raise ValueError(f"n_scans must be >= 2 and n_sweeps >= 1, got {n_scans}, {n_sweeps}")
    n_burn = int(n_burn)
    rungs = _Rungs(adapter_of, q)
    states = [rungs.path(0.0).draw(rng) for _ in betas]
    tuner = LadderTuner(round_length=int(first_round), grow=bool(grow),
                        max_replicas=int(max_rungs))
    parity, n_tune = 0, 0
    while tuner.rounds < int(n_tune_rounds):
        ll = _scan(rungs, states, betas, rng, n_sweeps)
        prob, _ = swap_pass(states, betas, ll, rng, parity, _targets(rungs))
        parity ^= 1
        n_tune += 1
        new = tuner.update(prob, betas, tune=True, adapt=True, where="reference_pt")
        if new is not betas:
            near = np.abs(new[:, None] - betas[None, :]).argmin(1)
            used, out = set(), []
            for j in near:  # each old state once, copies where rungs were added
                out.append(states[j] if j not in used else rungs.path(1.0).copy(states[j]))
                used.add(int(j))
            states, betas = out, new
            rungs.retune(betas)
    for _ in range(n_burn):  # the local moves keep adapting on the frozen ladder
        ll = _scan(rungs, states, betas, rng, n_sweeps)
        swap_pass(states, betas, ll, rng, parity, _targets(rungs))
        parity ^= 1
    rungs.freeze()  # the local moves are fixed kernels from here on
    n = betas.size
    labels = list(range(n))
    kept_ll = np.empty((n_scans, n))
    kept_inc = np.empty((n_scans, n - 1))  # a path family's stepping-stone increments
    kept_lab = np.empty((n_scans, n), dtype=np.int64)
    rej, seen, out_of_mode, checked = np.zeros(n - 1), np.zeros(n - 1), 0, 0
    stopped, kept = "scans", n_scans
    for t in range(n_scans):
        ll = _scan(rungs, states, betas, rng, n_sweeps)
        kept_ll[t] = ll  # before the swaps: rung i's draw of pi_(b_i)
        targets = _targets(rungs)
        if targets is not None:
            kept_inc[t] = targets.increments(states, betas)
        prob, acc = swap_pass(states, betas, ll, rng, parity, targets)
        parity ^= 1
        for i in np.flatnonzero(acc):
            labels[i], labels[i + 1] = labels[i + 1], labels[i]
        kept_lab[t] = labels
        ok = ~np.isnan(prob)
        rej[ok] += 1.0 - prob[ok]
        seen[ok] += 1.0
        if in_mode is not None and t % int(check_every) == 0:
            checked += 1
            out_of_mode += not in_mode(states[0])
        if (t + 1) % TRIP_CHECK or t + 1 >= n_scans:
            continue
        paused = time.process_time()
        why = yield t + 1, kept_lab[:t + 1], paused - t0
        t0 += time.process_time() - paused  # the other runs' CPU while this one waited
        if why:
            stopped, kept = why, t + 1
            break
    kept_ll, kept_lab = kept_ll[:kept], kept_lab[:kept]
    if _targets(rungs) is not None:
        log_z, terms = stepping_stone_path(kept_inc[:kept])
        terms = terms[::-1]  # by increasing b, as stepping_stone gives them
    else:
        log_z, terms = stepping_stone(betas, kept_ll)
    rejection = rej / np.maximum(seen, 1.0)
    return PTRun(betas=betas, log_z=log_z, log_ratios=terms,
                 round_trips=count_round_trips(kept_lab), rejection=rejection,
                 barrier=float(rejection.sum()),
                 left=out_of_mode / checked if checked else math.nan, n_scans=kept,
                 n_tune_scans=n_tune + n_burn, cpu_seconds=time.process_time() - t0,
                 local_acceptance=rungs.acceptance(betas), stopped=stopped,
                 logliks=kept_ll)


def reference_pt_log_z(family, refs, starts, rng, *, cut, n_runs=4, n_scans=500, n_sweeps=1,
                       n_tune_rounds=4, n_chains=4, n_draws=200, thin=2, n_burn=50,
                       widen=WIDEN, pilot_particles=20, max_rungs=200, offset=0.0,
                       local="sweep", n_leap=10, skip=(), stop_trips=None, ridge=True,
                       copula=False, fitted_chains=None):
    """Per-mode evidence by parallel tempering along the reference path; masses and total.

    The counterpart of :func:`bnmfzoo.inference.reference_path.reference_log_z` (same
    arguments for the fit), with ``n_runs`` independent parallel-tempering runs per mode
    (:func:`reference_pt`) from one ladder (:func:`pilot_ladder`). ``local`` and ``n_leap``
    choose each replica's local move (Poisson: ``"sweep+rescale+hmc"`` adds the rescaling
    move and an HMC transition of ``n_leap`` leapfrog steps after the sweep,
    :class:`bnmfzoo.inference.counts.tempering._local.RungMoves`; its step size is adapted
    per rung while the ladder is tuned, then frozen). Modes in ``skip`` (bounded below
    :data:`~bnmfzoo.inference._mass_verdict.NEGLIGIBLE` by the reference-path SMC) get their
    fit chains (the basin rule needs every mode's) but no tempering: ``log_z`` ``-inf``, NaN
    runs and trips. A mode's ``n_runs`` runs advance together a block of scans at a time
    (:func:`~bnmfzoo.inference.tempering._runs.run_together`; each run's draws depend on its
    own random numbers only). With ``stop_trips`` each run ends once its round trips reach it
    (``n_scans`` the cap), the runs short of
    :data:`~bnmfzoo.inference._mass_verdict.MIN_ROUND_TRIPS` advancing first, or all end once
    they have used the mode's share of the CPU budget left (:func:`run_allowance` over the
    modes still to do, from :func:`bnmfzoo.inference._mass_budget.budget_left`): the
    tempering is sized from the budget left and the round trips it measures, not from a fixed
    number of scans, and spent where the verdict needs it. ``ridge``:
    a Poisson mode's tempering starts from the reference (marginal or :func:`~bnmfzoo.inference.
    counts.tempering._scale_fit.ridge_free_fit`) whose pilot ladder has the lower barrier. An
    adapter with a ``tempering_widen`` attribute (widenings below ``widen``) has its narrower
    marginal fits piloted too, and the tempering starts from the lowest barrier's: the
    tempering's stepping-stone terms are tempered a rung at a time and need no heavy-tailed
    reference. Narrower ridge-free fits are not tried: on one NB cell (all scale ridge) their
    pilot reported a barrier of 0.19 where the runs met a wall (no round trip, log Z 14-55
    standard errors low in 3-4 of 40 seeds; ``masses_nb_route_2.md`` section 16). ``copula``:
    the Gaussian copula (the adapters' ``fit_copula``, moved by HMC) is piloted first and kept
    where its runs' CPU floor is lower (``copula_pilot``: barrier, its floor, the other's); the
    product references' pilots stop past the barrier at which they could not beat it
    (:func:`~bnmfzoo.inference._mass_budget.product_barrier_cap`; ``pilot_cap``).
    ``fitted_chains``: :func:`~bnmfzoo.inference.reference_path.fit_chains_and_basins`' result.

    Returns
    -------
    dict
        ``log_z``, ``log_z_se`` (one copy per mode), ``run_log_z`` and ``round_trips``
        (``(M, n_runs)``; trips per run: the sum over its replicas), ``n_rungs``
        (``(M, n_runs)``), ``barrier`` and ``max_rejection`` (``(M, n_runs)``), ``rejection``
        (per mode, the first run's per-pair rates), ``mass``, ``se``, ``left`` (fit-chain
        draws outside the mode), ``pt_left`` (checked ``b = 1`` draws outside it, worst run),
        ``pt_swapped`` (checked ``b = 1`` draws of all runs on another label copy of the mode),
        ``log_z_total``, ``log_z_total_se``, ``cpu_s``, ``cpu_s_mode``,
        ``cpu_s_per_rung_scan`` (per mode), ``fit_cpu_s``, ``local_acceptance`` (per mode,
        the lowest rung's HMC acceptance over its runs; NaN without HMC), ``kept_scans`` and
        ``stopped`` (``(M, n_runs)``: kept scans, and :attr:`PTRun.stopped`), ``reference_fit``
        (per mode: the reference used, the marginal and ridge-free pilot barriers at ``widen``,
        the widening used and its pilot barrier; or None), ``too_dear`` (``(M, 2)``: per mode
        whose runs were not started, the CPU floor and the share it had; NaN elsewhere),
        ``start_floor`` (``(M, 2)``: the same for every mode that got a pilot ladder; the share
        NaN without a budget).

    Inside a CPU budget (``stop_trips`` given), a mode's runs are not started when
    :func:`~bnmfzoo.inference._mass_budget.tempering_start_floor` (tuning plus
    :data:`~bnmfzoo.inference._mass_verdict.MIN_ROUND_TRIPS` round trips per run at the pilot
    ladder's barrier and a plain sweep's CPU, :func:`~bnmfzoo.inference._mass_budget.
    sweep_seconds`) is above the mode's share
    of the budget
    left: the runs could not make the trips the verdict needs, so their share is not spent
    (``stopped`` ``"dear"``; ALL/AML 100 x 38 under the negative binomial spent 375 s of
    tempering before the budget ran out, ``docs/results/masses_nb_route_2.md`` section 18).
    """
    from bnmfzoo.inference._mass_budget import budget_left
    from bnmfzoo.inference.counts.tempering._scale_fit import ridge_free_fit

    t0 = time.process_time()
    adapter = reference_adapter(family, local, n_leap)
    narrower = [float(w) for w in getattr(adapter, "tempering_widen", ()) if w < widen]
    copulas = adapter.copula_widen if copula and callable(getattr(adapter, "fit_copula", None)) \
        else ()
    M, K = refs.shape[0], refs.shape[2]
    nan = np.full((M, n_runs), np.nan)
    lz, se = np.full(M, -np.inf), np.full(M, np.inf)
    run_lz, trips, n_rungs, lam, max_rej = (nan.copy() for _ in range(5))
    left, pt_left, pt_swapped = np.zeros(M), np.full(M, np.nan), np.full(M, np.nan)
    rejection, cpu_mode, per_rung = [], np.zeros(M), np.full(M, np.nan)
    acc_local, kept = np.full(M, np.nan), nan.copy()
    stopped, fitted = np.full((M, n_runs), "", dtype=object), [None] * M
    copula_pilot = [None] * M  # (its pilot barrier, its floor, the product's floor) per mode
    pilot_cap = np.full(M, np.nan)  # the barrier at which the product's pilots stopped
    dear = np.full((M, 2), np.nan)  # (floor, share) of modes whose tempering was not started
    start = np.full((M, 2), np.nan)  # (floor, share) of every mode that got a pilot ladder
    # the fit chains and the basin rule of reference_log_z (its own draws: same recipe)
    fits, basins, inside, fit_cpu = fitted_chains if fitted_chains is not None else (
        fit_chains_and_basins(family, adapter, refs, starts, rng, cut, n_chains, n_draws, thin,
                              n_burn))
    left[:] = basins["left"]
    skip = {int(k) for k in skip}
    for k in range(M):
        t1 = time.process_time()
        draws = fits[k][0][inside[k]]
        rejection.append([])
        if draws.shape[0] < 8 or k in skip:
            cpu_mode[k] = time.process_time() - t1
            continue
        try:
            q = adapter.fit(draws, widen)
        except ValueError:
            cpu_mode[k] = time.process_time() - t1
            continue
        q2 = ridge_free_fit(adapter, draws, widen) if ridge else None
        in_mode = ModeCheck(family, basins, k, cut, fits[k][1][inside[k]], refs[k])

        seeds = np.random.SeedSequence(int(rng.integers(2**63))).spawn(n_runs + 1)
        pilot_local = "sweep" if "sweep" in str(local).split("+") else local  # the sweep's
        # routes keep their pilot (and draws); without the sweep HMC is the only move
        def adapter_of(q, moves=pilot_local):  # a copula reference is moved by HMC alone
            if "copula" in q:
                return reference_adapter(family, "hmc", COPULA_LEAPFROG)
            return reference_adapter(family, moves, n_leap)

        def pilot(q, cap=math.inf):  # the same random numbers for either reference
            return pilot_ladder(ReferencePath(adapter_of(q), q),
                                np.random.default_rng(seeds[-1]),
                                n_particles=pilot_particles, max_rungs=max_rungs,
                                max_barrier=cap)

        burn = n_scans // 10 if stop_trips is None else min(n_scans // 10, 100)

        tune = FIRST_ROUND * (2 ** int(n_tune_rounds) - 1) + burn  # tuning rounds double

        def floor_of(q, betas, lam, moves=pilot_local, every=False):  # the CPU its runs need
            return tempering_start_floor(lam, betas.size, rung_scan(q, betas, moves, every),
                                         n_runs=n_runs, target=MIN_ROUND_TRIPS,
                                         tune_scans=tune)  # at least

        def rung_scan(q, betas, moves=pilot_local, every=False):
            return n_sweeps * sweep_seconds(ReferencePath(adapter_of(q, moves), q), betas,
                                            n_sweeps=2 if every else 4, every=every)

        # the copulas (a dearer move) first, kept where their runs' floor is lower than the
        # product's (on NB 80 x 40 a barrier of 11.5 against 12.7 at 4 times the CPU per
        # move: docs/results/masses_copula_reference.md); the product's pilots then stop
        # once their path is too long to beat the best copula's floor (product_barrier_cap)
        best_copula, cap = None, math.inf
        for w in copulas:
            qw = adapter.fit_copula(draws, w)
            bw, lw = pilot(qw)
            fw = floor_of(qw, bw, lw, every=True)
            if best_copula is None or fw < best_copula[3]:
                best_copula = (qw, bw, lw, fw, w)
        if best_copula is not None:
            cap = product_barrier_cap(best_copula[3], rung_scan(q, best_copula[1], local, True),
                                      n_runs=n_runs, target=MIN_ROUND_TRIPS, tune_scans=tune,
                                      max_rungs=max_rungs)
            pilot_cap[k] = cap
        (betas, lam0), two = pilot(q, cap), (None, math.nan) if q2 is None else pilot(q2, cap)
        fitted[k] = ("ridge-free" if two[1] < lam0 else "marginal", lam0, two[1], widen, lam0)
        if two[1] < lam0:  # the shorter path from its reference
            betas, q = two[0], q2
            fitted[k] = fitted[k][:4] + (two[1],)
        for w in narrower:  # the family's narrower marginal fits, each kept where shorter
            qw = adapter.fit(draws, w)
            bw, lw = pilot(qw, cap)
            if lw < fitted[k][4]:
                betas, q, fitted[k] = bw, qw, ("marginal",) + fitted[k][1:3] + (w, lw)
        if best_copula is not None:
            qw, bw, lw, fw, w = best_copula
            copula_pilot[k] = (lw, fw, math.inf if betas is None else floor_of(  # the runs'
                q, betas, fitted[k][4], local, every=True))  # moves, on every rung
            if copula_pilot[k][1] < copula_pilot[k][2]:
                betas, q, fitted[k] = bw, qw, ("copula",) + fitted[k][1:3] + (w, lw)
        far, work = [], 0
        later = sum(1 for j in range(k + 1, M) if j not in skip)  # modes after this one
        # the mode's runs advance together, the CPU going to those short of the trips first
        allow = None if stop_trips is None else run_allowance(budget_left(), 1 + later)
        floor = floor_of(q, betas, fitted[k][4])
        start[k] = (floor, math.nan if allow is None else allow)
        if allow is not None and floor > allow:  # its share cannot hold it: not started
            stopped[k], dear[k] = "dear", (floor, allow)
            cpu_mode[k] = time.process_time() - t1
            continue
        together = run_together(
            [pt_blocks(lambda q=q: adapter_of(q, local), q,
                       np.random.default_rng(sd), betas, n_scans=n_scans,
                       n_tune_rounds=n_tune_rounds, first_round=FIRST_ROUND, n_burn=burn,
                       n_sweeps=n_sweeps, grow=True, max_rungs=max_rungs, in_mode=in_mode,
                       check_every=5) for sd in seeds[:n_runs]],
            stop_trips=stop_trips, min_trips=0 if stop_trips is None else MIN_ROUND_TRIPS,
            max_cpu_s=allow, min_scans=MIN_KEPT_SCANS)
        for r, run in enumerate(together):
            kept[k, r], stopped[k, r] = run.n_scans, run.stopped
            run_lz[k, r], trips[k, r] = run.log_z, run.round_trips.sum()
            n_rungs[k, r], lam[k, r] = run.betas.size, run.barrier
            max_rej[k, r] = run.rejection.max()
            far.append(run.left)
            if run.local_acceptance is not None and np.isfinite(run.local_acceptance).any():
                acc_local[k] = np.fmin(acc_local[k], np.nanmin(run.local_acceptance))
            work += run.betas.size * (run.n_scans + run.n_tune_scans)
            if r == 0:
                rejection[k] = run.rejection.tolist()
        pt_left[k] = float(np.max(far))
        pt_swapped[k] = in_mode.swapped
        lz[k] = float(run_lz[k].mean())
        se[k] = float(run_lz[k].std(ddof=1) / math.sqrt(n_runs)) if n_runs > 1 else math.inf
        cpu_mode[k] = time.process_time() - t1
        per_rung[k] = cpu_mode[k] / max(work, 1)
    mass, mse, total, total_se = masses_and_total(lz, se, label_copies(adapter, K), offset)
    return {"log_z": lz, "log_z_se": se, "run_log_z": run_lz, "round_trips": trips,
            "symmetric": bool(getattr(adapter, "symmetric", False)),
            "n_rungs": n_rungs, "barrier": lam, "max_rejection": max_rej,
            "rejection": rejection, "mass": mass, "se": mse, "left": left,
            "pt_left": pt_left, "pt_swapped": pt_swapped, "log_z_total": total,
            "log_z_total_se": total_se,
            "cpu_s": time.process_time() - t0, "cpu_s_mode": cpu_mode,
            "cpu_s_per_rung_scan": per_rung, "fit_cpu_s": fit_cpu,
            "local_acceptance": acc_local, "kept_scans": kept, "stopped": stopped,
            "reference_fit": fitted, "too_dear": dear, "start_floor": start,
            "copula_pilot": copula_pilot, "pilot_cap": pilot_cap}


def per_mode_check(family, states, label, weights, clusters, log_z, log_z_se, rng, *,
                   n_runs=4, n_particles=100, n_moves=5, cess=0.9, n_chains=4, n_draws=200,
                   thin=2, widen=WIDEN, prior_chains=8, prior_sweeps=300, pt_runs=4,
                   pt_scans=500, pt_sweeps=1, pt_local="sweep", pt_leap=10,
                   prior_dof=math.inf, pt_trips=None, pt_copula=False):
    """Masses by two per-mode estimators along the reference path (``check="reference_pt"``).

    The modes are those of the SMC from the prior (``clusters``) and those only plain chains
    from prior draws (KL-refined for count models) found
    (:func:`bnmfzoo.inference.mode_bridge.prior_chain_modes`); every one
    is estimated by the reference-path SMC
    (:func:`bnmfzoo.inference.reference_path.reference_log_z`) and by parallel tempering
    (:func:`reference_pt_log_z`), and the verdict is
    :func:`bnmfzoo.inference._mass_verdict.per_mode_reasons`. ``pt_local`` and ``pt_leap``
    choose the local moves of both estimators (the SMC's move at each temperature and each
    replica's scan); ``pt_trips`` sizes the tempering from the round trips and the budget
    left (``stop_trips`` of :func:`reference_pt_log_z`; ``pt_scans`` is then the cap); it is
    a target with margin, the rule stays ``MIN_ROUND_TRIPS`` per run however the run ended (a
    run that ends on its CPU share is stopped at a time its estimate does not choose).

    A mode whose mass the reference-path SMC bounds below
    :data:`~bnmfzoo.inference._mass_verdict.NEGLIGIBLE`
    (:func:`~bnmfzoo.inference._mass_verdict.mass_upper_bounds`) gets no parallel tempering
    (the rule and why it is safe: :mod:`bnmfzoo.inference._mass_verdict`). Inside a CPU budget
    the reference-path SMC's particles per run are sized from it (:class:`~bnmfzoo.inference.
    _mass_budget.PathSMCSize`, at most ``n_particles``). When the CPU
    budget (:mod:`bnmfzoo.inference._mass_budget`) runs out during the tempering, ``pt`` is
    None and the reason says so; during the reference-path SMC it propagates.

    Two modes each holding more than
    :data:`~bnmfzoo.inference.reference_path.DUPLICATE_SHARE` of the other's fit-chain draws in
    its basin (:func:`~bnmfzoo.diagnostics._modes.basins.duplicate_modes`), or that the basin
    rule joins (``joined``: both lie in one basin), are one mode reached twice
    (:func:`~bnmfzoo.inference.reference_path.fit_copies`), found before either estimator
    runs: a copy only the plain chains from prior draws found is dropped, and a copy among the
    SMC from the prior's modes is merged into the first of its group (``merged``; the caller
    relabels its particles, :func:`bnmfzoo.inference._mass_result.merge_smc_modes`), so the
    evidence is estimated and counted once. The same rule on the reference-path SMC's final
    particles catches copies the fit chains missed: a prior-chain copy is then dropped after
    the SMC (:func:`~bnmfzoo.inference.reference_path.drop_modes`); two modes of the SMC from
    the prior found only there leave the run not established. A mode whose reference-path SMC
    bounds its mass below :data:`~bnmfzoo.inference._mass_verdict.EARLY_STOP` after two runs
    gets no more runs (``runs_done``); the modes are estimated heaviest-looking first
    (:func:`~bnmfzoo.inference.reference_path.mode_order`), so the far ones are bounded by the
    heaviest. A mode whose tempering its share of the budget cannot hold is not tempered, and
    the reason names the CPU it needs (``too_dear`` of :func:`reference_pt_log_z`).

    Returns
    -------
    dict
        ``smc`` and ``pt`` (the two estimators' per-mode results, over all modes: the SMC's
        first), ``n_smc_modes``, ``reasons``, ``upper`` (per mode, the bound on its mass),
        ``skipped`` (the modes bounded below ``NEGLIGIBLE``), ``prior_chains``,
        ``prior_ends_in_smc_modes``, ``prior_cpu_s``, ``duplicates`` (the pairs found, in the
        numbering before dropping), ``dropped`` (the prior-chain modes dropped as copies) and
        ``merged`` (pairs ``(i, j)`` of the SMC from the prior's modes, ``j`` merged into
        ``i``); ``smc`` and ``pt`` hold the kept modes only.
    """
    from bnmfzoo.inference._mass_budget import BudgetExhausted, PathSMCSize
    from bnmfzoo.inference._mass_verdict import (
        EARLY_STOP,
        MIN_ROUND_TRIPS,
        NEGLIGIBLE,
        mass_upper_bounds,
        per_mode_reasons,
    )
    from bnmfzoo.inference.mode_bridge import check_modes
    from bnmfzoo.inference.reference_path import drop_modes, fit_copies, reference_log_z

    K = clusters["reference"].shape[0]
    try:
        reference_adapter(family)
    except ValueError as err:
        return {"smc": None, "pt": None, "n_smc_modes": K,
                "reasons": [f"the reference check is not available: {err}"]}
    cut = clusters["cut"]
    all_refs, starts, near, prior_cpu = check_modes(family, states, label, weights, clusters,
                                                    rng, n_chains, prior_chains, prior_sweeps)
    fit = dict(n_chains=n_chains, n_draws=n_draws, thin=thin, widen=widen)
    # modes the fit chains already show to be one (each holds the other's draws in its basin,
    # or the basin rule joins them) are estimated once: a copy among the SMC from the prior's
    # modes is merged into the first of its group (``merged``), a copy only the plain chains
    # from prior draws found is dropped
    fitted = fit_chains_and_basins(family, reference_adapter(family, pt_local, pt_leap),
                                   all_refs, starts, rng, cut, n_chains, n_draws, thin, 50)
    copy_of = fit_copies(fitted, cut)
    merged = sorted((i, j) for j, i in copy_of.items() if j < K)
    keep = [k for k in range(all_refs.shape[0]) if k not in copy_of]
    if copy_of:
        all_refs, starts = all_refs[keep], [starts[k] for k in keep]
        basins = fit_chains_and_basins(family, None, all_refs, starts, rng, cut, n_chains,
                                       n_draws, thin, 50, fits=[fitted[0][k] for k in keep],
                                       kept=(fitted[1], keep))
        fitted = basins[:3] + (fitted[3] + basins[3],)
    K_kept = K - len(merged)
    size = PathSMCSize(all_refs.shape[0], n_runs, n_particles, n_moves, cess)
    smc_out = reference_log_z(family, all_refs, starts, rng, cut=cut, n_runs=n_runs,
                              n_particles=size, n_moves=n_moves, cess=cess,
                              local=pt_local, n_leap=pt_leap, early_stop=EARLY_STOP,
                              fitted=fitted, copula=pt_copula, **fit)
    smc_out["sizes"] = size.log  # (mode, steps, s per particle-move, particles) in a budget
    # a mode only the plain chains from prior draws found that is a copy of an earlier mode
    # by its final path particles too is that mode reached twice: estimate once
    dup = sorted(set(smc_out["duplicates"]) | set(smc_out["joined"]))
    drop = sorted({j for _, j in dup if j >= K_kept})
    if drop:
        smc_out = drop_modes(smc_out, drop, all_refs.shape[2])
        all_refs, starts = (all_refs[[k for k in range(all_refs.shape[0]) if k not in drop]],
                            [st for k, st in enumerate(starts) if k not in drop])
    same = [f"modes {keep[i]} and {keep[j]} of the SMC from the prior: each holds more than "
            f"{DUPLICATE_SHARE:.0%} of the other's fit-chain draws or path particles in its "
            "basin (or the basin rule "
            "joins them), so they are one mode counted twice" for i, j in dup if j < K_kept]
    dup = sorted({(i, j) for j, i in copy_of.items()} | {(keep[i], keep[j]) for i, j in dup})
    drop = sorted({j for j in copy_of if j >= K} | {keep[j] for j in drop})
    upper = mass_upper_bounds(smc_out["run_log_z"], n_done=smc_out["runs_done"])
    skipped = [int(k) for k in np.flatnonzero(upper < NEGLIGIBLE)]
    t1 = time.process_time()
    try:
        pt_out = reference_pt_log_z(family, all_refs, starts, rng, cut=cut, n_runs=pt_runs,
                                    n_scans=pt_scans, n_sweeps=pt_sweeps, local=pt_local,
                                    n_leap=pt_leap, skip=skipped, stop_trips=pt_trips,
                                    copula=pt_copula, **fit)
        # a mode whose tempering was too dear to start is a reason of its own, not a failure
        dear = [int(k) for k in np.flatnonzero(np.isfinite(pt_out["too_dear"][:, 0]))]
        reasons = same + per_mode_reasons(smc_out, pt_out, log_z, log_z_se, all_refs.shape[0],
                                          skipped=skipped + dear, prior_dof=prior_dof)
        reasons += cpu_short_reasons(pt_out, pt_trips, MIN_ROUND_TRIPS)
        reasons += too_dear_reasons(pt_out, MIN_ROUND_TRIPS)
    except BudgetExhausted as err:
        pt_out = None
        todo = all_refs.shape[0] - len(skipped)
        reasons = same + [f"{err} during the parallel tempering of {todo} mode(s), after "
                   f"{time.process_time() - t1:.0f} CPU s of it (the reference-path SMC took "
                   f"{smc_out['cpu_s']:.0f} s): raise budget_s or lower pt_scans / pt_runs"]
    return {"smc": smc_out, "pt": pt_out, "n_smc_modes": K, "reasons": reasons,
            "upper": upper, "skipped": skipped, "duplicates": dup, "dropped": drop,
            "merged": merged,
            "prior_chains": prior_chains, "prior_cpu_s": prior_cpu,
            "prior_ends_in_smc_modes": None if near is None else int(np.sum(near >= 0))}
