"""Tensor operations with PyTorch's names, node names and argument conventions.

Every operation is one :func:`~srcgrad.runtime.tensor.apply` of a primitive from the rule table;
this module only decides which primitive, which parameters, and which node name PyTorch 2.13
gives the same call (``x.sum()`` → ``SumBackward0``, ``x.sum(0)`` → ``SumBackward1``).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from srcgrad.runtime import dtypes, grad_mode
from srcgrad.runtime import rules as R
from srcgrad.runtime.engine import PrimNode, make_node
from srcgrad.runtime.primitives import NUMPY_BINDINGS, lookup
from srcgrad.runtime.tensor import Tensor, apply, as_array

P = lookup
_state = grad_mode._state


def _return_type(name: str) -> type:
    """PyTorch's ``torch.return_types.max``: a named pair that prints one field a line."""
    def __repr__(self: Any) -> str:
        return (f"srcgrad.return_types.{name}(\nvalues={self.values!r},\n"
                f"indices={self.indices!r})")
    return type(name, (namedtuple(name, ["values", "indices"]),), {"__repr__": __repr__,
                                                                   "__slots__": ()})


return_max, return_min = _return_type("max"), _return_type("min")
COPY_SLICES = "srcgrad::autograd::CopySlices"

_NODE_NAMES = {
    "absolute": "Abs", "negative": "Neg", "multiply": "Mul", "divide": "Div", "add": "Add",
    "subtract": "Sub", "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan", "arcsinh": "Asinh",
    "arccosh": "Acosh", "arctanh": "Atanh", "arctan2": "Atan2", "log1p": "Log1P",
    "log_softmax": "LogSoftmax", "reshape": "View", "ravel": "View", "transpose": "Permute",
    "swapaxes": "Transpose", "expand_dims": "Unsqueeze", "concatenate": "Cat",
    "broadcast_to": "Expand", "square": "Pow", "tile": "Repeat", "copy": "Clone",
    "cast": "ToCopy", "solve": "LinalgSolveEx", "inv": "LinalgInvEx", "det": "LinalgDet",
    "norm": "LinalgVectorNorm", "rint": "Round", "deg2rad": "Deg2Rad", "rad2deg": "Rad2Deg",
    "mse_loss": "MseLoss", "nll_loss": "NllLoss", "logsumexp": "Logsumexp",
    "binary_cross_entropy_with_logits": "BinaryCrossEntropyWithLogits", "clip": "Clamp",
    "take_along": "Gather", "max": "Amax", "min": "Amin", "pow_scalar": "Pow",
}


def node_name(prim: Any, args: tuple, params: dict) -> str:
    """The node name PyTorch gives the call a NumPy function on Tensors stands for."""
    name = prim.name
    axis = params.get("axis")
    if name in ("sum", "mean", "prod"):
        return f"{name.capitalize()}Backward{0 if axis is None else 1}"
    if name in ("max", "min") and axis is None:
        return f"{name.capitalize()}Backward1"
    if name in ("std", "var", "clip"):
        return f"{_NODE_NAMES.get(name, name.capitalize())}Backward{1 if name == 'clip' else 0}"
    if name == "power":
        return "PowBackward2" if not isinstance(args[0], Tensor) else (
            "PowBackward1" if isinstance(args[1], Tensor) else "PowBackward0")
    if name == "subtract" and not isinstance(args[0], Tensor):
        return "RsubBackward1"
    if name in ("matmul", "dot"):
        return _matmul_name(args[0], args[1])
    if name == "squeeze":
        return f"SqueezeBackward{0 if axis is None else 1}"
    if name == "getitem":
        return _index_name(params["index"])
    stem = _NODE_NAMES.get(name) or "".join(p.capitalize() for p in name.split("_"))
    return f"{stem}Backward0"


