"""Tensor views, indexing, writes in place, and conversions between dtypes and devices.

Views share their base's data and version counter, so that a write through either is seen
by both and a gradient that needs the overwritten value fails as PyTorch's does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcgrad.runtime import rules as R
from srcgrad.runtime.eager import dtypes, forward_ad, grad_mode
from srcgrad.runtime.eager import tensor as _tensor
from srcgrad.runtime.eager.engine import PrimNode, make_node
from srcgrad.runtime.eager.names import _dims, _index_name, _is_basic, unwrap_index
from srcgrad.runtime.eager.tensor import Tensor, apply, as_array
from srcgrad.runtime.rules.primitives import lookup

P = lookup
_state = grad_mode._state
COPY_SLICES = "torch::autograd::CopySlices"

# ---------------------------------------------------------------------------------------------
# Shape.


def _shape_arg(shape: tuple) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(int(s) for s in shape)


def _view_op(prim: Any, name: str, params: dict, self: Tensor, key: Any) -> Tensor:
    out = apply(prim, name, (self,), params)
    if np.shares_memory(out._data, self._data) if out._data.size else False:
        out._base = self
        out._view_key = key
        out._version_counter = self._version_counter
        if _tensor._forward_hook is not None:      # a dual level is open
            forward_ad.link_view(out)
    return out


def _reshape(self: Tensor, *shape: Any) -> Tensor:
    shape = _shape_arg(shape)
    size = self._data.size
    known = int(np.prod([n for n in shape if n != -1], dtype=np.int64))
    if (-1 not in shape and known != size) or (-1 in shape and (known == 0 or size % known)):
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {size}")
    return _view_op(P(np.reshape), "ViewBackward0", {"shape": shape}, self, ("reshape", None))


def _view(self: Tensor, *shape: Any) -> Tensor:
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)):
        return self.to(shape[0])
    if not self._data.flags.c_contiguous and self._data.size > 1:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return _reshape(self, *shape)


def _flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    shape = self._data.shape
    if not shape:
        return _reshape(self, 1)
    start, end = start_dim % len(shape), end_dim % len(shape)
    if start == end:
        return self
    new = shape[:start] + (int(np.prod(shape[start:end + 1])),) + shape[end + 1:]
    return _reshape(self, *new)


def _permute(self: Tensor, *dims: Any) -> Tensor:
    axes = _shape_arg(dims)
    return _view_op(P(np.transpose), "PermuteBackward0", {"axes": axes}, self,
                    ("transpose", axes))


def _transpose(self: Tensor, dim0: int, dim1: int) -> Tensor:
    axes = list(range(self._data.ndim))
    axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
    return _view_op(P(np.swapaxes), "TransposeBackward0", {"axis1": dim0, "axis2": dim1}, self,
                    ("transpose", tuple(axes)))


def _t(self: Tensor) -> Tensor:
    if self._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{self._data.ndim}D")
    if self._data.ndim < 2:
        return _view_op(P(np.reshape), "TBackward0", {"shape": self._data.shape}, self,
                        ("reshape", None))
    return _view_op(P(np.transpose), "TBackward0", {"axes": (1, 0)}, self,
                    ("transpose", (1, 0)))


def _squeeze(self: Tensor, dim: Any = None) -> Tensor:
    if dim is None:
        return _view_op(P(np.squeeze), "SqueezeBackward0", {}, self, ("reshape", None))
    dims = tuple(d for d in (dim if isinstance(dim, tuple) else (dim,))
                 if self._data.shape[d] == 1)
    return _view_op(P(np.squeeze), "SqueezeBackward1" if not isinstance(dim, tuple)
                    else "SqueezeBackward2", {"axis": dims}, self, ("reshape", None))


def _unsqueeze(self: Tensor, dim: int) -> Tensor:
    if dim < 0:
        dim += self._data.ndim + 1
    return _view_op(P(np.expand_dims), "UnsqueezeBackward0", {"axis": dim}, self,
                    ("reshape", None))


def _expand(self: Tensor, *sizes: Any) -> Tensor:
    shape = list(_shape_arg(sizes))
    lead = len(shape) - self._data.ndim
    for i, n in enumerate(self._data.shape):
        if shape[lead + i] == -1:
            shape[lead + i] = n
    return apply(P(np.broadcast_to), "ExpandBackward0", (self,), {"shape": tuple(shape)})


Tensor.reshape = _reshape
Tensor.view = _view
Tensor.view_as = lambda self, other: _view(self, *other.shape)
Tensor.reshape_as = lambda self, other: _reshape(self, *other.shape)
Tensor.flatten = _flatten
Tensor.permute = _permute
Tensor.transpose = _transpose
Tensor.swapaxes = _transpose
Tensor.t = _t
Tensor.T = property(lambda self: _permute(self, *reversed(range(self._data.ndim))))
Tensor.mT = property(lambda self: _transpose(self, -2, -1))
Tensor.squeeze = _squeeze
Tensor.unsqueeze = _unsqueeze
Tensor.expand = _expand
Tensor.expand_as = lambda self, other: _expand(self, *other.shape)
Tensor.repeat = lambda self, *sizes: apply(P(np.tile), "RepeatBackward0", (self,),
                                           {"reps": _shape_arg(sizes)})
Tensor.flip = lambda self, dims: apply(P(np.flip), "FlipBackward0", (self,),
                                       {"axis": _dims(dims)})
Tensor.roll = lambda self, shifts, dims=None: apply(P(np.roll), "RollBackward0", (self,),
                                                   {"shift": shifts, "axis": dims})
Tensor.tril = lambda self, diagonal=0: apply(P(np.tril), "TrilBackward0", (self,),
                                             {"k": diagonal})
Tensor.triu = lambda self, diagonal=0: apply(P(np.triu), "TriuBackward0", (self,),
                                             {"k": diagonal})
Tensor.contiguous = lambda self, *a, **k: self
Tensor.clone = lambda self, *, memory_format=None: apply(P(np.copy), "CloneBackward0", (self,))


def cat(tensors: Any, dim: int = 0) -> Tensor:
    return apply(R.concatenate, "CatBackward0", tuple(tensors), {"axis": dim})


def stack(tensors: Any, dim: int = 0) -> Tensor:
    return apply(R.stack, "StackBackward0", tuple(tensors), {"axis": dim})


# ---------------------------------------------------------------------------------------------
# Indexing, read and write.


def _getitem(self: Tensor, index: Any) -> Tensor:
    index = unwrap_index(index)
    try:
        out = apply(R.getitem, _index_name(index), (self,), {"index": index})
    except IndexError as e:          # NumPy says axis where PyTorch says dimension
        raise IndexError(str(e).replace(" for axis ", " for dimension ")) from None
    if _is_basic(index) and out._data.size:
        out._base = self
        out._view_key = ("index", index)
        out._version_counter = self._version_counter
        if _tensor._forward_hook is not None:      # a dual level is open
            forward_ad.link_view(out)
    return out


def _iter(self: Tensor) -> Any:
    if self._data.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return (apply(R.getitem, "UnbindBackward0", (self,), {"index": i})
            for i in range(self._data.shape[0]))


Tensor.__getitem__ = _getitem
Tensor.__iter__ = _iter


def _check_inplace(self: Tensor) -> None:
    if not _state.enabled:
        return
    if self._grad_fn is None and self._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = self._base
    while base is not None:
        if base._grad_fn is None and base._requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        base = base._base


def _snapshot(self: Tensor) -> Tensor:
    """The Tensor as it is before an in-place write: same graph position, own version."""
    old = Tensor._make(self._data, self._grad_fn, self._requires_grad)
    old._output_nr = self._output_nr
    if self._grad_fn is None and self._requires_grad:
        old._acc_ref = self._acc_ref
    return old


def _rebind(self: Tensor, node: PrimNode | None) -> None:
    """After an in-place write: bump the version and make ``node`` this Tensor's grad_fn."""
    self._version_counter[0] += 1
    if node is None:
        return
    self._grad_fn = node
    self._output_nr = 0
    self._requires_grad = True
    if getattr(node, "ans", None) is not None:
        node.ans = self._data
        node._ans_counter = self._version_counter
        node._ans_version = self._version_counter[0]
    if self._base is not None:
        _rebase(self)


