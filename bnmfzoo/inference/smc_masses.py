"""Posterior masses of the modes by tempered SMC, checked by annealed importance sampling.

:func:`smc_mode_masses` answers "which good factorizations does the posterior hold, and how
much mass each" in one call, for the exponential-Gaussian, count (Poisson, negative binomial)
and Beta-Dir binary models:

1. **SMC** (the estimate): ``n_runs`` independent adaptive-tempering SMC runs
   (:func:`bnmfzoo.inference.tempering.smc`; Zhou, Johansen & Aston 2016) from exact prior
   draws to the posterior, moved by the family's exact tempered sweeps (the ones replica
   exchange uses). The final particles of all runs are clustered into modes (max matched
   angle between bases, :func:`bnmfzoo.diagnostics._modes.mode_clustering.cluster_members`);
   each run gives every mode a weighted share, and a mode's **mass** is the mean of the runs'
   shares, its standard error their spread over ``sqrt(n_runs)`` (runs are independent), and
   its interval the clustered-proportion interval of
   :func:`bnmfzoo.diagnostics._modes.masses.mass_interval` with ``n_runs - 1`` degrees of
   freedom.
2. **Per-mode bridge sampling** (the default check, ``check="bridge"``: ``mass_check`` and
   ``check_se``; :mod:`bnmfzoo.inference.mode_bridge`): plain chains at ``beta = 1`` from each
   mode's particles, aligned to the mode, bridged to a normal proposal (Meng & Wong 1996); it
   anneals nothing, so it shares no path with the SMC. Plain chains from prior draws
   (KL-refined for count models: :func:`bnmfzoo.inference.mode_bridge.chain_starts`) look
   for modes no particle reached. Its total evidence is compared with the SMC's ``log Z``.
3. **Per-mode SMC from a fitted reference** (``check="reference"``;
   :mod:`bnmfzoo.inference.reference_path`): for each mode, a product-form reference conjugate
   to the family (Gamma entries for Poisson, truncated normals for exponential-Gaussian, one
   categorical per observed entry's label for Beta-Dir) is
   fitted to plain chains from the mode's members, and ``reference_runs`` SMC runs along
   ``q^(1 - b) (p0 L)^b`` estimate the mode's evidence; masses and the total ``log Z`` (``log
   K! + logsumexp``) follow as for the bridge, with the conditions for ``established`` below.
   Its path starts inside the mode, so it shares neither draws nor path with the SMC from the
   prior.
4. **Two per-mode estimators of different kinds** (``check="reference_pt"``;
   :mod:`bnmfzoo.inference.reference_tempering`): every mode (those the SMC from the prior
   found and those only plain chains from prior draws found) is estimated along the same
   reference path both by the reference-path SMC (3.) and by non-reversible parallel
   tempering with stepping stone (Syed et al. 2022; Surjanovic et al. 2022), each from its own
   fitted reference. The **masses reported are the reference-path SMC's** (``estimator``
   ``"reference_path"``), the check is the tempering's (``"reference_tempering"``), and the
   SMC from the prior only finds modes: its shares (``smc_prior_mass``) and total ``log Z``
   are reported beside. The rule (:func:`bnmfzoo.inference._mass_verdict.per_mode_reasons`):
   masses and ``log Z`` agree within two combined errors for every mode holding at least 1 %,
   every mode separated (no share of its draws above 5 % outside it), at least 10 round trips
   in every tempering run of every mode, every mode found estimated by both, and the SMC from
   the prior **not significantly above** the per-mode total. That comparison is one-sided
   because one SMC run's ``Z``-hat is unbiased, so its ``log Z``-hat is biased low (by about
   ``sd^2 / 2``): a total far below the per-mode total is the SMC's noise, one significantly
   above it is mass no per-mode estimate holds. It is not ``"auto"``'s choice yet: the
   calibration of the intervals on known answers (laurberg, the symmetric 198 x 36 problem)
   was measured with ``"auto"``'s rule and has not been repeated with this one.
5. **AIS from the prior** (``check="ais"``): ``check_runs``
   independent annealed importance sampling runs (Neal 2001) on a fixed schedule (the first
   SMC run's, each step cut into ``check_refine``: :func:`ais_schedule`), no resampling, one
   sweep per step; each run's end is assigned to
   the nearest SMC mode, and a mode's mass is its share of the importance weights (delta-method
   standard error of the ratio). It shares no draw with the SMC and never resamples, so it
   fails differently: SMC collapses onto the modes its moves reach, AIS puts its error in a
   few large weights (reported as ``check_max_weight_share``). Both follow the same tempering
   path, so a mode that appears only at the end of the path (a late, first-order-like
   transition) can be missed by both: agreement is necessary, not sufficient.

**Established** (``result["established"]``; for ``"reference_pt"`` see 4.) only when every run
reached ``beta = 1`` with a
final ESS of at least 10 % of its particles, the runs' ``log Z`` agree (sd below 2 nats), for
every mode holding at least 1 % the two estimates agree within two combined standard errors,
and the check's own conditions hold (bridge: its total ``log Z`` within two combined errors
plus half a nat of the SMC's, no mode's chains leaving it more than 5 % of the time, every
plain chain from a prior draw ending in a mode the SMC found; reference: the same, with the
final path particles, too, staying in their mode and on their label copy, and the totals
compared one-sidedly, as in 4.: an SMC-from-prior total far below the per-mode total is the
SMC's own low noise, one significantly above it fails; AIS: no single weight above half the
total). The agreement multiple is :func:`bnmfzoo.inference._mass_verdict.agreement_factor`: two
standard errors, or the t quantile where an error is the spread of a few runs. Otherwise
``statement`` says what failed and what to run next, and the masses are reported with
``established = False``. Modes no particle reached are not listed: their mass is unknown, not
zero (``statement`` says so). With ``check="reference_pt"`` a mode the reference-path SMC
bounds below 0.1 % gets no tempering and is reported as below 1 % with its bound (``note``,
``bound``; the rule and why it is safe: :mod:`bnmfzoo.inference._mass_verdict`). With
``check="reference"`` the same bound applies to a mode only the plain chains from prior draws
found: bounded below 0.1 % it does not block ``established`` (no SMC particle reaching a mode
that light is what a correct run does) and is listed with its reference-path mass and bound;
otherwise it does (:func:`bnmfzoo.inference._mass_result.unreached_modes`).

References
----------
Zhou, Y., Johansen, A. M. & Aston, J. A. D. (2016). Toward automatic model comparison: an
adaptive sequential Monte Carlo approach. J. Comput. Graph. Statist. 25(3), 701-726.
Neal, R. M. (2001). Annealed importance sampling. Statist. Comput. 11, 125-139.
Syed, S., Bouchard-Cote, A., Deligiannidis, G. & Doucet, A. (2022). Non-reversible parallel
tempering: a scalable highly parallel MCMC scheme. JRSS B 84(2), 321-350.
Surjanovic, N., Syed, S., Bouchard-Cote, A. & Campbell, T. (2022). Parallel tempering with a
variational reference. NeurIPS 35.
"""

