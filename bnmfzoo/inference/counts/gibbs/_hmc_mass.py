"""A low-rank correction of HMC's diagonal mass on ``log A, log W`` (``GibbsPoisson(moves="hmc")``).

**Why.** With a diagonal mass (:mod:`bnmfzoo.inference.counts.gibbs._hmc_moves`) the posterior
of a Poisson NMF of a dense catalogue keeps a few directions much wider than the rest after
preconditioning: the attribution of counts between overlapping signatures, a combination of the
components' total exposures. Trajectories long enough to move those cost most of the gradients
of a draw. A mass that is not diagonal along them lets short trajectories move them.

**The mass.** In the coordinates ``y = D^-1/2 theta`` whitened by the diagonal inverse mass
``D``, the inverse mass is

``M^-1 = D^1/2 (I + U (L - 1) U^T) D^1/2``

with ``U`` (``P x r``, orthonormal columns, ``r`` small) and ``L`` the variances along them.
The momentum is ``p = M^1/2 z = D^-1/2 (I + U (L^-1/2 - 1) U^T) z`` with ``z ~ N(0, I)`` (so
``p ~ N(0, M)``), the velocity ``M^-1 p`` (:func:`lowrank_velocity`), the kinetic energy ``p .
M^-1 p / 2``; the leapfrog and the U-turn test use that velocity (Neal 2011, section 5.4.1: any
fixed positive definite mass leaves the target invariant). A velocity costs ``O(r P)``.

**Fitted** (:func:`lowrank_mass`) at the end of each mass window, from its states and gradients,
as nutpie's low-rank adaptation (Seyboldt et al. 2024): in a basis ``Q`` of the whitened space,
the draws' covariance ``C_x`` and the gradients' ``C_g`` of the projections give the covariance
``C_x # C_g^-1`` (the geometric mean of two SPD matrices, which is the covariance of a Gaussian
for either estimate alone, and the one that matches both when they disagree); its eigenvectors
whose eigenvalue lies outside ``[1/c, c]`` are kept. The basis is either (``"exposures"``) the
``2 K`` per-component directions, the gradients of ``log sum_d A_dk`` and of ``log sum_n W_kn``
at the window's mean (a shift of a component's total exposure, and the component's scale), whose
``2 K x 2 K`` covariances are well estimated from ~100 states; (``"krylov"``) those and the
window's draws' covariance applied to them (one power step, ``4 K`` directions); or (``"span"``)
the span of the window's whitened draws and gradients themselves (nutpie's choice; from ~100
states in thousands of dimensions the draws' covariance there is mostly noise). None was faster
than the diagonal mass per CPU second on the SBS96 catalogues, so ``"diag"`` is the default
(``docs/results/counts_dense_2.md``).

References
----------
Neal, R. M. (2011). MCMC using Hamiltonian dynamics. In Handbook of Markov Chain Monte Carlo,
ch. 5. Chapman & Hall/CRC.
Seyboldt, A., Carlson, E. & Carpenter, B. (2024). Preconditioning Markov chain Monte Carlo
by minimizing the Fisher divergence. arXiv:2410.18929.
"""


import numba
import numpy as np
from scipy.special import polygamma

__all__ = ["conditional_shape_mass", "diagonal_mass", "lowrank_momentum", "lowrank_velocity",
           "drift", "turned_velocity", "lowrank_mass", "exposure_basis", "spd_mean", "MASS_RULES",
           "LOWRANK_CLIP", "LOWRANK_MAX"]

#: the masses ``HmcAdapter(mass=...)`` takes: the diagonal alone, or a low-rank correction in
#: the span of the per-component directions or of the window's draws and gradients
MASS_RULES = ("diag", "exposures", "krylov", "span")
#: eigenvalues of the whitened covariance within ``[1 / c, c]`` are left to the diagonal
LOWRANK_CLIP = 2.0
#: at most this many directions (the largest ``|log lam|``): a velocity costs ``O(r P)``
LOWRANK_MAX = 16
#: bounds of the variances along the kept directions
LAM_BOUNDS = (1e-4, 1e4)
#: weight of the identity in the whitened covariances (:func:`lowrank_mass`)
SHRINK = 0.05


@numba.njit(cache=True)
def lowrank_momentum(zA, zWt, sA, sWt, UA, UWt, lam):
    """``p = D^-1/2 (I + U (L^-1/2 - 1) U^T) z`` in place of ``z`` (``p ~ N(0, M)``).

    ``sA, sWt``: ``sqrt`` of the diagonal inverse mass; ``UA, UWt``: the ``r`` orthonormal
    directions in the whitened coordinates, split by block (shapes ``(r, D K)``, ``(r, N K)``,
    the entries row-major), ``lam`` their variances. Two matrix-vector products (BLAS).
    """
    zf, wf = zA.reshape(zA.size), zWt.reshape(zWt.size)  # views of the contiguous blocks
    c = (np.dot(UA, zf) + np.dot(UWt, wf)) * (1.0 / np.sqrt(lam) - 1.0)
    zf += np.dot(c, UA)
    wf += np.dot(c, UWt)
    zA /= sA
    zWt /= sWt


