"""Draws of a test's Markov chain: after a burn-in, to an effective sample size or thinned."""

import numpy as np

from bnmfzoo.diagnostics.calibration import run_to_ess


def chain_draws(step, *, burn, n_draws=None, thin=1, ess_target=30):
    """Run ``step()`` (a dict of arrays per call) ``burn`` times, then collect draws.

    With ``n_draws=None`` until every quantity reaches ``ess_target`` effective draws
    (:func:`~bnmfzoo.diagnostics.calibration.run_to_ess`, 200 to 25,600 steps); else
    ``n_draws`` draws, one every ``thin`` steps, as arrays with a leading draw axis.

    >>> it = iter(range(100))
    >>> chain_draws(lambda: {"x": next(it)}, burn=2, n_draws=3, thin=2)["x"]
    array([2., 4., 6.])
    """
    for _ in range(burn):
        step()
    if n_draws is None:
        return run_to_ess(step, ess_target=ess_target, min_draws=200, max_draws=25_600)
    draws = {}
    for i in range(n_draws * thin):
        value = step()
        if i % thin == 0:
            for name, v in value.items():
                draws.setdefault(name, []).append(np.array(v, dtype=float))
    return {name: np.array(v) for name, v in draws.items()}
