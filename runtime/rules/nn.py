"""The neural-network family: fused losses and the affine map, one node each as in
PyTorch."""

from __future__ import annotations

import math

import numpy as np

from srcgrad.runtime.rules.core import numel
from srcgrad.runtime.rules.elementwise import sigmoid
from srcgrad.runtime.rules.primitives import (
    defjvp,
    defvjp,
    primitive,
)


def _reduce(loss, reduction):
    if reduction == "mean":
        return np.mean(loss)
    return np.sum(loss) if reduction == "sum" else loss


def _loss_scale(g, x_shape, reduction):
    """The upstream gradient spread over the elements of an unreduced loss."""
    if reduction == "none":
        return g
    return np.broadcast_to(g / numel(x_shape) if reduction == "mean" else g, x_shape)


@primitive(nin=2)
def mse_loss(x, y, *, reduction="mean"):
    return _reduce((x - y) ** 2, reduction)


@primitive(nin=2, dtype_rule="float")
def binary_cross_entropy_with_logits(x, y, *, reduction="mean"):
    return _reduce(np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x))), reduction)


@primitive(dtype_rule="float")
def nll_loss(logp, *, target, reduction="mean", ignore_index=-100):
    """Negative log-likelihood of class ``target`` along axis 1 (PyTorch's layout)."""
    keep = target != ignore_index
    picked = np.take_along_axis(logp, np.expand_dims(np.where(keep, target, 0), 1), axis=1)
    loss = -np.squeeze(picked, axis=1) * keep
    if reduction == "mean":
        return np.sum(loss) / np.sum(keep)
    return np.sum(loss) if reduction == "sum" else loss


@primitive(dtype_rule="same")
def nll_loss_grad(g, *, target, shape, reduction="mean", ignore_index=-100):
    """Gradient of ``nll_loss``: ``-g`` at each target class, scaled for the reduction."""
    keep = target != ignore_index
    scale = g / np.sum(keep) if reduction == "mean" else g
    picked = np.where(keep, -scale, 0)
    out = np.zeros_like(g, shape=shape)
    np.put_along_axis(out, np.expand_dims(np.where(keep, target, 0), 1),
                      np.expand_dims(picked, 1), axis=1)
    return out


_SQRT_2PI = math.sqrt(2.0 * math.pi)
_GELU_C = math.sqrt(2.0 / math.pi)


@primitive(dtype_rule="float")
def normal_cdf(x):
    """Φ(x), the standard normal CDF (``math.erf`` elementwise: SciPy stays optional)."""
    import math
    x = np.asarray(x)
    erf = np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2.0))
    return (0.5 * (1.0 + erf)).astype(x.dtype if x.dtype.kind == "f" else np.float64)


@primitive(dtype_rule="float")
def gelu(x, *, approximate="none"):
    """PyTorch's GELU: ``x Φ(x)``, or its tanh approximation."""
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(_GELU_C * (x + 0.044715 * x ** 3)))
    return x * normal_cdf(x)


def _gelu_slope(x, approximate):
    if approximate == "tanh":
        t = np.tanh(_GELU_C * (x + 0.044715 * x ** 3))
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _GELU_C * (1.0 + 0.134145 * x * x)
    return normal_cdf(x) + x * np.exp(-0.5 * x * x) / _SQRT_2PI


@primitive(dtype_rule="float")
def softplus(x, *, beta=1.0, threshold=20.0):
    """PyTorch's softplus: ``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold``."""
    bx = x * beta
    return np.where(bx > threshold, x, np.logaddexp(bx, 0.0) / beta)


@primitive()
def leaky_relu(x, *, negative_slope=0.01):
    return np.where(x > 0, x, x * negative_slope)


@primitive(nin=2, dtype_rule="float")
def binary_cross_entropy(x, target, *, weight=None, reduction="mean"):
    """PyTorch's: ``-(t log x + (1 - t) log(1 - x))``, each log clamped at -100."""
    with np.errstate(divide="ignore"):
        loss = -(target * np.maximum(np.log(x), -100.0)
                 + (1 - target) * np.maximum(np.log1p(-x), -100.0))
    return _reduce(loss if weight is None else loss * weight, reduction)


