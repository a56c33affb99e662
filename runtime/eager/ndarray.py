"""``Array``: a Tensor that keeps NumPy's semantics, for running NumPy code on the engine.

When the compiler falls back, the user's function runs on Arrays: ``x.sum(axis=0)``,
``x.max(axis=0)`` (an array, not values and indices), ``x.std()`` (ddof=0), ``x.shape`` (a
tuple), NumPy's dtype promotion; every operation records into the same engine and rules as
``Tensor``.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from srcgrad.runtime.eager import array_methods as _more
from srcgrad.runtime.eager import grad_mode
from srcgrad.runtime.eager.array_writes import ESCAPED as _ESCAPED
from srcgrad.runtime.eager.array_writes import check_current as _check_current
from srcgrad.runtime.eager.array_writes import check_writable as _check_writable
from srcgrad.runtime.eager.array_writes import note as _note
from srcgrad.runtime.eager.array_writes import own_data, saved_alias
from srcgrad.runtime.eager.array_writes import remember as _remember
from srcgrad.runtime.eager.array_writes import written as _written
from srcgrad.runtime.eager.constants import (
    carries_gradient,
    dropped,
    formatting,
    outside_graph,
    where,
)
from srcgrad.runtime.eager.draw_calls import converting_for_draw
from srcgrad.runtime.eager.names import node_name
from srcgrad.runtime.eager.tensor import Tensor, apply
from srcgrad.runtime.rules import cast, getitem, item
from srcgrad.runtime.rules.primitives import NO_GRADIENT, NUMPY_BINDINGS, lookup

__all__ = ["Array", "as_array_leaf", "as_array_constant", "full_of", "plain_array"]


def _frozen(value: Any) -> Any:
    """``value`` with its plain NumPy arrays copied: the graph keeps what it reads for
    backward, and the function may write into its own arrays (``c *= 2`` on a constant)
    after using them, which the engine would not see (it sees writes into Arrays only)."""
    if type(value) is np.ndarray:
        return value.copy()
    if type(value) in (list, tuple):
        return type(value)(_frozen(v) for v in value)
    return value


def _plain(values: tuple) -> list:
    """The plain data of Arrays among ``values`` (outside the graph), after checking that
    none was written since it was read as a view."""
    for v in values:
        _check_current(v)
    return [v._data if isinstance(v, Tensor) else v for v in values]


def _parameter(prim: Any, key: str, value: Any) -> Any:
    """A static parameter's plain value (``np.clip(x, lo, hi)`` with array bounds): refused
    when it carries a gradient, which the rule does not give back."""
    if isinstance(value, Tensor):
        if value._requires_grad:
            raise TypeError(f"{prim.name}(): the argument {key}= carries a gradient, which "
                            "srcgrad's eager run does not follow into a parameter")
        return value._data
    return value


def _apply(prim: Any, args: tuple, params: dict) -> Any:
    for a in args:
        _check_current(a)
    args = _frozen(tuple(args))
    params = {k: _frozen(_parameter(prim, k, v)) for k, v in params.items()}
    out = apply(prim, node_name(prim, args, params), args, params, numpy_semantics=True)
    out.__class__ = Array
    if prim is _COPY and out._data.ndim == 0:      # np.copy of a scalar: a 0-d array
        _remember(_ARRAYS_0D, out, None)
    for a in args:                 # NumPy handed back a view (reshape, transpose, ...)
        if isinstance(a, Tensor) and out._data.size and out._base is None and \
                np.shares_memory(out._data, a._data):
            out._base, out._view_key = a, ("unmodelled", None)
            out._version_counter = a._version_counter
            _note(a)
            _note(out)
            break
    return out


# 0-d Arrays that are NumPy arrays, not NumPy scalars (np.copy of a number, a 0-d argument):
# ``a *= 2`` writes into them, where it rebinds a scalar (a sum, a float argument).
_ARRAYS_0D: dict[int, Any] = {}
_COPY = lookup(np.copy)


def _is_array_0d(t: Tensor) -> bool:
    entry = _ARRAYS_0D.get(id(t))
    return entry is not None and entry[0]() is t


def _full_like(a: Any, fill: Tensor, rest: tuple, kwargs: dict) -> Array:
    """``np.full_like(a, x)`` where ``x`` carries a gradient: ``np.full`` of ``x``."""
    if rest or set(kwargs) - {"fill_value", "dtype"}:
        raise TypeError("np.full_like with a value that carries a gradient is only followed "
                        "as np.full_like(a, value, dtype=...)")
    data = a._data if isinstance(a, Tensor) else np.asarray(a)
    return full_of(fill, data.shape, kwargs.get("dtype") or data.dtype)


def full_of(fill: Any, shape: Any, dtype: Any = None) -> Array:
    """``np.full(shape, fill, dtype)`` of a ``fill`` that carries a gradient, recorded."""
    from srcgrad.runtime.rules.primitives import PRIMITIVES
    if not isinstance(fill, Tensor):
        fill = as_array_constant(np.asarray(fill))
    dtype = fill._data.dtype if dtype is None else dtype
    return _apply(PRIMITIVES["full_of"], (fill,), {"shape": shape, "dtype": np.dtype(dtype)})


def _inplace(name: str) -> Any:
    """``a += b`` on an Array: Tensor's method (which, inside a dual level, writes the tangent
    too: :mod:`srcgrad.runtime.eager.forward_ad`) after the Array's own checks."""
    method = getattr(Tensor, name)

    def write(self: Array, other: Any) -> Array:
        if self._data.ndim == 0 and self._base is None and not _is_array_0d(self):
            # NumPy's 0-d results (a sum, a float argument) are scalars: ``s += v`` rebinds
            return getattr(self, name.replace("__i", "__", 1))(other)
        _check_writable(self, other)
        own_data(self)
        out = method(self, _frozen(other))
        _written(self)
        return out
    write.__name__ = name
    return write


