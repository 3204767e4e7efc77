"""Seeded SILF and uniform-noise fits give the same bits as before issue #18's recognition path.

The fingerprints below were generated on main (commit e6405e3, before the SILF and
uniform-noise constructors stopped attaching a spec and the particle code stopped using its own
model description) with this exact code, in the project's environment (one BLAS thread). Any
change in the data, hyperparameters, restarts or names the fitters read from the recognized
graph changes these hashes. A different BLAS or NumPy build can change the last bits of the
solvers, so a failure after an environment change must be checked against main first.

Reproducibility only, not correctness (issue #36). A changed hash says the numbers changed, not
whether the change is a bug or a fix; never regenerate the table to make it pass. Decide with
the statistical and exact tests of the code whose numbers moved, and regenerate only when they
pass on the change: SILF particles and their Stein weights:
``tests/diagnostics/test_stein_validity.py``
(``test_stein_weights_prefer_exact_half``, ``test_wrong_samples_score_worse``),
``tests/diagnostics/test_stein.py::test_stein_kernel_matches_autodiff``,
``tests/particles/test_particles.py::test_weights_on_simplex_and_optimal``,
``tests/particles/test_rejuvenate.py::test_rejuvenated_particles_match_a_quadrature_posterior``;
RRT and
NPVI: ``tests/particles/test_rrt.py::test_gaussian_elbo_never_drops``,
``tests/particles/test_npvi.py`` (exact
ELBO pieces against finite differences and closed forms). Then run the mutation check of the
area, ``python -m benchmarks.mutation.run --catalog particles``, and record in the commit why
the numbers changed.
"""

import hashlib
import warnings

import numpy as np

#: sha256[:16] of each fit's arrays, from main before the change
EXPECTED = {
    "silf particles A": "c954bd10bf60b992",
    "silf particles w": "7508ee387e9b6972",
    "silf posterior W": "caf5f540e3747fe3",
    "uniform rrt": "54457981ad82fcfb 33910cfca8caba03",
    "uniform npvi": "3ee19fa405342c76 ba8bb5c79ae3d866",
    "uniform rrt eps": "37bcd55576d73d30 5cc161917ddd5321",
}


def _h(arr):
    a = np.ascontiguousarray(np.asarray(arr, dtype=np.float64))
    return hashlib.sha256(a.tobytes()).hexdigest()[:16]


def _post(dt):
    return " ".join(_h(dt["posterior"][v]) for v in sorted(dt["posterior"].data_vars))


def fingerprints():
    """The fits' fingerprints (SILF: fit_particles; uniform noise: fit_rrt, fit_npvi).

    Example
    -------
    >>> sorted(fingerprints())[0]  # doctest: +SKIP
    'silf particles A'
    """
    from bnmfzoo.inference import fit_npvi, fit_particles, fit_rrt
    from bnmfzoo.models import silf, uniform_noise

    warnings.filterwarnings("ignore")
    rng = np.random.default_rng(11)
    X = rng.exponential(size=(8, 2)) @ rng.exponential(size=(2, 7))
    X[1, 2] = np.nan
    out = {}
    r = fit_particles(silf(X, 2, epsilon=1.5), n_particles=4, init="random", random_seed=2,
                      progressbar=False)
    out["silf particles A"] = _h(r["particles"]["A"])
    out["silf particles w"] = _h(r["particles"]["weight"])
    out["silf posterior W"] = _h(r["posterior"]["W"])
    mu = uniform_noise(X, 2, random_seed=0, n_restarts=3)  # epsilon from 3 Lin restarts
    out["uniform rrt"] = _post(fit_rrt(mu, random_seed=2, progressbar=False, max_attempts=40,
                                       n_draws=20))
    out["uniform npvi"] = _post(fit_npvi(mu, n_components=2, max_iter=2, n_draws=20,
                                         random_seed=0, progressbar=False))
    mu2 = uniform_noise(X, 2, epsilon=0.8)
    out["uniform rrt eps"] = _post(fit_rrt(mu2, n_restarts=3, random_seed=4, progressbar=False,
                                           max_attempts=40, n_draws=20))
    return out


def test_silf_and_uniform_fits_are_bit_identical_to_main():
    assert fingerprints() == EXPECTED
