"""How the numba kernels write a region's expressions: NumPy ufuncs as numba's Python.

An expression becomes a Python expression over scalars, which numba compiles (and which runs
as it is, more slowly, without numba): an operator where numba's operator means what the ufunc
does on float64 (``%`` and ``//`` rather than numba's ``np.remainder``/``np.floor_divide``,
which differ), ``np.where`` as a conditional expression, ``exp_f64(v)`` for the float64
transcendental functions of :mod:`srcgrad.codegen.backends.numba.libm` that the kernel may call
(they
vectorise; libm's do not), ``sign_f64``, ``maximum_f64`` and ``minimum_f64`` where numba's
``np.sign``, ``np.maximum`` and ``np.minimum`` differ from NumPy's on signed zeros, and
``np.sin(v)`` for the other ufuncs numba compiles for scalars with NumPy's results.  Anything
else is :class:`Unsupported`.

Without numba's JIT the same text runs on NumPy scalars and Python numbers, and Python
numbers raise (or turn complex) where NumPy gives inf or nan: each written expression knows
whether its value may be a Python number at run time (a literal, a Python scalar argument,
a conditional with such a branch, an operator over such values), and a division, power,
remainder or floor division over Python numbers only converts its left operand to NumPy's
scalar first (``np.float64(2.0) / z``).
"""

from __future__ import annotations

import ast
import math

import numpy as np

from srcgrad.codegen.backends.fusion.regions import Apply, Expr, Lit, Ref, Unsupported
from srcgrad.codegen.backends.numba.libm import ZEROS, spelling

__all__ = ["Unsupported", "SUPPORTED", "OPERATORS", "supports", "Term", "write_expr", "spell",
           "dtype_expr", "constant", "in_kind"]


OPERATORS = {np.add: ast.Add, np.subtract: ast.Sub, np.multiply: ast.Mult,
             np.true_divide: ast.Div, np.power: ast.Pow, np.remainder: ast.Mod,
             np.floor_divide: ast.FloorDiv}
"""Ufuncs written as Python operators (numba's ``np.remainder`` and ``np.floor_divide`` on
scalars differ from NumPy's; its ``%`` and ``//`` agree, under ``error_model="numpy"``)."""
_RAISING = (np.true_divide, np.power, np.remainder, np.floor_divide)
"""Operators that Python numbers make raise (or turn complex) where NumPy gives inf or nan."""
_COMPARE = {np.greater: ast.Gt, np.greater_equal: ast.GtE, np.less: ast.Lt,
            np.less_equal: ast.LtE, np.equal: ast.Eq, np.not_equal: ast.NotEq}
_UNARY = {np.negative: ast.USub, np.positive: ast.UAdd}
_LOGICAL = {np.logical_and: ast.BitAnd, np.logical_or: ast.BitOr, np.logical_xor: ast.BitXor}
_BITWISE = {np.bitwise_and: ast.BitAnd, np.bitwise_or: ast.BitOr, np.bitwise_xor: ast.BitXor}
_SPECIAL = (np.where, np.logical_not, np.absolute, np.square, np.reciprocal)
_CALLS = frozenset({
    np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh,
    np.arcsinh, np.arccosh, np.arctanh, np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10,
    np.log1p, np.sqrt, np.cbrt, np.floor, np.ceil, np.trunc, np.rint, np.fabs, np.sign,
    np.isnan, np.isinf, np.isfinite, np.signbit, np.deg2rad, np.rad2deg, np.degrees,
    np.radians, np.maximum, np.minimum, np.fmax, np.fmin, np.logaddexp, np.logaddexp2,
    np.copysign, np.arctan2, np.hypot, np.float_power, np.nextafter, np.fmod})
"""Ufuncs written ``np.name(...)`` or as a helper of :mod:`~srcgrad.codegen.backends.numba.libm`:
numba compiles each of them for scalars, and they match NumPy for float64 (checked, jitted
and as Python, over NaN, inf, signed zeros and ordinary values; libm's within 2 ulp)."""
_BOOL_RESULTS = frozenset({np.where, np.logical_not, np.isnan, np.isinf, np.isfinite,
                           np.signbit, *_COMPARE, *_LOGICAL, *_BITWISE})
"""The functions this emitter writes for a bool result (NumPy's ``True + True`` is True)."""


SUPPORTED = frozenset({*OPERATORS, *_COMPARE, *_UNARY, *_LOGICAL, *_BITWISE, *_SPECIAL, *_CALLS})
"""Every function a kernel's expression may apply."""


def supports(func: object) -> bool:
    """Whether the emitter can write ``func`` (a ufunc or ``np.where``) in a kernel.  A region
    can still be refused for its dtypes (``Unsupported`` from :meth:`NumbaKernels.kernel`)."""
    try:
        return func in SUPPORTED
    except TypeError:                  # unhashable: no ufunc
        return False


def attr(name: str) -> ast.expr:
    """``np.name``."""
    return ast.Attribute(ast.Name("np", ast.Load()), name, ast.Load())


def dtype_expr(dtype: np.dtype) -> ast.expr:
    """``np.float64``, ``np.bool_``: the dtype as numba and NumPy both read it."""
    dtype = np.dtype(dtype)
    return attr("bool_" if dtype.kind == "b" else dtype.name)


