"""Mutations of the low-rank correction of HMC's mass on ``log A, log W``
(``bnmfzoo/inference/counts/gibbs/_hmc_mass.py`` and its use in the trajectory)."""

from benchmarks.mutation._harness import Mutation

_HMC = "bnmfzoo/inference/counts/gibbs/_hmc_moves.py"
_MASS = "bnmfzoo/inference/counts/gibbs/_hmc_mass.py"
_TH = "tests/counts/test_counts_hmc_moves.py::"
_TM = "tests/counts/test_counts_hmc_mass.py::"

MUTATIONS = [
    Mutation(
        id="counts-hmc-lowrank-final-kinetic-diagonal", path=_HMC,
        old="        k1 = (lowrank_velocity(pA, pWt, sA, sWt, UA, UWt, lm1, vA, vWt, yA, yW, c) "
            "if r\n",
        new="        k1 = (lowrank_velocity(pA, pWt, sA, sWt, UA, UWt, lm1, vA, vWt, yA, yW, c) "
            "if False\n",
        tests=(_TM + "test_leapfrog_with_the_lowrank_mass_is_reversible_and_second_order",
               _TH + "test_hmc_transition_with_a_lowrank_mass_keeps_the_prior[cells]"),
        why="HMC with a low-rank mass: the final kinetic energy uses the diagonal mass only "
            "(the Metropolis test is then for another Hamiltonian than the one simulated)"),
    Mutation(
        id="counts-hmc-lowrank-momentum-diagonal", path=_HMC,
        old="        lowrank_momentum(pA, pWt, sA, sWt, UA, UWt, lam)\n",
        new="        momentum(pA, pWt, imA, imWt)\n",
        tests=(_TM + "test_leapfrog_with_the_lowrank_mass_is_reversible_and_second_order",
               _TH + "test_hmc_transition_with_a_lowrank_mass_keeps_the_prior[cells]"),
        why="HMC with a low-rank mass: the momentum drawn from the diagonal mass while the "
            "velocity and the energies use the full one"),
    Mutation(
        id="counts-hmc-lowrank-velocity-wrong-sign", path=_MASS,
        old="        c[j] *= lm1[j]\n",
        new="        c[j] *= -lm1[j]\n",
        tests=(_TM + "test_momentum_has_the_mass_as_covariance_and_velocity_is_the_inverse",
               _TM + "test_leapfrog_with_the_lowrank_mass_is_reversible_and_second_order"),
        why="HMC with a low-rank mass: the velocity's low-rank term with the wrong sign (not "
            "M^-1 p)"),
]
