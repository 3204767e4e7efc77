"""A per-label reference symmetrized over the label copies (Beta-Dir; numeric core, no PyMC).

The product reference of :mod:`bnmfzoo.inference.binary._reference` sits on one of the ``K!``
label copies of a mode. When the rank's components are not told apart, the copies overlap: the
posterior reaches the other copies continuously, the path's particles and the tempering's
``b = 1`` replica drift onto them, and the per-mode total ``log K! + log Z_copy`` over-counts
(the route says so: :class:`~bnmfzoo.inference._mass_verdict.CopiesOverlap`). Its reference
is here replaced by the mixture over the copies,

``q_sym(Z) = (1 / K!) sum_s q(s[Z])``,

``s`` running over the permutations of the labels (``s[Z]_e = s(z_e)``). ``q_sym`` gives every
copy the same weight, so the path

``pi_b(Z) ∝ q_sym(Z)^(1 - b) p(V, Z)^b``

is invariant under relabelling at every ``b`` (for a collapsed joint that is), and the SMC's
``log Z`` along it estimates ``log sum_Z p0 p(V, Z)`` over the region the particles reach,
**every copy included**: the mode's total whether its copies are apart or overlap, with no
``log K!`` added (``label_copies = 1``). This is the symmetrized reference of variational-
reference tempering (Surjanovic et al. 2022) for a posterior with a known symmetry group.

**The sweep** stays an exact single-label Gibbs sweep. ``q_sym`` does not factor over labels,
but as a function of one label ``z_e`` with the others fixed it is

``q_sym(z_e = k | rest) ∝ sum_s exp(S_s - log q_e(s(z_e^old)) + log q_e(s(k)))``,

with ``S_s = sum_e' log q_e'(s(z_e'))`` kept for every permutation and updated after each
label moves (``K!`` additions). Entry ``e``'s conditional is Eq. 25 of Lumbreras et al. (2020)
raised to ``b`` times that sum raised to ``1 - b``, renormalized: ``O(K K!)`` per label against
``O(K)`` for the product reference (``K = 4``: 24 permutations). The sums are recomputed from
the labels at the start of each sweep, so rounding does not accumulate.

References
----------
Lumbreras, A., Filstroff, L. & Févotte, C. (2020). Bayesian mean-parameterized nonnegative
binary matrix factorization. Data Mining and Knowledge Discovery 34, 1898-1935.
Surjanovic, N., Syed, S., Bouchard-Cote, A. & Campbell, T. (2022). Parallel tempering with a
variational reference. NeurIPS 35.
"""

import itertools
import math

import numba
import numpy as np
from scipy.special import logsumexp

from bnmfzoo.inference.binary._core import BetaDirChain, _column_ratios, _move_label
from bnmfzoo.inference.binary._reference import BetaDirReference, draw_from_log_weights

__all__ = ["MAX_COPIES", "label_permutations", "betadir_symmetric_sweep",
           "BetaDirSymmetricReference"]

#: the most label permutations the symmetrized reference sums over (``K <= 4``): its sweep
#: costs ``O(K K!)`` per label
MAX_COPIES = 24


def label_permutations(K, most=MAX_COPIES):
    """Every permutation of ``K`` labels, ``(K!, K)`` int64 (the identity first); ``K! <= most``.

    Examples
    --------
    >>> label_permutations(2).tolist()
    [[0, 1], [1, 0]]
    """
    if not (isinstance(K, (int, np.integer)) and 1 <= K and math.factorial(K) <= most):
        raise ValueError(f"K must be an integer with 1 <= K and K! <= {most}, got {K!r}")
    return np.array(list(itertools.permutations(range(int(K)))), dtype=np.int64)


@numba.njit(cache=True)
def _copy_sums(z, log_q, perms):
    """``S[s] = sum_e log q_e(perms[s, z_e])`` for every permutation ``s``."""
    P = perms.shape[0]
    S = np.zeros(P)
    for i in range(z.shape[0]):
        for p in range(P):
            S[p] += log_q[i, perms[p, z[i]]]
    return S