def _rebase(view: Tensor) -> None:
    """An in-place write through a view also changes its base: record that in the base."""
    base = view._base
    kind, key = view._view_key
    old = _snapshot(base)
    if kind == "index":
        args, prim, params = (old, view), R.index_put, {"index": key}
    elif kind == "transpose":
        args, prim, params = (view,), P(np.transpose), {
            "axes": R.inverse_permutation(key)}
    else:
        args, prim, params = (view,), P(np.reshape), {"shape": base._data.shape}
    needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
    node = make_node(COPY_SLICES, prim, params, args, needs)
    base._grad_fn = node
    base._output_nr = 0
    base._requires_grad = True
    if base._base is not None:
        _rebase(base)


def inplace(self: Tensor, prim: Any, name: str, args: tuple = (), params: dict | None = None
            ) -> Tensor:
    """Apply ``prim`` to ``self`` in place, recording it as PyTorch does (and its tangent,
    inside a dual level)."""
    _check_inplace(self)
    old = _snapshot(self)
    dual = _tensor._forward_hook is not None
    if dual:
        forward_ad.lend_tangent(self, old, args)
    result = apply(prim, name, (old, *args), params or {}, dtype=self._data.dtype)
    node = result._grad_fn
    if node is not None and node.inputs and node.inputs[0] is old:
        old._data = old._data.copy()       # the rule reads the old value: keep it
    if result._data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(result._data.shape)}")
    np.copyto(self._data, result._data)
    _rebind(self, node)
    if dual:
        forward_ad.write_tangent(self, result)
    return self


