"""Every public fitter refuses bad counts, seeds and tolerances at once, with a clear message.

Issue 21, item 6: ``fit_cvb0(max_iter="abc")``, ``n_draws=None``, ``fit_vb(random_seed=-1)``,
``sigma=1e-170`` gave raw errors (``invalid literal for int()``, numpy's "expected
non-negative integer", a ``ZeroDivisionError`` after the fit), and messages printed numpy
reprs (``np.int64(3)``). Each case below must raise ``TypeError`` (wrong type) or
``ValueError`` (out of range) whose message names the argument, shows the value as a plain
number and contains no ``np.`` repr.
"""

import functools
import math

import numpy as np
import pytest

import bnmfzoo.inference as inf
from bnmfzoo._base.validation import check_int, check_number, check_seed, fmt
from bnmfzoo.models import beta_dir, exponential_gaussian, silf, tri_exponential_gaussian

_rng = np.random.default_rng(0)
X = _rng.exponential(size=(8, 6))
V = (_rng.random((8, 6)) < 0.4).astype(float)


@functools.cache
def model(kind):
    return {
        "gaussian": lambda: exponential_gaussian(X, 2),
        "fixed_sigma": lambda: exponential_gaussian(X, 2, sigma=0.5),
        "binary": lambda: beta_dir(V, rank=3),
        "silf": lambda: silf(X, 2, n_reference=5),
    }[kind]()


#: fitter -> (model kind, valid small keyword arguments, count arguments, real arguments)
FITTERS = {
    "fit_vb": ("gaussian", dict(max_iter=3, n_draws=5), ("max_iter", "n_draws"), ("tol",)),
    "fit_icm": ("gaussian", dict(max_iter=3), ("max_iter", "thinning"), ("floor",)),
    "fit_multiplicative": ("gaussian", dict(max_iter=3), ("max_iter",), ()),
    "fit_cvb0": ("binary", dict(max_iter=3, n_draws=5), ("max_iter", "n_draws"), ("tol",)),
    "fit_collapsed_gibbs": ("binary", dict(draws=4, tune=2, thin=2),
                            ("draws", "chains", "thin", "init_iter"), ("active_threshold",)),
    "fit_particles": ("silf", dict(n_particles=3, init="random", max_iter=5, n_draws=5),
                      ("n_particles", "max_iter"), ("tol", "pad_scale")),
    "fit_svgd": ("silf", dict(n_particles=3, n_steps=3), ("n_steps",), ("learning_rate",)),
    "fit_dsgd": ("silf", dict(n_particles=3, n_steps=3), ("n_steps",), ("learning_rate",)),
    "fit_rrt": ("fixed_sigma", dict(max_steps=3, max_components=5, n_draws=5, n_restarts=2),
                ("max_steps", "max_components", "n_draws", "n_restarts", "max_failures"),
                ("step_size", "step_growth", "min_angle", "threshold", "prune_threshold",
                 "variance")),
    "fit_npvi": ("fixed_sigma", dict(n_components=2, max_iter=2, n_draws=5),
                 ("n_components", "max_iter", "n_draws"), ("tol",)),
    "fit_nuts": ("silf", dict(draws=5, tune=5, n_particles=3), ("draws", "n_particles"), ()),
    "fit_advi": ("silf", dict(n=5, n_particles=3, n_draws=5), ("n", "n_particles", "n_draws"),
                 ("learning_rate",)),
}
BAD_COUNTS = ["abc", None, 1.5, True, 0, -1, math.nan, math.inf, np.int64(-3)]
BAD_REALS = ["abc", None, -1.0, math.nan, math.inf]
BAD_SEEDS = ["abc", -1, 1.5, True, np.int64(-2), [1, 2]]


def _cases():
    import inspect

    for name, (kind, base, counts, reals) in FITTERS.items():
        params = inspect.signature(getattr(inf, name)).parameters
        for arg, bads in [(a, BAD_COUNTS) for a in counts] + [(a, BAD_REALS) for a in reals]:
            for bad in bads:
                if bad is None and params[arg].default is None:
                    continue  # None is this argument's default
                yield pytest.param(name, arg, bad, id=f"{name}-{arg}={bad!r}")
        for bad in BAD_SEEDS:
            yield pytest.param(name, "random_seed", bad, id=f"{name}-random_seed={bad!r}")


