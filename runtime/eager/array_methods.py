"""More of ``np.ndarray``'s surface on Arrays, with NumPy's signatures and semantics.

:mod:`srcgrad.runtime.eager.ndarray` installs these on ``Array``:

- writes in place, recorded as ``a[...] = v`` is (the same version and view bookkeeping):
  ``a.fill(v)``, ``a.partition(k)``, ``a.put(ind, v)`` and ``np.put``, and ``ufunc.at``
  (``np.add.at(out, idx, v)``: repeated indices add up; ``np.subtract.at`` too);
- ``a.clip(min=..., max=...)`` and ``np.clip``'s keywords, ``a.compress``, ``a.conj()``,
  ``a.real``, ``a.imag``, ``a.mT``, ``a.device`` as NumPy spells them;
- what carries no gradient (``a.strides``, ``a.tobytes()``): NumPy's answer for an Array
  that carries none, refused for one that does;
- what the engine cannot follow (``a.flat``, ``a.base``, ``a.resize``, ``a.ctypes``, raw
  memory): refused with a message naming it (never PyTorch's attribute of the same name).

Each NumPy call is first made on a plain copy of the data, so that a call NumPy refuses
raises NumPy's own error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcgrad.runtime.eager.constants import carries_gradient, dropped, where
from srcgrad.runtime.eager.mapped import apply_along_axis
from srcgrad.runtime.eager.tensor import Tensor
from srcgrad.runtime.rules.core import cast, unindex
from srcgrad.runtime.rules.core import item as _ITEM
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS

__all__ = ["METHODS", "PROPERTIES", "REFUSED", "PLAIN_ONLY", "FUNCTIONS", "ufunc_at", "install"]


def _plain(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value._data
    if type(value) in (list, tuple):
        return type(value)(_plain(v) for v in value)
    return value


def _where() -> str:
    at, _ = where()
    return at + ": " if at else ""


# ------------------------------------------------------------------------- writes in place

def fill(self: Any, value: Any) -> None:
    """``a.fill(v)``: every element set to ``v`` (cast to ``a``'s dtype)."""
    self._data.copy().fill(_plain(value))          # NumPy's errors (a sequence, a cast)
    self[...] = value


def partition(self: Any, kth: Any, axis: int = -1, kind: str = "introselect",
              order: Any = None) -> None:
    """``a.partition(k)``: in place, as ``a.sort()``."""
    if order is not None:
        raise TypeError("srcgrad's eager run does not partition structured arrays (order=)")
    self._data.copy().partition(_plain(kth), axis=axis, kind=kind)
    self[...] = np.partition(np.copy(self), kth, axis=axis, kind=kind)


def put(self: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    """``a.put(ind, v)`` (``np.put``): ``a.flat[ind] = v``, ``v`` repeated as needed, the
    last of repeated positions kept, indices wrapped or clipped by ``mode``."""
    ind = np.asarray(_plain(ind))
    count = ind.size
    self._data.copy().put(ind, np.zeros(max(count, 1)), mode=mode)    # NumPy's errors
    values = v if isinstance(v, Tensor) else np.asarray(v)
    if count == 0 or np.size(values) == 0:
        return
    marker = np.full(self._data.size, -1)
    marker.put(ind, np.arange(count), mode=mode)   # which of the values each position keeps
    positions = np.nonzero(marker >= 0)[0]
    picks = marker[positions] % np.size(values)
    self[np.unravel_index(positions, self._data.shape)] = np.take(np.ravel(values), picks)


_AT = {np.add: np.add, np.subtract: np.subtract}


def ufunc_at(ufunc: np.ufunc, *inputs: Any, **kwargs: Any) -> Any:
    """``ufunc.at(a, indices, b)`` with Arrays among its operands: NumPy's values, computed
    on a copy, written into the Array ``a``; for ``np.add.at`` and ``np.subtract.at``,
    recorded as ``a ± (b placed at indices, repeats adding up)``."""
    plain = [_plain(x) for x in inputs]
    a = inputs[0] if inputs else None
    if not isinstance(a, Tensor) or kwargs:
        if carries_gradient((inputs, kwargs)):
            raise RuntimeError(dropped(f"is written by np.{ufunc.__name__}.at into an array "
                                       "the eager run does not hold"))
        return ufunc.at(*plain, **kwargs)     # NumPy's own (its errors, its writes)
    expected = a._data.copy()
    ufunc.at(expected, *plain[1:])            # NumPy's values, and its errors
    if not carries_gradient(inputs):
        a[...] = expected
        return None
    if ufunc not in _AT or len(inputs) != 3:
        raise TypeError(f"{_where()}np.{ufunc.__name__}.at of values that carry a gradient "
                        "is not followed by srcgrad's eager run (np.add.at and "
                        "np.subtract.at are)")
    index = plain[1]
    part = np.broadcast_to(inputs[2], a._data[index].shape)
    result = _AT[ufunc](a, unindex(part, index=index, shape=a._data.shape))
    if result._data.flags.writeable and not np.array_equal(result._data, expected):
        result._data[...] = expected                # NumPy adds one value at a time
    a[...] = result
    return None


# ------------------------------------------------------------------------ NumPy's spellings

def clip(self: Any, min: Any = None, max: Any = None, out: Any = None, **kwargs: Any) -> Any:
    """``a.clip(min=..., max=...)``: ``np.clip(a, min, max)``."""
    if out is not None or kwargs:
        raise TypeError("srcgrad's eager run does not follow clip with out= or ufunc keywords")
    self._data.clip(_plain(min), _plain(max))      # NumPy's errors
    if min is None and max is None:
        return np.copy(self)
    return NUMPY_BINDINGS[np.clip][1](self, min, max)


def _clip_call(a: Any, a_min: Any = np._NoValue, a_max: Any = np._NoValue, out: Any = None,
               *, min: Any = np._NoValue, max: Any = np._NoValue, **kwargs: Any) -> Any:
    """``np.clip`` with NumPy 2's ``min=``/``max=`` keywords."""
    lo = min if a_min is np._NoValue else a_min
    hi = max if a_max is np._NoValue else a_max
    lo, hi = (None if b is np._NoValue else b for b in (lo, hi))
    if isinstance(a, Tensor):
        return clip(a, lo, hi, out, **kwargs)
    if out is not None or kwargs:
        raise TypeError("srcgrad's eager run does not follow clip with out= or ufunc keywords")
    np.clip(np.asarray(a), _plain(lo), _plain(hi))  # NumPy's errors
    return NUMPY_BINDINGS[np.clip][1](a, lo, hi)


def compress(self: Any, condition: Any, axis: Any = None, out: Any = None) -> Any:
    """``a.compress(condition, axis)``: the slices where ``condition`` holds."""
    if out is not None:
        raise TypeError("srcgrad's eager run does not write into out= (compress)")
    condition = np.asarray(_plain(condition))
    self._data.compress(condition, axis=axis)       # NumPy's errors
    picks = np.nonzero(condition)[0]
    return np.take(self, picks, axis=axis)


def _mT(self: Any) -> Any:
    if self._data.ndim < 2:
        raise ValueError("matrix transpose with ndim < 2 is undefined")    # as NumPy
    return np.swapaxes(self, -1, -2)


def sort(self: Any, axis: int = -1, kind: Any = None, order: Any = None,
         stable: Any = None) -> None:
    """``a.sort()``: in place (PyTorch's ``sort`` returns values and indices)."""
    if order is not None:
        raise TypeError("srcgrad's eager run does not sort structured arrays (order=)")
    self._data.copy().sort(axis=axis, kind=kind, stable=stable)      # NumPy's errors
    kind = "stable" if stable else kind                  # NumPy's meaning of stable=True
    self[...] = np.sort(np.copy(self), axis=axis, kind=kind)     # sort saves its input


def view(self: Any, *args: Any, **kwargs: Any) -> Any:
    """``a.view()``: the same data under a second name (not PyTorch's reshape)."""
    if args or kwargs:
        raise TypeError("srcgrad's eager run does not reinterpret an array's bytes "
                        "(ndarray.view with a dtype or type)")
    return self[...]


def astype(self: Any, dtype: Any, order: str = "K", casting: str = "unsafe",
           subok: bool = True, copy: bool = True) -> Any:
    """``a.astype(dtype, casting=..., copy=...)`` (the memory order leaves values alone)."""
    np.empty(0, self._data.dtype).astype(dtype, order=order, casting=casting)  # its errors
    if not copy and np.dtype(dtype) == self._data.dtype:
        return self
    return _CAST(self, dtype)


def item(self: Any, *args: Any) -> Any:
    """``a.item()``, ``a.item(k)`` (a flat position), ``a.item(i, j)``."""
    self._data.item(*args)                                           # NumPy's errors
    if not args:
        return _ITEM(self)
    where = args[0] if len(args) == 1 else args
    if isinstance(where, (int, np.integer)):
        where = np.unravel_index(where % max(self._data.size, 1), self._data.shape)
    return _ITEM(self[tuple(int(k) for k in where)])


def _ordered(self: Any, order: str) -> str:
    """``order`` as C or F for this Array's values (``K`` and ``A`` follow its layout)."""
    if order in ("K", "A") and not self._data.flags.c_contiguous:
        return "F" if self._data.flags.f_contiguous else "C" if order == "A" else "K"
    return "C" if order in ("K", "A") else order


def reshape(self: Any, *shape: Any, order: str = "C", copy: Any = None) -> Any:
    """``a.reshape(shape, order=...)``: an F-order reshape reverses the axes around it."""
    shape = shape[0] if len(shape) == 1 else shape
    self._data.reshape(shape, order=order, copy=copy)                # NumPy's errors
    if _ordered(self, order) == "F":
        flipped = tuple(shape)[::-1] if isinstance(shape, (tuple, list)) else shape
        return np.transpose(np.reshape(np.transpose(self), flipped))
    return np.reshape(self, shape)


def ravel(self: Any, order: str = "C") -> Any:
    """``a.ravel(order=...)`` and ``a.flatten(order=...)``."""
    order = _ordered(self, order)
    if order == "K":
        raise TypeError("srcgrad's eager run does not follow ravel(order='K') of an array "
                        "stored in neither C nor F order")
    return np.ravel(np.transpose(self) if order == "F" else self)


def _typed(fun: Any) -> Any:
    """A reduction method whose ``dtype=`` casts the operand first, as NumPy's does."""
    def method(self: Any, *args: Any, dtype: Any = None, out: Any = None, **kw: Any) -> Any:
        if out is not None:
            raise TypeError(f"srcgrad's eager run does not write into out= ({fun.__name__})")
        if dtype is not None and np.dtype(dtype) != self._data.dtype:
            self = _CAST(self, dtype)
        return fun(self, *args, **kw)
    method.__name__ = fun.__name__
    return method


def _CAST(a: Any, dtype: Any) -> Any:
    return cast(a, dtype=np.dtype(dtype))


METHODS = {"fill": fill, "partition": partition, "put": put, "clip": clip, "sort": sort,
           "view": view, "astype": astype, "item": item, "reshape": reshape,
           "ravel": ravel, "flatten": lambda self, order="C": np.copy(ravel(self, order)),
           "copy": lambda self, order="K": np.copy(self),
           **{f.__name__: _typed(f) for f in (np.sum, np.prod, np.mean, np.cumsum,
                                               np.cumprod)},
           "compress": compress, "conj": lambda self: np.conjugate(self),
           "conjugate": lambda self: np.conjugate(self)}
PROPERTIES = {"real": lambda self: np.real(self), "imag": lambda self: np.imag(self),
              "mT": _mT, "device": lambda self: self._data.device}
FUNCTIONS = {np.put: lambda a, ind, v, mode="raise": put(a, ind, v, mode), np.clip: _clip_call,
             np.apply_along_axis: apply_along_axis}


# ------------------------------------------------------- what carries no gradient, refused

PLAIN_ONLY = ("strides", "tobytes", "tofile", "dump", "dumps", "byteswap")
"""NumPy's own answer for an Array without gradient (``byteswap(inplace=True)`` refused)."""

REFUSED = ("base", "flat", "flags", "ctypes", "data", "getfield", "setfield", "setflags",
           "resize", "choose", "to_device")
"""Refused whether or not the Array carries a gradient: raw memory, or what the engine's
bookkeeping cannot follow."""


def plain_only(name: str) -> property:
    def read(self: Any) -> Any:
        if carries_gradient(self):
            raise RuntimeError(dropped(f"is read by ndarray.{name}", False))
        if name == "byteswap":
            def byteswap(inplace: bool = False) -> Any:
                if inplace:
                    raise TypeError("srcgrad's eager run does not follow ndarray.byteswap("
                                    "inplace=True)")
                return self._data.byteswap()
            return byteswap
        return getattr(self._data, name)
    return property(read)


def refused(name: str) -> property:
    def read(self: Any) -> Any:
        raise TypeError(f"{_where()}ndarray.{name} is not offered by srcgrad's eager run "
                        "(it runs NumPy code on its own arrays, and cannot follow this one); "
                        "work on a copy made with np.array(...) of values without gradient")
    return property(read)


def install(cls: type) -> None:
    """Put this module's methods and properties on ``cls`` (the Array class), and its
    functions and ``ufunc.at`` in front of the class's NumPy dispatch."""
    ufuncs, functions = cls.__array_ufunc__, cls.__array_function__

    def array_ufunc(self: Any, ufunc: np.ufunc, method: str, *inputs: Any, **kw: Any) -> Any:
        if method == "at":                    # np.add.at(out, idx, v): a write
            return ufunc_at(ufunc, *inputs, **kw)
        return ufuncs(self, ufunc, method, *inputs, **kw)

    def array_function(self: Any, func: Any, types: Any, args: tuple, kw: dict) -> Any:
        if func in FUNCTIONS:                 # np.put, np.clip(a, min=...)
            return FUNCTIONS[func](*args, **kw)
        return functions(self, func, types, args, kw)
    cls.__array_ufunc__, cls.__array_function__ = array_ufunc, array_function
    for name, fun in METHODS.items():
        setattr(cls, name, fun)
    for name, fun in PROPERTIES.items():
        setattr(cls, name, property(fun))
    for name in PLAIN_ONLY:
        setattr(cls, name, plain_only(name))
    for name in REFUSED:
        setattr(cls, name, refused(name))
