"""``fit_particles`` on CCLE IC50 under SILF, M = 25: the valid default's V, U and M_eff.

Issue 16 asks that ``fit_particles`` on a real data set return weights from the valid default
(PyMC's value space with the log-Jacobian, median-heuristic IMQ kernel) with the V-statistic,
the U-statistic and the effective number of particles in its ``diagnostics`` group. This prints
them for the paper's Algorithm 1 (Q-Transform, no rejuvenation) and with HMC rejuvenation
(``rejuvenate=``), each with its CPU seconds. Data: ``load_ccle("ic50")`` (504 x 24, 3.5 %
missing), rank 5 as in :mod:`benchmarks.reproduce.masood2019.ksd_time`, SILF threshold from
the cached 50 reference fits.

Run: ``nice -n 10 python -m benchmarks.reproduce.gold_standard.ccle_silf [--steps 100]``.
"""

import argparse
import time

from benchmarks.reproduce.masood2019._shared import cached_epsilon


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, nargs="*", default=[100])
    ap.add_argument("--M", type=int, default=25)
    args = ap.parse_args(argv)
    from bnmfzoo.datasets import load_ccle
    from bnmfzoo.inference import fit_particles
    from bnmfzoo.models import silf

    X = load_ccle("ic50")
    eps, _ = cached_epsilon("ccle", X, 5)
    model = silf(X, 5, epsilon=eps)
    print(f"CCLE IC50 {X.shape}, SILF rank 5, epsilon {eps:.4g}, M = {args.M}")
    print(f"{'variant':>22} {'CPU s':>7} {'ksd_v':>10} {'ksd_u':>10} {'ksd_u unif':>10} "
          f"{'n_eff':>6} {'accept':>6}")
    for steps in [None, *args.steps]:
        c0 = time.process_time()
        dt = fit_particles(model, n_particles=args.M, random_seed=0, progressbar=False,
                           rejuvenate=steps)
        cpu = time.process_time() - c0
        d = dt["diagnostics"]
        acc = float(d["rejuvenate_accept"]) if "rejuvenate_accept" in d else float("nan")
        name = "Q-Transform (paper)" if steps is None else f"+ HMC rejuvenate {steps}"
        print(f"{name:>22} {cpu:>7.1f} {float(d['ksd_v']):>10.4g} {float(d['ksd_u']):>10.4g} "
              f"{float(d['ksd_u_uniform']):>10.4g} {float(d['n_eff']):>6.1f} {acc:>6.2f}  "
              f"space={d['ksd_v'].attrs.get('space')}", flush=True)


if __name__ == "__main__":
    main()
