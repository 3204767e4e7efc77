"""The latent-source Gibbs sweep of Poisson NMF that Chib's estimator runs (numba).

Model: each signature (column of ``T``) on the simplex, ``T_k ~ Dirichlet(alpha_k)`` (one
number, or one per channel: Zito & Miller 2024's prior centred on a known signature), exposures
``V_kn ~ Gamma(a_V, b_V[n])`` (shape, rate), ``Y_dn ~ Poisson((T V)_dn)``; augmented by the
sources ``S_dkn``, the multinomial split of ``Y_dn`` over the signatures (Cemgil 2009's
augmentation; with columns of ``T`` summing to 1, ``V_kn`` is the expected number of mutations
of signature ``k`` in sample ``n`` and the scale of ``T`` is no longer a free direction). One
sweep draws ``S | T, V`` (cell by nonzero cell: :func:`_split`), then ``T_k | S``
(``Dirichlet(alpha_dk + s_dk)``; with the rows before ``fixed_rows`` held fixed, the other rows
share the remaining mass as ``Dirichlet(alpha_dk + s_dk)`` over them), then ``V_kn | S ~
Gamma(a_V + s_kn, b_V[n] + 1)``, and returns the source sums ``s_dk = sum_n S_dkn`` and
``s_kn = sum_d S_dkn``: the sufficient statistics of the full conditionals Chib's ordinates
average. With ``compressive=`` the exposures' rate of signature ``k`` gains ``a / mu_k`` and
``mu_k`` is drawn after the exposures from its inverse-gamma conditional (the compressive
prior of Zito & Miller 2024: :mod:`bnmfzoo.signatures.compressive`); without it, the draws are
those of the plain model, number for number. With ``shape=`` the compression shape ``a`` is
random too, ``a ~ Gamma(c0, d0)``, drawn with the exposures integrated out just before them
(:mod:`bnmfzoo.signatures._shape`); ``mu_k``'s prior then follows the current ``a``.

With ``nb=`` the likelihood is negative binomial, as a Gamma-Poisson mixture: ``Y_dn ~
Poisson(theta_dn (T V)_dn)``, ``theta_dn ~ Gamma(phi, phi)`` (mean 1, variance of the counts
``lam + lam^2 / phi``), one ``phi ~ Gamma(a_phi, b_phi)`` for the catalogue. The split is
unchanged (``theta_dn`` cancels from its proportions); the exposures' rate gains
``sum_d theta_dn T_dk`` in place of 1 (exact Gamma); the signatures' conditional is a Dirichlet
tilted by ``exp(-sum_d T_dk w_dk)``, ``w_dk = sum_n theta_dn V_kn``, drawn by an independence
Metropolis-Hastings step whose proposal is the normalized ``Gamma(alpha + s_dk, w_dk)``
(exactly the Dirichlet when every ``w_dk`` is equal); then ``phi`` with ``theta`` integrated
out (the negative-binomial likelihood; slice sampling on ``log phi``, Neal 2003) and ``theta_dn
| phi ~ Gamma(phi + Y_dn, phi + (T V)_dn)`` for every cell, zeros included (Zhou & Carin 2015
for the Gamma-Poisson construction). A kernel of its own (:func:`_nb_sweeps`): the Poisson
kernel and its draws are untouched.

A plain kernel of its own (not the count wing's tiled sweep) because Chib needs these
statistics and runs with some rows of ``T`` held fixed. Random numbers come from numba's
generator and a xoshiro256+ stream (Blackman & Vigna 2021), both seeded from the caller's
:class:`numpy.random.Generator` by :func:`seed`, so a seed gives the same numbers every time.
No array is allocated per sweep: ``V`` is kept transposed during the run and copied back when
a draw is kept and at the end.
"""

import contextlib
import math
import time

import numpy as np
from numba import njit, uint64

from bnmfzoo.signatures._shape import check_shape_prior, poisson_rates, shape_comp, shape_step

__all__ = ["seed", "sweeps", "nb_state", "budget", "BudgetExceeded"]


_STATE = np.array([1, 2, 3, 4], dtype=np.uint64)  # xoshiro256+ state of the uniforms
#: cells of at most this many counts are split by categorical draws, larger ones by binomials
SMALL = 150
#: cells of at most this many counts are split by a linear search per count (no table)
TINY = 16
#: seconds of sweeps per compiled call of :func:`sweeps` (the Ctrl-C latency)
CHUNK_SECONDS = 0.25
#: the process CPU time (``time.process_time``) at which :func:`sweeps` stops; see :func:`budget`
_DEADLINE = [None]