def _matmul_name(a: Any, b: Any) -> str:
    na, nb = np.ndim(as_array(a)), np.ndim(as_array(b))
    if na == 2 and nb == 2:
        return "MmBackward0"
    if na == 2 and nb == 1:
        return "MvBackward0"
    if na == 1 and nb == 1:
        return "DotBackward0"
    if na == 1 and nb == 2:
        return "SqueezeBackward4"
    return "UnsafeViewBackward0" if na > 2 else "ExpandBackward0"


def _index_name(index: Any) -> str:
    keys = index if isinstance(index, tuple) else (index,)
    name = "SliceBackward0"
    for k in keys:
        if isinstance(k, (list, np.ndarray)) or (isinstance(k, bool)):
            return "IndexBackward0"
        if isinstance(k, (int, np.integer)):
            name = "SelectBackward0"
        elif k is None:
            name = "UnsqueezeBackward0"
        elif isinstance(k, slice) and k != slice(None):
            name = "SliceBackward0"
    return name


def _is_basic(index: Any) -> bool:
    keys = index if isinstance(index, tuple) else (index,)
    return not any(isinstance(k, (list, np.ndarray, bool)) for k in keys)


def unwrap_index(index: Any) -> Any:
    """Indices as NumPy sees them: Tensors become arrays (integer or boolean)."""
    if isinstance(index, tuple):
        return tuple(unwrap_index(k) for k in index)
    if isinstance(index, Tensor):
        data = index._data
        return data.item() if data.ndim == 0 and data.dtype.kind in "iu" else data
    return index


# ---------------------------------------------------------------------------------------------
# NumPy dispatch (``np.sin(t)``, ``np.sum(t, axis=0)``).

def ufunc_call(prim: Any, inputs: tuple) -> Tensor:
    if prim.name == "power" and isinstance(inputs[0], Tensor):
        return _pow(*inputs)
    return apply(prim, node_name(prim, inputs, {}), inputs)


_METADATA = {np.shape: lambda a: tuple(a.shape), np.ndim: lambda a: a.ndim,
             np.size: lambda a, axis=None: a.numel() if axis is None else a.shape[axis]}


def array_function(func: Any, args: tuple, kwargs: dict) -> Any:
    if func in _METADATA:
        return _METADATA[func](*args, **kwargs)
    if func in (np.zeros_like, np.ones_like, np.empty_like, np.full_like):
        ref = args[0]
        rest = [as_array(a) for a in args[1:]]
        return Tensor._make(func(ref._data, *rest, **kwargs))
    binding = NUMPY_BINDINGS.get(func)
    if binding is None:
        raise TypeError(f"numpy.{func.__name__} has no srcgrad derivative rule; register one "
                        "with srcgrad.defvjp")
    return binding[1](*args, **kwargs)


def _srcgrad_primitive(prim: Any, args: tuple, params: dict) -> Tensor:
    return apply(prim, node_name(prim, args, params), args, params)


Tensor.__srcgrad_primitive__ = staticmethod(_srcgrad_primitive)  # type: ignore[method-assign]

# ---------------------------------------------------------------------------------------------
# Arithmetic operators.

_NUMBER = (int, float, bool, np.ndarray, np.generic, Tensor)


def _binary(fun: Any, name: str, rname: str | None = None) -> tuple:
    prim = P(fun)

    def op(self: Tensor, other: Any) -> Any:
        if not isinstance(other, _NUMBER):
            return NotImplemented
        return apply(prim, name, (self, other))

    def rop(self: Tensor, other: Any) -> Any:
        if not isinstance(other, _NUMBER):
            return NotImplemented
        return apply(prim, rname or name, (other, self))
    return op, rop


def _commutative(fun: Any, name: str) -> tuple:
    op, _ = _binary(fun, name)
    return op, op        # ``1 + x`` is recorded as ``x + 1``, as PyTorch does


def _rsub(self: Tensor, other: Any) -> Any:
    if isinstance(other, (int, float)):
        return apply(R.rsub, "RsubBackward1", (self,), {"other": other})
    if not isinstance(other, _NUMBER):
        return NotImplemented
    return apply(P(np.subtract), "RsubBackward0", (other, self))


