"""The masses route (`benchmarks.speed.real_data_masses`) at a rank its SMC from the prior
scatters at, without that refusal (`_mass_result.MAX_MODE_SHARE` set to 1): an investigation
only (`docs/results/signatures_calibration_2.md`, last section).

    python -m benchmarks.investigations.masses_route_unrefused --data F --rank K --model poisson
"""
import sys


def main(argv=None):
    import bnmfzoo.inference._mass_result as mr

    mr.MAX_MODE_SHARE = 1.0
    from benchmarks.speed.real_data_masses import main as route

    return route(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
