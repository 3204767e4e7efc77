"""Direct Stein gradient descent (DSGD): descend the kernelized Stein discrepancy itself.

Masood & Doshi-Velez (2019), Sec. 6.2: the particles ``theta_1..M`` are moved by gradient descent
on the KSD, differentiated automatically. Here the uniform-weight V-statistic
``(1 / M^2) sum_ij K_p(theta_i, theta_j)`` (the paper does not say which KSD estimator DSGD
descends; we take this V-statistic) is written as one PyTensor graph:
``M`` copies of the model's log joint (constrained space, no Jacobian) give the scores, the Stein
kernel of the paper's two-block IMQ base kernel is built in closed form, and ``pytensor.grad``
differentiates through the scores (second derivatives of the log joint). Memory grows as
``O(M^2 d)``; the paper could only run ``M = 5``. Steps, projection and checkpoints are shared
with :func:`bnmfzoo.inference.fit_svgd`; as there, the weights and reported discrepancies use
the valid default of :func:`bnmfzoo.diagnostics.stein_matrix` unless ``space``/``ksd_kernel``
say otherwise.
"""


import numpy as np

from bnmfzoo._base.rng import as_generator
from bnmfzoo._base.timing import Timer
from bnmfzoo._base.validation import fmt
from bnmfzoo.inference.particles.svgd import _check_steps, initial_particles, run_particle_optimizer
from bnmfzoo.inference.particles.weighted import default_kernel, resolve_nmf_model


def _imq_params(kernel, names):
    """(c, b, weight) per block from a BlockKernel of normalized IMQ kernels."""
    from bnmfzoo.diagnostics._stein._kernels import IMQ

    if getattr(kernel, "combine", None) != "sum":
        raise TypeError("fit_dsgd supports a summed BlockKernel of IMQ kernels (imq_kernel())")
    weights = kernel._weights(list(names))
    out = {}
    for name in names:
        k = kernel.kernel_for(name)
        if not isinstance(k, IMQ):
            raise TypeError(f"fit_dsgd needs IMQ base kernels, got {fmt(k)} for block {name!r}")
        c = float(getattr(k, "c"))
        b = float(getattr(k, "b"))
        normalize = bool(getattr(k, "normalize", True))
        gamma = (c * c) ** b if normalize else 1.0
        out[name] = (c, b, weights[name] / gamma)
    return out


def ksd_graph(model, info, n_particles, kernel):
    """Compile ``(A_1..M, W_1..M) -> (KSD, dKSD/dA, dKSD/dW)`` (uniform weights, V-statistic)."""
    import pymc as pm
    import pytensor.tensor as pt
    from pymc.model.transform.conditioning import remove_value_transforms
    from pytensor.graph.replace import graph_replace

    from bnmfzoo.diagnostics._stein._stein_scores import _default_mode

    a_name, w_name = info.names["A"], info.names["W"]
    plain = remove_value_transforms(model)
    by_name = {plain.values_to_rvs[v].name: v for v in plain.value_vars}
    logp = plain.logp(jacobian=False)
    A_val, W_val = by_name[a_name], by_name[w_name]
    M = int(n_particles)
    As = [pt.matrix(f"A_{i}", shape=A_val.type.shape) for i in range(M)]
    Ws = [pt.matrix(f"W_{i}", shape=W_val.type.shape) for i in range(M)]
    thetas, scores = [], []
    for i in range(M):
        lp_i = graph_replace(logp, {A_val: As[i], W_val: Ws[i]}, strict=False)
        scores.append(tuple(pt.grad(lp_i, [As[i], Ws[i]])))
        thetas.append((As[i], Ws[i]))
    params = _imq_params(kernel, [a_name, w_name])
    D, N = info.X.shape
    dims = (D * info.rank, info.rank * N)
    K = 0.0
    for g, name in enumerate((a_name, w_name)):
        c, b, s = params[name]
        x = pt.stack([t[g].ravel() for t in thetas])  # (M, d_g)
        S = pt.stack([sc[g].ravel() for sc in scores])
        d_g = dims[g]
        sq = pt.sum(pt.sqr(x), axis=1)
        r2 = pt.maximum(sq[:, None] + sq[None, :] - 2.0 * pt.dot(x, x.T), 0.0)
        u = r2 + c * c
        F = s * b * u ** (b - 1)
        Fgg = s * b * (b - 1) * u ** (b - 2)
        sx = pt.dot(S, x.T)  # <S_i, theta_j>
        dsx = pt.diagonal(sx)
        cross = sx + sx.T - dsx[:, None] - dsx[None, :]  # <S_j - S_i, theta_i - theta_j>
        if g == 0:
            k = s * u**b
            sgram = pt.dot(S, S.T)
        else:
            k = k + s * u**b
            sgram = sgram + pt.dot(S, S.T)
        K = K + 2.0 * F * cross - 2.0 * d_g * F - 4.0 * r2 * Fgg
    K = K + sgram * k
    ksd = pt.mean(K)
    grads = pt.grad(ksd, As + Ws)
    mode = _default_mode().excluding("fusion")
    f = pm.pytensorf.compile(As + Ws, [ksd, *grads], mode=mode, on_unused_input="ignore",
                             random_seed=False)

    def fn(A, W):
        out = f(*A, *W)
        return out[0], np.stack(out[1:M + 1]), np.stack(out[M + 1:])

    return fn