def constant(value: float | int | bool) -> ast.expr:
    """A literal, with ``np.inf`` and ``np.nan`` for the floats Python cannot write."""
    if isinstance(value, float) and not math.isfinite(value):
        node = attr("nan" if math.isnan(value) else "inf")
        return ast.UnaryOp(ast.USub(), node) if value < 0 else node
    return ast.Constant(value)


def in_kind(value: float | int | bool, dtype: np.dtype) -> float | int | bool:
    """``value`` as a Python number of ``dtype``'s kind (``0`` -> ``0.0`` for a float)."""
    kind = np.dtype(dtype).kind
    return float(value) if kind == "f" else bool(value) if kind == "b" else int(value)


def literal_dtype(value: float | int | bool) -> np.dtype:
    """The dtype NumPy gives a Python number alone."""
    return np.dtype(bool if isinstance(value, bool) else int if isinstance(value, int)
                    else float)


class Term:
    """An expression written for the kernel: its node, dtype, and whether its value may be a
    Python number when the kernel runs as Python (``python``: a literal, a scalar argument
    passed as a Python number, a conditional with such a branch, an operator over such
    values); an element of an array and a NumPy function's result are NumPy scalars."""

    def __init__(self, node: ast.expr, dtype: np.dtype, python: bool):
        self.node, self.dtype, self.python = node, np.dtype(dtype), python


def write_expr(e: Expr, env: dict[str, Term], helpers: frozenset[str] = frozenset()) -> Term:
    """``e`` written for the kernel; ``env``: how each name is read at the loops' index;
    ``helpers``: the functions of :mod:`~srcgrad.codegen.backends.numba.libm` it may call."""
    if isinstance(e, Ref):
        if e.name not in env:
            raise ValueError(f"a region reads {e.name}, which it never defines")
        return env[e.name]
    if isinstance(e, Lit):
        return Term(constant(e.value), literal_dtype(e.value), True)
    if not isinstance(e, Apply):
        raise TypeError(f"not an expression of a region: {e!r}")
    dtype = np.dtype(e.dtype)
    if dtype.kind not in "biuf":
        raise Unsupported(f"{e.func} gives dtype {dtype}")
    if dtype.kind == "b" and e.func not in _BOOL_RESULTS:
        raise Unsupported(f"{getattr(e.func, '__name__', e.func)} of bools")
    return spell(e.func, [write_expr(a, env, helpers) for a in e.args], dtype, helpers)


def spell(f: object, args: list[Term], dtype: np.dtype,
          helpers: frozenset[str] = frozenset()) -> Term:
    """``f(*args)`` in numba's Python: an operator where one means the same, a function of
    ``helpers`` (or of ``ZEROS``) where one computes it, else ``np.f(...)``."""
    nodes = [a.node for a in args]
    python = all(a.python for a in args)
    bools = all(a.dtype.kind == "b" for a in args)
    if f is np.where:
        body, orelse = (ast.Constant(in_kind(n.value, dtype)) if isinstance(n, ast.Constant)
                        else n for n in nodes[1:])
        return Term(ast.IfExp(nodes[0], body, orelse), dtype, args[1].python or args[2].python)
    if f is np.square:
        return spell(np.power, [args[0], Term(ast.Constant(2), np.dtype(int), True)], dtype)
    if f is np.reciprocal and dtype.kind == "f":
        return spell(np.true_divide, [Term(ast.Constant(1.0), dtype, True), args[0]], dtype)
    if f in OPERATORS:
        left, by = nodes[0], nodes[1]
        exact = f is np.true_divide and isinstance(by, ast.Constant) and by.value != 0
        if f in _RAISING and python and not exact:        # (exact: `/` by a nonzero literal)
            left = ast.Call(dtype_expr(dtype), [left], [])    # NumPy's rules, not Python's
            python = False
        return Term(ast.BinOp(left, OPERATORS[f](), nodes[1]), dtype, python)
    if f in _COMPARE:
        return Term(ast.Compare(nodes[0], [_COMPARE[f]()], [nodes[1]]), dtype, python)
    if f in _UNARY:
        return Term(ast.UnaryOp(_UNARY[f](), nodes[0]), dtype, python)
    if f in _LOGICAL:
        if not bools:
            nodes = [ast.Compare(n, [ast.NotEq()], [ast.Constant(0)]) for n in nodes]
        return Term(ast.BinOp(nodes[0], _LOGICAL[f](), nodes[1]), dtype, python)
    if f in _BITWISE and all(a.dtype.kind in "biu" for a in args):
        return Term(ast.BinOp(nodes[0], _BITWISE[f](), nodes[1]), dtype, python)
    if f is np.logical_not:                    # `not v` is a Python bool, whatever v is
        return Term(ast.UnaryOp(ast.Not(), nodes[0]) if bools
                    else ast.Compare(nodes[0], [ast.Eq()], [ast.Constant(0)]), dtype,
                    bools or python)
    if f is np.absolute:
        return Term(ast.Call(ast.Name("abs", ast.Load()), nodes, []), dtype, python)
    if f in _CALLS:
        helper = spelling(f, dtype)
        func = (ast.Name(helper, ast.Load()) if helper in helpers or helper in ZEROS.values()
                else attr(f.__name__))
        return Term(ast.Call(func, nodes, []), dtype, False)      # a NumPy scalar
    raise Unsupported(f"numba kernels cannot write {getattr(f, '__name__', f)!r} "
                      f"for these dtypes ({', '.join(str(a.dtype) for a in args)})")
