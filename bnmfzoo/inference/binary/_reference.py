"""A per-label reference for the collapsed Beta-Dir chains (numeric core, no PyMC).

The per-mode evidence of :mod:`bnmfzoo.inference.reference_path` anneals from a reference
``q`` fitted to a mode to the posterior along ``q^(1 - b) (p0 L)^b``. For the collapsed Beta-Dir
model (Lumbreras et al. 2020, Eqs. 22-25) the state is the labels ``Z`` (one per observed
entry), the "prior" ``p0`` is the uniform distribution over labellings (what the SMC from the
prior starts from: :func:`bnmfzoo.inference.smc_masses.family_of_model`) and the tempered term
is the whole collapsed log joint ``log p(V, Z)``. The reference is a product of categoricals,

``q(Z) = prod_e q_e(z_e)``,

fitted from the mode's aligned plain-chain label draws: ``q_e(k) = (n_ek + c) / (n + K c)``
with ``n_ek`` the number of the ``n`` draws giving entry ``e`` label ``k`` after the draw's
columns were permuted to the mode's representative, and a pseudo-count ``c`` (:data:`PSEUDO`)
so that no ``q_e(k)`` is zero. ``q`` is not widened further (the continuous references double
the draws' variance): a product of the per-entry marginals already drops every correlation
between labels, and on the Catalan parliament (K = 2) flattening it to ``q^(1/2)`` tripled the
temperatures a run needs (115 against 41) for the same log Z. Along the path

``pi_b(Z) ∝ q(Z)^(1 - b) p(V, Z)^b``

the conditional of one label is closed form: Eq. 25's ``p(z_e = k | rest)`` raised to ``b``,
times ``q_e(k)^(1 - b)``, renormalized (:func:`betadir_reference_sweep`; the other factors of
``q`` do not involve ``z_e``). At ``b = 0`` exact draws are independent categoricals.

With ``log p0 = -n log K`` (``n`` observed entries) the SMC's log Z along this path,
``log sum_Z q(Z) exp(log p0 + log p(V, Z) - log q(Z))``, is ``log p(V) - n log K`` restricted
to the mode: the same quantity as the SMC from uniform labels, so the two totals compare
directly. The collapsed joint is invariant under relabelling when the hyperparameters are the
same for every component, so each mode has ``K!`` copies, as in the continuous families.

References
----------
Lumbreras, A., Filstroff, L. & Févotte, C. (2020). Bayesian mean-parameterized nonnegative
binary matrix factorization. Data Mining and Knowledge Discovery 34, 1898-1935.
Surjanovic, N., Syed, S., Bouchard-Cote, A. & Campbell, T. (2022). Parallel tempering with a
variational reference. NeurIPS 35.
"""

import math

import numba
import numpy as np

from bnmfzoo.inference.binary._core import BetaDirChain, _categorical, _column_ratios, _move_label

__all__ = ["PSEUDO", "betadir_reference_sweep", "BetaDirReference", "draw_from_log_weights"]

#: pseudo-count added to each label's count in the reference fit
PSEUDO = 0.5


@numba.njit(cache=True)
def draw_from_log_weights(lw, cum, K, u):
    """Index ``k < K`` drawn with probability ``exp(lw[k])`` normalized, from one uniform ``u``.

    ``lw`` finite; ``cum`` is scratch of length ``K`` (inverse CDF after subtracting the
    largest ``lw``).
    """
    top = lw[0]
    for kk in range(1, K):
        if lw[kk] > top:
            top = lw[kk]
    total = 0.0
    for kk in range(K):
        total += math.exp(lw[kk] - top)
        cum[kk] = total
    return _categorical(cum, K, u * total)


@numba.njit(cache=True)
def betadir_reference_sweep(rows, cols, v, z, L, C1, C0, g, a, b, u, beta, log_q):
    """One systematic collapsed sweep of ``q^(1 - beta) p(V, Z)^beta``, in place.

    Entry ``i``'s label is drawn from ``p(z_i = k | rest)^beta q_i(k)^(1 - beta)``
    renormalized, with ``p(z_i = k | rest)`` Eq. 25 of Lumbreras et al. (2020), computed in
    log space (the largest term subtracted). At ``beta = 0`` the labels are independent draws
    of ``q``; at ``beta = 1`` it is Eq. 25 (through logarithms, so not bit-identical to
    :func:`~bnmfzoo.inference.binary._core.betadir_sweep`).

    Parameters
    ----------
    rows, cols, v, z, L, C1, C0, g, a, b, u : numpy.ndarray
        As :func:`~bnmfzoo.inference.binary._core.betadir_sweep` (``z`` and the counters are
        updated).
    beta : float
        Inverse temperature in [0, 1].
    log_q : numpy.ndarray
        ``(n_entries, K)`` log probabilities of the reference, finite.

    Raises
    ------
    ValueError
        When ``beta`` is outside [0, 1] or an entry's unnormalized conditional is not finite
        (a non-finite ``log_q``).
    """
    K = C1.shape[1]
    if not (0.0 <= beta <= 1.0):
        raise ValueError("beta must lie in [0, 1]")
    r1, r0 = _column_ratios(C1, C0, a, b)
    lw = np.empty(K)
    cum = np.empty(K)
    w_ref = 1.0 - beta
    for i in range(rows.shape[0]):
        f = rows[i]
        n = cols[i]
        _move_label(f, n, z[i], v[i], -1.0, L, C1, C0, a, b, r1, r0)
        r = r1 if v[i] else r0
        for kk in range(K):
            t = beta * math.log((g[kk] + L[f, kk]) * r[n, kk]) + w_ref * log_q[i, kk]
            if not math.isfinite(t):
                raise ValueError("the reference's log q is not finite")
            lw[kk] = t
        k = draw_from_log_weights(lw, cum, K, u[i])
        z[i] = k
        _move_label(f, n, k, v[i], 1.0, L, C1, C0, a, b, r1, r0)


