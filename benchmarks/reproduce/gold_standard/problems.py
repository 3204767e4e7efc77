"""The three gold-standard problems: small exponential-Gaussian BNMFs with a fixed noise level.

Each uses ``bnmfzoo.models.exponential_gaussian(X_train, R, sigma=sigma, lambda_=lam)``: the
only free variables are ``A`` and ``W`` (so every method, ``fit_particles`` included, runs on
the same model) and the Gibbs conditionals are exact truncated normals
(``bnmfzoo.inference.gaussian.gibbs._core.nmf_sweep``), which the reference is built from.

* ``laurberg``: ``laurberg(0.5)`` (6 x 6) plus Gaussian noise (sd 5 % of the mean entry), rank 3;
  two exact NMFs (``solutions``) 37 degrees apart besides the permutations; Gibbs chains from
  each stay within 4-5 degrees of it. (Not embedded: ``embed(laurberg(0.5), shape=(12, 10))``
  puts the two solutions only 12 degrees apart; at noise 0.5 % of the mean, chains from them
  wander 13-25 degrees away, and at 0.2 % Gibbs needs far more than 4000 sweeps per mode,
  measured while designing this benchmark.)
* ``ccle``: 20 fully observed cell lines x 8 drugs of CCLE IC50 (the 8 drugs of largest
  variance; cell lines drawn with seed 0), rank 3, ``sigma`` = ``reference_sigma`` (the residual
  sd of a scikit-learn NMF of that rank).
* ``swimmer``: the 16 swimmer images with both legs in position 0 (the arms take all 4 x 4
  positions), on every second varying pixel plus 4 constant (torso) pixels (35 pixels), rank 8
  (4 + 4 arm positions; the torso has to be folded into the parts, a continuum of exact NMFs),
  noise sd 0.05.

Noisy synthetic data are clipped at 0 (the NMF solvers behind the particle methods need
``X >= 0``; with negative entries their masked multiplicative updates overflowed on swimmer).
10 % of the entries (seeded) are held out of every model for the held-out log predictive
density.
"""

from dataclasses import dataclass, field

import numpy as np

PROBLEMS = ("laurberg", "ccle", "swimmer")
RANK_CCLE = 5


@dataclass
class Problem:
    name: str
    X: np.ndarray  # full data (D, N)
    test: np.ndarray  # bool (D, N), held out
    rank: int
    sigma: float
    lam: float = 0.1
    known: list = field(default_factory=list)  # exact solutions (A, W), if any
    threshold: float = 15.0  # smallest cut (degrees) between modes, see cluster_members

    @property
    def train(self):
        return ~self.test

    @property
    def X_train(self):
        return np.where(self.train, self.X, np.nan)

    def model(self):
        from bnmfzoo.models import exponential_gaussian

        return exponential_gaussian(self.X_train, self.rank, sigma=self.sigma, lambda_=self.lam)

    @property
    def hyper(self):
        from bnmfzoo.models._spec import GaussianHyper

        return GaussianHyper(lambda_A=self.lam, lambda_W=self.lam, sigma=self.sigma)

    def key(self):
        import hashlib

        h = hashlib.sha1(np.ascontiguousarray(self.X).tobytes())
        h.update(self.test.tobytes())
        h.update(f"{self.rank}|{self.sigma:.12g}|{self.lam:.12g}".encode())
        return f"{self.name}-{h.hexdigest()[:10]}"


def _holdout(shape, frac, rng):
    from bnmfzoo.datasets import holdout_mask

    _, test = holdout_mask(np.ones(shape, dtype=bool), frac, random_seed=int(rng.integers(2**31)))
    return np.asarray(test, dtype=bool)


def make_problem(name):
    rng = np.random.default_rng(0)
    if name == "laurberg":
        from bnmfzoo.datasets import laurberg

        clean = laurberg(0.5)
        Xc = clean.X.values
        sigma = 0.05 * float(Xc.mean())
        X = np.maximum(Xc + sigma * rng.standard_normal(Xc.shape), 0.0)
        known = [(np.asarray(a), np.asarray(w)) for a, w in clean.solutions]
        return Problem("laurberg", X, _holdout(X.shape, 0.1, rng), 3, sigma, known=known)
    if name == "ccle":
        from bnmfzoo.datasets import load_ccle
        from bnmfzoo.models.gaussian import reference_sigma

        V = load_ccle("ic50").values
        rows = np.flatnonzero(np.isfinite(V).all(1))
        cols = np.argsort(-np.nanvar(V, axis=0))[:8]
        rows = np.sort(rng.choice(rows, 20, replace=False))
        X = V[np.ix_(rows, np.sort(cols))]
        test = _holdout(X.shape, 0.1, rng)
        sigma = reference_sigma(np.where(test, np.nan, X), RANK_CCLE)
        return Problem("ccle", X, test, RANK_CCLE, float(sigma))
    if name == "swimmer":
        from bnmfzoo.datasets import swimmer

        d = swimmer()
        pos = d.params["positions"]
        cols = np.flatnonzero((pos[:, 2] == 0) & (pos[:, 3] == 0))
        sub = d.X.values[:, cols]
        varying = np.flatnonzero(sub.std(1) > 0)[::2]
        const = np.flatnonzero((sub.std(1) == 0) & (sub.max(1) > 0))[:4]
        rows = np.sort(np.concatenate([varying, const]))
        sigma = 0.05
        Xc = sub[rows]
        X = np.maximum(Xc + sigma * rng.standard_normal(Xc.shape), 0.0)
        return Problem("swimmer", X, _holdout(X.shape, 0.1, rng), 8, sigma)
    raise ValueError(f"unknown problem {name!r}; choose from {PROBLEMS}")
