"""The residual-path half-sweep kernel of the Gaussian Gibbs samplers (numba, no PyMC).

One call updates every entry of a factor ``U`` given its partner ``V``, row by row, each row's
``R`` entries in order from their truncated-normal conditionals, keeping the residual
``x - U V^T`` on the observed entries current (see :mod:`bnmfzoo.inference.gaussian.gibbs._core`).

Where the time goes on large sparse data, and what this module does about it
(``benchmarks/speed/scale.py``, 72,000 x 10,000 with 10 million observed entries, rank 10):

* The partner rows of a row's entries are read in random order. Over the columns (the ``W``
  half-sweep) the partner is ``A``, a 5.8 MB table; waiting for each read cost about 35 ns per
  entry. The kernel asks the processor to fetch the partner rows ``PREFETCH_AHEAD`` entries
  ahead (``llvm.prefetch``, a hint: it changes no value), which overlaps the reads.
* Over the columns, the residual is kept in row-major order and read and written back through
  a permutation; those reads are prefetched the same way, and a column's residuals are written
  back while their cache lines are still loaded (no full reordered copy).
* The update ``res -= d * b`` of one factor entry and the sums of the next are one pass over the
  row's entries instead of two.

None of this changes an operation or its order: each sum has the four interleaved partial sums
of ``_core._dot_sq`` combined as ``(s0 + s1) + (s2 + s3)``, each residual update is
``res - d * b`` once per accepted change, in IEEE arithmetic without fast-math flags, so the
draws are bit for bit those of the plain two-pass kernel (``tests/gaussian/test_sweep_kernels.py``).
"""

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from bnmfzoo.inference.gaussian.gibbs._gram import _conditional
from bnmfzoo.inference.gaussian.gibbs._mixing import overrelaxed_scaled

__all__ = ["factor_half_sweep", "reorder", "PREFETCH_AHEAD"]

#: how many entries ahead the partner rows and permuted residuals are prefetched (measured at
#: 10 million entries: 8 -> 138 ms, 16 -> 102 ms, 32 -> 87 ms, 64 -> 75 ms for the gather of
#: the W half-sweep, against 354 ms without prefetching)
PREFETCH_AHEAD = 64