# ``np.add.reduce(a, axis=0)`` is ``np.sum(a, axis=0)`` (a ufunc's reduce runs on axis 0 by
# default), ``np.multiply.accumulate`` is ``np.cumprod``: recorded as those.
_REDUCTIONS = {(np.add, "reduce"): np.sum, (np.multiply, "reduce"): np.prod,
               (np.maximum, "reduce"): np.max, (np.minimum, "reduce"): np.min,
               (np.add, "accumulate"): np.cumsum, (np.multiply, "accumulate"): np.cumprod}


def _into(outs: tuple, ufunc: np.ufunc, inputs: tuple) -> Any:
    """``ufunc(*inputs, out=outs)``: the result written into the Array ``outs[0]`` as NumPy
    writes it (cast under NumPy's ``same_kind`` rule, broadcast to its shape), and returned."""
    if ufunc.nout != 1:
        return NotImplemented
    out, result = outs[0], ufunc(*inputs)
    kind = np.result_type(getattr(result, "_data", result))
    if not np.can_cast(kind, out.dtype, casting="same_kind"):
        raise TypeError(f"Cannot cast ufunc output from {kind!r} to {out.dtype!r} with "
                        "casting rule 'same_kind'")                  # as NumPy refuses it
    out[...] = result
    return out


class Array(Tensor):
    """A NumPy-semantics view of the eager engine (see the module docstring)."""

    __slots__ = ()

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if (ufunc, method) in _REDUCTIONS and len(inputs) == 1 and \
                set(kwargs) <= {"axis", "keepdims"} and method != "__call__":
            keep = {"keepdims": True} if kwargs.get("keepdims") else {}
            return _REDUCTIONS[ufunc, method](inputs[0], axis=kwargs.get("axis", 0), **keep)
        if method == "__call__" and set(kwargs) == {"out"} and isinstance(kwargs["out"][0], Array):
            return _into(kwargs["out"], ufunc, inputs)
        if method == "__call__" and not kwargs and ufunc in NO_GRADIENT:
            return ufunc(*_plain(inputs))
        if method != "__call__" or kwargs or ufunc not in NUMPY_BINDINGS:
            fun = ufunc if method == "__call__" else getattr(ufunc, method)
            return NotImplemented if "out" in kwargs or carries_gradient((inputs, kwargs)) \
                else outside_graph(fun, inputs, kwargs)   # constants: NumPy's own result
        return _apply(NUMPY_BINDINGS[ufunc][0], inputs, {})

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        if func in (np.shape, np.ndim, np.size):
            return func(args[0]._data, *args[1:], **kwargs)
        if func is np.full_like:
            fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
            if isinstance(fill, Tensor) and fill._requires_grad:
                return _full_like(args[0], fill, args[2:], kwargs)
        if func in (np.zeros_like, np.ones_like, np.empty_like, np.full_like):
            plain = [a._data if isinstance(a, Tensor) else a for a in args]
            out = Array._make(func(*plain, **kwargs))   # a new array, outside the graph
            out.__class__ = Array
            return out
        if func in NO_GRADIENT:                  # a truth value, indices: no node
            return func(*_plain(args), **dict(zip(kwargs, _plain(tuple(kwargs.values())))))
        binding = NUMPY_BINDINGS.get(func)
        if binding is None:
            if not carries_gradient((args, kwargs)):   # constants: NumPy's own result
                return outside_graph(func, args, kwargs)
            at, _ = where()
            raise TypeError(f"{at + ': ' if at else ''}numpy.{func.__name__} has no srcgrad "
                            "derivative rule; register one with srcgrad.defvjp")
        return binding[1](*args, **kwargs)

    _for_saving = saved_alias

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
        _check_current(self)
        index = _frozen(index)
        keys = index if isinstance(index, tuple) else (index,)
        if len(keys) == self._data.ndim and all(
                isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in keys):
            return _apply(getitem, (self,), {"index": index})   # NumPy: a scalar, a copy
        out = Tensor.__getitem__(self, index)  # a basic index is a view: one version counter
        out.__class__ = Array
        if out._base is self:
            _note(self)
            _note(out)
        return out

    def __setitem__(self, index: Any, value: Any) -> None:
        _check_writable(self, value)
        _check_current(value)
        own_data(self)
        Tensor.__setitem__(self, _frozen(index), value)
        _written(self)

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def __float__(self) -> float:
        if self._requires_grad and not formatting(sys._getframe(1)):
            raise RuntimeError(dropped("is turned into a Python float (float())", False))
        return float(self._data)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self._requires_grad:
            if not converting_for_draw(dtype):
                raise RuntimeError(dropped("is turned into a plain NumPy array"))
            return self._data.astype(dtype)     # a discrete draw's parameter: a copy it reads
        _remember(_ESCAPED, self, None)
        return self._data if dtype is None else self._data.astype(dtype, copy=False)

    def item(self) -> Any:
        return _apply(item, (self,), {})

    def tolist(self) -> Any:
        if self._requires_grad:
            raise RuntimeError(dropped("is turned into Python numbers (tolist())", False))
        return self._data.tolist()

    def astype(self, dtype: Any) -> Array:
        return _apply(cast, (self,), {"dtype": np.dtype(dtype)})

    def reshape(self, *shape: Any) -> Array:
        return np.reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes: Any) -> Array:
        return np.transpose(self, (axes[0] if len(axes) == 1 else axes) if axes else None)

    def __repr__(self) -> str:
        return f"Array({self._data!r}, requires_grad={self._requires_grad})"

    def __str__(self) -> str:                 # print(loss) shows what NumPy shows
        return str(self._data)

    def __format__(self, spec: str) -> str:   # f"{loss:.3f}", as NumPy formats its value
        return format(self._data, spec)


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
                    "argmax": np.argmax, "argmin": np.argmin, "argsort": np.argsort,
                    "cumprod": np.cumprod, "diagonal": np.diagonal}.items():
    setattr(Array, _name, _method(_fun))


