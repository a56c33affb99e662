"""Convolutions: ``F.conv1d``/``F.conv2d`` and ``nn.Conv1d``/``nn.Conv2d``, as PyTorch's.

A convolution is one ``einsum`` of the input's windows with the weight, recorded as
``ConvolutionBackward0``: the padded input is gathered into windows by an integer index (its
gradient scatters back, overlaps adding up), groups make the weight block-diagonal over the
channels, and the bias rides along as an extra input channel of ones whose weight is the bias
at the first kernel position (zeros elsewhere).  Every value is the sum NumPy computes; every
gradient follows from the rules of ``pad``, indexing and ``einsum``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from srcgrad.runtime import rules as R
from srcgrad.runtime.eager.factories import generator
from srcgrad.runtime.eager.tensor import Tensor, apply
from srcgrad.runtime.eager.views import cat
from srcgrad.runtime.nn.module import Module, Parameter
from srcgrad.runtime.rules.primitives import lookup

__all__ = ["conv1d", "conv2d", "Conv1d", "Conv2d"]

_LETTERS = "pqrstuvw"
_PAD_MODES = {"zeros": "constant", "reflect": "reflect", "replicate": "edge",
              "circular": "wrap"}


def _expand(value: Any, d: int, name: str) -> tuple:
    if isinstance(value, int):
        return (value,) * d
    value = tuple(value)
    if len(value) == 1:
        return value * d
    if len(value) != d:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {d} "
                           "values to match the convolution dimensions, but got "
                           f"{name}={list(value)}")
    return value


def _pads(padding: Any, d: int, stride: tuple, dilation: tuple, kernel: tuple) -> list:
    """(before, after) per spatial dimension."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * d
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        totals = [dl * (k - 1) for dl, k in zip(dilation, kernel)]
        return [(t // 2, t - t // 2) for t in totals]
    pads = _expand(padding, d, "padding")
    if any(p < 0 for p in pads):
        raise RuntimeError("negative padding is not supported")
    return [(p, p) for p in pads]


def _size(shape: Any) -> str:
    return str(list(shape))


def _check(input: Tensor, weight: Tensor, bias: Any, groups: int, d: int) -> None:
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    out_ch = weight.shape[0]
    if out_ch % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"[{_size(weight.shape)}] instead")
    if input.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {_size(weight.shape)}, "
                           f"expected input{_size(input.shape)} to have "
                           f"{weight.shape[1] * groups} channels, but got {input.shape[1]} "
                           "channels instead")
    if bias is not None and tuple(bias.shape) != (out_ch,):
        raise RuntimeError(f"Given weight of size {_size(weight.shape)}, expected bias to be "
                           f"1-dimensional with {out_ch} elements, but got bias of size "
                           f"{_size(bias.shape)} instead")
    for t in (weight, bias):
        if t is not None and t._data.dtype != input._data.dtype:
            raise RuntimeError(f"expected scalar type {input.dtype.legacy[:-6]} but found "
                               f"{t.dtype.legacy[:-6]}")


