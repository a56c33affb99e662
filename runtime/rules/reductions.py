"""Reductions (``axis`` and ``keepdims`` as in NumPy), softmax and its relatives."""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.primitives import (
    defvjp,
    primitive,
)
from srcgrad.runtime.rules.core import numel, unreduce


def _extremum_vjp(g, ans, x, axis=None, keepdims=False):
    """max/min: the gradient is shared equally between tied extrema (as PyTorch's ``max()``)."""
    hit = x == unreduce(ans, shape=x.shape, axis=axis, keepdims=keepdims)
    count = np.sum(hit, axis=axis, keepdims=keepdims)
    return unreduce(g / count, shape=x.shape, axis=axis, keepdims=keepdims) * hit


def _var_vjp(g, ans, x, axis=None, ddof=0, keepdims=False):
    n = numel(x.shape) / numel(ans.shape) - ddof
    centred = x - np.mean(x, axis=axis, keepdims=True)
    return unreduce(g * (2 / n), shape=x.shape, axis=axis, keepdims=keepdims) * centred


def _std_vjp(g, ans, x, axis=None, ddof=0, keepdims=False):
    n = numel(x.shape) / numel(ans.shape) - ddof
    centred = x - np.mean(x, axis=axis, keepdims=True)
    scale = np.where(ans == 0, 0, g / (ans * n))
    return unreduce(scale, shape=x.shape, axis=axis, keepdims=keepdims) * centred


@primitive(dtype_rule="same")
def prod_others(x, *, axis=None):
    """Product of all other elements along ``axis`` (the gradient of prod, safe at zeros)."""
    flat = x.reshape(-1) if axis is None else np.moveaxis(x, axis, -1)
    ones = np.ones_like(flat[..., :1])
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    out = left * right
    return out.reshape(x.shape) if axis is None else np.moveaxis(out, -1, axis)


defvjp(np.sum, lambda g, ans, x, axis=None, keepdims=False:
       unreduce(g, shape=x.shape, axis=axis, keepdims=keepdims))
defvjp(np.mean, lambda g, ans, x, axis=None, keepdims=False:
       unreduce(g * (numel(ans.shape) / numel(x.shape)), shape=x.shape, axis=axis,
                keepdims=keepdims), dtype_rule="float")
defvjp(np.prod, lambda g, ans, x, axis=None, keepdims=False:
       unreduce(g, shape=x.shape, axis=axis, keepdims=keepdims) * prod_others(x, axis=axis))
defvjp(np.max, _extremum_vjp)
defvjp(np.min, _extremum_vjp)
defvjp(np.var, _var_vjp, dtype_rule="float")
defvjp(np.std, _std_vjp, dtype_rule="float")
defvjp(np.cumsum, lambda g, ans, x, axis=None: np.reshape(
    np.flip(np.cumsum(np.flip(g, axis=axis), axis=axis), axis=axis), x.shape))


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
