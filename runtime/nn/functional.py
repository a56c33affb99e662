"""``nn.functional``: activations, the affine map, dropout and losses, as PyTorch's."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcgrad.runtime import rules as R
from srcgrad.runtime.eager.factories import generator
from srcgrad.runtime.eager.tensor import Size, Tensor, apply, as_array

__all__ = ["relu", "sigmoid", "tanh", "softmax", "log_softmax", "linear", "dropout",
           "mse_loss", "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "cross_entropy", "nll_loss", "softplus", "leaky_relu", "gelu", "layer_norm",
           "embedding", "conv1d", "conv2d"]


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else input.relu()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    return (input if dtype is None else input.to(dtype)).softmax(-1 if dim is None else dim)


def log_softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    return (input if dtype is None else input.to(dtype)).log_softmax(-1 if dim is None else dim)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return apply(R.softplus, "SoftplusBackward0", (input,),
                 {"beta": beta, "threshold": threshold})


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    out = apply(R.leaky_relu, "LeakyReluBackward0", (input,), {"negative_slope": negative_slope})
    return input.copy_(out) if inplace else out


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return apply(R.gelu, "GeluBackward0", (input,), {"approximate": approximate})


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``; on a batch of vectors one ``AddmmBackward0`` node."""
    if input.dim() == 2 and bias is not None:
        return apply(R.addmm, "AddmmBackward0", (bias, input, weight.t()))
    if input.dim() == 2:
        return input.mm(weight.t())
    lead = input.shape[:-1]
    flat = input.reshape(-1, input.shape[-1])
    out = linear(flat, weight, bias)
    return out.reshape(*lead, weight.shape[0])


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
            ) -> Tensor:
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    keep = generator().random(input.shape) >= p
    scale = (keep / (1 - p) if p < 1 else keep * 0.0).astype(input._data.dtype)
    return input.mul_(scale) if inplace else input * scale


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_shapes(input: Tensor, target: Any, name: str) -> None:
    if tuple(np.shape(as_array(target))) != tuple(input.shape):
        import warnings
        warnings.warn(f"Using a target size ({Tensor._make(as_array(target)).shape!r}) that is "
                      f"different to the input size ({input.shape!r}). This will likely lead to "
                      "incorrect results due to broadcasting. Please ensure they have the same "
                      "size.", UserWarning, stacklevel=3)


def mse_loss(input: Tensor, target: Any, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    _check_shapes(input, target, "mse_loss")
    return apply(R.mse_loss, "MseLossBackward0", (input, target), {"reduction": reduction})


def l1_loss(input: Tensor, target: Any, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean") -> Tensor:
    _check_shapes(input, target, "l1_loss")
    return _reduce((input - target).abs(), reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Any, weight: Any = None,
                                     size_average: Any = None, reduce: Any = None,
                                     reduction: str = "mean", pos_weight: Any = None) -> Tensor:
    if tuple(np.shape(as_array(target))) != tuple(input.shape):
        raise ValueError(f"Target size ({Tensor._make(as_array(target)).shape!r}) must be the "
                         f"same as input size ({input.shape!r})")
    if weight is None and pos_weight is None:
        return apply(R.binary_cross_entropy_with_logits,
                     "BinaryCrossEntropyWithLogitsBackward0", (input, target),
                     {"reduction": reduction})
    softplus_neg = (-input).relu() + (-(input.abs())).exp().log1p()
    coef = 1 if pos_weight is None else 1 + (pos_weight - 1) * target
    loss = (1 - target) * input + coef * softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy(input: Tensor, target: Any, weight: Any = None,
                         size_average: Any = None, reduce: Any = None,
                         reduction: str = "mean") -> Tensor:
    if isinstance(weight, Tensor) and weight.requires_grad:
        raise RuntimeError("the derivative for 'weight' is not implemented.")
    if tuple(np.shape(as_array(target))) != tuple(input.shape):
        raise ValueError(f"Using a target size ({Size(np.shape(as_array(target)))}) that is "
                         f"different to the input size ({input.shape}) is deprecated. Please "
                         "ensure they have the same size.")
    params = {"reduction": reduction, "weight": None if weight is None else as_array(weight)}
    return apply(R.binary_cross_entropy, "BinaryCrossEntropyBackward0", (input, target), params)


def nll_loss(input: Tensor, target: Any, weight: Any = None, size_average: Any = None,
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Tensor:
    if weight is not None:
        raise NotImplementedError("srcgrad's nll_loss does not take class weights yet")
    target = np.asarray(as_array(target))
    if target.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {Tensor._make(target).dtype}")
    if input.dim() == 1:
        out = nll_loss(input.unsqueeze(0), target.reshape(1), None, None, ignore_index, None,
                       reduction)
        return out.squeeze(0) if reduction == "none" else out
    return apply(R.nll_loss, "NllLossBackward0", (input,),
                 {"target": target, "reduction": reduction, "ignore_index": ignore_index})


def cross_entropy(input: Tensor, target: Any, weight: Any = None, size_average: Any = None,
                  ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input, 1), target)``; class probabilities as targets work too."""
    if label_smoothing:
        raise NotImplementedError("srcgrad's cross_entropy has no label_smoothing yet")
    dim = 0 if input.dim() == 1 else 1
    logp = input.log_softmax(dim)
    t = as_array(target)
    if np.asarray(t).dtype.kind == "f":
        return _reduce(-(logp * target).sum(dim), reduction)
    return nll_loss(logp, target, weight, None, ignore_index, None, reduction)


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims (biased variance), then scale and
    shift."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or tuple(input.shape[input.dim() - k:]) != shape or input.dim() < k:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    dims = tuple(range(input.dim() - k, input.dim()))
    centered = input - input.mean(dims, keepdim=True)
    out = centered * ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    return out + bias if bias is not None else out


def embedding(input: Any, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input`` (``EmbeddingBackward0``); the row at
    ``padding_idx`` gets no gradient; ``max_norm`` renormalises the picked rows in place."""
    idx = np.asarray(as_array(input))
    if idx.dtype.kind not in "iu":
        kind = Tensor._make(idx).dtype.legacy if isinstance(input, Tensor) else "Tensor"
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got torch." + kind +
                           " instead (while checking arguments for embedding)")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("srcgrad's embedding has no scale_grad_by_freq or sparse "
                                  "gradients")
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= rows
    if idx.size and (idx.min() < 0 or idx.max() >= rows):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        used = np.unique(idx)
        picked = weight._data[used]
        norms = np.linalg.norm(picked, ord=norm_type, axis=1)
        scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight._data[used] = picked * scale[:, None].astype(picked.dtype)
        weight._version_counter[0] += 1
    table = weight
    if padding_idx is not None and weight.requires_grad:
        from srcgrad.runtime.eager.ops import where
        mask = (np.arange(rows) == padding_idx)[:, None]
        table = where(Tensor._make(mask), weight.detach(), weight)
    return apply(R.getitem, "EmbeddingBackward0", (table,), {"index": idx})


from srcgrad.runtime.nn.conv import conv1d, conv2d  # noqa: E402
