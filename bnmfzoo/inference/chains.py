"""MCMC chains as Dask tasks, bit for bit the chains of a serial ``pm.sample``.

:func:`sample` is ``pm.sample`` with a ``client=`` argument, the convention of
:func:`~bnmfzoo.inference.fit_particles` and :func:`~bnmfzoo.inference.cross_validate`: without
a client it runs the chains one after the other in this process; with one, each chain is a task
on the cluster and the per-chain results are merged into one DataTree (``chain`` 0 ... C-1).

Same seed, same bits. ``pm.sample(random_seed=s, chains=C)`` (PyMC 6.4, ``sampling/mcmc.py``)
spawns one generator per chain, ``rngs = default_rng(s).spawn(C)``, takes one integer seed from
each (``seeds[c] = rngs[c].integers(2**30)``, which sets chain ``c``'s start: its jitter, or
nothing), builds the step methods once (for NUTS, :func:`pymc.init_nuts` sets the mass-matrix
adaptation's starting mean from all ``C`` jittered starts), and runs chain ``c`` from the
step's initial state with ``rngs[c]``. Here the caller derives ``rngs`` and ``seeds`` in the same
way and ships ``seeds`` and ``rngs[c]`` (a generator pickles with its exact state) to task
``c``, which rebuilds the starts of all chains and the step exactly as ``pm.sample`` does and
then runs chain ``c`` only, through PyMC's own single-chain loop (``_iter_sample``) and result
conversion (``_sample_return``). The posterior and every sample statistic but the wall/CPU
timers NUTS records equal the serial run's bits.
"""

import time

import numpy as np

from bnmfzoo._base.validation import fmt
from bnmfzoo.inference._interrupt import check_complete, stop_on_signals

#: ``pm.sample`` keywords a Dask run forwards to the per-chain tasks (the others are refused)
TASK_KWARGS = ("init", "initvals", "n_init", "jitter_max_retries", "nuts", "target_accept",
               "var_names", "idata_kwargs", "discard_tuned_samples", "keep_warning_stat")
#: NUTS sample statistics that time the sampler; they differ between any two runs
TIMING_STATS = ("perf_counter_diff", "perf_counter_start", "process_time_diff")


def _build(model):
    """``model`` itself, or the model a zero-argument builder returns."""
    import pymc as pm

    if isinstance(model, pm.Model):
        return model
    built = model()
    if not isinstance(built, pm.Model):
        raise TypeError(f"a model builder must return a pymc.Model, got {type(built).__name__}")
    return built


def _make_steps(step, model):
    """Instantiate ``step`` (None, a step class/factory, an instance, or a list) in ``model``."""
    from pymc.step_methods.compound import BlockedStep, CompoundStep

    if step is None or isinstance(step, (BlockedStep, CompoundStep)):
        return step
    if isinstance(step, (list, tuple)):
        return [_make_steps(s, model) for s in step]
    with model:
        return step()


def _check_step_spec(step, client):
    from pymc.step_methods.compound import BlockedStep, CompoundStep

    items = step if isinstance(step, (list, tuple)) else [step]
    for s in items:
        if s is None and not isinstance(step, (list, tuple)):
            continue
        if isinstance(s, (BlockedStep, CompoundStep)):
            if client is not None:
                raise TypeError(
                    "with client=, pass step as a step class or a zero-argument factory (e.g. "
                    "GibbsNMF or functools.partial(CollapsedGibbsBetaDir, init='prior')), not an "
                    "instance: each task builds its own step in its copy of the model")
        elif not callable(s):
            raise TypeError(f"step must be a step method class, a zero-argument factory, an "
                            f"instance (serial runs) or a list of these, got {fmt(s)}")


