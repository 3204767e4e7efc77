"""The SBC problems of the test suite, shared by the tests and the false-failure measurement.

``CASES`` maps a case name to a function ``run(seed, n_sims) -> SBCResult``: exactly the
statistic a test computes. ``benchmarks/calibration/sbc_false_failure.py`` runs each case over
many seeds to measure how often a correct sampler fails the test (stated in the tests).

Every MCMC case runs its chain after burn-in until its effective sample size (smallest bulk/tail
ESS over the tested scalars) reaches ``ess_target`` (``run_to_ess``: the length doubles from 200
draws), hands ``sbc`` the whole chain, and ``sbc(thin="ess")`` thins it by ``ceil(n / ESS)``.
The autocorrelation times ``n / ESS`` differ by two orders of magnitude between simulated data
sets (NMTF with ARD, 10 chains of 4000 sweeps: median 22, quartiles 5-68, max 418), so a fixed
chain length cannot fit them all.
"""

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
from scipy.signal import lfilter

from bnmfzoo.diagnostics import sbc
from bnmfzoo.diagnostics.calibration import run_to_ess
from bnmfzoo.inference.binary._core import BetaDirChain, DirDirChain
from bnmfzoo.inference.binary._tempering import TemperedCollapsed
from bnmfzoo.inference.gaussian.gibbs import _core as gc
from bnmfzoo.inference.tempering import ReplicaSet, exchange_step, swap_pass
from bnmfzoo.models._spec import GaussianHyper

D, N = 4, 3
MASK = np.ones((D, N), dtype=bool)
MASK[0, 1] = False  # one held-out entry: checks that it never enters the likelihood
# 5 of 12 entries missing (every row and column keeps one): the "nmf-missing" case, whose tau
# posterior shape alpha_tau + 7 / 2 differs from alpha_tau + 12 / 2 enough for SBC to see a tau
# update that counts the missing entries (issue #36; one missing entry of 12 does not)
MASK_MISSING = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [0, 0, 1]], dtype=bool)

# weak-signal priors (signal ~ noise) so chains mix in a few sweeps. alpha0 = beta0 = 5 keeps the
# ARD rates near 1: with looser rate priors the chain drifts slowly along the scale ridge
# (F c, S / c, lambda_F / c)
NMF_HYPER = GaussianHyper(lambda_A=1.0, lambda_W=1.0, alpha_tau=2.0, beta_tau=2.0, sigma=None,
                 alpha0=5.0, beta0=5.0)
MIN_SWEEPS, MAX_SWEEPS = 200, 25_600  # chain lengths after burn-in: 200 * 2^k

NMTF_HYPER = GaussianHyper(lambda_F=1.0, lambda_S=1.0, lambda_G=1.0, alpha_tau=2.0, beta_tau=2.0,
                  sigma=None, alpha0=5.0, beta0=5.0)


def _nmf_prior(rng, hyper, R=2):
    lam = None
    if hyper.ard:
        lam = rng.gamma(hyper.alpha0, 1 / hyper.beta0, size=R)
        A = rng.exponential(1 / lam[None, :], size=(D, R))
        W = rng.exponential(1 / lam[:, None], size=(R, N))
    else:
        A = rng.exponential(1 / hyper.lambda_A, size=(D, R))
        W = rng.exponential(1 / hyper.lambda_W, size=(R, N))
    tau = rng.gamma(hyper.alpha_tau, 1 / hyper.beta_tau)
    return {"A": A, "W": W, "tau": tau, "lambda_": lam}


def _nmtf_prior(rng, hyper, K=2, L=2):
    lF = lG = None
    if hyper.ard:
        lF = rng.gamma(hyper.alpha0, 1 / hyper.beta0, size=K)
        lG = rng.gamma(hyper.alpha0, 1 / hyper.beta0, size=L)
        F = rng.exponential(1 / lF[None, :], size=(D, K))
        G = rng.exponential(1 / lG[None, :], size=(N, L))
    else:
        F = rng.exponential(1 / hyper.lambda_F, size=(D, K))
        G = rng.exponential(1 / hyper.lambda_G, size=(N, L))
    S = rng.exponential(1 / hyper.lambda_S, size=(K, L))
    tau = rng.gamma(hyper.alpha_tau, 1 / hyper.beta_tau)
    return {"F": F, "S": S, "G": G, "tau": tau, "lambda_F": lF, "lambda_G": lG}


