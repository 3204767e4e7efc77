"""How much of a mode's reference-path barrier is the product reference's missing correlation?

Issue #48: the per-mode tempering's cost grows about as the cube of the barrier ``Lambda`` of
the path ``q^(1 - b) (p0 L)^b`` from the fitted reference ``q`` (a product of Gammas, one per
entry) to the mode. This script asks what a reference with the posterior's correlations would
leave, before anyone builds one.

From plain Gibbs chains in one mode (the NB or Poisson sweep at ``b = 1`` from a KL-NMF start),
in log coordinates ``x = log theta`` (``theta``: the entries of ``A``, ``W`` and the NB
dispersion):

1. ``Lambda`` of the fitted product reference measured by the route's own pilot
   (:func:`bnmfzoo.inference.tempering._ladder.pilot_ladder`, 20 particles; Syed et al. 2022).
2. The Gaussian theory of the same barrier: with the posterior's log-space covariance
   ``S`` and the reference's ``R`` (diagonal, trigamma of the Gamma shapes), and ``e_i`` the
   eigenvalues of ``R^1/2 S^-1 R^1/2``, the geometric path between two Gaussians with one
   mean has ``Var_b(log pi - log q) = 1/2 sum_i ((e_i - 1) / (1 + b (e_i - 1)))^2`` and
   ``lambda(b) = sd_b / sqrt(pi)`` (Syed et al. 2022, Sec. 4). If it matches (1), the
   barrier is the covariance misfit.
3. The endpoint ``lambda(1) = sd_pi(log pi - log q) / sqrt(pi)`` over the posterior draws,
   for the product reference and for a Gaussian in ``x`` with the draws' full covariance
   (shrunk ``--shrink`` to its diagonal, 5 % by default): the non-Gaussian part a
   correlated reference would keep.
4. The other endpoint, ``lambda(0) = sd_q(log pi - log q) / sqrt(pi)``, over exact draws of
   each reference.
5. Both endpoints for a Gaussian copula over the product's Gamma marginals (its correlation
   from the draws' normal scores): the correlation without the log-normal's tails.

    python -m benchmarks.investigations.reference_barrier_gaussian --data FILE --rank K \
        [--model negative_binomial|poisson] [--draws 2000] [--seed 0]
"""

import argparse
import math
import time

import numpy as np
from scipy.special import polygamma


