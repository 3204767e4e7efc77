"""Mode masses of large Poisson count matrices: modes by restarts, HMC as the move (glue).

On a count matrix with millions of mutations (ESCC SBS96: 96 x 552, 6.9 M) one latent-count
sweep costs tens of milliseconds, while HMC on ``log A, log W`` with the Poisson likelihood
evaluated directly (:mod:`bnmfzoo.inference.counts.tempering._hmc`) costs ``O(cells K)`` per
gradient whatever the counts. This route keeps both per-mode estimators of
:func:`bnmfzoo.inference.reference_tempering.per_mode_check` (the reference-path SMC and the
reference-path parallel tempering, each exact for its target) and changes two things:

* **the moves**: the exact group moves and HMC at every temperature, no latent-count sweep
  (``local = "shear+rescale+hmc"``), when HMC decorrelates ``l'`` faster per CPU second
  (:func:`choose_moves` measures both on the data);
* **how modes are found**: instead of an SMC from the prior (whose moves would be the sweep),
  ``n_starts`` draws from the prior are each run by KL multiplicative updates
  (:func:`kl_nmf_start`; Lee & Seung 2001, with the prior's rates) and a short HMC chain at
  ``b = 1``; their end states are grouped into modes by the matched angle. **Modes those starts
  never reached are unknown, not zero**: the masses are those of the modes found, relative to
  each other, and the result says so. There is no SMC from the prior, so no check of the total
  evidence against it.

References
----------
Lee, D. D. & Seung, H. S. (2001). Algorithms for non-negative matrix factorization. NIPS 13.
"""

import math
import time

import numpy as np

from bnmfzoo.inference._mass_budget import (
    BudgetedSweep,
    BudgetExhausted,
    check_budget,
    with_budget,
)
from bnmfzoo.inference.counts._kl_start import KL_MAX, kl_nmf_start, mode_tol

__all__ = ["kl_nmf_start", "HmcTempered", "move_costs", "choose_route", "restart_modes",
           "early_copies", "large_mode_masses", "large_route_need", "TAU_RATIO", "LARGE_LOCAL",
           "COPY_CHECK_DRAWS", "hmc_fit_draws", "HMC_FIT_MOVES", "HMC_FIT_SHARE"]

#: the moves of the large route: the exact group moves and HMC at every temperature
LARGE_LOCAL = "shear+rescale+hmc"
#: HMC-only moves need at most this many times the latent-count sweep route's moves to
#: decorrelate ``l'`` (measured on ESCC SBS96, K = 4: ``tau`` at ``b = 1`` 23-37 HMC moves
#: against 11-24 sweep moves, a ratio of 1.5-2.1; ``docs/results/masses_large.md`` §2), so
#: they are faster per CPU second when the sweep route's move costs more than this many times
#: theirs
TAU_RATIO = 2.5


class HmcTempered:
    """The tempered target ``p0 L^b`` of a Poisson family moved by HMC and the group moves only.

    ``sweep(state, b, rng)``: the exact group moves and HMC transitions of
    :class:`~bnmfzoo.inference.counts.tempering._local.RungMoves` (``local``) at the prior's
    shapes and rates with the likelihood's power ``b`` (no latent-count sweep); ``loglik``,
    ``copy`` and every other attribute are the wrapped tempered sweep's. HMC's step size adapts
    until :meth:`freeze` (then the move is a fixed exact kernel of ``p0 L^b``). Each call first
    checks the CPU budget (:func:`~bnmfzoo.inference._mass_budget.check_budget`).
    """

    def __init__(self, tempered, local=LARGE_LOCAL, n_leap=20):
        from bnmfzoo.inference.counts.tempering._local import RungMoves

        self._inner = tempered
        self.dimension = tempered.dimension
        p = tempered.problem
        D, N = p.shape
        K = p.rank
        self.prior = tuple(np.broadcast_to(np.asarray(v, float), sh).copy() for v, sh in (
            (p.aA, (D, K)), (p.bA, (D, K)), (p.aW, (K, N)), (p.bW, (K, N))))
        self.moves = RungMoves(p, local, n_leap=n_leap)
        if self.moves.sweep or not self.moves.hmc:
            raise ValueError(f"local must hold hmc and not sweep, got {local!r}")

    def __getattr__(self, name):
        if name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)

    def freeze(self):
        """Fix HMC's step size (the adapted average) from now on."""
        self.moves.freeze()

    def sweep(self, state, beta, rng):
        """The group moves and HMC at ``b = beta`` on ``state``'s factors, in place."""
        check_budget()
        aA, bA, aW, bW = self.prior
        A, W = self.moves.run(state["A"], state["W"], aA, bA, aW, bW, float(beta), rng)
        state.update(A=A, W=W)

    def loglik(self, state):
        """The wrapped sweep's log-likelihood."""
        check_budget()
        return self._inner.loglik(state)

    def copy(self, state):
        """The wrapped sweep's copy."""
        check_budget()
        return self._inner.copy(state)


