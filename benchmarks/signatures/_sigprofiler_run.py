"""Run SigProfilerExtractor on one catalogue file; executed in its own virtual environment.

Not imported by anything: ``versus_sigprofiler.py`` runs it as a subprocess with the Python of
``benchmarks/.venv-sigprofiler`` (``make bench-env-sigprofiler``), because SigProfilerExtractor
needs torch and is never a dependency of bnmfzoo. SigProfilerExtractor starts worker processes,
so the call sits under ``if __name__ == "__main__"``.

Usage::

    python _sigprofiler_run.py CATALOG.txt OUTDIR --min K1 --max K2 --replicates R \
        --min-iter I --max-iter J --test-conv C

writes ``OUTDIR/result.json`` with the suggested rank and the path of its de novo signatures.
"""

import argparse
import json
import os
from pathlib import Path

# One thread per process (the benchmark compares CPU seconds on a shared 2-core machine): set
# before numpy / torch load, and torch's own pools pinned below.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("catalog")
    p.add_argument("outdir")
    p.add_argument("--min", type=int, default=1)
    p.add_argument("--max", type=int, default=25)
    p.add_argument("--replicates", type=int, default=100)
    p.add_argument("--min-iter", type=int, default=10000)
    p.add_argument("--max-iter", type=int, default=1000000)
    p.add_argument("--test-conv", type=int, default=10000)
    p.add_argument("--cpu", type=int, default=1)
    a = p.parse_args()
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    from SigProfilerExtractor import sigpro as sig

    out = Path(a.outdir)
    sig.sigProfilerExtractor(
        "matrix", str(out), a.catalog, reference_genome="GRCh37",
        minimum_signatures=a.min, maximum_signatures=a.max, nmf_replicates=a.replicates,
        cpu=a.cpu, assignment_cpu=1, gpu=False, min_nmf_iterations=a.min_iter,
        max_nmf_iterations=a.max_iter, nmf_test_conv=a.test_conv,
        make_decomposition_plots=False, export_probabilities=False, stop_after_extraction=True)
    # With stop_after_extraction the suggested solution is not copied to Suggested_Solution/:
    # its rank is the row marked "*" of All_solutions_stat.csv (SigProfiler's own choice).
    stats = (out / "SBS96" / "All_solutions_stat.csv").read_text().splitlines()
    chosen = [ln.split(",")[0] for ln in stats[1:] if ln.split(",")[0].endswith("*")]
    K = int(chosen[0].rstrip("*"))
    path = (out / "SBS96" / "All_Solutions" / f"SBS96_{K}_Signatures" / "Signatures"
            / f"SBS96_S{K}_Signatures.txt")
    result = {"signatures": str(path), "rank": K, "stats": stats}
    (out / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
