"""Alternative signature sets and their masses on real and synthetic catalogues.

Run with ``nice -n 10 .venv/bin/python -m benchmarks.investigations.signature_alternatives
--data breast|escc|correlated [--rank K] [--genomes 100] [--runs 4] [--particles 100]
[--budget 600] [--check auto|none] [--reference-particles 100] [--prior-chains 8]
[--threshold 15]``.

``breast``, ``escc``: the 21-genome breast or 552-genome ESCC SBS96 catalogue
(:func:`bnmfzoo.datasets.load_sbs96`); without ``--rank``, the most probable rank of
:func:`bnmfzoo.signatures.extract` (ranks 2-10, its default rank method, seed 0) is used.
``correlated``: the synthetic design of that name (9 signatures, seed 0, ``--genomes``
genomes), at ``--rank`` (default 9). For the chosen rank it runs
:func:`bnmfzoo.signatures.alternatives.alternative_signatures` (COSMIC v3.4 reference) and
prints each alternative's mass, interval, check mass, its signatures' best COSMIC matches, and
the CPU seconds (``time.process_time`` of this single-threaded process).
"""

import argparse
import time

import numpy as np

import benchmarks._common  # noqa: F401  (BNMFZOO_DATA default, one BLAS thread)


def main(argv=None):
    from bnmfzoo.datasets import load_cosmic_signatures, load_sbs96
    from bnmfzoo.datasets.signature_cohorts import signature_cohort
    from bnmfzoo.signatures.alternatives import alternative_signatures, alternatives_table

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", choices=("breast", "escc", "correlated"), default="breast")
    p.add_argument("--rank", type=int, default=None)
    p.add_argument("--genomes", type=int, default=100)
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--particles", type=int, default=100)
    p.add_argument("--moves", type=int, default=5)
    p.add_argument("--budget", type=float, default=None)
    p.add_argument("--check", choices=("auto", "none"), default="auto")
    p.add_argument("--reference-particles", type=int, default=100,
                   help="the check's particles per reference-path SMC run, per mode")
    p.add_argument("--prior-chains", type=int, default=8,
                   help="the check's plain chains from the prior (0: none)")
    p.add_argument("--threshold", type=float, default=15.0,
                   help="smallest max matched angle (degrees) between two modes")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    ref = load_cosmic_signatures("v3.4").rename(row="signature", col="channel")
    truth = None
    if a.data in ("breast", "escc"):
        X = load_sbs96(a.data)
        rank = a.rank
        if rank is None:
            from bnmfzoo.signatures import extract

            t0 = time.process_time()
            dt = extract(X, ranks=range(2, 11), random_seed=0)
            rank = int(dt.attrs["rank"])
            print(f"extract: most probable rank {rank} ({time.process_time() - t0:.0f} CPU s); "
                  f"{dt.attrs['note']}", flush=True)
    else:
        c = signature_cohort("correlated", n_genomes=a.genomes, random_seed=a.seed)
        X, truth = c.counts, c.signatures
        rank = 9 if a.rank is None else a.rank
    print(f"{a.data}: {X.shape[0]} samples, {int(X.values.sum()):,} mutations, rank {rank}; "
          f"{a.runs} runs x {a.particles} particles, {a.moves} moves, check {a.check}",
          flush=True)
    t0 = time.process_time()
    alt = alternative_signatures(X, rank, ref, n_runs=a.runs, n_particles=a.particles,
                                 n_moves=a.moves, budget_s=a.budget, random_seed=a.seed,
                                 check=None if a.check == "none" else "auto",
                                 reference_particles=a.reference_particles,
                                 prior_chains=a.prior_chains, threshold=a.threshold)
    cpu = time.process_time() - t0
    print(f"\n{alt.attrs['model']}; {cpu:.0f} CPU s (SMC and check "
          f"{alt.attrs['masses_cpu_seconds']:.0f}); log Z {alt.attrs['log_z']:.1f} +- "
          f"{alt.attrs['log_z_se']:.1f}; {alt.attrs['n_modes']} mode(s); established "
          f"{alt.attrs['established']}\n{alt.attrs['statement']}\n{alt.attrs['unknown']}\n"
          f"{alt.attrs['tried']}\n{alt.attrs['next']}")
    for name in alt["alternative"].values:
        d = alt.sel(alternative=name)
        line = (f"  {name:10s} mass {float(d['mass']):.3f} ({float(d['mass_low']):.3f}-"
                f"{float(d['mass_high']):.3f}), check {float(d['mass_check']):.3f}")
        if np.isfinite(d["mutations"].values).any():
            line += ": " + ", ".join(f"{m} {c:.2f}" for m, c in zip(d["best_match"].values,
                                                                  d["cosine"].values))
            line += "; min cosine to Alt1 " + f"{np.nanmin(d['cosine_to_first'].values):.3f}"
        print(line)
    if truth is not None:
        from bnmfzoo.signatures.matching import discovery_scores

        for name in alt["alternative"].values[alt["reached"].values]:
            s = alt["signatures"].sel(alternative=name).values
            if np.isfinite(s).all():
                f1 = discovery_scores(s, truth.values)["f1"].round(3).tolist()
                print(f"  {name}: F1 against the truth at 0.8/0.9/0.95: {f1}")
    print(alternatives_table(alt).to_string(max_rows=60))


if __name__ == "__main__":
    main()