def _check_message(err, arg):
    msg = str(err.value)
    assert arg in msg, msg
    assert "np." not in msg and "numpy." not in msg, msg


@pytest.mark.parametrize(("name", "arg", "bad"), list(_cases()))
def test_fitter_refuses_bad_argument(name, arg, bad):
    kind, base, _, _ = FITTERS[name]
    with pytest.raises((TypeError, ValueError)) as err:
        getattr(inf, name)(model(kind), progressbar=False, **{"random_seed": 0, **base, arg: bad})
    _check_message(err, arg)


@pytest.mark.parametrize(("arg", "bad"), [
    ("k", "abc"), ("k", 1), ("k", 2.5), ("n_workers", 0), ("n_workers", None),
    ("random_seed", -1), ("random_seed", "x"),
])
def test_cross_validate_refuses_bad_argument(arg, bad):
    make = functools.partial(exponential_gaussian, rank=2)
    with pytest.raises((TypeError, ValueError)) as err:
        inf.cross_validate(make, X, method="icm", max_iter=3, **{"k": 3, arg: bad})
    _check_message(err, arg)


def test_the_issue_cases():
    """The exact calls of issue 21 item 6."""
    with pytest.raises(TypeError, match=r"max_iter must be an integer >= 1, got 'abc'"):
        inf.fit_cvb0(model("binary"), max_iter="abc")
    with pytest.raises(TypeError, match=r"n_draws must be an integer >= 1, got None"):
        inf.fit_vb(model("gaussian"), n_draws=None)
    with pytest.raises(ValueError, match=r"random_seed must be a non-negative integer.*got -1"):
        inf.fit_vb(model("gaussian"), random_seed=-1)
    with pytest.raises(ValueError, match=r"max_iter must be an integer >= 1, got -3$"):
        inf.fit_vb(model("gaussian"), max_iter=np.int64(-3))


@pytest.mark.parametrize("sigma", [1e-170, 1e-60, 1e60, 1e170])
@pytest.mark.parametrize("build", [
    lambda s: exponential_gaussian(X, 2, sigma=s),
    lambda s: tri_exponential_gaussian(X, (2, 2), sigma=s),
], ids=["nmf", "nmtf"])
def test_fixed_sigma_out_of_float64_range(build, sigma):
    """Before: sigma=1e-170 built a model whose VB fit died in a ZeroDivisionError, 1e-100
    gave "mu must be finite", 1e160 an OverflowError (measured; 1e-60 ... 1e150 ran)."""
    with pytest.raises(ValueError, match=r"sigma=.* is outside the range"):
        build(sigma)


def test_fixed_sigma_relative_to_data():
    with pytest.raises(ValueError, match=r"max\|X\| / sigma"):
        exponential_gaussian(X * 1e80, 2, sigma=1e-30, lambda_=0.1)
    assert exponential_gaussian(X * 1e80, 2, sigma=1e-10, lambda_=0.1) is not None


def test_helpers():
    assert fmt(np.int64(3)) == "3" and fmt([np.float64(0.5)]) == "[0.5]"
    assert fmt({"a": np.int32(1)}) == "{'a': 1}" and fmt("s") == "'s'"
    assert check_int(np.int64(4), name="n") == 4 and check_int(None, name="n",
                                                                 allow_none=True) is None
    with pytest.raises(TypeError, match="n must be an integer >= 1, got 2.0"):
        check_int(2.0, name="n")
    with pytest.raises(ValueError, match="n must be an integer >= 2, got 1"):
        check_int(np.int8(1), name="n", minimum=2)
    assert check_number(np.float32(0.25), name="x", minimum=0.0, maximum=1.0) == 0.25
    with pytest.raises(ValueError, match="x must be <= 1.0, got 2"):
        check_number(2, name="x", maximum=1.0)
    with pytest.raises(ValueError, match="x must be finite, got nan"):
        check_number(np.float64("nan"), name="x")
    assert check_seed(np.uint8(3)) == 3 and check_seed(None) is None
    g = np.random.default_rng(0)
    assert check_seed(g) is g
    with pytest.raises(TypeError, match="random_seed"):
        check_seed(False)
