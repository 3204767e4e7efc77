"""The large route run up to its reference-path SMC and stopped there (for investigations).

:func:`run_to_the_smc` runs :func:`bnmfzoo.inference.large_route.large_mode_masses` (copula
reference, HMC move cost fixed so no timing gate refuses it) on a count matrix and stops it when
it calls :func:`bnmfzoo.inference.reference_path.reference_log_z`, handing that call's family
and fit chains to the caller.
"""

import os
import time


class _Stop(Exception):
    pass


def run_to_the_smc(data, rank, seed, *, budget=None, fit_chains=None, move_cost=6e-3):
    """``(tempered family, fitted chains, CPU s)`` where the large route reached its SMC.

    ``data``: a path, or one relative to the shared data folder. ``fit_chains``, optional: a
    replacement for :func:`~bnmfzoo.inference.reference_path.fit_chains_and_basins` (called
    with the real one's arguments plus ``real=`` the real one). Both patches are undone on
    return.
    """
    import bnmfzoo.inference.large_route as lr
    import bnmfzoo.inference.reference_path as rp
    from benchmarks._common import DATA
    from bnmfzoo._cli.masses import _build, _read

    seen, real_smc, real_fit = {}, rp.reference_log_z, rp.fit_chains_and_basins

    def stop(hfam, refs, starts, rng, *, fitted=None, **kw):
        seen["family"], seen["fit"] = hfam, fitted
        raise _Stop()

    rp.reference_log_z = stop
    if fit_chains is not None:
        rp.fit_chains_and_basins = lambda *a, **kw: fit_chains(*a, real=real_fit, **kw)
    t0 = time.process_time()
    path = data if os.path.exists(data) else os.path.join(DATA, data)
    try:
        lr.large_mode_masses(_build(_read(path), rank, "poisson"), budget_s=budget,
                             random_seed=seed, copula=True, move_cost=move_cost)
    except _Stop:
        pass
    finally:
        rp.reference_log_z, rp.fit_chains_and_basins = real_smc, real_fit
    if "fit" not in seen:
        raise RuntimeError("the large route ended before its reference-path SMC")
    return seen["family"], seen["fit"], time.process_time() - t0
