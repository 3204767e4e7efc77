"""Simulation-based calibration (Talts et al. 2018) for any model and inference method.

For ``s = 1..n_sims``: draw parameters ``theta_s`` and data ``y_s`` from the prior predictive,
run the inference method on ``y_s``, and record the rank of each scalar of ``theta_s`` among the
method's ``L`` posterior draws. If the method samples the exact posterior, every rank is uniform on
``{0, ..., L}``. We test that with the *randomized* probability integral transform
``u = (rank + U(0, 1)) / (L + 1)``, which is exactly ``U(0, 1)`` under the null hypothesis, so a
Kolmogorov-Smirnov test has exact size; the smallest p-value over all scalars is compared with a
Bonferroni-corrected level.

MCMC draws must be (nearly) independent for the ranks to be uniform: thin chains by about their
integrated autocorrelation time before handing the draws back.
"""

from dataclasses import dataclass

import numpy as np
from scipy import stats

from bnmfzoo._progress import progress
from bnmfzoo._rng import as_generator


@dataclass
class SBCResult:
    """Rank statistics of a simulation-based calibration run.

    Attributes
    ----------
    ranks : dict of str to numpy.ndarray
        Per parameter, ranks of the true value among the draws, shape ``(n_sims, *param_shape)``,
        integers in ``0..n_draws``.
    n_draws : int
        Number of posterior draws per simulation (L).
    pvalues : dict of str to numpy.ndarray
        Per parameter and scalar, the KS p-value of the randomized PIT against U(0, 1).
    """

    ranks: dict
    n_draws: int
    pvalues: dict

    @property
    def n_sims(self):
        """Number of simulations."""
        return next(iter(self.ranks.values())).shape[0]

    @property
    def n_tests(self):
        """Number of scalar parameters tested."""
        return int(sum(p.size for p in self.pvalues.values()))

    @property
    def min_pvalue(self):
        """Smallest p-value over all scalars."""
        return float(min(p.min() for p in self.pvalues.values()))

    def passed(self, alpha=0.01):
        """True if no scalar rejects uniformity at Bonferroni level ``alpha / n_tests``."""
        return self.min_pvalue > alpha / self.n_tests

    def plot(self, n_bins=None, *, max_panels=16):
        """Rank histograms with the 99% band expected under uniformity.

        Returns
        -------
        matplotlib.figure.Figure
        """
        import matplotlib.pyplot as plt

        panels = [
            (f"{name}{list(idx) if idx else ''}", r[(slice(None), *idx)])
            for name, r in self.ranks.items()
            for idx in np.ndindex(r.shape[1:])
        ][:max_panels]
        n_bins = n_bins or _default_bins(self.n_sims, self.n_draws)
        ncol = min(4, len(panels))
        nrow = int(np.ceil(len(panels) / ncol))
        fig, axes = plt.subplots(nrow, ncol, figsize=(3 * ncol, 2.2 * nrow), squeeze=False)
        expected = self.n_sims / n_bins
        lo, hi = stats.binom.ppf([0.005, 0.995], self.n_sims, 1 / n_bins)
        for ax, (label, r) in zip(axes.flat, panels):
            ax.axhspan(lo, hi, color="0.85")
            ax.axhline(expected, color="0.5", lw=0.8)
            ax.hist(r, bins=np.linspace(0, self.n_draws + 1, n_bins + 1), color="C0")
            ax.set_title(label, fontsize=8)
            ax.set_yticks([])
        for ax in list(axes.flat)[len(panels):]:
            ax.set_visible(False)
        fig.suptitle(f"SBC rank histograms ({self.n_sims} simulations, {self.n_draws} draws)")
        fig.tight_layout()
        return fig


def _default_bins(n_sims, n_draws):
    return int(max(2, min(n_draws + 1, n_sims // 10, 20)))


def sbc(simulate, infer, *, n_sims=200, random_seed=None, progressbar=True):
    """Run simulation-based calibration.

    Parameters
    ----------
    simulate : callable
        ``simulate(rng) -> (truth, data)``: draw parameters from the prior (a dict of name ->
        array) and data given them.
    infer : callable
        ``infer(data, rng) -> draws``: a dict with the same names, each an array of shape
        ``(n_draws, *param_shape)`` of (thinned, nearly independent) posterior draws.
    n_sims : int
        Number of simulated data sets.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool

    Returns
    -------
    SBCResult

    Examples
    --------
    A conjugate normal model with an exact sampler passes:

    >>> import numpy as np
    >>> def simulate(rng):
    ...     mu = rng.normal()
    ...     return {"mu": np.array(mu)}, rng.normal(mu, 1.0, size=5)
    >>> def infer(y, rng):  # posterior N(sum(y)/6, 1/6)
    ...     return {"mu": rng.normal(y.sum() / 6, np.sqrt(1 / 6), size=(99,))}
    >>> result = sbc(simulate, infer, n_sims=100, random_seed=0, progressbar=False)
    >>> result.passed()
    True
    """
    if n_sims < 2:
        raise ValueError(f"n_sims must be >= 2, got {n_sims}")
    rng = as_generator(random_seed)
    ranks, n_draws = {}, None
    for s in progress(total=n_sims, desc="SBC", progressbar=progressbar):
        truth, data = simulate(rng)
        draws = infer(data, rng)
        for name, value in truth.items():
            value = np.asarray(value, dtype=float)
            d = np.asarray(draws[name], dtype=float)
            if d.shape[1:] != value.shape:
                raise ValueError(
                    f"draws[{name!r}] has shape {d.shape}; expected (n_draws, *{value.shape})"
                )
            if n_draws is None:
                n_draws = d.shape[0]
            elif d.shape[0] != n_draws:
                raise ValueError("every call of infer must return the same number of draws")
            less = (d < value).sum(axis=0)
            ties = (d == value).sum(axis=0)
            rank = less + rng.integers(0, ties + 1)  # random tie-breaking keeps ranks uniform
            ranks.setdefault(name, np.empty((n_sims, *value.shape), dtype=int))[s] = rank
    pvalues = {}
    for name, r in ranks.items():
        u = (r + rng.uniform(size=r.shape)) / (n_draws + 1)
        flat = u.reshape(n_sims, -1)
        p = np.array([stats.kstest(flat[:, j], "uniform").pvalue for j in range(flat.shape[1])])
        pvalues[name] = p.reshape(r.shape[1:])
    return SBCResult(ranks=ranks, n_draws=int(n_draws), pvalues=pvalues)