Tensor.__add__, Tensor.__radd__ = _commutative(np.add, "AddBackward0")
Tensor.__sub__, Tensor.__rsub__ = _binary(np.subtract, "SubBackward0")[0], _rsub
Tensor.__mul__, Tensor.__rmul__ = _commutative(np.multiply, "MulBackward0")
Tensor.__truediv__, _ = _binary(np.divide, "DivBackward0")
Tensor.__mod__, Tensor.__rmod__ = _binary(np.remainder, "RemainderBackward0")


def _rtruediv(self: Tensor, other: Any) -> Any:
    # PyTorch computes ``2 / x`` as ``x.reciprocal() * 2``
    return apply(P(np.multiply), "MulBackward0", (self.reciprocal(), other))


def _pow(self: Tensor, exponent: Any) -> Any:
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        return apply(R.pow_scalar, "PowBackward0", (self,), {"p": exponent})
    if not isinstance(exponent, _NUMBER):
        return NotImplemented
    return apply(P(np.power), "PowBackward1", (self, exponent))


def _rpow(self: Tensor, base: Any) -> Any:
    return apply(P(np.power), "PowBackward2", (base, self))


def _floordiv(self: Tensor, other: Any) -> Any:
    return apply(P(np.floor_divide), "FloorDivideBackward0", (self, other))


def _matmul(self: Tensor, other: Any) -> Any:
    if not isinstance(other, _NUMBER):
        return NotImplemented
    return apply(P(np.matmul), _matmul_name(self, other), (self, other))


def _rmatmul(self: Tensor, other: Any) -> Any:
    return apply(P(np.matmul), _matmul_name(other, self), (other, self))


Tensor.__rtruediv__ = _rtruediv
Tensor.__pow__, Tensor.__rpow__ = _pow, _rpow
Tensor.__floordiv__ = _floordiv
Tensor.__matmul__, Tensor.__rmatmul__ = _matmul, _rmatmul
Tensor.__neg__ = lambda self: apply(P(np.negative), "NegBackward0", (self,))
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: apply(P(np.abs), "AbsBackward0", (self,))
Tensor.__invert__ = lambda self: apply(P(np.logical_not) if self._data.dtype == bool
                                       else P(np.invert), "", (self,))

for _dunder, _fun in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                      ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal),
                      ("and", np.logical_and), ("or", np.logical_or), ("xor", np.logical_xor)):
    setattr(Tensor, f"__{_dunder}__", _binary(_fun, "")[0])
for _dunder in ("and", "or", "xor"):
    setattr(Tensor, f"__r{_dunder}__", getattr(Tensor, f"__{_dunder}__"))
Tensor.__hash__ = lambda self: id(self)  # __eq__ returns a Tensor: hash by identity

# ---------------------------------------------------------------------------------------------
# Elementwise methods.

_UNARY = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "abs": np.abs, "neg": np.negative,
    "negative": np.negative, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "arcsin": np.arcsin, "arccos": np.arccos,
    "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "reciprocal": np.reciprocal, "sign": np.sign,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.rint,
    "deg2rad": np.deg2rad, "rad2deg": np.rad2deg, "sigmoid": R.sigmoid, "relu": R.relu,
}


def _unary(prim: Any, name: str) -> Any:
    def method(self: Tensor) -> Tensor:
        return apply(prim, name, (self,))
    method.__name__ = name
    return method


for _method, _fun in _UNARY.items():
    _prim = P(_fun)
    setattr(Tensor, _method, _unary(_prim, node_name(_prim, (), {})))


def _square(self: Tensor) -> Tensor:
    return _pow(self, 2)


def _rsqrt(self: Tensor) -> Tensor:
    return apply(P(np.reciprocal), "RsqrtBackward0", (self.sqrt(),))


