"""Reductions (``axis`` and ``keepdims`` as in NumPy), softmax and its relatives."""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.core import numel, unreduce
from srcgrad.runtime.rules.forward_rules import reduced
from srcgrad.runtime.rules.primitives import (
    bind_numpy,
    defjvp,
    defvjp,
    helper,
    lookup,
    primitive,
)


@helper
def numel_or_one(shape: tuple[int, ...]) -> int:
    """What the gradient of a mean divides by: ``numel(shape)``, or 1 for an empty array (its
    mean is nan, its gradient empty whatever the scale, which only has to be finite)."""
    return max(numel(shape), 1)


def _extremum_vjp(g, ans, x, axis=None, keepdims=False):
    """max/min: the gradient is shared equally between tied extrema (as PyTorch's ``max()``)."""
    hit = x == unreduce(ans, shape=x.shape, axis=axis, keepdims=keepdims)
    count = np.sum(hit, axis=axis, keepdims=keepdims)
    return np.where(hit, unreduce(g / count, shape=x.shape, axis=axis, keepdims=keepdims), 0)


def _var_vjp(g, ans, x, axis=None, ddof=0, keepdims=False):
    n = numel(x.shape) / numel(ans.shape) - ddof
    centred = x - np.mean(x, axis=axis, keepdims=True)
    scale = np.divide(2.0, n)        # NumPy's division: no values (n = 0) give inf, not an error
    return unreduce(g * scale, shape=x.shape, axis=axis, keepdims=keepdims) * centred


def _std_vjp(g, ans, x, axis=None, ddof=0, keepdims=False):
    n = numel(x.shape) / numel(ans.shape) - ddof
    centred = x - np.mean(x, axis=axis, keepdims=True)
    scale = np.where(ans == 0, 0, g / (ans * n))
    return unreduce(scale, shape=x.shape, axis=axis, keepdims=keepdims) * centred


@primitive(dtype_rule="same")
def prod_others(x, *, axis=None):
    """Product of all other elements along ``axis`` (an int, a tuple or None): the gradient
    of prod, safe at zeros."""
    x = x if hasattr(x, "ndim") else np.asarray(x)
    if axis is None:
        flat = x.reshape(-1)
    else:
        axes = tuple(a % x.ndim for a in np.atleast_1d(axis).tolist())
        last = tuple(range(x.ndim - len(axes), x.ndim))
        moved = np.moveaxis(x, axes, last)
        flat = moved.reshape(moved.shape[:x.ndim - len(axes)] + (-1,))
    ones = np.ones_like(flat[..., :1])
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    out = left * right
    if axis is None:
        return out.reshape(x.shape)
    return np.moveaxis(out.reshape(moved.shape), last, axes)


@helper
def prod_others_tangent(t, x, axis=None):
    """The tangent of ``prod_others(x, axis)`` along ``t``: ``sum over k != i of t_k times
    the product of the x_j with j not i or k``, exact at zeros.  The Jacobian is the Hessian
    of prod (symmetric), so this is the vjp too.  Along the flattened ``axis``, the products
    before and after each element and their tangents, one element at a time."""
    x = np.asarray(x) if isinstance(x, (int, float)) else x
    t = t + 0.0 * x
    ndim = np.ndim(x)
    axes = tuple(range(ndim)) if axis is None else tuple(
        a % ndim for a in np.atleast_1d(axis).tolist())
    last = tuple(range(ndim - len(axes), ndim))
    xs, ts = np.moveaxis(x, axes, last), np.moveaxis(t, axes, last)
    moved_shape = np.shape(xs)
    flat = moved_shape[:ndim - len(axes)] + (-1,)
    xs, ts = np.reshape(xs, flat), np.reshape(ts, flat)
    n = np.shape(xs)[-1]
    before, d_before = [np.ones_like(xs[..., 0])], [np.zeros_like(xs[..., 0])]
    after, d_after = [np.ones_like(xs[..., 0])], [np.zeros_like(xs[..., 0])]
    for i in range(n - 1):
        d_before.append(d_before[-1] * xs[..., i] + before[-1] * ts[..., i])
        before.append(before[-1] * xs[..., i])
        d_after.append(d_after[-1] * xs[..., n - 1 - i] + after[-1] * ts[..., n - 1 - i])
        after.append(after[-1] * xs[..., n - 1 - i])
    out = np.stack([d_before[i] * after[n - 1 - i] + before[i] * d_after[n - 1 - i]
                    for i in range(n)], axis=-1)
    return np.moveaxis(np.reshape(out, moved_shape), last, axes)