def _prefetch_codegen(write):
    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        inds = [context.cast(builder, v, t, types.intp)
                for v, t in zip(args[1:1 + aryty.ndim], signature.args[1:1 + aryty.ndim],
                                strict=True)]
        ptr = cgutils.get_item_pointer2(
            context, builder, data=ary.data, shape=cgutils.unpack_tuple(builder, ary.shape),
            strides=cgutils.unpack_tuple(builder, ary.strides), layout=aryty.layout, inds=inds,
            wraparound=False, boundscheck=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # (address, read 0 / write 1, locality 3 = keep in all cache levels, data cache 1)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(int(write)), i32(3), i32(1)])
        return context.get_dummy_value()

    return codegen


@intrinsic
def _prefetch(typingctx, arr, i, k):
    """Hint the processor to load a cache line for reading.

    The line of ``arr[i, k]`` (2-D) or ``arr[i]`` (1-D; ``k`` ignored). No effect on any
    value; the address is never dereferenced.
    """
    if not isinstance(arr, types.Array) or arr.ndim not in (1, 2):
        return None
    return types.void(arr, i, k), _prefetch_codegen(write=False)


@intrinsic
def _prefetch_write(typingctx, arr, i):
    """As :func:`_prefetch` for ``arr[i]`` of a 1-D array that is about to be written."""
    if not isinstance(arr, types.Array) or arr.ndim != 1:
        return None
    return types.void(arr, i), _prefetch_codegen(write=True)


def _lanes_codegen(update):
    """Code of :func:`_sums4` (``update=False``) and :func:`_update_sums4`."""

    def codegen(context, builder, signature, args):
        f64 = ir.DoubleType()
        v4 = ir.VectorType(f64, 4)
        arrays = args[:3] if update else args[:2]
        ptrs = [context.make_array(t)(context, builder, v).data
                for t, v in zip(signature.args[:len(arrays)], arrays, strict=True)]
        res_p, b_p = ptrs[0], ptrs[1]
        n4 = args[-1]
        zero = ir.Constant(v4, [0.0] * 4)
        acc_a = cgutils.alloca_once_value(builder, zero)
        acc_q = cgutils.alloca_once_value(builder, zero)
        if update:
            bp_p = ptrs[2]
            d = args[3]
            dv = zero
            for lane in range(4):
                dv = builder.insert_element(dv, d, ir.IntType(32)(lane))
        intp = context.get_value_type(types.intp)

        def vload(p, e):
            return builder.load(builder.bitcast(builder.gep(p, [e]), v4.as_pointer()), align=8)

        with cgutils.for_range_slice(builder, intp(0), n4, intp(4), intp=intp) as (e, _):
            r = vload(res_p, e)
            if update:  # r = res - d * bp, stored back
                r = builder.fsub(r, builder.fmul(dv, vload(bp_p, e)))
                builder.store(r, builder.bitcast(builder.gep(res_p, [e]), v4.as_pointer()),
                              align=8)
            bv = vload(b_p, e)
            builder.store(builder.fadd(builder.load(acc_a), builder.fmul(r, bv)), acc_a)
            builder.store(builder.fadd(builder.load(acc_q), builder.fmul(bv, bv)), acc_q)
        a, q = builder.load(acc_a), builder.load(acc_q)
        lanes = [builder.extract_element(v, ir.IntType(32)(k)) for v in (a, q) for k in range(4)]
        return context.make_tuple(builder, signature.return_type, lanes)

    return codegen


def _check_lanes(*arrays):
    return all(isinstance(a, types.Array) and a.ndim == 1 and a.dtype == types.float64
               for a in arrays)


@intrinsic
def _sums4(typingctx, res, b, n4):
    """Four-lane sums ``(a0..a3, q0..q3)`` of ``res * b`` and ``b * b``.

    ``a_l = sum res[e] * b[e]``, ``q_l = sum b[e]^2`` over ``e = l, l + 4, ... < n4`` in
    increasing ``e`` (``n4`` a multiple of 4; unit strides).

    One ``<4 x double>`` multiply and add per four entries, IEEE without fast-math flags: each
    lane is exactly the scalar sum written out (LLVM does not vectorize four scalar
    accumulators by itself, and may not reorder a floating-point sum to do so).
    """
    if not _check_lanes(res, b):
        return None
    return types.UniTuple(types.float64, 8)(res, b, n4), _lanes_codegen(update=False)


@intrinsic
def _update_sums4(typingctx, res, b, bp, d, n4):
    """As :func:`_sums4` after ``res[e] = res[e] - d * bp[e]`` (stored) for each ``e < n4``."""
    if not _check_lanes(res, b, bp):
        return None
    return (types.UniTuple(types.float64, 8)(res, b, bp, types.float64, n4),
            _lanes_codegen(update=True))


@numba.njit(cache=True, inline="always")
def _prefetch_row(V, j):
    """Prefetch every cache line of row ``j`` of the C-contiguous 2-D ``V``."""
    R = V.shape[1]
    for k in range(0, R - 1, 8):
        _prefetch(V, j, k)
    _prefetch(V, j, R - 1)


@numba.njit(cache=True)
def factor_half_sweep(U, V, ptr, idx, resid, tau, lam, rng, alpha=0.0):
    """Update every entry of ``U`` (n_u x R) given partner ``V`` (n_v x R), in place.

    The model is ``x_e = U[i] . V[idx[e]] + noise`` for the entries ``e = ptr[i]:ptr[i+1]`` of
    row ``i``; ``lam[k]`` is the exponential rate of column ``k`` of ``U``; ``resid`` (same
    order as ``idx``) is kept equal to ``x - U V^T`` on those entries.

    For each row the partner rows are gathered into a contiguous (R x n_i) buffer, then for
    ``k = 0..R-1``: ``s1 = sum(res * b_k)``, ``s2 = sum(b_k^2)`` (four interleaved partial
    sums, combined as ``(s0 + s1) + (s2 + s3)``, the tail in ``s0``), a draw from the
    conditional, and ``res -= d * b_k`` when the entry changed by ``d != 0`` (fused with the
    sums of ``k + 1``): the operations of the two-pass kernel, in the same order. ``alpha``
    in (-1, 0) replaces the fresh draws by the overrelaxed updates of
    :func:`~bnmfzoo.inference.gaussian.gibbs._mixing.overrelaxed_scaled` (0: fresh draws).
    """
    R = U.shape[1]
    nnz = idx.size
    max_n = 0
    for i in range(U.shape[0]):
        max_n = max(max_n, ptr[i + 1] - ptr[i])
    buf = np.empty((R, max_n))
    for i in range(U.shape[0]):
        start = ptr[i]
        n = ptr[i + 1] - start
        for e in range(n):
            a = start + e + PREFETCH_AHEAD
            if a < nnz:
                _prefetch_row(V, idx[a])
            j = idx[start + e]
            for k in range(R):
                buf[k, e] = V[j, k]
        res = resid[start:start + n]
        n4 = n - n % 4
        d_prev = 0.0
        for k in range(R):
            b = buf[k]
            if d_prev != 0.0:  # apply the previous entry's change while summing for this one
                bp = buf[k - 1]
                a0, a1, a2, a3, q0, q1, q2, q3 = _update_sums4(res, b, bp, d_prev, n4)
                for e in range(n4, n):
                    r0 = res[e] - d_prev * bp[e]
                    res[e] = r0
                    v0 = b[e]
                    a0 += r0 * v0
                    q0 += v0 * v0
            else:
                a0, a1, a2, a3, q0, q1, q2, q3 = _sums4(res, b, n4)
                for e in range(n4, n):
                    v0 = b[e]
                    a0 += res[e] * v0
                    q0 += v0 * v0
            s1 = (a0 + a1) + (a2 + a3)
            s2 = (q0 + q1) + (q2 + q3)
            old = U[i, k]
            prec = tau * s2
            lin = tau * (s1 + old * s2) - lam[k]
            if alpha != 0.0:
                inv_sd = 1.0 / np.sqrt(prec) if prec > 0.0 else (
                    np.inf if prec <= 0.0 else np.nan)
                new = overrelaxed_scaled(old, lin, inv_sd, lam[k], alpha, rng)
            else:
                new = _conditional(lin, prec, lam[k], rng)
            d_prev = new - old
            if d_prev != 0.0:
                U[i, k] = new
        if d_prev != 0.0:  # the last entry's change
            bp = buf[R - 1]
            for e in range(n):
                res[e] -= d_prev * bp[e]


@numba.njit(cache=True)
def reorder(src, pos, dst, forward):
    """``dst[pos[e]] = src[e]`` (``forward``) or ``dst[e] = src[pos[e]]``, for every ``e``.

    With ``pos`` the CSR -> CSC positions, both run in row-major order: consecutive entries
    fall in different columns, but each column's position only moves forward, so the memory
    touched at any time is about one cache line per column (N lines), not the whole array
    as when the loop runs in column order over the rows' entries.
    """
    n = pos.size
    for e in range(n):
        a = e + PREFETCH_AHEAD
        if a < n:
            if forward:
                _prefetch_write(dst, pos[a])
            else:
                _prefetch(src, pos[a], 0)
        if forward:
            dst[pos[e]] = src[e]
        else:
            dst[e] = src[pos[e]]