class BudgetExceeded(Exception):
    """A CPU budget set by :func:`budget` ran out between two chunks of :func:`sweeps`.

    ``done`` of ``n_sweeps`` sweeps had run (callers running several calls as one run add
    theirs), at ``per_sweep`` seconds each (None after the first chunk, which includes loading
    the kernel); callers fill in ``where`` and ``needed`` (CPU s the whole run would take).
    """

    def __init__(self, done, n_sweeps, per_sweep):
        super().__init__(f"the CPU budget ran out after {done} of {n_sweeps} sweeps")
        self.done, self.n_sweeps, self.per_sweep = done, n_sweeps, per_sweep
        self.where, self.needed = None, None


@contextlib.contextmanager
def budget(deadline):
    """Stop :func:`sweeps` between chunks once ``time.process_time()`` passes ``deadline``.

    Within the block, :func:`sweeps` raises :class:`BudgetExceeded` at the first chunk boundary
    after ``deadline`` (None: no limit); a run that ends in time has the draws it has without.
    """
    old, _DEADLINE[0] = _DEADLINE[0], deadline
    try:
        yield
    finally:
        _DEADLINE[0] = old
#: the prior of the negative-binomial shape, ``phi ~ Gamma(1, 0.01)`` (shape, rate): mean 100
#: (nearly Poisson), 5% below phi = 5; the overdispersion of real catalogues is well inside
PHI_PRIOR = (1.0, 0.01)


@njit(cache=True)
def _seed(value):
    np.random.seed(value)


def seed(rng):
    """Seed numba's generator and the split's uniforms from ``rng`` (a numpy Generator)."""
    _seed(int(rng.integers(2**31 - 1)))
    _STATE[:] = rng.integers(1, 2**63 - 1, size=4, dtype=np.uint64)


@njit(inline="always")
def _rotl(x, k):
    return (x << uint64(k)) | (x >> uint64(64 - k))