import math
import time
from dataclasses import dataclass

import numpy as np

from bnmfzoo._base.rng import as_generator
from bnmfzoo.diagnostics._modes.masses import mass_interval
from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2, cluster_members, matched_angles
from bnmfzoo.inference._mass_budget import (
    BudgetedSweep,
    BudgetExhausted,
    nothing_established,
    with_budget,
)
from bnmfzoo.inference._mass_result import aligned_members as _aligned_members
from bnmfzoo.inference._mass_result import merge_smc_modes, unsupported_rank
from bnmfzoo.inference._mass_result import per_mode_result as _per_mode_result
from bnmfzoo.inference._mass_result import run_shares as _shares
from bnmfzoo.inference._mass_result import unreached_modes as _unreached_modes
from bnmfzoo.inference._mass_verdict import advice as _advice
from bnmfzoo.inference._mass_verdict import agreement_factor, symmetric_note, welch_dof
from bnmfzoo.inference._mass_verdict import failed_check_unknown_all as _failed_check_unknown_all
from bnmfzoo.inference.tempering import log_z_summary, smc

__all__ = ["smc_mode_masses", "family_of_model", "ais_schedule"]

#: modes closer than this multiple of the within-mode angle (:func:`_within_mode_angle`) merge
NOISE_FACTOR = 2.0
#: particles used to measure the within-mode angle
N_NOISE = 100
#: sweeps between the two states whose angle measures a mode's width for the count and
#: Gaussian families (at least ``n_moves``; :attr:`_Family.width_sweeps`): their sweeps move
#: the factors of a broad mode slowly, so the angle of a few sweeps under-reads its spread.
#: NB, breast SBS96, K = 4: states of one chain lie a median 14-18 degrees from its last state
#: over 300 sweeps, 2 sweeps apart a few degrees, so a 15-degree cut split the SMC's particles
#: into 27 "modes". Poisson, a 30 x 50 rank-4 matrix at K = 5 (one component too many, a split
#: ridge): 13 degrees at 2 sweeps, 35 at 50, 42 at 200, and the 2-sweep cut split one ridge
#: into 164 "modes"; at K = 4 the angle levels off (8, 14, 14 degrees) and the cut leaves the
#: one mode alone either way. Exponential Gaussian, a 15 x 12 rank-2 matrix at K = 3: 19, 23,
#: 30, 34 degrees at 5, 10, 50, 200 sweeps, and the 10-sweep cut (the command's) cut one
#: ridge into 2-6 clusters that the check then found to be one mode; laurberg's two modes at
#: the README's noise stay two at every reading (5 degrees, the 15-degree floor)
WIDTH_SWEEPS = 50
#: modes at or above this mass must agree between the estimators for ``established``
MIN_CHECKED = 0.01