def fit_dsgd(model, *, n_particles=5, n_steps=2000, init="random", learning_rate=1e-2,
             checkpoints=None, kernel=None, weights="stein", space="unconstrained",
             ksd_kernel=None, q_bank=None, X=None, mask=None, var_names=None, n_draws=None,
             random_seed=None, progressbar=True):
    """Direct Stein gradient descent on the particles (gradient of the KSD by autodiff).

    Parameters
    ----------
    model : pymc.Model
        Free variables ``A`` and ``W`` only.
    n_particles : int, default 5
        ``M`` (the graph has ``M^2`` Stein-kernel terms; the paper used 5).
    n_steps : int, default 2000
        Gradient steps (Adam on ``-KSD``, step relative to each block's mean magnitude).
    init, learning_rate, checkpoints, weights, q_bank, X, mask, var_names, n_draws
        As in :func:`bnmfzoo.inference.fit_svgd`.
    space, ksd_kernel
        As in :func:`bnmfzoo.inference.fit_svgd`: the discrepancy of the weights and the
        reported KSDs, not the descended objective (``space="constrained",
        ksd_kernel="masood2019"`` reports the descended objective itself).
    kernel : BlockKernel, optional
        Base kernel of the descended objective: a summed block kernel of IMQ kernels (default
        the paper's ``c_A = 1e-2``, ``c_W = 1e3``, ``b = -1/2``).
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool, default True

    Returns
    -------
    xarray.DataTree
        As :func:`bnmfzoo.inference.fit_svgd`; root attr ``method="dsgd"``.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.models import silf
    >>> from bnmfzoo.inference import fit_dsgd
    >>> X = np.random.default_rng(0).random((8, 7))
    >>> dt = fit_dsgd(silf(X, 2, n_reference=5), n_particles=3, n_steps=20,
    ...               random_seed=0, progressbar=False)  # doctest: +SKIP
    """
    info = resolve_nmf_model(model, X=X, mask=mask, var_names=var_names, method="fit_dsgd")
    n_draws = _check_steps(n_particles, n_steps, learning_rate, n_draws)
    rng = as_generator(random_seed)
    with Timer() as setup:
        A, W = initial_particles(info, init, int(n_particles), rng, q_bank=q_bank)
        kernel = default_kernel(info) if kernel is None else kernel
        with Timer() as compile_clock:
            fn = ksd_graph(model, info, A.shape[0], kernel)

    def direction(A, W):
        _, gA, gW = fn(A, W)
        return -np.asarray(gA), -np.asarray(gW)

    return run_particle_optimizer(
        info, A, W, direction, n_steps=int(n_steps), learning_rate=learning_rate,
        checkpoints=checkpoints, kernel=ksd_kernel, weights=weights, space=space, method="dsgd",
        n_draws=int(n_draws or max(100, A.shape[0])), rng=rng, progressbar=progressbar,
        setup_time=setup.wall, setup_cpu_time=setup.cpu,
        attrs={"init": init if isinstance(init, str) else "given"},
        extra_diagnostics={"compile_time": compile_clock.wall,
                           "compile_cpu_time": compile_clock.cpu},
    )