@njit(inline="always")
def _uniform(st):
    """A uniform on [0, 1) from xoshiro256+ (Blackman & Vigna 2021), 53 bits; ``st`` in place."""
    s0, s1, s2, s3 = st[0], st[1], st[2], st[3]
    result = s0 + s3
    t = s1 << uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    st[0], st[1], st[2], st[3] = s0, s1, s2, s3
    return float(result >> uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def _split(rows, cols, counts, T, Vt, order, s_dk, s_nk, rate, cdf, tabs, st, tiny, small):
    """Multinomial split of every nonzero cell; ``Vt`` is ``V`` transposed (N, K).

    Three exact ways to draw ``Multinomial(c, p)``, ``p_k ~ T_dk V_kn``, chosen by the count
    ``c`` for speed (measured at 96 x 500 genomes, K = 20): ``c <= tiny``, a uniform and a
    linear search of the cumulative rates per count; ``c <= small``, an alias table (Walker
    1977; Vose 1991) built for the cell, then one uniform per count; larger cells, conditional
    binomials ``Binomial(rest, p_k / sum_{j >= k} p_j)`` over the signatures in ``order[n]``
    (decreasing exposure), stopped as soon as nothing is left. The uniforms come from an inline
    xoshiro256+ (state ``st``, kept in registers), the binomials from numba's generator.
    """
    K = T.shape[1]
    s_dk[:] = 0.0
    s_nk[:] = 0.0
    cnt = np.zeros(K, dtype=np.int64)
    prob = np.empty(K)
    alias, lows, highs = tabs[0], tabs[1], tabs[2]
    Ku = uint64(K)
    s0, s1, s2, s3 = st[0], st[1], st[2], st[3]
    for e in range(counts.shape[0]):
        d, n, rem = rows[e], cols[e], counts[e]
        tot = 0.0
        for k in range(K):
            rate[k] = T[d, k] * Vt[n, k]
            tot += rate[k]
            cdf[k] = tot
        if not (tot > 0.0):
            # every rate underflowed: the split is uniform in the limit
            for j in range(K):
                rate[j] = 1.0
                cdf[j] = j + 1.0
            tot = float(K)
        if rem <= tiny:
            # a few counts: a linear search of the cumulative rates per count
            for _ in range(rem):
                res = s0 + s3
                t = s1 << uint64(17)
                s2 ^= s0
                s3 ^= s1
                s1 ^= s2
                s0 ^= s3
                s2 ^= t
                s3 = (s3 << uint64(45)) | (s3 >> uint64(19))
                u = float(res >> uint64(11)) * (1.0 / 9007199254740992.0) * tot
                j = 0
                while j < K - 1 and cdf[j] <= u:
                    j += 1
                s_dk[d, j] += 1.0
                s_nk[n, j] += 1.0
        elif rem <= small:
            # alias table (Walker 1977; Vose 1991): one uniform per draw, no search
            scale = K / tot
            ns = 0
            nl = 0
            for j in range(K):
                prob[j] = rate[j] * scale
                alias[j] = j
                if prob[j] < 1.0:
                    lows[ns] = j
                    ns += 1
                else:
                    highs[nl] = j
                    nl += 1
            while ns > 0 and nl > 0:
                ns -= 1
                lo = lows[ns]
                hi = highs[nl - 1]
                alias[lo] = hi
                prob[hi] = (prob[hi] + prob[lo]) - 1.0
                if prob[hi] < 1.0:
                    nl -= 1
                    lows[ns] = hi
                    ns += 1
            for i in range(nl):
                prob[highs[i]] = 1.0
            for i in range(ns):
                prob[lows[i]] = 1.0
            for _ in range(rem):
                # xoshiro256+ inline, its state in registers (see _uniform)
                res = s0 + s3
                t = s1 << uint64(17)
                s2 ^= s0
                s3 ^= s1
                s1 ^= s2
                s0 ^= s3
                s2 ^= t
                s3 = (s3 << uint64(45)) | (s3 >> uint64(19))
                # 53 random bits times K: the integer part picks the column, the rest is
                # the uniform that decides between it and its alias
                m = (res >> uint64(11)) * Ku
                i = np.int64(m >> uint64(53))
                f = float(np.int64(m & uint64(9007199254740991))) * (1.0 / 9007199254740992.0)
                j = i if f < prob[i] else alias[i]
                cnt[j] += 1
            for k in range(K):
                if cnt[k] > 0:
                    s_dk[d, k] += cnt[k]
                    s_nk[n, k] += cnt[k]
                    cnt[k] = 0
        else:
            for j in range(K - 1):
                if rem == 0:
                    break
                k = order[n, j]
                q = rate[k] / tot if tot > 0.0 else 1.0
                q = min(max(q, 0.0), 1.0)
                s = np.random.binomial(rem, q)
                s_dk[d, k] += s
                s_nk[n, k] += s
                rem -= s
                tot -= rate[k]
            if rem > 0:
                k = order[n, K - 1]
                s_dk[d, k] += rem
                s_nk[n, k] += rem
    st[0], st[1], st[2], st[3] = s0, s1, s2, s3


@njit(cache=True)
def _orders(Vt, order):
    for n in range(Vt.shape[0]):
        order[n] = np.argsort(-Vt[n])


@njit(cache=True)
def _checked_inputs(counts, T, V, mu, comp):
    """Refuse bad inputs of both sweeps (no draw); return the exposures' extra rates a / mu_k."""
    D, K = T.shape
    N = V.shape[1]
    on = comp[0] > 0.0
    a_c, a0, b0 = comp[1], comp[2], comp[3]
    rk = np.zeros(K)
    if on:
        if not (np.isfinite(a_c) and a_c > 0.0 and np.isfinite(a0) and a0 > 0.0
                and np.isfinite(b0) and b0 > 0.0):
            raise ValueError("the Gibbs sweep got a non-finite or non-positive hyperprior")
        check_shape_prior(comp)
        for k in range(K):
            if not (np.isfinite(mu[k]) and mu[k] > 0.0):
                raise ValueError("the Gibbs sweep got a non-finite or non-positive mu")
            rk[k] = a_c / mu[k]
    for e in range(counts.shape[0]):
        if not (counts[e] >= 0):
            raise ValueError("the Gibbs sweep got a negative or non-finite count")
    for d in range(D):
        for k in range(K):
            if not (np.isfinite(T[d, k]) and T[d, k] > 0.0):
                raise ValueError("the Gibbs sweep got a non-finite or non-positive factor")
    for k in range(K):
        for n in range(N):
            if not (np.isfinite(V[k, n]) and V[k, n] > 0.0):
                raise ValueError("the Gibbs sweep got a non-finite or non-positive factor")
    return rk


@njit(cache=True)
def _workspace(V, D, K):
    """The split's work arrays for a (D, K) x (K, N) sweep, and ``V`` transposed (a copy)."""
    N = V.shape[1]
    return (np.empty((D, K)), np.empty((N, K)), np.empty((K, N)), np.ascontiguousarray(V.T),
            np.empty((N, K), dtype=np.int64), np.empty(K), np.empty(K),
            np.empty((3, K), dtype=np.int64), np.empty(D))


@njit(cache=True)
def _store(it, n_sweeps, keep_every, T, V, Vt, mu, s_dk, s_kn, s_nk, out_sdk, out_skn, out_T,
           out_V, out_mu):
    """Keep sweep ``it``'s draw (its index, else -1); V, s_kn refreshed when kept or last."""
    keep_now = keep_every > 0 and it % keep_every == 0
    if keep_now or it == n_sweeps - 1:
        V[:] = Vt.T
        s_kn[:] = s_nk.T
    if not keep_now:
        return -1
    j = it // keep_every
    if j < out_sdk.shape[0]:
        out_sdk[j] = s_dk
    if j < out_skn.shape[0]:
        out_skn[j] = s_kn
    if j < out_T.shape[0]:
        out_T[j] = T
        out_V[j] = V
    if j < out_mu.shape[0]:
        out_mu[j] = mu
    return j


@njit(cache=True)
def _sweeps(rows, cols, counts, T, V, alpha, aV, bV, fixed_rows, n_sweeps, keep_every,
            out_sdk, out_skn, out_T, out_V, st, tiny, small, mu, comp, out_mu, out_a=None):
    """``n_sweeps`` sweeps in place; the statistics of every sweep go to the ``out_*``.

    ``comp = (on, a, a0, b0)``: with ``on > 0`` the exposures' rate of signature ``k`` is
    ``b_V[n] + a / mu[k]`` and ``mu`` (updated in place) is drawn after the exposures from its
    inverse-gamma conditional (:func:`sweeps`); with ``on = 0`` ``mu`` is not touched and no
    random number is spent on it. ``comp = (1, a, a0, b0, 1, c0, d0, epsilon)``: the shape
    ``a`` (also the exposures' shape, in place of ``aV``) is random, drawn before the
    exposures (:func:`bnmfzoo.signatures._shape.shape_step`), its kept draws in ``out_a``.
    """
    D, K = T.shape
    N = V.shape[1]
    on = comp[0] > 0.0
    rnd = on and comp.shape[0] >= 8 and comp[4] > 0.0
    a_c, a0, b0 = comp[1], comp[2], comp[3]
    rk = _checked_inputs(counts, T, V, mu, comp)
    s_dk, s_nk, s_kn, Vt, order, rate, cdf, tabs, g = _workspace(V, D, K)
    cr = poisson_rates(bV, K, rnd)
    for it in range(n_sweeps):
        _orders(Vt, order)
        _split(rows, cols, counts, T, Vt, order, s_dk, s_nk, rate, cdf, tabs, st, tiny, small)
        if fixed_rows < D:
            for k in range(K):
                fixed = 0.0
                for d in range(fixed_rows):
                    fixed += T[d, k]
                tot = 0.0
                for d in range(fixed_rows, D):
                    g[d] = np.random.gamma(alpha[d, k] + s_dk[d, k], 1.0)
                    tot += g[d]
                for d in range(fixed_rows, D):
                    T[d, k] = max((1.0 - fixed) * g[d] / tot, 1e-300)
        if on:
            if rnd:  # (a, V) as a block: a with V integrated out, then V | a
                a_c = shape_step(comp, s_nk, mu, cr, rk, N)
                aV, a0, b0 = a_c, comp[2], comp[3]
            for n in range(N):
                for k in range(K):
                    Vt[n, k] = max(np.random.gamma(aV + s_nk[n, k],
                                                   1.0 / (bV[n] + rk[k] + 1.0)), 1e-300)
            # mu_k | V ~ InvGamma(a0 + N a, b0 + a sum_n V_kn) (Zito & Miller 2024)
            for k in range(K):
                tot = 0.0
                for n in range(N):
                    tot += Vt[n, k]
                mu[k] = max((b0 + a_c * tot) / np.random.gamma(a0 + N * a_c, 1.0), 1e-300)
                rk[k] = a_c / mu[k]
        else:
            for n in range(N):
                scale = 1.0 / (bV[n] + 1.0)
                for k in range(K):
                    Vt[n, k] = max(np.random.gamma(aV + s_nk[n, k], scale), 1e-300)
        j = _store(it, n_sweeps, keep_every, T, V, Vt, mu, s_dk, s_kn, s_nk, out_sdk, out_skn,
                   out_T, out_V, out_mu)
        if out_a is not None and 0 <= j < out_a.shape[0]:
            out_a[j] = a_c


@njit(cache=True)
def _phi_logpost(eta, a_p, b_p, lam, Yd, xs, hs):
    """``log p(log phi | Y, T, V)`` up to a constant, the cell multipliers integrated out.

    ``sum_dn log NB(Y_dn; phi, lam_dn)`` as a function of ``phi``: ``M phi log phi - sum_dn
    (phi + Y_dn) log(phi + lam_dn) + sum_x h_x (lgamma(x + phi) - lgamma(phi))`` over the
    distinct positive counts ``xs`` with multiplicities ``hs``; plus the ``Gamma(a_p, b_p)``
    prior and the Jacobian of ``eta = log phi``.
    """
    if not (-7.0 < eta < 20.0):  # phi in (1e-3, 5e8): outside, density taken as zero
        return -np.inf
    phi = math.exp(eta)
    D, N = lam.shape
    lp = a_p * eta - b_p * phi + D * N * phi * eta
    for d in range(D):
        for n in range(N):
            lp -= (phi + Yd[d, n]) * math.log(phi + lam[d, n])
    lg = math.lgamma(phi)
    for i in range(xs.shape[0]):
        lp += hs[i] * (math.lgamma(xs[i] + phi) - lg)
    return lp


@njit(cache=True)
def _phi_slice(phi, a_p, b_p, lam, Yd, xs, hs, width):
    """One slice-sampling update of ``log phi`` (Neal 2003: stepping out, then shrinkage)."""
    eta0 = math.log(phi)
    logy = _phi_logpost(eta0, a_p, b_p, lam, Yd, xs, hs) + math.log(1.0 - np.random.random())
    left = eta0 - width * np.random.random()
    right = left + width
    for _ in range(60):
        if _phi_logpost(left, a_p, b_p, lam, Yd, xs, hs) <= logy:
            break
        left -= width
    for _ in range(60):
        if _phi_logpost(right, a_p, b_p, lam, Yd, xs, hs) <= logy:
            break
        right += width
    for _ in range(200):
        eta = left + (right - left) * np.random.random()
        if _phi_logpost(eta, a_p, b_p, lam, Yd, xs, hs) > logy:
            return math.exp(eta)
        if eta < eta0:
            left = eta
        else:
            right = eta
    return phi


@njit(cache=True)
def _nb_sweeps(rows, cols, counts, T, V, alpha, aV, bV, n_sweeps, keep_every, out_sdk,
               out_skn, out_T, out_V, st, tiny, small, mu, comp, out_mu, Yd, theta, nbp, xs,
               hs, out_phi, out_a=None):
    """The sweeps of :func:`_sweeps` under the negative-binomial likelihood (:func:`sweeps`).

    ``Y_dn ~ Poisson(theta_dn (T V)_dn)``, ``theta_dn ~ Gamma(phi, phi)``. ``Yd`` dense counts
    (D, N), ``theta`` (D, N) updated in place; ``nbp = [phi, a_phi, b_phi, proposals,
    accepted]`` (``phi`` and the counts of the signature step's proposals updated in place);
    ``xs``, ``hs`` the distinct positive counts and their multiplicities. ``comp`` as in
    :func:`_sweeps` (a random shape ``a`` included, ``out_a`` its kept draws). No rows of ``T``
    are held fixed.
    """
    D, K = T.shape
    N = V.shape[1]
    on = comp[0] > 0.0
    rnd = on and comp.shape[0] >= 8 and comp[4] > 0.0
    a_c, a0, b0 = comp[1], comp[2], comp[3]
    rk = _checked_inputs(counts, T, V, mu, comp)
    if not (np.isfinite(nbp[0]) and nbp[0] > 0.0 and np.isfinite(nbp[1]) and nbp[1] > 0.0
            and np.isfinite(nbp[2]) and nbp[2] > 0.0):
        raise ValueError("the Gibbs sweep got a non-finite or non-positive phi or phi prior")
    for d in range(D):
        for n in range(N):
            if not (np.isfinite(theta[d, n]) and theta[d, n] > 0.0):
                raise ValueError("the Gibbs sweep got a non-finite or non-positive theta")
            if not (Yd[d, n] >= 0.0 and np.isfinite(Yd[d, n])):
                raise ValueError("the Gibbs sweep got a negative or non-finite count")
    s_dk, s_nk, s_kn, Vt, order, rate, cdf, tabs, g = _workspace(V, D, K)
    w = np.empty(D)
    W = np.empty((D, K))
    C = np.empty((N, K))
    lam = np.empty((D, N))
    for it in range(n_sweeps):
        _orders(Vt, order)
        # the split's proportions T_dk V_kn / (T V)_dn do not depend on theta_dn
        _split(rows, cols, counts, T, Vt, order, s_dk, s_nk, rate, cdf, tabs, st, tiny, small)
        # T_k | S, V, theta: prod_d T_dk^(alpha + s_dk - 1) exp(-T_dk w_dk) on the simplex,
        # w_dk = sum_n theta_dn V_kn. Independence Metropolis-Hastings with the normalized
        # Gamma(alpha + s_dk, rate w_dk): its density is the target's times
        # (sum_d T_dk w_dk)^(-A) exp(sum_d T_dk w_dk), A = sum_d (alpha + s_dk)
        for d in range(D):
            for k in range(K):
                W[d, k] = 0.0
            for n in range(N):
                th = theta[d, n]
                for k in range(K):
                    W[d, k] += th * Vt[n, k]
        for k in range(K):
            A = 0.0
            u_old = 0.0
            for d in range(D):
                w[d] = W[d, k]
                A += alpha[d, k] + s_dk[d, k]
                u_old += T[d, k] * w[d]
            tot = 0.0
            for d in range(D):
                g[d] = np.random.gamma(alpha[d, k] + s_dk[d, k], 1.0 / w[d])
                tot += g[d]
            nbp[3] += 1.0
            if not (tot > 0.0):
                continue
            u_new = 0.0
            for d in range(D):
                u_new += g[d] / tot * w[d]
            log_r = -(u_new - u_old) + A * (math.log(u_new) - math.log(u_old))
            if math.log(1.0 - np.random.random()) < log_r:
                nbp[4] += 1.0
                for d in range(D):
                    T[d, k] = max(g[d] / tot, 1e-300)
        # V_kn | S, T, theta ~ Gamma(a_V + s_kn, b_V[n] + a / mu_k + sum_d theta_dn T_dk)
        for n in range(N):
            for k in range(K):
                C[n, k] = 0.0
            for d in range(D):
                th = theta[d, n]
                for k in range(K):
                    C[n, k] += th * T[d, k]
        if rnd:  # (a, V) as a block: a with V integrated out, then V | a
            for n in range(N):
                for k in range(K):
                    C[n, k] += bV[n]  # C is then the whole rate besides a / mu_k
            a_c = shape_step(comp, s_nk, mu, C, rk, N)
            aV, a0, b0 = a_c, comp[2], comp[3]
        for n in range(N):
            bn = 0.0 if rnd else bV[n]
            for k in range(K):
                Vt[n, k] = max(np.random.gamma(aV + s_nk[n, k], 1.0 / (bn + rk[k] + C[n, k])),
                               1e-300)
        if on:  # mu_k | V ~ InvGamma(a0 + N a, b0 + a sum_n V_kn) (Zito & Miller 2024)
            for k in range(K):
                vsum = 0.0
                for n in range(N):
                    vsum += Vt[n, k]
                mu[k] = max((b0 + a_c * vsum) / np.random.gamma(a0 + N * a_c, 1.0), 1e-300)
                rk[k] = a_c / mu[k]
        # (phi, theta) | Y, T, V as a block: phi with theta integrated out (slice sampler on
        # log phi), then theta_dn | phi ~ Gamma(phi + Y_dn, phi + (T V)_dn)
        for d in range(D):
            for n in range(N):
                acc = 0.0
                for k in range(K):
                    acc += T[d, k] * Vt[n, k]
                lam[d, n] = acc
        phi = _phi_slice(nbp[0], nbp[1], nbp[2], lam, Yd, xs, hs, 0.5)
        nbp[0] = phi
        for d in range(D):
            for n in range(N):
                theta[d, n] = max(np.random.gamma(phi + Yd[d, n], 1.0 / (phi + lam[d, n])),
                                  1e-300)
        j = _store(it, n_sweeps, keep_every, T, V, Vt, mu, s_dk, s_kn, s_nk, out_sdk, out_skn,
                   out_T, out_V, out_mu)
        if 0 <= j < out_phi.shape[0]:
            out_phi[j] = phi
        if out_a is not None and 0 <= j < out_a.shape[0]:
            out_a[j] = a_c


def nb_state(shape, phi=100.0, prior=PHI_PRIOR):
    """The state of the negative-binomial kernel: ``(theta, [phi, a_phi, b_phi, 0, 0])``.

    ``theta`` (D, N) starts at 1 (Poisson), ``phi`` at ``phi``; the last two entries count the
    signature step's proposals and acceptances.
    """
    a_p, b_p = prior
    for name, v in (("phi", phi), ("prior shape", a_p), ("prior rate", b_p)):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"nb_state: {name} must be positive and finite, got {v!r}")
    return np.ones(shape), np.array([float(phi), float(a_p), float(b_p), 0.0, 0.0])


