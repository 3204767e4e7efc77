r"""Base kernels for the kernelized Stein discrepancy (pure NumPy).

A *base kernel* here is a function of the squared Euclidean distances between two points
measured separately on named blocks of variables (e.g. ``A`` and ``W``):

.. math:: k(\theta, \theta') = F(r^2_1, \dots, r^2_G), \qquad
          r^2_g = \lVert \theta_g - \theta'_g \rVert^2 .

That is all the closed-form Stein kernel needs: with :math:`F_g = \partial F/\partial r^2_g`
and :math:`F_{gg} = \partial^2 F/\partial (r^2_g)^2`,

* :math:`\nabla_{\theta_g} k = 2 F_g (\theta_g - \theta'_g) = -\nabla_{\theta'_g} k`,
* :math:`\sum_i \partial^2 k / \partial\theta_i \partial\theta'_i
  = \sum_g \left[-2 d_g F_g - 4 r^2_g F_{gg}\right]` (:math:`d_g` = size of block g).

The **kernel protocol** is therefore one method, ``evaluate(sqdist)``: given a mapping
block name -> array of squared distances (any shape, usually ``(M, M)``), return
``(k, d1, d2)`` where ``k`` is the kernel value and ``d1[g]``, ``d2[g]`` are
:math:`F_g` and :math:`F_{gg}` (same shape as the distances). Any object with that method (and
``__call__`` for Gram matrices, inherited from :class:`BlockKernel`) plugs into
:func:`bnmfzoo.diagnostics.stein_kernel_matrix`.

Radial kernels of one block (:class:`IMQ`, :class:`Gaussian`) return ``(f, f', f'')`` as
functions of the squared distance; :class:`BlockKernel` combines one radial kernel per block by a
weighted sum (the paper's choice, eq. 7 of Masood & Doshi-Velez 2019) or a product.
:class:`PreconditionedIMQ` is one IMQ kernel on the whole parameter vector with a block-diagonal
preconditioner, and :class:`MedianIMQ` (the library's default) chooses that preconditioner from
the points by the median heuristic.
"""

from collections.abc import Mapping

import numpy as np

#: length scales of the paper's base kernel (Masood & Doshi-Velez 2019, Section 6.1)
PAPER_C = {"A": 1e-2, "W": 1e3}
#: exponent of the paper's IMQ kernels
PAPER_B = -0.5


class RadialKernel:
    """A kernel of one block as a function ``f(r2)`` of the squared distance ``r2``.

    Subclasses implement :meth:`derivatives`.
    """

    def derivatives(self, r2):
        """Return ``(f, df/dr2, d2f/dr2^2)`` evaluated at the squared distances ``r2``."""
        raise NotImplementedError

    def __call__(self, r2):
        """Return the kernel value at the squared distances ``r2``."""
        return self.derivatives(np.asarray(r2, dtype=float))[0]


class IMQ(RadialKernel):
    r"""Inverse multiquadric kernel ``(r2 + c^2)^b``, normalized so that ``f(0) = 1``.

    Parameters
    ----------
    c : float
        Length scale, ``c > 0``.
    b : float
        Exponent in ``(-1, 0)`` (Gorham & Mackey 2017: then the KSD detects non-convergence).
    normalize : bool
        Divide by ``(c^2)^b`` so that ``f(0) = 1`` (the paper's :math:`1/\gamma`).

    Examples
    --------
    >>> from bnmfzoo.diagnostics._stein._kernels import IMQ
    >>> float(IMQ(c=2.0)(0.0))
    1.0
    """

    def __init__(self, c=1.0, b=-0.5, *, normalize=True):
        c = float(c)
        b = float(b)
        if not np.isfinite(c) or c <= 0:
            raise ValueError(f"c must be a positive finite number, got {c}")
        if not -1.0 < b < 0.0:
            raise ValueError(f"b must lie in (-1, 0), got {b}")
        self.c = c
        self.b = b
        self.normalize = bool(normalize)

    def derivatives(self, r2):
        """Return ``(f, f', f'')`` at ``r2`` (derivatives with respect to ``r2``)."""
        c2 = self.c**2
        u = np.asarray(r2, dtype=float) + c2
        f = (u / c2) ** self.b if self.normalize else u**self.b
        f1 = self.b * f / u
        f2 = self.b * (self.b - 1.0) * f / u**2
        return f, f1, f2

    def __repr__(self):
        return f"IMQ(c={self.c:g}, b={self.b:g})"