def move_costs(family, rng, n_leap=20, repeats=5):
    """CPU seconds of one move at ``b = 0.7`` (medians of ``repeats``).

    HMC runs at a tiny step, so every trajectory runs its ``n_leap`` steps. Returns
    ``{"sweep": the latent-count sweep with the group moves and an HMC transition over the
    observed cells (the sweep route's move at b >= 0.7), "hmc": the group moves and a dense HMC
    transition (the large route's move)}``.
    """
    from bnmfzoo.inference.reference_path import ReferencePath, reference_adapter

    out = {}
    for name, local in (("sweep", "sweep+shear+rescale+hmc"), ("hmc", LARGE_LOCAL)):
        ad = reference_adapter(family, local, n_leap)
        ad.moves.freeze()
        ad.moves.log_eps = math.log(1e-6)  # full trajectories (none stopped by an overflow)
        q = {"aA": ad.aA, "bA": ad.bA, "aW": ad.aW, "bW": ad.bW}
        path = ReferencePath(ad, q)
        s = kl_nmf_start(family.tempered.problem, family.draw_prior(rng), n_iter=50)
        path.sweep(s, 0.7, rng)
        ts = []
        for _ in range(int(repeats)):
            t = time.process_time()
            path.sweep(s, 0.7, rng)
            ts.append(time.process_time() - t)
        out[name] = float(np.median(ts))
    return out


def choose_route(sweep_fits, costs, ratio=TAU_RATIO):
    """``(large, why)``: whether the large route runs, and one line saying why.

    The large route runs when the sweep route cannot start within the budget (``sweep_fits``
    false) and the HMC-only move is faster per CPU second: the sweep route's move costs more
    than ``ratio`` times the HMC-only move (:data:`TAU_RATIO`). Where the sweep route fits it
    is kept (its draws and calibration are the measured ones).

    >>> choose_route(False, {"sweep": 0.060, "hmc": 0.008})[0]
    True
    >>> choose_route(True, {"sweep": 0.060, "hmc": 0.008})[0]
    False
    """
    cs, ch = float(costs["sweep"]), float(costs["hmc"])
    if not (cs > 0 and ch > 0 and math.isfinite(cs) and math.isfinite(ch)):
        raise ValueError(f"costs must be positive finite seconds, got {costs!r}")
    faster = cs > ratio * ch
    what = (f"move at b = 0.7: sweep route {cs * 1e3:.2f} ms, HMC only {ch * 1e3:.2f} ms "
            f"(ratio {cs / ch:.1f}; HMC only needs at most {ratio:g}x the moves)")
    if sweep_fits:
        return False, f"sweep route: it fits the budget; {what}"
    if faster:
        return True, (f"large route (HMC only, modes by restarts): the sweep route does not fit "
                      f"the budget and HMC only is faster per CPU s; {what}")
    return False, (f"no route fits: the sweep route does not fit the budget and HMC only is not "
                   f"faster per CPU s; {what}")


#: temperatures of a run of the large route's reference-path SMC per root of the dimension
#: (the sizing guess of :func:`large_mode_masses`; ESCC SBS96, K = 4: 204 guessed, 263-268 run)
SMC_STEPS_PER_ROOT_DIM = 4.0
#: steps of the parallel tempering's pilot SMC (CESS 0.9, one move per step) per root of the
#: dimension: ESCC SBS96, K = 4 (dimension 2,592) measured a barrier of 29-32, i.e. 155-170
#: steps (``docs/results/masses_large.md`` §2); 3 gives 28.7, at or below the measured barrier
LADDER_STEPS_PER_ROOT_DIM = 3.0
#: tuning scans of the large route's tempering runs (2 rounds of 16 and 32 scans)
TUNE_SCANS = 48
#: the reference-path SMC's temperatures per root of the dimension and its CPU per
#: particle-move, in HMC moves of the product path, along the copula's path
#: (``copula=True``): 49-50 temperatures on ESCC SBS96 at K = 4
#: (0.96-0.98 sqrt(dimension)) and 43 on a 96 x 214 SBS96 catalogue (1.22), at 2.2 times the
#: CPU per move (``docs/results/masses_copula_reference.md``); below both, as a floor
COPULA_SMC_STEPS_PER_ROOT_DIM, COPULA_MOVE_FACTOR = 0.9, 2.0
#: ``LADDER_STEPS_PER_ROOT_DIM`` from the Gaussian copula reference (``copula=True``): its
#: pilots' barriers were 0.16-0.25 sqrt(dimension) (ESCC SBS96, K = 4: 8.1 from 2,000
#: latent-count sweep draws, 11.3 from 400; breast SBS96: 4.7-5.6;
#: ``docs/results/masses_copula_reference.md``), and 0.8 steps give 0.15 sqrt(dimension)
COPULA_LADDER_STEPS_PER_ROOT_DIM = 0.8
#: with ``copula=True`` the tempering's fit chains are latent-count sweeps, at least this many
#: draws per chain: on ESCC SBS96 (K = 4) the route's pilot gave the copula a barrier of 40.2
#: (4 x 100 HMC draws) and 30.3 (4 x 500), against 13.9 and 9.2 from as many sweep draws (9 and
#: 40 CPU s of chains; the product 42-47 and 37-44 either way;
#: ``docs/results/masses_copula_reference.md`` section 23). With the Poisson copula's 16
#: factors at widening 1.0, 4 x 1,000 draws gave ESCC the SMC's 41-43 temperatures against
#: 50-53 and the tempering's 16-17 rungs (2-7 round trips in 488 s) against 19-20 (0-1 in 538
#: s) from 4 x 500 (``masses_copula_reference_2.md`` section 27)
COPULA_FIT_DRAWS = 1000
#: the most kept scans of a tempering run that ends at ``pt_trips`` round trips (as on the
#: sweep route, ``bnmfzoo._cli.masses_budget.POISSON_ROUTE``)
PT_MAX_SCANS = 2500


