"""PyTorch's functional forms (``srcgrad.exp(x)``, ``srcgrad.sum(x, 0)``) over Tensor methods."""

from __future__ import annotations

from typing import Any

from srcgrad.runtime.factories import tensor
from srcgrad.runtime.tensor import Tensor

_METHODS = (
    "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt abs neg negative sin cos tan asin acos atan "
    "sinh cosh tanh asinh acosh atanh reciprocal sign floor ceil trunc round sigmoid relu square "
    "sum mean prod max min amax amin argmax argmin std var cumsum logsumexp softmax log_softmax "
    "norm matmul mm mv dot outer trace reshape flatten permute transpose t squeeze unsqueeze "
    "flip roll tril triu clamp clip maximum minimum atan2 hypot logaddexp add sub mul div "
    "true_divide pow isnan isfinite isinf logical_not masked_fill clone detach numel "
    "lt le gt ge eq ne").split()

__all__ = list(_METHODS) + ["is_tensor", "numel"]


def _function(name: str) -> Any:
    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(input, Tensor):
            input = tensor(input)
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"``srcgrad.{name}(x, ...)`` is ``x.{name}(...)``."
    return fn


for _name in _METHODS:
    globals()[_name] = _function(_name)


def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001
    if not isinstance(input, Tensor):
        return exponent.__rpow__(input)
    return input.pow(exponent)


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)