class Gaussian(RadialKernel):
    """Gaussian (RBF) kernel ``exp(-r2 / h^2)`` (``f(0) = 1``).

    Note the paper's footnote 6: Gaussian kernels fail to detect non-convergence in more than
    three dimensions; prefer :class:`IMQ` for discrepancies. Provided for comparison and SVGD.

    Parameters
    ----------
    bandwidth : float
        ``h > 0``.

    Examples
    --------
    >>> from bnmfzoo.diagnostics._stein._kernels import Gaussian
    >>> float(Gaussian(bandwidth=1.0)(0.0))
    1.0
    """

    def __init__(self, bandwidth=1.0):
        h = float(bandwidth)
        if not np.isfinite(h) or h <= 0:
            raise ValueError(f"bandwidth must be a positive finite number, got {h}")
        self.bandwidth = h

    def derivatives(self, r2):
        """Return ``(f, f', f'')`` at ``r2`` (derivatives with respect to ``r2``)."""
        h2 = self.bandwidth**2
        f = np.exp(-np.asarray(r2, dtype=float) / h2)
        return f, -f / h2, f / h2**2

    def __repr__(self):
        return f"Gaussian(bandwidth={self.bandwidth:g})"


class BlockKernel:
    r"""Combine one radial kernel per block of variables by a weighted sum or a product.

    Parameters
    ----------
    kernels : dict of str to RadialKernel, optional
        Kernel of each named block (block names are the model's free-variable names).
    default : RadialKernel, optional
        Kernel for blocks not in ``kernels``; default ``IMQ(c=1, b=-0.5)``.
    combine : {"sum", "product"}
        ``"sum"``: :math:`k = \sum_g w_g f_g(r^2_g)` with weights ``weights`` (default
        ``1 / n_blocks``, so that ``k(theta, theta) = 1``); ``"product"``:
        :math:`k = \prod_g f_g(r^2_g)`.
    weights : dict of str to float, optional
        Weights of the sum (ignored for a product). Default equal weights summing to one.

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.diagnostics._stein._kernels import IMQ, BlockKernel
    >>> kern = BlockKernel({"A": IMQ(c=1e-2), "W": IMQ(c=1e3)})
    >>> x = {"A": np.zeros((1, 3)), "W": np.zeros((1, 2))}
    >>> float(kern(x)[0, 0])
    1.0
    """

    def __init__(self, kernels=None, *, default=None, combine="sum", weights=None):
        kernels = dict(kernels or {})
        for name, kern in kernels.items():
            if not hasattr(kern, "derivatives"):
                raise TypeError(f"kernels[{name!r}] must be a RadialKernel, got {kern!r}")
        if combine not in ("sum", "product"):
            raise ValueError(f"combine must be 'sum' or 'product', got {combine!r}")
        self.kernels = kernels
        self.default = IMQ(1.0, PAPER_B) if default is None else default
        self.combine = combine
        self.weights = None if weights is None else {k: float(v) for k, v in weights.items()}

    def kernel_for(self, name):
        """Return the radial kernel used on block ``name``."""
        return self.kernels.get(name, self.default)

    def _weights(self, names):
        if self.weights is None:
            return {name: 1.0 / len(names) for name in names}
        missing = [name for name in names if name not in self.weights]
        if missing:
            raise ValueError(f"kernel weights missing for blocks {missing}")
        return {name: self.weights[name] for name in names}

    def evaluate(self, sqdist):
        """Kernel value and derivatives with respect to each block's squared distance.

        Parameters
        ----------
        sqdist : dict of str to numpy.ndarray
            Squared distances per block (all of the same shape).

        Returns
        -------
        k : numpy.ndarray
        d1, d2 : dict of str to numpy.ndarray
            First and second derivatives of ``k`` with respect to each block's ``r2``.
        """
        if not isinstance(sqdist, Mapping) or not sqdist:
            raise ValueError("sqdist must be a non-empty mapping block name -> distances")
        names = list(sqdist)
        parts = {name: self.kernel_for(name).derivatives(sqdist[name]) for name in names}
        if self.combine == "sum":
            w = self._weights(names)
            k = sum(w[name] * parts[name][0] for name in names)
            d1 = {name: w[name] * parts[name][1] for name in names}
            d2 = {name: w[name] * parts[name][2] for name in names}
            return k, d1, d2
        d1, d2 = {}, {}
        for name in names:
            others = np.ones_like(parts[name][0])
            for other in names:
                if other != name:
                    others = others * parts[other][0]
            d1[name] = parts[name][1] * others
            d2[name] = parts[name][2] * others
        k = np.ones_like(parts[names[0]][0])
        for name in names:
            k = k * parts[name][0]
        return k, d1, d2

    def __call__(self, x, y=None):
        """Gram matrix ``k(x_i, y_j)`` of two sets of points given as dicts of blocks.

        Parameters
        ----------
        x, y : dict of str to numpy.ndarray
            Arrays shaped ``(M, ...)`` / ``(L, ...)`` per block; ``y`` defaults to ``x``.

        Returns
        -------
        numpy.ndarray
            Shape ``(M, L)``.
        """
        y = x if y is None else y
        sq = {}
        for name in x:
            a = np.asarray(x[name], dtype=float).reshape(len(x[name]), -1)
            b = np.asarray(y[name], dtype=float).reshape(len(y[name]), -1)
            sq[name] = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
        return self.evaluate(sq)[0]

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.kernels.items())
        return f"BlockKernel({{{inner}}}, default={self.default!r}, combine={self.combine!r})"


