"""The product reference's path made to hold every label copy: its mixture over the label orbit.

The per-mode estimators (:mod:`bnmfzoo.inference.reference_path`) run an SMC and a tempering
along ``pi_b ∝ q^(1 - b) p0^b F_b`` from a reference ``q`` fitted to one label copy of a mode.
The prior ``p0`` and the data term ``F_b`` (a power of the likelihood, or the negative
binomial's Gamma-mixed power) are the same on every relabelling ``t[x]`` of a state ``x`` (the
components permuted: ``A[:, t]``, ``W[t]``); ``q`` is not. A sampler that stays on one copy
estimates one copy's evidence and the route adds ``log K!``; when the copies overlap (a rank
above what the data tell apart) the particles reach the other copies partly and neither count
is right (:class:`~bnmfzoo.inference._mass_verdict.CopiesOverlap`).

This module runs the estimators along the **mixture of the path over the label orbit**,

``pi~_b(x) = (1 / K!) sum_t pi_b(t[x]) ∝ (1 / K!) sum_t q(t[x])^(1 - b) p0(x)^b F_b(x)``,

which every relabelling leaves unchanged. Its normalizer is the product path's at every ``b``
(``p0 F_b`` is invariant and relabelling keeps Lebesgue measure), so it starts at 1 (``pi~_0``
is ``q`` averaged over the copies) and ends at the evidence of **every** copy, ``int p0 L``: no
``log K!`` is added (``label_copies = 1``). The SMC's weights and the tempering's swaps and
stepping stones read its log target

``log pi~_b(x) - log pi~_0(x) = logsumexp_t (1 - b) log q(t[x]) - logsumexp_t log q(t[x])
+ b log p0(x) + log F_b(x)``,

which holds the other copies' share in closed form, wherever the particle sits. The moves: the
**Gibbs draw over the orbit** (``t`` with probability ``∝ q(t[x])^(1 - b)``, exact for
``pi_b`` restricted to ``x``'s orbit), the family's exact sweep of ``pi_b``, and the orbit draw
again. A state whose orbit is distributed as ``pi~_b``'s (what the weights make it) becomes an
exact draw of ``pi_b`` after the first orbit draw, which the sweep then keeps; ``pi_b`` and
``pi~_b`` give the orbits the same law, and every quantity the estimators read is a function
of the orbit. At ``b = 0`` the path is ``q`` up to relabelling, so the start draws are ``q``'s.

This is the route of the exponential-Gaussian, Poisson and negative-binomial families, whose
references (truncated normals, Gammas, a Gaussian copula) are conjugate to their sweeps only as
products, so their path cannot be symmetrized inside the sweep as the Beta-Dir one is
(:mod:`bnmfzoo.inference.binary._reference_symmetric`, whose sweep costs ``O(K K!)`` per label
and stops at ``K = 4``); above that, Beta-Dir's product of per-entry categoricals takes this
route too. For a product reference
``log q(t[x]) = c + sum_k C[k, t(k)]``, with the ``K x K`` matrix ``C[k, j]`` = the log
density of the reference's component ``k`` at the state's component ``j``
(:func:`component_log_q`). The sum over the ``K!`` relabellings of ``exp(w sum_k C[k, t(k)])``
is the permanent of ``exp(w C)``: it and an exact draw of ``t`` come from a recursion over the
subsets of components (:func:`log_pairing_sum`, :func:`pairing_draw`; ``2^K K`` terms, not
``K! K``, all in logs, so no cancellation), for ``K <= 8`` (:data:`MAX_ORBIT_RANK`). A copula
reference is evaluated on each relabelling, for ``K! <= 120`` (:data:`MAX_ORBIT_COPIES`); above
that the wrapper offers no copula and the product reference runs.

Examples
--------
>>> import numpy as np
>>> w = np.array([0.0, 0.0])
>>> int(orbit_draw(w, np.random.default_rng(0)) in (0, 1))
1
"""

import math

import numba
import numpy as np
from scipy.special import logsumexp

from bnmfzoo.inference.binary._reference_symmetric import label_permutations