@dataclass
class _Family:
    """A model's tempered sweep, its exact prior draw and how to read a state's factors."""

    name: str
    tempered: object
    draw_prior: object
    factors: object  # state -> (A (D, K), W (K, N))
    #: sweeps over which a mode's width is read (at least ``n_moves``; :data:`WIDTH_SWEEPS`)
    width_sweeps: int = 0
    #: the per-mode estimators' path holds every label copy (Beta-Dir:
    #: :mod:`bnmfzoo.inference.binary._reference_symmetric`; others: ``tempering._label_orbit``)
    symmetric: bool = False


def _gaussian(model, inner_sweeps):
    from bnmfzoo.inference.gaussian.gibbs._core import nmf_state, observed_entries
    from bnmfzoo.inference.gaussian.modes._tempering import TemperedGibbs
    from bnmfzoo.models._spec import get_spec

    spec = get_spec(model, families="exponential_gaussian", method="smc_mode_masses")
    h = spec.hyper
    if h.ard or h.lambda_A is None or h.lambda_W is None:
        raise ValueError("smc_mode_masses needs exponential priors with fixed rates (no ARD) "
                         "for the Gaussian model")
    obs = observed_entries(spec.X, spec.mask)
    D, N = obs.shape
    R = spec.rank
    fam = TemperedGibbs(obs, h, rank=R)

    def draw_prior(rng):
        A = rng.exponential(1.0 / h.lambda_A, size=(D, R))
        W = rng.exponential(1.0 / h.lambda_W, size=(R, N))
        tau = 1.0 if h.sigma is not None else rng.gamma(h.alpha_tau, 1.0 / h.beta_tau)
        return nmf_state(A, W, tau, None, obs)

    class _Repeat(type(fam)):
        def sweep(self, state, beta, rng):
            for _ in range(inner_sweeps):
                super().sweep(state, beta, rng)

    fam = _Repeat(obs, h, rank=R)
    return _Family("exponential_gaussian", fam, draw_prior, lambda s: (s.A, s.W),
                   width_sweeps=WIDTH_SWEEPS)


def _counts(model, inner_sweeps):
    from bnmfzoo.inference.counts._problem import prior_rates, problem_from_factorization
    from bnmfzoo.inference.counts.tempering._power import PowerCounts
    from bnmfzoo.inference.counts.tempering._power_nb import PowerNB
    from bnmfzoo.models import recognize

    problem = problem_from_factorization(recognize(model))
    if problem.family not in ("poisson", "negative_binomial"):
        raise ValueError(f"smc_mode_masses supports Poisson and NB count models, got "
                         f"{problem.family!r}")
    poisson = problem.family == "poisson"
    fam = PowerCounts(problem, inner_sweeps) if poisson else PowerNB(problem, inner_sweeps)

    def draw_prior(rng):
        rates = {n: np.asarray(rng.gamma(a, 1.0 / np.asarray(b, float), size=shape), float)
                 for n, (a, b, shape) in problem.rates.items()}
        bA, bW = prior_rates(problem, rates)
        A = np.maximum(rng.gamma(problem.aA, 1.0 / bA), np.finfo(float).tiny)
        W = np.maximum(rng.gamma(problem.aW, 1.0 / bW), np.finfo(float).tiny)
        alpha = problem.alpha
        if problem.alpha_prior is not None:
            alpha = float(rng.gamma(problem.alpha_prior[0], 1.0 / problem.alpha_prior[1]))
        return {"A": A, "W": W, "rates": rates, "alpha": alpha}

    return _Family("poisson" if poisson else "negative_binomial", fam, draw_prior,
                   lambda s: (s["A"], s["W"]), width_sweeps=WIDTH_SWEEPS)


def _binary(model, inner_sweeps):
    from bnmfzoo.inference.binary._core import BetaDirChain
    from bnmfzoo.inference.binary._recognized import binary_spec
    from bnmfzoo.inference.binary._tempering import TemperedCollapsed
    from bnmfzoo.inference.binary.collapsed_gibbs import spec_entries

    spec = binary_spec(model, families=("beta_dir",), method="smc_mode_masses")
    rows, cols, v, (D, N) = spec_entries(spec)
    h = spec.hyper

    class _Repeat(TemperedCollapsed):
        def sweep(self, state, beta, rng):
            for _ in range(inner_sweeps):
                state.sweep(rng, beta)

    def draw_prior(rng):  # p0: uniform labels (the collapsed joint is what is tempered)
        return BetaDirChain(rows, cols, v, D, N, h.gamma, h.alpha, h.beta, rng)

    def factors(s):  # posterior means of the factors given the labels
        A = (s.g + s.L) / (s.g + s.L).sum(1, keepdims=True)
        W = ((s.a + s.C1) / (s.a + s.b + s.C1 + s.C0)).T
        return A, W

    return _Family("beta_dir", _Repeat(dimension=int(v.shape[0])), draw_prior, factors)


