"""``Array``: a Tensor that keeps NumPy's semantics, for running NumPy code on the engine.

When the compiler falls back, the user's function runs on Arrays: ``x.sum(axis=0)``,
``x.max(axis=0)`` (an array, not values and indices), ``x.std()`` (ddof=0), ``x.shape`` (a
tuple), NumPy's dtype promotion; every operation records into the same engine and rules as
``Tensor``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcgrad.runtime import grad_mode
from srcgrad.runtime.names import node_name
from srcgrad.runtime.primitives import NUMPY_BINDINGS, lookup
from srcgrad.runtime.rules import cast, item
from srcgrad.runtime.tensor import Tensor, apply

__all__ = ["Array", "as_array_leaf"]


def _apply(prim: Any, args: tuple, params: dict) -> Any:
    out = apply(prim, node_name(prim, args, params), args, params, numpy_semantics=True)
    out.__class__ = Array
    return out


class Array(Tensor):
    """A NumPy-semantics view of the eager engine (see the module docstring)."""

    __slots__ = ()

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__" or kwargs or ufunc not in NUMPY_BINDINGS:
            return NotImplemented
        return _apply(NUMPY_BINDINGS[ufunc][0], inputs, {})

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        if func in (np.shape, np.ndim, np.size):
            return func(args[0]._data, *args[1:], **kwargs)
        if func in (np.zeros_like, np.ones_like, np.empty_like, np.full_like):
            plain = [a._data if isinstance(a, Tensor) else a for a in args]
            out = Array._make(func(*plain, **kwargs))   # a new array, outside the graph
            out.__class__ = Array
            return out
        binding = NUMPY_BINDINGS.get(func)
        if binding is None:
            raise TypeError(f"numpy.{func.__name__} has no srcgrad derivative rule; register "
                            "one with srcgrad.defvjp")
        return binding[1](*args, **kwargs)

    @staticmethod
    def __srcgrad_primitive__(prim: Any, args: tuple, params: dict) -> Any:
        return _apply(prim, args, params)

    # NumPy's attributes
    @property
    def shape(self) -> tuple:  # type: ignore[override]
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:  # type: ignore[override]
        return self._data.dtype

    @property
    def size(self) -> int:  # type: ignore[override]
        return self._data.size

    @property
    def T(self) -> Array:
        return np.transpose(self)

    def __getitem__(self, index: Any) -> Array:
        out = Tensor.__getitem__(self, index)  # a basic index is a view: one version counter
        out.__class__ = Array
        return out

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def __float__(self) -> float:
        if self._requires_grad:
            raise RuntimeError(
                "float() of an array that requires grad would drop its gradient (storing it "
                "into a NumPy array does this too); srcgrad's eager run cannot follow it")
        return float(self._data)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self._requires_grad:
            raise RuntimeError(
                "an array that requires grad was turned into a plain NumPy array (stored into "
                "one, say z = np.zeros(n); z[i] = ...), which would drop its gradient; "
                "srcgrad's eager run cannot follow it (make z with np.zeros_like of an input)")
        return self._data if dtype is None else self._data.astype(dtype, copy=False)

    def item(self) -> Any:
        return _apply(item, (self,), {})

    def astype(self, dtype: Any) -> Array:
        return _apply(cast, (self,), {"dtype": np.dtype(dtype)})

    def reshape(self, *shape: Any) -> Array:
        return np.reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes: Any) -> Array:
        return np.transpose(self, (axes[0] if len(axes) == 1 else axes) if axes else None)

    def __repr__(self) -> str:
        return f"Array({self._data!r}, requires_grad={self._requires_grad})"


def _method(fun: Any) -> Any:
    def method(self: Array, *args: Any, **kwargs: Any) -> Any:
        return fun(self, *args, **kwargs)
    method.__name__ = fun.__name__
    return method


for _name, _fun in {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min,
                    "prod": np.prod, "std": np.std, "var": np.var, "cumsum": np.cumsum,
                    "ravel": np.ravel, "flatten": np.ravel, "squeeze": np.squeeze,
                    "swapaxes": np.swapaxes, "dot": np.dot, "clip": np.clip, "copy": np.copy,
                    "repeat": np.repeat, "take": np.take, "trace": np.trace,
                    "argmax": np.argmax, "argmin": np.argmin}.items():
    setattr(Array, _name, _method(_fun))

for _dunder, _fun in {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                      "truediv": np.divide, "matmul": np.matmul, "pow": np.power,
                      "mod": np.remainder, "floordiv": np.floor_divide}.items():
    setattr(Array, f"__{_dunder}__", lambda self, other, _f=_fun: _f(self, other))
    setattr(Array, f"__r{_dunder}__", lambda self, other, _f=_fun: _f(other, self))
for _dunder, _fun in {"lt": np.less, "le": np.less_equal, "gt": np.greater,
                      "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}.items():
    setattr(Array, f"__{_dunder}__", lambda self, other, _f=_fun: _f(self, other))
Array.__neg__ = lambda self: np.negative(self)
Array.__abs__ = lambda self: np.abs(self)
Array.__hash__ = lambda self: id(self)


def as_array_leaf(value: Any) -> Array:
    """A leaf Array requiring grad, holding ``value`` (a float becomes a 0-d float64 array)."""
    data = np.array(value, dtype=np.float64) if isinstance(value, float) else np.array(value)
    leaf = Array._make(data)
    leaf.__class__ = Array
    leaf._requires_grad = True
    return leaf


def private_copy(leaf: Array) -> Array:
    """A copy of ``leaf`` the function may write into (a leaf itself may not be written)."""
    with grad_mode.enable_grad():
        return _apply(lookup(np.copy), (leaf,), {})