def large_route_need(dimension, move_cost, *, n_runs=4, n_particles=20, n_moves=2, pt_runs=4,
                     min_trips=None, cess=0.9, copula=False):
    """The least CPU seconds in which the large route could establish **one** mode.

    From the route's own pilot (``move_cost``, :func:`move_costs`' ``"hmc"``) and the
    dimension: the reference-path SMC at its smallest size (``n_runs`` x ``n_particles`` x
    ``n_moves`` moves x ``SMC_STEPS_PER_ROOT_DIM sqrt(dimension)`` temperatures, 30 % more for
    ``l'`` and copies, as :func:`large_mode_masses` sizes it) plus the parallel tempering's
    ``pt_runs`` runs of ``2 Lambda + 1`` rungs, each of ``min_trips`` round trips
    (:data:`~bnmfzoo.inference._mass_verdict.MIN_ROUND_TRIPS`) of at least ``2 + 2 Lambda``
    scans (the round-trip time of non-reversible PT with no cost per swap, Syed et al. 2022),
    10 % burn-in and :data:`TUNE_SCANS` tuning scans, one move per rung-scan. ``Lambda`` is
    the barrier :func:`~bnmfzoo.inference.reference_tempering.pilot_ladder` would read from
    ``LADDER_STEPS_PER_ROOT_DIM sqrt(dimension)`` steps. Every term is at or below what the
    route spends (fit chains, restarts, pilot ladder, a second mode are left out), so a budget
    below it cannot establish a mass by this route. ``copula``: the SMC's temperatures and
    move cost are :data:`COPULA_SMC_STEPS_PER_ROOT_DIM` and :data:`COPULA_MOVE_FACTOR`, the
    ladder's steps per root dimension :data:`COPULA_LADDER_STEPS_PER_ROOT_DIM` (the
    tempering's move cost stays the product reference's HMC move, below the copula's).

    >>> need = large_route_need(2592, 5.96e-3)  # ESCC SBS96, K = 4 (masses_large.md §3)
    >>> round(need["barrier"], 1), need["rungs"], need["scans"], round(need["total_s"])
    (28.7, 59, 703, 1242)
    >>> need = large_route_need(2592, 5.96e-3, copula=True)
    >>> round(need["barrier"], 1), need["rungs"], need["scans"], round(need["total_s"])
    (7.7, 17, 240, 185)
    """
    from bnmfzoo.inference._mass_verdict import MIN_ROUND_TRIPS

    if not (math.isfinite(move_cost) and move_cost > 0 and dimension >= 1):
        raise ValueError(f"need a positive move cost and dimension, got {move_cost!r}, "
                         f"{dimension!r}")
    trips = MIN_ROUND_TRIPS if min_trips is None else int(min_trips)
    root = math.sqrt(float(dimension))
    smc_steps, per = ((COPULA_SMC_STEPS_PER_ROOT_DIM, COPULA_MOVE_FACTOR) if copula else
                      (SMC_STEPS_PER_ROOT_DIM, 1.3))
    smc_s = n_runs * n_particles * n_moves * math.ceil(smc_steps * root) * per * move_cost
    ladder = COPULA_LADDER_STEPS_PER_ROOT_DIM if copula else LADDER_STEPS_PER_ROOT_DIM
    lam = ladder * root * math.sqrt(1.0 / cess - 1.0) / math.sqrt(math.pi)
    rungs = math.ceil(2.0 * lam) + 1
    kept = math.ceil(trips * (2.0 + 2.0 * lam))
    scans = TUNE_SCANS + math.ceil(1.1 * kept)
    pt_s = pt_runs * rungs * scans * move_cost
    return {"barrier": lam, "rungs": rungs, "scans": scans, "pt_runs": pt_runs, "smc_s": smc_s,
            "pt_s": pt_s, "total_s": smc_s + pt_s}


