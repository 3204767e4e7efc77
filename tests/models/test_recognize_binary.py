"""Recognition of Bernoulli-mean models written in PyMC, and ``pm.sample()`` choosing the
collapsed samplers (Lumbreras et al. 2020) by itself."""

import logging

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from _sbc_cases import CASES, USER_BINARY_HYPER, user_binary_model

from bnmfzoo import likelihoods
from bnmfzoo.inference import (
    CollapsedGibbsBetaDir,
    CollapsedGibbsDirDir,
    GibbsNMF,
    fit_collapsed_gibbs,
    fit_cvb0,
    fit_vb,
    pymc_default_steps,
)
from bnmfzoo.models import beta_dir, dir_beta, dir_dir, recognize
from bnmfzoo.models._recognize import NotRecognized

KW = dict(progressbar=False, compute_convergence_checks=False, cores=1)
V = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, np.nan]])
MASK = ~np.isnan(V)
FAMILY = {"betadir": "beta_dir", "dirbeta": "dir_beta", "dirdir": "dir_dir"}
CONSTRUCTOR = {"betadir": beta_dir, "dirbeta": dir_beta, "dirdir": dir_dir}
STEP = {"betadir": "CollapsedGibbsBetaDir", "dirbeta": "CollapsedGibbsBetaDir",
        "dirdir": "CollapsedGibbsDirDir"}


def _ours(family, X=V):
    """Our constructor with the same (parametric, K = 2) prior as ``user_binary_model``."""
    return CONSTRUCTOR[family](X, rank=2, **USER_BINARY_HYPER[family])


def _model(family, form):
    """``user_binary_model`` with the likelihood written in other ways."""
    if form == "mask":
        return user_binary_model(family, V, MASK)
    h = USER_BINARY_HYPER[family]
    with pm.Model() as model:
        if family == "dirbeta":
            A = pm.Beta("A", alpha=h["alpha"], beta=h["beta"], shape=(4, 2))
        else:
            A = pm.Dirichlet("A", a=h["gamma"], shape=(4, 2))
        if family == "betadir":
            W = pm.Beta("W", alpha=h["alpha"][:, None], beta=h["beta"][:, None], shape=(2, 3))
        else:
            W = pm.Dirichlet("Wt", a=h["eta"], shape=(3, 2)).T
        if form == "term":
            likelihoods.bernoulli_mean("X", A, W, observed=V)
        elif form == "clip_pairs":
            rows, cols = np.nonzero(MASK)
            pm.Bernoulli("X", p=pt.clip(A @ W, 0.0, 1.0)[rows, cols], observed=V[rows, cols])
        else:  # the whole product, on a complete data matrix
            pm.Bernoulli("X", p=A @ W, observed=np.nan_to_num(V))
    return model


# ----------------------------------------------------------------------------- recognition


@pytest.mark.parametrize("form", ["mask", "term", "clip_pairs", "full"])
@pytest.mark.parametrize("family", ["betadir", "dirbeta", "dirdir"])
def test_recognizes_each_variant(family, form):
    f = recognize(_model(family, form))
    h = USER_BINARY_HYPER[family]
    assert f.family == FAMILY[family] and f.kind == "bernoulli" and f.rank == 2
    assert set(f.priors.names) == set(h)
    for name, value in h.items():
        np.testing.assert_array_equal(getattr(f, name), value)
    mask = MASK if form != "full" else np.ones_like(MASK)
    np.testing.assert_array_equal(f.mask, mask)
    np.testing.assert_array_equal(f.X.values[mask], np.nan_to_num(V)[mask])
    w = "W" if family == "betadir" else "Wt"
    assert f.var_names == {"A": "A", "W": w} and f.others == ()
    assert f.factors["W"].transposed == (family != "betadir")
    assert f.factors["A"].family == ("beta" if family == "dirbeta" else "dirichlet")