__all__ = ["LabelOrbitAdapter", "component_log_q", "orbit_draw", "relabel_state",
           "relabelled", "MAX_ORBIT_COPIES", "MAX_ORBIT_RANK", "orbit_permutations",
           "log_pairing_sum", "pairing_draw"]

#: the most label copies a copula reference's orbit is enumerated over (K = 5: 120 evaluations
#: of its log density per draw)
MAX_ORBIT_COPIES = 120
#: the highest rank of a product reference's orbit (the subset recursion: 2^8 x 8 terms, a few
#: microseconds per draw)
MAX_ORBIT_RANK = 8


def orbit_permutations(K):
    """Every permutation of ``K`` labels, ``(K!, K)`` int64, the identity first.

    Examples
    --------
    >>> orbit_permutations(3).shape
    (6, 3)
    """
    return label_permutations(K, most=MAX_ORBIT_COPIES)


def relabelled(s, perm):
    """A shallow relabelling of state ``s``: component ``k`` of the result is ``s``'s ``perm[k]``.

    Gaussian states (``A``, ``Wt``), count states (dicts with ``A``, ``W``) and Beta-Dir chains
    (labels ``z``: an entry labelled ``perm[k]`` is labelled ``k``); the arrays are new, the
    rest is shared (enough for ``log_q``).
    """
    p = np.asarray(perm, np.int64)
    if hasattr(s, "z") and hasattr(s, "C1"):
        new = s.copy()
        relabel_state(new, p)
        return new
    if isinstance(s, dict):
        return {**s, "A": np.ascontiguousarray(s["A"][:, p]),
                "W": np.ascontiguousarray(s["W"][p])}
    if hasattr(s, "Wt"):
        from dataclasses import replace

        return replace(s, A=np.ascontiguousarray(s.A[:, p]), Wt=np.ascontiguousarray(s.Wt[:, p]))
    raise TypeError(f"cannot relabel a state of type {type(s).__name__}")


def relabel_state(s, perm):
    """Relabel ``s`` in place (``A[:, perm]``, ``W[perm]``); ``A W`` and what it sets stay.

    A Beta-Dir chain's labels and its counters ``L``, ``C1``, ``C0`` are relabelled together, so
    its collapsed ``log p(V, Z)`` stays (for labels whose priors are alike).
    """
    p = np.asarray(perm, np.int64)
    if hasattr(s, "z") and hasattr(s, "C1"):
        s.z[:] = np.argsort(p)[s.z]  # the inverse permutation
        for name in ("L", "C1", "C0"):
            arr = getattr(s, name)
            arr[:, :] = arr[:, p]
    elif isinstance(s, dict):
        s["A"] = np.ascontiguousarray(s["A"][:, p])
        s["W"] = np.ascontiguousarray(s["W"][p])
    elif hasattr(s, "Wt"):
        s.A[:, :] = s.A[:, p]
        s.Wt[:, :] = s.Wt[:, p]
    else:
        raise TypeError(f"cannot relabel a state of type {type(s).__name__}")


def component_log_q(q, s):
    """``C[k, j]``: the log density of reference component ``k`` at ``s``'s component ``j``.

    Up to terms that do not depend on the pairing, for a product reference: truncated normals
    (``muA, sA, muW, sW``, Gaussian states), Gammas (``aA, bA, aW, bW``, count states) or
    per-entry categoricals (``log_q``, Beta-Dir chains: ``C[k, j]`` sums ``log q_e(k)`` over
    the entries labelled ``j``). ``None`` for any other reference (a copula).
    ``log q(relabelled(s, t)) - log q(s)`` is ``sum_k C[k, t(k)] - sum_k C[k, k]``. Compiled.
    """
    if "copula" in q:
        return None
    f = np.ascontiguousarray
    if "muA" in q:
        return _pairing_normal(f(s.A, float), f(s.Wt, float), f(q["muA"], float),
                               f(q["sA"], float), f(q["muW"], float), f(q["sW"], float))
    if "aA" in q:
        return _pairing_gamma(f(s["A"], float), f(s["W"], float), f(q["aA"], float),
                              f(q["bA"], float), f(q["aW"], float), f(q["bW"], float))
    if "log_q" in q:
        return _pairing_labels(f(s.z, np.int64), f(q["log_q"], float))
    return None


