"""Sorting and selection: ``sort``, ``partition``, ``take_along_axis``, and the order
statistics ``median``, ``quantile`` and ``percentile``.

A sorted or partitioned result is a permutation of its input, so its gradient is the
cotangent sent back through that permutation (an input of ``scatter_along``, so that it is
never differentiated).  The permutation is recovered from the input and the result
themselves (never from a second sort that could order ties differently): the
k-th smallest entry of the result came from the k-th smallest entry of the input.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.core import numel, unreduce
from srcgrad.runtime.rules.primitives import bind_numpy, defjvp, defvjp, helper, lookup, primitive
from srcgrad.runtime.rules.shapes import carries_gradient

__all__ = ["scatter_along", "along_index", "source_positions", "order_weights",
           "quantile_arguments", "merged_axes", "fractions"]


def source_positions(x, ans, axis):
    """For each entry of ``ans`` (a permutation of ``x`` along ``axis``), the position along
    ``axis`` of the entry of ``x`` it holds."""
    by_value = np.argsort(x, axis=axis, kind="stable")
    return np.take_along_axis(by_value, np.argsort(np.argsort(ans, axis=axis, kind="stable"),
                                                   axis=axis, kind="stable"), axis=axis)


def _permuted_vjp(g, ans, a, axis=-1, kind=None, stable=None):
    if axis is None:
        flat = np.reshape(a, (-1,))
        return np.reshape(scatter_along(g, source_positions(flat, ans, 0), axis=0,
                                        shape=(numel(a.shape),)), a.shape)
    return scatter_along(g, source_positions(a, ans, axis), axis=axis, shape=a.shape)


defvjp(np.sort, _permuted_vjp, nin=1)
defvjp(np.partition, lambda g, ans, a, kth, axis=-1, kind="introselect":
       _permuted_vjp(g, ans, a, axis), nin=1)


@helper
def along_index(indices, axis, shape):
    """The fancy index ``x[...]`` equivalent to ``np.take_along_axis(x, indices, axis)``."""
    if axis is None:
        return (indices,)
    axis = axis % len(shape)
    ndim = len(shape)
    grid = [np.arange(n).reshape([-1 if d == k else 1 for d in range(ndim)])
            for k, n in enumerate(shape)]
    grid[axis] = indices
    return tuple(grid)


@primitive(nin=2, dtype_rule="same")
def scatter_along(g, indices, *, axis, shape):
    """The adjoint of ``np.take_along_axis`` (repeated indices add up)."""
    size = (numel(shape),) if axis is None else shape
    out = np.zeros_like(g, shape=size)
    np.add.at(out, along_index(indices, axis, size), g)
    return out.reshape(shape)


defvjp(scatter_along, lambda g, ans, gy, indices, axis, shape:
       np.take_along_axis(g, indices, axis=axis), None)
defvjp(np.take_along_axis, lambda g, ans, arr, indices, axis=-1:
       scatter_along(g, indices, axis=axis, shape=arr.shape), None)


# ---------------------------------------------------------------------------------------------
# median, quantile and percentile (linear interpolation between order statistics)

@helper
def order_weights(n, q, ndim, axis):
    """How much each order statistic of ``n`` values weighs in the ``q`` quantile (NumPy's
    linear method), laid along ``axis`` of an array of ``ndim`` dimensions."""
    w = np.zeros(n)
    if n:                       # of no values the quantile is nan, with nothing to weigh
        pos = q * (n - 1)
        lo = min(int(np.floor(pos)), n - 1)
        hi = min(lo + 1, n - 1)
        w[lo] += 1.0 - (pos - lo)
        w[hi] += pos - lo
    return np.reshape(w, [n if k == axis % ndim else 1 for k in range(ndim)])


@helper
def fractions(q):
    """Percentages as fractions (a number, or a list of numbers)."""
    return [v / 100.0 for v in q] if isinstance(q, (list, tuple)) else q / 100.0


@helper
def merged_axes(shape, axis):
    """For a reduction of an array of ``shape`` over the axes ``axis`` (a tuple): the axes in
    order, the shape with them moved last and merged into one, and the kept shape."""
    axes = tuple(sorted(a % len(shape) for a in axis))
    kept = tuple(n for k, n in enumerate(shape) if k not in axes)
    return axes, kept + (-1,), kept


def _quantile_vjp(g, ans, a, q, axis, keepdims):
    """Gradient of the ``q`` quantile(s) (NumPy's linear method) over ``axis``: the cotangent
    goes to the order statistics the result interpolates."""
    if np.ndim(q) > 0:              # several quantiles: the first axis of the result
        return sum(_quantile_vjp(g[k], ans, a, q[k], axis, keepdims) for k in range(len(q)))
    if axis is None:
        flat = np.reshape(a, (-1,))
        return np.reshape(_quantile_vjp(np.reshape(g, ()), ans, flat, q, 0, False), a.shape)
    if isinstance(axis, (tuple, list)):
        shapes = merged_axes(a.shape, axis)          # (axes, merged shape, kept shape)
        last = tuple(range(-len(axis), 0))
        moved = np.moveaxis(a, shapes[0], last)
        flat = _quantile_vjp(np.reshape(g, shapes[2]), ans, np.reshape(moved, shapes[1]), q,
                             -1, False)
        return np.moveaxis(np.reshape(flat, moved.shape), last, shapes[0])
    spread = unreduce(g, shape=a.shape, axis=axis, keepdims=keepdims)
    weights = order_weights(a.shape[axis], q, a.ndim, axis)
    positions = source_positions(a, np.sort(a, axis=axis), axis)
    return scatter_along(spread * weights, positions, axis=axis, shape=a.shape)


defvjp(np.median, lambda g, ans, a, axis=None, keepdims=False:
       _quantile_vjp(g, ans, a, 0.5, axis, keepdims), nin=1, dtype_rule="float")
defvjp(np.quantile, lambda g, ans, a, q, axis=None, method="linear", keepdims=False:
       _quantile_vjp(g, ans, a, q, axis, keepdims), nin=1, dtype_rule="float")
defvjp(np.percentile, lambda g, ans, a, q, axis=None, method="linear", keepdims=False:
       _quantile_vjp(g, ans, a, fractions(q), axis, keepdims), nin=1, dtype_rule="float")


def quantile_arguments(q: object = 0.5, method: object = "linear") -> None:
    """Refuse what the quantile rules do not model: an N-d array of quantiles, a method other
    than linear interpolation."""
    if np.ndim(q) > 1 or carries_gradient(q):
        raise TypeError("np.quantile/np.percentile of an N-d array of quantiles (or of a "
                        "quantile that requires a gradient) is not supported by srcgrad")
    if method != "linear":
        raise TypeError(f"np.quantile(method={method!r}) is not supported by srcgrad (only "
                        "'linear')")


def _quantile_adapter(fun):
    prim = lookup(fun)

    def call(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, **kw):
        if out is not None or overwrite_input or any(v is not None for v in kw.values()):
            raise TypeError(f"np.{fun.__name__}() arguments out, overwrite_input, weights and "
                            "interpolation are not supported by srcgrad")
        quantile_arguments(q, method)
        q = np.asarray(q).tolist() if np.ndim(q) else q
        return prim(a, q=q, axis=axis, keepdims=keepdims)
    return call


def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if out is not None or overwrite_input:
        raise TypeError("np.median() arguments out and overwrite_input are not supported by "
                        "srcgrad")
    return lookup(np.median)(a, axis=axis, keepdims=keepdims)


bind_numpy(np.median, lookup(np.median), _median)
bind_numpy(np.quantile, lookup(np.quantile), _quantile_adapter(np.quantile))
bind_numpy(np.percentile, lookup(np.percentile), _quantile_adapter(np.percentile))


# ---------------------------------------------------------------------------------------------
# Forward mode.  A sorted or partitioned result takes each tangent entry along with its
# value (the permutation recovered as the vjp rule does); ``take_along_axis`` and its adjoint
# are linear; an order statistic is a reduction: its tangent is that of the entries it
# interpolates, ``sum(t * vjp(ones))`` (one reduction per quantile of a list).

def _permuted_jvp(tangents, ans, a, axis=-1, kind=None, stable=None):
    t = tangents[0] + 0.0 * a
    if axis is None:
        flat = np.reshape(a, (-1,))
        return np.take_along_axis(np.reshape(t, (-1,)), source_positions(flat, ans, 0), axis=0)
    return np.take_along_axis(t, source_positions(a, ans, axis), axis=axis)


def _quantile_jvp(tangents, ans, a, q, axis=None, method="linear", keepdims=False):
    """Tangent of the quantile(s) ``q`` of ``a``."""
    t = tangents[0]
    if np.ndim(q) > 0:
        return np.stack([_quantile_jvp(tangents, ans[k], a, q[k], axis, method, keepdims)
                         for k in range(len(q))])
    weights = _quantile_vjp(np.ones_like(ans), ans, a, q, axis, keepdims)
    return np.sum(t * weights, axis=axis, keepdims=keepdims)


defjvp(np.sort, _permuted_jvp)
defjvp(np.partition, lambda tangents, ans, a, kth, axis=-1, kind="introselect":
       _permuted_jvp(tangents, ans, a, axis))
defjvp(np.median, lambda tangents, ans, a, axis=None, keepdims=False:
       _quantile_jvp(tangents, ans, a, 0.5, axis, keepdims=keepdims))
defjvp(np.quantile, _quantile_jvp)
defjvp(np.percentile, lambda tangents, ans, a, q, axis=None, method="linear", keepdims=False:
       _quantile_jvp(tangents, ans, a, fractions(q), axis, method, keepdims))
for _f in (scatter_along, np.take_along_axis):
    defjvp(_f, linear=True)
