"""log Z(K) of a Poisson NMF at each candidate rank from the masses route's per-mode estimators,
started at KL-refined chains (no SMC from the prior): an investigation of ``P(K | data)`` on
the ``correlated`` signature design (``docs/results/signatures_calibration_2.md``, last
section).

At each rank the modes are those the route's plain chains find (8 chains, each the best of
KL-refined prior draws by log joint, 300 sweeps:
:func:`bnmfzoo.inference.mode_bridge.prior_chain_modes`); each is estimated by the
reference-path SMC and by reference-path parallel tempering with the Poisson route's settings
(:func:`bnmfzoo.inference.reference_tempering.per_mode_check`, the settings of
``bnmfzoo masses --model poisson``). The per-mode total ``log K! + logsumexp`` is a lower bound
on ``log Z(K)`` where the chains missed a mode, and equals it where they did not.

    nice -n 10 python -m benchmarks.investigations.rank_evidence_kl_modes --ranks 8 9 \
        --genomes 100 --cohort-seed 0 --out rank_evidence.jsonl
"""
import argparse
import json
import math
import sys
import time

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread, BNMFZOO_DATA)


def rank_log_z(Y, rank, seed, *, prior_chains=8, prior_sweeps=300, cut=15.0,
               bridge_draws=1000):
    """One rank's per-mode estimates: ``dict`` of both estimators' totals, modes and reasons."""
    from bnmfzoo._cli.masses_budget import POISSON_ROUTE
    from bnmfzoo.inference.reference_tempering import per_mode_check
    from bnmfzoo.inference.smc_masses import family_of_model
    from bnmfzoo.models import poisson

    t0 = time.process_time()
    family = family_of_model(poisson(Y, rank))
    rng = np.random.default_rng(seed)
    clusters = {"reference": np.zeros((0,) + Y.shape[:1] + (rank,)), "cut": float(cut)}
    out = per_mode_check(
        family, [], np.zeros(0, int), np.zeros(0), clusters, -math.inf, math.inf, rng,
        n_runs=4, n_particles=100, n_moves=POISSON_ROUTE["moves"], n_chains=4,
        n_draws=bridge_draws, thin=2, prior_chains=prior_chains, prior_sweeps=prior_sweeps,
        pt_runs=4, pt_scans=POISSON_ROUTE["pt_scans"], pt_local=POISSON_ROUTE["pt_local"],
        pt_leap=POISSON_ROUTE["pt_leap"], pt_trips=POISSON_ROUTE["pt_trips"], pt_copula=True)
    smc, pt = out["smc"], out["pt"]
    return {"rank": rank, "seed": seed, "n_modes": int(len(smc["log_z"])),
            "smc_total": float(smc["log_z_total"]), "smc_total_se": float(smc["log_z_total_se"]),
            "smc_log_z": [float(v) for v in smc["log_z"]],
            "smc_log_z_se": [float(v) for v in smc["log_z_se"]],
            "smc_mass": [float(v) for v in smc["mass"]],
            "pt_total": float(pt["log_z_total"]) if pt else math.nan,
            "pt_total_se": float(pt["log_z_total_se"]) if pt else math.nan,
            "pt_log_z": [float(v) for v in pt["log_z"]] if pt else [],
            "round_trips": np.asarray(pt["round_trips"], float).tolist() if pt else [],
            "reasons": [str(r) for r in out["reasons"]],
            "prior_sweeps": prior_sweeps, "cut": cut, "cpu_s": round(time.process_time() - t0, 1)}


def main(argv=None):
    from bnmfzoo.datasets.signature_cohorts import signature_cohort

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--design", default="correlated")
    ap.add_argument("--genomes", type=int, default=100)
    ap.add_argument("--burden", type=float, default=2000.0)
    ap.add_argument("--cohort-seed", type=int, default=0)
    ap.add_argument("--ranks", type=int, nargs="*", default=[8, 9])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prior-sweeps", type=int, default=300,
                    help="sweeps of each KL-refined plain chain before the modes are cut")
    ap.add_argument("--cut", type=float, default=15.0,
                    help="angle (degrees) within which draws belong to a chain's mode")
    ap.add_argument("--summarize", help="print P(K) over the ranks of a JSONL file written by "
                    "--out (no new run when --ranks is empty)")
    ap.add_argument("--out", help="append one JSON line per rank")
    a = ap.parse_args(argv)
    if a.summarize and not a.ranks:  # only the summary: no cohort to build
        print_rank_posterior(read_rows(a.summarize))
        return 0
    c = signature_cohort(a.design, n_genomes=a.genomes, burden_median=a.burden,
                         random_seed=a.cohort_seed)
    Y = np.asarray(c.counts.values, float)
    print(f"{a.design}: {Y.shape[0]} genomes x {Y.shape[1]} channels, true rank {c.rank}, "
          f"{Y.sum():.0f} mutations", flush=True)
    rows = []
    for rank in a.ranks:
        row = rank_log_z(Y, rank, a.seed, prior_sweeps=a.prior_sweeps,
                         cut=a.cut)
        row.update(design=a.design, genomes=a.genomes, cohort_seed=a.cohort_seed)
        rows.append(row)
        print(f"rank {rank}: {row['n_modes']} mode(s); log Z per mode (SMC) "
              f"{np.round(row['smc_log_z'], 2).tolist()} +- "
              f"{np.round(row['smc_log_z_se'], 2).tolist()}; total SMC "
              f"{row['smc_total']:.2f} +- {row['smc_total_se']:.2f}, tempering "
              f"{row['pt_total']:.2f} +- {row['pt_total_se']:.2f}; round trips "
              f"{row['round_trips']}; {row['cpu_s']:.0f} CPU s", flush=True)
        print("  " + ("; ".join(row["reasons"]) or "established: the estimators agree"),
              flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    print_rank_posterior(read_rows(a.summarize) if a.summarize else rows)
    return 0


def read_rows(path):
    """The rows of a JSONL file written by ``--out``."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def print_rank_posterior(rows):
    """``P(K)`` over the ranks of ``rows`` (uniform prior, 90 % interval from the SMC totals'
    errors: :func:`bnmfzoo.signatures.evidence.probabilities`) when every rank is established;
    otherwise say which ranks are not and print no probability for any (a missing rank's mass
    is unknown)."""
    rows = sorted(rows, key=lambda r: r["rank"])
    if len(rows) < 2:
        return
    ranks = [r["rank"] for r in rows]
    if len(set(ranks)) < len(ranks):  # runs of one rank with other settings are not pooled
        print("P(K) not printed: rank(s) "
              f"{sorted({k for k in ranks if ranks.count(k) > 1})} appear in more than one "
              "row; keep one row per rank")
        return
    open_ranks = [r["rank"] for r in rows if r["reasons"]]
    if open_ranks:
        print(f"P(K) not established: rank(s) {sorted(set(open_ranks))} not established; "
              "no probability is printed for any rank")
        return
    from bnmfzoo.signatures.evidence import probabilities

    p, lo, hi, _ = probabilities([r["smc_total"] for r in rows],
                                 [r["smc_total_se"] for r in rows])
    for r, pk, low, high in zip(rows, p, lo, hi):
        print(f"P(K = {r['rank']}) = {pk:.3f} [{low:.3f}, {high:.3f}]")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