@numba.njit(cache=True)
def _pairing_labels(z, log_q):
    """:func:`component_log_q` of per-entry categoricals: ``log q_e(k)`` summed over ``z_e = j``."""
    K = log_q.shape[1]
    C = np.zeros((K, K))
    for e in range(z.shape[0]):
        j = z[e]
        for k in range(K):
            C[k, j] += log_q[e, k]
    return C


@numba.njit(cache=True)
def _pairing_normal(A, Wt, muA, sA, muW, sW):
    """:func:`component_log_q` of truncated normals: ``-z^2 / 2`` summed per pairing."""
    D, K = A.shape
    C = np.zeros((K, K))
    for i in range(D):
        for k in range(K):
            for j in range(K):
                z = (A[i, j] - muA[i, k]) / sA[i, k]
                C[k, j] -= 0.5 * z * z
    for n in range(Wt.shape[0]):
        for k in range(K):
            for j in range(K):
                z = (Wt[n, j] - muW[k, n]) / sW[k, n]
                C[k, j] -= 0.5 * z * z
    return C


@numba.njit(cache=True)
def _pairing_gamma(A, W, aA, bA, aW, bW):
    """:func:`component_log_q` of Gammas: ``(a - 1) log x - b x`` summed per pairing."""
    D, K = A.shape
    C = np.zeros((K, K))
    for i in range(D):
        for j in range(K):
            x = A[i, j]
            lx = math.log(x)
            for k in range(K):
                C[k, j] += (aA[i, k] - 1.0) * lx - bA[i, k] * x
    for n in range(W.shape[1]):
        for j in range(K):
            x = W[j, n]
            lx = math.log(x)
            for k in range(K):
                C[k, j] += (aW[k, n] - 1.0) * lx - bW[k, n] * x
    return C


@numba.njit(cache=True)
def _subset_log_sums(C, w):
    """``f[S]``: the subset recursion's log sums (``f[2^K - 1]`` the log permanent of ``exp(w C)``).

    ``f[S]`` is the log of the sum over the bijections ``t`` of rows ``0 .. |S| - 1`` onto the
    columns in the bit set ``S`` of ``exp(w sum_r C[r, t(r)])``:
    ``f[S] = logsumexp_{j in S} (w C[|S| - 1, j] + f[S - j])``.
    """
    K = C.shape[0]
    n = 1 << K
    f = np.empty(n)
    size = np.zeros(n, np.int64)
    f[0] = 0.0
    for S in range(1, n):
        size[S] = size[S >> 1] + (S & 1)
        r = size[S] - 1
        m = -np.inf
        for j in range(K):
            if (S >> j) & 1:
                m = max(m, w * C[r, j] + f[S ^ (1 << j)])
        total = 0.0
        for j in range(K):
            if (S >> j) & 1:
                total += math.exp(w * C[r, j] + f[S ^ (1 << j)] - m)
        f[S] = m + math.log(total)
    return f


@numba.njit(cache=True)
def _log_pairing_sums(Cs, w):
    """:func:`log_pairing_sum` of each ``Cs[i]``."""
    out = np.empty(Cs.shape[0])
    full = (1 << Cs.shape[1]) - 1
    for i in range(Cs.shape[0]):
        out[i] = _subset_log_sums(Cs[i], w)[full]
    return out


@numba.njit(cache=True)
def _pairing_draw(C, w, u):
    """A permutation ``t`` with probability ``∝ exp(w sum_r C[r, t(r)])``, from ``K`` uniforms.

    The rows last to first, row ``r`` taking column ``j`` of the columns left (``S``) with
    probability ``exp(w C[r, j] + f[S - j] - f[S])`` (:func:`_subset_log_sums`).
    """
    K = C.shape[0]
    f = _subset_log_sums(C, w)
    t = np.empty(K, np.int64)
    S = (1 << K) - 1
    for r in range(K - 1, -1, -1):
        x, last = u[r], -1
        for j in range(K):
            if (S >> j) & 1:
                last = j
                x -= math.exp(w * C[r, j] + f[S ^ (1 << j)] - f[S])
                if x < 0.0:
                    break
        t[r] = last
        S ^= 1 << last
    return t