def imq_kernel(c=None, b=PAPER_B, *, default_c=1.0, combine="sum"):
    r"""The paper's base kernel: normalized IMQ kernels on each block, summed.

    Masood & Doshi-Velez (2019), eq. 7:
    :math:`k = \tfrac{1}{2\gamma_A}(\lVert\Delta A\rVert^2 + c_A^2)^{b}
    + \tfrac{1}{2\gamma_W}(\lVert\Delta W\rVert^2 + c_W^2)^{b}`,
    :math:`\gamma_g = (c_g^2)^b`, with :math:`c_A = 10^{-2}`, :math:`c_W = 10^3`,
    :math:`b = -1/2`, so that ``k(theta, theta) = 1``. With more than two blocks (e.g. a free
    noise precision ``tau``) every block gets weight ``1 / n_blocks`` and blocks without a length
    scale in ``c`` use ``default_c``.

    Parameters
    ----------
    c : dict of str to float, optional
        Length scale per block (free-variable name). Default :data:`PAPER_C`
        (``{"A": 1e-2, "W": 1e3}``); a given dict replaces it entirely.
    b : float or dict of str to float
        IMQ exponent(s), default -0.5.
    default_c : float
        Length scale of blocks not named in ``c``.
    combine : {"sum", "product"}
        ``"sum"`` is the paper's choice.

    Returns
    -------
    BlockKernel

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.diagnostics._stein._kernels import imq_kernel
    >>> kern = imq_kernel()
    >>> pts = {"A": np.random.default_rng(0).random((4, 3, 2)), "W": np.ones((4, 2, 5))}
    >>> bool(np.allclose(np.diag(kern(pts)), 1.0))
    True
    """
    c = dict(PAPER_C if c is None else c)
    bs = b if isinstance(b, Mapping) else {}
    b_default = PAPER_B if isinstance(b, Mapping) else b
    kernels = {name: IMQ(cv, bs.get(name, b_default)) for name, cv in c.items()}
    return BlockKernel(kernels, default=IMQ(default_c, b_default), combine=combine)