def restart_modes(family, tempered, rng, *, cut, n_starts=8, n_kl=KL_MAX, n_hmc=60):
    """Modes reached by ``n_starts`` restarts: prior draw, KL updates, HMC chain at ``b = 1``.

    The KL updates run until they gain less than ``sqrt(dimension)`` nats in
    :data:`~bnmfzoo.inference.counts._kl_start.KL_CHECK` updates (at most ``n_kl``): the
    fit chains start from these restarts, and on ESCC SBS96 at K = 4 a fixed 300 left some
    7,800 nats below the typical set (their chains' first 900 sweeps were a climb).

    Each start's chain is summarised by the aligned mean of the bases of the second half of its
    chain (as :func:`bnmfzoo.inference.mode_bridge.prior_chain_modes`); means within ``cut``
    degrees (max matched angle) of a mode's are grouped into it (greedily, in order).

    Returns
    -------
    tuple
        ``(refs (M, D, K), states (the end state of every start), label (its mode),
        counts (starts per mode), cpu seconds)``.
    """
    from bnmfzoo.diagnostics._modes.mode_clustering import (
        _aligned_mean,
        _unit_l2,
        matched_angles,
    )

    t0 = time.process_time()
    states, means = [], []
    for i in range(int(n_starts)):
        s = kl_nmf_start(tempered.problem, family.draw_prior(rng), n_iter=n_kl,
                         tol=mode_tol(tempered.problem))
        kept = []
        for j in range(int(n_hmc)):
            tempered.sweep(s, 1.0, rng)
            if j >= n_hmc // 2:
                kept.append(np.array(family.factors(s)[0], float))
        if i == 0:
            tempered.freeze()  # adapted on the first start's chain, fixed from here on
        U = _unit_l2(np.stack(kept))
        states.append(s)
        means.append(_aligned_mean(U, np.ones(len(kept)), U[-1], 2))
    refs, members, label = [], [], []
    for u in means:
        if refs:
            d, _ = matched_angles(u[None], np.stack(refs))
            j = int(d[0].argmin())
            if d[0, j] <= cut:
                members[j].append(u)
                refs[j] = _aligned_mean(np.stack(members[j]), np.ones(len(members[j])),
                                        members[j][0], 2)
                label.append(j)
                continue
        refs.append(u)
        members.append([u])
        label.append(len(refs) - 1)
    label = np.array(label)
    return (np.stack(refs), states, label, np.bincount(label, minlength=len(refs)),
            time.process_time() - t0)


#: draws per fit chain (thin 2) of the short chains that look for copies among the restarts'
#: groups before the full fit chains (:func:`early_copies`)
COPY_CHECK_DRAWS = 150


def early_copies(family, refs, starts, counts, rng, cut, n_chains, thin, n_burn,
                 n_draws=COPY_CHECK_DRAWS):
    """The restarts' groups without the copies short fit chains show.

    The restarts group their end states by the matched angle of short HMC chains' means, and
    on ESCC SBS96 at K = 4 the 8 restarts of one seed made 3 groups that the fit chains then
    showed to be one mode: the full fit chains (4 x 2,030 latent-count sweeps per group)
    spent two thirds of their 459 CPU s on copies. Here each group first gets ``n_chains``
    chains of ``n_draws`` draws; :func:`~bnmfzoo.inference.reference_path.fit_copies` on them
    merges copies (the rule the full chains apply again afterwards), a copy's restarts and
    start states going to the group it copies (up to ``n_chains`` starts).

    Returns ``(refs, starts, counts, copy_of)`` of the groups kept (``copy_of``: ``{j: i}``).
    """
    from bnmfzoo.inference.reference_path import (
        fit_chains_and_basins,
        fit_copies,
        reference_adapter,
    )

    short = fit_chains_and_basins(family, reference_adapter(family), refs, starts, rng, cut,
                                  n_chains, n_draws, thin, n_burn, extend=0)
    copy_of = fit_copies(short, cut)
    if not copy_of:
        return refs, starts, counts, {}
    starts = [list(s) for s in starts]
    for j, i in copy_of.items():
        starts[i] = (starts[i] + starts[j])[:n_chains]
    keep = _merge_copies(counts, copy_of)
    return refs[keep], [starts[k] for k in keep], counts[keep], copy_of


#: copula-mass HMC moves at ``b = 1`` per fit chain added to each mode's fit draws
#: (:func:`hmc_fit_draws`), after :data:`HMC_FIT_ADAPT` adapting ones; at most
#: :data:`HMC_FIT_SHARE` of the budget left goes to them (fewer moves when several modes share)
HMC_FIT_MOVES = 2000
HMC_FIT_ADAPT = 100
HMC_FIT_SHARE = 0.2


