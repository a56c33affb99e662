"""Tensor factories (``tensor``, ``zeros``, ``randn`` …) and the seeded random generator."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from srcgrad.runtime.eager import dtypes
from srcgrad.runtime.eager.tensor import Tensor, as_array
from srcgrad.runtime.subclasses import plain

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like",
           "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "arange",
           "linspace", "eye", "rand", "randn", "randint", "randperm", "manual_seed", "seed"]

_rng = [np.random.default_rng()]


def manual_seed(seed: int) -> np.random.Generator:
    """Seed srcgrad's generator: the same seed gives the same ``rand``/``randn`` draws."""
    _rng[0] = np.random.default_rng(int(seed))
    return _rng[0]


def seed() -> int:
    value = int(np.random.SeedSequence().entropy % (2 ** 63))
    manual_seed(value)
    return value


def _finish(data: np.ndarray, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    if dtype is not None:
        data = data.astype(dtypes.to_numpy_dtype(dtype), copy=False)
    if device is not None and str(device) != "cpu":
        from srcgrad.runtime.device import device as _device
        from srcgrad.runtime.device import move
        data = move(data, _device(device))
    t = Tensor._make(data)
    if requires_grad:
        if t._data.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t.requires_grad = True
    return t


def _infer(data: Any, dtype: Any = None) -> np.ndarray:
    """NumPy array for ``data`` with PyTorch's dtype inference (Python floats → float32), or
    converted straight to ``dtype`` when one is given (``[0.3]`` as float64 is 0.3 exactly)."""
    if isinstance(data, Tensor):
        return data._data.copy()
    if isinstance(data, (np.ndarray, np.generic)):
        return np.array(plain(data, "srcgrad.tensor(...)"))
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flat(data)):
        data = [as_array(x) if isinstance(x, Tensor) else x for x in data]
    arr = np.array(data)
    if arr.dtype.kind == "f":
        if dtype is None:
            arr = arr.astype(dtypes.default_float())
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "bc":
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    return arr


def _flat(data: Any) -> list:
    out = []
    for x in data:
        out.extend(_flat(x) if isinstance(x, (list, tuple)) else [x])
    return out


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new leaf Tensor holding a copy of ``data``."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than srcgrad.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    return _finish(_infer(data, dtype), dtype, device, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    if isinstance(data, np.ndarray) and dtype is None:
        return Tensor._make(data)
    return tensor(data, dtype, device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A Tensor sharing memory with ``array``."""
    return Tensor._make(array)


def _size(size: tuple) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def _default(dtype: Any) -> Any:
    return dtype if dtype is not None else dtypes.get_default_dtype()


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
          ) -> Tensor:
    return _finish(np.zeros(_size(size)), _default(dtype), device, requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
         ) -> Tensor:
    return _finish(np.ones(_size(size)), _default(dtype), device, requires_grad)


empty = zeros


def full(size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    if dtype is None:
        dtype = (dtypes.bool_ if isinstance(fill_value, bool) else dtypes.int64
                 if isinstance(fill_value, int) else dtypes.get_default_dtype())
    return _finish(np.full(tuple(size), fill_value), dtype, device, requires_grad)


def _like(fill: Any) -> Any:
    def make(input: Tensor, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
        data = np.full(input.shape, fill, dtype=input._data.dtype) if not callable(fill) else \
            fill(input.shape).astype(input._data.dtype)
        return _finish(data, dtype, device, requires_grad)
    return make


zeros_like = _like(0)
ones_like = _like(1)
empty_like = zeros_like
rand_like = _like(lambda shape: _rng[0].random(shape))
randn_like = _like(lambda shape: _rng[0].standard_normal(shape))


def full_like(input: Tensor, fill_value: Any, **kwargs: Any) -> Tensor:
    return _like(fill_value)(input, **kwargs)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    if end is None:
        start, end = 0, start
    if dtype is None:
        floating = any(isinstance(v, float) for v in (start, end, step))
        dtype = dtypes.get_default_dtype() if floating else dtypes.int64
    return _finish(np.arange(start, end, step), dtype, device, requires_grad)


def linspace(start: float, end: float, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    return _finish(np.linspace(start, end, steps), _default(dtype), device, requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    return _finish(np.eye(n, m), _default(dtype), device, requires_grad)


def rand(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
         generator: Any = None) -> Tensor:
    """Uniform draws on [0, 1) from srcgrad's seeded generator."""
    rng = generator or _rng[0]
    return _finish(rng.random(_size(size)), _default(dtype), device, requires_grad)


def randn(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          generator: Any = None) -> Tensor:
    """Standard normal draws from srcgrad's seeded generator."""
    rng = generator or _rng[0]
    return _finish(rng.standard_normal(_size(size)), _default(dtype), device, requires_grad)


def randint(low: int, high: int | None = None, size: Any = (), *, dtype: Any = None,
            device: Any = None) -> Tensor:
    if high is None:
        low, high = 0, low
    return _finish(_rng[0].integers(low, high, tuple(size)), dtype or dtypes.int64, device,
                   False)


def randperm(n: int, *, dtype: Any = None, device: Any = None) -> Tensor:
    return _finish(_rng[0].permutation(n), dtype or dtypes.int64, device, False)


def generator() -> np.random.Generator:
    """The generator behind ``rand``/``randn`` (dropout draws from it too)."""
    return _rng[0]
