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
    >>> from bnmfzoo.diagnostics._kernels import IMQ
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
    >>> from bnmfzoo.diagnostics._kernels import Gaussian
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
    >>> from bnmfzoo.diagnostics._kernels import IMQ, BlockKernel
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
    >>> from bnmfzoo.diagnostics._kernels import imq_kernel
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