defvjp(prod_others, lambda g, ans, x, axis=None: prod_others_tangent(g, x, axis))
defjvp(prod_others, lambda tangents, ans, x, axis=None:
       prod_others_tangent(tangents[0], x, axis))
defvjp(np.sum, lambda g, ans, x, axis=None, keepdims=False:
       unreduce(g, shape=x.shape, axis=axis, keepdims=keepdims))
defvjp(np.mean, lambda g, ans, x, axis=None, keepdims=False:
       unreduce(g * (numel(ans.shape) / numel_or_one(x.shape)), shape=x.shape, axis=axis,
                keepdims=keepdims), dtype_rule="float")
# Hints for the emitters (see rules/__init__.py): the input's adjoint of a full sum or mean.
lookup(np.sum).full_adjoint = lambda g, shape: g
lookup(np.mean).full_adjoint = lambda g, shape: g / numel_or_one(shape)
defvjp(np.prod, lambda g, ans, x, axis=None, keepdims=False:
       unreduce(g, shape=x.shape, axis=axis, keepdims=keepdims) * prod_others(x, axis=axis))
defvjp(np.max, _extremum_vjp)
defvjp(np.min, _extremum_vjp)
defvjp(np.var, _var_vjp, dtype_rule="float")
defvjp(np.std, _std_vjp, dtype_rule="float")
defvjp(np.cumsum, lambda g, ans, x, axis=None: np.reshape(
    np.flip(np.cumsum(np.flip(g, axis=axis), axis=axis), axis=axis), x.shape))
bind_numpy(np.amax, lookup(np.max))
bind_numpy(np.amin, lookup(np.min))
# Hints for the backends (see rules/__init__.py): the ufunc whose ``reduce`` each one is.
for _f, _by in ((np.sum, np.add), (np.max, np.maximum), (np.min, np.minimum)):
    lookup(_f).reduces_with = _by


def _ptp_vjp(g, ans, x, axis=None, keepdims=False):
    """max - min: each share of the gradient split between tied extrema."""
    top = np.max(x, axis=axis, keepdims=keepdims)
    bottom = np.min(x, axis=axis, keepdims=keepdims)
    return _extremum_vjp(g, top, x, axis, keepdims) - _extremum_vjp(g, bottom, x, axis, keepdims)


@helper
def triangle(n, k=0):
    """The boolean (n, n) matrix that is True where ``column - row >= k``."""
    return np.triu(np.ones((n, n), dtype=bool), k)