def sweeps(data, T, V, prior, n_sweeps, *, fixed_rows=0, keep=(), thin=1, compressive=None,
           nb=None, shape=None, strength=None):
    """Run ``n_sweeps`` sweeps on ``T, V`` in place; return the kept statistics.

    Parameters
    ----------
    data : tuple
        ``(rows, cols, counts)`` of the nonzero cells of ``Y`` (int64, int64, int64).
    T, V : numpy.ndarray
        Current factors (D, K), columns summing to 1, and (K, N), float64, positive; updated
        in place.
    prior : tuple
        ``(alpha, a_V, b_V)``: ``b_V`` an array of length N; ``alpha`` a number or a (D, K)
        array, signature ``k``'s Dirichlet parameter per channel (a number: the same draws as
        the array full of it).
    n_sweeps : int
    fixed_rows : int
        Rows ``0 .. fixed_rows - 1`` of ``T`` stay fixed (``D``: only ``V`` moves).
    keep : tuple of str
        Which of ``"s_dk"``, ``"s_kn"``, ``"TV"`` to keep, every ``thin`` sweeps (with
        ``compressive``, ``"TV"`` keeps ``mu`` too).
    compressive : tuple, optional
        ``(a, a0, b0, mu)``: the compressive hyperprior of Zito & Miller (2024),
        ``V_kn | mu_k ~ Gamma(a_V, b_V[n] + a / mu_k)`` (with ``a_V = a`` and ``b_V = 0``,
        their ``Gamma(a, a / mu_k)``) and ``mu_k ~ InvGamma(a0, b0)`` (shape, scale), drawn
        each sweep from ``InvGamma(a0 + N a, b0 + a sum_n V_kn)``; ``mu`` (K,) is updated in
        place. None (default): the plain model, whose draws are unchanged.
    nb : tuple, optional
        ``(theta, state)`` from :func:`nb_state`: the negative-binomial likelihood (module
        docstring), both updated in place; ``"TV"`` keeps ``phi`` too. Needs ``fixed_rows=0``.
        None (default): Poisson, the draws unchanged.
    shape : numpy.ndarray, optional
        ``[a, c0, d0, epsilon]`` from :func:`bnmfzoo.signatures._shape.shape_state`: the
        compression shape ``a`` is random, ``a ~ Gamma(c0, d0)``, with ``mu_k ~ InvGamma(a N +
        1, epsilon a N)`` and exposures ``Gamma(a, b_V[n] + a / mu_k)`` at the current ``a``
        (the ``a``, ``a0``, ``b0`` of ``compressive`` and the ``a_V`` of ``prior`` are not
        used); ``a`` is updated in place; ``"TV"`` keeps it too. Needs ``compressive``. None
        (default): ``a`` fixed, the draws unchanged.
    strength : float, optional
        With ``shape``: ``mu_k ~ InvGamma(c N + 1, epsilon c N)`` whatever ``a``
        (:func:`bnmfzoo.signatures._shape.shape_comp`). None (default): it follows ``a``.

    Returns
    -------
    dict
        ``s_dk`` (G, D, K), ``s_kn`` (G, K, N), ``T`` (G, D, K), ``V`` (G, K, N), ``mu``
        (G, K), ``phi`` (G,), ``a`` (G,) for the kinds kept (empty arrays otherwise).
    """
    rows, cols, counts = data
    D, K = T.shape
    N = V.shape[1]
    G = n_sweeps // thin if keep else 0
    out = {
        "s_dk": np.empty((G if "s_dk" in keep else 0, D, K)),
        "s_kn": np.empty((G if "s_kn" in keep else 0, K, N)),
        "T": np.empty((G if "TV" in keep else 0, D, K)),
        "V": np.empty((G if "TV" in keep else 0, K, N)),
        "mu": np.empty((G if "TV" in keep and compressive is not None else 0, K)),
        "phi": np.empty(G if "TV" in keep and nb is not None else 0),
        "a": np.empty(G if "TV" in keep and shape is not None else 0),
    }
    alpha, aV, bV = prior
    alpha = np.ascontiguousarray(np.broadcast_to(np.asarray(alpha, dtype=float), (D, K)))
    if not (np.isfinite(alpha).all() and (alpha > 0).all()):  # one parameter per cell
        raise ValueError("the Dirichlet parameter alpha must be positive and finite")
    if compressive is None:
        mu, comp = np.ones(K), np.zeros(4)
        if shape is not None:
            raise ValueError("a random shape (shape=) needs the compressive step (compressive=)")
    else:
        a_c, a0, b0, mu = compressive
        comp = np.array([1.0, a_c, a0, b0], dtype=float)
        if not (isinstance(mu, np.ndarray) and mu.dtype == np.float64 and mu.shape == (K,)):
            raise TypeError(f"compressive's mu must be a float64 array of shape ({K},)")
    if shape is not None or strength is not None:  # a strength needs a random shape
        comp = shape_comp(shape, N, strength)
        aV = comp[1]
    bV = np.ascontiguousarray(bV, dtype=float)
    if nb is not None:
        theta, state = nb
        if fixed_rows != 0:
            raise ValueError("the negative-binomial sweep holds no rows fixed (fixed_rows=0)")
        if not (isinstance(theta, np.ndarray) and theta.dtype == np.float64
                and theta.shape == (D, N) and isinstance(state, np.ndarray)
                and state.dtype == np.float64 and state.shape == (5,)):
            raise TypeError(f"nb must be (theta, state) from nb_state(({D}, {N}))")
        Yd = np.zeros((D, N))
        Yd[rows, cols] = counts
        xs, hs = np.unique(counts[counts > 0], return_counts=True)
        xs, hs = xs.astype(float), hs.astype(float)
    # in chunks of about CHUNK_SECONDS (multiples of thin), so that Ctrl-C, which Python acts
    # on only between compiled calls, stops a long run within a chunk; the state (T, V, mu,
    # the random streams) carries over between chunks, so the draws are those of one call
    step = int(thin) if keep else 1
    done, size = 0, step
    while True:  # at least one call: the kernel checks its inputs even for zero sweeps
        m, j0 = min(size, int(n_sweeps) - done), done // step
        t0 = time.perf_counter()
        if nb is None:
            args = (rows, cols, counts, T, V, alpha, float(aV), bV, int(fixed_rows), m,
                    int(thin) if keep else 0, out["s_dk"][j0:], out["s_kn"][j0:],
                    out["T"][j0:], out["V"][j0:], _STATE, TINY, SMALL, mu, comp,
                    out["mu"][j0:])
            _sweeps(*args, *(() if shape is None else (out["a"][j0:],)))
        else:
            args = (rows, cols, counts, T, V, alpha, float(aV), bV, m,
                    int(thin) if keep else 0, out["s_dk"][j0:], out["s_kn"][j0:],
                    out["T"][j0:], out["V"][j0:], _STATE, TINY, SMALL, mu, comp,
                    out["mu"][j0:], Yd, theta, state, xs, hs, out["phi"][j0:])
            _nb_sweeps(*args, *(() if shape is None else (out["a"][j0:],)))
        if shape is not None:  # the drawn shape carries over to the next chunk and call
            shape[0] = comp[1]
            aV = comp[1]
        done += m
        if done >= n_sweeps:
            return out
        per = (time.perf_counter() - t0) / m
        if _DEADLINE[0] is not None and time.process_time() > _DEADLINE[0]:
            # the first chunk's time includes loading or compiling the kernel: no rate
            raise BudgetExceeded(done, int(n_sweeps), per if done > m else None)
        size = max(step, int(CHUNK_SECONDS / max(per, 1e-9)) // step * step)
