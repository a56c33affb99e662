"""``scipy.linalg``'s triangular and Cholesky solves: ``solve_triangular``, ``cho_factor`` and
``cho_solve``, for one 2-D matrix and a 1-D or 2-D right-hand side.

``solve_triangular(a, b, trans, lower, unit_diagonal)`` is one primitive: SciPy computes the
value, and only the triangle of ``a`` it reads gets a gradient (without its diagonal when
``unit_diagonal``).  ``cho_solve((c, lower), b)`` is the two triangular solves LAPACK's
``potrs`` does, so it reads ``c``'s triangle only.  ``cho_factor(a, lower)`` returns ``(c,
lower)`` where ``c`` holds the Cholesky factor in one triangle and, in the other, what LAPACK
left there: ``a``'s own entries (SciPy documents them as arbitrary); the factor's gradient is
``cholesky``'s (of the triangle of ``a`` it reads), the other triangle's passes to ``a``.

The functions ``*_call`` take SciPy's signatures: the eager engine calls them for SciPy's
functions when an operand carries a gradient, and the compiler lowers the same primitives.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from srcgrad.runtime.rules.decompositions import cholesky_grad, eye_of
from srcgrad.runtime.rules.primitives import NotCompiled, defjvp, defvjp, helper, primitive

__all__ = ["solve_triangular", "cho_factor_c", "cho_solve", "solve_triangular_call",
           "cho_solve_call", "cho_factor_call", "triangle_of", "transposed_mode",
           "check_operands"]


@primitive(nin=2, dtype_rule="float")
def solve_triangular(a, b, *, trans=0, lower=False, unit_diagonal=False):
    """``scipy.linalg.solve_triangular(a, b, trans, lower, unit_diagonal)``."""
    from scipy import linalg
    _refuse(check_operands("solve_triangular", a, b))
    return linalg.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)


@helper
def transposed_mode(trans):
    """The ``trans`` that solves with the transpose (real matrices: ``'C'`` is ``'T'``)."""
    return 0 if trans in (1, 2, "T", "C") else 1


@helper
def is_transposed(trans):
    return trans in (1, 2, "T", "C")


def triangle_of(m, lower, unit_diagonal):
    """The entries of ``m`` in the triangle a solve reads (without the diagonal when it is
    taken as ones)."""
    part = np.tril(m) if lower else np.triu(m)
    return part - np.tril(np.triu(m)) if unit_diagonal else part


def _vjp_a(g, ans, a, b, trans=0, lower=False, unit_diagonal=False):
    gb = solve_triangular(a, g, trans=transposed_mode(trans), lower=lower,
                          unit_diagonal=unit_diagonal)
    n = a.shape[0]
    x, gb = np.reshape(ans, (n, -1)), np.reshape(gb, (n, -1))       # a vector: one column
    outer = np.where(is_transposed(trans), -np.matmul(x, np.swapaxes(gb, -1, -2)),
                     -np.matmul(gb, np.swapaxes(x, -1, -2)))
    return triangle_of(outer, lower, unit_diagonal)


def _vjp_b(g, ans, a, b, trans=0, lower=False, unit_diagonal=False):
    return solve_triangular(a, g, trans=transposed_mode(trans), lower=lower,
                            unit_diagonal=unit_diagonal)


def _jvp(tangents, ans, a, b, trans=0, lower=False, unit_diagonal=False):
    da, db = tangents
    rhs = db
    if da is not None:
        part = triangle_of(da, lower, unit_diagonal)
        part = np.where(is_transposed(trans), np.swapaxes(part, -1, -2), part)
        rhs = -np.matmul(part, ans) if rhs is None else rhs - np.matmul(part, ans)
    return solve_triangular(a, rhs, trans=trans, lower=lower, unit_diagonal=unit_diagonal)


defvjp(solve_triangular, _vjp_a, _vjp_b)
defjvp(solve_triangular, _jvp)


@primitive(nin=1, dtype_rule="float")
def cho_factor_c(a, *, lower=False):
    """The matrix ``c`` of ``scipy.linalg.cho_factor(a, lower)``."""
    from scipy import linalg
    _refuse(check_operands("cho_factor", a))
    return linalg.cho_factor(a, lower=lower)[0]


@helper
def _strict_other(m, lower):
    """The entries of ``m`` strictly inside the triangle a factor does not use."""
    return np.triu(m, 1) if lower else np.tril(m, -1)


def _factor_part(c, lower):
    return np.tril(c) if lower else np.triu(c)


def _cho_factor_vjp(g, ans, a, lower=False):
    factor = _factor_part(ans, lower)
    return cholesky_grad(_factor_part(g, lower), factor, not lower) + _strict_other(g, lower)


def _cho_factor_jvp(tangents, ans, a, lower=False):
    factor = _factor_part(ans, lower)
    t = tangents[0]
    sym = np.tril(t) + np.swapaxes(np.tril(t, -1), -1, -2) if lower else \
        np.triu(t) + np.swapaxes(np.triu(t, 1), -1, -2)
    low = factor if lower else np.swapaxes(factor, -1, -2)          # A = L L^T
    inner = np.linalg.solve(low, np.swapaxes(np.linalg.solve(low, sym), -1, -2))
    phi = np.tril(inner) - 0.5 * inner * eye_of(np.shape(a), -1)
    dl = np.matmul(low, phi)
    return (dl if lower else np.swapaxes(dl, -1, -2)) + _strict_other(t, lower)


defvjp(cho_factor_c, _cho_factor_vjp)
defjvp(cho_factor_c, _cho_factor_jvp)


def cho_solve(c, b, *, lower):
    """``scipy.linalg.cho_solve((c, lower), b)``: the solves with the factor and with its
    transpose."""
    first = solve_triangular(c, b, trans=0 if lower else 1, lower=lower)
    return solve_triangular(c, first, trans=1 if lower else 0, lower=lower)


# ---------------------------------------------------------------------------------------------
# SciPy's signatures

def _sig(*names: str, **defaults: Any) -> inspect.Signature:
    P = inspect.Parameter
    return inspect.Signature([P(n, P.POSITIONAL_OR_KEYWORD) for n in names] + [
        P(n, P.POSITIONAL_OR_KEYWORD, default=d) for n, d in defaults.items()])


SOLVE_SIGNATURE = _sig("a", "b", trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                       check_finite=True)
CHO_SOLVE_SIGNATURE = _sig("c_and_lower", "b", overwrite_b=False, check_finite=True)
CHO_FACTOR_SIGNATURE = _sig("a", lower=False, overwrite_a=False, check_finite=True)
TRANS = (0, 1, 2, "N", "T", "C")


def check_operands(name: str, a: Any, b: Any = None) -> str | None:
    """Why srcgrad does not follow ``scipy.linalg.<name>`` of these operands (None: it
    does): one 2-D matrix and a 1-D or 2-D right-hand side."""
    if np.ndim(a) != 2 or b is not None and np.ndim(b) not in (1, 2):
        return (f"scipy.linalg.{name} is differentiated by srcgrad for one 2-D matrix and a "
                "1-D or 2-D right-hand side, not stacks of them")
    return None


def overwrite_refusal(name: str, key: str) -> str:
    """Why ``scipy.linalg.<name>(<key>=True)`` is refused: SciPy may then write into its
    operand as it sees fit, which no gradient can follow (both modes say this)."""
    return (f"scipy.linalg.{name}({key}=True) may write into its operand, which srcgrad does "
            f"not follow; leave {key} False")


def _no_overwrite(name: str, bound: dict, key: str) -> None:
    if bound.get(key):
        raise TypeError(overwrite_refusal(name, key))


def _refuse(reason: str | None) -> None:
    """Raise for operands srcgrad does not follow (in compiled code, the safety net's signal)."""
    if reason is not None:
        raise NotCompiled(reason)


def solve_triangular_call(*args: Any, **kwargs: Any) -> Any:
    """``scipy.linalg.solve_triangular`` of operands that carry a gradient."""
    p = SOLVE_SIGNATURE.bind(*args, **kwargs)
    p.apply_defaults()
    p = p.arguments
    if p["trans"] not in TRANS:
        raise ValueError("Unknown trans value")                    # SciPy's own message
    _no_overwrite("solve_triangular", p, "overwrite_b")
    _refuse(check_operands("solve_triangular", p["a"], p["b"]))
    return solve_triangular(p["a"], p["b"], trans=p["trans"], lower=bool(p["lower"]),
                            unit_diagonal=bool(p["unit_diagonal"]))


def cho_solve_call(*args: Any, **kwargs: Any) -> Any:
    """``scipy.linalg.cho_solve((c, lower), b)`` of operands that carry a gradient."""
    bound = CHO_SOLVE_SIGNATURE.bind(*args, **kwargs).arguments
    c, lower = bound["c_and_lower"]
    _no_overwrite("cho_solve", bound, "overwrite_b")
    _refuse(check_operands("cho_solve", c, bound["b"]))
    return cho_solve(c, bound["b"], lower=bool(lower))


def cho_factor_call(*args: Any, **kwargs: Any) -> Any:
    """``scipy.linalg.cho_factor(a, lower)`` of a matrix that carries a gradient."""
    p = CHO_FACTOR_SIGNATURE.bind(*args, **kwargs)
    p.apply_defaults()
    _no_overwrite("cho_factor", p.arguments, "overwrite_a")
    _refuse(check_operands("cho_factor", p.arguments["a"]))
    lower = bool(p.arguments["lower"])
    return cho_factor_c(p.arguments["a"], lower=lower), lower
