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
(:mod:`bnmfzoo.inference.binary._reference_symmetric`). For a product reference
``log q(t[x]) = c + sum_k C[k, t(k)]``, with the ``K x K`` matrix ``C[k, j]`` = the log
density of the reference's component ``k`` at the state's component ``j``
(:func:`component_log_q`); a copula reference is evaluated on each relabelling.
``K! <= 120`` (:data:`MAX_ORBIT_COPIES`).

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
           "relabelled", "MAX_ORBIT_COPIES", "orbit_permutations"]

#: the most label copies the orbit draw sums over (K = 5): for a product reference one draw
#: sums ``K!`` entries of a ``K x K`` matrix, a few microseconds at 120
MAX_ORBIT_COPIES = 120


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

    Gaussian states (``A``, ``Wt``) and count states (dicts with ``A``, ``W``); the arrays are
    new, the rest is shared (enough for ``log_q``).
    """
    p = np.asarray(perm, np.int64)
    if isinstance(s, dict):
        return {**s, "A": np.ascontiguousarray(s["A"][:, p]),
                "W": np.ascontiguousarray(s["W"][p])}
    if hasattr(s, "Wt"):
        from dataclasses import replace

        return replace(s, A=np.ascontiguousarray(s.A[:, p]), Wt=np.ascontiguousarray(s.Wt[:, p]))
    raise TypeError(f"cannot relabel a state of type {type(s).__name__}")


def relabel_state(s, perm):
    """Relabel ``s`` in place (``A[:, perm]``, ``W[perm]``); ``A W`` and what it sets stay."""
    p = np.asarray(perm, np.int64)
    if isinstance(s, dict):
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
    (``muA, sA, muW, sW``, Gaussian states) or Gammas (``aA, bA, aW, bW``, count states).
    ``None`` for any other reference (a copula). ``log q(relabelled(s, t)) - log q(s)`` is
    ``sum_k C[k, t(k)] - sum_k C[k, k]``. Compiled.
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
    return None


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
def _perm_sums(C, perms):
    """``sum_k C[k, perms[p, k]]`` for every permutation ``p``."""
    out = np.zeros(perms.shape[0])
    for p in range(perms.shape[0]):
        for k in range(perms.shape[1]):
            out[p] += C[k, perms[p, k]]
    return out


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

    Wraps the adapter of an exponential-Gaussian, Poisson or negative-binomial family
    (:func:`bnmfzoo.inference.reference_path.reference_adapter`): ``sweep`` puts the orbit
    draws around the wrapped sweep, ``log_target`` and ``log_target_batch`` are the mixture's
    (read by :class:`~bnmfzoo.inference.reference_path.AdapterTargetPath`), everything else is
    the wrapped adapter's. ``symmetric`` and ``label_copies = 1`` tell the route that the path
    holds every copy. ``K! <= MAX_ORBIT_COPIES``.
    """

    symmetric = True
    label_copies = 1

    def __init__(self, base):
        self.base = base
        self.perms = orbit_permutations(int(base.K if hasattr(base, "K")
                                            else base.problem.rank))

    def __getattr__(self, name):
        try:  # an instance being unpickled or copied has no base yet
            base = self.__dict__["base"]
        except KeyError:
            raise AttributeError(name) from None
        return getattr(base, name)

    def orbit_logits(self, q, s):
        """``log q(t[s])`` over the permutations ``t`` (``perms``), up to one constant."""
        C = component_log_q(q, s)
        if C is not None:
            return _perm_sums(C, self.perms)
        return np.array([self.base.log_q(q, relabelled(s, t)) for t in self.perms])

    def orbit_move(self, q, s, beta, rng):
        """The Gibbs draw over ``s``'s label orbit under ``pi_beta``, in place (``0 <= beta <= 1``).

        ``t`` with probability ``∝ q(t[s])^(1 - beta)``; ``s`` becomes ``t[s]``.
        """
        w = 1.0 - float(beta)
        if not 0.0 <= w <= 1.0:
            raise ValueError(f"beta must lie in [0, 1], got {beta!r}")
        t = self.perms[orbit_draw(w * self.orbit_logits(q, s) if w > 0.0
                                  else np.zeros(self.perms.shape[0]), rng)]
        if not np.array_equal(t, self.perms[0]):
            relabel_state(s, t)

    def sweep(self, q, s, beta, rng):
        """The wrapped adapter's sweep of ``pi_beta`` between two draws over the label orbit.

        The first draw makes ``s`` a draw of ``pi_beta`` within its orbit whatever
        temperature it came from (module docstring), so the sweep after it starts in place.
        """
        self.orbit_move(q, s, beta, rng)
        self.base.sweep(q, s, beta, rng)
        self.orbit_move(q, s, beta, rng)

    def _terms(self, q, s):
        """``(S, c)``: ``log q(t[s]) = c + S[t]`` over the permutations, ``c`` exact."""
        S = self.orbit_logits(q, s)
        return S, self.base.log_q(q, s) - S[0]

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
        S, c = self._terms(q, s)
        return (float(logsumexp((1.0 - b) * S) - logsumexp(S)) - b * c
                + b * self.base.log_p0(s) + self._data(s)(b))

    def log_target_batch(self, q, states):
        """``b -> [log_target(q, s, b) for s in states]`` while the states are unchanged."""
        terms = [self._terms(q, s) for s in states]
        S = np.array([t[0] for t in terms])
        c = np.array([t[1] for t in terms])
        p0 = np.array([self.base.log_p0(s) for s in states])
        if callable(getattr(self.base, "log_data_batch", None)):
            data = self.base.log_data_batch(states)
        else:
            ll = np.array([self.base.loglik(s) for s in states])

            def data(b):
                return b * ll
        lse = logsumexp(S, axis=1)

        def at(beta):
            b = float(beta)
            if b == 0.0:
                return np.zeros(len(states))
            return (logsumexp((1.0 - b) * S, axis=1) - lse - b * c + b * p0
                    + np.asarray(data(b), float))

        return at

    def __repr__(self):
        return f"LabelOrbitAdapter({self.base!r}, {math.factorial(self.perms.shape[1])} copies)"