def _finite_pairing(C):
    C = np.ascontiguousarray(C, dtype=float)
    if not np.isfinite(C).all():
        raise FloatingPointError("the reference's log density over the label copies is not "
                                 "finite")
    return C


def log_pairing_sum(C, w=1.0):
    """``log sum_t exp(w sum_k C[k, t(k)])`` over the permutations ``t`` of ``K <= 8`` labels.

    The log permanent of ``exp(w C)`` by the subset recursion (module docstring); refuses a
    non-finite ``C``. ``C`` may be a stack ``(n, K, K)``: one value each.

    Examples
    --------
    >>> round(log_pairing_sum(np.zeros((3, 3))), 6) == round(math.log(6), 6)
    True
    """
    C = _finite_pairing(C)
    if not 1 <= C.shape[-1] <= MAX_ORBIT_RANK:
        raise ValueError(f"the label orbit is summed for K <= {MAX_ORBIT_RANK}, "
                         f"got K = {C.shape[-1]}")
    if C.ndim == 3:
        return _log_pairing_sums(C, float(w))
    return float(_log_pairing_sums(C[None], float(w))[0])


def pairing_draw(C, w, rng):
    """A permutation ``t`` drawn with probability ``∝ exp(w sum_k C[k, t(k)])`` (exact).

    Examples
    --------
    >>> pairing_draw(np.array([[0.0, -50.0], [-50.0, 0.0]]), 1.0,
    ...              np.random.default_rng(0)).tolist()
    [0, 1]
    """
    C = _finite_pairing(C)
    return _pairing_draw(C, float(w), rng.random(C.shape[0]))


@numba.njit(cache=True)
def _categorical(logits, u):
    """Index of a draw ``∝ exp(logits)`` from the uniform ``u``; -1 if a logit is not finite."""
    m = -np.inf
    for v in logits:
        if not np.isfinite(v):
            return -1
        m = max(m, v)
    cum = np.empty(logits.size)
    total = 0.0
    for p in range(logits.size):
        total += math.exp(logits[p] - m)
        cum[p] = total
    x = u * total
    for p in range(logits.size):
        if x < cum[p]:
            return p
    return logits.size - 1


def orbit_draw(logits, rng):
    """Index of a draw from the categorical ``∝ exp(logits)``; refuses non-finite logits."""
    i = _categorical(np.ascontiguousarray(logits, dtype=float), rng.random())
    if i < 0:
        raise FloatingPointError("the reference's log density over the label copies is not "
                                 "finite")
    return int(i)


