"""``scipy.linalg.lu_factor`` and ``lu_solve``, differentiated at constant pivots.

``lu_factor(a)`` returns ``(lu, piv)``: ``a``'s rows in the order the pivots leave them are
``L U``, L (unit diagonal, implied) below ``lu``'s diagonal and U on and above it.  With
``X = L^-1 P^T dA U^-1`` the factors move by ``dL = L tril(X, -1)`` and ``dU = triu(X) U``;
the reverse rule is the adjoint of that.  ``lu_solve((lu, piv), b)`` is the two triangular
solves with ``b``'s rows in the factor's order: its gradient reaches the entries of ``lu``
each solve reads (L's strict lower triangle, U's upper one) and ``b``; ``piv`` has none.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.core import getitem
from srcgrad.runtime.rules.primitives import NotCompiled, defjvp, defvjp, helper, primitive
from srcgrad.runtime.rules.scipy_specs import Spec, no_overwrite
from srcgrad.runtime.rules.triangular import solve_triangular

__all__ = ["LU_SPECS", "scipy_lu_factor_lu", "scipy_lu_factor_piv", "scipy_lu_solve",
           "row_order", "undo_order", "lu_solve_call", "lu_solve_refusal"]


def _lu(a, part):
    from scipy import linalg
    if np.ndim(a) != 2 or np.shape(a)[0] != np.shape(a)[1]:
        raise NotCompiled("scipy.linalg.lu_factor is differentiated by srcgrad for one square "
                          "2-D matrix")
    return linalg.lu_factor(a)[part]


@primitive(dtype_rule="float")
def scipy_lu_factor_lu(a):
    """The matrix ``lu`` of ``scipy.linalg.lu_factor(a)``: L below the diagonal (its unit
    diagonal implied), U on and above it, of ``a`` with its rows permuted."""
    return _lu(a, 0)


@primitive(dtype_rule="index")
def scipy_lu_factor_piv(a):
    """The pivot indices of ``scipy.linalg.lu_factor(a)``: integers, no gradient."""
    return _lu(a, 1)


@helper
def row_order(piv):
    """The rows of ``a`` in the order ``lu`` factors them: ``a[row_order(piv)] = L U``."""
    perm = np.arange(len(piv))
    for i, p in enumerate(np.asarray(piv).tolist()):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


@helper
def undo_order(piv):
    """The inverse permutation of :func:`row_order`."""
    return np.argsort(row_order(piv))


@helper
def _unit_lower(lu):
    return np.eye(np.shape(lu)[-1], dtype=bool)


def _lu_parts(lu):
    """L (unit lower) and U of a factor ``lu``."""
    return np.tril(lu, -1) + _unit_lower(lu), np.triu(lu)


def _lu_factor_vjp(g, ans, a):
    """``P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T``, P the rows' order undone."""
    low, up = _lu_parts(ans)
    inner = np.tril(np.matmul(np.swapaxes(low, -1, -2), np.tril(g, -1)), -1) + \
        np.triu(np.matmul(np.triu(g), np.swapaxes(up, -1, -2)))
    left = np.linalg.solve(np.swapaxes(low, -1, -2), inner)
    moved = np.swapaxes(np.linalg.solve(up, np.swapaxes(left, -1, -2)), -1, -2)
    return getitem(moved, index=undo_order(scipy_lu_factor_piv(a)))


def _lu_factor_jvp(tangents, ans, a):
    """``X = L^-1 P^T dA U^-1``: dL = L tril(X, -1), dU = triu(X) U, packed as ``lu``."""
    low, up = _lu_parts(ans)
    rows = getitem(tangents[0], index=row_order(scipy_lu_factor_piv(a)))
    x = np.swapaxes(np.linalg.solve(np.swapaxes(up, -1, -2),
                                    np.swapaxes(np.linalg.solve(low, rows), -1, -2)), -1, -2)
    return np.tril(np.matmul(low, np.tril(x, -1)), -1) + np.triu(np.matmul(np.triu(x), up))


