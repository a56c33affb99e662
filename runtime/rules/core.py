"""Helpers and helper primitives: the building blocks rules are written with (each with
rules of its own), and the constants they use."""

from __future__ import annotations

import math

import numpy as np

from srcgrad.runtime.rules.primitives import (
    defjvp,
    defvjp,
    helper,
    primitive,
    sum_to,
    unbroadcast,
)

LN2, LN10 = math.log(2.0), math.log(10.0)


@helper
def numel(shape: tuple[int, ...]) -> int:
    """Number of elements of an array of ``shape`` (a Python int)."""
    count = 1
    for n in shape:
        count *= n
    return count


def along(axis: int, key: object) -> tuple:
    """An index that applies ``key`` on ``axis`` and takes everything elsewhere."""
    if axis < 0:
        return (Ellipsis, key) + (slice(None),) * (-axis - 1)
    return (slice(None),) * axis + (key,)


def inverse_permutation(axes: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The axes that undo ``transpose(x, axes)`` (None undoes None: a full reversal)."""
    if axes is None:
        return None
    axes = [a % len(axes) for a in axes]
    return tuple(sorted(range(len(axes)), key=axes.__getitem__))


# ---------------------------------------------------------------------------------------------
# Helper primitives: the building blocks rules are written with (each with rules of its own).

@primitive(dtype_rule="same")
def unreduce(g, *, shape, axis=None, keepdims=False):
    """Spread the gradient of a reduction back over the reduced ``shape``."""
    if isinstance(g, (int, float)) or g.ndim == 0:  # a constant: as in compiled code
        return np.full_like(g, g, shape=shape)
    if axis is not None and not keepdims:
        g = np.expand_dims(g, tuple(a % len(shape) for a in np.atleast_1d(axis).tolist()))
    return np.broadcast_to(g, shape)


@helper
def scatter_add(out, index, g):
    """``out[index] += g`` in place, repeated indices adding up; returns ``out``."""
    keys = index if isinstance(index, tuple) else (index,)
    if any(getattr(k, "dtype", None) is not None and k.dtype.kind in "iu" or isinstance(k, list)
           for k in keys):
        np.add.at(out, index, g)
    else:
        out[index] += g
    return out


@primitive(dtype_rule="same")
def unindex(g, *, index, shape):
    """The adjoint of ``x[index]``: ``g`` placed into zeros of ``shape`` (repeats add up)."""
    return scatter_add(np.zeros_like(g, shape=shape), index, g)


def _no_repeats(index: object) -> bool:
    """Whether ``index`` (known when the rule runs) selects no element twice: a basic
    index or one boolean mask."""
    keys = index if isinstance(index, tuple) else (index,)
    for k in keys:
        if isinstance(k, np.ndarray) and k.dtype == bool and len(keys) == 1:
            continue
        if not (k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice))):
            return False
    return True


@helper
def kept_writes(g, index, shape):
    """The gradient of ``v`` in ``x[index] = v``: ``g[index]`` where that element of ``v``
    is the one that stays in ``x`` (NumPy keeps the last of repeated indices), else 0.  The
    same assignment replayed on positions decides, so it follows whatever NumPy does."""
    part = g[index]
    keys = index if isinstance(index, tuple) else (index,)
    if all(k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice)) for k in keys):
        return part                                   # a basic index: nothing repeats
    picks = np.arange(numel(part.shape)).reshape(part.shape)
    order = np.full(shape, -1)
    order[index] = picks
    return np.where(order[index] == picks, part, 0)


@primitive(nin=2)
def index_put(x, v, *, index):
    """``x`` with ``x[index] = v``, as a new array (subscript writes are functional)."""
    out = x.copy()
    out[index] = v
    return out


@primitive(nin=2)
def matmul_lhs_grad(g, b, *, a_shape):
    """Gradient of ``a @ b`` with respect to ``a`` (of ``a_shape``), NumPy's 1-D rules included."""
    b = b if hasattr(b, "ndim") else np.asarray(b)   # a list operand, as ``@`` reads it
    if b.ndim == 1:
        out = g * b if len(a_shape) == 1 else g[..., None] * b
    elif len(a_shape) == 1:
        out = (b @ g[..., None])[..., 0]
    else:
        out = g @ b.swapaxes(-1, -2)
    return out if out.shape == a_shape else unbroadcast(out, a_shape)


@primitive(nin=2)
def matmul_rhs_grad(g, a, *, b_shape):
    """Gradient of ``a @ b`` with respect to ``b`` (of ``b_shape``)."""
    a = a if hasattr(a, "ndim") else np.asarray(a)     # an array of any library stays one
    if a.ndim == 1:
        out = g * a if len(b_shape) == 1 else a[:, None] * g[..., None, :]
    elif len(b_shape) == 1:
        out = (g[..., None, :] @ a)[..., 0, :]
    else:
        out = a.swapaxes(-1, -2) @ g
    return out if out.shape == b_shape else unbroadcast(out, b_shape)


@primitive(dtype_rule="keep")
def cast(x, *, dtype):
    """``x.astype(dtype)``; a Python number (a gradient's seed) becomes a NumPy scalar."""
    return x.astype(dtype) if hasattr(x, "astype") else np.asarray(x).astype(dtype)[()]


@primitive(nin=1, dtype_rule="bool")
def clip_mask(x, *, lo, hi):
    """Where ``x`` lies within ``[lo, hi]`` (either bound may be None): clip's pass-through."""
    inside = np.ones_like(x, dtype=bool)
    if lo is not None:
        inside = inside & (x >= lo)
    if hi is not None:
        inside = inside & (x <= hi)
    return inside


@primitive(nin=1, dtype_rule="bool")
def clip_bound_mask(x, *, lo, hi, bound):
    """Where ``np.clip(x, lo, hi)`` takes its value from ``bound`` ("lo" or "hi"): below ``lo``
    (unless ``lo > hi``, where NumPy gives ``hi``) or above ``max(x, lo)`` (ties go to x)."""
    raised = x if lo is None else np.maximum(x, lo)
    above = np.zeros_like(raised, dtype=bool) if hi is None else raised > hi
    if bound == "hi":
        return above
    return (x < lo) & ~above


defvjp(unreduce, lambda g, ans, x, shape, axis=None, keepdims=False:
       np.sum(g, axis=axis, keepdims=keepdims))
defvjp(sum_to, lambda g, ans, x, shape: np.broadcast_to(g, x.shape))
defvjp(unindex, lambda g, ans, x, index, shape: getitem(g, index=index))
defvjp(index_put, lambda g, ans, x, v, index: index_put(g, 0, index=index),
       lambda g, ans, x, v, index: getitem(g, index=index) if _no_repeats(index)
       else kept_writes(g, index, x.shape), broadcasts=True)
defvjp(matmul_lhs_grad, lambda g, ans, gy, b, a_shape: np.matmul(g, b),
       lambda g, ans, gy, b, a_shape: matmul_rhs_grad(gy, g, b_shape=b.shape))
defvjp(matmul_rhs_grad, lambda g, ans, gy, a, b_shape: np.matmul(a, g),
       lambda g, ans, gy, a, b_shape: matmul_lhs_grad(gy, g, a_shape=a.shape))
defvjp(cast, lambda g, ans, x, dtype: cast(g, dtype=x.dtype))
defvjp(clip_mask, None)
defvjp(clip_bound_mask, None)


def _scatter_add_recorded(out, index, g):
    """``scatter_add`` out of place: recorded Tensors are not changed in place."""
    return out + unindex(g, index=index, shape=out.shape)


# Hints for the emitters (see rules/__init__.py).
numel.of_shapes = True
scatter_add.recorded = _scatter_add_recorded
unindex.fresh_result = index_put.fresh_result = True
unindex.accumulate_by = scatter_add
cast.spelling = ("method", "astype", "dtype")


@primitive(dtype_rule="same")
def getitem(x, *, index):
    return x[index]


defvjp(getitem, lambda g, ans, x, index: unindex(g, index=index, shape=x.shape))
getitem.spelling, getitem.shift = ("subscript", "index"), "select"


@primitive(dtype_rule="same")
def stop_gradient(x):
    """``x`` itself, through which no gradient flows (``srcgrad.stop_gradient``)."""
    return x


@primitive(dtype_rule="keep")
def item(x):
    """The single element of ``x`` as a Python number (``x.item()``, ``float(x)``)."""
    return x.item()


defvjp(stop_gradient, None)
defvjp(item, lambda g, ans, x: np.reshape(g, x.shape))
item.spelling = ("method", "item")

# Forward mode: all of these are linear in their differentiable inputs (an index, a shape,
# the other factor of a product is a parameter or a primal value); the two matmul
# adjoints are bilinear in (g, the other factor).  ``cast``'s rule is in constructors.
for _f in (unreduce, sum_to, unindex, index_put, getitem, item):
    defjvp(_f, linear=True)
for _f in (matmul_lhs_grad, matmul_rhs_grad):
    defjvp(_f, multilinear=True)
