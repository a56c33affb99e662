"""Statistics: ``average`` (with weights), ``cov``, ``corrcoef``, ``select``, ``gradient``
and ``nan_to_num``'s argument checks.

``np.average`` without weights is ``np.mean``; with weights it is the primitive
``weighted_average``.  ``np.select`` is the nested ``np.where`` it stands for.  ``np.gradient``
along one axis is the primitive of that name (scalar spacings divide its result).
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.core import along, unreduce
from srcgrad.runtime.rules.primitives import (
    NotCompiled,
    bind_numpy,
    defjvp,
    defvjp,
    helper,
    lookup,
    primitive,
    sum_to,
)
from srcgrad.runtime.rules.shapes import carries_gradient

__all__ = ["weighted_average", "aligned_weights", "unaligned_weights", "weights_along",
           "cov_grad", "corrcoef_grad", "cov_layout", "gradient_adjoint", "select_where",
           "gradient_axes", "vector_gradient"]


# ---------------------------------------------------------------------------------------------
# average

@helper
def aligned_weights(w, a_shape, axis):
    """``np.average``'s weights laid along ``axis`` of an array of ``a_shape`` (NumPy's rule:
    the same shape, or the shape of the averaged axes)."""
    if tuple(np.shape(w)) == tuple(a_shape):
        return w
    if axis is None:
        raise TypeError("Axis must be specified when shapes of a and weights differ.")
    axes = tuple(a % len(a_shape) for a in np.atleast_1d(axis).tolist())
    if tuple(np.shape(w)) != tuple(a_shape[a] for a in axes):
        raise ValueError("Shape of weights must be consistent with shape of a along "
                         "specified axis.")
    w = np.transpose(w, tuple(int(i) for i in np.argsort(axes)))
    return np.reshape(w, tuple(n if k in axes else 1 for k, n in enumerate(a_shape)))


@helper
def unaligned_weights(gw, w_shape, a_shape, axis):
    """The inverse of :func:`aligned_weights` for a gradient already summed to its shape."""
    if tuple(w_shape) == tuple(a_shape):
        return gw
    axes = tuple(a % len(a_shape) for a in np.atleast_1d(axis).tolist())
    order = tuple(int(i) for i in np.argsort(axes))
    moved = np.reshape(gw, tuple(a_shape[a] for a in sorted(axes)))
    return np.transpose(moved, tuple(int(i) for i in np.argsort(order)))


@primitive(nin=2)
def weighted_average(a, weights, *, axis=None, keepdims=False):
    """``np.average(a, axis, weights, keepdims=keepdims)``."""
    return np.average(a, axis=axis, weights=weights, keepdims=keepdims)


def _average_vjp(argnum, g, ans, a, weights, axis=None, keepdims=False):
    w = aligned_weights(weights, a.shape, axis)
    total = np.sum(np.broadcast_to(w, a.shape), axis=axis, keepdims=True)
    spread = unreduce(g, shape=a.shape, axis=axis, keepdims=keepdims) / total
    if argnum == 0:
        return spread * w
    mean = unreduce(ans, shape=a.shape, axis=axis, keepdims=keepdims)
    gw = sum_to(spread * (a - mean), shape=w.shape)
    return unaligned_weights(gw, weights.shape, a.shape, axis)


defvjp(weighted_average, lambda g, ans, a, weights, axis=None, keepdims=False:
       _average_vjp(0, g, ans, a, weights, axis, keepdims),
       lambda g, ans, a, weights, axis=None, keepdims=False:
       _average_vjp(1, g, ans, a, weights, axis, keepdims), dtype_rule="float")


def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    if returned:
        raise TypeError("np.average(returned=True) is not supported by srcgrad")
    if weights is None:
        return lookup(np.mean)(a, axis=axis, keepdims=keepdims)
    return weighted_average(a, weights, axis=axis, keepdims=keepdims)




@primitive(nin=2)
def weights_along(w, a, *, axis=None):
    """:func:`aligned_weights` as a primitive, linear in ``w`` (``a``: only its shape), so
    that average's forward rule is differentiated again."""
    return aligned_weights(w, np.shape(a), axis)


defvjp(weights_along, lambda g, ans, w, a, axis=None:
       unaligned_weights(g, np.shape(w), np.shape(a), axis), None)
defjvp(weights_along, linear=True)


def _average_jvp(tangents, ans, a, weights, axis=None, keepdims=False):
    """``sum(w ta + (a - ans) tw) / sum(w)`` over ``axis``."""
    ta, tw = tangents
    w = weights_along(weights, a, axis=axis)
    moved = 0.0 * a
    if ta is not None:
        moved = moved + ta * w
    if tw is not None:
        mean = unreduce(ans, shape=a.shape, axis=axis, keepdims=keepdims)
        moved = moved + weights_along(tw, a, axis=axis) * (a - mean)
    total = np.sum(np.broadcast_to(w, a.shape), axis=axis, keepdims=keepdims)
    return np.sum(moved, axis=axis, keepdims=keepdims) / total


