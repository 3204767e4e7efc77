"""Mixture-ELBO arithmetic of nonparametric VI (Gershman et al. 2012; Masood & Doshi-Velez 2016).

The variational family is a weighted mixture of isotropic Gaussians over ``theta = vec(A, W)``:
``q(theta) = sum_m w_m N(theta; mu_m, s2_m I)``. Its entropy is bounded below by Jensen's
inequality (the weighted form of Gershman et al. 2012, eq. 2),
``H_lb = -sum_m w_m log sum_j w_j N(mu_m; mu_j, (s2_m + s2_j) I)``, computed in log space; the
expectation of the log joint uses the second-order expansion
``sum_m w_m [f(mu_m) + s2_m / 2 tr H(mu_m)]`` (Gershman et al. 2012, eq. 5).

Pure NumPy.
"""


import numpy as np

LOG_2PI = float(np.log(2.0 * np.pi))


def _logsumexp_rows(a):
    """``log(sum(exp(a), axis=1))`` for a 2-D array of finite values, shape ``(M, 1)``.

    The ONVI loop evaluates the entropy bound thousands of times on tiny mixtures, where
    ``scipy.special.logsumexp``'s generic machinery cost about a quarter of an RRT run.
    """
    m = a.max(axis=1, keepdims=True)
    return m + np.log(np.exp(a - m).sum(axis=1, keepdims=True))




def entropy_lower_bound(weights, variances, sqdist, P):
    """Weighted Jensen lower bound on the entropy of an isotropic Gaussian mixture.

    Parameters
    ----------
    weights, variances : numpy.ndarray
        ``(M,)``.
    sqdist : numpy.ndarray
        ``(M, M)`` squared distances between the means.
    P : int
        Dimension.

    Returns
    -------
    float
    """
    w = np.asarray(weights, dtype=float)
    keep = w > 0
    if not keep.all():
        w, variances, sqdist = w[keep], variances[keep], sqdist[np.ix_(keep, keep)]
    S = variances[:, None] + variances[None, :]
    logN = -0.5 * P * (LOG_2PI + np.log(S)) - sqdist / (2.0 * S)
    inner = _logsumexp_rows(logN + np.log(w)[None, :])[:, 0]
    return float(-np.sum(w * inner))


def mixture_elbo(weights, variances, expect, sqdist, P):
    """``sum_m w_m e_m + H_lb`` where ``e_m = f(mu_m) + s2_m / 2 tr H_m``."""
    w = np.asarray(weights, dtype=float)
    pos = w > 0
    return float(np.sum(w[pos] * np.asarray(expect)[pos])) + entropy_lower_bound(
        w, np.asarray(variances, dtype=float), sqdist, P
    )


def _entropy_grad_means(means, weights, variances, P):
    """Gradient of the entropy lower bound with respect to every mean, ``(M, P)``."""
    sq = np.sum(means**2, axis=1)
    sqdist = np.maximum(sq[:, None] + sq[None, :] - 2.0 * means @ means.T, 0.0)
    S = variances[:, None] + variances[None, :]
    logN = -0.5 * P * (LOG_2PI + np.log(S)) - sqdist / (2.0 * S)
    log_r = logN + np.log(weights)[None, :]
    r = np.exp(log_r - _logsumexp_rows(log_r))  # r[m, j]
    # dH/dmu_n = sum_j w_n r_nj (mu_n - mu_j)/S_nj + sum_m w_m r_mn (mu_n - mu_m)/S_mn
    C = weights[:, None] * r / S + (weights[:, None] * r / S).T
    return C.sum(axis=1)[:, None] * means - C @ means