@numba.njit(cache=True)
def _project(p, s, U, y, c, first):
    """``y = s p`` (flat) and ``c (+)= U y``.

    Four partial sums per direction: the latency of one running sum, not its flops, bounds it.
    """
    P = p.size
    pf, sf = p.reshape(P), s.reshape(P)
    for i in range(P):
        y[i] = sf[i] * pf[i]
    for j in range(U.shape[0]):
        a0 = a1 = a2 = a3 = 0.0
        i = 0
        while i + 4 <= P:
            a0 += U[j, i] * y[i]
            a1 += U[j, i + 1] * y[i + 1]
            a2 += U[j, i + 2] * y[i + 2]
            a3 += U[j, i + 3] * y[i + 3]
            i += 4
        while i < P:
            a0 += U[j, i] * y[i]
            i += 1
        c[j] = (0.0 if first else c[j]) + ((a0 + a1) + (a2 + a3))


@numba.njit(cache=True)
def _apply(p, s, U, y, c, v):
    """``v = s (y + U^T c)``; returns ``p . v``."""
    P = p.size
    pf, sf, vf = p.reshape(P), s.reshape(P), v.reshape(P)
    for j in range(U.shape[0]):
        cj = c[j]
        for i in range(P):
            y[i] += cj * U[j, i]
    k = 0.0
    for i in range(P):
        vf[i] = sf[i] * y[i]
        k += pf[i] * vf[i]
    return k


@numba.njit(cache=True)
def lowrank_velocity(pA, pWt, sA, sWt, UA, UWt, lm1, vA, vWt, yA, yW, c):
    """``v = M^-1 p = D^1/2 (I + U (L - 1) U^T) D^1/2 p`` into ``vA, vWt``; returns ``p . v / 2``.

    ``lm1``: ``lam - 1``; ``yA, yW, c``: buffers of lengths ``D K``, ``N K``, ``r``; the other
    arguments as :func:`lowrank_momentum`. The return value is the kinetic energy. Costs
    ``2 r P`` multiply-adds: on the 552 x 96 ESCC catalogue at K = 8 and ``r = 16``, about 45
    us, a third of a gradient (so the rank is capped, :data:`LOWRANK_MAX`).
    """
    _project(pA, sA, UA, yA, c, True)
    _project(pWt, sWt, UWt, yW, c, False)
    for j in range(c.size):
        c[j] *= lm1[j]
    return 0.5 * (_apply(pA, sA, UA, yA, c, vA) + _apply(pWt, sWt, UWt, yW, c, vWt))


@numba.njit(cache=True)
def drift(qA, qWt, vA, vWt, eps):
    """``q += eps v``."""
    for d in range(qA.shape[0]):
        for k in range(qA.shape[1]):
            qA[d, k] += eps * vA[d, k]
    for n in range(qWt.shape[0]):
        for k in range(qWt.shape[1]):
            qWt[n, k] += eps * vWt[n, k]


@numba.njit(cache=True)
def turned_velocity(qA, qWt, tA, tWt, vA, vWt, uA, uWt):
    """``(turned, turned_along)`` as ``_hmc_moves._turned`` with the velocity ``v`` given."""
    dot, pos, vel = 0.0, 0.0, 0.0
    along = uA.size > 0
    for d in range(qA.shape[0]):
        for k in range(qA.shape[1]):
            dot += (qA[d, k] - tA[d, k]) * vA[d, k]
            if along:
                pos += uA[d, k] * (qA[d, k] - tA[d, k])
                vel += uA[d, k] * vA[d, k]
    for n in range(qWt.shape[0]):
        for k in range(qWt.shape[1]):
            dot += (qWt[n, k] - tWt[n, k]) * vWt[n, k]
            if along:
                pos += uWt[n, k] * (qWt[n, k] - tWt[n, k])
                vel += uWt[n, k] * vWt[n, k]
    return dot < 0.0, along and pos * vel < 0.0


def spd_mean(a, b):
    """The geometric mean ``a # b = a^1/2 (a^-1/2 b a^-1/2)^1/2 a^1/2`` of SPD matrices.

    Examples
    --------
    >>> np.allclose(spd_mean(np.diag([4.0, 1.0]), np.diag([1.0, 9.0])), np.diag([2.0, 3.0]))
    True
    """
    w, v = np.linalg.eigh(a)
    w = np.maximum(w, 1e-300)
    ah, aih = (v * np.sqrt(w)) @ v.T, (v / np.sqrt(w)) @ v.T
    m, u = np.linalg.eigh(aih @ b @ aih)
    mid = (u * np.sqrt(np.maximum(m, 0.0))) @ u.T
    return ah @ mid @ ah