def chain_seeds(random_seed, chains):
    """Per-chain generators and integer seeds exactly as ``pm.sample`` derives them (PyMC 6.4).

    Returns ``(rngs, seeds)``: ``rngs[c]`` drives chain ``c`` (after ``seeds[c]`` was drawn
    from it) and ``seeds[c]`` sets chain ``c``'s start.

    Examples
    --------
    >>> rngs, seeds = chain_seeds(3, 2)
    >>> len(rngs), len(seeds)
    (2, 2)
    """
    from pymc.util import get_random_generator

    if random_seed is None:  # one entropy for all tasks, else each would draw its own
        random_seed = np.random.SeedSequence().entropy
    rngs = get_random_generator(random_seed).spawn(chains)
    return rngs, [rng.integers(2**30) for rng in rngs]


def _math(strict):
    """Context: PyTensor's numba code compiled with (``strict``) or without strict IEEE math."""
    import pytensor

    return pytensor.config.change_flags(numba__fastmath=not strict)


def _steps_context(pymc_steps):
    """PyMC's own step assignment (``pymc_steps``) or the one with bnmfzoo's steps."""
    import contextlib

    from bnmfzoo.inference._step_glue import pymc_default_steps

    return pymc_default_steps() if pymc_steps else contextlib.nullcontext()


def _run_chain(model, step, chain, seeds, rng, *, draws, tune, options, strict_math=True,
               pymc_steps=False):
    """One chain of ``pm.sample(chains=len(seeds))``, as a DataTree with ``chain`` = [0]."""
    with _math(strict_math), _steps_context(pymc_steps):
        return _one_chain(model, step, chain, seeds, rng, draws=draws, tune=tune,
                          options=options)


def _one_chain(model, step, chain, seeds, rng, *, draws, tune, options):
    import pymc as pm
    from pymc.backends import init_traces
    from pymc.initial_point import make_initial_point_fns_per_chain
    from pymc.sampling import mcmc
    from pymc.step_methods import NUTS, CompoundStep

    model = _build(model)
    options = dict(options)
    init = options.pop("init", "auto")
    initvals = options.pop("initvals", None)
    n_init = options.pop("n_init", 200_000)
    jitter_max_retries = options.pop("jitter_max_retries", 10)
    var_names = options.pop("var_names", None)
    idata_kwargs = options.pop("idata_kwargs", None) or {}
    discard = options.pop("discard_tuned_samples", True)
    keep_warning_stat = options.pop("keep_warning_stat", False)
    nuts_kwargs = dict(options.pop("nuts", {}) or {})
    if "target_accept" in options:
        nuts_kwargs["target_accept"] = options.pop("target_accept")
    chains = len(seeds)
    steps = _make_steps(step, model)
    with model:
        provided, selected = mcmc.assign_step_methods(model, steps, methods=pm.STEP_METHODS)
        exclusive_nuts = (
            (not selected and len(provided) == 1 and isinstance(provided[0], NUTS))
            or (not provided and len(selected) == 1 and issubclass(next(iter(selected)), NUTS))
        )
        if exclusive_nuts and not provided:
            starts, step_obj = pm.init_nuts(
                init=init, chains=chains, n_init=n_init, model=model, random_seed=seeds,
                progressbar=False, quiet=True, jitter_max_retries=jitter_max_retries,
                tune=tune, initvals=initvals, **nuts_kwargs)
        else:
            ipfns = make_initial_point_fns_per_chain(model=model, overrides=initvals,
                                                     jitter_rvs=set(), chains=chains)
            starts = [ipfn(seed) for ipfn, seed in zip(ipfns, seeds)]
            step_obj = mcmc.instantiate_steppers(model, steps=provided, selected_steps=selected,
                                                 step_kwargs={"nuts": nuts_kwargs} if nuts_kwargs
                                                 else {},
                                                 initial_point=starts[0], compile_kwargs={})
            if isinstance(step_obj, list):
                step_obj = CompoundStep(step_obj)
        tune = mcmc.get_default_tune_steps(step_obj, tune)
        trace_vars = None
        if var_names is not None:
            trace_vars = model.replace_rvs_by_values(
                [v for v in model.unobserved_RVs if v.name in var_names])
        _, traces = init_traces(backend=None, chains=1, expected_length=draws + tune,
                                step=step_obj, trace_vars=trace_vars, initial_point=starts[0],
                                model=model, tune=tune)
        t0 = time.time()
        for _ in mcmc._iter_sample(draws=draws + tune, step=step_obj, start=starts[chain],
                                   trace=traces[0], chain=0, tune=tune, model=model, rng=rng):
            pass
        return mcmc._sample_return(
            run=None, traces=traces, tune=tune, t_sampling=time.time() - t0,
            discard_tuned_samples=discard, compute_convergence_checks=False,
            return_inferencedata=True, keep_warning_stat=keep_warning_stat,
            idata_kwargs=idata_kwargs, model=model, quiet=True)