class LabelOrbitAdapter:
    """A reference-path adapter for the path's mixture over the label orbit (module docstring).

    Wraps the adapter of an exponential-Gaussian, Poisson or negative-binomial family, or of a
    Beta-Dir one above the symmetrized reference's ``K <= 4``
    (:func:`bnmfzoo.inference.reference_path.reference_adapter`): ``sweep`` puts the orbit
    draws around the wrapped sweep, ``log_target`` and ``log_target_batch`` are the mixture's
    (read by :class:`~bnmfzoo.inference.reference_path.AdapterTargetPath`), everything else is
    the wrapped adapter's. ``symmetric`` and ``label_copies = 1`` tell the route that the path
    holds every copy. ``K <= MAX_ORBIT_RANK``; a copula reference (``fit_copula``) only while
    ``K! <= MAX_ORBIT_COPIES``.
    """

    symmetric = True
    label_copies = 1

    def __init__(self, base):
        self.base = base
        K = int(base.K if hasattr(base, "K") else base.problem.rank)
        if not 1 <= K <= MAX_ORBIT_RANK:
            raise ValueError(f"the label orbit is summed for K <= {MAX_ORBIT_RANK}, got K = {K}")
        self.perms = (orbit_permutations(K) if math.factorial(K) <= MAX_ORBIT_COPIES
                      else None)  # a copula reference's relabellings

    def __getattr__(self, name):
        try:  # an instance being unpickled or copied has no base yet
            base = self.__dict__["base"]
        except KeyError:
            raise AttributeError(name) from None
        if name == "copula_widen" and self.__dict__.get("perms") is None:
            return ()  # no copula beyond MAX_ORBIT_COPIES relabellings
        return getattr(base, name)

    def orbit_logits(self, q, s):
        """``log q(t[s])`` over the permutations ``t`` (``perms``).

        Every relabelling evaluated: for any reference at ``K! <= MAX_ORBIT_COPIES``.
        """
        if self.perms is None:
            raise ValueError(f"the label orbit is enumerated for K! <= {MAX_ORBIT_COPIES}")
        return np.array([self.base.log_q(q, relabelled(s, t)) for t in self.perms])

    def orbit_move(self, q, s, beta, rng):
        """The Gibbs draw over ``s``'s label orbit under ``pi_beta``, in place (``0 <= beta <= 1``).

        ``t`` with probability ``∝ q(t[s])^(1 - beta)``; ``s`` becomes ``t[s]``.
        """
        w = 1.0 - float(beta)
        if not 0.0 <= w <= 1.0:
            raise ValueError(f"beta must lie in [0, 1], got {beta!r}")
        C = component_log_q(q, s)
        if C is not None:
            t = pairing_draw(C, w, rng)
        else:
            t = self.perms[orbit_draw(w * self.orbit_logits(q, s) if w > 0.0
                                      else np.zeros(self.perms.shape[0]), rng)]
        if not np.array_equal(t, np.arange(t.size)):
            relabel_state(s, t)

    def sweep(self, q, s, beta, rng):
        """The wrapped adapter's sweep of ``pi_beta`` between two draws over the label orbit.

        The first draw makes ``s`` a draw of ``pi_beta`` within its orbit whatever
        temperature it came from (module docstring), so the sweep after it starts in place.
        """
        self.orbit_move(q, s, beta, rng)
        self.base.sweep(q, s, beta, rng)
        self.orbit_move(q, s, beta, rng)

    def _orbit_sums(self, q, states):
        """``(L, first)``: ``L(w) = log sum_t exp(w S_t)`` per state, ``first`` the identity's.

        ``log q(t[s]) = c + S_t``, so ``c`` is ``log q(s) - first``.
        """
        Cs = [component_log_q(q, s) for s in states]
        if Cs and Cs[0] is not None:
            Cs = _finite_pairing(np.stack(Cs))
            return (lambda w: log_pairing_sum(Cs, w)), np.trace(Cs, axis1=1, axis2=2)
        S = np.array([self.orbit_logits(q, s) for s in states]).reshape(len(states), -1)
        return (lambda w: logsumexp(w * S, axis=1)), S[:, 0]

    def _data(self, s):
        """``b -> log F_b(s)``: the data term of the wrapped path (``b log L`` if geometric)."""
        if callable(getattr(self.base, "log_data", None)):
            return lambda b: self.base.log_data(s, b)
        ll = self.base.loglik(s)
        return lambda b: b * ll

    def log_target(self, q, s, beta):
        """``log pi_b(s) - log pi_0(s)`` of the path's orbit mixture (module docstring)."""
        b = float(beta)
        if b == 0.0:
            return 0.0
        L, first = self._orbit_sums(q, [s])
        c = self.base.log_q(q, s) - first[0]
        return (float(L(1.0 - b)[0] - L(1.0)[0]) - b * c
                + b * self.base.log_p0(s) + self._data(s)(b))

    def log_target_batch(self, q, states):
        """``b -> [log_target(q, s, b) for s in states]`` while the states are unchanged."""
        L, first = self._orbit_sums(q, states)
        c = np.array([self.base.log_q(q, s) for s in states]) - first
        p0 = np.array([self.base.log_p0(s) for s in states])
        if callable(getattr(self.base, "log_data_batch", None)):
            data = self.base.log_data_batch(states)
        else:
            ll = np.array([self.base.loglik(s) for s in states])

            def data(b):
                return b * ll
        lse = L(1.0)

        def at(beta):
            b = float(beta)
            if b == 0.0:
                return np.zeros(len(states))
            return (L(1.0 - b) - lse - b * c + b * p0 + np.asarray(data(b), float))

        return at

    def __repr__(self):
        K = int(self.base.K if hasattr(self.base, "K") else self.base.problem.rank)
        return f"LabelOrbitAdapter({self.base!r}, {math.factorial(K)} copies)"