@pytest.mark.parametrize("family", ["betadir", "dirbeta", "dirdir"])
def test_constructors_go_through_recognition(family):
    """Our constructors attach nothing: read from their graph (one path, as a user's model)
    they give the hyperparameters they were built with, typed, and the user's model in PyMC
    syntax with the same priors gives the same spec."""
    from bnmfzoo.models._recognize_binary import BinaryPriors
    from bnmfzoo.models._spec import find_spec

    model = _ours(family)
    assert not hasattr(model, "bnmfzoo_spec")
    spec, user = find_spec(model), find_spec(_model(family, "mask"))
    assert spec.family == user.family == FAMILY[family] and spec.rank == user.rank == 2
    assert isinstance(spec.hyper, BinaryPriors) and spec.hyper.names == user.hyper.names
    for name, value in USER_BINARY_HYPER[family].items():
        np.testing.assert_array_equal(getattr(spec.hyper, name), value)
        np.testing.assert_array_equal(getattr(user.hyper, name), value)
    assert not spec.hyper.nonparametric and spec.entries is None  # 11 of 12 observed: dense
    np.testing.assert_array_equal(spec.mask, MASK)
    np.testing.assert_array_equal(spec.X.values, V)
    np.testing.assert_array_equal(spec.X_values, user.X_values)
    w = {} if family == "betadir" else {"Wt": "Wt"}
    assert spec.var_names == {"A": "A", "W": "W", "X": "X", **w}  # W: the Deterministic Wt.T
    assert user.var_names == {"A": "A", "W": "Wt" if w else "W", "X": "X_obs", **w}


def _bad(kind):
    with pm.Model() as model:
        if kind == "exponential":
            A = pm.Exponential("A", 1.0, shape=(4, 2))
        elif kind == "row_concentration":
            A = pm.Dirichlet("A", a=np.arange(1.0, 9.0).reshape(4, 2), shape=(4, 2))
        elif kind == "beta_beta":
            A = pm.Beta("A", 1.0, 1.0, shape=(4, 2))
        else:
            A = pm.Dirichlet("A", a=np.ones(2), shape=(4, 2))
        if kind == "w_rows_simplex":
            W = pm.Dirichlet("W", a=np.ones(3), shape=(2, 3))
        elif kind == "col_beta":
            W = pm.Beta("W", alpha=np.arange(1.0, 7.0).reshape(2, 3), beta=1.0, shape=(2, 3))
        else:
            W = pm.Beta("W", 1.0, 1.0, shape=(2, 3))
        p = (A @ W)[MASK]
        if kind == "logit":
            pm.Bernoulli("X", logit_p=p, observed=V[MASK])
        elif kind == "clip_eps":
            pm.Bernoulli("X", p=pt.clip(A @ W, 1e-6, 1 - 1e-6)[MASK], observed=V[MASK])
        else:
            pm.Bernoulli("X", p=p, observed=V[MASK])
    return model


@pytest.mark.parametrize("kind, match", [
    ("exponential", r"prior of A \('A'\) is Exponential; with a Bernoulli likelihood on A @ W "
                    r"the recognized priors are: rows of A on the simplex"),
    ("beta_beta", r"both have Beta priors, so A @ W is not a probability"),
    ("w_rows_simplex", r"Dirichlet prior of W \('W'\) puts the rows of W on the simplex"),
    ("row_concentration", r"Dirichlet concentration of A \('A'\) varies along the other axis"),
    ("col_beta", r"Beta alpha of W \('W'\) varies along the other axis"),
    ("logit", r"is not A @ W"),
    ("clip_eps", r"clipped to bounds other than \[0, 1\]"),
])
def test_not_recognized_says_why(kind, match):
    with pytest.raises(NotRecognized, match=match):
        recognize(_bad(kind))
    with pytest.raises(TypeError, match="CollapsedGibbsBetaDir needs a model of family"):
        CollapsedGibbsBetaDir(model=_bad(kind))


def test_gaussian_methods_refuse_a_bernoulli_model():
    model = user_binary_model("betadir", V, MASK)
    with pytest.raises(TypeError, match=r"GibbsNMF samples X ~ A W models; this model is "
                                        r"X ~ Bernoulli\(A W\)"):
        GibbsNMF(model=model)
    with pytest.raises(TypeError, match="not Gaussian"):
        fit_vb(model)
    with pm.Model() as gaussian:
        pm.Normal("X", mu=pm.Exponential("A", 1.0, shape=(4, 2)) @ pm.Exponential(
            "W", 1.0, shape=(2, 3)), sigma=1.0, observed=np.ones((4, 3)))
    with pytest.raises(TypeError, match="not recognized as one: its likelihood is not a "
                                        "Bernoulli"):
        CollapsedGibbsBetaDir(model=gaussian)


# ----------------------------------------------------------------------------- pm.sample()


def _assigned(caplog):
    return [r.getMessage() for r in caplog.records if ": [" in r.getMessage()]