def _nmf_funcs(p):
    out = {"AW": p["A"] @ p["W"], "tau": np.array(p["tau"])}
    if p["lambda_"] is None:
        # factor entries sorted over the factors (each row of A, each column of W): invariant
        # to the labelling. Raw entries need the chain to switch labels, which it stops doing
        # on strong-signal data sets while its within-mode ESS looks fine: raw A, W failed 3 of
        # 10 seeds (Gram path; residual path 0 of 10), on A entries in 2 of them
        out.update(A_sorted=np.sort(p["A"], axis=1), W_sorted=np.sort(p["W"], axis=0))
    else:
        # with ARD the factor scales are heavy-tailed and the chain drifts slowly along the
        # scale ridge (A D^-1, D W): test label- and scale-invariant functions only
        out["lambda_sorted"] = np.sort(p["lambda_"])
    return out


def _nmtf_funcs(p):
    out = {"FSG": p["F"] @ p["S"] @ p["G"].T, "tau": np.array(p["tau"])}
    if p["lambda_F"] is not None:
        out["lambda_F_sorted"] = np.sort(p["lambda_F"])
        out["lambda_G_sorted"] = np.sort(p["lambda_G"])
    return out


def make_sbc(kind, *, ard, wrong=False, burn=100, ess_target=30, kernel="auto", mask=None,
             beta=None):
    """Return ``(simulate, infer)`` for ``kind`` in {"nmf", "nmtf"}.

    ``infer`` returns the tested functions at every sweep after ``burn`` (one chain from an
    independent prior draw, run until its ESS reaches ``ess_target``); thin it with
    ``sbc(thin="ess")``.
    ``kernel`` picks the NMF half-sweep path ("gram" or "residual"; "auto" takes "gram" on these
    tiny matrices). ``wrong=True`` is a deliberately wrong sampler: factor conditionals use
    tau / 2 (variance x2) while tau itself is updated correctly. ``mask``: observed entries
    (default ``MASK``). ``beta`` (NMF only): the tempered sweep of replica exchange at this
    inverse temperature, with a fixed noise sd 1: its target ``p(X | A, W)^beta p(A, W)`` is the
    posterior of data with noise variance ``1 / beta``, which is what ``simulate`` draws.
    """
    observed = MASK if mask is None else mask
    if kind == "nmf":
        hyper = replace(NMF_HYPER, ard=ard)
        prior, funcs, mean = _nmf_prior, _nmf_funcs, (lambda p: p["A"] @ p["W"])
        factor_blocks = {"A", "W", "lambda_"}
        if beta is not None:
            from bnmfzoo.inference.gaussian.modes._tempering import tempered_sweep

            hyper = replace(hyper, sigma=1.0)
            prior = lambda rng, h: {**_nmf_prior(rng, h), "tau": float(beta)}  # noqa: E731
            funcs = lambda p: {k: v for k, v in _nmf_funcs(p).items() if k != "tau"}  # noqa: E731

        def start(p, obs):
            return gc.nmf_state(p["A"], p["W"], p["tau"], p["lambda_"], obs)

        def sweep(st, obs, rng, update=gc.NMF_BLOCKS):
            if beta is not None:
                tempered_sweep(st, obs, hyper, rng, beta, update=update, kernel=kernel)
                return
            gc.nmf_sweep(st, obs, hyper, rng, update=update, kernel=kernel)

        def params(st):
            return {"A": st.A, "W": st.W, "tau": st.tau, "lambda_": st.lambda_}
    else:
        hyper = replace(NMTF_HYPER, ard=ard)
        prior, funcs = _nmtf_prior, _nmtf_funcs
        mean = lambda p: p["F"] @ p["S"] @ p["G"].T  # noqa: E731
        factor_blocks = {"F", "S", "G", "lambda_F", "lambda_G"}

        def start(p, obs):
            return gc.nmtf_state(p["F"], p["S"], p["G"], p["tau"], p["lambda_F"],
                                 p["lambda_G"], obs)

        def sweep(st, obs, rng, update=gc.NMTF_BLOCKS):
            gc.nmtf_sweep(st, obs, hyper, rng, update=update)

        def params(st):
            return {"F": st.F, "S": st.S, "G": st.G, "tau": st.tau,
                    "lambda_F": st.lambda_F, "lambda_G": st.lambda_G}

    def simulate(rng):
        p = prior(rng, hyper)
        X = mean(p) + rng.normal(size=(D, N)) / np.sqrt(p["tau"])
        X[~observed] = np.nan
        return funcs(p), X

    def infer(X, rng):
        obs = gc.observed_entries(X)
        st = start(prior(rng, hyper), obs)  # independent start, then burn-in

        def step():
            if wrong:
                tau = st.tau
                st.tau = tau / 2
                sweep(st, obs, rng, update=factor_blocks)
                st.tau = tau
                sweep(st, obs, rng, update={"tau"})
            else:
                sweep(st, obs, rng)
            return funcs(params(st))

        for _ in range(burn):
            step()
        return run_to_ess(step, ess_target=ess_target, min_draws=MIN_SWEEPS,
                          max_draws=MAX_SWEEPS)

    return simulate, infer


