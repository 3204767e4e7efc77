"""False-failure rate of the per-mode agreement rule over seeds, on problems with known log Z.

The rule of :func:`bnmfzoo.inference._mass_verdict.per_mode_reasons` (condition 2): the
reference-path SMC's and the reference-path parallel tempering's ``log Z`` of a mode agree
within ``k`` combined standard errors plus ``LOG_Z_SLACK``, each error the spread of 4
independent runs over 2. Both estimators target the same exact value (the rank-1 problems of
``tests/_quadrature.py``: one mode, no label switching, ``log Z`` by quadrature), so every
disagreement is a false failure. Reported per seed: both estimates, their se, the gap in
combined se; summarized: the share of seeds whose gap exceeds ``k`` combined se without the
slack, for ``k = 2`` (the normal rule) and ``k = t_0.975`` at the Welch degrees of freedom (the
rule now), and with the slack (the rule as applied).

Run::

    nice -n 10 python -m benchmarks.investigations.agreement_false_failures --seeds 40
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))


def one_seed(model, seed, runs=4, particles=100, scans=100):
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2
    from bnmfzoo.inference.reference_path import reference_log_z
    from bnmfzoo.inference.reference_tempering import reference_pt_log_z
    from bnmfzoo.inference.smc_masses import family_of_model

    fam = family_of_model(model)
    rng = np.random.default_rng(seed)
    s = fam.draw_prior(rng)
    for _ in range(20):
        fam.tempered.sweep(s, 1.0, rng)
    ref = _unit_l2(np.asarray(fam.factors(s)[0], float)[None])
    a = reference_log_z(fam, ref, [[s]], rng, cut=180.0, n_runs=runs, n_particles=particles,
                        n_draws=100)
    b = reference_pt_log_z(fam, ref, [[s]], rng, cut=180.0, n_runs=runs, n_scans=scans,
                           n_tune_rounds=2, n_draws=100)
    return a["run_log_z"][0], b["run_log_z"][0]


def main(argv=None):
    from _quadrature import (
        GAUSSIAN_SIGMA,
        GAUSSIAN_X,
        POISSON_RATE,
        POISSON_X,
        gaussian_rank1_log_z,
        poisson_rank1_log_z,
    )

    from bnmfzoo.inference._mass_verdict import LOG_Z_SLACK, agreement_factor, welch_dof
    from bnmfzoo.models import exponential_gaussian, poisson

    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=40)
    p.add_argument("--first", type=int, default=1000)
    a = p.parse_args(argv)
    problems = {
        "poisson": (poisson(POISSON_X[None, :], 1, a=1.0, b=POISSON_RATE),
                    poisson_rank1_log_z(POISSON_X, POISSON_RATE)),
        "gaussian": (exponential_gaussian(GAUSSIAN_X[None, :], 1, sigma=GAUSSIAN_SIGMA,
                                          lambda_=1.0),
                     gaussian_rank1_log_z(GAUSSIAN_X, GAUSSIAN_SIGMA)),
    }
    t0 = time.process_time()
    summary = {}
    for name, (model, exact) in problems.items():
        rows = []
        for seed in range(a.first, a.first + a.seeds):
            rs, rp = one_seed(model, seed)
            R = rs.size
            ms, mp = rs.mean(), rp.mean()
            ss, sp = rs.std(ddof=1) / math.sqrt(R), rp.std(ddof=1) / math.sqrt(R)
            comb = math.hypot(ss, sp)
            f = agreement_factor(welch_dof(ss, R - 1, sp, R - 1))
            gap = abs(ms - mp)
            rows.append({"seed": seed, "smc": ms, "smc_se": ss, "pt": mp, "pt_se": sp,
                         "gap_in_se": gap / comb, "t_factor": f,
                         "fail_normal": bool(gap > 2.0 * comb), "fail_t": bool(gap > f * comb),
                         "fail_rule": bool(gap > f * comb + LOG_Z_SLACK),
                         "smc_err_in_se": (ms - exact) / ss, "pt_err_in_se": (mp - exact) / sp})
            print(json.dumps(rows[-1]), flush=True)
        n = len(rows)
        summary[name] = {k: sum(r[k] for r in rows) / n
                         for k in ("fail_normal", "fail_t", "fail_rule")}
        summary[name]["seeds"] = n
        summary[name]["exact_log_z"] = exact
    print(json.dumps({"summary": summary, "cpu_s": round(time.process_time() - t0, 1)}))


if __name__ == "__main__":
    main()