class PreconditionedIMQ(BlockKernel):
    r"""One IMQ kernel on all blocks jointly, with a length scale per block.

    .. math:: k(\theta, \theta') = \Bigl(1 + \sum_g r_g^2 / \ell_g^2\Bigr)^{b},
              \qquad r_g^2 = \lVert\theta_g - \theta'_g\rVert^2 ,

    i.e. the IMQ kernel :math:`(c^2 + \lVert\Gamma^{-1/2}(\theta - \theta')\rVert^2)^b` of
    Gorham & Mackey (2017, Theorem 8), normalized to ``k(theta, theta) = 1``, with the
    block-diagonal preconditioner :math:`\Gamma = \operatorname{diag}(\ell_g^2 I_{d_g})` (the
    preconditioned IMQ kernel of Riabiz et al. 2022; it is the ``stein-thinning`` package's kernel
    with ``c = 1`` and :math:`L^{-1} = \Gamma^{-1}`). For ``b`` in ``(-1, 0)`` the KSD with this
    kernel detects non-convergence for targets with a distantly dissipative score (Gorham & Mackey
    2017), unlike a sum of per-block kernels, whose feature space only holds sums of functions of
    single blocks. With one block it equals ``IMQ(c=lengthscale, b)``.

    Parameters
    ----------
    lengthscales : dict of str to float
        :math:`\ell_g > 0` per block; blocks not named use ``default``.
    b : float
        Exponent in ``(-1, 0)``; default -1/2.
    default : float, optional
        Length scale of unnamed blocks (default: unnamed blocks are an error).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.diagnostics._stein._kernels import IMQ, PreconditionedIMQ
    >>> r2 = {"x": np.array([0.3])}
    >>> bool(np.allclose(PreconditionedIMQ({"x": 2.0}).evaluate(r2)[0], IMQ(2.0)(0.3)))
    True
    """

    def __init__(self, lengthscales, *, b=PAPER_B, default=None):
        self.lengthscales = {}
        for name, ell in dict(lengthscales).items():
            ell = float(ell)
            if not np.isfinite(ell) or ell <= 0:
                raise ValueError(f"lengthscales[{name!r}] must be positive and finite, got {ell}")
            self.lengthscales[name] = ell
        b = float(b)
        if not -1.0 < b < 0.0:
            raise ValueError(f"b must lie in (-1, 0), got {b}")
        self.b = b
        self.default_lengthscale = None if default is None else float(default)
        self.combine = "joint"

    def lengthscale(self, name):
        """Return the length scale of block ``name``."""
        if name in self.lengthscales:
            return self.lengthscales[name]
        if self.default_lengthscale is None:
            raise ValueError(
                f"no length scale for block {name!r} (blocks: {sorted(self.lengthscales)})"
            )
        return self.default_lengthscale

    def evaluate(self, sqdist):
        """Kernel value and its derivatives with respect to each block's squared distance."""
        if not isinstance(sqdist, Mapping) or not sqdist:
            raise ValueError("sqdist must be a non-empty mapping block name -> distances")
        inv = {name: 1.0 / self.lengthscale(name) ** 2 for name in sqdist}
        u = 1.0 + sum(inv[name] * np.asarray(r2, dtype=float) for name, r2 in sqdist.items())
        k = u**self.b
        f1 = self.b * k / u
        f2 = self.b * (self.b - 1.0) * k / u**2
        d1 = {name: inv[name] * f1 for name in sqdist}
        d2 = {name: inv[name] ** 2 * f2 for name in sqdist}
        return k, d1, d2

    def __repr__(self):
        inner = ", ".join(f"{k}={v:.6g}" for k, v in self.lengthscales.items())
        return f"PreconditionedIMQ({{{inner}}}, b={self.b:g})"


