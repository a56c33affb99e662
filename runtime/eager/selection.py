"""``torch.Tensor``'s selection and rearrangement methods: narrow, split, gather, sort, topk …

Views (``narrow``, ``select``, ``unbind``, the pieces of ``split``) are basic indexing, so they
share their base's data and version counter as PyTorch's views do; the node names are
PyTorch 2.13's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcgrad.runtime import rules as R
from srcgrad.runtime.eager.names import _return_type
from srcgrad.runtime.eager.tensor import Tensor, apply, as_array
from srcgrad.runtime.eager.views import _permute, _reshape, _transpose, _view_op
from srcgrad.runtime.rules.primitives import lookup

P = lookup
return_sort, return_topk = _return_type("sort"), _return_type("topk")


def _index(self: Tensor, dim: int, key: Any, name: str) -> Tensor:
    """``self[..., key, ...]`` with ``key`` at ``dim``: a view recorded as ``name``."""
    index = (slice(None),) * (dim % self._data.ndim) + (key,)
    return _view_op(R.getitem, name, {"index": index}, self, ("index", index))


def _narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    return _index(self, dim, slice(start, start + length), "SliceBackward0")


def _select(self: Tensor, dim: int, index: int) -> Tensor:
    return _index(self, dim, int(index), "SelectBackward0")


def _unbind(self: Tensor, dim: int = 0) -> tuple:
    return tuple(_index(self, dim, i, "UnbindBackward0") for i in range(self._data.shape[dim]))


def _pieces(self: Tensor, sizes: list, dim: int, name: str) -> tuple:
    out, start = [], 0
    for n in sizes:
        out.append(_index(self, dim, slice(start, start + n), name))
        start += n
    return tuple(out)


def _split(self: Tensor, split_size: Any, dim: int = 0) -> tuple:
    total = self._data.shape[dim]
    if isinstance(split_size, (list, tuple)):
        if sum(split_size) != total:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {total} "
                               f"(input tensor's size at dimension {dim}), but got "
                               f"split_sizes={list(split_size)}")
        return _pieces(self, list(split_size), dim, "SplitWithSizesBackward0")
    sizes = [split_size] * (total // split_size) + ([total % split_size] if total % split_size
                                                     else [])
    return _pieces(self, sizes, dim, "SplitBackward0")


def _chunk(self: Tensor, chunks: int, dim: int = 0) -> tuple:
    total = self._data.shape[dim]
    return _split(self, -(-total // chunks), dim)


def _tensor_split(self: Tensor, sections: int, dim: int = 0) -> tuple:
    total = self._data.shape[dim]
    base, extra = divmod(total, sections)
    sizes = [base + 1] * extra + [base] * (sections - extra)
    return _pieces(self, sizes, dim, "SliceBackward0")


Tensor.narrow = _narrow
Tensor.select = _select
Tensor.unbind = _unbind
Tensor.split = _split
Tensor.chunk = _chunk
Tensor.tensor_split = _tensor_split

# ------------------------------------------------------------------- gathering by indices


def _index_select(self: Tensor, dim: int, index: Tensor) -> Tensor:
    if not isinstance(dim, int):
        raise TypeError(f"index_select(): argument 'dim' (position 1) must be int, not "
                        f"{type(dim).__name__}")
    key = (slice(None),) * (dim % self._data.ndim) + (np.asarray(as_array(index)),)
    return apply(R.getitem, "IndexSelectBackward0", (self,), {"index": key})


def _gather(self: Tensor, dim: int, index: Tensor) -> Tensor:
    if not isinstance(dim, int):
        raise TypeError(f"gather(): argument 'dim' (position 1) must be int, not "
                        f"{type(dim).__name__}")
    return apply(P(np.take_along_axis), "GatherBackward0", (self, as_array(index)),
                 {"axis": dim})


def _take(self: Tensor, index: Tensor) -> Tensor:
    return apply(P(np.take), "TakeBackward0", (self,), {"indices": as_array(index),
                                                        "axis": None})


Tensor.index_select = _index_select
Tensor.gather = _gather
def _take_along_dim(self: Tensor, indices: Tensor, dim: int) -> Tensor:
    # PyTorch broadcasts ``self`` against the indices first (an ExpandBackward0, always)
    shape = list(np.broadcast_shapes(self._data.shape, as_array(indices).shape))
    shape[dim] = self._data.shape[dim]
    return _gather(self.expand(*shape), dim, indices)


Tensor.take_along_dim = _take_along_dim
Tensor.take = _take
Tensor.masked_select = lambda self, mask: apply(
    R.getitem, "MaskedSelectBackward0", (self,),
    {"index": np.broadcast_to(as_array(mask), self._data.shape)})

# -------------------------------------------------------------------------------- ordering


def _sort(self: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
    data = -self._data if descending else self._data
    idx = np.argsort(data, axis=dim, kind="stable")
    values = apply(R.take_along, "SortBackward0", (self,),
                   {"indices": idx, "axis": dim, "keepdims": True})
    return return_sort(values, Tensor._make(idx.astype(np.int64)))


def _argsort(self: Tensor, dim: int = -1, descending: bool = False, stable: bool = False
             ) -> Tensor:
    data = -self._data if descending else self._data
    return Tensor._make(np.argsort(data, axis=dim, kind="stable").astype(np.int64))


def _topk(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
          ) -> Any:
    data = -self._data if largest else self._data
    idx = np.take(np.argsort(data, axis=dim, kind="stable"), np.arange(k), axis=dim)
    values = apply(R.take_along, "TopkBackward0", (self,),
                   {"indices": idx, "axis": dim, "keepdims": True})
    return return_topk(values, Tensor._make(idx.astype(np.int64)))


Tensor.sort = _sort
Tensor.argsort = _argsort
Tensor.topk = _topk

# ------------------------------------------------------------------------- rearrangement


def _unflatten(self: Tensor, dim: int, sizes: Any) -> Tensor:
    shape = self._data.shape
    dim %= len(shape)
    return _reshape(self, *(shape[:dim] + tuple(sizes) + shape[dim + 1:]))


def _movedim(self: Tensor, source: Any, destination: Any) -> Tensor:
    src = [s % self._data.ndim for s in (source if isinstance(source, (tuple, list))
                                         else (source,))]
    dst = [d % self._data.ndim for d in (destination if isinstance(destination, (tuple, list))
                                         else (destination,))]
    rest = [i for i in range(self._data.ndim) if i not in src]
    out = [None] * self._data.ndim
    for s, d in zip(src, dst):
        out[d] = s
    it = iter(rest)
    axes = tuple(a if a is not None else next(it) for a in out)
    return _permute(self, *axes)


def _adjoint(self: Tensor) -> Tensor:
    return _transpose(self, -2, -1)


Tensor.ravel = lambda self: _reshape(self, -1)
Tensor.unflatten = _unflatten
Tensor.movedim = Tensor.moveaxis = _movedim
Tensor.swapdims = Tensor.transpose
Tensor.adjoint = _adjoint
Tensor.mH = property(_adjoint)
Tensor.H = property(lambda self: _transpose(self, 0, 1) if self._data.ndim == 2 else self)
Tensor.broadcast_to = lambda self, size: self.expand(*size)
Tensor.tile = lambda self, dims: apply(
    P(np.tile), "RepeatBackward0", (self,),
    {"reps": (1,) * (self._data.ndim - len(dims)) + tuple(dims)})
Tensor.rot90 = lambda self, k=1, dims=(0, 1): apply(P(np.rot90), "Rot90Backward0", (self,),
                                                  {"k": k, "axes": tuple(dims)})
Tensor.fliplr = lambda self: apply(P(np.flip), "FlipBackward0", (self,), {"axis": 1})
Tensor.flipud = lambda self: apply(P(np.flip), "FlipBackward0", (self,), {"axis": 0})


def _sum_to_size(self: Tensor, *size: Any) -> Tensor:
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    if tuple(shape) == self._data.shape:
        return self
    return apply(R.sum_to, "SumBackward1", (self,), {"shape": tuple(shape)})


Tensor.sum_to_size = _sum_to_size
