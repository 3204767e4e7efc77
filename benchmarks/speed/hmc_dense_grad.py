"""``HmcPoisson``'s dense gradient: the fused pass against the three matrix products, one run.

On the breast (21 x 96) and ESCC (552 x 96) SBS96 catalogues at K = 4 and 8, from the KL-NMF
start of :mod:`benchmarks.speed.converged_counts`, this times in the same process (interleaved
rounds, the median of 7) the CPU microseconds of

* one gradient, called in a loop from compiled code (no Python call overhead): the former form
  (:func:`~bnmfzoo.inference.counts._hmc_kernels.grad_dense`, three BLAS products, ``beta =
  1``) and the fused pass over the rows that ``HmcPoisson`` now uses
  (:func:`~bnmfzoo.inference.counts._hmc_fused.grad_fused`); the two are checked to agree to
  1e-10 relative first;
* one leapfrog step of a whole 100-step transition
  (:func:`~bnmfzoo.inference.counts.gibbs._hmc_moves.hmc_transition`, dense form, fixed step),
  as ``HmcPoisson`` runs it now (the fused gradient plus kicks, drifts and guards).

Results: ``docs/results/counts_dense.md``. From the project root::

    nice -n 10 .venv/bin/python -m benchmarks.speed.hmc_dense_grad
"""

import time

import numba
import numpy as np

import benchmarks  # noqa: F401 - environment defaults
from benchmarks.speed.converged_counts import load, nmf_start
from bnmfzoo.inference.counts._hmc_fused import fused_buffers, grad_fused
from bnmfzoo.inference.counts._hmc_kernels import grad_dense
from bnmfzoo.inference.counts.gibbs._hmc_moves import hmc_transition


@numba.njit
def _loop_dense(R, tA, tWt, Xd, Od, aA, bA, aW, bW, Ab, Wb, gA, gW):
    for _ in range(R):
        grad_dense(tA, tWt, Xd, Od, aA, bA, aW, bW, 1.0, Ab, Wb, gA, gW, False)


@numba.njit
def _loop_fused(R, tA, tWt, Xd, Od, aA, bA, aW, bW, b0, b1, b2, b3, gA, gW):
    for _ in range(R):
        grad_fused(tA, tWt, Xd, Od, aA, bA, aW, bW, b0, b1, b2, b3, gA, gW, False)


def one(name, rounds=7):
    """Print the three timings of one catalogue and rank."""
    X, K = load(name)
    A0, W0 = nmf_start(X, K)
    D, N = X.shape
    Xd, Od = X.astype(float), np.ones((D, N))
    tA, tWt = np.log(A0), np.ascontiguousarray(np.log(W0).T)
    prior = (np.ones((D, K)), np.ones((D, K)), np.ones((N, K)), np.ones((N, K)))
    g1, g2 = (np.empty((D, K)), np.empty((N, K))), (np.empty((D, K)), np.empty((N, K)))
    work, bufs = (np.empty((D, K)), np.empty((N, K))), fused_buffers(D, N, K)
    lp1 = grad_dense(tA, tWt, Xd, Od, *prior, 1.0, *work, *g1, True)[0]
    lp2 = grad_fused(tA, tWt, Xd, Od, *prior, *bufs, *g2, True)
    assert abs(lp1 - lp2) <= 1e-10 * abs(lp1)
    for a, b in zip(g1, g2):
        assert np.allclose(a, b, rtol=1e-10, atol=1e-10 * np.abs(a).max())
    rows, cols = (a.ravel().astype(np.int64) for a in np.indices((D, N)))
    cells = (rows, cols, np.ones(D * N), Xd.ravel().copy(), Xd, Od)
    im = (np.full((D, K), 0.01), np.full((N, K), 0.01))
    rng = np.random.default_rng(0)
    R = 4000 if D < 100 else 300
    L, T = 100, (20 if D < 100 else 3)

    def grads(fused):
        t = time.process_time()
        if fused:
            _loop_fused(R, tA, tWt, Xd, Od, *prior, *bufs, *g2)
        else:
            _loop_dense(R, tA, tWt, Xd, Od, *prior, *work, *g1)
        return (time.process_time() - t) / R

    def steps():
        t = time.process_time()
        for _ in range(T):
            hmc_transition(tA.copy(), tWt.copy(), rng.standard_normal((D, K)),
                           rng.standard_normal((N, K)), *cells, *prior, *im, 0.005, L, 0.0,
                           np.empty((D, K)), np.empty((N, K)))
        return (time.process_time() - t) / (T * L)

    grads(False), grads(True), steps()  # compile
    rows_ = np.array([(grads(False), grads(True), steps()) for _ in range(rounds)])
    d, f, s = np.median(rows_, axis=0) * 1e6
    print(f"{name:8s} {D:4d} x {N:3d}, K = {K}: gradient three products {d:7.2f} us, fused "
          f"{f:7.2f} us, ratio {d / f:4.2f}; HmcPoisson leapfrog step {s:7.2f} us", flush=True)


def main():
    for name in ("breast4", "breast8", "escc4", "escc8"):
        one(name)


if __name__ == "__main__":
    main()
