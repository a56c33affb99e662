"""Tensor dtypes and PyTorch's type-promotion rules, over NumPy dtypes."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["dtype", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
           "bool_", "to_numpy_dtype", "from_numpy_dtype", "get_default_dtype",
           "set_default_dtype", "result_type"]


class dtype:
    """A Tensor element type (``srcgrad.float32``); wraps a NumPy dtype.

    It has a ``.dtype`` attribute, so NumPy accepts it wherever a dtype is expected.
    """

    __slots__ = ("name", "dtype", "legacy")

    def __init__(self, name: str, np_dtype: Any, legacy: str) -> None:
        self.name = name
        self.dtype = np.dtype(np_dtype)
        self.legacy = legacy           # PyTorch's legacy type name, as in error messages

    def __repr__(self) -> str:
        return f"srcgrad.{self.name}"

    def __reduce__(self) -> str:
        return self.name

    @property
    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.dtype.kind == "c"

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize


float16 = dtype("float16", np.float16, "HalfTensor")
float32 = dtype("float32", np.float32, "FloatTensor")
float64 = dtype("float64", np.float64, "DoubleTensor")
int8 = dtype("int8", np.int8, "CharTensor")
int16 = dtype("int16", np.int16, "ShortTensor")
int32 = dtype("int32", np.int32, "IntTensor")
int64 = dtype("int64", np.int64, "LongTensor")
uint8 = dtype("uint8", np.uint8, "ByteTensor")
bool_ = dtype("bool", np.bool_, "BoolTensor")

_BY_NUMPY = {d.dtype: d for d in (float16, float32, float64, int8, int16, int32, int64, uint8,
                                  bool_)}
_ALIASES = {"float": float32, "double": float64, "half": float16, "long": int64, "int": int32,
            "short": int16, "bool": bool_}
_default = [np.dtype(np.float32)]


def get_default_dtype() -> dtype:
    return _BY_NUMPY[_default[0]]


def set_default_dtype(d: dtype) -> None:
    _default[0] = to_numpy_dtype(d)


def to_numpy_dtype(d: Any) -> np.dtype:
    """NumPy dtype for a srcgrad dtype, NumPy dtype, Python type or name."""
    if isinstance(d, dtype):
        return d.dtype
    if d is float:
        return _default[0]
    if isinstance(d, str) and d in _ALIASES:
        return _ALIASES[d].dtype
    return np.dtype(d)


def from_numpy_dtype(d: np.dtype) -> dtype:
    try:
        return _BY_NUMPY[d]
    except KeyError:
        raise TypeError(f"srcgrad has no dtype for NumPy's {d}") from None


def _category(d: np.dtype) -> int:
    return 0 if d.kind == "b" else 2 if d.kind in "fc" else 1


def _promote(a: np.dtype | None, b: np.dtype | None) -> np.dtype | None:
    if a is None or a == b:
        return b
    if b is None:
        return a
    ca, cb = _category(a), _category(b)
    if ca != cb:
        return a if ca > cb else b            # int64 with float32 is float32, as in PyTorch
    return np.promote_types(a, b)


def _combine(higher: np.dtype | None, lower: np.dtype | None) -> np.dtype | None:
    """PyTorch's combine_categories: a lower-priority operand only lifts the category."""
    if higher is None:
        return lower
    if lower is None or higher.kind == "f":
        return higher
    if higher.kind == "b" or lower.kind == "f":
        return _promote(higher, lower)
    return higher


def result_type(args: tuple, tensor_type: type) -> np.dtype:
    """The dtype PyTorch gives an operation on ``args``.

    Tensors with dimensions outrank zero-dim Tensors, which outrank Python scalars; a lower rank
    only matters when it brings a higher category (bool < integer < floating).
    """
    dim = zero = wrapped = None
    for a in args:
        if isinstance(a, tensor_type):
            d = a._data.dtype
            if a._data.ndim:
                dim = d if dim is None else _promote(dim, d)
            else:
                zero = d if zero is None else _promote(zero, d)
        elif isinstance(a, bool):
            wrapped = _promote(wrapped, np.dtype(np.bool_))
        elif isinstance(a, int):
            wrapped = _promote(wrapped, np.dtype(np.int64))
        elif isinstance(a, float):
            wrapped = _promote(wrapped, _default[0])
        elif isinstance(a, (np.ndarray, np.generic)):
            if a.ndim:
                dim = _promote(dim, a.dtype)
            else:
                zero = _promote(zero, a.dtype)
    out = _combine(dim, _combine(zero, wrapped))
    return out if out is not None else _default[0]


def default_float() -> np.dtype:
    return _default[0]
