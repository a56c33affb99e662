"""``Tensor``: a NumPy array with PyTorch's autograd surface.

The class holds the data and the autograd state (``requires_grad``, ``grad_fn``, ``grad``, the
version counter shared with views, hooks).  Operations live in :mod:`srcgrad.runtime.eager.ops`;
they all go through :func:`apply`, which runs a primitive on the arrays and records a
:class:`~srcgrad.runtime.eager.engine.PrimNode` when grad mode is on and an input requires grad.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np

from srcgrad.runtime.eager import dtypes, grad_mode
from srcgrad.runtime.eager.engine import AccumulateGrad, Node, TensorBase, make_node
from srcgrad.runtime.eager.hooks import RemovableHandle
from srcgrad.runtime.rules.primitives import Primitive
from srcgrad.runtime.subclasses import plain, refuse_subclass

__all__ = ["Tensor", "Size", "apply", "as_array", "zero_grads"]

_state = grad_mode._state
_forward_hook: Callable[[Primitive, Sequence[Any], dict, Tensor], None] | None = None
"""Set by :mod:`srcgrad.runtime.eager.forward_ad` while a dual level is open."""
_EMPTY: dict = {}
_AS_CALLER = nullcontext()       # NumPy semantics: the caller's error state and filters
_new = object.__new__

NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information.")
NON_LEAF_FLAG = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
    "variable in a subgraph that doesn't require differentiation use var_no_grad = "
    "var.detach().")
NUMPY_REQUIRES_GRAD = ("Can't call numpy() on Tensor that requires grad. "
                       "Use tensor.detach().numpy() instead.")


class Size(tuple):
    """A tensor's shape (PyTorch's ``torch.Size``): a tuple that prints as ``srcgrad.Size``."""

    def __repr__(self) -> str:
        return f"srcgrad.Size({list(self)})"

    def numel(self) -> int:
        return int(np.prod(self, dtype=np.int64))


def as_array(x: Any) -> Any:
    """The NumPy (or CuPy) array behind ``x`` (a Tensor, array or Python number)."""
    return x._data if isinstance(x, Tensor) else x


class Tensor(TensorBase):
    """A multi-dimensional array that can record operations for automatic differentiation."""

    __slots__ = ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_grad", "_version_counter",
                 "_retains_grad", "_hooks", "_acc_ref", "_base", "_view_key", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, data: Any = (), *, requires_grad: bool = False) -> None:
        # ``srcgrad.Tensor([1, 2])`` is float32, as ``torch.Tensor``; use ``srcgrad.tensor``.
        refuse_subclass(data, "srcgrad.Tensor(...)")
        arr = np.array(as_array(data), dtype=dtypes.default_float())
        self._init(arr)
        if requires_grad:
            self.requires_grad = True

    def _init(self, data: Any, grad_fn: Node | None = None, requires_grad: bool = False) -> None:
        self._data = data
        self._grad_fn = grad_fn
        self._requires_grad = requires_grad
        self._output_nr = 0
        self._grad = None
        self._version_counter = [0]
        self._retains_grad = False
        self._hooks = None
        self._acc_ref = None
        self._base = None
        self._view_key = None

    @classmethod
    def _make(cls, data: Any, grad_fn: Node | None = None, requires_grad: bool = False) -> Tensor:
        """Wrap an array without copying (the fast path every operation uses)."""
        t = _new(Tensor)
        if type(data) is not np.ndarray and not hasattr(data, "__cuda_array_interface__"):
            data = np.asarray(plain(data, "made a Tensor"))
        t._init(data, grad_fn, requires_grad)
        return t

    # ----------------------------------------------------------------------------- metadata
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Any:
        return Size(self._data.shape) if dim is None else self._data.shape[dim]

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    @property
    def dtype(self) -> dtypes.dtype:
        return dtypes.from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> Any:
        from srcgrad.runtime.device import device_of
        return device_of(self._data)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def element_size(self) -> int:
        return self._data.itemsize

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return len(self._data)

    def __hash__(self) -> int:
        return id(self)

    def __getattr__(self, name: str) -> Any:
        from srcgrad.runtime.eager.not_offered import NOT_OFFERED
        if name in NOT_OFFERED:
            raise AttributeError(f"srcgrad.Tensor does not offer torch.Tensor.{name} (the list "
                                 "is srcgrad.runtime.eager.not_offered.NOT_OFFERED)", name=name,
                                 obj=self)
        raise AttributeError(f"'Tensor' object has no attribute '{name}'", name=name, obj=self)

    # ------------------------------------------------------------------------ autograd state
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if self._grad_fn is not None:
            if flag:
                raise RuntimeError(NON_LEAF_FLAG.split(" If")[0])
            raise RuntimeError(NON_LEAF_FLAG)
        if flag and self._data.dtype.kind not in "fc":
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        self._requires_grad = bool(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if self._grad_fn is not None:
            if requires_grad:
                return self          # a non-leaf already requires grad: nothing to change
            raise RuntimeError(NON_LEAF_FLAG)
        if requires_grad and self._data.dtype.kind not in "fc":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def _version(self) -> int:
        """How many in-place writes this Tensor's storage has seen (shared with its views)."""
        return self._version_counter[0]

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    @property
    def grad_fn(self) -> Node | None:
        return self._grad_fn

    @property
    def grad(self) -> Tensor | None:
        if self._grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad "
                                f"of type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                    f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                    "tensor are the same size")
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf Tensor during backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        fn = self._grad_fn
        if fn._retain is None:
            fn._retain = {}
        fn._retain[self._output_nr] = weakref.ref(self)
        self._retains_grad = True

    def _accumulator(self) -> AccumulateGrad:
        """This leaf's AccumulateGrad node (one per leaf while any graph holds it)."""
        acc = self._acc_ref() if self._acc_ref is not None else None
        if acc is None:
            acc = AccumulateGrad(self)
            self._acc_ref = weakref.ref(acc)
        return acc

    def _accumulate(self, g: Any, create_graph: bool) -> None:
        """Add ``g`` into ``.grad``: in place when ``.grad`` exists, as PyTorch does.

        ``g = x.grad`` taken before a second backward sees the sum afterwards.  With
        ``create_graph`` the sum is recorded instead (a new Tensor), as in PyTorch.
        """
        if create_graph:
            new = g if isinstance(g, Tensor) else Tensor._make(g)
            if self._grad is None and new._grad_fn is not None:
                # PyTorch stores a copy of the first gradient, recorded as CopyBackwards
                from srcgrad.runtime.rules import overwrite
                new = apply(overwrite, "torch::autograd::CopyBackwards",
                            (Tensor._make(np.zeros_like(new._data)), new))
            self._grad = new if self._grad is None else self._grad + new
            return
        data = g._data if isinstance(g, Tensor) else g
        old = self._grad
        if old is None:
            self._grad = Tensor._make(data.copy())     # never alias a graph buffer
        elif old._grad_fn is None and old._data.flags.writeable and old._data.shape == data.shape:
            old._data += data
            old._version_counter[0] += 1
        else:
            self._grad = Tensor._make(old._data + data)

    def _retain_grad(self, g: Any, create_graph: bool) -> None:
        g = g if create_graph else Tensor._make(as_array(g).copy())
        self._grad = g if self._grad is None else self._grad + g

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call ``hook(grad)`` when this Tensor's gradient is computed; it may return a new one."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is None:
            if self._hooks is None:
                self._hooks = {}
            return RemovableHandle.add(self._hooks, hook)
        fn = self._grad_fn
        if fn._tensor_hooks is None:
            fn._tensor_hooks = {}
        return RemovableHandle.add(fn._tensor_hooks.setdefault(self._output_nr, {}), hook)

    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulate the gradient of this Tensor into ``.grad`` of the leaves (or ``inputs``)."""
        from srcgrad.runtime.eager.autograd import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # ---------------------------------------------------------------------------- detaching
    def detach(self) -> Tensor:
        """A Tensor sharing data (and the version counter) but outside the graph."""
        t = Tensor._make(self._data)
        t._version_counter = self._version_counter
        return t

    def detach_(self) -> Tensor:
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        t = Tensor._make(self._data)
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = as_array(value)

    @staticmethod
    def __srcgrad_primitive__(prim: Primitive, args: tuple, params: dict) -> Tensor:
        """A primitive called on Tensors inside a rule (``create_graph``) or by users;
        :mod:`srcgrad.runtime.eager.ops` replaces it with one naming nodes as PyTorch does."""
        return apply(prim, prim.name, args, params)


def apply(prim: Primitive, name: str, args: Sequence[Any], params: dict = _EMPTY,
          dtype: np.dtype | None = None, numpy_semantics: bool = False) -> Tensor:
    """Run ``prim`` on the arrays of ``args`` and record it for backward when needed.

    ``name`` is the node name PyTorch gives the same call (``MulBackward0``); the result dtype
    follows PyTorch's promotion (or ``dtype`` when given, or NumPy's with ``numpy_semantics``,
    which also runs it under the caller's NumPy error state and warning filters)."""
    data = []
    requires = False
    first = None            # the dtype shared by every Tensor argument, if there is one
    mixed = False
    for a in args:
        if type(a) is Tensor or isinstance(a, Tensor):
            d = a._data
            data.append(d)
            if a._requires_grad:
                requires = True
            if first is None:
                first = d.dtype
            elif d.dtype != first:
                mixed = True
        else:
            if type(a) is not float:
                mixed = True
                if isinstance(a, np.ndarray) and type(a) is not np.ndarray:
                    a = plain(a, f"an operand of {prim.name}")
            data.append(a)
    with _AS_CALLER if numpy_semantics else np.errstate(all="ignore"):   # inf, nan: as PyTorch
        out = prim.fn(*data, **params) if params else prim.fn(*data)
    if type(out) is not np.ndarray:
        out = np.asarray(out) if not hasattr(out, "__cuda_array_interface__") else out
    if dtype is None and not numpy_semantics:
        rule = prim.dtype_rule
        if rule == "promote" or rule == "float":
            if not mixed and first is not None and first.kind == "f":
                dtype = first      # the common case: one float dtype and Python floats
            else:
                dtype = dtypes.result_type(args, Tensor)
                if rule == "float" and dtype.kind not in "fc":
                    dtype = dtypes.default_float()
                elif dtype.kind == "b" and out.dtype.kind in "iu":   # sum of bools: a count
                    dtype = np.dtype(np.int64)
        elif rule == "same":
            dtype = data[0].dtype
        elif rule == "index":
            dtype = np.dtype(np.int64)
    if dtype is not None and out.dtype is not dtype and out.dtype != dtype:
        out = out.astype(dtype)
    result = Tensor._make(out)
    if requires and _state.enabled and out.dtype.kind in "fc":
        needs = prim.needs([isinstance(a, Tensor) and a._requires_grad for a in args])
        if needs is not None:
            node = result._grad_fn = make_node(name, prim, params, args, needs, out)
            result._requires_grad = True
            if node.ans is not None:
                node._ans_counter = result._version_counter
    if _forward_hook is not None:       # a dual level is open: the tangent, after the node
        _forward_hook(prim, args, params, result)
    return result


def zero_grads(params: Any, set_to_none: bool = True) -> None:
    """Reset ``.grad`` of each Tensor: to None, or zeroed in place (the same object, as PyTorch).

    ``Optimizer.zero_grad`` and ``Module.zero_grad`` both end here.
    """
    for p in params:
        g = p._grad
        if g is None:
            continue
        if set_to_none:
            p._grad = None
            continue
        g._grad_fn = None            # PyTorch detaches the gradient, then zeroes it
        g._requires_grad = False
        g._data[...] = 0
        g._version_counter[0] += 1