def _conv(input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any, dilation: Any,
          groups: int, d: int, pad_mode: str = "zeros") -> Tensor:
    if input.dim() not in (d + 1, d + 2):
        raise RuntimeError(f"Expected {d + 1}D (unbatched) or {d + 2}D (batched) input to "
                           f"conv{d}d, but got input of size: {_size(input.shape)}")
    if weight.dim() != d + 2:
        raise RuntimeError(f"conv{d}d: expected weight to be {d + 2}-dimensional, but got "
                           f"weight of size {_size(weight.shape)}")
    if input.dim() == d + 1:
        out = _conv(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups, d,
                    pad_mode)
        return out.squeeze(0)
    stride = _expand(stride, d, "stride")
    dilation = _expand(dilation, d, "dilation")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(x <= 0 for x in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    _check(input, weight, bias, groups, d)
    kernel = tuple(weight.shape[2:])
    pads = _pads(padding, d, stride, dilation, kernel)
    x = input
    if any(p != (0, 0) for p in pads):
        node = "ConstantPadNdBackward0" if pad_mode == "zeros" else \
            f"{pad_mode.capitalize()}Pad{d}DBackward0"
        x = apply(lookup(np.pad), node, (x,), {"pad_width": [(0, 0), (0, 0), *pads],
                                               "mode": _PAD_MODES[pad_mode]})
    padded = tuple(x.shape[2:])
    reach = tuple(dl * (k - 1) + 1 for dl, k in zip(dilation, kernel))
    if any(r > p for r, p in zip(reach, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, reach))}). Kernel size can't be greater "
                           "than actual input size")
    outs = tuple((p - r) // s + 1 for p, r, s in zip(padded, reach, stride))
    w = weight
    if groups > 1:                         # block-diagonal over (out, in) channel groups
        m, cg = w.shape[0], w.shape[1]
        k = "".join(_LETTERS[:d])
        w = w.reshape(groups, m // groups, cg, *kernel)
        eye = Tensor._make(np.eye(groups, dtype=w._data.dtype))
        w = apply(R.einsum, "EinsumBackward0", (w, eye),
                  {"subscripts": f"gmc{k},gh->gmhc{k}"}).reshape(m, groups * cg, *kernel)
    if bias is not None:                   # an input channel of ones, weighted by the bias
        ones = Tensor._make(np.ones((x.shape[0], 1, *padded), dtype=x._data.dtype))
        x = cat([x, ones], 1)
        first = [(0, 0), (0, 0)] + [(0, k - 1) for k in kernel]
        b = apply(lookup(np.pad), "ConstantPadNdBackward0",
                  (bias.reshape(-1, 1, *([1] * d)),), {"pad_width": first, "mode": "constant"})
        w = cat([w, b], 1)
    index: list = [slice(None), slice(None)]
    for i in range(d):
        at = (np.arange(outs[i]) * stride[i])[:, None] + (np.arange(kernel[i]) * dilation[i])
        shape = [1] * (2 * d)
        shape[i], shape[d + i] = outs[i], kernel[i]
        index.append(at.reshape(shape))
    windows = apply(R.getitem, "IndexBackward0", (x,), {"index": tuple(index)})
    o, k = _LETTERS[:d], _LETTERS[d:2 * d]
    return apply(R.einsum, "ConvolutionBackward0", (windows, w),
                 {"subscripts": f"nc{o}{k},mc{k}->nm{o}"})


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """``F.conv1d``: (N, C, L) or (C, L) input, (out, C/groups, k) weight."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """``F.conv2d``: (N, C, H, W) or (C, H, W) input, (out, C/groups, kh, kw) weight."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


class _ConvNd(Module):
    """Shared by ``Conv1d`` and ``Conv2d``: PyTorch's arguments, checks, init and repr."""

    _d = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        d = self._d
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'same', 'valid'}")
            if padding == "same" and any(s != 1 for s in _expand(stride, d, "stride")):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PAD_MODES:
            raise ValueError("padding_mode must be one of {'circular', 'replicate', 'zeros', "
                             f"'reflect'}}, but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _expand(kernel_size, d, "kernel_size")
        self.stride = _expand(stride, d, "stride")
        self.padding = padding if isinstance(padding, str) else _expand(padding, d, "padding")
        self.dilation = _expand(dilation, d, "dilation")
        self.padding_mode = padding_mode
        self.transposed, self.output_padding = False, (0,) * d
        from srcgrad.runtime.eager.dtypes import get_default_dtype
        np_dtype = get_default_dtype().dtype
        self.weight = Parameter(np.empty((out_channels, in_channels // groups,
                                          *self.kernel_size), dtype=np_dtype))
        if bias:
            self.bias = Parameter(np.empty(out_channels, dtype=np_dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        if dtype is not None or device is not None:
            self.to(*(a for a in (dtype, device) if a is not None))

    def reset_parameters(self) -> None:
        """Kaiming-uniform weight with a = √5 and a bias uniform in ±1/√fan_in, as PyTorch."""
        from srcgrad.runtime.nn import init
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            self.bias._data[...] = generator().uniform(-bound, bound, self.bias.shape)

    def forward(self, input: Tensor) -> Tensor:
        if self.padding_mode == "zeros" or self.padding == "valid" or (
                not isinstance(self.padding, str) and not any(self.padding)):
            return _conv(input, self.weight, self.bias, self.stride, self.padding,
                         self.dilation, self.groups, self._d)
        return _conv(input, self.weight, self.bias, self.stride, self.padding,
                     self.dilation, self.groups, self._d, self.padding_mode)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._d:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._d:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """A 1-D convolution over (N, C, L) inputs."""

    _d = 1


class Conv2d(_ConvNd):
    """A 2-D convolution over (N, C, H, W) inputs."""

    _d = 2