def _binary(family, *, burn=30, ess_target=30, betas=None, wrong_swap=False):
    """``(simulate, infer)`` of the collapsed Gibbs kernels (Beta-Dir or Dir-Dir), 4 x 3, K = 2.

    With a ladder ``betas`` the kernel is replica exchange of tempered collapsed chains
    (``exchange_step``: every replica swept at its temperature, then one alternating swap
    pass); the draws come from the ``beta = 1`` position. ``wrong_swap`` flips the sign of the
    swap ratio (a power check).
    """
    K = 2
    mask = np.ones((D, N), bool)
    mask[(3, 2) if family == "betadir" else (0, 1)] = False
    rows, cols = np.nonzero(mask)
    ones = np.full(K, 1.0)

    def simulate(rng):
        A = rng.dirichlet(ones, size=D)
        if family == "betadir":
            W = rng.beta(ones[:, None], ones[:, None], size=(K, N))
        else:
            W = rng.dirichlet(ones, size=N).T
        V = (rng.random((D, N)) < A @ W).astype(float)
        return {"A": A, "W": W, "AW": A @ W}, V

    def infer(V, rng):
        v = V[rows, cols].astype(np.int8)

        def new_chain():
            if family == "betadir":
                return BetaDirChain(rows, cols, v, D, N, ones, ones, ones, rng)
            return DirDirChain(rows, cols, v, D, N, ones, ones, rng)

        replicas = ReplicaSet.new([new_chain() for _ in range(1 if betas is None else len(betas))])
        chains = replicas.states  # swaps reorder this list in place
        parity = [0]

        def sweep():
            if betas is None:
                chains[0].sweep(rng)
            elif wrong_swap:
                for chain, beta in zip(chains, betas):
                    chain.sweep(rng, beta)
                swap_pass(chains, betas, [-c.log_joint() for c in chains], rng, parity[0])
                parity[0] ^= 1
            else:
                exchange_step(TemperedCollapsed(), replicas, betas, rng)  # alternates its parity

        for _ in range(burn):
            sweep()

        def step():
            sweep()
            A, W = chains[0].draw(rng)
            W = W if family == "betadir" else W.T
            return {"A": A, "W": W, "AW": A @ W}

        return run_to_ess(step, ess_target=ess_target, min_draws=MIN_SWEEPS,
                          max_draws=MAX_SWEEPS)

    return simulate, infer


#: ladder of the replica-exchange SBC cases of the collapsed kernels
BINARY_LADDER = np.array([1.0, 0.5, 0.2])


@dataclass(frozen=True)
class Case:
    """One SBC test: its problem, chain length after burn-in and number of simulations."""

    build: Callable  # build(ess_target) -> (simulate, infer)
    n_sims: int
    ess_target: float = 30
    thin: object = "ess"

    def run(self, seed, n_sims=None, *, ess_target=None, thin=None):
        """The test's statistic: ``sbc`` thinned by measured ESS (or ``thin``)."""
        simulate, infer = self.build(ess_target or self.ess_target)
        return sbc(simulate, infer, n_sims=n_sims or self.n_sims, thin=thin or self.thin,
                   random_seed=seed, progressbar=False)


