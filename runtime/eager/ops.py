"""Tensor operations with PyTorch's names, node names and argument conventions.

Every operation is one :func:`~srcgrad.runtime.eager.tensor.apply` of a primitive from the rule
table;
this module only decides which primitive, which parameters, and which node name PyTorch 2.13
gives the same call (``x.sum()`` → ``SumBackward0``, ``x.sum(0)`` → ``SumBackward1``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcgrad.runtime import rules as R
from srcgrad.runtime.eager import grad_mode
from srcgrad.runtime.eager.names import _dims, _matmul_name, _return_type, node_name
from srcgrad.runtime.eager.tensor import Tensor, apply, as_array
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS, lookup

P = lookup
_state = grad_mode._state


return_max, return_min = _return_type("max"), _return_type("min")

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
    from srcgrad.runtime.eager.double_backward import underivable
    if not isinstance(other, _NUMBER):
        return NotImplemented
    out = apply(P(np.floor_divide), "", (self, other))
    return underivable("torch::autograd::NotImplemented", RuntimeError(
        "derivative for aten::floor_divide is not implemented"), out._data,
        tuple(a for a in (self, other) if isinstance(a, Tensor)))


def _matmul(self: Tensor, other: Any) -> Any:
    if not isinstance(other, _NUMBER):
        return NotImplemented
    a, b = self._data, as_array(other)
    if a.ndim > 2 and np.ndim(b) == 2:
        # PyTorch folds the batch into one matrix product, as recorded here
        folded = self.reshape(-1, a.shape[-1])
        out = apply(P(np.matmul), "MmBackward0", (folded, other))
        return apply(P(np.reshape), "UnsafeViewBackward0", (out,),
                     {"shape": a.shape[:-1] + (b.shape[-1],)})
    return apply(P(np.matmul), _matmul_name(self, other), (self, other))


def _rmatmul(self: Tensor, other: Any) -> Any:
    return apply(P(np.matmul), _matmul_name(other, self), (other, self))


Tensor.__rtruediv__ = _rtruediv
Tensor.__pow__, Tensor.__rpow__ = _pow, _rpow
Tensor.__floordiv__ = Tensor.floor_divide = _floordiv
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
    return apply(R.pow_scalar, "RsqrtBackward0", (self,), {"p": -0.5})


def _arith(fun: Any, name: str) -> Any:
    prim = P(fun)

    def method(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        if alpha == 1:
            return apply(prim, name, (self, other))
        from srcgrad.runtime.eager.double_backward import record_as
        out = apply(prim, name, (self, other * alpha))
        return record_as(name, out, tuple(a for a in (self, other) if isinstance(a, Tensor)))
    return method


def _clamp(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        from srcgrad.runtime.eager.double_backward import record_as
        out = self
        if min is not None:
            out = apply(P(np.maximum), "ClampBackward0", (out, min))
        if max is not None:
            out = apply(P(np.minimum), "ClampBackward0", (out, max))
        return record_as("ClampBackward0", out,
                         tuple(a for a in (self, min, max) if isinstance(a, Tensor)))
    return apply(P(np.clip), "ClampBackward1", (self,), {"a_min": min, "a_max": max})


def where(condition: Any, input: Any, other: Any) -> Tensor:
    """``srcgrad.where(cond, x, y)``: ``x`` where ``cond`` holds, else ``y``."""
    if isinstance(condition, Tensor) and condition._data.dtype != np.bool_:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition.dtype.legacy[:-len('Tensor')]}")
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
def _pairwise(fun: Any, name: str, node: str) -> Any:
    prim = P(fun)

    def method(self: Tensor, other: Any) -> Tensor:
        if not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__}")
        return apply(prim, node, (self, other))
    method.__name__ = name
    return method


Tensor.maximum = _pairwise(np.maximum, "maximum", "MaximumBackward0")
Tensor.minimum = _pairwise(np.minimum, "minimum", "MinimumBackward0")
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


_prod = _reduction(np.prod, "Prod")


def _prod_dim(self: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
              ) -> Tensor:
    if dim is not None and not isinstance(dim, int):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    return _prod(self, dim, keepdim, dtype=dtype)


Tensor.prod = _prod_dim
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
    ord_ = 2 if p in ("fro", None) else p
    return apply(P(np.linalg.vector_norm), "LinalgVectorNormBackward0", (self,),
                 {"ord": ord_, "axis": _dims(dim), "keepdims": keepdim})


Tensor.norm = _norm

# ---------------------------------------------------------------------------------------------
# Linear algebra.

Tensor.matmul = _matmul
Tensor.mm = lambda self, other: apply(P(np.matmul), "MmBackward0", (self, other))
Tensor.mv = lambda self, other: apply(P(np.matmul), "MvBackward0", (self, other))
Tensor.dot = lambda self, other: apply(P(np.matmul), "DotBackward0", (self, other))
Tensor.outer = Tensor.ger = lambda self, other: self.reshape(-1, 1) * other  # as PyTorch
Tensor.trace = lambda self: apply(P(np.trace), "TraceBackward0", (self,))
