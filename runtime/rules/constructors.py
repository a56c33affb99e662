"""Constructors and conversions that carry a value: ``float(x)``, ``np.float64(x)``,
``np.full(shape, x)`` (``np.full_like(a, x)`` too) and ``np.linspace(start, stop)``.

Their results depend on a differentiable value, so the compiler lowers them to these
primitives (never to constants).  Broadcasting of the fill value and of the endpoints is
undone centrally for the endpoints (``broadcasts=True``); a fill value is summed back from
the whole array, as ``np.broadcast_to``'s rule does.  An integer result carries no gradient.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.core import cast
from srcgrad.runtime.rules.primitives import defjvp, defvjp, helper, primitive, sum_to

__all__ = ["cast_to", "to_float", "to_scalar", "full_of", "linspace_of",
           "float_result", "linspace_weights"]


@helper
def float_result(ans):
    """1.0 when ``ans`` holds floats (a gradient flows), 0.0 for integers and booleans."""
    dtype = getattr(ans, "dtype", None)
    if dtype is None:                       # a Python number
        return 1.0 if isinstance(ans, (float, complex)) else 0.0
    return 1.0 if np.dtype(dtype).kind in "fc" else 0.0


@helper
def linspace_weights(num, endpoint, axis, ndim):
    """How much of ``stop`` each sample of ``np.linspace`` holds, shaped along ``axis``."""
    div = num - 1 if endpoint else num
    w = np.arange(num, dtype=float) / div if div > 0 else np.zeros(num)
    if ndim <= 1:
        return w
    shape = [1] * ndim
    shape[axis % ndim] = num
    return np.reshape(w, shape)


@primitive(dtype_rule="keep")
def to_float(x):
    """``float(x)``: the single element of ``x`` as a Python float."""
    return float(x)


@primitive(dtype_rule="keep")
def to_scalar(x, *, dtype):
    """``np.float64(x)`` (or another float type): ``x`` converted, as NumPy's scalar type does."""
    return np.dtype(dtype).type(x)


@primitive(dtype_rule="keep")
def cast_to(x, *, dtype):
    """``x.astype(dtype)`` for a dtype known only at run time (an integer one passes no
    gradient back)."""
    return x.astype(dtype)


@primitive(dtype_rule="keep")
def full_of(value, *, shape, dtype=None):
    """``np.full(shape, value, dtype)``."""
    return np.full(shape, value, dtype=dtype)


@primitive(nin=2, dtype_rule="keep", broadcasts=True)
def linspace_of(start, stop, *, num=50, endpoint=True, dtype=None, axis=0):
    """``np.linspace(start, stop, num, endpoint, dtype=dtype, axis=axis)``."""
    return np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype, axis=axis)


defvjp(cast_to, lambda g, ans, x, dtype: cast(g * float_result(ans), dtype=x.dtype))
defvjp(to_float, lambda g, ans, x: np.reshape(g, np.shape(x)))
to_float.makes_float = True          # hints for the emitters (see rules/__init__.py)
full_of.default_kind, linspace_of.default_kind = "value", "float"
defvjp(to_scalar, lambda g, ans, x, dtype: np.reshape(g, np.shape(x)) * float_result(ans))
defvjp(full_of, lambda g, ans, value, shape, dtype=None:
       sum_to(g * float_result(ans), np.shape(value)))
defvjp(linspace_of,
       lambda g, ans, start, stop, num=50, endpoint=True, dtype=None, axis=0:
       np.sum(g * ((1.0 - linspace_weights(num, endpoint, axis, np.ndim(ans)))
                   * float_result(ans)), axis=axis),
       lambda g, ans, start, stop, num=50, endpoint=True, dtype=None, axis=0:
       np.sum(g * (linspace_weights(num, endpoint, axis, np.ndim(ans)) * float_result(ans)),
              axis=axis))


# Forward mode: linear in the value, and an integer result has a zero tangent.
defjvp(cast, lambda tangents, ans, x, dtype: cast(tangents[0], dtype=dtype) * float_result(ans))
defjvp(cast_to, lambda tangents, ans, x, dtype:
       cast_to(tangents[0], dtype=dtype) * float_result(ans))
defjvp(to_float, linear=True)
defjvp(to_scalar, lambda tangents, ans, x, dtype:
       to_scalar(tangents[0], dtype=dtype) * float_result(ans))
defjvp(full_of, lambda tangents, ans, value, shape, dtype=None:
       full_of(tangents[0], shape=shape, dtype=dtype) * float_result(ans))


def _linspace_jvp(tangents, ans, start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """The samples move with the ends: ``(1 - w) t_start + w t_stop`` (float results)."""
    ts, tt = (0.0 * x if t is None else t for t, x in zip(tangents, (start, stop)))
    return linspace_of(ts, tt, num=num, endpoint=endpoint, axis=axis) * float_result(ans)


defjvp(linspace_of, _linspace_jvp)