def _gibbs(kind, ard, kernel="auto", wrong=False, mask=None, beta=None):
    return partial(lambda e, **kw: make_sbc(kind, ess_target=e, **kw), ard=ard, kernel=kernel,
                   wrong=wrong, mask=mask, beta=beta)


def _bin(family, betas=None, wrong_swap=False):
    return lambda e: _binary(family, ess_target=e, betas=betas, wrong_swap=wrong_swap)


def _conjugate(kind, rho=0.95, n_obs=5, n_chain=1000):
    """Normal mean, N(0, 1) prior, n_obs N(mu, 1) observations, two independent means.

    ``kind="exact"``: 99 independent posterior draws. ``"ar1"``: an AR(1) chain of ``n_chain``
    draws with the exact posterior as its stationary law (correlation ``rho``, autocorrelation
    time (1 + rho) / (1 - rho) = 39), started from an exact draw: every draw has the right
    marginal, only their dependence is wrong for SBC.
    """
    post_var = 1 / (n_obs + 1)

    def simulate(rng):
        mu = rng.normal(size=2)
        return {"mu": mu}, rng.normal(mu, 1.0, size=(n_obs, 2))

    def build(_ess_target=None):
        def infer(y, rng):
            m, s = y.sum(0) * post_var, np.sqrt(post_var)
            if kind == "exact":
                return {"mu": rng.normal(m, s, size=(99, 2))}
            e = rng.normal(size=(n_chain, 2)) * np.sqrt(1 - rho**2)
            e[0] = rng.normal(size=2)  # stationary start
            z = lfilter([1.0], [1.0, -rho], e, axis=0)
            return {"mu": m + s * z}

        return simulate, infer

    return build


CASES = {
    "conjugate-exact": Case(_conjugate("exact"), 300, thin=1),
    "conjugate-ar1": Case(_conjugate("ar1"), 200),
    "nmf-gram": Case(_gibbs("nmf", False, "gram"), 100),
    "nmf-ard-gram": Case(_gibbs("nmf", True, "gram"), 100),
    "nmf-residual": Case(_gibbs("nmf", False, "residual"), 100),
    "nmf-missing": Case(_gibbs("nmf", False, mask=MASK_MISSING), 100),
    "nmf-tempered": Case(_gibbs("nmf", False, beta=0.3), 100),
    "nmf-ard-residual": Case(_gibbs("nmf", True, "residual"), 100),
    "nmtf": Case(_gibbs("nmtf", False), 100),
    "nmtf-ard": Case(_gibbs("nmtf", True), 100),
    "betadir": Case(_bin("betadir"), 250),
    "dirdir": Case(_bin("dirdir"), 250),
    "re-betadir": Case(_bin("betadir", BINARY_LADDER), 250),
    "re-dirdir": Case(_bin("dirdir", BINARY_LADDER), 250),
}
WRONG_SWAP_BINARY = Case(_bin("betadir", BINARY_LADDER, wrong_swap=True), 250)
WRONG = Case(_gibbs("nmf", False, "gram", wrong=True), 100)


# ------------------------------------------------------------------------------------------------
# user-written Bernoulli models (tests/models/test_recognize_binary.py): recognition + collapsed
# step
# ------------------------------------------------------------------------------------------------

#: hyperparameters of the user-model SBC cases, (K,) = (2,), deliberately not all equal so a
#: misread (swapped alpha/beta, gamma taken for eta, a per-factor vector reversed) fails
USER_BINARY_HYPER = {
    "betadir": dict(gamma=np.array([0.7, 1.5]), alpha=np.array([1.3, 0.8]),
                    beta=np.array([0.9, 2.0])),
    "dirbeta": dict(eta=np.array([1.2, 0.6]), alpha=np.array([0.8, 1.6]),
                    beta=np.array([1.4, 0.7])),
    "dirdir": dict(gamma=np.array([0.8, 1.4]), eta=np.array([1.5, 0.7])),
}


