"""Chib's evidence of K = 8 against K = 9 on the ``correlated`` design (truth K = 9).

Run with ``nice -n 10 .venv/bin/python -m benchmarks.investigations.chib_eight_nine
[--seeds 100 101 102] [--ranks 8 9] [--runs 3] [--run-start 0] [--genomes 100] [--burn 300]
[--keep 500] [--block-burn 20] [--block-keep 150] [--out FILE.jsonl]``.

The calibration's cohort (:func:`bnmfzoo.datasets.signature_cohorts.signature_cohort`, Poisson
counts, burden median 2,000) is given to :func:`bnmfzoo.signatures.evidence.chib_log_evidence`
(Poisson NMF, uniform Dirichlet signatures, ``Gamma(1, K / m_n)`` exposures) ``--runs`` times
per rank with independent seeds and starts. Per run: the log evidence, its within-run standard
error, the smallest Kish effective number of the Rao-Blackwell terms (``min_ess``; per block of
rows too, recorded around the library's block ordinate), the share of
the first ordinate carried by relabellings, the sweeps and the CPU seconds; per rank the mean and
the spread of the runs; per cohort ``log Z(9) - log Z(8)`` and the implied ``P(9 | data)``
under a uniform prior over {8, 9}. Each run is appended to ``--out`` as soon as it finishes.
"""

import argparse
import json
import time
import warnings

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)
from bnmfzoo.datasets.signature_cohorts import signature_cohort
from bnmfzoo.signatures import evidence
from bnmfzoo.signatures.evidence import chib_log_evidence

_BLOCKS = []
_ordinate = evidence._block_ordinate


def _recording_ordinate(s_dk, alpha, T_star, d0, d1, perms, n_perms_total):
    """The library's block ordinate, its Kish ESS recorded per block (last call per block)."""
    out = _ordinate(s_dk, alpha, T_star, d0, d1, perms, n_perms_total)
    if _BLOCKS and _BLOCKS[-1][0] == d0:
        _BLOCKS.pop()
    _BLOCKS.append((d0, out[2], len(s_dk)))
    return out


evidence._block_ordinate = _recording_ordinate


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--design", default="correlated")
    p.add_argument("--seeds", type=int, nargs="+", default=[100, 101, 102])
    p.add_argument("--ranks", type=int, nargs="+", default=[8, 9])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--run-start", type=int, default=0, help="first run index (its seed)")
    p.add_argument("--genomes", type=int, default=100)
    p.add_argument("--burden", type=float, default=2000.0)
    p.add_argument("--burn", type=int, default=300)
    p.add_argument("--keep", type=int, default=500)
    p.add_argument("--block-burn", type=int, default=20)
    p.add_argument("--block-keep", type=int, default=150)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    for seed in args.seeds:
        c = signature_cohort(args.design, n_genomes=args.genomes, burden_median=args.burden,
                             random_seed=seed)
        Y = c.counts.values.T  # channels x samples (the cohort is samples x channels)
        res = {}
        for K in args.ranks:
            vals = []
            for run in range(args.run_start, args.run_start + args.runs):
                t0 = time.process_time()
                _BLOCKS.clear()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = chib_log_evidence(Y, K, n_burn=args.burn, n_keep=args.keep,
                                            block_burn=args.block_burn,
                                            block_keep=args.block_keep,
                                            random_seed=[seed, K, run])
                rec = dict(design=args.design, seed=seed, genomes=args.genomes, rank=K, run=run,
                           burn=args.burn, keep=args.keep, block_burn=args.block_burn,
                           block_keep=args.block_keep,
                           **{k: float(out[k]) for k in (
                               "log_evidence", "log_lik", "log_prior", "log_ord_T", "log_ord_V",
                               "se_within", "min_ess", "switch_share")},
                           sweeps=int(out["sweeps"]), cpu=time.process_time() - t0,
                           block_ess=[[int(b), float(e), int(g)] for b, e, g in _BLOCKS])
                low = sorted(_BLOCKS, key=lambda b: b[1])[:4]
                vals.append(rec["log_evidence"])
                print(f"seed {seed} K {K} run {run}: log Z {rec['log_evidence']:.1f} "
                      f"(se_within {rec['se_within']:.2f}, min_ess {rec['min_ess']:.1f}, "
                      f"switch {rec['switch_share']:.3f}, log_lik {rec['log_lik']:.1f}, "
                      f"{rec['sweeps']} sweeps, {rec['cpu']:.0f} CPU s); lowest block ESS "
                      + ", ".join(f"row {b}: {e:.1f} of {g}" for b, e, g in low), flush=True)
                if args.out:
                    with open(args.out, "a") as fh:
                        fh.write(json.dumps(rec) + "\n")
            res[K] = np.array(vals)
            print(f"seed {seed} K {K}: mean {res[K].mean():.1f}, range "
                  f"{res[K].min():.1f} .. {res[K].max():.1f} (spread "
                  f"{np.ptp(res[K]):.1f})", flush=True)
        if 8 in res and 9 in res:
            d = res[9].mean() - res[8].mean()
            print(f"seed {seed}: log Z(9) - log Z(8) = {d:.1f} (runs: "
                  f"{res[9].min() - res[8].max():.1f} .. {res[9].max() - res[8].min():.1f}); "
                  f"P(9 | data, uniform over 8-9) = {1 / (1 + np.exp(-d)):.3g}", flush=True)


if __name__ == "__main__":
    main()