def _setitem(self: Tensor, index: Any, value: Any) -> None:
    if _state.enabled and self._grad_fn is None and self._requires_grad:
        # PyTorch writes through a view of the Tensor, and says so
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    _check_inplace(self)
    index = unwrap_index(index)
    record = _state.enabled and (self._requires_grad or
                                 (isinstance(value, Tensor) and value._requires_grad))
    node = None
    if record:
        old = _snapshot(self)
        needs = (old._requires_grad, isinstance(value, Tensor) and value._requires_grad)
        node = make_node(COPY_SLICES, R.index_put, {"index": index}, (old, value), needs)
    self._data[index] = as_array(value)
    _rebind(self, node)
    if _tensor._forward_hook is not None:      # a dual level is open
        forward_ad.write_item(self, index, value)


Tensor.__setitem__ = _setitem


def _inplace_binary(fun: Any, name: str) -> Any:
    prim = P(fun)

    def method(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        if alpha != 1:
            other = other * alpha
        return inplace(self, prim, name, (other,))
    return method


Tensor.add_ = Tensor.__iadd__ = _inplace_binary(np.add, "AddBackward0")
Tensor.sub_ = Tensor.__isub__ = _inplace_binary(np.subtract, "SubBackward0")
Tensor.mul_ = Tensor.__imul__ = _inplace_binary(np.multiply, "MulBackward0")
Tensor.div_ = Tensor.__itruediv__ = _inplace_binary(np.divide, "DivBackward0")
Tensor.clamp_ = lambda self, min=None, max=None: inplace(
    self, P(np.clip), "ClampBackward1", (), {"a_min": min, "a_max": max})
Tensor.zero_ = lambda self: inplace(self, R.overwrite, "ZeroBackward0", (0,))
Tensor.exp_ = lambda self: inplace(self, P(np.exp), "ExpBackward0")
Tensor.sigmoid_ = lambda self: inplace(self, R.sigmoid, "SigmoidBackward0")
Tensor.tanh_ = lambda self: inplace(self, P(np.tanh), "TanhBackward0")
Tensor.relu_ = lambda self: inplace(self, R.relu, "ReluBackward0")
Tensor.neg_ = lambda self: inplace(self, P(np.negative), "NegBackward0")


def _fill_(self: Tensor, value: Any) -> Tensor:
    name = "FillBackward1" if isinstance(value, Tensor) else "FillBackward2"
    return inplace(self, R.overwrite, name, (value,))


def _copy_(self: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    return inplace(self, R.overwrite, "torch::autograd::CopyBackwards", (src,))


Tensor.fill_ = _fill_
Tensor.copy_ = _copy_

# ---------------------------------------------------------------------------------------------
# Types and devices.


def _to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    from srcgrad.runtime.device import device
    target_dtype = kwargs.get("dtype")
    target_device = kwargs.get("device")
    for a in args:
        if isinstance(a, dtypes.dtype):
            target_dtype = a
        elif isinstance(a, Tensor):
            target_dtype, target_device = a.dtype, a.device
        elif a is not None:
            target_device = a
    out = self
    if target_device is not None and device(target_device) != self.device:
        dev = device(target_device)
        out = apply(R.to_device, "ToCopyBackward0", (out,),
                    {"device": str(dev), "source": str(self.device)})
    if target_dtype is not None and dtypes.to_numpy_dtype(target_dtype) != out._data.dtype:
        out = apply(R.cast, "ToCopyBackward0", (out,),
                    {"dtype": dtypes.to_numpy_dtype(target_dtype)},
                    dtype=dtypes.to_numpy_dtype(target_dtype))
    if kwargs.get("copy") and out is self:
        out = self.clone()
    return out


Tensor.to = _to
Tensor.type_as = lambda self, other: _to(self, other.dtype)
Tensor.cuda = lambda self, device=None: _to(self, "cuda" if device is None else f"cuda:{device}")
Tensor.cpu = lambda self: _to(self, "cpu")
for _name, _dt in (("float", dtypes.float32), ("double", dtypes.float64),
                   ("half", dtypes.float16), ("long", dtypes.int64), ("int", dtypes.int32),
                   ("bool", dtypes.bool_)):
    setattr(Tensor, _name, (lambda d: lambda self: _to(self, d))(_dt))


def _new(self: Tensor, fill: Any) -> Any:
    def make(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
             ) -> Tensor:
        dt = dtypes.to_numpy_dtype(dtype) if dtype is not None else self._data.dtype
        t = Tensor._make(np.full(_shape_arg(size), fill, dtype=dt))
        t.requires_grad = requires_grad
        return t
    return make


Tensor.new_zeros = lambda self, *size, **kw: _new(self, 0)(*size, **kw)
Tensor.new_ones = lambda self, *size, **kw: _new(self, 1)(*size, **kw)
Tensor.new_full = lambda self, size, fill_value, **kw: _new(self, fill_value)(size, **kw)
def _new_tensor(self: Tensor, data: Any, dtype: Any = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    from srcgrad.runtime.eager.factories import tensor
    return tensor(data, dtype=dtype if dtype is not None else self.dtype, device=device,
                  requires_grad=requires_grad)


Tensor.new_tensor = _new_tensor