defjvp(weighted_average, _average_jvp)
bind_numpy(np.average, lookup(np.mean), _average)


# ---------------------------------------------------------------------------------------------
# cov and corrcoef (no y, fweights or aweights: those arguments are refused)

@helper
def cov_grad(g, m, rowvar=True, bias=False, ddof=None):
    """Gradient of ``np.cov(m, rowvar=rowvar, bias=bias, ddof=ddof)``."""
    x = np.reshape(m, (1, -1)) if np.ndim(m) < 2 else m
    flipped = not rowvar and np.shape(x)[0] != 1
    x = np.transpose(x) if flipped else x
    if ddof is None:
        ddof = 0 if bias else 1
    n = np.shape(x)[1] - ddof
    k = np.shape(x)[0]
    g = np.reshape(g, (k, k))
    centred = x - np.mean(x, axis=1, keepdims=True)
    gx = ((g + np.transpose(g)) @ centred) / n
    gx = np.transpose(gx) if flipped else gx
    return np.reshape(gx, np.shape(m))


@helper
def corrcoef_grad(g, x, rowvar=True):
    """Gradient of ``np.corrcoef(x, rowvar=rowvar)`` (entries NumPy clips to [-1, 1] get
    none)."""
    c = np.cov(x, rowvar=rowvar)
    if np.ndim(c) == 0:
        return np.zeros_like(x)
    d = np.sqrt(np.diagonal(c))
    scale = d[:, None] * d[None, :]
    r = c / scale
    g = np.where(np.abs(r) <= 1, g, 0.0)
    gc = g / scale
    gd = -np.sum(g * r, axis=1) / d - np.sum(g * r, axis=0) / d
    gc = gc + np.diag(gd / (2 * d))
    return cov_grad(gc, x, rowvar)


# Forward rules of cov and corrcoef: plain code (the layout's shapes from a helper), so that
# second order differentiates the printed rule again.

@helper
def cov_layout(shape, rowvar):
    """The shapes that lay out ``np.cov``'s argument (of ``shape``) as variables by
    observations: reshape to the first; with ``rowvar`` False, transpose that and reshape to
    the second (NumPy transposes any argument that is not 1-D)."""
    rows = (1, -1) if len(shape) < 2 else tuple(shape)
    if rowvar or len(shape) < 2:
        return rows, rows
    return rows, (rows[1], rows[0])


def _variables(v, layout, rowvar):
    x = np.reshape(v, layout[0])
    return x if rowvar else np.reshape(np.transpose(x), layout[1])


def _centred_products(t, x, rowvar):
    """``(T X^T + X T^T, X X^T)`` of the centred variables ``X`` of ``x`` and ``T`` of
    ``t`` (2-D, one row per variable), and the number of observations."""
    layout = cov_layout(np.shape(x), rowvar)
    x, t = _variables(x, layout, rowvar), _variables(t, layout, rowvar)
    centred = x - np.mean(x, axis=1, keepdims=True)
    moved = t - np.mean(t, axis=1, keepdims=True)
    cross = np.matmul(moved, np.transpose(centred))
    return cross + np.transpose(cross), np.matmul(centred, np.transpose(centred)), \
        np.shape(x)[1]


def cov_tangent(t, m, rowvar=True, bias=False, ddof=None):
    """Tangent of ``np.cov(m, rowvar=rowvar, bias=bias, ddof=ddof)`` along ``t`` (of m's
    shape): ``(T X^T + X T^T) / n`` of the centred variables ``X`` and tangents ``T``."""
    if ddof is None:
        ddof = 0 if bias else 1
    cross, _, count = _centred_products(t, m, rowvar)
    return cross / (count - ddof)


def corrcoef_tangent(t, x, rowvar=True):
    """Tangent of ``np.corrcoef(x, rowvar=rowvar)`` (entries NumPy clips to [-1, 1] get
    none, as in :func:`corrcoef_grad`; one variable's is 0)."""
    dc, c, _ = _centred_products(t, x, rowvar)     # (any scale: r does not depend on it)
    d = np.sqrt(np.diagonal(c))
    r = c / (d[:, None] * d[None, :])
    rel = np.diagonal(dc) / (2 * d * d)                  # d(d_i) / d_i
    dr = dc / (d[:, None] * d[None, :]) - r * (rel[:, None] + rel[None, :])
    return np.where(np.abs(r) <= 1, dr, 0.0)


defvjp(np.cov, lambda g, ans, m, rowvar=True, bias=False, ddof=None:
       cov_grad(g, m, rowvar, bias, ddof), nin=1, dtype_rule="float")
defvjp(np.corrcoef, lambda g, ans, x, rowvar=True: corrcoef_grad(g, x, rowvar), nin=1,
       dtype_rule="float")
defjvp(np.cov, lambda tangents, ans, m, rowvar=True, bias=False, ddof=None:
       np.reshape(cov_tangent(tangents[0], m, rowvar, bias, ddof), np.shape(ans)))
