"""Diagonals, traces and norms: ``diagonal``, ``diag``, ``diagflat``, ``trace`` (offsets and
axes as in NumPy; ``tril``/``triu`` are in :mod:`.arrays`), and ``np.linalg.norm`` for every
``ord``, ``axis`` (None, an int, a pair) and ``keepdims``.

Vector norms: 2 (and None), ±inf, 0 (a count: zero gradient), any other p.  Matrix norms:
'fro' (and None), 'nuc', ±1, ±2, ±inf.  Ties of a max or min share the gradient equally, as
``np.max``'s rule does; a singular value's gradient assumes it is simple.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.forward_rules import reduced
from srcgrad.runtime.primitives import defjvp, defvjp, helper

__all__ = ["undiagonal", "trace_grad", "diag_grad", "norm", "norm_grad", "norm_axes"]


@helper
def undiagonal(g, shape, offset=0, axis1=0, axis2=1):
    """The adjoint of ``np.diagonal(x, offset, axis1, axis2)`` for ``x`` of ``shape``: ``g``
    (the other axes, then the diagonal) put back on that diagonal, zeros elsewhere."""
    nd = len(shape)
    axis1, axis2 = axis1 % nd, axis2 % nd
    rows, cols = shape[axis1], shape[axis2]
    size = np.shape(g)[-1]
    # pick[k, i, j] = 1 where the k-th diagonal element is x[..., i, ..., j, ...]
    pick = (np.eye(size, rows, k=max(-offset, 0), dtype=bool)[:, :, None]
            & np.eye(size, cols, k=max(offset, 0), dtype=bool)[:, None, :])
    out = np.tensordot(g, pick, axes=1)                    # other axes, then rows, cols
    others = [k for k in range(nd) if k not in (axis1, axis2)]
    order = others + [axis1, axis2]
    return np.transpose(out, np.argsort(order))


defvjp(np.diagonal, lambda g, ans, a, offset=0, axis1=0, axis2=1:
       undiagonal(g, a.shape, offset, axis1, axis2), nin=1)


@helper
def trace_grad(g, shape, offset=0, axis1=0, axis2=1):
    """Gradient of ``np.trace(x, offset, axis1, axis2)``: ``g`` along that diagonal."""
    nd = len(shape)
    rows, cols = shape[axis1 % nd], shape[axis2 % nd]
    size = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    g = np.expand_dims(g, -1) * np.ones(size, dtype=bool)
    return undiagonal(g, shape, offset, axis1, axis2)


defvjp(np.trace, lambda g, ans, a, offset=0, axis1=0, axis2=1:
       trace_grad(g, a.shape, offset, axis1, axis2), nin=1)


@helper
def diag_grad(g, shape, k=0):
    """Gradient of ``np.diag(v, k)``: a 1-D ``v`` was put on a diagonal, a 2-D one read."""
    if len(shape) == 1:
        return np.diagonal(g, k)
    return undiagonal(g, shape, k, 0, 1)


defvjp(np.diag, lambda g, ans, v, k=0: diag_grad(g, v.shape, k), nin=1)
defvjp(np.diagflat, lambda g, ans, v, k=0: np.reshape(np.diagonal(g, k), v.shape), nin=1)


@helper
def norm_axes(ndim, ord, axis, vector=False):
    """The axes ``np.linalg.norm`` reduces, and whether they make a matrix norm
    (``vector``: ``np.linalg.vector_norm``, a vector norm over any axes, all by default)."""
    if vector:
        axes = tuple(range(ndim)) if axis is None else (axis,) if isinstance(axis, int) \
            else tuple(axis)
        return tuple(a % ndim for a in axes), False
    if axis is None:
        if ord is None:
            return tuple(range(ndim)), False            # the 2-norm of the flattened array
        axis = tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(a % ndim for a in axes), len(axes) == 2


@helper
def norm_grad(g, ans, x, ord=None, axis=None, keepdims=False, vector=False):
    """Gradient of ``np.linalg.norm(x, ord, axis, keepdims)``."""
    axes, matrix = norm_axes(np.ndim(x), ord, axis, vector)
    if not keepdims:
        g = np.expand_dims(g, axes)
        ans = np.expand_dims(ans, axes)
    sign = np.sign(x)
    mag = np.abs(x)
    if ord is None or ord == "fro" or (ord == 2 and not matrix):
        return g * np.where(ans == 0, 0.0, x / np.where(ans == 0, 1.0, ans))
    if not matrix:
        if ord == np.inf or ord == -np.inf:            # the extrema share g (selected:
            hit = mag == ans                          # g = inf elsewhere is not nan)
            count = np.maximum(np.sum(hit, axis=axes, keepdims=True), 1)
            return np.where(hit, g * sign / count, 0.0)
        if ord == 0:
            return np.zeros_like(mag)                   # a count: no gradient
        p = float(ord)
        return g * sign * mag ** (p - 1.0) * ans ** (1.0 - p)
    row, col = axes
    if ord in (1, -1, np.inf, -np.inf):
        inner = row if ord in (1, -1) else col          # summed; the max runs over the other
        sums = np.sum(mag, axis=inner, keepdims=True)
        hit = sums == ans
        count = np.sum(hit, axis=col if inner == row else row, keepdims=True)
        return np.where(hit, g * sign / np.maximum(count, 1), 0.0)
    # 'nuc', 2, -2: functions of the singular values of the (row, col) matrices
    moved = np.moveaxis(x, (row, col), (-2, -1))
    u, s, vh = np.linalg.svd(moved, full_matrices=False)
    if ord == "nuc":
        weights = np.ones_like(s)
    else:
        pick = np.argmax(s, axis=-1) if ord == 2 else np.argmin(s, axis=-1)
        weights = (np.arange(s.shape[-1]) == pick[..., None]).astype(s.dtype)
    inner = np.matmul(u * weights[..., None, :], vh)
    return np.moveaxis(inner, (-2, -1), (row, col)) * g


norm = defvjp(np.linalg.norm, lambda g, ans, x, ord=None, axis=None, keepdims=False:
              norm_grad(g, ans, x, ord, axis, keepdims), nin=1, dtype_rule="float")
"""The primitive of ``np.linalg.norm`` (``Tensor.norm`` records it)."""

for _f in (np.diagonal, np.trace, np.diag, np.diagflat):
    defjvp(_f, linear=True)
defjvp(norm, reduced(*norm.vjps))
