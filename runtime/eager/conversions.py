"""Tensor conversions (to NumPy, Python numbers, text, copies) and NumPy's dispatch to Tensors.

Attached to :class:`~srcgrad.runtime.eager.tensor.Tensor` when that module loads.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.runtime.eager.tensor import NUMPY_REQUIRES_GRAD, Tensor
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS


def numpy(self: Tensor, *, force: bool = False) -> np.ndarray:
    if self._requires_grad and not force:
        raise RuntimeError(NUMPY_REQUIRES_GRAD)
    from srcgrad.runtime.device import to_numpy
    return to_numpy(self._data)


def __array__(self: Tensor, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    arr = self.numpy()
    return arr if dtype is None else arr.astype(dtype)


def item(self: Tensor) -> Any:
    if self._data.size != 1:
        raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                           "to Scalar")
    return self._data.item()


def tolist(self: Tensor) -> Any:
    return self._data.tolist()


def _scalar(self: Tensor, kind: type) -> Any:
    if self._data.size != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")
    if self._requires_grad:
        warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to "
                      "unexpected behavior.\nConsider using tensor.detach() first.",
                      UserWarning, stacklevel=3)
    return kind(self._data.item())


def __float__(self: Tensor) -> float:
    return self._scalar(float)


def __int__(self: Tensor) -> int:
    return self._scalar(int)


def __index__(self: Tensor) -> int:
    if self._data.dtype.kind not in "iub":
        raise TypeError("only integer tensors of a single element can be converted to an "
                        "index")
    return int(self._data.item())


def __bool__(self: Tensor) -> bool:
    if self._data.size != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self._data.item())


def __repr__(self: Tensor) -> str:
    from srcgrad.runtime.eager.printing import tensor_repr
    return tensor_repr(self)


def __str__(self: Tensor) -> str:
    return self.__repr__()


def __format__(self: Tensor, spec: str) -> str:
    if self._data.ndim == 0:
        return format(self._data.item(), spec)
    return object.__format__(self, spec)


def __reduce_ex__(self: Tensor, protocol: int) -> Any:
    from srcgrad.runtime.eager.factories import tensor
    return (tensor, (self._data, None, None, self._requires_grad))


def __deepcopy__(self: Tensor, memo: dict) -> Tensor:
    if self._grad_fn is not None:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                           "support the deepcopy protocol at the moment.  If you were "
                           "attempting to deepcopy a module, this may be because of a "
                           "torch.nn.utils.weight_norm usage, see "
                           "https://github.com/pytorch/pytorch/pull/103001")
    new = type(self).__new__(type(self))
    Tensor._init(new, self._data.copy(), None, self._requires_grad)
    if type(self) is not Tensor:
        new.__dict__.update(self.__dict__)
    if self._grad is not None:
        new._grad = self._grad.__deepcopy__(memo)
    memo[id(self)] = new
    return new

# ------------------------------------------------------------------- NumPy interoperation
def __array_ufunc__(self: Tensor, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    if method != "__call__" or kwargs.get("out") is not None:
        return NotImplemented
    binding = NUMPY_BINDINGS.get(ufunc)
    if binding is None:
        raise TypeError(f"numpy.{ufunc.__name__} has no srcgrad derivative rule; register "
                        "one with srcgrad.defvjp")
    kwargs.pop("out", None)
    if kwargs:
        raise TypeError(f"numpy.{ufunc.__name__}() keyword arguments {sorted(kwargs)} are "
                        "not supported on srcgrad Tensors")
    from srcgrad.runtime.eager.ops import ufunc_call
    return ufunc_call(binding[0], inputs)


def __array_function__(self: Tensor, func: Callable, types: Any, args: tuple, kwargs: dict) -> Any:
    from srcgrad.runtime.eager.ops import array_function
    return array_function(func, args, kwargs)


Tensor.numpy = numpy
Tensor.__array__ = __array__
Tensor.item = item
Tensor.tolist = tolist
Tensor._scalar = _scalar
Tensor.__float__ = __float__
Tensor.__int__ = __int__
Tensor.__index__ = __index__
Tensor.__bool__ = __bool__
Tensor.__repr__ = __repr__
Tensor.__str__ = __str__
Tensor.__format__ = __format__
Tensor.__reduce_ex__ = __reduce_ex__
Tensor.__deepcopy__ = __deepcopy__
Tensor.__array_ufunc__ = __array_ufunc__
Tensor.__array_function__ = __array_function__
