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
from srcgrad.runtime.rules.operators import OPERATORS, operation, operations

__all__ = ["Unsupported", "SUPPORTED", "supports", "Term", "write_expr", "spell",
           "dtype_expr", "constant", "in_kind"]


SUPPORTED = frozenset(f for f, p in operations().items() if p.numba is not None)
"""Every function a kernel's expression may apply: an operator where numba's means what the
ufunc does on float64 (numba's ``np.remainder`` and ``np.floor_divide`` on scalars differ from
NumPy's; its ``%`` and ``//`` agree, under ``error_model="numpy"``), or a ufunc numba compiles
for scalars with NumPy's float64 results (checked, jitted and as Python, over NaN, inf, signed
zeros and ordinary values; libm's within 2 ulp)."""


def _bool_result(func: object) -> bool:
    """Whether this emitter writes ``func`` for a bool result (NumPy's ``True + True`` is
    True, which it does not write)."""
    prim = operation(func)
    how = prim.numba if prim is not None else None
    return how is not None and (how[0] in ("ternary", "not", "logical", "bitwise") or (
        how[0] == "operator" and issubclass(prim.operator, ast.cmpop)) or (
        how[0] == "call" and prim.dtype_rule == "bool"))


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
    if dtype.kind == "b" and not _bool_result(e.func):
        raise Unsupported(f"{getattr(e.func, '__name__', e.func)} of bools")
    return spell(e.func, [write_expr(a, env, helpers) for a in e.args], dtype, helpers)


def spell(f: object, args: list[Term], dtype: np.dtype,
          helpers: frozenset[str] = frozenset()) -> Term:
    """``f(*args)`` in numba's Python: an operator where one means the same, a function of
    ``helpers`` (or of ``ZEROS``) where one computes it, else ``np.f(...)``."""
    nodes = [a.node for a in args]
    python = all(a.python for a in args)
    bools = all(a.dtype.kind == "b" for a in args)
    prim = operation(f)
    how = (prim.numba if prim is not None else None) or ("",)
    if how[0] == "ternary":
        body, orelse = (ast.Constant(in_kind(n.value, dtype)) if isinstance(n, ast.Constant)
                        else n for n in nodes[1:])
        return Term(ast.IfExp(nodes[0], body, orelse), dtype, args[1].python or args[2].python)
    if how[0] == "exponent":                     # np.square: x ** 2
        exponent = Term(ast.Constant(prim.power_of), literal_dtype(prim.power_of), True)
        return spell(OPERATORS[ast.Pow].fn, [args[0], exponent], dtype)
    if how[0] == "quotient" and dtype.kind == "f":   # np.reciprocal: 1.0 / x
        numerator = Term(ast.Constant(prim.numerator), dtype, True)
        return spell(OPERATORS[ast.Div].fn, [numerator, args[0]], dtype)
    if how[0] == "operator" and issubclass(prim.operator, ast.operator):
        left, by = nodes[0], nodes[1]
        exact = prim.operator is ast.Div and isinstance(by, ast.Constant) and by.value != 0
        if prim.python_raises and python and not exact:   # (exact: `/` by a nonzero literal)
            left = ast.Call(dtype_expr(dtype), [left], [])    # NumPy's rules, not Python's
            python = False
        return Term(ast.BinOp(left, prim.operator(), nodes[1]), dtype, python)
    if how[0] == "operator" and issubclass(prim.operator, ast.cmpop):
        return Term(ast.Compare(nodes[0], [prim.operator()], [nodes[1]]), dtype, python)
    if how[0] == "operator":
        return Term(ast.UnaryOp(prim.operator(), nodes[0]), dtype, python)
    if how[0] == "logical":
        if not bools:
            nodes = [ast.Compare(n, [ast.NotEq()], [ast.Constant(0)]) for n in nodes]
        return Term(ast.BinOp(nodes[0], how[1](), nodes[1]), dtype, python)
    if how[0] == "bitwise" and all(a.dtype.kind in "biu" for a in args):
        return Term(ast.BinOp(nodes[0], how[1](), nodes[1]), dtype, python)
    if how[0] == "not":                        # `not v` is a Python bool, whatever v is
        return Term(ast.UnaryOp(ast.Not(), nodes[0]) if bools
                    else ast.Compare(nodes[0], [ast.Eq()], [ast.Constant(0)]), dtype,
                    bools or python)
    if how[0] == "builtin":
        return Term(ast.Call(ast.Name(how[1], ast.Load()), nodes, []), dtype, python)
    if how[0] == "call":
        helper = spelling(f, dtype)
        func = (ast.Name(helper, ast.Load()) if helper in helpers or helper in ZEROS.values()
                else attr(f.__name__))
        return Term(ast.Call(func, nodes, []), dtype, False)      # a NumPy scalar
    raise Unsupported(f"numba kernels cannot write {getattr(f, '__name__', f)!r} "
                      f"for these dtypes ({', '.join(str(a.dtype) for a in args)})")
