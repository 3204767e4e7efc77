"""The reference-path SMC on one mode of breast SBS96 (Poisson, K = 4) with and without the
local moves: per-run log Z, its spread, CPU seconds.

One mode (a plain chain of ``--burn`` sweeps from a prior draw, ``--chain-seed``; seed 1 lands
in the heavy mode, whose log Z the reference-path PT puts at about -9,113.1), its fit chains
and product-Gamma reference as :func:`bnmfzoo.inference.reference_path.reference_log_z` builds
them (the same fit for every setting: the fit's generator is re-seeded), then ``--runs``
independent SMC runs per setting (``--settings``: comma-separated ``local:leap:particles:moves``
entries). Prints one JSON line per setting. Results: ``docs/results/masses_reference_moves.md``.

    nice -n 10 .venv/bin/python -m benchmarks.investigations.sbs96_reference_smc_moves \
        --settings sweep:10:62:2,sweep+shear+rescale+hmc:20:62:2 --runs 8
"""

import argparse
import json
import time

import numpy as np

DATA = "/work/shared/data/counts/sbs96_21brca_cosmic/Samples_SBS.txt"


def main(argv=None):
    from bnmfzoo._cli.masses import _build, _read
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2
    from bnmfzoo.inference.reference_path import reference_log_z
    from bnmfzoo.inference.smc_masses import family_of_model

    p = argparse.ArgumentParser()
    p.add_argument("--settings", default="sweep:10:62:2,sweep+shear+rescale+hmc:20:62:2")
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--chain-seed", type=int, default=1)
    p.add_argument("--burn", type=int, default=600)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    fam = family_of_model(_build(_read(DATA), 4, "poisson"))
    rng = np.random.default_rng(a.chain_seed)
    s = fam.draw_prior(rng)
    for _ in range(a.burn):
        fam.tempered.sweep(s, 1.0, rng)
    ref = _unit_l2(np.asarray(fam.factors(s)[0], float)[None])
    for setting in a.settings.split(","):
        local, leap, n_part, n_moves = setting.split(":")
        t0 = time.process_time()
        out = reference_log_z(fam, ref, [[s]], np.random.default_rng(a.seed), cut=30.0,
                              n_runs=a.runs, n_particles=int(n_part), n_moves=int(n_moves),
                              local=local, n_leap=int(leap))
        z = out["run_log_z"][0]
        print(json.dumps({
            "local": local, "leap": int(leap), "particles": int(n_part), "moves": int(n_moves),
            "log_z": round(float(out["log_z"][0]), 3), "se": round(float(out["log_z_se"][0]), 3),
            "sd": round(float(np.std(z, ddof=1)), 3), "runs": [round(float(v), 3) for v in z],
            "n_temperatures": out["n_temperatures"][0],
            "min_acceptance": round(float(out["local_acceptance"][0]), 3),
            "smc_cpu_s": round(float(out["cpu_s_mode"][0]), 1),
            "fit_cpu_s": round(float(out["fit_cpu_s"]), 1),
            "path_left": float(out["path_left"][0]), "left": float(out["left"][0]),
            "last_run_steps": [[round(float(v), 3) for v in t] for t in out["local_steps"][0]],
            "cpu_s": round(time.process_time() - t0, 1)}), flush=True)


if __name__ == "__main__":
    main()
