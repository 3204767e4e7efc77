"""CPU per transition of a Poisson rung with a Gaussian-copula reference: compiled vs NumPy.

The per-mode tempering and SMC of the ``bnmfzoo masses`` Poisson route move each rung of the
copula's path by one HMC transition of ``COPULA_LEAPFROG`` leapfrog steps (two at ``b = 1``).
This times that transition in its two forms on one matrix, in one process and on the same
states: the compiled trajectory
(:func:`bnmfzoo.inference.counts.tempering._hmc_copula.hmc_step_copula`, what the adapter's
sweep runs) and the NumPy one (:func:`bnmfzoo.inference.counts.tempering._hmc_term.
hmc_step_term`, reached with ``term=``), and prints the medians of ``--repeats`` timings of
``--transitions`` transitions each and their ratio. The copula is fitted as the route fits it
(:data:`~bnmfzoo.inference.counts.tempering._reference_poisson.COPULA_WIDEN`, the adapter's
factors) to ``--draws`` latent-count sweep draws from a KL-NMF start::

    python -m benchmarks.speed.copula_rung --data ESCC_SBS96.txt --rank 4
"""

import argparse
import statistics
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)


def _fitted(X, K, n_draws, rng):
    from sklearn.decomposition import NMF

    from bnmfzoo.inference.counts.tempering._reference_poisson import (
        COPULA_LEAPFROG,
        COPULA_WIDEN,
    )
    from bnmfzoo.inference.reference_path import reference_adapter
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.models import poisson

    fam = family_of_model(poisson(X, K))
    ad = reference_adapter(fam, "hmc", COPULA_LEAPFROG)
    nmf = NMF(K, beta_loss="kullback-leibler", solver="mu", max_iter=500, init="nndsvda",
              random_state=0).fit(X)
    s = fam.draw_prior(rng)
    s["A"], s["W"] = np.maximum(nmf.transform(X), 1e-3), np.maximum(nmf.components_, 1e-3)
    draws = []
    for i in range(200 + 2 * n_draws):
        fam.tempered.sweep(s, 1.0, rng)
        if i >= 200 and i % 2:
            draws.append(ad.draws(s, np.arange(K)))
    return ad, ad.fit_copula(np.array(draws), COPULA_WIDEN[0]), s


def main(argv=None):
    from bnmfzoo._fitcli import read_matrix

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="a count matrix file bnmfzoo fit reads")
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--transitions", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    X = np.asarray(read_matrix(args.data), float)
    rng = np.random.default_rng(args.seed)
    ad, q, s = _fitted(X, args.rank, args.draws, rng)
    cop = q["copula"]
    print(f"{X.shape[0]} x {X.shape[1]}, K = {args.rank}: {cop.dimension} factor entries, "
          f"{cop.U.shape[1]} factors, {int((~cop._wilson_hilferty).sum())} exact scores")
    print("beta  compiled ms  numpy ms  ratio  acceptance (compiled, numpy)")
    for b in (0.05, 0.5, 0.95):
        for _ in range(40):  # adapt the step at this rung
            ad.sweep(q, s, b, rng)
        ad.freeze()
        start = ad.copy(s)
        times = {"compiled": [], "numpy": []}
        acc = {}
        for _ in range(args.repeats):
            for form in ("compiled", "numpy"):
                state = ad.copy(start)
                shapes = (b * ad.aA + (1 - b) * q["aA"], b * ad.bA + (1 - b) * q["bA"],
                          b * ad.aW + (1 - b) * q["aW"], b * ad.bW + (1 - b) * q["bW"])
                kw = ({"copula": cop} if form == "compiled" else
                      {"term": cop.copula_theta, "term_grad": cop.surrogate_grad})
                ad.moves.n_try, ad.moves.acc_sum = 0, 0.0
                t0 = time.process_time()
                for _ in range(args.transitions):
                    A, W = ad.moves.run(state["A"], state["W"], *shapes, b, rng,
                                        ref_shapes=(q["aA"], q["aW"]), **kw)
                    state.update(A=A, W=W)
                times[form].append(1e3 * (time.process_time() - t0) / args.transitions)
                acc[form] = ad.moves.acceptance()
        c, n = statistics.median(times["compiled"]), statistics.median(times["numpy"])
        print(f"{b:4.2f}  {c:11.2f}  {n:8.2f}  {n / c:5.2f}  {acc['compiled']:.2f}, "
              f"{acc['numpy']:.2f}")
        ad.moves.adapting = True


if __name__ == "__main__":
    main()