def family_of_model(model, inner_sweeps=1):
    """The tempered sweep, prior draw and factor reader of a recognized ``pm.Model``.

    Exponential-Gaussian (fixed rates), Poisson (power path) and NB (its Gamma-mixed power path,
    :mod:`bnmfzoo.inference.counts.tempering._power_nb`), Beta-Dir.
    """
    import pymc as pm

    from bnmfzoo.models import recognize
    from bnmfzoo.models._spec import find_spec

    if not isinstance(model, pm.Model):
        raise TypeError(f"model must be a pymc.Model, got {type(model).__name__}")
    spec = find_spec(model)
    fam = spec.family if spec is not None else getattr(recognize(model), "family", None)
    if fam == "exponential_gaussian":
        return _gaussian(model, inner_sweeps)
    if fam in ("poisson", "negative_binomial"):
        return _counts(model, inner_sweeps)
    if fam == "beta_dir":
        return _binary(model, inner_sweeps)
    raise ValueError(f"smc_mode_masses supports exponential_gaussian, poisson, "
                     f"negative_binomial and beta_dir models, got {fam!r}")


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _within_mode_angle(family, states, weights, n_moves, rng):
    """Median max matched angle between a particle and itself after ``n_moves`` more sweeps.

    The particles' spread inside a mode: two states of one chain ``n_moves`` sweeps apart are
    in the same mode in the typical case, so this is the angle below which two particles are
    not told apart (the rule of :func:`bnmfzoo.diagnostics.modes` for MCMC segments).
    Measured on up to ``N_NOISE`` particles drawn by weight, at ``beta = 1``.
    """
    pick = rng.choice(len(states), size=min(N_NOISE, len(states)), p=weights / weights.sum())
    d = []
    for i in pick:
        s = family.tempered.copy(states[i])
        before = np.asarray(family.factors(s)[0], float).copy()
        for _ in range(n_moves):
            family.tempered.sweep(s, 1.0, rng)
        after = np.asarray(family.factors(s)[0], float)
        d.append(matched_angles(_unit_l2(before[None]), _unit_l2(after[None]))[0][0, 0])
    return float(np.median(d))


def ais_schedule(betas, refine):
    """An AIS schedule: each interval of an SMC run's adapted ``betas`` cut into ``refine``.

    The SMC's steps carry equal conditional-ESS losses, so refining them gives AIS steps of
    about equal weight variance (``~ -2 log(cess) / refine^2`` each, so the log-weight
    variance of a run falls like ``1 / refine``).

    Examples
    --------
    >>> ais_schedule([0.0, 0.5, 1.0], 2)
    array([0.25, 0.5 , 0.75, 1.  ])
    """
    b = np.asarray(betas, float)
    x = np.linspace(0.0, b.size - 1.0, (b.size - 1) * int(refine) + 1)
    out = np.interp(x, np.arange(b.size), b)[1:]
    out[-1] = 1.0
    return out


def _ais_check(family, refs, cut, n_runs, schedule, rng):
    """AIS masses of the SMC modes: ``(mass, se, max weight share, unmatched share, run)``."""
    sched = schedule
    run = smc(family.tempered, family.draw_prior, n_runs, rng, resample_below=0.0,
              n_moves=1, schedule=sched)  # no resampling on a fixed schedule: AIS
    w = run.weights
    U = np.stack([family.factors(s)[0] for s in run.states])
    dist, _ = matched_angles(_unit_l2(U), refs)
    label = dist.argmin(1)
    far = dist[np.arange(label.size), label] > cut
    K = refs.shape[0]
    mass = np.bincount(label[~far], weights=w[~far], minlength=K)
    # delta-method standard error of a ratio of means (weights sum to 1)
    se = np.array([math.sqrt(float(np.sum((w * ((label == k) & ~far) - mass[k] * w) ** 2)))
                   for k in range(K)])
    return mass, se, float(w.max()), float(w[far].sum()), run


def _steady_sweep_seconds(family, rng, n_timed=3):
    """CPU seconds of one tempered sweep at ``beta = 0.5`` once warm (median of ``n_timed``).

    The first sweep of a new family compiles and allocates: on laurberg (6 x 6, rank 3) it
    took 2 ms against 0.06 ms warm, so timing it alone refused the default command's 900 s
    for a step it predicted at 938 s. That first sweep draws from ``rng`` (as before, so a
    seed's results do not change); the timed ones from a throwaway generator.
    """
    s = family.draw_prior(rng)
    family.tempered.sweep(s, 0.5, rng)
    spare, times = np.random.default_rng(0), []
    for _ in range(n_timed):
        t1 = time.process_time()
        family.tempered.sweep(s, 0.5, spare)
        times.append(time.process_time() - t1)
    return max(float(np.median(times)), 1e-6)