@primitive(nin=3)
def addmm(c, a, b):
    """``c + a @ b`` (``nn.Linear`` on a batch)."""
    return c + np.matmul(a, b)


defvjp(mse_loss, lambda g, ans, x, y, reduction="mean":
       _loss_scale(g, x.shape, reduction) * 2 * (x - y),
       lambda g, ans, x, y, reduction="mean": _loss_scale(g, x.shape, reduction) * 2 * (y - x),
       broadcasts=True)
defvjp(binary_cross_entropy_with_logits, lambda g, ans, x, y, reduction="mean":
       _loss_scale(g, x.shape, reduction) * (sigmoid(x) - y),
       lambda g, ans, x, y, reduction="mean": _loss_scale(g, x.shape, reduction) * -x,
       broadcasts=True)
defvjp(nll_loss, lambda g, ans, logp, target, reduction="mean", ignore_index=-100:
       nll_loss_grad(g, target=target, shape=logp.shape, reduction=reduction,
                     ignore_index=ignore_index))
defvjp(nll_loss_grad, lambda g, ans, gy, target, shape, reduction="mean", ignore_index=-100:
       nll_loss(g, target=target, reduction=reduction, ignore_index=ignore_index))  # linear map
defvjp(normal_cdf, lambda g, ans, x: g * np.exp(-0.5 * x * x) / _SQRT_2PI)
defvjp(gelu, lambda g, ans, x, approximate="none": g * _gelu_slope(x, approximate))
defvjp(softplus, lambda g, ans, x, beta=1.0, threshold=20.0:
       np.where(x * beta > threshold, g, g * sigmoid(x * beta)))
defvjp(leaky_relu, lambda g, ans, x, negative_slope=0.01:
       np.where(x > 0, g, g * negative_slope))
defvjp(binary_cross_entropy, lambda g, ans, x, target, weight=None, reduction="mean":
       _loss_scale(g, x.shape, reduction) * (x - target) / np.maximum((1 - x) * x, 1e-12)
       * (1.0 if weight is None else weight),
       lambda g, ans, x, target, weight=None, reduction="mean":
       _loss_scale(g, x.shape, reduction) * (np.maximum(np.log1p(-x), -100.0)
                                             - np.maximum(np.log(x), -100.0))
       * (1.0 if weight is None else weight))
defvjp(addmm, lambda g, ans, c, a, b: g,
       lambda g, ans, c, a, b: np.matmul(g, np.swapaxes(b, -1, -2)),
       lambda g, ans, c, a, b: np.matmul(np.swapaxes(a, -1, -2), g), broadcasts=True)


# Forward mode.  The activations are elementwise (diagonal), nll_loss is linear (it picks
# entries), addmm is ``c + a @ b``, and a fused loss is its elementwise loss, reduced: the
# tangent of each element is the vjp rule's at ``reduction="none"`` with a cotangent of 1.

def _loss_jvp(prim):
    def rule(tangents, ans, x, y, reduction="mean", **params):
        per = [t * vjp(1.0, ans, x, y, reduction="none", **params)
               for t, vjp in zip(tangents, prim.vjps) if t is not None]
        return _reduce(per[0] if len(per) == 1 else per[0] + per[1], reduction)
    return rule


def _addmm_jvp(tangents, ans, c, a, b):
    tc, ta, tb = tangents
    terms = [t for t in (tc, None if ta is None else np.matmul(ta, b),
                         None if tb is None else np.matmul(a, tb)) if t is not None]
    return terms[0] if len(terms) == 1 else sum(terms[1:], terms[0])


for _f in (normal_cdf, gelu, softplus, leaky_relu):
    defjvp(_f, diagonal=True)
for _f in (nll_loss, nll_loss_grad):
    defjvp(_f, linear=True)
for _f in (mse_loss, binary_cross_entropy_with_logits, binary_cross_entropy):
    defjvp(_f, _loss_jvp(_f))
defjvp(addmm, _addmm_jvp)