def exposure_basis(theta, D, N, K):
    """The ``2 K`` per-component functionals (rows) of ``theta = (log A, log W.T)`` (flattened).

    Row ``k``: the gradient of ``log sum_d A_dk``, ``A_dk / sum_d A_dk`` on ``log A[:, k]``, at
    the mean of the states ``theta`` (draws x entries); row ``K + k``: that of ``log sum_n
    W_kn`` on ``log W[k, :]``. Their sum is the gradient of the component's log total exposure,
    their difference a shift of its scale.
    """
    A = np.exp(theta[:, :D * K]).reshape(-1, D, K).mean(axis=0)
    Wt = np.exp(theta[:, D * K:]).reshape(-1, N, K).mean(axis=0)
    f = np.zeros((2 * K, D * K + N * K))
    for k in range(K):
        f[k, k:D * K:K] = A[:, k] / A[:, k].sum()
        f[K + k, D * K + k::K] = Wt[:, k] / Wt[:, k].sum()
    return f


def lowrank_mass(theta, grad, inv_mass, rule, D, N, K, clip=LOWRANK_CLIP, max_rank=LOWRANK_MAX):
    """``(U, lam)`` of the low-rank correction (module docstring) fitted to a window.

    ``theta, grad``: the window's states and gradients of ``log pi`` (draws x entries);
    ``inv_mass``: the diagonal inverse mass ``D`` (entries) the correction is relative to;
    ``rule``: ``"exposures"`` or ``"span"`` (:data:`MASS_RULES`). Returns ``U`` (``r x P``,
    orthonormal rows in the whitened coordinates) and ``lam`` (``r``), ``r = 0`` when no
    eigenvalue lies outside ``[1 / clip, clip]``, when the states are too few for the basis
    (at most half as many as its dimension) or not finite.
    """
    P = theta.shape[1]
    none = np.zeros((0, P)), np.zeros(0)
    if not (np.all(np.isfinite(theta)) and np.all(np.isfinite(grad))) or theta.shape[0] < 4:
        return none
    s = np.sqrt(inv_mass)
    y = (theta - theta.mean(axis=0)) / s
    g = (grad - grad.mean(axis=0)) * s
    if rule in ("exposures", "krylov"):
        basis = (exposure_basis(theta, D, N, K) * s).T  # functionals f . theta = (s f) . y
        if rule == "krylov":  # and the draws' covariance applied to them (one power step)
            basis = np.concatenate([basis, y.T @ (y @ basis)], axis=1)
    elif rule == "span":
        basis = np.concatenate([y, g]).T
    else:
        raise ValueError(f"lowrank_mass: rule must be 'exposures' or 'span', got {rule!r}")
    q, sv = np.linalg.svd(basis, full_matrices=False)[:2]
    q = q[:, sv > 1e-10 * sv.max()] if sv.size and sv.max() > 0 else q[:, :0]
    if q.shape[1] == 0 or 2 * q.shape[1] >= theta.shape[0] and rule != "span":
        return none
    # both shrunk towards the identity (the diagonal mass's guess): the span's covariances
    # from fewer states than dimensions are singular
    eye = np.eye(q.shape[1])
    cx = (1.0 - SHRINK) * np.atleast_2d(np.cov(y @ q, rowvar=False)) + SHRINK * eye
    cg = (1.0 - SHRINK) * np.atleast_2d(np.cov(g @ q, rowvar=False)) + SHRINK * eye
    try:
        lam, v = np.linalg.eigh(spd_mean(cx, np.linalg.inv(cg)))
    except np.linalg.LinAlgError:
        return none
    keep = np.flatnonzero((lam > clip) | (lam < 1.0 / clip))
    keep = keep[np.argsort(-np.abs(np.log(np.maximum(lam[keep], 1e-300))))][:max_rank]
    if keep.size == 0 or not np.all(np.isfinite(lam[keep])):
        return none
    u = (q @ v[:, keep]).T
    u, _ = np.linalg.qr(u.T)  # orthonormal to rounding
    return np.ascontiguousarray(u.T), np.clip(lam[keep], *LAM_BOUNDS)


# --- the diagonal mass: its start and its fit to a window --------------------------------


def conditional_shape_mass(cells, A, Wt, aA, aWt):
    """``trigamma`` of each entry's Gamma shape given the expected latent counts at ``(A, W)``.

    The shape is ``a + A_dk sum_n o W_kn X_dn / mu_dn`` (and the same for ``W``).
    """
    rows, cols, offs, x = cells[:4]
    mu = offs * np.einsum("ck,ck->c", A[rows], Wt[cols])
    r = np.where(x > 0, x / np.maximum(mu, 1e-300), 0.0)
    sA = np.zeros_like(A)
    sWt = np.zeros_like(Wt)
    np.add.at(sA, rows, r[:, None] * Wt[cols])
    np.add.at(sWt, cols, r[:, None] * A[rows])
    return (np.ascontiguousarray(polygamma(1, aA + A * sA)),
            np.ascontiguousarray(polygamma(1, aWt + Wt * sWt)))


def diagonal_mass(theta, grad, bounds):
    """``sqrt(var(theta) / var(grad))`` per entry (Seyboldt's gradient-based diagonal), clipped.

    ``theta, grad``: a window's states and gradients (draws x entries); ``bounds``: the range
    of the inverse mass (NaN gives 1).
    """
    v = np.sqrt(np.var(theta, axis=0) / np.maximum(np.var(grad, axis=0), 1e-300))
    return np.clip(np.nan_to_num(v, nan=1.0), *bounds)
