"""PyTorch's functional forms (``srcgrad.exp(x)``, ``srcgrad.sum(x, 0)``) over Tensor methods."""

from __future__ import annotations

import re
from typing import Any

from srcgrad.runtime.eager.factories import tensor
from srcgrad.runtime.eager.tensor import Tensor

_METHODS = (
    "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt abs neg negative sin cos tan asin acos atan "
    "sinh cosh tanh asinh acosh atanh reciprocal sign floor ceil trunc round sigmoid relu square "
    "sum mean prod max min amax amin argmax argmin std var cumsum logsumexp softmax log_softmax "
    "norm matmul mm mv dot outer trace reshape flatten permute transpose t squeeze unsqueeze "
    "flip roll tril triu clamp clip maximum minimum atan2 hypot logaddexp add sub mul div "
    "true_divide pow isnan isfinite isinf logical_not masked_fill clone detach numel "
    "lt le gt ge eq ne all any logical_and logical_or logical_xor isclose allclose equal erf "
    "erfc lgamma digamma logit sinc sgn fix nan_to_num fmax fmin logaddexp2 fmod remainder "
    "clamp_min clamp_max float_power cumprod nansum diagonal diag det inverse vdot narrow select "
    "unbind split chunk tensor_split index_select gather take take_along_dim masked_select sort "
    "argsort topk ravel unflatten movedim moveaxis swapaxes swapdims adjoint broadcast_to tile "
    "fliplr flipud rot90 count_nonzero nonzero argwhere signbit isposinf isneginf isreal greater "
    "greater_equal less less_equal not_equal floor_divide positive absolute arcsin arccos arctan "
    "arcsinh arccosh arctanh arctan2 exp2 bitwise_and bitwise_or bitwise_xor bitwise_not subtract "
    "multiply divide outer ger").split()

__all__ = list(_METHODS) + ["is_tensor", "numel"]


_POSITION = re.compile(r"\(position (\d+)\)")


def _function(name: str) -> Any:
    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(input, Tensor):
            input = tensor(input)
        try:
            return getattr(input, name)(*args, **kwargs)
        except TypeError as e:      # the method's argument 1 is the function's argument 2
            text = _POSITION.sub(lambda m: f"(position {int(m.group(1)) + 1})", str(e))
            if text == str(e):
                raise
            raise TypeError(text) from None
    fn.__name__ = name
    fn.__doc__ = f"``srcgrad.{name}(x, ...)`` is ``x.{name}(...)``."
    return fn


for _name in _METHODS:
    globals()[_name] = _function(_name)


def _pairwise(name: str) -> Any:
    def fn(input: Tensor, other: Tensor) -> Tensor:
        if not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                            f"{type(other).__name__}")
        return getattr(input, name)(other)
    fn.__name__ = name
    return fn


maximum, minimum = _pairwise("maximum"), _pairwise("minimum")


def _check_ints(name: str, what: str, arg: Any) -> None:
    if not isinstance(arg, (tuple, list)):
        raise TypeError(f"{name}(): argument '{what}' (position 2) must be tuple of ints, not "
                        f"{type(arg).__name__}")


def reshape(input: Tensor, shape: Any) -> Tensor:
    _check_ints("reshape", "shape", shape)
    return input.reshape(*shape)


def permute(input: Tensor, dims: Any) -> Tensor:
    _check_ints("permute", "dims", dims)
    return input.permute(*dims)


def flip(input: Tensor, dims: Any) -> Tensor:
    _check_ints("flip", "dims", dims)
    return input.flip(dims)


def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001
    if not isinstance(input, Tensor):
        return exponent.__rpow__(input)
    return input.pow(exponent)


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)
