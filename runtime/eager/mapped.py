"""Python functions mapped over an Array's elements or slices, as NumPy maps them.

``np.vectorize(f)(x)`` and ``np.apply_along_axis(f, axis, x)`` call ``f`` from NumPy's own
code, which turns each operand into a plain array first (dropping its gradient).  With
Arrays among the operands, the eager run calls ``f`` itself, on the Arrays' elements (0-d
Arrays) or slices, in NumPy's order, and joins the results with a recorded ``np.stack``,
with the shapes and dtypes NumPy gives:

- ``vectorize``: the operands broadcast together; without ``otypes`` the dtype of each output
  is that of ``f``'s result on the first elements (``f`` then runs on them a second time,
  unless ``cache=True``, as NumPy does); ``otypes`` casts; ``excluded`` arguments are passed
  as they are; ``signature=`` is refused;
- ``apply_along_axis``: the results, cast to the first one's dtype, take the place of
  ``axis``.

Both run so in the eager run whatever the operands (the function may read values that carry a
gradient from its closure); with plain operands and plain results they give NumPy's answer.
Subclasses of ndarray (a matrix, a masked array) are left to NumPy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.runtime.eager.tensor import Tensor

__all__ = ["Vectorize", "apply_along_axis", "holds_tensor", "mapping_stand_in"]


def holds_tensor(value: Any) -> bool:
    if isinstance(value, Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(holds_tensor(v) for v in value.values())
    return False


def _dtype(value: Any) -> np.dtype:
    return value._data.dtype if isinstance(value, Tensor) else np.asarray(value).dtype


def _joined(values: list, shape: tuple, dtype: np.dtype) -> Any:
    """The results of the elements (in C order) as one array of ``shape`` and ``dtype``."""
    if any(np.ndim(v._data if isinstance(v, Tensor) else v) for v in values):
        raise ValueError("setting an array element with a sequence.")
    if not any(isinstance(v, Tensor) for v in values):
        held = np.empty(len(values), dtype=object)
        held[:] = values
        return np.asanyarray(held.reshape(shape), dtype=dtype)
    out = np.reshape(np.stack([v if isinstance(v, Tensor) else np.asarray(v) for v in values]),
                     shape)
    return out if out.dtype == dtype else out.astype(dtype)


class Vectorize:
    """``np.vectorize`` in the eager run: NumPy's own object, called as the module
    docstring says when its operands hold Arrays."""

    def __init__(self, pyfunc: Any = np._NoValue, otypes: Any = None, doc: Any = None,
                 excluded: Any = None, cache: bool = False, signature: Any = None) -> None:
        self.__dict__["_real"] = pyfunc if isinstance(pyfunc, np.vectorize) else \
            np.vectorize(pyfunc, otypes=otypes, doc=doc, excluded=excluded, cache=cache,
                         signature=signature)
        self.__dict__["srcgrad_stands_in_for"] = self._real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        real = self._real
        if real.pyfunc is np._NoValue:                 # @np.vectorize(otypes=...) on f
            return Vectorize(real(*args, **kwargs))
        if real.signature is not None:
            if holds_tensor((args, kwargs)):
                raise TypeError("np.vectorize(..., signature=...) of arrays the eager run "
                                "holds is not followed by srcgrad (map the function without "
                                "signature=)")
            return real(*args, **kwargs)
        excluded = real.excluded
        pos = [i for i in range(len(args)) if i not in excluded]
        names = [k for k in kwargs if k not in excluded]
        if not pos and not names or any(_subclass(args[i]) for i in pos) or \
                any(_subclass(kwargs[k]) for k in names):
            return real(*args, **kwargs)             # NumPy's own (a matrix, a masked array)

        def call(values: list) -> Any:
            a, kw = list(args), dict(kwargs)
            for i, v in zip(pos, values):
                a[i] = v
            for k, v in zip(names, values[len(pos):]):
                kw[k] = v
            return real.pyfunc(*a, **kw)
        operands = [args[i] for i in pos] + [kwargs[k] for k in names]
        return _vectorized(call, [x if isinstance(x, Tensor) else np.asanyarray(x)
                                  for x in operands], real.otypes, real.cache)


def _subclass(value: Any) -> bool:
    return isinstance(value, np.ndarray) and type(value) is not np.ndarray


def _vectorized(call: Callable, operands: list, otypes: Any, cache: bool) -> Any:
    shape = np.broadcast_shapes(*(x.shape for x in operands))
    size = math.prod(shape)
    if otypes is None and size == 0:
        raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is set")
    spread = [np.broadcast_to(x, shape) if isinstance(x, Tensor) else
              np.broadcast_to(np.asanyarray(x, dtype=object), shape) for x in operands]
    cells = list(np.ndindex(shape))
    first = None
    if otypes is not None:                  # NumPy keeps them as a list of type codes
        otypes = "".join(np.dtype(t).char for t in otypes)
    else:                                   # NumPy's first call, on the first elements
        first = call([x[cells[0]] if isinstance(x, Tensor) else np.asanyarray(o).flat[0]
                      for x, o in zip(spread, operands)])
        outs = first if isinstance(first, tuple) else (first,)
        otypes = "".join(_dtype(o).char for o in outs)
    results = [first if cache and k == 0 else call([x[c] for x in spread])
               for k, c in enumerate(cells)]
    if len(otypes) == 1:
        return _joined(results, shape, np.dtype(otypes))
    return tuple(_joined([r[j] for r in results], shape, np.dtype(t))
                 for j, t in enumerate(otypes))


def apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """``np.apply_along_axis`` of an Array (see the module docstring)."""
    if _subclass(arr):
        return np.apply_along_axis(func1d, axis, arr, *args, **kwargs)   # NumPy's own
    if not isinstance(arr, Tensor):
        arr = np.asarray(arr)
    nd = arr.ndim
    axis = int(np.lib.array_utils.normalize_axis_index(axis, nd))
    moved = np.moveaxis(arr, axis, -1)
    cells = list(np.ndindex(moved.shape[:-1]))
    if not cells:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = [func1d(moved[c], *args, **kwargs) for c in cells]
    first = results[0]
    dtype = _dtype(first)
    shape = tuple(np.shape(first._data if isinstance(first, Tensor) else first))
    stacked = np.stack([np.broadcast_to(r if isinstance(r, Tensor) else np.asarray(r), shape)
                        for r in results])      # NumPy assigns each into its cell
    stacked = np.reshape(stacked, moved.shape[:-1] + shape)
    if stacked.dtype != dtype:
        stacked = stacked.astype(dtype)
    dims = list(range(stacked.ndim))
    rank = len(shape)
    order = dims[:axis] + dims[stacked.ndim - rank:] + dims[axis:stacked.ndim - rank]
    return np.transpose(stacked, order)


def mapping_stand_in(value: Any) -> Any:
    """What the eager run shows for ``np.vectorize`` (the class) or one of its objects, and
    for ``np.apply_along_axis``: these, whose function may read values that carry a
    gradient from its closure (None for anything else)."""
    if value is np.vectorize:
        return Vectorize
    if value is np.apply_along_axis:
        return apply_along_axis
    return Vectorize(value) if isinstance(value, np.vectorize) else None