def hmc_fit_draws(family, fitted, rng, n_moves=HMC_FIT_MOVES, n_adapt=HMC_FIT_ADAPT):
    """Each mode's fit draws joined by draws of HMC under the copula's mass (new chains).

    The copula reference is limited by its fit draws (its held-out divergence on ESCC SBS96 at
    K = 4 fell from 427 to 177 nats as they grew from 750 to 2,628), and latent-count sweeps
    make them slowly. Here a copula fitted to a mode's fit draws inside its basin (``fitted``:
    :func:`~bnmfzoo.inference.reference_path.fit_chains_and_basins`' result) serves as the
    mass of HMC at ``b = 1`` (:func:`~bnmfzoo.inference.counts.tempering._hmc_copula.
    hmc_step_copula_mass`; the posterior itself is the target), run from each fit chain's last
    draw inside the basin for ``n_adapt`` and then ``n_moves`` kept moves, as a new chain (ids
    after the fit chains'). Returns the fits ``[(aligned draws, bases, chain, log joint)]``;
    the basin rule is to be run again over them. Any draws keep both estimators exact: they
    only fit the reference. On ESCC SBS96 at K = 4 (seed 0's 3,428 sweep fit draws, 146 CPU
    s; a copula fitted to them: pilot barrier 6.4-6.8) 4 x 800 moves took 55 CPU s and a copula
    fitted to them alone had the same barrier (6.6-6.8), to both 5.6-6.0; 4 x 2,000 moves took
    124 CPU s, barrier 5.3-5.8 alone, 5.3-5.5 with the sweep's
    (``docs/results/masses_copula_reference_2.md`` section 33).
    """
    from bnmfzoo.inference.reference_path import COPULA_LEAPFROG, ReferencePath, reference_adapter

    fits, _, inside, _ = fitted
    out = []
    for k, (rows, bases, chain, joint) in enumerate(fits):
        if n_moves < 1:
            out.append((rows, bases, chain, joint))
            continue
        new, ad = ([], [], [], []), reference_adapter(family, "hmc", COPULA_LEAPFROG)
        try:
            q = ad.fit_copula(rows[inside[k]], ad.copula_widen[0]) if inside[k].sum() >= 8 \
                else None
        except ValueError:
            q = None
        for c in np.unique(chain) if q is not None else ():
            ends = np.flatnonzero(inside[k] & (chain == c))
            if not ends.size:
                continue
            path = ReferencePath(reference_adapter(family, "hmc", COPULA_LEAPFROG), q)
            s = path.adapter._state(rows[ends[-1]])
            for i in range(n_adapt + n_moves):
                path.sweep(s, 1.0, rng)  # checks the budget
                if i == n_adapt - 1:
                    path.adapter.freeze()
                if i >= n_adapt:
                    a = path.adapter
                    for part, v in zip(new, (a.draws(s, slice(None)),
                                             np.asarray(family.factors(s)[0], float),
                                             chain.max() + 1 + c,
                                             a.loglik(s) + a.log_p0(s)), strict=True):
                        part.append(v)
        out.append((rows, bases, chain, joint) if not new[0] else (
            np.vstack([rows, new[0]]), np.concatenate([bases, np.stack(new[1])]),
            np.concatenate([chain, new[2]]), np.concatenate([joint, new[3]])))
    return out


def _merge_copies(counts, copy_of):
    """The modes kept when each ``j`` of ``copy_of`` (``{j: i}``) is a copy of ``i``.

    ``counts`` (restarts per mode) gets each copy's restarts added to its mode's, in place.

    >>> c = np.array([5, 1, 2])
    >>> _merge_copies(c, {1: 0}), c.tolist()
    ([0, 2], [6, 1, 2])
    """
    for j, i in copy_of.items():
        counts[i] += counts[j]
    return [k for k in range(len(counts)) if k not in copy_of]


def _sizes(left, n_modes, runs, moves, steps, cost, share, low, high):
    """How many units (particles or scans) fit ``share`` of ``left`` CPU seconds."""
    n = share * left / max(n_modes * runs * moves * steps * cost, 1e-12)
    return int(np.clip(n, low, high))


