"""Elementwise rules: unary functions, piecewise constants (zero gradient), binary
operators (broadcasting is undone centrally), comparisons and logic (no gradient), the
complex-number functions of real values, and Python's ``math`` functions."""

from __future__ import annotations

import ast
import math

import numpy as np

from srcgrad.runtime.rules.core import LN2, LN10, clip_bound_mask, clip_mask
from srcgrad.runtime.rules.primitives import (
    NO_GRADIENT,
    NotCompiled,
    Primitive,
    bind_numpy,
    defjvp,
    defvjp,
    helper,
    lookup,
    primitive,
)

defvjp(np.negative, lambda g, ans, x: -g)
defvjp(np.positive, lambda g, ans, x: g)
defvjp(np.exp, lambda g, ans, x: g * ans, dtype_rule="float")
defvjp(np.exp2, lambda g, ans, x: g * ans * LN2, dtype_rule="float")
defvjp(np.expm1, lambda g, ans, x: g * (ans + 1), dtype_rule="float")
defvjp(np.log, lambda g, ans, x: g / x, dtype_rule="float")
defvjp(np.log2, lambda g, ans, x: g / (x * LN2), dtype_rule="float")
defvjp(np.log10, lambda g, ans, x: g / (x * LN10), dtype_rule="float")
defvjp(np.log1p, lambda g, ans, x: g / (x + 1), dtype_rule="float")
defvjp(np.sqrt, lambda g, ans, x: g / (2 * ans), dtype_rule="float")
defvjp(np.cbrt, lambda g, ans, x: g / (3 * ans * ans), dtype_rule="float")
defvjp(np.square, lambda g, ans, x: g * 2 * x)
defvjp(np.reciprocal, lambda g, ans, x: -g * ans * ans, dtype_rule="float")
# Masks select (np.where): an infinite cotangent where a mask is 0 gives 0, not inf * 0 = nan.
defvjp(np.abs, lambda g, ans, x: np.where(x == 0, 0, g * np.sign(x)))
defvjp(np.fabs, lambda g, ans, x: np.where(x == 0, 0, g * np.sign(x)), dtype_rule="float")
defvjp(np.sin, lambda g, ans, x: g * np.cos(x), dtype_rule="float")
defvjp(np.cos, lambda g, ans, x: -g * np.sin(x), dtype_rule="float")
defvjp(np.tan, lambda g, ans, x: g * (1 + ans * ans), dtype_rule="float")
defvjp(np.arcsin, lambda g, ans, x: g / np.sqrt(1 - x * x), dtype_rule="float")
defvjp(np.arccos, lambda g, ans, x: -g / np.sqrt(1 - x * x), dtype_rule="float")
defvjp(np.arctan, lambda g, ans, x: g / (1 + x * x), dtype_rule="float")
defvjp(np.sinh, lambda g, ans, x: g * np.cosh(x), dtype_rule="float")
defvjp(np.cosh, lambda g, ans, x: g * np.sinh(x), dtype_rule="float")
defvjp(np.tanh, lambda g, ans, x: g * (1 - ans * ans), dtype_rule="float")
defvjp(np.arcsinh, lambda g, ans, x: g / np.sqrt(x * x + 1), dtype_rule="float")
defvjp(np.arccosh, lambda g, ans, x: g / np.sqrt(x * x - 1), dtype_rule="float")
defvjp(np.arctanh, lambda g, ans, x: g / (1 - x * x), dtype_rule="float")
defvjp(np.deg2rad, lambda g, ans, x: g * (math.pi / 180), dtype_rule="float")
defvjp(np.rad2deg, lambda g, ans, x: g * (180 / math.pi), dtype_rule="float")
bind_numpy(np.radians, lookup(np.deg2rad))
bind_numpy(np.degrees, lookup(np.rad2deg))


@primitive(elementwise=True, dtype_rule="float")
def sigmoid(x):
    """The logistic function, computed without overflow."""
    return np.exp(-np.logaddexp(0, -x))


@primitive(elementwise=True)
def relu(x):
    return np.maximum(x, 0)


defvjp(sigmoid, lambda g, ans, x: g * ans * (1 - ans))
defvjp(relu, lambda g, ans, x: np.where(ans > 0, g, 0))

# Piecewise constant: a zero gradient (PyTorch records a node that returns zeros).
for _f in (np.sign, np.floor, np.ceil, np.trunc, np.rint):
    defvjp(_f, lambda g, ans, x: np.zeros_like(g))

# ---------------------------------------------------------------------------------------------
# Binary elementwise (broadcasting: gradients are summed back to each input's shape centrally).