def merge_chains(trees):
    """Concatenate single-chain DataTrees along ``chain`` (numbered 0, 1, ... in list order).

    Groups without a ``chain`` dimension (``observed_data``, ``constant_data``) come from the
    first tree.
    """
    import xarray as xr

    first = trees[0]
    groups = {}
    for name in first.children:
        datasets = [t[name].to_dataset() for t in trees]
        if "chain" in datasets[0].dims:
            datasets = [ds.assign_coords(chain=[c]) for c, ds in enumerate(datasets)]
            groups[name] = xr.concat(datasets, dim="chain", combine_attrs="override")
        else:
            groups[name] = datasets[0]
    out = xr.DataTree.from_dict(groups)
    out.attrs = dict(first.attrs)
    return out


def sample(model, *, step=None, draws=1000, tune=1000, chains=2, random_seed=None, client=None,
           progressbar=True, compute_convergence_checks=False, strict_math=True,
           log_likelihood="auto", log_likelihood_thin=1, pymc_default_steps=False, **kwargs):
    """``pm.sample`` with ``client=``: MCMC chains as Dask tasks, bitwise equal to serial.

    Without ``client`` this is ``pm.sample(..., cores=1, nuts_sampler="pymc")``. With a
    :class:`distributed.Client`, chain ``c`` runs as a task on the cluster with the seed and
    start PyMC derives for chain ``c`` of a serial ``pm.sample(random_seed=random_seed,
    chains=chains)`` (see the module docstring), and the chains come back merged into one
    DataTree: the same draws, bit for bit, as the serial run (only NUTS's timers
    ``perf_counter_*`` / ``process_time_diff`` and the root attrs' times differ).

    Parameters
    ----------
    model : pymc.Model or callable
        The model, or a zero-argument builder returning it, e.g.
        ``functools.partial(bnmfzoo.models.exponential_gaussian, X, 3)`` (cheaper to ship to
        the workers than a pickled model, which also works).
    step : step class, zero-argument factory, list of these, or None
        Built inside the model on each worker: ``GibbsNMF``, ``GibbsNMTF``,
        ``CollapsedGibbsBetaDir``, ``functools.partial(CollapsedGibbsDirDir, init="prior")``...
        ``None`` lets PyMC assign steps (NUTS for continuous models). A step *instance* is
        accepted for serial runs only.
    draws, tune, chains : int
        As in ``pm.sample`` (``draws >= 1``, ``tune >= 0``, ``chains >= 1``).
    random_seed : int, numpy.random.Generator or None
        As in ``pm.sample``. With ``None`` one fresh entropy is drawn here and shared by all
        tasks.
    client : distributed.Client, optional
        Run one task per chain on this Dask cluster (tested on a ``LocalCluster`` of 2 worker
        processes with 1 thread each).
    progressbar : bool, default True
        Serial runs only (tasks run silently).
    compute_convergence_checks : bool, default False
        PyMC's R-hat/ESS warnings on the merged result.
    strict_math : bool, default True
        Compile PyTensor's numba code (NUTS's log density and gradient) without fast-math
        flags (``pytensor.config.numba__fastmath = False``). With fast-math, LLVM picks the
        order of floating-point operations per compilation, and a function compiled fresh and
        the same function loaded from PyTensor's on-disk cache gave different last digits
        (1e-12 in NUTS's ``lp``/``energy`` on a 4 x 3 model): a run would then depend on which
        process compiled first. Strict flags give the same bits in every process; they cost
        time (``python -m benchmarks.speed.strict_math``, 200 x 100 rank-5 model, busy
        2-core machine: logp+gradient 0.28 against 0.17 ms, a 200-iteration NUTS chain 1.26x
        the wall time). ``strict_math=False`` keeps PyTensor's fast-math.
    log_likelihood : {"auto", True, False, "float32"}, default "auto"
        Record the ``log_likelihood`` group (what ``az.loo`` and
        :func:`bnmfzoo.diagnostics.chain_weights` read): ``"auto"`` when chains x draws x
        observed entries is at most 1e7 (80 MB), else not, **with a warning** giving its size
        and how to get it; ``True`` always (float64); ``"float32"`` always, stored in float32
        (half the memory; computed one chain at a time, so the float64 peak is one chain's);
        ``False`` never. On GDSC (79,259 observed entries) 2 chains x 1000 draws are
        1.27 GB in float64, 0.63 GB in float32, and 63 MB in float32 with
        ``log_likelihood_thin=10``. In every case the flat observed-entry dims (``X_obs``) of
        ``observed_data``, ``log_likelihood``
        and any predictive group get ``row`` / ``col`` coordinates (the data's labels, e.g. a
        cell line and a drug; :func:`bnmfzoo.diagnostics.label_observations`), which a plain
        ``pm.sample`` cannot attach (PyMC's converter takes one-dimensional coordinates only).
    log_likelihood_thin : int, default 1
        Record the log-likelihood of every ``k``-th draw only (``draw`` coordinates keep the
        draw numbers); ``az.loo`` on thinned draws is PSIS-LOO on fewer, less autocorrelated
        draws. The ``"auto"`` size limit applies to the thinned group.
    pymc_default_steps : bool, default False
        With ``step=None``, let PyMC assign steps as it would without bnmfzoo (NUTS for a
        continuous model) instead of choosing the library's Gibbs steps for a model they
        recognize (:func:`bnmfzoo.inference.pymc_default_steps`), here and on every worker.
    **kwargs
        Passed to ``pm.sample``. With ``client``, only ``init``, ``initvals``, ``n_init``,
        ``jitter_max_retries``, ``nuts``, ``target_accept``, ``var_names``, ``idata_kwargs``,
        ``discard_tuned_samples`` and ``keep_warning_stat`` are accepted.

    Returns
    -------
    xarray.DataTree
        What ``pm.sample`` returns (``posterior``, ``sample_stats``, ``observed_data``...),
        plus ``log_likelihood`` (see above) with labelled observed entries; root attr
        ``dask`` = 1 for a client run.

    Raises
    ------
    KeyboardInterrupt
        (:class:`~bnmfzoo.inference._interrupt.SamplingInterrupted`) on Ctrl-C or SIGTERM
        during a serial run (sampling stops after the current draw; the previous signal
        handlers are restored), or when ``pm.sample`` returned fewer chains or draws than
        asked (it catches a ``KeyboardInterrupt`` itself and returns what it has): a
        truncated result is never returned.

    Examples
    --------
    >>> import functools
    >>> import numpy as np
    >>> from bnmfzoo.models import exponential_gaussian
    >>> from bnmfzoo.inference import GibbsNMF, sample
    >>> X = np.random.default_rng(0).exponential(size=(6, 5))
    >>> build = functools.partial(exponential_gaussian, X, 2)
    >>> dt = sample(build, step=GibbsNMF, draws=5, tune=5, chains=2, random_seed=1,
    ...             progressbar=False)
    >>> dt.posterior.sizes["chain"], dt.posterior.sizes["draw"]
    (2, 5)
    >>> ll = dt["log_likelihood"]["X"]                 # for az.loo, one value per observed cell
    >>> ll.sizes["X_obs"], int(ll["row"][7]), int(ll["col"][7])
    (30, 1, 2)

    On a cluster (``from distributed import Client, LocalCluster``;
    ``client = Client(LocalCluster(n_workers=2, threads_per_worker=1))``),
    ``sample(build, step=GibbsNMF, ..., client=client)`` returns the same bits.
    """
    import pymc as pm

    from bnmfzoo._base.validation import check_int, check_seed

    draws = check_int(draws, name="draws", minimum=1)
    tune = check_int(tune, name="tune", minimum=0)
    chains = check_int(chains, name="chains", minimum=1)
    random_seed = check_seed(random_seed)
    if not (isinstance(model, pm.Model) or callable(model)):
        raise TypeError(f"model must be a pymc.Model or a zero-argument builder returning one, "
                        f"got {type(model).__name__}")
    _check_step_spec(step, client)
    if not any(log_likelihood is v or log_likelihood == v for v in ("auto", "float32")) and \
            log_likelihood not in (True, False):
        raise ValueError("log_likelihood must be 'auto', True, False or 'float32', got "
                         f"{fmt(log_likelihood)}")
    thin = check_int(log_likelihood_thin, name="log_likelihood_thin", minimum=1)
    if client is None:
        built = _build(model)
        steps = _make_steps(step, built)
        options = dict(cores=1, nuts_sampler="pymc", progressbar=progressbar,
                       compute_convergence_checks=compute_convergence_checks)
        kwargs = dict(kwargs)
        with stop_on_signals(kwargs.pop("callback", None)) as stopper, built, \
                _math(strict_math), _steps_context(pymc_default_steps):
            run = {**options, **kwargs}
            if run["nuts_sampler"] == "pymc":  # external samplers take no per-draw callback
                run["callback"] = stopper.callback
            dt = pm.sample(draws=draws, tune=tune, chains=chains, step=steps,
                           random_seed=random_seed, **run)
        check_complete(dt, draws, chains)
        return _with_log_likelihood(dt, built, log_likelihood, thin)
    if kwargs.pop("nuts_sampler", "pymc") != "pymc":
        raise ValueError("with client=, chains run PyMC's own NUTS: nuts_sampler must be 'pymc'")
    unknown = sorted(set(kwargs) - set(TASK_KWARGS))
    if unknown:
        raise TypeError(f"with client=, sample() does not accept {', '.join(unknown)}; "
                        f"accepted: {', '.join(TASK_KWARGS)}")
    start = time.time()
    rngs, seeds = chain_seeds(random_seed, chains)
    shipped = client.scatter(model) if isinstance(model, pm.Model) else model
    futures = [client.submit(_run_chain, shipped, step, c, seeds, rngs[c], draws=draws,
                             tune=tune, options=kwargs, strict_math=strict_math,
                             pymc_steps=pymc_default_steps, pure=False)
               for c in range(chains)]
    dt = merge_chains(client.gather(futures))
    dt.attrs["sampling_time"] = time.time() - start
    dt.attrs["dask"] = 1
    if compute_convergence_checks:
        from pymc.stats.convergence import log_warnings, run_convergence_checks

        log_warnings(run_convergence_checks(dt, _build(model)))
    return _with_log_likelihood(dt, _build(model) if log_likelihood else model,
                                log_likelihood, thin)