@with_budget
def large_mode_masses(model, *, budget_s=None, random_seed=None, n_starts=8, n_runs=4,
                      n_particles=None, n_moves=2, pt_runs=4, pt_scans=None, n_leap=20,
                      cut=15.0, n_chains=4, n_draws=100, thin=2, n_burn=30, move_cost=None,
                      route_note="", copula=False, pt_trips=None):
    """Mode masses of a large Poisson matrix: modes by restarts, two per-mode estimators by HMC.

    Parameters
    ----------
    model : pymc.Model
        A Poisson NMF with constant prior rates.
    budget_s : float, optional
        CPU seconds for the whole call (a cap: :mod:`bnmfzoo.inference._mass_budget`).
    random_seed : int, optional
    n_starts : int
        Restarts that find the modes (:func:`restart_modes`).
    n_runs, n_particles, n_moves : int
        Reference-path SMC runs per mode, particles (default: about 30 % of the budget left
        after the restarts, clipped to 20-100) and moves per temperature. A mode whose first
        two runs and the modes estimated before it bound its mass below
        :data:`~bnmfzoo.inference._mass_verdict.EARLY_STOP` gets no more runs (on ESCC SBS96
        at K = 4 two of the three restart groups are about 2,000 nats below the first), and
        one bounded below 1 % no tempering.
    pt_runs, pt_scans : int
        Reference-path parallel-tempering runs per mode and kept scans (default: about 80 % of
        the budget left after the SMC, at least 50; with ``pt_trips``, at most
        :data:`PT_MAX_SCANS`).
    pt_trips : int, optional
        Each tempering run ends at this many round trips or on its share of the budget left
        (``stop_trips`` of :func:`~bnmfzoo.inference.reference_tempering.reference_pt_log_z`,
        as on the sweep route; a mode whose start-up floor is above its share is not started).
        Without it the runs make ``pt_scans`` scans, sized from the SMC's temperatures: on
        ESCC SBS96 that planned about 100 rungs, and the copula's path had 21, so the runs
        stopped at 102 scans with no round trip and a third of the budget unspent.
    n_leap : int
        Leapfrog steps per HMC transition.
    cut : float
        Max matched angle (degrees) of one mode.
    n_chains, n_draws, thin, n_burn : int
        Fit chains per mode (:func:`bnmfzoo.inference.reference_path.reference_log_z`).
    move_cost : float, optional
        CPU seconds of one move (:func:`move_costs`' ``"hmc"``; measured when not given).
    route_note : str
        Why this route was chosen, repeated in the statement.
    copula : bool
        The tempering also pilots the Gaussian copula over each mode's marginal fit and keeps
        it where its runs' predicted CPU is lower
        (:func:`~bnmfzoo.inference.reference_tempering.reference_pt_log_z`); its fit chains are
        then latent-count sweeps of :data:`COPULA_FIT_DRAWS` draws or more, run once for both
        estimators and joined by up to :data:`HMC_FIT_MOVES` draws per chain of HMC under
        the copula's mass (:func:`hmc_fit_draws`; at most :data:`HMC_FIT_SHARE` of the budget
        left), and the reference-path SMC runs along the
        copula's path
        (``copula`` of :func:`~bnmfzoo.inference.reference_path.reference_log_z`). On ESCC
        SBS96 at K = 4, from 2,000 such draws, its runs took 49-50 temperatures and
        35 CPU s each at 48 particles and were within 1.5 nats of the tempering's ``log Z``,
        where the product's runs (HMC draws, 20 particles, 265 temperatures, 40 s each) were
        35 nats low (``docs/results/masses_copula_reference.md``).

    Returns
    -------
    dict
        ``modes`` (per mode: ``mass``, ``se``, ``low``, ``high``, ``estimator``,
        ``mass_check``, ``check_se``, ``check_estimator``, ``bound``, ``note``, ``n_starts``),
        ``established``, ``statement``, ``smc`` and ``pt`` (the two estimators' results),
        ``costs`` (CPU seconds per mode, per particle-move and per rung-scan), ``fit_draws``
        (with ``copula``, per mode: ``(kept, run)`` fit-chain draws, each chain's start-up
        transient dropped; ``None`` without), ``hmc_fit_draws`` (per mode, the HMC draws
        added to them), ``merged_early`` (``{j: i}``: restart groups
        that short fit chains showed to be copies, :func:`early_copies`), ``cpu_s``.
    """
    from dataclasses import replace

    from bnmfzoo.inference._mass_budget import cpu_short_reasons, too_dear_reasons
    from bnmfzoo.inference._mass_result import reference_mode_entry
    from bnmfzoo.inference._mass_verdict import (
        EARLY_STOP,
        MIN_ROUND_TRIPS,
        NEGLIGIBLE,
        mass_upper_bounds,
        per_mode_reasons,
    )
    from bnmfzoo.inference.reference_path import (
        drop_modes,
        fit_chains_and_basins,
        fit_copies,
        reference_adapter,
        reference_log_z,
    )
    from bnmfzoo.inference.reference_tempering import reference_pt_log_z
    from bnmfzoo.inference.smc_masses import family_of_model

    t0 = time.process_time()
    family = family_of_model(model)
    if family.name != "poisson":
        raise ValueError(f"the large route needs a Poisson model, got {family.name!r}")
    if family.tempered.problem.rates:
        raise ValueError("the large route needs constant prior rates (the model has rate "
                         "variables)")
    tempered = HmcTempered(family.tempered, LARGE_LOCAL, n_leap)
    hfam = replace(family, tempered=tempered)
    rng = np.random.default_rng(random_seed)
    budget = math.inf if budget_s is None else float(budget_s)
    unknown = (f"Modes the {n_starts} restarts never reached are unknown, not zero: masses are "
               "shares among the modes found, and with no SMC from the prior the total "
               "evidence is not checked against one.")
    base = {"estimator": "reference_path", "route": "large", "route_note": route_note,
            "smc": None, "pt": None, "modes": [], "established": False}

    def stop(err, stage, found=""):
        return {**base, "statement": f"Masses NOT established: {err} during {stage}{found}. "
                "Raise the budget. " + unknown, "cpu_s": time.process_time() - t0}

    try:
        if move_cost is None:
            move_cost = move_costs(family, rng, n_leap)["hmc"]
        refs, states, label, counts, find_cpu = restart_modes(
            family, tempered, rng, cut=cut, n_starts=n_starts)
    except BudgetExhausted as err:
        return stop(err, "the restarts")
    M = refs.shape[0]
    starts = [[states[i] for i in np.flatnonzero(label == k)][:n_chains] for k in range(M)]
    # a guess of the SMC's temperatures per run: 4 sqrt(dimension) from the product (ESCC
    # SBS96, K = 4, dimension 2,592: 170-200 measured, docs/results/masses_large.md §2), 1.2
    # sqrt(dimension) from the copula at 2.2 times the CPU per move (49-50 there)
    steps, per_move = math.ceil(4.0 * math.sqrt(tempered.dimension)), 1.3 * move_cost
    pt_fam, pt_draws, fitted, merged_early = hfam, n_draws, None, {}

    def kept(keep):  # the modes kept, and the basin rule over their fit chains (not re-run);
        if fitted is None:  # the fit CPU carried on
            return refs[keep], [starts[k] for k in keep], counts[keep], None
        again = fit_chains_and_basins(pt_fam, None, refs[keep], [starts[k] for k in keep], rng,
                                      cut, n_chains, pt_draws, thin, n_burn,
                                      fits=[fitted[0][k] for k in keep])
        return refs[keep], [starts[k] for k in keep], counts[keep], (*again[:3],
                                                                     fitted[3] + again[3])
    if copula:  # both estimators fit to the less correlated latent-count sweep's draws
        pt_fam = replace(family, tempered=BudgetedSweep(family.tempered))
        pt_draws = max(n_draws, COPULA_FIT_DRAWS)
        steps, per_move = (math.ceil(1.2 * math.sqrt(tempered.dimension)),  # measured
                           2.2 * move_cost)  # (COPULA_SMC_STEPS_PER_ROOT_DIM)
        try:
            if M > 1:  # restart groups are often one mode: copies found on short chains
                refs, starts, counts, merged_early = early_copies(
                    pt_fam, refs, starts, counts, rng, cut, n_chains, thin, n_burn)
                M = refs.shape[0]
            fitted = fit_chains_and_basins(pt_fam, reference_adapter(pt_fam), refs, starts,
                                           rng, cut, n_chains, pt_draws, thin, n_burn,
                                           trim=True, extend=0)  # not measured on this route
            for hmc in (False, True):  # copies merged, then HMC draws for the modes kept
                copy_of = fit_copies(fitted, cut)  # restarts' groups the fit chains show to be
                if copy_of:  # one mode: estimated once, before any SMC run is spent on a copy
                    refs, starts, counts, fitted = kept(_merge_copies(counts, copy_of))
                    M = refs.shape[0]
                if hmc:
                    break
                # more draws for the copula, made faster than by the sweep; the basin rule again
                t1 = time.process_time()
                hmc_moves = _sizes(budget - (t1 - t0), M, n_chains, 1, 1, per_move,
                                   HMC_FIT_SHARE, 0, HMC_FIT_MOVES)
                again = fit_chains_and_basins(pt_fam, None, refs, starts, rng, cut, n_chains,
                                              pt_draws, thin, n_burn,
                                              fits=hmc_fit_draws(pt_fam, fitted, rng, hmc_moves))
                fitted = (*again[:3], fitted[3] + time.process_time() - t1)
        except BudgetExhausted as err:
            return stop(err, "the fit chains", f" ({M} mode(s) from the restarts)")
    if n_particles is None:
        n_particles = _sizes(budget - (time.process_time() - t0), M, n_runs, n_moves, steps,
                             per_move, 0.3, 20, 100)  # l' and copies: ~30 % more
    try:
        smc_out = reference_log_z(hfam, refs, starts, rng, cut=cut, n_runs=n_runs,
                                  n_particles=n_particles, n_moves=n_moves, n_chains=n_chains,
                                  n_draws=pt_draws, thin=thin, n_burn=n_burn,
                                  local=LARGE_LOCAL, n_leap=n_leap, early_stop=EARLY_STOP,
                                  fitted=fitted, copula=copula)
    except BudgetExhausted as err:
        return stop(err, "the reference-path SMC", f" ({M} mode(s) from the restarts, starts "
                    f"per mode {counts.tolist()}; {n_runs} runs x {n_particles} particles x "
                    f"{n_moves} moves per temperature per mode; restarts {find_cpu:.0f} CPU s)")
    dup = sorted(set(smc_out["duplicates"]) | set(smc_out["joined"]))
    drop = sorted({j for _, j in dup})
    if drop:  # one mode reached by several restarts' groups: estimate it once
        keep = _merge_copies(counts, {j: i for i, j in dup if i not in drop})
        smc_out = drop_modes(smc_out, drop, refs.shape[2])
        refs, starts, counts, fitted = kept([k for k in keep if k not in drop])
        M = refs.shape[0]
    upper = mass_upper_bounds(smc_out["run_log_z"], n_done=smc_out["runs_done"])
    skipped = [int(k) for k in np.flatnonzero(upper < NEGLIGIBLE)]
    temps = max(max(t) for t in smc_out["n_temperatures"] if t) if any(
        smc_out["n_temperatures"]) else steps
    done = float(sum(n_particles * n_moves * sum(t) for t in smc_out["n_temperatures"]))
    if done > 0:  # the measured CPU seconds per particle-move (l' included)
        move_cost = max(move_cost, float(np.sum(smc_out["cpu_s_mode"])) / done)
    if pt_trips is not None:  # runs end at pt_trips round trips or on their budget share
        pt_scans = PT_MAX_SCANS if pt_scans is None else pt_scans
    elif pt_scans is None:
        # rungs of the pilot ladder: 2 Lambda + 1 with Lambda = steps sqrt(1/c - 1) / sqrt(pi)
        # (reference_tempering.pilot_ladder, c = 0.9); 60 % of what is left (the PT's own fit
        # chains, pilot, tuning and burn-in take the rest), 48 tuning scans per run
        rungs = 2.0 * temps * math.sqrt(1.0 / 0.9 - 1.0) / math.sqrt(math.pi) + 1.0
        heavy = max(1, M - len(skipped))
        pt_scans = max(50, int((_sizes(budget - (time.process_time() - t0), heavy, pt_runs, 1,
                                       rungs, move_cost, 0.6, 0, 10**6) - 48) / 1.1))
    t1 = time.process_time()
    try:
        pt_out = reference_pt_log_z(pt_fam, refs, starts, rng, cut=cut, n_runs=pt_runs,
                                    n_scans=pt_scans, n_tune_rounds=2, n_chains=n_chains,
                                    n_draws=pt_draws, thin=thin, n_burn=n_burn,
                                    local=LARGE_LOCAL, n_leap=n_leap, skip=skipped,
                                    copula=copula, stop_trips=pt_trips, fitted_chains=fitted)
        # a mode whose tempering was too dear to start (pt_trips) is a reason of its own
        dear = [int(k) for k in np.flatnonzero(np.isfinite(pt_out["too_dear"][:, 0]))]
        reasons = per_mode_reasons(smc_out, pt_out, -math.inf, math.inf, M,
                                   skipped=skipped + dear)
        reasons += too_dear_reasons(pt_out, MIN_ROUND_TRIPS)
        if pt_trips is not None:  # runs ended on their CPU share: what they would need
            reasons += cpu_short_reasons(pt_out, pt_trips, MIN_ROUND_TRIPS)
    except BudgetExhausted as err:
        pt_out = None
        reasons = [f"{err} during the parallel tempering, after {time.process_time() - t1:.0f} "
                   f"CPU s of it: raise the budget or lower pt_scans"]
    nan = np.full(M, math.nan)
    mp, sp = (nan, nan) if pt_out is None else (pt_out["mass"].copy(), pt_out["se"].copy())
    if pt_out is not None:  # a mode whose tempering did not run (too dear) has no check
        mp[~np.isfinite(pt_out["log_z"])] = sp[~np.isfinite(pt_out["log_z"])] = math.nan
    modes = []
    for k in range(M):
        entry = reference_mode_entry(smc_out["mass"][k], smc_out["se"][k],
                                     (int(smc_out["runs_done"][k]), n_particles), upper[k],
                                     mp[k], sp[k], k in skipped)
        modes.append({**entry, "n_starts": int(counts[k])})
    n_moves_run = np.array([n_particles * n_moves * np.sum(t) for t in
                            smc_out["n_temperatures"]], float)
    costs = {"restarts_s": find_cpu, "smc_s_per_mode": np.asarray(smc_out["cpu_s_mode"]),
             "smc_s_per_particle_move": np.asarray(smc_out["cpu_s_mode"]) / np.maximum(
                 n_moves_run, 1), "move_s": move_cost,
             "pt_s_per_mode": None if pt_out is None else pt_out["cpu_s_mode"],
             "pt_s_per_rung_scan": None if pt_out is None else pt_out["cpu_s_per_rung_scan"]}
    established = not reasons
    head = (f"{M} mode(s) from {n_starts} restarts (starts per mode {counts.tolist()}); "
            + ("the reference-path SMC and parallel tempering agree for every mode holding "
               ">= 1 %." if established else "Masses NOT established: " + "; ".join(reasons)
               + "."))
    return {**base, "modes": modes, "established": established,
            "statement": head + " " + unknown + (f" Route: {route_note}." if route_note else ""),
            "smc": smc_out, "pt": pt_out, "skipped": skipped, "dropped": drop, "costs": costs,
            "merged_early": merged_early,
            "fit_draws": None if fitted is None else [  # per mode: kept after the transients
                (int(np.sum(f[2] < n_chains)), n_chains * pt_draws) for f in fitted[0]],
            "hmc_fit_draws": None if fitted is None else [  # per mode: hmc_fit_draws' draws
                int(np.sum(f[2] >= n_chains)) for f in fitted[0]],
            "settings": {"n_starts": n_starts, "n_runs": n_runs, "n_particles": n_particles,
                         "n_moves": n_moves, "pt_runs": pt_runs, "pt_scans": pt_scans,
                         "n_leap": n_leap, "local": LARGE_LOCAL, "copula": bool(copula),
                         "pt_trips": pt_trips},
            "cpu_s": time.process_time() - t0}