def gaussian_barrier(e, n_grid=2001):
    """``Lambda`` of the geometric path between two same-mean Gaussians (module docstring)."""
    b = np.linspace(0.0, 1.0, n_grid)
    d = (e[None, :] - 1.0) / (1.0 + b[:, None] * (e[None, :] - 1.0))
    lam = np.sqrt(0.5 * (d * d).sum(1)) / math.sqrt(math.pi)
    return float(np.trapezoid(lam, b)), lam


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--model", default="negative_binomial")
    p.add_argument("--draws", type=int, default=2000)
    p.add_argument("--thin", type=int, default=2)
    p.add_argument("--burn", type=int, default=500)
    p.add_argument("--widen", type=float, default=0.7)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shrink", type=float, default=0.05,
                   help="weight of the diagonal in the full covariance (0.05)")
    a = p.parse_args(argv)

    from bnmfzoo._cli.masses import _build, _read
    from bnmfzoo.inference.counts._kl_start import kl_nmf_start
    from bnmfzoo.inference.reference_path import ReferencePath, reference_adapter
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.inference.tempering._ladder import pilot_ladder

    t0 = time.process_time()
    X = _read(a.data)
    fam = family_of_model(_build(X, a.rank, a.model))
    ad = reference_adapter(fam)
    rng = np.random.default_rng(a.seed)
    s = kl_nmf_start(fam.tempered.problem, fam.draw_prior(rng))
    perm = np.arange(a.rank)
    for _ in range(a.burn):
        fam.tempered.sweep(s, 1.0, rng)
    theta, lj = [], []
    for _ in range(a.draws):
        for _ in range(a.thin):
            fam.tempered.sweep(s, 1.0, rng)
        theta.append(ad.draws(s, perm))
        lj.append(ad.loglik(s) + ad.log_p0(s))
    theta, lj = np.array(theta), np.array(lj)
    x = np.log(theta)
    log_post = lj + x.sum(1)  # log density of x = log theta (Jacobian)
    print(f"{a.data}: {X.shape[0]} x {X.shape[1]}, {a.model}, rank {a.rank}; {a.draws} draws "
          f"({a.thin} sweeps apart), dimension {x.shape[1]}; "
          f"{time.process_time() - t0:.0f} CPU s", flush=True)

    # every reference is fitted to the even draws and its lambda(1) read on the odd ones
    fit, ev = slice(0, None, 2), slice(1, None, 2)
    q = ad.fit(theta[fit], a.widen)
    shapes = np.concatenate([q["aA"].ravel(), q["aW"].ravel()]
                            + ([[q["alpha"][0]]] if "alpha" in q else []))
    path = ReferencePath(ad, q)
    lams = [pilot_ladder(path, np.random.default_rng([a.seed, r]))[1] for r in range(3)]
    print(f"1. pilot barrier of the product reference (widen {a.widen}): "
          f"{', '.join(f'{v:.1f}' for v in lams)}", flush=True)

    S = np.cov(x[fit], rowvar=False)
    R = polygamma(1, shapes)  # the reference's variance of log theta
    r = np.sqrt(R)
    Sinv = np.linalg.inv(0.95 * S + 0.05 * np.diag(np.diag(S)))
    e = np.linalg.eigvalsh(r[:, None] * Sinv * r[None, :])
    lam_g, prof = gaussian_barrier(e)
    print(f"2. Gaussian theory for it: Lambda {lam_g:.1f}; lambda(0) {prof[0]:.1f}, "
          f"lambda(1/2) {prof[len(prof) // 2]:.2f}, lambda(1) {prof[-1]:.2f}; precision ratios "
          f"e: median {np.median(e):.2f}, {np.sum(e > 4)} above 4, {np.sum(e < 0.25)} below "
          f"1/4, max {e.max():.1f}, min {e.min():.3f}", flush=True)
    diag_only = np.diag(S) / R  # the reference's marginal misfit alone
    print(f"   marginal variance posterior / reference: median {np.median(diag_only):.2f} "
          f"(1 / widen = {1 / a.widen:.2f} expected: the fit takes widen times the variance)",
          flush=True)

    D, N = ad.problem.shape
    K = a.rank

    def state_of(xi):  # x = log theta back to a state of the family
        th = np.exp(xi)
        return {"A": th[:D * K].reshape(D, K), "W": th[D * K:(D + N) * K].reshape(K, N),
                "rates": {}, "alpha": th[-1] if "alpha" in q else ad.problem.alpha}

    def log_q_product(xs):  # the product reference in x (Jacobian included)
        return np.array([ad.log_q(q, state_of(xi)) + xi.sum() for xi in xs])

    mu = x[fit].mean(0)
    Sg = (1 - a.shrink) * S + a.shrink * np.diag(np.diag(S))
    L = np.linalg.cholesky(Sg)

    def log_q_gaussian(xs):
        z = np.linalg.solve(L, (xs - mu).T)
        return -0.5 * (z * z).sum(0) - np.log(np.diag(L)).sum() - 0.5 * xs.shape[1] * math.log(
            2 * math.pi)

    lq_prod, lq_full = log_q_product(x[ev]), log_q_gaussian(x[ev])
    sd_prod = float(np.std(log_post[ev] - lq_prod))
    sd_full = float(np.std(log_post[ev] - lq_full))
    print(f"3. lambda(1) from the draws: product reference {sd_prod / math.sqrt(math.pi):.2f}, "
          f"full-covariance Gaussian in log space {sd_full / math.sqrt(math.pi):.2f}; "
          f"sd of log pi - log q {sd_prod:.2f} and {sd_full:.2f} nats", flush=True)

    def log_pi(xs):  # the posterior's log density in x at reference draws
        return np.array([ad.loglik(st) + ad.log_p0(st) + xi.sum()
                         for xi, st in ((xi, state_of(xi)) for xi in xs)])

    n0 = min(a.draws, 2000)
    xp = []
    for _ in range(n0):
        st = ad.draw_q(q, rng)
        xp.append(np.log(ad.draws(st, perm)))
    xp = np.array(xp)
    sd0_prod = float(np.std(log_pi(xp) - log_q_product(xp)))
    xf = mu + rng.standard_normal((n0, x.shape[1])) @ L.T
    sd0_full = float(np.std(log_pi(xf) - log_q_gaussian(xf)))
    print(f"4. lambda(0) from {n0} reference draws: product reference "
          f"{sd0_prod / math.sqrt(math.pi):.2f}, full-covariance Gaussian "
          f"{sd0_full / math.sqrt(math.pi):.2f}", flush=True)

    # a Gaussian copula over the product's Gamma marginals: its correlation from the draws'
    # normal scores (shrunk like the full covariance), exact draws through the Gamma quantiles
    from scipy.stats import gamma as gamma_dist
    from scipy.stats import norm

    rates = np.concatenate([q["bA"].ravel(), q["bW"].ravel()]
                           + ([[q["alpha"][1]]] if "alpha" in q else []))

    def scores(th):
        u = np.clip(gamma_dist.cdf(th, shapes, scale=1.0 / rates), 1e-12, 1 - 1e-12)
        return norm.ppf(u)

    zc = scores(theta[fit])
    C = np.corrcoef(zc, rowvar=False)
    C = (1 - a.shrink) * C + a.shrink * np.eye(C.shape[0])
    Lc = np.linalg.cholesky(C)
    Cinv_minus_i = np.linalg.inv(C) - np.eye(C.shape[0])
    half_logdet = np.log(np.diag(Lc)).sum()

    def log_q_copula(xs):
        th = np.exp(xs)
        z = scores(th)
        marg = (gamma_dist.logpdf(th, shapes, scale=1.0 / rates)).sum(1)
        return marg - half_logdet - 0.5 * np.einsum("ni,ij,nj->n", z, Cinv_minus_i, z) \
            + xs.sum(1)

    sd1_cop = float(np.std(log_post[ev] - log_q_copula(x[ev])))
    zd = rng.standard_normal((n0, x.shape[1])) @ Lc.T
    thd = gamma_dist.ppf(norm.cdf(zd), shapes, scale=1.0 / rates)
    thd = np.maximum(thd, np.finfo(float).tiny)
    xd = np.log(thd)
    sd0_cop = float(np.std(log_pi(xd) - log_q_copula(xd)))
    print(f"5. Gaussian copula over the Gamma marginals: lambda(1) "
          f"{sd1_cop / math.sqrt(math.pi):.2f}, lambda(0) {sd0_cop / math.sqrt(math.pi):.2f}",
          flush=True)
    print(f"CPU {time.process_time() - t0:.0f} s")


if __name__ == "__main__":
    main()
