"""The barrier of a Gaussian-copula reference path, measured by the route's own pilot.

Issue #48, continuing ``reference_barrier_gaussian`` (results: ``docs/results/
masses_nb_route_2.md`` section 20), which found that a Gaussian copula over the fitted Gamma
marginals lowers both ends of the local barrier 2-6 times on breast SBS96 at K = 4. This script
measures the whole barrier ``Lambda`` of the path ``q^(1 - b) (p0 L)^b`` for Poisson NMF by the
pilot the route uses (:func:`bnmfzoo.inference.tempering._ladder.pilot_ladder`: an adaptive
SMC of 20 particles, one move per step; ``Lambda`` from its number of steps), for three paths:

* ``gibbs, product``: the route's own (the product of Gammas, the latent-count sweep);
* ``hmc, product``: the same reference, moved by HMC in ``x = log theta`` (a control: does the
  kernel change the pilot's ``Lambda``?);
* ``hmc, copula``: the Gaussian copula over the same Gamma marginals (correlation of the fit
  draws' normal scores, shrunk 5 % to the identity), moved by HMC in ``x``; exact draws
  through the Gamma quantiles.

HMC: ``n_leap`` leapfrog steps, a diagonal mass from the fit draws' variance of ``x``, one
step size for the whole run, set so that the acceptance at ``b = 1`` is about 0.7 (a valid
Metropolis kernel at every ``b``; only its efficiency depends on the choice).

    python -m benchmarks.investigations.copula_reference_barrier --data FILE --rank K \
        [--draws 8000] [--thin 5] [--pilots 3] [--seed 0] [--corr full|lw|factor:R]
"""

import argparse
import math
import time

import numpy as np
from scipy.special import gammainc, gammaincinv, gammaln, ndtr, ndtri


class CopulaPath:
    """Poisson NMF's path from a reference ``q`` (product of Gammas, optionally with a Gaussian
    copula) to the posterior, in ``x = log theta``; the sweep is HMC on the tempered target."""

    def __init__(self, Y, prior, shapes, rates, corr, scale, eps, n_leap, D, K):
        self.Y, self.D, self.K = Y, D, K
        self.N = Y.shape[1]
        self.a0, self.b0 = prior
        self.a, self.r = shapes, rates
        self.dimension = shapes.size
        self.corr = corr
        if corr is not None:
            L = np.linalg.cholesky(corr)
            self.Lc, self.P = L, np.linalg.inv(corr) - np.eye(corr.shape[0])
            self.half_logdet = np.log(np.diag(L)).sum()
        self.scale, self.eps, self.n_leap = scale, float(eps), int(n_leap)
        self.accepted, self.proposed = 0, 0

    def split(self, x):
        th = np.exp(x)
        return th[:self.D * self.K].reshape(self.D, self.K), th[self.D * self.K:].reshape(
            self.K, self.N)

    def log_post(self, x):  # log p0 + log L in x (Jacobian included), and its gradient
        A, W = self.split(x)
        mu = A @ W
        ratio = self.Y / mu - 1.0
        th = np.exp(x)
        lp = float((self.a0 * x - self.b0 * th).sum() + (self.Y * np.log(mu) - mu).sum())
        g = self.a0 - self.b0 * th
        g[:self.D * self.K] += ((ratio @ W.T) * A).ravel()
        g[self.D * self.K:] += ((A.T @ ratio) * W).ravel()
        return lp, g

    def log_q(self, x):  # the reference in x, and its gradient
        th = np.exp(x)
        lq = float((self.a * (x + np.log(self.r)) - self.r * th - gammaln(self.a)).sum())
        g = self.a - self.r * th
        if self.corr is None:
            return lq, g
        u = np.clip(gammainc(self.a, self.r * th), 1e-300, 1 - 1e-16)
        z = np.clip(ndtri(u), -37.0, 8.2)
        Pz = self.P @ z
        lq += -self.half_logdet - 0.5 * float(z @ Pz)
        log_f = self.a * np.log(self.r * th) - self.r * th - gammaln(self.a)  # log(f theta)
        dz = np.exp(log_f + 0.5 * z * z + 0.5 * math.log(2 * math.pi))
        return lq, g - Pz * dz

    def draw(self, rng):
        z = rng.standard_normal(self.dimension)
        if self.corr is not None:
            z = self.Lc @ z
            th = gammaincinv(self.a, ndtr(z)) / self.r
        else:
            th = rng.gamma(self.a, 1.0 / self.r)
        return np.log(np.maximum(th, np.finfo(float).tiny))

    def loglik(self, x):  # l = log(p0 L) - log q: the geometric path's tempered term
        return self.log_post(x)[0] - self.log_q(x)[0]

    def copy(self, x):
        return np.array(x)

    def _target(self, x, b):
        lp, gp = self.log_post(x)
        lq, gq = self.log_q(x)
        return (1 - b) * lq + b * lp, (1 - b) * gq + b * gp

    def sweep(self, x, beta, rng):
        b = float(beta)
        s = self.scale
        p = rng.standard_normal(x.size) / s  # mass diag(1 / s^2): velocity s^2 p
        u, g = self._target(x, b)
        h0 = -u + 0.5 * float((s * p) @ (s * p))
        y, q = x.copy(), p + 0.5 * self.eps * g
        for i in range(self.n_leap):
            y = y + self.eps * s * s * q
            u1, g1 = self._target(y, b)
            if not np.isfinite(u1):
                break
            q = q + (self.eps if i < self.n_leap - 1 else 0.5 * self.eps) * g1
        else:
            h1 = -u1 + 0.5 * float((s * q) @ (s * q))
            self.proposed += 1
            if np.log(rng.random()) < h0 - h1:
                x[:] = y
                self.accepted += 1
            return
        self.proposed += 1