@numba.njit(cache=True)
def betadir_symmetric_sweep(rows, cols, v, z, L, C1, C0, g, a, b, u, beta, log_q, perms):
    """One systematic collapsed sweep of ``q_sym^(1 - beta) p(V, Z)^beta``, in place.

    As :func:`~bnmfzoo.inference.binary._reference.betadir_reference_sweep`, with the
    reference ``q`` replaced by its mixture over the label permutations ``perms`` (module
    docstring). ``log_q`` is ``(n_entries, K)``, finite; ``perms`` ``(P, K)``.

    Raises
    ------
    ValueError
        When ``beta`` is outside [0, 1] or an entry's unnormalized conditional is not finite.
    """
    K = C1.shape[1]
    P = perms.shape[0]
    if not (0.0 <= beta <= 1.0):
        raise ValueError("beta must lie in [0, 1]")
    S = _copy_sums(z, log_q, perms)
    r1, r0 = _column_ratios(C1, C0, a, b)
    lw = np.empty(K)
    cum = np.empty(K)
    m = np.empty(P)
    w = np.empty(P)
    qi = np.empty(K)
    w_ref = 1.0 - beta
    for i in range(rows.shape[0]):
        f = rows[i]
        n = cols[i]
        old = z[i]
        _move_label(f, n, old, v[i], -1.0, L, C1, C0, a, b, r1, r0)
        mtop = -np.inf
        for p in range(P):
            m[p] = S[p] - log_q[i, perms[p, old]]
            if m[p] > mtop:
                mtop = m[p]
        if not math.isfinite(mtop):
            raise ValueError("the reference's log q is not finite")
        for p in range(P):  # P + K exponentials per label, not K P
            w[p] = math.exp(m[p] - mtop)
        for kk in range(K):
            qi[kk] = math.exp(log_q[i, kk])
        r = r1 if v[i] else r0
        for kk in range(K):
            s = 0.0
            for p in range(P):
                s += w[p] * qi[perms[p, kk]]
            t = beta * math.log((g[kk] + L[f, kk]) * r[n, kk]) + w_ref * (mtop + math.log(s))
            if not math.isfinite(t):
                raise ValueError("the reference's log q is not finite")
            lw[kk] = t
        k = draw_from_log_weights(lw, cum, K, u[i])
        z[i] = k
        for p in range(P):
            S[p] = m[p] + log_q[i, perms[p, k]]
        _move_label(f, n, k, v[i], 1.0, L, C1, C0, a, b, r1, r0)


class BetaDirSymmetricReference(BetaDirReference):
    """Reference-path adapter of the collapsed Beta-Dir chains with ``q`` symmetrized.

    The interface of :class:`~bnmfzoo.inference.binary._reference.BetaDirReference`
    (``fit`` is its, unchanged) with ``draw_q``, ``log_q`` and ``sweep`` those of ``q_sym``
    (module docstring). ``label_copies = 1``: a mode's ``log Z`` along this path already holds
    every label copy, so no ``log K!`` is added to the total.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.inference.binary._core import BetaDirChain, observed_entries
    >>> X = np.array([[1, 0, 1], [0, 1, 1]])
    >>> r, c, v = observed_entries(X, np.ones(X.shape, bool))
    >>> one = np.ones(2)
    >>> ad = BetaDirSymmetricReference(BetaDirChain(r, c, v, 2, 3, one, one, one,
    ...                                             np.random.default_rng(0)))
    >>> q = ad.fit(np.zeros((10, 6), np.int8))
    >>> s = ad.draw_q(q, np.random.default_rng(1))
    >>> bool(np.isclose(ad.log_q(q, s), ad.log_q(q, ad.relabelled(s, [1, 0]))))
    True
    """

    name = "beta_dir"
    symmetric = True
    label_copies = 1

    def __init__(self, template, inner_sweeps=1, **kw):
        super().__init__(template, inner_sweeps, **kw)
        self.perms = label_permutations(self.K)

    def relabelled(self, s, perm):
        """A copy of chain ``s`` with label ``k`` renamed ``perm[k]`` (another label copy)."""
        t = self.t
        z = np.asarray(perm, np.int64)[np.asarray(s.z, np.int64)]
        return BetaDirChain(t.rows, t.cols, t.v, t.D, t.N, t.g, t.a, t.b, None, z=z)

    def draw_q(self, q, rng):
        """An exact draw of ``q_sym``: a draw of ``q`` with its labels permuted at random."""
        s = super().draw_q(q, rng)
        return self.relabelled(s, self.perms[rng.integers(self.perms.shape[0])])

    def log_q(self, q, s):
        """``log q_sym(Z)`` of a chain's labels."""
        z = np.asarray(s.z, np.int64)
        per = q["log_q"][np.arange(self.n)[:, None], self.perms[:, z].T].sum(0)
        return float(logsumexp(per) - math.log(self.perms.shape[0]))

    def sweep(self, q, s, beta, rng):
        """``inner_sweeps`` sweeps of ``q_sym^(1 - beta) p(V, Z)^beta``, in place."""
        b = float(beta)
        if not 0.0 < b <= 1.0:
            raise ValueError(f"beta must lie in (0, 1], got {beta!r}")
        for _ in range(self.inner):
            u = rng.random(self.n)
            betadir_symmetric_sweep(s.rows, s.cols, s.v, s.z, s.L, s.C1, s.C0, s.g, s.a, s.b,
                                    u, b, q["log_q"], self.perms)
