"""``scipy.linalg.solve_triangular`` and ``cho_solve`` in the eager fallback.

Both convert their operands with ``np.asarray``; while a function runs on the eager engine,
:mod:`srcgrad.transforms.eager_calls` routes them here when an operand carries a gradient.
``solve_triangular(a, b, lower=...)`` is one primitive (SciPy computes the value; only the
triangle of ``a`` it reads gets a gradient), defined for the fallback alone (the compiler has
no lowering for it); ``cho_solve((c, lower), b)`` is the two triangular solves LAPACK's
``potrs`` does.  Other forms (``trans=``, ``unit_diagonal=True``, stacks of matrices) are
refused by name.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from srcgrad.runtime.rules.primitives import Primitive, defjvp, defvjp

__all__ = ["solve_triangular_rule", "cho_solve_rule"]


def _solve(a: Any, b: Any, *, lower: bool) -> Any:
    from scipy.linalg import solve_triangular
    return solve_triangular(a, b, lower=lower)


SOLVE_TRIANGULAR = Primitive("solve_triangular", _solve, 2, dtype_rule="float")


def _triangle(m: Any, lower: bool) -> Any:
    return np.tril(m) if lower else np.triu(m)


def _transposed_solve(a: Any, g: Any, lower: bool) -> Any:
    """``T^-T g`` for the triangle ``T`` of ``a``: the solve with ``a``'s transpose."""
    return SOLVE_TRIANGULAR(np.swapaxes(a, -1, -2), g, lower=not lower)


def _vjp_a(g: Any, ans: Any, a: Any, b: Any, lower: bool = False) -> Any:
    gb = _transposed_solve(a, g, lower)
    outer = np.outer(gb, ans) if np.ndim(ans) == 1 else np.matmul(gb, np.swapaxes(ans, -1, -2))
    return -_triangle(outer, lower)


def _vjp_b(g: Any, ans: Any, a: Any, b: Any, lower: bool = False) -> Any:
    return _transposed_solve(a, g, lower)


def _jvp(tangents: list, ans: Any, a: Any, b: Any, lower: bool = False) -> Any:
    da, db = tangents
    rhs = db
    if da is not None:
        moved = np.matmul(_triangle(da, lower), ans)
        rhs = -moved if rhs is None else rhs - moved
    return None if rhs is None else SOLVE_TRIANGULAR(a, rhs, lower=lower)


defvjp(SOLVE_TRIANGULAR, _vjp_a, _vjp_b)
defjvp(SOLVE_TRIANGULAR, _jvp)

_P = inspect.Parameter
_SOLVE_SIG = inspect.Signature([_P("a", _P.POSITIONAL_OR_KEYWORD),
                                _P("b", _P.POSITIONAL_OR_KEYWORD)] + [
    _P(n, _P.POSITIONAL_OR_KEYWORD, default=d) for n, d in (
        ("trans", 0), ("lower", False), ("unit_diagonal", False), ("overwrite_b", False),
        ("check_finite", True))])
_CHO_SIG = inspect.Signature([_P("c_and_lower", _P.POSITIONAL_OR_KEYWORD),
                              _P("b", _P.POSITIONAL_OR_KEYWORD)] + [
    _P(n, _P.POSITIONAL_OR_KEYWORD, default=d) for n, d in (
        ("overwrite_b", False), ("check_finite", True))])


def _check(name: str, a: Any, b: Any) -> None:
    if np.ndim(a) != 2 or np.ndim(b) not in (1, 2):
        raise TypeError(f"scipy.linalg.{name} is followed by srcgrad's eager run for one "
                        "2-D matrix and a 1-D or 2-D right-hand side, not stacks of them")


def solve_triangular_rule(*args: Any, **kwargs: Any) -> Any:
    """``scipy.linalg.solve_triangular`` of operands that carry a gradient, recorded."""
    bound = _SOLVE_SIG.bind(*args, **kwargs)
    bound.apply_defaults()
    p = bound.arguments
    if p["trans"] not in (0, "N") or p["unit_diagonal"]:
        raise TypeError("scipy.linalg.solve_triangular is followed by srcgrad's eager run "
                        "with trans=0 and unit_diagonal=False only")
    _check("solve_triangular", p["a"], p["b"])
    return SOLVE_TRIANGULAR(p["a"], p["b"], lower=bool(p["lower"]))


def cho_solve_rule(*args: Any, **kwargs: Any) -> Any:
    """``scipy.linalg.cho_solve((c, lower), b)`` of operands that carry a gradient: the
    solves with the factor and with its transpose."""
    bound = _CHO_SIG.bind(*args, **kwargs)
    c, lower = bound.arguments["c_and_lower"]
    b = bound.arguments["b"]
    _check("cho_solve", c, b)
    lower = bool(lower)
    if lower:                                 # A = L L^T
        return _transposed_solve(c, SOLVE_TRIANGULAR(c, b, lower=True), True)
    return SOLVE_TRIANGULAR(c, _transposed_solve(c, b, False), lower=False)   # A = U^T U
