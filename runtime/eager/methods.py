"""More of ``torch.Tensor``'s methods: logic, comparisons, reductions, metadata, in place.

Each differentiable method is one primitive of the rule table recorded under the node name
PyTorch 2.13 gives it; truth values, counts and indices are computed on the data and never
require grad, as in PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcgrad.runtime import rules as R
from srcgrad.runtime.eager import dtypes, forward_ad
from srcgrad.runtime.eager import tensor as _tensor
from srcgrad.runtime.eager.names import _dims
from srcgrad.runtime.eager.tensor import Tensor, apply, as_array
from srcgrad.runtime.eager.views import _check_inplace, _rebind, _snapshot
from srcgrad.runtime.rules.primitives import lookup

P = lookup


def _plain(data: Any, dtype: Any = None) -> Tensor:
    """A result without gradient (truth values, indices, counts)."""
    with np.errstate(all="ignore"):
        out = np.asarray(data)
    return Tensor._make(out if dtype is None else out.astype(dtype))


# ------------------------------------------------------------------------ truth and logic


def _truth(fun: Any) -> Any:
    def method(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
        if dim is None:
            return _plain(fun(self._data))
        return _plain(fun(self._data, axis=_dims(dim), keepdims=keepdim))
    return method


Tensor.all = _truth(np.all)
Tensor.any = _truth(np.any)


def _logic(fun: Any) -> Any:
    return lambda self, other: _plain(fun(self._data, as_array(other)))


for _name, _fun in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                    ("logical_xor", np.logical_xor), ("bitwise_and", np.bitwise_and),
                    ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor)):
    setattr(Tensor, _name, _logic(_fun))
Tensor.bitwise_not = lambda self: _plain(np.invert(self._data))
for _alias, _name in (("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"),
                      ("less_equal", "le"), ("not_equal", "ne")):
    setattr(Tensor, _alias, getattr(Tensor, _name))
for _name, _fun in (("signbit", np.signbit), ("isposinf", np.isposinf),
                    ("isneginf", np.isneginf), ("isreal", np.isreal)):
    setattr(Tensor, _name, (lambda f: lambda self: _plain(f(self._data)))(_fun))


def _isclose(self: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Tensor:
    return _plain(np.isclose(self._data, as_array(other), rtol=rtol, atol=atol,
                             equal_nan=equal_nan))


Tensor.isclose = _isclose
Tensor.allclose = lambda self, other, rtol=1e-05, atol=1e-08, equal_nan=False: bool(
    np.allclose(self._data, as_array(other), rtol=rtol, atol=atol, equal_nan=equal_nan))
Tensor.equal = lambda self, other: bool(self._data.shape == as_array(other).shape
                                        and np.array_equal(self._data, as_array(other)))


def _count_nonzero(self: Tensor, dim: Any = None) -> Tensor:
    return _plain(np.count_nonzero(self._data, axis=_dims(dim)), np.int64)


Tensor.count_nonzero = _count_nonzero
Tensor.nonzero = lambda self: _plain(np.argwhere(self._data), np.int64)
Tensor.argwhere = Tensor.nonzero
Tensor.is_nonzero = lambda self: bool(self)

# ------------------------------------------------------------------------------ elementwise

for _name, _prim, _node in (("erf", R.erf, "ErfBackward0"), ("erfc", R.erfc, "ErfcBackward0"),
                            ("lgamma", R.gammaln, "LgammaBackward0"),
                            ("digamma", R.digamma, "DigammaBackward0"),
                            ("logit", R.logit, "LogitBackward0"),
                            ("sinc", P(np.sinc), "SincBackward0"),
                            ("sgn", P(np.sign), "SgnBackward0"),
                            ("fix", P(np.trunc), "TruncBackward0"),
                            ("nan_to_num", P(np.nan_to_num), "NanToNumBackward0")):
    setattr(Tensor, _name, (lambda p, n: lambda self: apply(p, n, (self,)))(_prim, _node))


def _nan_to_num(self: Tensor, nan: float = 0.0, posinf: float | None = None,
                neginf: float | None = None) -> Tensor:
    info = np.finfo(self._data.dtype) if self._data.dtype.kind == "f" else None
    params = {"nan": nan, "posinf": posinf if posinf is not None or info is None else info.max,
              "neginf": neginf if neginf is not None or info is None else info.min}
    return apply(P(np.nan_to_num), "NanToNumBackward0", (self,), params)


Tensor.nan_to_num = _nan_to_num
Tensor.positive = lambda self: self
Tensor.absolute = Tensor.abs
Tensor.arctan2 = Tensor.atan2
Tensor.arcsinh, Tensor.arccosh, Tensor.arctanh = Tensor.asinh, Tensor.acosh, Tensor.atanh


def _binary(fun: Any, tensor_name: str, scalar_name: str | None = None) -> Any:
    prim = P(fun)

    def method(self: Tensor, other: Any) -> Tensor:
        scalar = not isinstance(other, Tensor)
        return apply(prim, scalar_name if scalar and scalar_name else tensor_name, (self, other))
    return method


Tensor.fmax = _binary(np.fmax, "FmaxBackward0")
Tensor.fmin = _binary(np.fmin, "FminBackward0")
Tensor.logaddexp2 = _binary(np.logaddexp2, "Logaddexp2Backward0")
Tensor.fmod = _binary(np.fmod, "FmodBackward1", "FmodBackward0")
Tensor.remainder = _binary(np.remainder, "RemainderBackward1", "RemainderBackward0")
Tensor.__mod__ = Tensor.remainder
Tensor.clamp_min = lambda self, min: apply(P(np.maximum), "ClampMinBackward0", (self, min))
Tensor.clamp_max = lambda self, max: apply(P(np.minimum), "ClampMaxBackward0", (self, max))


def _float_power(self: Tensor, exponent: Any) -> Tensor:
    return self.double().pow(exponent.double() if isinstance(exponent, Tensor) else exponent)


Tensor.float_power = _float_power

# ------------------------------------------------------------------------------- reductions

Tensor.cumprod = lambda self, dim: apply(P(np.cumprod), "CumprodBackward0", (self,),
                                         {"axis": dim})


def _nansum(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    params = {} if dim is None else {"axis": _dims(dim), "keepdims": keepdim}
    return apply(P(np.nansum), "NansumBackward0", (self,), params)


Tensor.nansum = _nansum

# -------------------------------------------------------------------------- linear algebra

Tensor.diagonal = lambda self, offset=0, dim1=0, dim2=1: apply(
    P(np.diagonal), "DiagonalBackward0", (self,), {"offset": offset, "axis1": dim1,
                                                  "axis2": dim2})


def _diag(self: Tensor, diagonal: int = 0) -> Tensor:
    if self._data.ndim == 2:
        return apply(P(np.diagonal), "DiagonalBackward0_copy", (self,),
                     {"offset": diagonal, "axis1": 0, "axis2": 1})
    if self._data.ndim != 1:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got "
                           f"{self._data.ndim}D")
    return apply(P(np.diag), "DiagEmbedBackward0", (self,), {"k": diagonal})


Tensor.diag = _diag
Tensor.det = lambda self: apply(P(np.linalg.det), "LinalgDetBackward0", (self,))
Tensor.inverse = lambda self: apply(P(np.linalg.inv), "LinalgInvExBackward0", (self,))
Tensor.vdot = lambda self, other: apply(P(np.vdot), "VdotBackward0", (self, other))

# --------------------------------------------------------------------------------- metadata

Tensor.is_cpu = property(lambda self: self.device.type == "cpu")
Tensor.itemsize = property(lambda self: self._data.itemsize)
Tensor.nbytes = property(lambda self: self._data.nbytes)
for _name in ("is_sparse", "is_quantized", "is_meta"):
    setattr(Tensor, _name, property(lambda self: False))
Tensor.output_nr = property(lambda self: self._output_nr)
Tensor.is_contiguous = lambda self, memory_format=None: bool(self._data.flags.c_contiguous)
Tensor.is_complex = lambda self: self._data.dtype.kind == "c"
Tensor.is_signed = lambda self: self._data.dtype.kind in "fic"
Tensor.get_device = lambda self: -1 if self.device.type == "cpu" else (self.device.index or 0)
Tensor.is_inference = lambda self: False
Tensor.is_conj = Tensor.is_neg = lambda self: False
Tensor.storage_offset = lambda self: 0
Tensor.is_same_size = lambda self, other: self.shape == other.shape


def _stride(self: Tensor, dim: int | None = None) -> Any:
    strides = tuple(s // self._data.itemsize for s in self._data.strides)
    return strides if dim is None else strides[dim]


Tensor.stride = _stride
Tensor.short = lambda self: self.to(dtypes.int16)


def _new_empty(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    return self.new_zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


Tensor.new_empty = _new_empty

# ------------------------------------------------------------------- in-place variants
# ``x.sin_()``, ``x.clamp_min_(0)``: the out-of-place method run on a snapshot of the Tensor
# (same graph position, own data), written back, and the new node made its ``grad_fn``, as
# :func:`srcgrad.runtime.eager.views.inplace` does: the version counter moves, views see the write,
# writing into a leaf that requires grad (or a view of one) is refused as in PyTorch, and
# inside a dual level the tangent is written too.

UNARY = ("abs absolute neg negative exp expm1 exp2 log log2 log10 log1p sqrt rsqrt sin cos tan "
         "asin acos atan arcsin arccos arctan sinh cosh tanh asinh acosh atanh arcsinh arccosh "
         "arctanh sigmoid relu floor ceil trunc fix round sign sgn square reciprocal erf erfc "
         "deg2rad rad2deg logit nan_to_num lgamma digamma sinc").split()
WITH_ARGUMENTS = ("clamp clip clamp_min clamp_max masked_fill cumsum cumprod atan2 arctan2 "
                  "hypot fmod remainder subtract multiply divide true_divide logaddexp").split()


NO_INPLACE_DERIVATIVE = {"asinh": "asinh", "arcsinh": "asinh", "acosh": "acosh",
                         "arccosh": "acosh", "atanh": "atanh", "arctanh": "atanh"}
"""In-place functions PyTorch 2.13 records but cannot differentiate (backward raises)."""


def _inplace_method(name: str) -> Any:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        _check_inplace(self)
        old = _snapshot(self)
        dual = _tensor._forward_hook is not None
        if dual:
            forward_ad.lend_tangent(self, old, (*args, *kwargs.values()))
        result = getattr(Tensor, name)(old, *args, **kwargs)
        node = result._grad_fn
        if node is not None and name in NO_INPLACE_DERIVATIVE:
            from srcgrad.runtime.eager.double_backward import underivable
            node = underivable(node.name()[:-1] + "1", NotImplementedError(
                f"the derivative for 'inplace version of {NO_INPLACE_DERIVATIVE[name]}' is not "
                "implemented."), result._data, (old,))._grad_fn
        if node is not None and any(x is old for x in getattr(node, "inputs", ())):
            old._data = old._data.copy()       # the rule reads the old value: keep it
        if result._data.shape != self._data.shape:
            raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                               f"broadcast shape {list(result._data.shape)}")
        np.copyto(self._data, result._data, casting="unsafe")
        _rebind(self, node)
        if dual:
            forward_ad.write_tangent(self, result)
        return self
    method.__name__ = f"{name}_"
    method.__doc__ = f"``x.{name}(...)`` written into ``x``."
    return method


for _name in UNARY + WITH_ARGUMENTS:
    if not hasattr(Tensor, f"{_name}_") and hasattr(Tensor, _name):
        setattr(Tensor, f"{_name}_", _inplace_method(_name))
Tensor.pow_ = Tensor.__ipow__ = _inplace_method("pow")     # PowBackward0 or PowBackward1