class AdaptiveKernel:
    """A kernel recipe whose parameters are chosen from the points (see :class:`MedianIMQ`).

    Subclasses implement ``fit(sqdist) -> kernel``, given the points' pairwise squared distances
    per block; :func:`bnmfzoo.diagnostics.stein_kernel_matrix` fits it before use.
    """

    def fit(self, sqdist):
        """Return a kernel with the ``evaluate`` protocol fitted to the squared distances."""
        raise NotImplementedError


class MedianIMQ(AdaptiveKernel):
    r"""The library's default base kernel: preconditioned IMQ, scales by the median heuristic.

    :class:`PreconditionedIMQ` with :math:`\ell_g` = the median of the pairwise Euclidean
    distances of block ``g`` over the points (the "med" setting of Riabiz et al. 2022, applied per
    block; Gorham & Mackey 2017 use the IMQ kernel with ``b = -1/2``). The kernel then sees the
    points at their own scale: a fixed length scale far below the points' spread (the paper's
    ``c_A = 1e-2``) makes every off-diagonal entry negligible, so the KSD only counts points,
    and one far above it makes the kernel flat. A block whose points all coincide gets
    :math:`\ell_g = 1`; if the median is zero (more than half the pairs coincide) the mean of the
    non-zero distances is used.

    Parameters
    ----------
    b : float
        IMQ exponent in ``(-1, 0)``; default -1/2.
    scale : float
        Multiplies every median (default 1).

    Examples
    --------
    >>> import numpy as np
    >>> from bnmfzoo.diagnostics._stein._kernels import MedianIMQ
    >>> x = np.array([[0.0], [1.0], [3.0]])
    >>> MedianIMQ().fit({"x": (x - x.T) ** 2})
    PreconditionedIMQ({x=2}, b=-0.5)
    """

    def __init__(self, b=PAPER_B, *, scale=1.0):
        b = float(b)
        if not -1.0 < b < 0.0:
            raise ValueError(f"b must lie in (-1, 0), got {b}")
        scale = float(scale)
        if not np.isfinite(scale) or scale <= 0:
            raise ValueError(f"scale must be positive and finite, got {scale}")
        self.b = b
        self.scale = scale

    def fit(self, sqdist):
        """Median-heuristic :class:`PreconditionedIMQ` for these pairwise squared distances."""
        ells = {}
        for name, r2 in sqdist.items():
            r2 = np.asarray(r2, dtype=float)
            m = r2.shape[0]
            off = r2[np.triu_indices(m, 1)] if r2.ndim == 2 and m > 1 else r2.ravel()
            dist = np.sqrt(np.maximum(off, 0.0))
            med = float(np.median(dist)) if dist.size else 0.0
            if med <= 0:
                pos = dist[dist > 0]
                med = float(pos.mean()) if pos.size else 1.0
            ells[name] = self.scale * med
        return PreconditionedIMQ(ells, b=self.b)

    def __repr__(self):
        extra = "" if self.scale == 1.0 else f", scale={self.scale:g}"
        return f"MedianIMQ(b={self.b:g}{extra})"


def median_imq(b=PAPER_B, *, scale=1.0):
    """The default base kernel: :class:`MedianIMQ` (preconditioned IMQ, median heuristic).

    Examples
    --------
    >>> from bnmfzoo.diagnostics._stein._kernels import median_imq
    >>> median_imq()
    MedianIMQ(b=-0.5)
    """
    return MedianIMQ(b, scale=scale)


def masood2019_kernel(a_name="A", w_name="W"):
    """The paper's kernel (eq. 7, ``c_A = 1e-2``, ``c_W = 1e3``) on the named A and W blocks.

    Masood & Doshi-Velez (2019), Section 6.1; see :func:`imq_kernel`.

    Examples
    --------
    >>> from bnmfzoo.diagnostics._stein._kernels import masood2019_kernel
    >>> masood2019_kernel("A_T", "W").kernel_for("A_T")
    IMQ(c=0.01, b=-0.5)
    """
    return imq_kernel(c={a_name: PAPER_C["A"], w_name: PAPER_C["W"]})
