"""Mutations of the row-blocked count VB: the block's ``q(A)`` rate, the ``q(W)`` rate on the
driver, the bound's terms and the learned NB dispersion's Newton steps."""

from benchmarks.mutation._harness import Mutation

_VB = "bnmfzoo/inference/blocked/_vb.py"
_T = "tests/scale/test_blocked_vb.py::test_agrees_with_serial_vb"

MUTATIONS = [
    Mutation(
        id="blocked-vb-nb-row-rate-misses-table-factor", path=_VB,
        old="        bA[:] = self.b + self.rate_factor(cols) * cols.EWsum\n",
        new="        bA[:] = self.b + cols.EWsum\n",
        tests=(f"{_T}[negative_binomial]",),
        why="NB VB: q(A)'s rate misses the tables' factor alpha log(1 + 1 / alpha) (the "
            "Poisson rate in the NB update)"),
    Mutation(
        id="blocked-vb-col-rate-stale-rows", path=_VB,
        old="(self.b + self.rate_factor(colstate.cols) * EA_new)[:, None]",
        new="(self.b + self.rate_factor(colstate.cols) * EA_old)[:, None]",
        tests=(f"{_T}[poisson]",),
        why="stale statistic: q(W)'s rate sums E[A] before the rows' update (a Jacobi instead "
            "of the coordinate update; the bound can fall)"),
    Mutation(
        id="blocked-vb-bound-misses-kl-W", path=_VB,
        old=" + float(pieces[-1]) + klW\n",
        new=" + float(pieces[-1])\n",
        tests=(f"{_T}[poisson]",),
        why="ELBO: the KL term of q(W) left out of the bound (the parameters are right, the "
            "reported bound is not)"),
    Mutation(
        id="blocked-vb-alpha-newton-misses-prior", path=_VB,
        old="        fa += (a0 - 1.0) / a - b0\n", new="        fa += 0.0\n",
        tests=(f"{_T}[nb_learned_alpha]",),
        why="learned NB dispersion: the Newton direction misses the Gamma prior's gradient "
            "(steps aim at the likelihood's optimum; the guard keeps the bound rising)"),
    Mutation(
        id="blocked-vb-alpha-tables-use-start", path=_VB,
        old="counts, M, ones, cols.alpha, LA, cols.W, SA, SWt)",
        new="counts, M, ones, self.start_alpha(), LA, cols.W, SA, SWt)",
        tests=(f"{_T}[nb_learned_alpha]",),
        why="learned NB dispersion: the expected tables use the start value, not the updated "
            "alpha"),
    Mutation(
        id="blocked-vb-alpha-objective-misses-prior", path=_VB,
        old="            out += self._log_prior(a)\n", new="            out += 0.0\n",
        tests=(f"{_T}[nb_learned_alpha]",),
        why="learned NB dispersion: the guard's objective and the bound miss log p(alpha)"),
]
