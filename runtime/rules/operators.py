"""Python's operators, and the primitive that owns each NumPy function the backends meet.

:data:`OPERATORS` is the one table from an operator of Python's :mod:`ast` (``ast.Add``,
``ast.USub``, ``ast.Lt``) to the primitive NumPy's arrays compute it with (``x + y`` calls
``np.add``), built from the primitives' ``operator`` hints.  :func:`operation` finds the
primitive of a NumPy function as code names it, whose hints say how kernels compute it.  The
ufuncs srcgrad never differentiates but kernels still compute (``np.invert``,
``np.bitwise_and``, ``np.copysign`` ...) get primitives here, outside the rule table, for their
hints alone.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.runtime.rules import elementwise, linalg, reductions  # noqa: F401  (their hints)
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS, PRIMITIVES, Primitive

__all__ = ["OPERATORS", "POWERS", "operation", "operations"]


def _hints_only(fun: np.ufunc, dtype_rule: str = "promote", **hints: Any) -> Primitive:
    """A primitive without rules for ``fun``, holding ``hints`` (each one declared)."""
    prim = Primitive(fun.__name__, fun, fun.nin, elementwise=True, dtype_rule=dtype_rule)
    for name, value in hints.items():
        if not hasattr(Primitive, name):
            raise AttributeError(f"{name!r} is no hint a Primitive declares")
        setattr(prim, name, value)
    return prim


_HINTS_ONLY: dict[Callable, Primitive] = {p.fn: p for p in (
    _hints_only(np.invert, operator=ast.Invert, cuda=("bits", "!")),
    _hints_only(np.bitwise_and, numba=("bitwise", ast.BitAnd), cuda=("bits", "&&")),
    _hints_only(np.bitwise_or, numba=("bitwise", ast.BitOr), cuda=("bits", "||")),
    _hints_only(np.bitwise_xor, numba=("bitwise", ast.BitXor), cuda=("bits", "!=")),
    _hints_only(np.copysign, numba=("call",), cuda=("call", "copysign")),
    _hints_only(np.nextafter, numba=("call",)),
    _hints_only(np.float_power, numba=("call",)),
    _hints_only(np.signbit, "bool", numba=("call",), cuda=("predicate", "signbit")),
)}

_ORDER = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.MatMult, ast.Pow, ast.Mod, ast.FloorDiv,
          ast.USub, ast.UAdd, ast.Invert, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
"""The order the table lists them in (and the documentation after it)."""


def _owners() -> list[Primitive]:
    return [*PRIMITIVES.values(), *_HINTS_ONLY.values()]


OPERATORS: dict[type[ast.AST], Primitive] = dict(sorted(
    ((p.operator, p) for p in _owners() if p.operator is not None),
    key=lambda item: _ORDER.index(item[0])))
"""Each operator of Python's ``ast`` → the primitive NumPy's arrays compute it with; a binary
operator is an ``ast.operator``, a unary one an ``ast.unaryop``, a comparison an ``ast.cmpop``."""

POWERS: dict[float, Primitive] = {p.power_of: p for p in _owners() if p.power_of is not None}
"""An exponent ``c`` → the primitive NumPy computes an array's ``x ** c`` with (``np.sqrt`` for
0.5), not ``np.power``."""


def operation(fun: Any) -> Primitive | None:
    """The primitive whose hints describe NumPy's ``fun``, called with NumPy's own signature
    (``np.degrees`` is ``rad2deg``'s); None for another function or one bound through an
    adapter (``np.select``, which the ``where`` primitive runs as nested ``where`` calls)."""
    try:
        bound = NUMPY_BINDINGS.get(fun)
        if bound is None:
            return _HINTS_ONLY.get(fun)
    except TypeError:                   # unhashable: no NumPy function
        return None
    prim, adapter = bound
    return prim if adapter is prim or getattr(adapter, "plain", False) else None


def operations() -> dict[Callable, Primitive]:
    """Every NumPy function :func:`operation` knows, with its primitive."""
    found = {f: operation(f) for f in NUMPY_BINDINGS}
    return {**{f: p for f, p in found.items() if p is not None}, **_HINTS_ONLY}
