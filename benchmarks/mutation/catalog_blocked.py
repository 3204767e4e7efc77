"""Mutations of the row-blocked count VB: the block's ``q(A)`` rate, the ``q(W)`` rate on the
driver and the bound's terms."""

from benchmarks.mutation._harness import Mutation

_VB = "bnmfzoo/inference/blocked/_vb.py"
_T = "tests/scale/test_blocked_vb.py::test_agrees_with_serial_vb"

MUTATIONS = [
    Mutation(
        id="blocked-vb-nb-row-rate-misses-table-factor", path=_VB,
        old="        bA[:] = self.b + self.rate_factor * cols.EWsum\n",
        new="        bA[:] = self.b + cols.EWsum\n",
        tests=(f"{_T}[negative_binomial]",),
        why="NB VB: q(A)'s rate misses the tables' factor alpha log(1 + 1 / alpha) (the "
            "Poisson rate in the NB update)"),
    Mutation(
        id="blocked-vb-col-rate-stale-rows", path=_VB,
        old="(self.b + self.rate_factor * EA_new)[:, None]",
        new="(self.b + self.rate_factor * EA_old)[:, None]",
        tests=(f"{_T}[poisson]",),
        why="stale statistic: q(W)'s rate sums E[A] before the rows' update (a Jacobi instead "
            "of the coordinate update; the bound can fall)"),
    Mutation(
        id="blocked-vb-bound-misses-kl-W", path=_VB,
        old="        bound = self._bound(pieces[:-1], total) + float(pieces[-1]) + klW\n",
        new="        bound = self._bound(pieces[:-1], total) + float(pieces[-1])\n",
        tests=(f"{_T}[poisson]",),
        why="ELBO: the KL term of q(W) left out of the bound (the parameters are right, the "
            "reported bound is not)"),
]