defvjp(np.add, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
defvjp(np.subtract, lambda g, ans, x, y: g, lambda g, ans, x, y: -g)
defvjp(np.multiply, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x)
defvjp(np.divide, lambda g, ans, x, y: g / y, lambda g, ans, x, y: -g * x / (y * y),
       dtype_rule="float")
# Masks are combined with np.logical_*, not & and |: the forward rules derived from these
# (diagonal Jacobians) are differentiated again, and & | ~ have no derivative rule.
defvjp(np.power,
       lambda g, ans, x, y: np.where(y == 0, 0, g * y * x ** np.where(y == 0, 1, y - 1)),
       lambda g, ans, x, y: g * np.where(np.logical_and(x == 0, y >= 0), 0, ans * np.log(
           np.where(np.logical_and(x == 0, y >= 0), 1, x))))   # log 1 where not selected


@primitive(elementwise=True)
def pow_scalar(x, *, p):
    """``x ** p`` for a Python number ``p`` (PyTorch's ``pow(Tensor, Scalar)``)."""
    return x ** p


@primitive(elementwise=True)
def rsub(x, *, other):
    """``other - x`` for a Python number ``other`` (PyTorch's ``rsub(Tensor, Scalar)``)."""
    return other - x


defvjp(pow_scalar, lambda g, ans, x, p: g * p * x ** (p - 1) if p != 0 else np.zeros_like(g))
defvjp(rsub, lambda g, ans, x, other: -g)
defvjp(np.maximum, lambda g, ans, x, y: np.where(x == y, g / 2, np.where(x > y, g, 0)),
       lambda g, ans, x, y: np.where(x == y, g / 2, np.where(y > x, g, 0)))
defvjp(np.minimum, lambda g, ans, x, y: np.where(x == y, g / 2, np.where(x < y, g, 0)),
       lambda g, ans, x, y: np.where(x == y, g / 2, np.where(y < x, g, 0)))
# fmax/fmin pick the number over a NaN; ties split the gradient as maximum/minimum do.
def _picked_first(x, y, first):
    """Where fmax/fmin picks ``x``: ``first(x, y)``, or ``y`` is NaN."""
    return np.logical_or(first(x, y), np.isnan(y))


def _picked_second(x, y, first):
    """Where fmax/fmin picks ``y``: ``first(y, x)``, or only ``x`` is NaN."""
    return np.logical_or(first(y, x), np.logical_and(np.isnan(x), np.logical_not(np.isnan(y))))


for _f, _first in ((np.fmax, np.greater), (np.fmin, np.less)):
    defvjp(_f, lambda g, ans, x, y, _first=_first: np.where(
               x == y, g / 2, np.where(_picked_first(x, y, _first), g, 0)),
           lambda g, ans, x, y, _first=_first: np.where(
               x == y, g / 2, np.where(_picked_second(x, y, _first), g, 0)))
defvjp(np.arctan2, lambda g, ans, y, x: g * x / (x * x + y * y),
       lambda g, ans, y, x: -g * y / (x * x + y * y), dtype_rule="float")
defvjp(np.hypot, lambda g, ans, x, y: g * x / ans, lambda g, ans, x, y: g * y / ans,
       dtype_rule="float")
defvjp(np.logaddexp, lambda g, ans, x, y: g * np.exp(x - ans),
       lambda g, ans, x, y: g * np.exp(y - ans), dtype_rule="float")
defvjp(np.logaddexp2, lambda g, ans, x, y: g * np.exp2(x - ans),
       lambda g, ans, x, y: g * np.exp2(y - ans), dtype_rule="float")
defvjp(np.remainder, lambda g, ans, x, y: g, lambda g, ans, x, y: -g * np.floor_divide(x, y))
defvjp(np.fmod, lambda g, ans, x, y: g, lambda g, ans, x, y: -g * np.trunc(x / y))
defvjp(np.where, None, lambda g, ans, c, x, y: np.where(c, g, 0),
       lambda g, ans, c, x, y: np.where(c, 0, g), nin=3, broadcasts=True)
defvjp(np.clip, lambda g, ans, x, a_min=None, a_max=None:
       np.where(clip_mask(x, lo=a_min, hi=a_max), g, 0),
       lambda g, ans, x, a_min=None, a_max=None:
       np.where(clip_bound_mask(x, lo=a_min, hi=a_max, bound="lo"), g, 0),
       lambda g, ans, x, a_min=None, a_max=None:
       np.where(clip_bound_mask(x, lo=a_min, hi=a_max, bound="hi"), g, 0), nin=3,
       broadcasts=True)

# sinc' = (cos(pi x) - sinc(x)) / x, and its Taylor series near 0 (exact there, and smooth:
# the second derivative at 0 is right too).
defvjp(np.sinc, lambda g, ans, x: g * np.where(
    np.abs(x) < 1e-3, x * (x * x * (math.pi ** 4 / 30) - math.pi ** 2 / 3),
    (np.cos(math.pi * x) - ans) / np.where(np.abs(x) < 1e-3, 1.0, x)), nin=1,
       dtype_rule="float")
# nan_to_num: the gradient passes where x is finite; replaced entries are constants.
# (copy=False writes into x: refused where the call is bound.)
defvjp(np.nan_to_num, lambda g, ans, x, nan=0.0, posinf=None, neginf=None:
       np.where(np.isfinite(x), g, 0.0), nin=1)

# Forward mode: the ufuncs above are diagonal (their vjp rule is their jvp); so are these
# elementwise functions of other kinds, and ``where`` is linear in its two values.
for _f in (np.clip, np.sinc, np.nan_to_num):
    defjvp(_f, diagonal=True)
defjvp(np.where, linear=True)


# Forward rules of their own where the vjp rules combine masks with ``|``/``&``, which the
# compiler does not differentiate again (second order differentiates a jvp's source):
# ``np.logical_or``/``np.logical_and`` say the same.
# Comparisons and logic: boolean results, no gradient.
for _f in (np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
           np.logical_and, np.logical_or, np.logical_xor):
    defvjp(_f, None, None, dtype_rule="bool")
for _f in (np.logical_not, np.isnan, np.isinf, np.isfinite):
    defvjp(_f, None, dtype_rule="bool")
for _f in (np.argmax, np.argmin, np.argsort):
    defvjp(_f, None, dtype_rule="index")
defvjp(np.floor_divide, None, None)

# How Python source writes these, and the operator NumPy's arrays compute with each (hints for
# the emitters and backends: see rules/__init__.py).  ``+x`` is printed np.positive(x).
for _f, _op, _node in ((np.add, "+", ast.Add), (np.subtract, "-", ast.Sub),
                       (np.multiply, "*", ast.Mult), (np.divide, "/", ast.Div),
                       (np.power, "**", ast.Pow), (np.remainder, "%", ast.Mod),
                       (np.floor_divide, "//", ast.FloorDiv)):
    lookup(_f).spelling, lookup(_f).operator = ("operator", _op), _node
_COMPARISONS = ((np.less, "<", ast.Lt), (np.less_equal, "<=", ast.LtE),
                (np.greater, ">", ast.Gt), (np.greater_equal, ">=", ast.GtE),
                (np.equal, "==", ast.Eq), (np.not_equal, "!=", ast.NotEq))
for _f, _op, _node in _COMPARISONS:
    lookup(_f).spelling, lookup(_f).operator = ("compare", _op), _node
    lookup(_f).cuda = ("compare", _op)              # C compares as Python does
lookup(np.negative).spelling, lookup(np.negative).operator = ("unary", "-"), ast.USub
lookup(np.positive).operator = ast.UAdd
pow_scalar.spelling = ("operator", "**", "p")
pow_scalar.folds_seed = rsub.folds_seed = True     # their rules fold a number g, as ufuncs'
for _f in (np.add, np.subtract, np.multiply, np.negative, np.positive, np.abs, np.floor_divide,
           np.remainder, np.maximum, np.minimum):
    lookup(_f).int_closed = True                    # integers in, an integer out
for _f, _how in ((np.add, "plus"), (np.subtract, "minus"), (np.multiply, "times"),
                 (np.divide, "over"), (np.negative, "negated"), (np.exp, "exponential"),
                 (np.log, "logarithm"), (np.where, "choice")):
    lookup(_f).shift = _how                         # under a shift: see srcgrad.analysis.shift

# How compiled kernels compute them (hints for the backends: see rules/__init__.py).
_ARITHMETIC = (np.add, np.subtract, np.multiply, np.divide, np.power)
for _f in (*_ARITHMETIC, np.negative, np.positive, *(c[0] for c in _COMPARISONS)):
    lookup(_f).fused_operator = True                # a fused region holds it as its operator
for _f in (*_ARITHMETIC, np.remainder, np.floor_divide, np.negative, np.positive,
           *(c[0] for c in _COMPARISONS)):
    lookup(_f).numba = ("operator",)
for _f in (np.divide, np.power, np.remainder, np.floor_divide):
    lookup(_f).python_raises = True
lookup(np.sqrt).power_of, lookup(np.square).power_of = 0.5, 2
lookup(np.reciprocal).numerator = 1.0
lookup(np.add).reduce_from, lookup(np.maximum).reduce_from = 0, -math.inf
lookup(np.minimum).reduce_from = math.inf
for _f, _node in ((np.logical_and, ast.BitAnd), (np.logical_or, ast.BitOr),
                  (np.logical_xor, ast.BitXor)):
    lookup(_f).numba = ("logical", _node)           # over truth values: ``a != 0`` first
lookup(np.where).numba, lookup(np.logical_not).numba = ("ternary",), ("not",)
lookup(np.absolute).numba = ("builtin", "abs")
lookup(np.square).numba, lookup(np.reciprocal).numba = ("exponent",), ("quotient",)
for _n in ("sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh exp exp2 "
           "expm1 log log2 log10 log1p sqrt cbrt floor ceil trunc rint fabs sign isnan isinf "
           "isfinite deg2rad rad2deg maximum minimum fmax fmin logaddexp logaddexp2 arctan2 "
           "hypot fmod").split():
    lookup(getattr(np, _n)).numba = ("call",)       # numba's np.<name> of scalars is NumPy's
for _f in (np.exp, np.expm1, np.log, np.log1p, np.sin, np.cos, np.tanh):
    lookup(_f).f64_twin = "fast"
for _f in (np.sign, np.maximum, np.minimum):
    lookup(_f).f64_twin = "zeros"
for _n in ("tanh exp log sin cos tan sqrt absolute negative sign square log1p expm1 sinh cosh "
           "arctan arcsin arccos fabs log2 log10 maximum minimum arctan2 hypot add subtract "
           "multiply divide").split():
    lookup(getattr(np, _n)).numba_arrays = True
for _n in ("sin cos tan sinh cosh tanh exp exp2 expm1 log log2 log10 log1p sqrt cbrt floor ceil "
           "trunc rint fabs hypot fmod fmax fmin arcsin=asin arccos=acos arctan=atan "
           "arcsinh=asinh arccosh=acosh arctanh=atanh arctan2=atan2 power=pow "
           "absolute=fabs").split():
    lookup(getattr(np, _n.partition("=")[0])).cuda = ("call", _n.rpartition("=")[2])
for _n in ("isnan", "isinf", "isfinite"):
    lookup(getattr(np, _n)).cuda = ("predicate", _n)
for _f, _c in ((np.add, "+"), (np.subtract, "-"), (np.multiply, "*"), (np.divide, "/")):
    lookup(_f).cuda = ("infix", _c)
lookup(np.negative).cuda, lookup(np.positive).cuda = ("unary", "-"), ("unary", "+")
for _f, _c in ((np.logical_and, "&&"), (np.logical_or, "||"), (np.logical_xor, "!="),
               (np.logical_not, "!")):
    lookup(_f).cuda = ("logical", _c)
for _f, _c in ((np.add, "||"), (np.multiply, "&&"), (np.maximum, "||"), (np.minimum, "&&")):
    lookup(_f).cuda_bool = _c                       # NumPy's True + True is True
_NAN = "np.maximum/np.minimum: a NaN in either argument propagates"
lookup(np.maximum).cuda = (
    "helper", "{t} np_maximum({t} a, {t} b) {{ return (a > b || a != a) ? a : b; }}", _NAN)
lookup(np.minimum).cuda = (
    "helper", "{t} np_minimum({t} a, {t} b) {{ return (a < b || a != a) ? a : b; }}", _NAN)
lookup(np.sign).cuda = ("helper", "{t} np_sign({t} a) {{ return a > {zero} ? {one} : "
                        "(a < {zero} ? -{one} : (a == {zero} ? {zero} : a)); }}",
                        "np.sign: -1, 0 or 1 (+0 for -0), and NaN for NaN")
lookup(np.square).cuda = ("helper", "{t} np_square({t} a) {{ return a * a; }}",
                          "np.square, x ** 2: x * x, exactly (pow need not be)", "{a} * {a}")
lookup(np.reciprocal).cuda, lookup(np.where).cuda = ("quotient",), ("ternary",)

# Truth values, indices and piecewise constants that record no node: run on plain data.
_TRUTH, _INDICES = "a boolean result", "integer indices or counts"
_CONSTANT = "piecewise constant: its derivative is zero wherever it exists"
NO_GRADIENT.update({
    np.all: _TRUTH, np.any: _TRUTH, np.isclose: _TRUTH, np.allclose: _TRUTH,
    np.signbit: _TRUTH, np.isposinf: _TRUTH, np.isneginf: _TRUTH,
    np.count_nonzero: _INDICES, np.nonzero: _INDICES, np.argwhere: _INDICES,
    np.flatnonzero: _INDICES, np.searchsorted: _INDICES, np.digitize: _INDICES,
    np.nanargmax: _INDICES, np.nanargmin: _INDICES, np.argpartition: _INDICES,
    np.lexsort: _INDICES, np.round: _CONSTANT, np.around: _CONSTANT, np.fix: _CONSTANT,
})


# ---------------------------------------------------------------------------------------------
# NumPy's complex-number functions of real values: ``real``, ``imag``, ``conj``/``conjugate``,
# ``angle``, ``real_if_close``.  Of a real value the real part, the conjugate and
# ``real_if_close`` are the value itself (its gradient passes; ``real_if_close`` is ``real``: of
# a real array both share its memory), the imaginary part is zeros and the angle 0 or pi (no
# gradient).  The primal is NumPy's own call.  Complex values are a later issue: a gradient
# through one is refused by the rule (a CompileError through the safety net, a TypeError in the
# eager engine), never treated as real.

@helper
def real_only(g, x, name):
    """``g``, the gradient through ``np.<name>(x)``, when ``x`` (and ``g``) are real; complex
    values are refused: srcgrad does not differentiate them yet.  (A Tensor, when the rule
    is differentiated itself, is tested by its array.)"""
    if np.iscomplexobj(getattr(x, "_data", x)) or np.iscomplexobj(getattr(g, "_data", g)):
        raise NotCompiled(f"np.{name} of complex values: srcgrad does not differentiate "
                          "complex numbers yet")
    return g


defvjp(np.real, lambda g, ans, val: real_only(g, val, "real"), nin=1, dtype_rule="same")
defvjp(np.conjugate, lambda g, ans, x: real_only(g, x, "conjugate"), dtype_rule="same")
defvjp(np.imag, lambda g, ans, val: np.zeros_like(real_only(g, val, "imag")), nin=1,
       dtype_rule="same")
defvjp(np.angle, lambda g, ans, z, deg=False: np.zeros_like(real_only(g, z, "angle")), nin=1,
       dtype_rule="float")


def _real_if_close(a, tol=100):
    """Of a real array ``np.real_if_close`` returns the array itself: ``np.real``'s view (a
    write through it shows in ``a``, as the alias analysis knows of ``real``)."""
    return lookup(np.real)(a)


bind_numpy(np.real_if_close, lookup(np.real), _real_if_close)


# ---------------------------------------------------------------------------------------------
# Python's ``math`` functions as primitives: ``math.log(x)`` runs as Python runs it.  Python's
# function raises where NumPy's gives nan or inf (``math.log(-1.0)``: ValueError,
# ``math.exp(1000.0)``: OverflowError) and returns a float, so each is a primitive of its own
# that calls it, with the rules of its NumPy twin.  The compiler prints ``math.log(x)`` and never
# drops it as dead code: its error is part of what the program does.

MATH_TWINS = {
    math.exp: np.exp, math.log: np.log, math.sqrt: np.sqrt, math.sin: np.sin,
    math.cos: np.cos, math.tan: np.tan, math.tanh: np.tanh, math.sinh: np.sinh,
    math.cosh: np.cosh, math.asin: np.arcsin, math.acos: np.arccos, math.atan: np.arctan,
    math.atan2: np.arctan2, math.hypot: np.hypot, math.log1p: np.log1p, math.expm1: np.expm1,
    math.log10: np.log10, math.log2: np.log2, math.fabs: np.fabs, math.pow: np.power,
    math.asinh: np.arcsinh, math.acosh: np.arccosh, math.atanh: np.arctanh,
}
"""Each ``math`` function → the NumPy function whose derivative rules it shares."""


def math_primitive(fun: object, twin: object) -> Primitive:
    """The primitive of Python's ``math`` function ``fun``, with the rules of ``twin``."""
    rules = lookup(twin)
    prim = primitive(fun, name=f"math_{fun.__name__}", nin=rules.nin, elementwise=True,
                     dtype_rule="float")
    return defvjp(prim, *rules.vjps)


for _f in (np.imag, np.angle):
    defjvp(_f, diagonal=True)
for _f in (np.real, np.conjugate):   # linear (over the reals): no complex check to print
    defjvp(_f, linear=True)

MATH_PRIMITIVES: dict[object, Primitive] = {
    f: math_primitive(f, twin) for f, twin in MATH_TWINS.items()}
"""Each ``math`` function → its primitive (``math_log`` …)."""
