"""SBC problems of GibbsNMF's weighted sweep: Gamma factor priors, per-row/column noise
precisions and Student-t noise, on tiny user-written ``pm.Model`` s.

Each configuration is written in PyMC syntax as a user would; :func:`recognize` reads it and
:func:`plan_from_factorization` turns it into the numeric plan ``GibbsNMF`` runs
(``weighted_nmf_sweep``). The prior and the data are simulated here independently, in NumPy,
from the model as written (Student-t noise as ``t_nu`` draws, not through the scale mixture the
sampler uses), so a misread parameter or a wrong conditional fails the SBC.

Chains run ``burn`` sweeps from an independent prior draw, then until the smallest bulk/tail ESS
of the tested quantities reaches ``ess_target`` (``run_to_ess``), thinned by ``ceil(n / ESS)``
(``sbc(thin="ess")``), as the other SBC tests do. The factors are exchangeable a priori in every
configuration (same prior on each column of ``A``, or of each row of ``W`` ...), so only
label-invariant quantities are tested: ``A W``, the noise precisions, each row of ``A`` and each
column of ``W`` sorted over the factors.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from _chain_draws import chain_draws

from bnmfzoo.inference.gaussian.gibbs import _core as gc
from bnmfzoo.inference.gaussian.priors._gibbs_prior import plan_from_factorization
from bnmfzoo.inference.gaussian.priors._weighted_core import WeightedPlan, weighted_nmf_sweep
from bnmfzoo.models import recognize

D, N, R = 4, 3, 2
MASK = np.ones((D, N), dtype=bool)
MASK[0, 1] = MASK[2, 1] = False  # column 1 has 2 of 4 entries observed; row 0 and 2: 2 of 3
#: per-row shape of W's Gamma prior (broadcast over columns): not all equal, so a misread
#: broadcast fails
W_ALPHA = np.array([[1.5], [3.0]])
NU = 3.0

WEIGHTED_CONFIGS = ("gamma", "gamma_col_tau", "row_tau", "student", "student_ard")


def weighted_model(config, X=None):
    """The configuration as a user writes it (``X``: placeholder data by default)."""
    X = np.where(MASK, 1.0, np.nan) if X is None else X
    with pm.Model() as model:
        if config == "gamma":  # Gamma(2, 1) on A, per-row shape on W, scalar tau
            A = pm.Gamma("A", 2.0, 1.0, shape=(D, R))
            W = pm.Gamma("W", alpha=W_ALPHA, beta=2.0, shape=(R, N))
            tau = pm.Gamma("tau", 2.0, 2.0)
            pm.Normal("X", mu=(A @ W)[MASK], tau=tau, observed=X[MASK])
        elif config == "gamma_col_tau":  # Gamma on A, Exponential on W, one tau per column
            A = pm.Gamma("A", 3.0, 2.0, shape=(D, R))
            W = pm.Exponential("W", 1.0, shape=(R, N))
            tau = pm.Gamma("tau", 3.0, 2.0, shape=N)
            pm.Normal("X", mu=(A @ W)[MASK], tau=pt.broadcast_to(tau[None, :], (D, N))[MASK],
                      observed=X[MASK])
        elif config == "row_tau":  # HalfNormal on A, Gamma(2, 1) on W, one tau per row
            A = pm.HalfNormal("A", 1.0, shape=(D, R))
            W = pm.Gamma("W", 2.0, 1.0, shape=(R, N))
            tau = pm.Gamma("tau", 3.0, 2.0, shape=D)
            pm.Normal("X", mu=(A @ W)[MASK], sigma=pt.broadcast_to((tau ** -0.5)[:, None],
                                                                  (D, N))[MASK],
                      observed=X[MASK])
        elif config == "student":  # Student-t noise, scale tau^-1/2, Gamma(2, 2) factors
            A = pm.Gamma("A", 2.0, 2.0, shape=(D, R))
            W = pm.Exponential("W", 1.0, shape=(R, N))
            tau = pm.Gamma("tau", 2.0, 2.0)
            pm.StudentT("X", nu=NU, mu=(A @ W)[MASK], sigma=tau ** -0.5, observed=X[MASK])
        elif config == "student_ard":  # Student-t, fixed sigma, ARD Gamma rates of W's rows
            A = pm.Gamma("A", 2.0, 2.0, shape=(D, R))
            lam = pm.Gamma("lam", 3.0, 3.0, shape=R)
            W = pm.Exponential("W", lam[:, None], shape=(R, N))
            pm.StudentT("X", nu=5.0, mu=(A @ W)[MASK], sigma=0.7, observed=X[MASK])
        else:
            raise ValueError(config)
    return model


def weighted_prior(config, rng):
    """A draw of ``A``, ``W``, ``tau`` from the configuration's prior (NumPy)."""
    if config == "gamma":
        return {"A": rng.gamma(2.0, 1.0, size=(D, R)),
                "W": rng.gamma(np.broadcast_to(W_ALPHA, (R, N)), 1 / 2.0),
                "tau": rng.gamma(2.0, 1 / 2.0)}
    if config == "gamma_col_tau":
        return {"A": rng.gamma(3.0, 1 / 2.0, size=(D, R)),
                "W": rng.exponential(1.0, size=(R, N)),
                "tau": rng.gamma(3.0, 1 / 2.0, size=N)}
    if config == "row_tau":
        return {"A": np.abs(rng.normal(size=(D, R))), "W": rng.gamma(2.0, 1.0, size=(R, N)),
                "tau": rng.gamma(3.0, 1 / 2.0, size=D)}
    if config == "student":
        return {"A": rng.gamma(2.0, 1 / 2.0, size=(D, R)),
                "W": rng.exponential(1.0, size=(R, N)), "tau": rng.gamma(2.0, 1 / 2.0)}
    if config == "student_ard":
        lam = rng.gamma(3.0, 1 / 3.0, size=R)
        return {"A": rng.gamma(2.0, 1 / 2.0, size=(D, R)), "lam": lam,
                "W": rng.exponential(1 / lam[:, None], size=(R, N)), "tau": 1 / 0.7**2}
    raise ValueError(config)