@with_budget
def smc_mode_masses(model, *, n_runs=4, n_particles=500, n_moves=5, cess=0.9,
                    inner_sweeps=1, check="auto", check_runs=32, check_refine=50,
                    bridge_chains=4, bridge_draws=300, bridge_thin=2, prior_chains=8,
                    prior_sweeps=300, reference_runs=4, reference_particles=100, pt_runs=4,
                    pt_scans=None, pt_sweeps=1, pt_local=None, pt_leap=None, pt_trips=None,
                    pt_copula=False, threshold=15.0, budget_s=None, random_seed=None):
    """Posterior masses of the modes of an NMF model, with an independent check.

    See the module docstring for the two estimators and when a result is established.

    Parameters
    ----------
    model : pymc.Model
        :func:`bnmfzoo.models.exponential_gaussian` (fixed rates),
        :func:`bnmfzoo.models.poisson`, :func:`bnmfzoo.models.negative_binomial` or
        :func:`bnmfzoo.models.beta_dir` (or a user model recognized as one of them).
    n_runs : int
        Independent SMC runs (>= 2: the error comes from their spread).
    n_particles : int
        Particles per run. The default, 500, reached a 0.4 % mode in all 24 seeds measured on
        laurberg (noise seed 0; 20 of 20 evaluation intervals covered the exact mass), where 250
        missed it in 3 of 20; fewer particles miss light modes (their mass is then unknown,
        not zero).
    n_moves : int
        Exact tempered sweeps per particle after each reweighting.
    cess : float
        Target conditional ESS fraction per step.
    inner_sweeps : int
        Sweeps of the family per move.
    check : {"auto", "reference", "reference_pt", "bridge", "ais", None}
        ``"reference_pt"``: masses by per-mode SMC and per-mode parallel tempering along the
        fitted reference path, established by their agreement (module docstring, 4.), the SMC
        from the prior finding modes only. Otherwise the independent estimator of the SMC
        from the prior: per-mode SMC from a fitted product-form reference
        (:func:`bnmfzoo.inference.reference_path.reference_log_z`; Poisson models with constant
        prior rates, exponential-Gaussian and Beta-Dir models), per-mode bridge sampling from
        plain chains (:func:`bnmfzoo.inference.mode_bridge.bridge_masses`; it anneals nothing),
        AIS from the prior along the SMC's path, or none (then nothing is established).
        ``"auto"`` (the default): the reference path where the family has one, else the
        bridge.
    check_runs : int
        AIS runs of the ``"ais"`` check (0: no check, whatever ``check`` says).
    check_refine : int
        AIS steps (one sweep each) per step of the first SMC run's schedule
        (:func:`ais_schedule`): the check's log-weight variance falls like ``1 /
        check_refine``. One AIS run costs ``check_refine / n_moves`` times one particle.
    bridge_chains, bridge_draws, bridge_thin : int
        The bridge check's plain chains per mode (started from the mode's heaviest particles),
        kept draws per chain and sweeps between them (plus 50 discarded sweeps per chain).
    reference_runs, reference_particles : int
        The reference check's independent SMC runs per mode and their particles (its plain
        chains for the fit: ``bridge_chains`` x ``bridge_draws``, ``bridge_thin`` apart).
    pt_runs, pt_scans, pt_sweeps : int
        ``"reference_pt"``: independent parallel-tempering runs per mode, their scans kept on
        the frozen ladder (after tuning and burn-in) and sweeps per replica per scan.
    pt_local, pt_leap : str, int
        ``"reference_pt"``, Poisson models: the local moves of both per-mode estimators (each
        reference-path SMC step's move and each replica's scan): ``"sweep"``, or
        ``"sweep+shear+rescale+hmc"``, which adds the group moves and, at the top rungs, HMC of
        ``pt_leap`` leapfrog steps (:class:`bnmfzoo.inference.counts.tempering._local.RungMoves`).
        ``None`` (``pt_scans`` too): the family's defaults,
        :func:`bnmfzoo.inference.reference_path.local_defaults` (Poisson: the moves, 20
        leapfrog steps, 2,500 scans; other families: the sweep and 500 scans).
    pt_copula : bool
        ``"reference_pt"``, count models: the per-mode tempering also pilots a reference that
        joins the fitted Gamma marginals by a Gaussian copula, moved by HMC alone, and runs
        from it where its runs' predicted CPU is lower (its barrier and its timed move)
        (:func:`bnmfzoo.inference.reference_tempering.reference_pt_log_z`). On Poisson models
        the per-mode SMC then runs along the copula's path too (``copula`` of
        :func:`bnmfzoo.inference.reference_path.reference_log_z`): along the product's path
        its runs agreed with each other but were low by several of their standard errors on a
        96 x 214 catalogue. The two estimators stay of different kinds (SMC with resampling
        against tempering with round trips) and share only the fitted reference, whose
        normalization the quadrature tests check.
    pt_trips : int, optional
        ``"reference_pt"``: end each tempering run once it made this many round trips or used
        its share of the budget left (``pt_scans`` is then the cap;
        :func:`bnmfzoo.inference.reference_tempering.reference_pt_log_z`).
    prior_chains, prior_sweeps : int
        Plain chains from exact prior draws and their sweeps, run with the bridge and
        reference checks: a
        chain that ends in a mode no particle reached adds that mode (SMC mass unknown) and
        the result is not established.
    threshold : float
        Smallest max matched angle (degrees) between two modes.
    budget_s : float, optional
        CPU seconds allowed for the whole call, a cap (:mod:`bnmfzoo.inference._mass_budget`:
        checked at every sweep of the family and of the reference path, so the overrun is one
        sweep): a ValueError before the work starts when one SMC step of all runs would not
        fit; when it runs out during the SMC from the prior, no mode is listed (every mass
        unknown) and ``statement`` says what to run; during a check, the masses found so far
        are returned unchecked (``mass_check`` NaN), not established, with the reason.
    random_seed : int or numpy.random.Generator, optional

    Returns
    -------
    dict
        ``modes``: one dict per mode, heaviest first, with ``mass``, ``se``, ``low``,
        ``high`` (95 % interval), ``estimator`` (``"smc"``), ``mass_check``, ``check_se``
        (AIS), ``n_members``, ``A`` and ``W`` (the mode's particles, aligned to its
        representative: ``(n, D, K)`` and ``(n, K, N)``), ``member_weight`` (their weights,
        summing to the mass over runs); ``established``; ``statement``; ``log_z`` and
        ``log_z_se`` (``log int p0 exp(l)``); ``cpu_s``; ``family``; ``settings``. With
        ``check="reference_pt"`` every mode found is listed (``estimator``
        ``"reference_path"``, ``check_estimator`` ``"reference_tempering"``, the SMC from the
        prior's share as ``smc_prior_mass`` and ``smc_prior_se``, NaN where no particle
        reached the mode) and ``per_mode`` holds both estimators' per-mode results.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import poisson
    >>> X = np.random.default_rng(0).poisson(3.0, size=(6, 5))
    >>> out = smc_mode_masses(poisson(X, 2), n_runs=2, n_particles=20, n_moves=2,
    ...                       check_runs=8, check_refine=2, random_seed=0)
    >>> m = out["modes"][0]
    >>> m["estimator"], m["check_estimator"], m["A"].shape[1:], m["low"] <= m["mass"] <= m["high"]
    ('smc', 'reference_path', (6, 2), True)
    """
    t0 = time.process_time()
    n_runs = _check_int("n_runs", n_runs, 2)
    n_particles = _check_int("n_particles", n_particles, 2)
    n_moves = _check_int("n_moves", n_moves, 1)
    check_runs = _check_int("check_runs", check_runs, 0)
    if check not in ("auto", "bridge", "reference", "reference_pt", "ais", None):
        raise ValueError(f"check must be 'auto', 'reference', 'reference_pt', 'bridge', 'ais' "
                         f"or None, got {check!r}")
    if check_runs == 1:
        raise ValueError("check_runs must be 0 or an integer >= 2, got 1")
    if budget_s is not None and not (isinstance(budget_s, (int, float)) and budget_s > 0):
        raise ValueError(f"budget_s must be a positive number of CPU seconds, got {budget_s!r}")
    family = family_of_model(model, inner_sweeps)
    from bnmfzoo.inference.reference_path import local_defaults

    dl, dn, ds = local_defaults(family.name)  # the family's local moves where not given
    pt_local = dl if pt_local is None else pt_local
    pt_leap, pt_scans = dn if pt_leap is None else pt_leap, ds if pt_scans is None else pt_scans
    if check == "reference_pt":
        pt_runs, pt_scans = _check_int("pt_runs", pt_runs, 2), _check_int("pt_scans", pt_scans, 2)
        pt_sweeps = _check_int("pt_sweeps", pt_sweeps, 1)
        pt_leap = _check_int("pt_leap", pt_leap, 1)
        pt_trips = None if pt_trips is None else _check_int("pt_trips", pt_trips, 1)
    if check == "auto":
        from bnmfzoo.inference.reference_path import reference_adapter

        try:
            reference_adapter(family)
            check = "reference"
        except ValueError:
            check = "bridge"
    rng = as_generator(random_seed)
    if budget_s is not None:
        per_sweep = _steady_sweep_seconds(family, rng)
        one_step = per_sweep * n_moves * n_particles * n_runs
        if one_step > budget_s - (time.process_time() - t0):
            raise ValueError(f"budget_s = {budget_s:g} CPU s is too small: one tempering step of "
                             f"{n_runs} runs x {n_particles} particles x {n_moves} sweeps takes "
                             f"~{one_step:.1f} s and a run needs tens of steps; raise budget_s "
                             "or lower n_particles")
        family.tempered = BudgetedSweep(family.tempered)  # checked at every sweep from here
    runs, seeds = [], np.random.SeedSequence(int(rng.integers(2**63))).spawn(n_runs + 1)
    try:
        for sd in seeds[:n_runs]:
            runs.append(smc(family.tempered, family.draw_prior, n_particles,
                            np.random.default_rng(sd), cess=cess, n_moves=n_moves))
        weights = np.concatenate([r.weights for r in runs])
        noise = _within_mode_angle(family, [s for r in runs for s in r.states], weights,
                                   max(n_moves, family.width_sweeps),
                                   np.random.default_rng(seeds[-1].spawn(1)[0]))
    except BudgetExhausted as err:
        return nothing_established(err, family, "the SMC from the prior", len(runs), n_runs, t0,
                                   f"Raise budget_s (the SMC from the prior alone needs more "
                                   f"than {err.used_s:.0f} CPU s) or lower n_particles "
                                   f"({n_particles}) or n_moves ({n_moves})")
    factors = [family.factors(s) for r in runs for s in r.states]
    A = np.stack([f[0] for f in factors])
    W = np.stack([f[1] for f in factors])
    run_of = np.repeat(np.arange(n_runs), n_particles)
    cut = max(float(threshold), NOISE_FACTOR * noise)
    cl = cluster_members(A, weights=weights / n_runs, threshold=cut)
    label, K = cl["label"], cl["reference"].shape[0]
    shares = _shares(label, weights, run_of, n_runs, K)
    mass = shares.mean(0)
    se = shares.std(0, ddof=1) / math.sqrt(n_runs)
    log_z, log_z_se, log_z_sd = log_z_summary(runs)
    refused = unsupported_rank(K, label.size, A.shape[2], family, log_z, log_z_se, t0)
    if refused is not None:  # before the check, whose work grows with the modes
        return refused
    A_al, W_al = _aligned_members(A, W, cl["perm"])
    reasons = []
    smc_cpu = time.process_time() - t0
    extra, bridge_out = None, None

    def reference_kw():  # the settings both reference-path checks take, checked when used
        return dict(n_runs=_check_int("reference_runs", reference_runs, 2),
                    n_particles=_check_int("reference_particles", reference_particles, 2),
                    n_moves=n_moves, cess=cess,
                    n_chains=_check_int("bridge_chains", bridge_chains, 1),
                    n_draws=_check_int("bridge_draws", bridge_draws, 8),
                    thin=_check_int("bridge_thin", bridge_thin, 1),
                    prior_chains=_check_int("prior_chains", prior_chains, 0),
                    prior_sweeps=_check_int("prior_sweeps", prior_sweeps, 1))

    try:
        if check == "bridge" and check_runs:
            from bnmfzoo.inference.mode_bridge import bridge_check

            chk, chk_se, extra, br_reasons, bridge_out = bridge_check(
                model, family, [s for r in runs for s in r.states], label, weights, cl, log_z,
                log_z_se, np.random.default_rng(seeds[-1]),
                n_chains=_check_int("bridge_chains", bridge_chains, 2),
                n_draws=_check_int("bridge_draws", bridge_draws, 8),
                thin=_check_int("bridge_thin", bridge_thin, 1),
                prior_chains=_check_int("prior_chains", prior_chains, 0),
                prior_sweeps=_check_int("prior_sweeps", prior_sweeps, 1))
            reasons.extend(br_reasons)
        elif check == "reference" and check_runs:
            from bnmfzoo.inference.reference_check import reference_check_retried

            chk, chk_se, extra, br_reasons, bridge_out = reference_check_retried(
                family, ([s for r in runs for s in r.states], label, weights, cl, log_z,
                         log_z_se), np.random.default_rng(seeds[-1]),
                np.random.default_rng(seeds[-1].spawn(1)[0]), reference_kw())
            reasons.extend(br_reasons)
        elif check == "reference_pt" and check_runs:
            from bnmfzoo.inference.reference_check import symmetric_check, symmetric_retry
            from bnmfzoo.inference.reference_tempering import per_mode_check

            pm_kw = dict(**reference_kw(), pt_runs=pt_runs, pt_scans=pt_scans,
                         pt_sweeps=pt_sweeps, pt_local=pt_local, pt_leap=pt_leap,
                         pt_trips=pt_trips, pt_copula=bool(pt_copula), prior_dof=n_runs - 1)
            states = [s for r in runs for s in r.states]
            pm = per_mode_check(family, states, label, weights, cl, log_z, log_z_se,
                                np.random.default_rng(seeds[-1]), **pm_kw)
            if symmetric_retry(family, pm["reasons"], cl["reference"].shape[2]):
                pm = symmetric_check(family, pm, (states, label, weights, cl, log_z, log_z_se),
                                      np.random.default_rng(seeds[-1].spawn(1)[0]), pm_kw)
            if pm.get("merged"):
                label, mass, se, A_al, W_al = merge_smc_modes(
                    pm["merged"], label, A, W, cl["perm"], cl["reference"], weights, run_of,
                    n_runs)
            return _per_mode_result(pm, runs, mass, se, label, A_al, W_al, weights, log_z, log_z_se,
                                    log_z_sd, family, budget_s, smc_cpu, t0,
                                    (reference_runs, reference_particles))
        elif check == "ais" and check_runs:
            refine = _check_int("check_refine", check_refine, 1)
            chk, chk_se, max_share, far, _ = _ais_check(family, cl["reference"], cl["cut"],
                                                        check_runs,
                                                        ais_schedule(runs[0].betas, refine),
                                                        np.random.default_rng(seeds[-1]))
            if max_share > 0.5:
                reasons.append(f"one AIS run holds {max_share:.0%} of the check's weight")
            if far > 0.05:
                reasons.append(f"{far:.0%} of the AIS weight lies in modes the SMC did not find")
        else:
            chk = chk_se = np.full(K, math.nan)
            reasons.append("no check was run (check=None or check_runs=0)")
    except BudgetExhausted as err:  # what the SMC from the prior found, unchecked
        chk = chk_se = np.full(K, math.nan)
        extra, bridge_out = None, None
        reasons.append(f"{err} during the {check} check, after "
                       f"{time.process_time() - t0 - smc_cpu:.0f} CPU s of it (the SMC from "
                       f"the prior took {smc_cpu:.0f} s): raise budget_s")
        check = "none: the budget ran out"
    min_ess = min(r.final_ess for r in runs)
    if min_ess < 0.1:
        reasons.append(f"a run ended with an ESS of {min_ess:.1%} of its particles")
    if not log_z_sd < 2.0:
        reasons.append(f"the runs' log Z disagree (sd {log_z_sd:.2f} nats)")
    modes, chk_dof = [], reference_runs - 1 if check == "reference" else math.inf
    chk, chk_se, extra = _failed_check_unknown_all(chk, chk_se, extra)
    for k in range(K):
        lo, hi = mass_interval(mass[k], se[k], n_runs * n_particles, n_runs - 1)
        f = agreement_factor(welch_dof(se[k], n_runs - 1, chk_se[k], chk_dof))
        agree = abs(mass[k] - chk[k]) <= f * math.hypot(se[k], chk_se[k]) + 1e-9
        if max(mass[k], chk[k]) >= MIN_CHECKED and np.isfinite(chk[k]) and not agree:
            reasons.append(f"mode {k}: SMC {mass[k]:.3f} +- {se[k]:.3f} vs {check} "
                           f"{chk[k]:.3f} +- {chk_se[k]:.3f}")
        m = label == k
        modes.append({"mass": float(mass[k]), "se": float(se[k]), "low": lo, "high": hi,
                      "estimator": "smc", "mass_check": float(chk[k]),
                      "check_se": float(chk_se[k]),
                      "check_estimator": {"bridge": "bridge", "reference": "reference_path",
                                          "ais": "ais_prior"}.get(check, check or "none"),
                      "n_members": int(m.sum()), "A": A_al[m], "W": W_al[m],
                      "member_weight": weights[m] / n_runs})
    more, why, light = _unreached_modes(extra or [], bridge_out, K,
                                        (A_al.shape[1], A_al.shape[2], W_al.shape[2]), check)
    modes += more  # modes only the plain chains found
    reasons += why
    cpu = time.process_time() - t0
    if budget_s is not None and smc_cpu > budget_s:
        reasons.append(f"the SMC alone used {smc_cpu:.0f} CPU s of a {budget_s:g} s budget")
    established = not reasons
    unknown = ("Modes no particle reached are not listed: their mass is unknown, not zero; "
               "masses are shares among the modes found.")
    if established:
        statement = (f"{K} mode(s); SMC and {check} agree for every mode holding >= "
                     f"{MIN_CHECKED:.0%}. " + unknown)
    else:
        statement = ("Masses NOT established: " + "; ".join(reasons) + ". "
                     + _advice(reasons, check) + " " + unknown)
    if bridge_out and bridge_out.get("product_reasons"):
        light = [symmetric_note(bridge_out["product_reasons"]), *light]
    if light:
        statement += " Note: " + "; ".join(light) + "."
    return {"modes": modes, "established": established, "statement": statement,
            "estimator": "smc", "log_z": log_z, "log_z_se": log_z_se, "cpu_s": cpu,
            "family": family.name, "final_ess": min_ess,
            "bridge": bridge_out if check == "bridge" else None,
            "reference": bridge_out if check == "reference" else None,
            "settings": {"n_runs": n_runs, "n_particles": n_particles, "n_moves": n_moves,
                         "cess": cess, "check_runs": check_runs,
                         "n_temperatures": [int(r.betas.size) for r in runs]}}