def normal_score_correlation(z, how):
    """The copula's correlation from the fit draws' normal scores ``z`` (draws x dimension):
    ``full`` is the sample correlation shrunk 5 % to the identity; ``lw`` the Ledoit-Wolf
    shrinkage of the standardized scores; ``factor:R`` the sample correlation's R leading
    eigenpairs plus the diagonal that makes its diagonal one (a correlation with R degrees of
    structure, whose estimate needs fewer draws than the full one)."""
    c = np.corrcoef(z, rowvar=False)
    if how == "full":
        return 0.95 * c + 0.05 * np.eye(c.shape[0])
    if how == "lw":
        from sklearn.covariance import LedoitWolf
        zs = (z - z.mean(0)) / z.std(0)
        cov = LedoitWolf().fit(zs).covariance_
        d = np.sqrt(np.diag(cov))
        return cov / np.outer(d, d)
    if how.startswith("factor:"):
        r = int(how.split(":")[1])
        w, v = np.linalg.eigh(c)
        w, v = w[::-1][:r], v[:, ::-1][:, :r]
        low = (v * w) @ v.T
        low *= 0.95  # keep the diagonal's remainder away from zero
        return low + np.diag(1.0 - np.diag(low))
    if how.startswith("block+factor:"):
        r = int(how.split(":")[1])
        w, v = np.linalg.eigh(c)
        w, v = w[::-1][:r], v[:, ::-1][:, :r]
        low = (v * w) @ v.T
        resid = c - low  # positive semi-definite: the leading eigenpairs removed
        out = low + block_diagonal(resid, BLOCKS)
        return 0.95 * out + 0.05 * np.eye(c.shape[0])
    raise ValueError(f"--corr {how!r}: full, lw, factor:R or block+factor:R")


#: the blocks of ``block+factor:R``: set by ``main`` (each row of A, each column of W)
BLOCKS = []