def simulate_data(config, p, rng):
    """Data from the model as written (NaN where not observed)."""
    tau = np.asarray(p["tau"], dtype=float)
    if config == "gamma_col_tau":
        sd = np.broadcast_to(tau[None, :] ** -0.5, (D, N))
    elif config == "row_tau":
        sd = np.broadcast_to(tau[:, None] ** -0.5, (D, N))
    else:
        sd = np.full((D, N), float(tau) ** -0.5)
    if config.startswith("student"):
        noise = rng.standard_t(NU if config == "student" else 5.0, size=(D, N))
    else:
        noise = rng.normal(size=(D, N))
    X = p["A"] @ p["W"] + sd * noise
    X[~MASK] = np.nan
    return X


def tested(p, config):
    """Label-invariant quantities (the fixed tau of "student_ard" is not tested)."""
    out = {"AW": p["A"] @ p["W"], "A_sorted": np.sort(p["A"], axis=1),
           "W_sorted": np.sort(p["W"], axis=0)}
    if config == "student_ard":
        out["lam_sorted"] = np.sort(p["lam"])
    else:
        out["tau"] = np.atleast_1d(np.asarray(p["tau"], dtype=float))
    return out


def make_weighted_sbc(config, *, burn=100, ess_target=30, n_draws=None, thin=None):
    """``(simulate, infer)`` of ``config`` (see the module docstring)."""
    f = recognize(weighted_model(config))
    plan = plan_from_factorization(f)
    assert isinstance(plan, WeightedPlan), plan
    update = {"A", "W", "tau", *f.rates}

    def simulate(rng):
        p = weighted_prior(config, rng)
        return tested(p, config), simulate_data(config, p, rng)

    def infer(X, rng):
        obs = gc.observed_entries(X)
        p0 = weighted_prior(config, rng)  # independent start, then burn-in
        st = gc.nmf_state(p0["A"], p0["W"], 1.0, None, obs)
        st.tau = (np.array(p0["tau"], dtype=float) if np.ndim(p0["tau"])
                  else float(p0["tau"]))
        rates = {name: np.array(p0[name], dtype=float) for name in f.rates}

        def step():
            weighted_nmf_sweep(st, obs, plan, rng, rates=rates, update=update)
            return tested({"A": st.A, "W": st.W, "tau": st.tau, **rates}, config)

        return chain_draws(step, burn=burn, n_draws=n_draws, thin=thin, ess_target=ess_target)

    return simulate, infer