def _no_gradient(fun: Any) -> Any:
    """A method whose result carries no gradient (a truth value, indices, a piecewise
    constant): NumPy's on the plain data, outside the graph."""
    def method(self: Array, *args: Any, **kwargs: Any) -> Any:
        if "out" in kwargs:
            raise TypeError(f"srcgrad's eager run does not write into out= ({fun.__name__})")
        _check_current(self)
        plain = [a._data if isinstance(a, Tensor) else a for a in args]
        return fun(self._data, *plain, **{k: v._data if isinstance(v, Tensor) else v
                                          for k, v in kwargs.items()})
    method.__name__ = fun.__name__
    return method


for _name, _fun in {"all": np.all, "any": np.any, "round": np.round, "nonzero": np.nonzero,
                    "argpartition": np.argpartition, "searchsorted": np.searchsorted}.items():
    setattr(Array, _name, _no_gradient(_fun))

for _dunder, _fun in {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                      "truediv": np.divide, "matmul": np.matmul, "pow": np.power,
                      "mod": np.remainder, "floordiv": np.floor_divide}.items():
    setattr(Array, f"__{_dunder}__", lambda self, other, _f=_fun: _f(self, other))
    setattr(Array, f"__r{_dunder}__", lambda self, other, _f=_fun: _f(other, self))
for _dunder, _fun in {"lt": np.less, "le": np.less_equal, "gt": np.greater,
                      "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}.items():
    setattr(Array, f"__{_dunder}__", lambda self, other, _f=_fun: _f(self, other))
for _name in ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__"):
    setattr(Array, _name, _inplace(_name))
Array.__neg__ = lambda self: np.negative(self)
Array.__abs__ = lambda self: np.abs(self)
Array.__hash__ = lambda self: id(self)
_more.install(Array)                # fill, put, clip(min=), .real, refusals of .flat ...


def as_array_leaf(value: Any) -> Array:
    """A leaf Array requiring grad, holding ``value`` (a float becomes a 0-d float64 array)."""
    data = np.array(value, dtype=np.float64) if isinstance(value, float) else np.array(value)
    leaf = Array._make(data)
    leaf.__class__ = Array
    leaf._requires_grad = True
    if isinstance(value, np.ndarray) and value.ndim == 0:
        _remember(_ARRAYS_0D, leaf, None)
    return leaf


def plain_array(value: Array) -> Any:
    """What NumPy holds where the eager run holds ``value``: its array (a float64 scalar for
    a 0-d result NumPy gives as a scalar)."""
    data = value._data
    return data[()] if data.ndim == 0 and not _is_array_0d(value) else data


def private_copy(leaf: Array, array: bool | None = None) -> Array:
    """A copy of ``leaf`` the function may write into (a leaf itself may not be written);
    ``array``: whether a 0-d one is a NumPy array (written in place) rather than a float
    (default: as ``leaf`` is)."""
    with grad_mode.enable_grad():
        out = _apply(_COPY, (leaf,), {})
    if not (_is_array_0d(leaf) if array is None else array):   # a float stays a scalar
        _ARRAYS_0D.pop(id(out), None)
    return out


def as_array_constant(value: np.ndarray) -> Array:
    """An Array without grad holding ``value`` (a float array the function reads or makes),
    so that NumPy code that writes Arrays into it, or calls its methods with Arrays
    (``data.dot(w)``), is recorded with NumPy's semantics."""
    out = Array._make(value)
    out.__class__ = Array
    if value.ndim == 0:
        _remember(_ARRAYS_0D, out, None)
    return out