def _cumprod_last(g, x):
    """Gradient of ``np.cumprod(x, axis=-1)``, exact at zeros: entry ``i`` gets
    ``sum_{j >= i} g_j * prod_{k <= j, k != i} x_k``."""
    n = x.shape[-1]
    ones = np.ones_like(x[..., :1])
    before = np.cumprod(np.concatenate([ones, x[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.where(triangle(n, 1), x[..., None, :], 1.0), axis=-1)
    return np.sum(np.where(triangle(n), after, 0.0) * g[..., None, :], axis=-1) * before


def _cumprod_vjp(g, ans, x, axis=None):
    if axis is None:
        return np.reshape(_cumprod_last(np.reshape(g, (-1,)), np.reshape(x, (-1,))), x.shape)
    moved = _cumprod_last(np.moveaxis(g, axis, -1), np.moveaxis(x, axis, -1))
    return np.moveaxis(moved, -1, axis)


defvjp(np.ptp, _ptp_vjp)
defvjp(np.cumprod, _cumprod_vjp)

# NaN-ignoring reductions: NaN entries get no gradient.

def _count(x, axis, keepdims):
    """How many entries are not NaN (an integer count on arrays and Tensors alike)."""
    return np.sum(np.where(np.isnan(x), 0, 1), axis=axis, keepdims=keepdims)


defvjp(np.nanmax, _extremum_vjp)
defvjp(np.nanmin, _extremum_vjp)
defvjp(np.nansum, lambda g, ans, x, axis=None, keepdims=False:
       np.where(np.isnan(x), 0.0, unreduce(g, shape=x.shape, axis=axis, keepdims=keepdims)))
defvjp(np.nanmean, lambda g, ans, x, axis=None, keepdims=False: np.where(
    np.isnan(x), 0.0, unreduce(g / _count(x, axis, keepdims),
                               shape=x.shape, axis=axis, keepdims=keepdims)),
       dtype_rule="float")


def _nan_centred(x, axis, ddof, keepdims):
    """(count - ddof, x minus its nanmean with NaN entries zero) for nanvar and nanstd."""
    n = _count(x, axis, keepdims) - ddof
    centred = np.where(np.isnan(x), 0.0, x - np.nanmean(x, axis=axis, keepdims=True))
    return n, centred


def _nanvar_vjp(g, ans, x, axis=None, ddof=0, keepdims=False):
    n, centred = _nan_centred(x, axis, ddof, keepdims)
    return unreduce(g * 2.0 / n, shape=x.shape, axis=axis, keepdims=keepdims) * centred


def _nanstd_vjp(g, ans, x, axis=None, ddof=0, keepdims=False):
    n, centred = _nan_centred(x, axis, ddof, keepdims)
    scale = np.where(ans == 0, 0.0, g / (ans * n))
    return unreduce(scale, shape=x.shape, axis=axis, keepdims=keepdims) * centred


defvjp(np.nanvar, _nanvar_vjp, dtype_rule="float")
defvjp(np.nanstd, _nanstd_vjp, dtype_rule="float")
lookup(np.sum).shift = lookup(np.nansum).shift = "reduce_sum"     # hints: see rules/__init__
for _f in (np.max, np.min, np.nanmax, np.nanmin):
    lookup(_f).shift = "reduce_max"
lookup(np.mean).shift = lookup(np.nanmean).shift = "reduce_mean"
defvjp(np.nanprod, lambda g, ans, x, axis=None, keepdims=False: np.where(
    np.isnan(x), 0.0, unreduce(g, shape=x.shape, axis=axis, keepdims=keepdims)
    * prod_others(np.where(np.isnan(x), 1.0, x), axis=axis)))
defvjp(np.nancumsum, lambda g, ans, x, axis=None: np.where(np.isnan(x), 0.0, np.reshape(
    np.flip(np.cumsum(np.flip(g, axis=axis), axis=axis), axis=axis), x.shape)))


@primitive(dtype_rule="float")
def logsumexp(x, *, axis=None, keepdims=False):
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


@primitive(dtype_rule="float")
def softmax(x, *, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@primitive(dtype_rule="float")
def log_softmax(x, *, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


defvjp(logsumexp, lambda g, ans, x, axis=None, keepdims=False:
       unreduce(g, shape=x.shape, axis=axis, keepdims=keepdims)
       * np.exp(x - unreduce(ans, shape=x.shape, axis=axis, keepdims=keepdims)))
defvjp(softmax, lambda g, ans, x, axis=-1: ans * (g - np.sum(g * ans, axis=axis, keepdims=True)))
defvjp(log_softmax, lambda g, ans, x, axis=-1:
       g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True))


# ---------------------------------------------------------------------------------------------
# Forward mode.  Sums, means and cumulative sums are linear; every other reduction is
# ``sum(t * vjp(ones))`` over its axes (each entry reaches one result: forward_rules.reduced).

def _cumprod_tangent_last(t, x):
    """Tangent of ``np.cumprod(x, axis=-1)``, exact at zeros: entry ``j`` is
    ``sum_{i <= j} t_i * prod_{k <= j, k != i} x_k`` (the transpose of ``_cumprod_last``)."""
    n = x.shape[-1]
    ones = np.ones_like(x[..., :1])
    before = np.cumprod(np.concatenate([ones, x[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.where(triangle(n, 1), x[..., None, :], 1.0), axis=-1)
    return np.sum(np.where(triangle(n), after, 0.0) * (t * before)[..., :, None], axis=-2)


def _cumprod_jvp(tangents, ans, x, axis=None):
    t = tangents[0] + 0.0 * x               # a tangent broadcast to x's shape
    if axis is None:
        return _cumprod_tangent_last(np.reshape(t, (-1,)), np.reshape(x, (-1,)))
    moved = _cumprod_tangent_last(np.moveaxis(t, axis, -1), np.moveaxis(x, axis, -1))
    return np.moveaxis(moved, -1, axis)


for _f in (np.sum, np.mean, np.cumsum):
    defjvp(_f, linear=True)
for _f in (np.prod, np.max, np.min, np.var, np.std, np.ptp, np.nanmax, np.nanmin, np.nansum,
           np.nanmean, np.nanvar, np.nanstd, np.nanprod, logsumexp):
    defjvp(_f, reduced(*lookup(_f).vjps))
defjvp(np.cumprod, _cumprod_jvp)
defjvp(np.nancumsum, lambda tangents, ans, x, axis=None:
       np.cumsum(np.where(np.isnan(x), 0.0, tangents[0]), axis=axis))
defjvp(softmax, lambda tangents, ans, x, axis=-1:
       ans * (tangents[0] - np.sum(tangents[0] * ans, axis=axis, keepdims=True)))
defjvp(log_softmax, lambda tangents, ans, x, axis=-1:
       tangents[0] - np.sum(tangents[0] * np.exp(ans), axis=axis, keepdims=True))