def _n_values(dt, model, thin):
    """``(chains, kept draws, observed entries)`` of the log-likelihood group."""
    import xarray as xr

    from bnmfzoo.diagnostics.zero_cells import implicit_zero_cells

    post = dt["posterior"]
    observed = dt["observed_data"].to_dataset() if "observed_data" in dt.children \
        else xr.Dataset()
    n_obs = sum(int(observed[rv.name].size) for rv in model.observed_RVs
                if rv.name in observed) + implicit_zero_cells(model)
    draws = -(-post.sizes.get("draw", 1) // thin)
    return post.sizes.get("chain", 1), draws, n_obs


def _announce_skip(chains, draws, n_obs, thin):
    import warnings

    from bnmfzoo.diagnostics._modes.stacking import MAX_DEFAULT_LOGLIK_VALUES

    n = chains * draws * n_obs
    mb = n * 8 / 1e6
    keep = max(1, MAX_DEFAULT_LOGLIK_VALUES // max(1, chains * n_obs))
    warnings.warn(
        f"log_likelihood not recorded: {chains} chains x {draws} draws x {n_obs} observed "
        f"entries = {n:.3g} values ({mb:.3g} MB in float64) exceed the automatic limit of "
        f"{MAX_DEFAULT_LOGLIK_VALUES:.0e}, so az.loo / az.compare have nothing to read. To "
        f"record it: log_likelihood=True ({mb:.3g} MB), log_likelihood='float32' "
        f"({mb / 2:.3g} MB), log_likelihood_thin={-(-draws * thin // keep)} (every k-th draw, "
        "within the limit), or later bnmfzoo.diagnostics.add_log_likelihood(result, model); "
        "through BayesianNMF, method_kwargs={'log_likelihood': ...}; on the command line, "
        "--log-likelihood yes or float32",
        UserWarning, stacklevel=4)


def _compact_log_likelihood(dt, model, dtype, thin):
    """The ``log_likelihood`` group one chain at a time, every ``thin``-th draw, in ``dtype``."""
    import pymc as pm
    import xarray as xr

    from bnmfzoo.diagnostics.zero_cells import add_zero_cells

    post = dt["posterior"].to_dataset()
    if thin > 1:
        post = post.isel(draw=slice(None, None, thin))
    pieces = []
    for c in range(post.sizes.get("chain", 1)):
        sub = xr.DataTree.from_dict({"posterior": post.isel(chain=[c])})
        ll = pm.compute_log_likelihood(sub, model=model, extend_inferencedata=False,
                                       progressbar=False)
        pieces.append(ll.astype(dtype))
    ds = xr.concat(pieces, dim="chain", combine_attrs="override")
    dt["log_likelihood"] = xr.DataTree(ds)
    return add_zero_cells(dt, model)  # sparse counts: the zeros are observed cells too


def _with_log_likelihood(dt, model, mode, thin=1):
    """Add the ``log_likelihood`` group per ``mode`` and label the observed entries."""
    from bnmfzoo.diagnostics._modes.stacking import (
        MAX_DEFAULT_LOGLIK_VALUES,
        add_log_likelihood,
        label_observations,
        maybe_add_log_likelihood,
    )

    if mode is not False and "posterior" in dt.children and "log_likelihood" not in dt.children:
        chains, draws, n_obs = _n_values(dt, model, thin)
        if isinstance(mode, str) and mode == "auto":
            if chains * draws * n_obs > MAX_DEFAULT_LOGLIK_VALUES:
                _announce_skip(chains, draws, n_obs, thin)
                mode = False
            elif thin == 1:
                return maybe_add_log_likelihood(dt, model)
            else:  # thinned, within the limit
                try:
                    _compact_log_likelihood(dt, model, "float64", thin)
                except (ValueError, NotImplementedError, TypeError):
                    pass  # e.g. a model without an observed variable PyMC can evaluate
                mode = False  # labelled below
        if mode is not False:
            dtype = "float32" if isinstance(mode, str) and mode == "float32" else "float64"
            if dtype == "float64" and thin == 1:
                return add_log_likelihood(dt, model)
            _compact_log_likelihood(dt, model, dtype, thin)
    post = dt["posterior"] if "posterior" in dt.children else None
    if post is not None and "row" in post.coords and "col" in post.coords:
        labelled = label_observations(dt)
        for group in labelled.children:
            dt[group] = labelled[group]
    return dt