defjvp(np.corrcoef, lambda tangents, ans, x, rowvar=True:
       np.reshape(corrcoef_tangent(tangents[0], x, rowvar), np.shape(ans)))


# ---------------------------------------------------------------------------------------------
# select: the nested where it stands for

def select_where(condlist, choicelist, default=0):
    """``np.select`` as ``np.where(c0, v0, np.where(c1, v1, … default))`` (first match wins)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    result = default
    for k in range(len(condlist) - 1, -1, -1):
        result = lookup(np.where)(condlist[k], choicelist[k], result)
    return result


bind_numpy(np.select, lookup(np.where), select_where)


# ---------------------------------------------------------------------------------------------
# gradient: along one axis, unit spacing, edge_order 1 or 2

@helper
def gradient_adjoint(g, axis, edge_order=1):
    """The adjoint of ``np.gradient(f, axis=axis, edge_order=edge_order)`` (a linear map)."""
    axis = np.lib.array_utils.normalize_axis_index(axis, np.ndim(g))
    n = np.shape(g)[axis]

    def part(lo, hi):
        return g[along(axis, slice(lo, hi))]

    def placed(v, start):         # v put at ``start`` along axis, zeros elsewhere (length n)
        before = np.zeros_like(part(0, 1), shape=tuple(
            start if k == axis else s for k, s in enumerate(np.shape(v))))
        after = np.zeros_like(part(0, 1), shape=tuple(
            n - start - np.shape(v)[axis] if k == axis else s for k, s in enumerate(np.shape(v))))
        return np.concatenate([before, v, after], axis=axis)

    inner = part(1, n - 1) / 2.0
    out = placed(inner, 2) - placed(inner, 0)
    first, last = part(0, 1), part(n - 1, n)
    if edge_order == 1:
        out = out - placed(first, 0) + placed(first, 1) + placed(last, n - 1) - placed(last, n - 2)
    else:
        out = (out + placed(first * -1.5, 0) + placed(first * 2.0, 1) - placed(first * 0.5, 2)
               + placed(last * 1.5, n - 1) - placed(last * 2.0, n - 2) + placed(last * 0.5, n - 3))
    return out


def _gradient_vjp(g, ans, f, axis=None, edge_order=1):
    return gradient_adjoint(g, 0 if axis is None else axis, edge_order)


defvjp(np.gradient, _gradient_vjp, nin=1, dtype_rule="float")


@primitive(dtype_rule="float")
def vector_gradient(f, *, edge_order=1):
    """``np.gradient(f, edge_order=edge_order)`` of a 1-D ``f`` (of an N-d one NumPy returns a
    tuple, which this refuses)."""
    if np.ndim(f) != 1:
        raise NotCompiled("np.gradient without axis= returns a tuple for an N-d array; srcgrad "
                        "compiles it for 1-D arrays only (give axis=)")
    return np.gradient(f, edge_order=edge_order)


defvjp(vector_gradient, lambda g, ans, f, edge_order=1: gradient_adjoint(g, 0, edge_order))


def gradient_axes(ndim: int, axis: object) -> tuple[list[int], bool]:
    """The axes ``np.gradient`` differentiates, and whether it returns one array."""
    if axis is None:
        return list(range(ndim)), ndim == 1
    axes = [int(a) for a in np.atleast_1d(axis).tolist()]
    return axes, np.ndim(axis) == 0


def _gradient(f, *varargs, axis=None, edge_order=1):
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    axes, single = gradient_axes(np.ndim(f), axis)
    spacing = list(varargs) if len(varargs) != 1 else list(varargs) * len(axes)
    if varargs and len(spacing) != len(axes):
        raise TypeError("invalid number of arguments")
    if any(np.ndim(h) != 0 or carries_gradient(h) for h in spacing):
        raise TypeError("np.gradient with coordinate arrays (or a spacing that requires a "
                        "gradient) is not supported by srcgrad")
    prim = lookup(np.gradient)
    outs = [prim(f, axis=a, edge_order=edge_order) for a in axes] if axis is not None or not \
        single else [vector_gradient(f, edge_order=edge_order)]
    outs = [o / float(h) for o, h in zip(outs, spacing)] if spacing else outs
    return outs[0] if single else tuple(outs)


bind_numpy(np.gradient, lookup(np.gradient), _gradient)


def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    if not copy:
        raise TypeError("np.nan_to_num(copy=False) writes into its argument: not supported "
                        "by srcgrad")
    if any(carries_gradient(v) for v in (nan, posinf, neginf)):
        raise TypeError("np.nan_to_num replacement values that require a gradient are not "
                        "supported by srcgrad")
    return lookup(np.nan_to_num)(x, nan=nan, posinf=posinf, neginf=neginf)


bind_numpy(np.nan_to_num, lookup(np.nan_to_num), _nan_to_num)

for _f in (np.gradient, vector_gradient):
    defjvp(_f, linear=True)