@pytest.mark.parametrize("family", ["betadir", "dirbeta", "dirdir"])
def test_pm_sample_picks_collapsed_step_with_the_constructors_draws(family, caplog):
    """User model and our constructor with the same prior: ``pm.sample()`` without ``step=``
    picks the collapsed sampler for both, and the draws are identical (same seed)."""
    w = "W" if family == "betadir" else "Wt"
    runs = []
    for model in (user_binary_model(family, V, MASK), _ours(family)):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="pymc"), model:
            runs.append(pm.sample(draws=15, tune=5, chains=2, random_seed=3, **KW))
        assert _assigned(caplog) == [f"{STEP[family]}: [A, {w}]"]
        assert "log_joint" in runs[-1].sample_stats
    for name in ("A", w):
        np.testing.assert_array_equal(runs[0].posterior[name].values,
                                      runs[1].posterior[name].values)
    np.testing.assert_array_equal(runs[0].sample_stats["log_joint"].values,
                                  runs[1].sample_stats["log_joint"].values)


def test_fitters_accept_the_user_model():
    for family in ("betadir", "dirbeta"):
        user = fit_cvb0(user_binary_model(family, V, MASK), max_iter=30, random_seed=1,
                        progressbar=False)
        ours = fit_cvb0(_ours(family), max_iter=30, random_seed=1, progressbar=False)
        np.testing.assert_array_equal(user["variational"]["X_mean"].values,
                                      ours["variational"]["X_mean"].values)
        assert user.attrs["model"] == FAMILY[family]
    for family in ("betadir", "dirdir"):
        kw = dict(draws=20, tune=5, thin=2, random_seed=2, progressbar=False)
        user = fit_collapsed_gibbs(user_binary_model(family, V, MASK), **kw)
        ours = fit_collapsed_gibbs(_ours(family), **kw)
        for name in ("A", "W"):
            np.testing.assert_array_equal(user.posterior[name].values, ours.posterior[name].values)
    with pytest.raises(TypeError, match="fit_cvb0 fits beta_dir, dir_beta models, not a "
                                        "'dir_dir' model"):
        fit_cvb0(user_binary_model("dirdir", V, MASK))


def test_hyperprior_leaves_the_model_to_pymc():
    """A hyperprior on a Beta parameter: recognized (the parameter names it), but the collapsed
    samplers do not condition on hyperparameters, so they decline it (a clear TypeError when
    asked explicitly) and ``pm.sample()`` assigns PyMC's default samplers to every variable."""
    from pymc.sampling.mcmc import assign_step_methods

    with pm.Model() as model:
        a0 = pm.Gamma("a0", 2.0, 2.0)
        A = pm.Dirichlet("A", a=np.ones(2), shape=(4, 2))
        W = pm.Beta("W", alpha=a0, beta=1.0, shape=(2, 3))
        pm.Bernoulli("X", p=(A @ W)[MASK], observed=V[MASK])
    f = recognize(model)
    assert f.family == "beta_dir" and f.alpha is None and f.others == ("a0",)
    assert f.factors["W"].params["alpha"].depends_on == ("a0",)
    np.testing.assert_array_equal(f.beta, [1.0, 1.0])
    with pytest.raises(TypeError, match=r"Beta prior of W \('W'\) has parameters depending on "
                                        r"\['a0'\]; the collapsed samplers need constant"):
        CollapsedGibbsBetaDir(model=model)
    with pytest.raises(TypeError, match="CollapsedGibbsDirDir needs a model of family dir_dir"):
        CollapsedGibbsDirDir(model=model)
    _, selected = assign_step_methods(model)
    assert {cls.__name__: sorted(model.values_to_rvs[v].name for v in vs)
            for cls, vs in selected.items()} == {"NUTS": ["A", "W", "a0"]}


def test_unrelated_variable_gets_pymc_default_step(caplog):
    """A free variable the likelihood and the factors' priors do not touch: compound step."""
    model = user_binary_model("betadir", V, MASK)
    with model:
        pm.Normal("z", 0.0, 1.0)
    assert recognize(model).others == ("z",)
    with caplog.at_level(logging.INFO, logger="pymc"), model:
        idata = pm.sample(draws=10, tune=5, chains=1, random_seed=0, **KW)
    assert _assigned(caplog) == [">CollapsedGibbsBetaDir: [A, W]", ">NUTS: [z]"]
    assert idata.posterior["z"].shape == (1, 10)


# ----------------------------------------------------------------------------- calibration