def block_diagonal(m, blocks):
    """``m`` with only the entries inside the index blocks kept (each a principal submatrix, so
    the result is positive semi-definite when ``m`` is)."""
    out = np.zeros_like(m)
    for b in blocks:
        out[np.ix_(b, b)] = m[np.ix_(b, b)]
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--draws", type=int, default=8000)
    p.add_argument("--thin", type=int, default=5)
    p.add_argument("--burn", type=int, default=500)
    p.add_argument("--widen", type=float, default=0.7)
    p.add_argument("--n-leap", type=int, default=20)
    p.add_argument("--pilots", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corr", default="full",
                   help="the normal scores' correlation: full (shrunk 5 %%), lw (Ledoit-Wolf) "
                        "or factor:R (R leading eigenvectors plus a diagonal), "
                        "block+factor:R (those plus the rest's blocks: each row of A, each "
                        "column of W)")
    p.add_argument("--copula-only", action="store_true", help="skip the two product rows")
    a = p.parse_args(argv)

    from bnmfzoo._cli.masses import _build, _read
    from bnmfzoo.inference.counts._kl_start import kl_nmf_start
    from bnmfzoo.inference.reference_path import ReferencePath, reference_adapter
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.inference.tempering._ladder import pilot_ladder

    t0 = time.process_time()
    X = np.asarray(_read(a.data), float)
    fam = family_of_model(_build(X, a.rank, "poisson"))
    ad = reference_adapter(fam)
    D, N = fam.tempered.problem.shape
    K = a.rank
    assert X.shape == (D, N)
    rng = np.random.default_rng(a.seed)
    s = kl_nmf_start(fam.tempered.problem, fam.draw_prior(rng))
    perm = np.arange(K)
    for _ in range(a.burn):
        fam.tempered.sweep(s, 1.0, rng)
    theta = []
    for _ in range(a.draws):
        for _ in range(a.thin):
            fam.tempered.sweep(s, 1.0, rng)
        theta.append(ad.draws(s, perm))
    theta = np.array(theta)
    x = np.log(theta)
    q = ad.fit(theta, a.widen)
    shapes = np.concatenate([q["aA"].ravel(), q["aW"].ravel()])
    rates = np.concatenate([q["bA"].ravel(), q["bW"].ravel()])
    a0 = np.concatenate([ad.aA.ravel(), ad.aW.ravel()])
    b0 = np.concatenate([ad.bA.ravel(), ad.bW.ravel()])
    z = ndtri(np.clip(gammainc(shapes, rates * theta), 1e-300, 1 - 1e-16))
    idx_a = np.arange(D * K).reshape(D, K)
    idx_w = D * K + np.arange(K * N).reshape(K, N)
    BLOCKS[:] = [idx_a[d] for d in range(D)] + [idx_w[:, n] for n in range(N)]
    corr = normal_score_correlation(z, a.corr)
    scale = x.std(0)
    print(f"{a.data}: {D} x {N}, poisson, rank {K}; {a.draws} fit draws ({a.thin} sweeps "
          f"apart), dimension {x.shape[1]}; {time.process_time() - t0:.0f} CPU s", flush=True)

    def tuned(corr_or_none):
        eps = 0.5
        for _ in range(12):  # the step size whose acceptance at b = 1 is about 0.7
            path = CopulaPath(X, (a0, b0), shapes, rates, corr_or_none, scale, eps, a.n_leap,
                              D, K)
            for i in range(0, x.shape[0], max(1, x.shape[0] // 40)):
                path.sweep(x[i].copy(), 1.0, rng)
            acc = path.accepted / max(path.proposed, 1)
            if 0.6 <= acc <= 0.85:
                break
            eps *= 0.6 if acc < 0.6 else 1.4
        return CopulaPath(X, (a0, b0), shapes, rates, corr_or_none, scale, eps, a.n_leap, D, K), \
            acc

    ref = ReferencePath(ad, q)
    rows = [] if a.copula_only else [("gibbs, product", ref, None)]
    kinds = (("hmc, product", None),) if not a.copula_only else ()
    for name, c in kinds + ((f"hmc, copula ({a.corr})", corr),):
        path, acc = tuned(c)
        rows.append((name, path, acc))
    for name, path, acc in rows:
        t1 = time.process_time()
        lams = [pilot_ladder(path, np.random.default_rng([a.seed, 7, r]))[1]
                for r in range(a.pilots)]
        extra = "" if acc is None else (f"; HMC step {path.eps:.3g} x {a.n_leap}, acceptance at "
                                        f"b = 1 {acc:.2f}, over the pilots "
                                        f"{path.accepted / max(path.proposed, 1):.2f}")
        print(f"{name}: pilot barrier {', '.join(f'{v:.1f}' for v in lams)} "
              f"({time.process_time() - t1:.0f} CPU s{extra})", flush=True)
    print(f"CPU {time.process_time() - t0:.0f} s")


if __name__ == "__main__":
    main()