class BetaDirReference:
    """Reference-path adapter of the collapsed Beta-Dir chains (a product of categoricals).

    The interface :class:`bnmfzoo.inference.reference_path.ReferencePath` drives: ``draws``
    (a state's labels in the mode's column order), ``fit``, ``draw_q``, ``log_q``, ``log_p0``,
    ``loglik``, ``copy``, ``sweep``.

    Parameters
    ----------
    template : BetaDirChain
        Any chain of the model (its data and hyperparameters are used, not its labels).
    inner_sweeps : int
        Sweeps per move.
    pseudo : float
        Pseudo-count of the fit (> 0).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.inference.binary._core import BetaDirChain, observed_entries
    >>> X = np.array([[1, 0, 1], [0, 1, 1]])
    >>> r, c, v = observed_entries(X, np.ones(X.shape, bool))
    >>> one = np.ones(2)
    >>> ad = BetaDirReference(BetaDirChain(r, c, v, 2, 3, one, one, one,
    ...                                    np.random.default_rng(0)))
    >>> q = ad.fit(np.zeros((10, 6), np.int8), 1.0)
    >>> np.round(np.exp(q["log_q"][0]), 3).tolist()   # (10 + 0.5) / 11, 0.5 / 11
    [0.955, 0.045]
    """

    name = "beta_dir"

    def __init__(self, template, inner_sweeps=1, pseudo=PSEUDO):
        if not isinstance(template, BetaDirChain):
            raise TypeError(f"template must be a BetaDirChain, got {type(template).__name__}")
        if not (isinstance(pseudo, (int, float)) and 0.0 < pseudo < math.inf):
            raise ValueError(f"pseudo must be a positive number, got {pseudo!r}")
        self.t, self.inner, self.pseudo = template, int(inner_sweeps), float(pseudo)
        self.K = template.K
        self.n = int(template.rows.shape[0])
        self.dimension = self.n
        self._log_p0 = -self.n * math.log(self.K)

    def draws(self, state, perm):
        """``state``'s labels in the representative's column order.

        Label ``j`` of the result is the representative's column ``j``; ``perm[j]`` is the
        state's column matched to it.
        """
        inv = np.empty(self.K, np.int8)
        inv[np.asarray(perm)] = np.arange(self.K)
        return inv[state.z]

    def fit(self, draws, widen=1.0):
        """The reference ``{"log_q": (n, K), "cum": (n, K)}`` from aligned label draws.

        ``widen`` (the continuous references' variance inflation) is accepted for the
        interface and not used: see the module docstring.
        """
        d = np.asarray(draws)
        if d.ndim != 2 or d.shape[1] != self.n or d.shape[0] < 1:
            raise ValueError(f"draws must be (n_draws, {self.n}) labels, got shape {d.shape}")
        if d.min() < 0 or d.max() >= self.K:
            raise ValueError(f"draws must hold labels in 0..{self.K - 1}")
        counts = np.stack([(d == k).sum(0) for k in range(self.K)], axis=1).astype(float)
        lq = np.log(counts + self.pseudo) - math.log(d.shape[0] + self.K * self.pseudo)
        cum = np.cumsum(np.exp(lq), axis=1)
        return {"log_q": np.ascontiguousarray(lq), "cum": cum}

    def draw_q(self, q, rng):
        """An exact draw of ``q``: independent categorical labels, as a chain."""
        u = rng.random(self.n) * q["cum"][:, -1]
        z = np.minimum((q["cum"] <= u[:, None]).sum(1), self.K - 1).astype(np.int64)
        t = self.t
        return BetaDirChain(t.rows, t.cols, t.v, t.D, t.N, t.g, t.a, t.b, None, z=z)

    def log_q(self, q, s):
        """``log q(Z)`` of a chain's labels."""
        return float(q["log_q"][np.arange(self.n), s.z].sum())

    def log_p0(self, s):
        """``-n log K``: uniform labels, the start of the SMC from the prior."""
        return self._log_p0

    def loglik(self, s):
        """The collapsed ``log p(V, Z)``."""
        return float(s.log_joint())

    def copy(self, s):
        """An independent copy of the chain."""
        return s.copy()

    def sweep(self, q, s, beta, rng):
        """``inner_sweeps`` sweeps of ``q^(1 - beta) p(V, Z)^beta``, in place."""
        b = float(beta)
        if not 0.0 < b <= 1.0:
            raise ValueError(f"beta must lie in (0, 1], got {beta!r}")
        for _ in range(self.inner):
            u = rng.random(self.n)
            betadir_reference_sweep(s.rows, s.cols, s.v, s.z, s.L, s.C1, s.C0, s.g, s.a, s.b,
                                    u, b, q["log_q"])
