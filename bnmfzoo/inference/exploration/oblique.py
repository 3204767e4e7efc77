"""Oblique-manifold geometry for RRT exploration (Masood & Doshi-Velez 2016, §3.2).

An NMF of ``X`` near its rank-R SVD ``X ~ A_svd W_svd`` is a change of basis ``Q`` (R x R):
``A = floor(A_svd Q)``, ``W = floor(Q^-1 W_svd)``. ``Q`` lives on the oblique manifold
``OB(R) = {Q : diag(Q'Q) = I, det Q != 0}`` (unit-norm columns), which removes the scale
ambiguity. Tangent projection ``P_Q(Z) = Z - Q ddiag(Q'Z)`` and the column-normalising
retraction follow Absil et al. (2009). Pure NumPy.
"""

import numpy as np

#: |det Q| below this counts as singular (our choice; Masood & Doshi-Velez 2016 give none)
DET_TOL = 1e-8


def svd_basis(X, rank):
    """Rank-``rank`` SVD split ``A_svd = U_R`` (orthonormal), ``W_svd = S_R V_R'``.

    Signs are fixed so that every column of ``A_svd`` has a non-negative sum (the top one is
    then non-negative for non-negative data).

    Returns
    -------
    A_svd : numpy.ndarray
        D x R.
    W_svd : numpy.ndarray
        R x N.
    """
    U, S, Vt = np.linalg.svd(np.asarray(X, dtype=float), full_matrices=False)
    U, S, Vt = U[:, :rank], S[:rank], Vt[:rank]
    sign = np.where(U.sum(axis=0) < 0, -1.0, 1.0)
    return U * sign, (S * sign)[:, None] * Vt


def normalize(Q):
    """Retraction onto OB(R): scale every column to unit Euclidean norm."""
    norms = np.sqrt((Q * Q).sum(axis=0))
    return Q / np.where(norms > 0, norms, 1.0)


def is_invertible(Q, tol=DET_TOL):
    """True if ``|det Q| >= tol`` (columns of unit norm, so ``|det Q| <= 1``)."""
    return bool(abs(np.linalg.det(Q)) >= tol)


def random_oblique(rank, rng):
    """Uniform draw on OB(R): iid N(0, I) columns, normalised, singular draws rejected."""
    while True:
        Q = normalize(rng.standard_normal((rank, rank)))
        if is_invertible(Q):
            return Q


def tangent_project(Q, Z):
    """Project ``Z`` onto the tangent space of OB(R) at ``Q``: ``Z - Q ddiag(Q'Z)``."""
    return Z - Q * np.sum(Q * Z, axis=0)


def step_towards(Q, target, size):
    """One retraction step of Frobenius length ``size`` from ``Q`` towards ``target``.

    The direction is the tangent projection of ``target - Q``, normalised to unit Frobenius
    norm (our choice where the paper's Sec. 3.2 is silent). Returns None when it vanishes.
    """
    xi = tangent_project(Q, target - Q)
    norm = np.linalg.norm(xi)
    if norm <= 1e-14:
        return None
    return normalize(Q + (size / norm) * xi)


def factors(Q, A_svd, W_svd):
    """``(floor(A_svd Q), floor(Q^-1 W_svd))``."""
    A = np.maximum(A_svd @ Q, 0.0)
    W = np.maximum(np.linalg.solve(Q, W_svd), 0.0)
    return A, W


def q_from_factors(A, A_svd):
    """Least-squares change of basis ``argmin_Q |A - A_svd Q|`` (orthonormal A_svd), on OB(R)."""
    return normalize(A_svd.T @ np.asarray(A, dtype=float))


def frobenius_to(Qs, Q):
    """Frobenius distances from every node in ``Qs`` ``(T, R, R)`` to ``Q``."""
    return np.sqrt(((Qs - Q[None]) ** 2).sum(axis=(1, 2)))