# SBC of the recognized user models (cases "user-betadir", "user-dirbeta", "user-dirdir" in
# _sbc_cases.py: 4 x 3, K = 2, one held-out entry, unequal per-factor hyperparameters; the
# prior is simulated in NumPy from the model as written, inference is the chain of the step
# pm.sample() picks on the user's pm.Model). Each chain runs to a bulk/tail ESS of 30 and is
# thinned by ceil(n / ESS); 26 scalars (A, W, A W), exact-size randomized-PIT KS tests,
# Bonferroni level 0.01 / 26, 100 simulations. Measured false-failure rates over 60 seeds
# (``nice -n 19 python -m benchmarks.calibration.sbc_false_failure user-<family> --seeds
# 1000:1060``, 2.6-3.2 s a seed; records in benchmarks/calibration/results/):
#   user-betadir 0/60 (95% CI 0-6.0%); second level (KS of each scalar's p-values across seeds,
#     Bonferroni-adjusted) p = 0.43; thinning median 3 (max 12), kept draws median 67 (min 29);
#   user-dirbeta 0/60 (0-6.0%); second level p = 0.0037, from p-values that lean *large*
#     (AW[1, 0]: none of 60 below 0.1, median 0.66): the test is conservative for that entry,
#     not anti-conservative; thinning median 3 (max 12);
#   user-dirdir 2/60 (0.4-11.5%; seeds 1014 and 1053, single entries at p = 3.4e-4 and 3.5e-4
#     against the 3.8e-4 threshold); second level p = 0.70; thinning median 3 (max 12).
# Pooled, 2 of 180 (1.1%, 95% CI 0.1-4.0%): consistent with the nominal 1%.


@pytest.mark.parametrize("case, seed", [("user-betadir", 31), ("user-dirbeta", 32),
                                        ("user-dirdir", 33)])
def test_sbc_user_models(case, seed):
    result = CASES[case].run(seed)  # 100 simulations
    assert result.n_sims == 100 and (result.thin >= 1).all()
    assert result.passed(alpha=0.01), (result.min_pvalue, result.n_tests)


@pytest.mark.slow
def test_sbc_detects_a_misread_prior():
    """Power: inference on a model whose Beta alpha and beta are swapped (what a misread of the
    graph would give) fails the same SBC. Slow: it shows the SBC's power and guards no library
    code (the swap is the test case's); ``tests/gaussian/test_gibbs_sbc.py::
    test_sbc_detects_wrong_sampler`` keeps the SBC harness's power in the fast suite."""
    result = CASES["user-betadir-swapped"].run(31)
    assert not result.passed(alpha=0.01), result.min_pvalue


def _mean_AW(idata):
    p = idata.posterior
    AW = np.einsum("cdik,cdkj->cdij", p["A"].values,
                   p["W"].values if "W" in p else p["Wt"].values.transpose(0, 1, 3, 2))
    return AW


@pytest.mark.slow
@pytest.mark.parametrize("family", ["betadir", "dirdir"])
def test_agrees_with_nuts(family):
    """E[A W | X] of the automatic choice (collapsed Gibbs) against PyMC's NUTS on the same
    user model (Dirichlet rows through PyMC's simplex transform)."""
    import arviz_stats as azs

    model = user_binary_model(family, V, MASK)
    with model:
        ours = pm.sample(draws=3000, tune=300, chains=2, random_seed=7, **KW)
        with pymc_default_steps():
            nuts = pm.sample(draws=1500, tune=1000, chains=2, random_seed=8, nuts_sampler="pymc",
                             target_accept=0.95, **KW)
    assert "log_joint" in ours.sample_stats and "step_size" in nuts.sample_stats
    aw_g, aw_n = _mean_AW(ours), _mean_AW(nuts)
    diff = aw_g.mean(axis=(0, 1)) - aw_n.mean(axis=(0, 1))
    se = np.sqrt(azs.mcse(aw_g, chain_axis=0, draw_axis=1) ** 2
                 + azs.mcse(aw_n, chain_axis=0, draw_axis=1) ** 2)
    # 12 entries of E[A W | X] (label-invariant; one held out); under agreement each
    # z = diff / se is ~N(0, 1) (MCSE from ESS), so |z| < 4 for all 12 fails with probability
    # < 12 * 6.3e-5 < 1e-3
    z = diff / se
    assert np.all(np.abs(z) < 4), z
    assert np.all(se < 0.01)  # the comparison has resolving power