def user_binary_model(family, V, mask, hyper=None):
    """The user's model in plain PyMC syntax (no bnmfzoo term): Bernoulli(p=(A @ W)[mask])."""
    import pymc as pm

    h = hyper or USER_BINARY_HYPER[family]
    D_, N_ = V.shape
    with pm.Model(coords={"row": range(D_), "col": range(N_), "factor": range(2)}) as model:
        if family == "dirbeta":
            A = pm.Beta("A", alpha=h["alpha"], beta=h["beta"], dims=("row", "factor"))
        else:
            A = pm.Dirichlet("A", a=h["gamma"], dims=("row", "factor"))
        if family == "betadir":
            W = pm.Beta("W", alpha=h["alpha"][:, None], beta=h["beta"][:, None],
                        dims=("factor", "col"))
        else:
            W = pm.Dirichlet("Wt", a=h["eta"], dims=("col", "factor")).T
        pm.Bernoulli("X_obs", p=(A @ W)[mask], observed=V[mask])
    return model


def _user_binary(family, *, burn=30, ess_target=30, swapped=False):
    """``(simulate, infer)``: the prior simulated in NumPy from the model as written; inference
    by the chain of the step ``pm.sample()`` picks for the recognized user model."""
    from bnmfzoo.inference import CollapsedGibbsBetaDir, CollapsedGibbsDirDir

    K = 2
    h = USER_BINARY_HYPER[family]
    mask = np.ones((D, N), bool)
    mask[(3, 2) if family != "dirdir" else (0, 1)] = False
    Step = CollapsedGibbsDirDir if family == "dirdir" else CollapsedGibbsBetaDir

    def simulate(rng):
        if family == "dirbeta":
            A = rng.beta(h["alpha"], h["beta"], size=(D, K))
        else:
            A = rng.dirichlet(h["gamma"], size=D)
        if family == "betadir":
            W = rng.beta(h["alpha"][:, None], h["beta"][:, None], size=(K, N))
        else:
            W = rng.dirichlet(h["eta"], size=N).T
        V = (rng.random((D, N)) < A @ W).astype(float)
        return {"A": A, "W": W, "AW": A @ W}, V

    def infer(V, rng):
        # the step pm.sample() picks, built on the recognized user model; its chain is driven
        # directly (the value-space glue around it is checked bit for bit against our
        # constructors' models in test_recognize_binary.py, and costs ms per step here)
        hyper = dict(h, alpha=h["beta"], beta=h["alpha"]) if swapped else h  # power check
        step = Step(model=user_binary_model(family, V, mask, hyper))
        chain = step._start_chain(rng)  # the step's default start (CVB0)

        def advance():
            chain.sweep(rng)
            A, W = step._free_draws(chain.draw(rng))  # the model's variables: A, W or Wt
            W = W.T if family != "betadir" else W
            return {"A": A, "W": W, "AW": A @ W}

        for _ in range(burn):
            advance()
        return run_to_ess(advance, ess_target=ess_target, min_draws=MIN_SWEEPS,
                          max_draws=MAX_SWEEPS)

    return simulate, infer


def _user_bin(family, swapped=False):
    return lambda e: _user_binary(family, ess_target=e, swapped=swapped)


CASES.update({
    "user-betadir": Case(_user_bin("betadir"), 100),
    "user-dirbeta": Case(_user_bin("dirbeta"), 100),
    "user-dirdir": Case(_user_bin("dirdir"), 100),
    "user-betadir-swapped": Case(_user_bin("betadir", swapped=True), 100),  # must fail
})


# ------------------------------------------------------------------------------------------------
# GibbsNMF's weighted sweep on user-written models (tests/models/test_recognize_weighted.py): Gamma
# factor
# priors, per-row/column noise precisions, Student-t noise (tests/_weighted_sbc.py)
# ------------------------------------------------------------------------------------------------


def _weighted(config):
    from _weighted_sbc import make_weighted_sbc

    return lambda e: make_weighted_sbc(config, ess_target=e)


CASES.update({f"weighted-{c}": Case(_weighted(c), 100)
              for c in ("gamma", "gamma_col_tau", "row_tau", "student", "student_ard")})