defvjp(scipy_lu_factor_lu, _lu_factor_vjp)
defjvp(scipy_lu_factor_lu, _lu_factor_jvp)
defvjp(scipy_lu_factor_piv, None)


@primitive(nin=3, dtype_rule="float")
def scipy_lu_solve(lu, piv, b):
    """``scipy.linalg.lu_solve((lu, piv), b)``: ``U^-1 L^-1`` of b's rows in the factor's
    order."""
    from scipy import linalg
    if np.ndim(lu) != 2 or np.ndim(b) not in (1, 2):
        raise NotCompiled("scipy.linalg.lu_solve is differentiated by srcgrad for one 2-D "
                          "factor and a 1-D or 2-D right-hand side")
    return linalg.lu_solve((lu, piv), b)


def _lu_adjoints(g, lu):
    """``z = U^-T g`` and ``w = L^-T z``: the cotangents of the two solves' right sides."""
    z = solve_triangular(lu, g, trans=1, lower=False)
    return z, solve_triangular(lu, z, trans=1, lower=True, unit_diagonal=True)


def _lu_solve_lu(g, ans, lu, piv, b):
    z, w = _lu_adjoints(g, lu)
    n = np.shape(lu)[0]
    x = np.reshape(ans, (n, -1))
    y = np.matmul(np.triu(lu), x)                                    # L^-1 of b's rows
    return -np.triu(np.matmul(np.reshape(z, (n, -1)), np.swapaxes(x, -1, -2))) - np.tril(
        np.matmul(np.reshape(w, (n, -1)), np.swapaxes(y, -1, -2)), -1)


def _lu_solve_b(g, ans, lu, piv, b):
    return getitem(_lu_adjoints(g, lu)[1], index=undo_order(piv))


def _lu_solve_jvp(tangents, ans, lu, piv, b):
    t_lu, _, t_b = tangents
    n = np.shape(lu)[0]
    low, up = _lu_parts(lu)
    rhs = 0.0 * ans if t_b is None else getitem(t_b, index=row_order(piv))
    if t_lu is not None:                 # d(L U) x = (dL U + L dU) x
        x = np.reshape(ans, (n, -1))
        moved = np.matmul(np.tril(t_lu, -1), np.matmul(up, x)) + np.matmul(
            low, np.matmul(np.triu(t_lu), x))
        rhs = rhs - np.reshape(moved, np.shape(ans))
    return solve_triangular(lu, solve_triangular(lu, rhs, lower=True, unit_diagonal=True),
                            lower=False)


defvjp(scipy_lu_solve, _lu_solve_lu, None, _lu_solve_b)
defjvp(scipy_lu_solve, _lu_solve_jvp)


LU_SPECS = {"lu_factor": Spec(
    "scipy.linalg.lu_factor", ("a",), lambda st: no_overwrite(
        "scipy.linalg.lu_factor", st, "overwrite_a") or ((scipy_lu_factor_lu, {}),
                                                         (scipy_lu_factor_piv, {})),
    (scipy_lu_factor_lu, scipy_lu_factor_piv))}
"""``scipy.linalg.lu_factor`` → how srcgrad follows it (``lu_solve``: its own lowering)."""


def lu_solve_refusal(trans: object, overwrite_b: object) -> str | None:
    """Why srcgrad does not follow ``lu_solve`` with these arguments (None: it does)."""
    if overwrite_b:
        return no_overwrite("scipy.linalg.lu_solve", {"overwrite_b": True}, "overwrite_b")
    if isinstance(trans, bool) or trans not in (0, "N"):
        return "scipy.linalg.lu_solve is differentiated by srcgrad with trans=0"
    return None


def lu_solve_call(lu_and_piv: object, b: object, trans: object = 0, overwrite_b: object = False,
                  check_finite: bool = True) -> object:
    """``scipy.linalg.lu_solve`` of operands that carry a gradient (the eager run)."""
    refusal = lu_solve_refusal(trans, overwrite_b)
    if refusal is not None:
        raise TypeError(refusal)
    lu, piv = lu_and_piv
    return scipy_lu_solve(lu, piv, b)
