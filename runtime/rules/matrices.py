"""Diagonals, traces and norms: ``diagonal``, ``diag``, ``diagflat``, ``trace`` (offsets and
axes as in NumPy; ``tril``/``triu`` are in :mod:`.arrays`), and ``np.linalg.norm`` for every
``ord``, ``axis`` (None, an int, a pair) and ``keepdims``.

Vector norms: 2 (and None), ±inf, 0 (a count: zero gradient), any other p.  Matrix norms:
'fro' (and None), 'nuc', ±1, ±2, ±inf.  Ties of a max or min share the gradient equally, as
``np.max``'s rule does; a singular value's gradient assumes it is simple.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.primitives import defjvp, defvjp, helper, primitive

__all__ = ["undiagonal", "trace_grad", "diag_grad", "norm", "norm_grad", "norm_axes",
           "norm_direction", "norm_hessian"]


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
    return np.transpose(out, tuple(int(i) for i in np.argsort(order)))


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



# Forward mode of the norms: the tangent times the gradient of the norm for a cotangent of
# ones (``norm_direction``), a primitive whose own derivative is the norm's Hessian, so that
# the forward rule is differentiated again (second order).

@primitive(dtype_rule="float")
def norm_direction(x, *, ord=None, axis=None, vector=False):
    """The gradient of ``np.linalg.norm(x, ord, axis)`` (``vector``: of
    ``np.linalg.vector_norm``) for a cotangent of ones, shaped as ``x``."""
    if vector:
        ans = np.linalg.vector_norm(x, axis=axis, keepdims=True, ord=ord)
    else:
        ans = np.linalg.norm(x, ord, axis, keepdims=True)
    return norm_grad(np.ones_like(ans), ans, x, ord, axis, True, vector)


def _svd_direction_tangent(t, u, s, vh, weights):
    """The tangent of ``u diag(weights) vh`` (the reduced SVD of a matrix, ``weights`` fixed)
    along ``t``; without weights (``u vh``, the nuclear norm's) written with ``1 / (s_i +
    s_j)``, which stays finite where singular values repeat."""
    v, ut = np.swapaxes(vh, -1, -2), np.swapaxes(u, -1, -2)
    c = np.matmul(ut, np.matmul(t, v))                                   # u^T t v
    eye = np.eye(np.shape(s)[-1], dtype=bool)
    s_row, s_col = np.expand_dims(s, -2), np.expand_dims(s, -1)
    outside_u = (np.matmul(t, v) - np.matmul(u, c)) / s_row               # (I - u u^T) t v / s
    outside_v = (np.matmul(ut, t) - np.matmul(c, vh)) / s_col            # u^T t (I - v v^T) / s
    if weights is None:
        inside = (c - np.swapaxes(c, -1, -2)) / (s_col + s_row)
        return np.matmul(u, np.matmul(inside, vh)) + np.matmul(outside_u, vh) + np.matmul(
            u, outside_v)
    f = np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, s_row * s_row - s_col * s_col))
    du = np.matmul(u, f * (c * s_row + s_col * np.swapaxes(c, -1, -2))) + outside_u
    dvt = np.swapaxes(np.matmul(v, f * (s_col * c + np.swapaxes(c, -1, -2) * s_row)), -1, -2) \
        + outside_v
    w = np.expand_dims(weights, -2)
    return np.matmul(du * w, vh) + np.matmul(u * w, dvt)


@helper
def norm_hessian(t, x, ord=None, axis=None, vector=False):
    """The derivative of :func:`norm_direction` along ``t``: the Hessian of the norm (summed
    over its results) times ``t``; symmetric, so also the vjp.  Piecewise linear norms (1,
    inf, their matrix forms, 0) have none."""
    axes, matrix = norm_axes(np.ndim(x), ord, axis, vector)
    t = t + 0.0 * x
    if ord is None or ord == "fro" or (ord == 2 and not matrix):
        n = np.sqrt(np.sum(x * x, axis=axes, keepdims=True))
        safe = np.where(n == 0, 1.0, n)
        along = np.sum(x * t, axis=axes, keepdims=True)
        return np.where(n == 0, 0.0, t / safe - x * along / safe ** 3)
    if ord in ((1, -1, np.inf, -np.inf) if matrix else (1, np.inf, -np.inf, 0)):
        return np.zeros_like(t)
    if not matrix:
        p = float(ord)
        n = np.linalg.vector_norm(x, axis=axes, keepdims=True, ord=p)
        mag = np.abs(x)
        direction = np.sign(x) * mag ** (p - 1.0) * n ** (1.0 - p)
        dn = np.sum(direction * t, axis=axes, keepdims=True)
        return ((p - 1.0) * mag ** (p - 2.0) * t * n ** (1.0 - p)
                + np.sign(x) * mag ** (p - 1.0) * (1.0 - p) * n ** (-p) * dn)
    row, col = axes
    moved, moved_t = np.moveaxis(x, (row, col), (-2, -1)), np.moveaxis(t, (row, col), (-2, -1))
    u, s, vh = np.linalg.svd(moved, full_matrices=False)
    weights = None
    if ord != "nuc":
        pick = np.argmax(s, axis=-1) if ord == 2 else np.argmin(s, axis=-1)
        weights = (np.arange(s.shape[-1]) == pick[..., None]).astype(s.dtype)
    out = _svd_direction_tangent(moved_t, u, s, vh, weights)
    return np.moveaxis(out, (-2, -1), (row, col))


defvjp(norm_direction, lambda g, ans, x, ord=None, axis=None, vector=False:
       norm_hessian(g, x, ord, axis, vector))
defjvp(norm_direction, lambda tangents, ans, x, ord=None, axis=None, vector=False:
       norm_hessian(tangents[0], x, ord, axis, vector))
defjvp(norm, lambda tangents, ans, x, ord=None, axis=None, keepdims=False: np.sum(
    tangents[0] * norm_direction(x, ord=ord, axis=axis), axis=axis, keepdims=keepdims))
