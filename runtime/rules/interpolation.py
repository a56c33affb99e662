"""Sampling and windows: ``np.interp``, ``np.trapezoid``, ``np.vander`` and
``sliding_window_view``.

``np.interp(x, xp, fp)`` is piecewise linear: each ``x`` lies in the cell ``[xp[j], xp[j+1])``
NumPy's search finds (the last knot not above it; ``x == xp[-1]`` ends the last cell), so
its value is ``fp[j] + t (fp[j+1] - fp[j])`` with ``t = (x - xp[j]) / (xp[j+1] - xp[j])``.
The gradient is that formula's, for ``x``, ``xp`` and ``fp`` alike (at a knot, the slope of
the cell NumPy takes); outside ``[xp[0], xp[-1]]`` the value is ``left``/``right``, or
``fp[0]``/``fp[-1]`` by default.  ``period=`` is not modelled and is refused.

``np.trapezoid`` is ``trapezoid_x(y, x)`` with sample points (``diff(x)`` laid along
``axis`` for a 1-D ``x``, as NumPy does) or ``trapezoid_dx(y, dx)`` with a spacing: the sum of
each spacing times the mean of its pair of neighbours, differentiated in both operands.
``np.vander``'s column of power ``p`` has derivative ``p x**(p-1)`` (0 for ``p = 0``, also at
``x = 0``).  ``sliding_window_view``'s adjoint adds each window offset's slice of the
gradient back where that offset reads, one vectorised placement per offset.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.core import getitem, unindex
from srcgrad.runtime.rules.primitives import (
    bind_numpy,
    defjvp,
    defvjp,
    helper,
    lookup,
    primitive,
)

__all__ = ["interp_cells", "interp_terms", "trapezoid_x", "trapezoid_dx", "vander_powers",
           "windows_grad"]

_sliding_window_view = np.lib.stride_tricks.sliding_window_view


def _carried(value: object) -> bool:
    return getattr(type(value), "__srcgrad_primitive__", None) is not None


# ---------------------------------------------------------------------------------------------
# interp

@helper
def interp_cells(x, xp, part):
    """For each ``x``, by ``part``: the index of its cell's left (``"j"``) or right (``"j1"``)
    knot (NumPy's search: the last knot not above ``x``, kept within the knots), or whether
    it lies below ``xp[0]``, above ``xp[-1]``, or within (a NaN counts as within: its
    gradient is NaN)."""
    x, xp = (np.asarray(getattr(v, "_data", v)) for v in (x, xp))   # a Tensor: its values
    n = xp.shape[0]
    j = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, max(n - 2, 0))
    below, above = x < xp[0], x > xp[n - 1]
    return {"j": j, "j1": np.minimum(j + 1, n - 1), "below": below, "above": above,
            "inside": ~(below | above)}[part]


def interp_terms(x, xp, fp, left, right):
    """``(j, j1, t, s, w0, w1, inside)``: the cell's knots, the position within the cell,
    its slope, the weights of ``fp[j]`` and ``fp[j1]`` in the value, and where the formula
    holds."""
    j, j1 = interp_cells(x, xp, "j"), interp_cells(x, xp, "j1")
    below, above = interp_cells(x, xp, "below"), interp_cells(x, xp, "above")
    inside = interp_cells(x, xp, "inside")
    lo, hi = np.take(xp, j), np.take(xp, j1)          # (xp, fp, x may be lists)
    width = hi - lo
    flat = width == 0                           # one knot, or x == xp[-1] == xp[-2]
    safe = np.where(flat, 1.0, width)
    t = np.where(flat, 1.0, np.subtract(x, lo) / safe)          # x may be a list
    s = np.where(flat, 0.0, (np.take(fp, j1) - np.take(fp, j)) / safe)
    w0 = np.where(above, 0.0, np.where(inside, 1.0 - t, 1.0 if left is None else 0.0))
    w1 = np.where(below, 0.0, np.where(inside, t, 1.0 if right is None else 0.0))
    return j, j1, t, s, w0, w1, inside


def _interp_x(g, ans, x, xp, fp, left=None, right=None):
    _, _, _, s, _, _, inside = interp_terms(x, xp, fp, left, right)
    return np.where(inside, g * s, 0.0)


def _interp_xp(g, ans, x, xp, fp, left=None, right=None):
    j, j1, t, s, _, _, inside = interp_terms(x, xp, fp, left, right)
    gs = np.where(inside, g * s, 0.0)
    return (unindex(-gs * (1.0 - t), index=j, shape=xp.shape)
            + unindex(-gs * t, index=j1, shape=xp.shape))


def _interp_fp(g, ans, x, xp, fp, left=None, right=None):
    j, j1, _, _, w0, w1, _ = interp_terms(x, xp, fp, left, right)
    return unindex(g * w0, index=j, shape=fp.shape) + unindex(g * w1, index=j1, shape=fp.shape)


def _interp_jvp(tangents, ans, x, xp, fp, left=None, right=None):
    tx, txp, tfp = tangents
    j, j1, t, s, w0, w1, inside = interp_terms(x, xp, fp, left, right)
    out = 0.0 * ans
    if tx is not None:
        out = out + np.where(inside, s * tx, 0.0)
    if txp is not None:
        out = out - np.where(inside, s * ((1.0 - t) * getitem(txp, index=j)
                                          + t * getitem(txp, index=j1)), 0.0)
    if tfp is not None:
        out = out + w0 * getitem(tfp, index=j) + w1 * getitem(tfp, index=j1)
    return out


def _interp(x, xp, fp, left=None, right=None, period=None):
    if period is not None:
        raise TypeError("np.interp(period=...) is not supported by srcgrad")
    if _carried(left) or _carried(right):
        raise TypeError("np.interp's left/right that carry a gradient are not supported by "
                        "srcgrad")
    return lookup(np.interp)(x, xp, fp, left=left, right=right)


defvjp(np.interp, _interp_x, _interp_xp, _interp_fp, dtype_rule="float")
defjvp(np.interp, _interp_jvp)
bind_numpy(np.interp, lookup(np.interp), _interp)


# ---------------------------------------------------------------------------------------------
# trapezoid: ``trapezoid_x(y, x)`` (sample points) and ``trapezoid_dx(y, dx)`` (a spacing)

@primitive(nin=2, dtype_rule="float")
def trapezoid_x(y, x, *, axis=-1):
    """``np.trapezoid(y, x, axis=axis)``."""
    return np.trapezoid(y, x, axis=axis)


@primitive(nin=2, dtype_rule="float")
def trapezoid_dx(y, dx, *, axis=-1):
    """``np.trapezoid(y, dx=dx, axis=axis)``."""
    return np.trapezoid(y, dx=dx, axis=axis)


@helper
def spacing_axis(xdim, axis):
    """The axis ``np.trapezoid`` differences ``x`` along (a 1-D ``x``: its only one)."""
    return 0 if xdim == 1 else axis


@helper
def spacing_shape(yshape, xshape, axis):
    """The shape ``np.trapezoid`` gives ``diff(x)``: laid along ``axis`` for a 1-D ``x``."""
    out = []
    if len(xshape) != 1:
        for k in range(len(xshape)):
            out.append(xshape[k] - 1 if k == axis % len(xshape) else xshape[k])
    else:
        for k in range(len(yshape)):
            out.append(xshape[0] - 1 if k == axis % len(yshape) else 1)
    return out


@helper
def pair_index(ndim, axis, first):
    """The index of the left (``first``) or right neighbours along ``axis``."""
    key = [slice(None)] * ndim
    key[axis % ndim] = slice(None, -1) if first else slice(1, None)
    return tuple(key)


@helper
def other_axes(ndim, axis, xdim):
    """The axes a 1-D ``x``'s gradient sums over (none for an N-d ``x``)."""
    return tuple(a for a in range(ndim) if a != axis % ndim) if xdim == 1 else ()


def _spacing(y, x, axis):
    return np.reshape(np.diff(x, axis=spacing_axis(x.ndim, axis)),
                      spacing_shape(y.shape, x.shape, axis))


@helper
def points_shape(shape, axis):
    """``shape`` one longer along ``axis``: from pairs of neighbours to points."""
    out = []
    for k in range(len(shape)):
        out.append(shape[k] + 1 if k == axis % len(shape) else shape[k])
    return out


def _pairs_to_points(h, axis, sign):
    """Each pair's value ``h`` added to both of its points (``sign`` -1: subtracted from the
    left one); broadcast dimensions are summed away centrally."""
    shape = points_shape(h.shape, axis)
    return (sign * unindex(h, index=pair_index(h.ndim, axis, True), shape=shape)
            + unindex(h, index=pair_index(h.ndim, axis, False), shape=shape))


def _trapezoid_y(g, ans, y, d, axis):
    pairs = getitem(y, index=pair_index(y.ndim, axis, True))
    h = np.expand_dims(g, axis) * d * 0.5 + 0.0 * pairs          # broadcast as the pairs are
    return _pairs_to_points(h, axis, 1.0)


def _means(g, y, axis):
    """``g`` times the mean of each pair of neighbours: the gradient of each spacing."""
    lo = getitem(y, index=pair_index(y.ndim, axis, True))
    hi = getitem(y, index=pair_index(y.ndim, axis, False))
    return np.expand_dims(g, axis) * (lo + hi) * 0.5


def _trapezoid_x_x(g, ans, y, x, axis=-1):
    h = _means(g, y, axis) + 0.0 * _spacing(y, x, axis)          # broadcast as the spacing is
    return np.sum(_pairs_to_points(h, axis, -1.0), axis=other_axes(h.ndim, axis, x.ndim))


defvjp(trapezoid_x, lambda g, ans, y, x, axis=-1: _trapezoid_y(g, ans, y, _spacing(y, x, axis),
                                                                 axis), _trapezoid_x_x,
       broadcasts=True)
defvjp(trapezoid_dx, lambda g, ans, y, dx, axis=-1: _trapezoid_y(g, ans, y, dx, axis),
       lambda g, ans, y, dx, axis=-1: _means(g, y, axis), broadcasts=True)
defjvp(trapezoid_x, lambda tangents, ans, y, x, axis=-1: _trapezoid_jvp(tangents, y, x, axis))
defjvp(trapezoid_dx, multilinear=True)


def _trapezoid_jvp(tangents, y, x, axis):
    ty, tx = tangents
    d = _spacing(y, x, axis)
    out = 0.0 if ty is None else trapezoid_dx(ty, d, axis=axis)
    if tx is not None:
        out = out + trapezoid_dx(y, _spacing(y, tx, axis), axis=axis)
    return out


def _trapezoid(y, x=None, dx=1.0, axis=-1):
    if x is None:
        return trapezoid_dx(y, dx, axis=axis)
    return trapezoid_x(y, x, axis=axis)


bind_numpy(np.trapezoid, trapezoid_x, _trapezoid)


# ---------------------------------------------------------------------------------------------
# vander

@helper
def vander_powers(columns, increasing, less):
    """The power of each column of ``np.vander``, less ``less`` (at least 0)."""
    p = np.arange(columns, dtype=float)
    p = p if increasing else p[::-1]
    return np.maximum(p - less, 0.0)


def _vander_x(g, ans, x, N=None, increasing=False):
    columns = x.shape[0] if N is None else N
    p, q = vander_powers(columns, increasing, 0.0), vander_powers(columns, increasing, 1.0)
    return np.sum(g * p * np.expand_dims(x, 1) ** q, axis=1)


def _vander_jvp(tangents, ans, x, N=None, increasing=False):
    columns = x.shape[0] if N is None else N
    p, q = vander_powers(columns, increasing, 0.0), vander_powers(columns, increasing, 1.0)
    return np.expand_dims(tangents[0], 1) * p * np.expand_dims(x, 1) ** q


defvjp(np.vander, _vander_x, nin=1)
defjvp(np.vander, _vander_jvp)


# ---------------------------------------------------------------------------------------------
# sliding_window_view

@helper
def windows_grad(g, shape, window_shape, axis):
    """The adjoint of ``sliding_window_view(x, window_shape, axis)`` for ``x`` of ``shape``:
    for each offset within the window, the result's entries at that offset placed back where
    they were read (NumPy's axes, a repeated axis included)."""
    window = (window_shape,) if np.ndim(window_shape) == 0 else tuple(window_shape)
    axes = tuple(range(len(shape))) if axis is None else (
        (axis,) if np.ndim(axis) == 0 else tuple(axis))
    axes = tuple(a % len(shape) for a in axes)
    reduced = [n - sum(w - 1 for a, w in zip(axes, window) if a == k)
               for k, n in enumerate(shape)]
    total = 0.0 * np.zeros(shape, dtype=g.dtype)
    for offset in np.ndindex(*window):
        start = [0] * len(shape)
        for a, o in zip(axes, offset):
            start[a] += o
        part = g[(Ellipsis,) + tuple(offset)]
        total = total + np.pad(part, [(s, n - s - r) for s, n, r in zip(start, shape, reduced)])
    return total


defvjp(_sliding_window_view, lambda g, ans, x, window_shape, axis=None:
       windows_grad(g, x.shape, window_shape, axis), nin=1)
defjvp(_sliding_window_view, linear=True)