def _arith(fun: Any, name: str) -> Any:
    prim = P(fun)

    def method(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        if alpha != 1:
            other = other * alpha
        return apply(prim, name, (self, other))
    return method


def _clamp(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = self
        if min is not None:
            out = apply(P(np.maximum), "ClampBackward0", (out, min))
        if max is not None:
            out = apply(P(np.minimum), "ClampBackward0", (out, max))
        return out
    return apply(P(np.clip), "ClampBackward1", (self,), {"a_min": min, "a_max": max})


def where(condition: Any, input: Any, other: Any) -> Tensor:
    """``srcgrad.where(cond, x, y)``: ``x`` where ``cond`` holds, else ``y``."""
    return apply(P(np.where), "WhereBackward0", (as_array(condition), input, other))


Tensor.square = _square
Tensor.rsqrt = _rsqrt
Tensor.add = _arith(np.add, "AddBackward0")
Tensor.sub = Tensor.subtract = _arith(np.subtract, "SubBackward0")
Tensor.mul = Tensor.multiply = lambda self, other: self * other
Tensor.div = Tensor.divide = lambda self, other: self / other
Tensor.true_divide = Tensor.div
Tensor.pow = _pow
Tensor.clamp = Tensor.clip = _clamp
Tensor.maximum = lambda self, other: apply(P(np.maximum), "MaximumBackward0", (self, other))
Tensor.minimum = lambda self, other: apply(P(np.minimum), "MinimumBackward0", (self, other))
Tensor.where = lambda self, condition, other: where(condition, self, other)
Tensor.atan2 = lambda self, other: apply(P(np.arctan2), "Atan2Backward0", (self, other))
Tensor.hypot = lambda self, other: apply(P(np.hypot), "HypotBackward0", (self, other))
Tensor.logaddexp = lambda self, other: apply(P(np.logaddexp), "LogaddexpBackward0",
                                             (self, other))
for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(Tensor, _name, getattr(Tensor, f"__{_name}__"))
Tensor.logical_not = lambda self: apply(P(np.logical_not), "", (self,))
Tensor.isnan = lambda self: apply(P(np.isnan), "", (self,))
Tensor.isfinite = lambda self: apply(P(np.isfinite), "", (self,))
Tensor.isinf = lambda self: apply(P(np.isinf), "", (self,))
Tensor.masked_fill = lambda self, mask, value: apply(
    P(np.where), "MaskedFillBackward0", (as_array(mask), value, self))

# ---------------------------------------------------------------------------------------------
# Reductions.


def _dims(dim: Any) -> Any:
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


def _reduction(fun: Any, stem: str) -> Any:
    prim = P(fun)

    def method(self: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
               ) -> Tensor:
        src = self if dtype is None else self.to(dtype)
        if dim is None:
            return apply(prim, f"{stem}Backward0", (src,))
        return apply(prim, f"{stem}Backward1", (src,), {"axis": _dims(dim), "keepdims": keepdim})
    return method


def _sum_dtype(self: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
               ) -> Tensor:
    out = _sum(self, dim, keepdim, dtype=dtype)
    if dtype is None and self._data.dtype.kind in "biu":
        out._data = out._data.astype(np.int64)     # integer sums are int64, as in PyTorch
    return out


_sum = _reduction(np.sum, "Sum")
Tensor.sum = _sum_dtype
Tensor.mean = _reduction(np.mean, "Mean")


def _extremum(fun: Any, argfun: Any, stem: str, pair: Any, result: Any) -> Any:
    prim = P(fun)

    def method(self: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
        if isinstance(dim, Tensor):
            return pair(self, dim)
        if dim is None:
            return apply(prim, f"{stem}Backward1", (self,))
        idx = argfun(self._data, axis=dim, keepdims=True)
        values = apply(R.take_along, f"{stem}Backward0", (self,),
                       {"indices": idx, "axis": dim, "keepdims": keepdim})
        return result(values, Tensor._make(idx if keepdim else np.squeeze(idx, axis=dim)))
    return method


Tensor.prod = _reduction(np.prod, "Prod")
Tensor.max = _extremum(np.max, np.argmax, "Max", Tensor.maximum, return_max)
Tensor.min = _extremum(np.min, np.argmin, "Min", Tensor.minimum, return_min)
Tensor.amax = lambda self, dim=None, keepdim=False: apply(
    P(np.max), "AmaxBackward0", (self,), {"axis": _dims(dim), "keepdims": keepdim})
Tensor.amin = lambda self, dim=None, keepdim=False: apply(
    P(np.min), "AminBackward0", (self,), {"axis": _dims(dim), "keepdims": keepdim})


def _argext(fun: Any) -> Any:
    def method(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        out = fun(self._data, axis=dim, keepdims=keepdim) if dim is not None else fun(self._data)
        return Tensor._make(np.asarray(out, dtype=np.int64))
    return method


Tensor.argmax = _argext(np.argmax)
Tensor.argmin = _argext(np.argmin)


def _moment(fun: Any, stem: str) -> Any:
    prim = P(fun)

    def method(self: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False,
               *, correction: int | None = None) -> Tensor:
        ddof = correction if correction is not None else (0 if unbiased is False else 1)
        params = {"ddof": ddof}
        if dim is not None:
            params.update(axis=_dims(dim), keepdims=keepdim)
        return apply(prim, f"{stem}Backward0", (self,), params)
    return method


Tensor.std = _moment(np.std, "Std")
Tensor.var = _moment(np.var, "Var")
Tensor.cumsum = lambda self, dim: apply(P(np.cumsum), "CumsumBackward0", (self,), {"axis": dim})
Tensor.logsumexp = lambda self, dim, keepdim=False: apply(
    R.logsumexp, "LogsumexpBackward0", (self,), {"axis": _dims(dim), "keepdims": keepdim})
Tensor.softmax = lambda self, dim: apply(R.softmax, "SoftmaxBackward0", (self,), {"axis": dim})
Tensor.log_softmax = lambda self, dim: apply(R.log_softmax, "LogSoftmaxBackward0", (self,),
                                             {"axis": dim})


def _norm(self: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Tensor:
    ord_ = None if p in ("fro", 2) else p
    return apply(R.norm, "LinalgVectorNormBackward0", (self,),
                 {"ord": ord_, "axis": _dims(dim), "keepdims": keepdim})


Tensor.norm = _norm

# ---------------------------------------------------------------------------------------------
# Linear algebra.

Tensor.matmul = _matmul
Tensor.mm = lambda self, other: apply(P(np.matmul), "MmBackward0", (self, other))
Tensor.mv = lambda self, other: apply(P(np.matmul), "MvBackward0", (self, other))
Tensor.dot = lambda self, other: apply(P(np.matmul), "DotBackward0", (self, other))
Tensor.outer = lambda self, other: apply(P(np.outer), "OuterBackward0", (self, other))
Tensor.trace = lambda self: apply(P(np.trace), "TraceBackward0", (self,))

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
    out = apply(R.getitem, _index_name(index), (self,), {"index": index})
    if _is_basic(index) and out._data.size:
        out._base = self
        out._view_key = ("index", index)
        out._version_counter = self._version_counter
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
    if node.ans is not None:
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
    """Apply ``prim`` to ``self`` in place, recording it as PyTorch does."""
    _check_inplace(self)
    old = _snapshot(self)
    result = apply(prim, name, (old, *args), params or {}, dtype=self._data.dtype)
    node = result._grad_fn
    if node is not None and node.inputs and node.inputs[0] is old:
        old._data = old._data.copy()       # the rule reads the old value: keep it
    if result._data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(result._data.shape)}")
    np.copyto(self._data, result._data)
    _rebind(self, node)
    return self


def _setitem(self: Tensor, index: Any, value: Any) -> None:
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
Tensor.pow_ = Tensor.__ipow__ = _inplace_binary(np.power, "PowBackward0")
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
    return inplace(self, R.overwrite, "srcgrad::autograd::CopyBackwards", (src,))


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
Tensor.new_tensor = lambda self, data, **kw: __import__(
    "srcgrad.runtime.factories", fromlist=["tensor"]).tensor(data, **kw)
