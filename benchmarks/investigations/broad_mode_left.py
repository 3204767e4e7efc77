"""How far do a mode's own draws reach, against the estimators' draws the separation rule tests?

Run with::

    nice -n 10 python -m benchmarks.investigations.broad_mode_left --data FILE --rank K \
        [any other option of ``python -m benchmarks.speed.real_data_masses``]

Runs the masses command on ``FILE`` and, for the first mode of the last basin rule, prints the
quantiles (50, 90, 95, 99, 100 %) of the matched angle to the nearest cluster of the mode's
basin for three sets of draws: the fit chains' own draws (the mode as its chains see it), the
tempering draws at ``b = 1`` checked by the runs (``reference_pt`` only) and the final
reference-path SMC particles of the last mode estimated; with each, the share beyond the cut
(the separation test before ``outside_basin``), beyond the fit draws' farthest, and outside by
:func:`bnmfzoo.diagnostics._modes.basins.outside_basin` (the test now). If the estimators' draws
have the fit draws' quantiles, a share beyond the cut is the mode's own breadth, not a leak.
"""

import sys

import numpy as np

import benchmarks._common  # noqa: F401  (one BLAS thread)


def main(argv=None):
    import bnmfzoo.inference.reference_path as rp
    import bnmfzoo.inference.reference_tempering as rt
    from bnmfzoo._cli.masses import main as masses
    from bnmfzoo.diagnostics._modes.basins import outside_basin
    from bnmfzoo.diagnostics._modes.mode_clustering import _unit_l2, matched_angles

    seen, tested = [], {"rp": [], "rt": []}
    real_fit, real_out = rp.fit_chains_and_basins, rp.outside_basin

    def fit_spy(*a, **k):
        out = real_fit(*a, **k)
        seen.append((out, a[5]))
        return out

    def out_spy(tag):
        def spy(U, basins, k, cut):
            tested[tag].append(np.asarray(U, float))
            return real_out(U, basins, k, cut)
        return spy

    rp.fit_chains_and_basins = rt.fit_chains_and_basins = fit_spy
    rp.outside_basin, rt.outside_basin = out_spy("rp"), out_spy("rt")
    masses(sys.argv[1:] if argv is None else argv)
    if not seen:
        print("no basin rule ran (another route)")
        return
    (fits, basins, _, _), cut = seen[-1]
    refs = basins["basin_refs"][0]

    def row(name, U):
        d = matched_angles(U, refs)[0].min(1)
        fit_max = matched_angles(_unit_l2(fits[0][1]), refs)[0].min(1).max()
        q = np.round(np.quantile(d, [0.5, 0.9, 0.95, 0.99, 1.0]), 1).tolist()
        now = outside_basin(U, basins, 0, cut).mean()
        print(f"{name}: {U.shape[0]} draws; angle quantiles 50/90/95/99/100 % {q}; beyond the "
              f"cut ({cut:.1f}) {np.mean(d > cut):.3f}; beyond the fit draws' farthest "
              f"{np.mean(d > fit_max):.3f}; outside_basin {now:.3f}")

    row("fit-chain draws, mode 0", _unit_l2(fits[0][1]))
    if tested["rt"]:
        row("tempering draws at b = 1", np.concatenate(tested["rt"]))
    if tested["rp"]:
        row("final path particles (last 4 runs)", np.concatenate(tested["rp"][-4:]))


if __name__ == "__main__":
    main()
