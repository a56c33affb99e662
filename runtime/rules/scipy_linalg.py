"""``scipy.linalg``'s solves and matrix functions: ``solve``, ``inv``, ``det``, ``cholesky``,
``norm``, ``pinv``, ``expm`` and ``block_diag``.

Each primitive computes SciPy's own value; where SciPy and ``np.linalg`` compute the same
function (``det``, ``norm``, ``pinv``) the rules are NumPy's.  Two differences are modelled:
``cholesky`` returns the *upper* factor unless ``lower=True`` (NumPy's the lower one), and a
solve or inverse with ``assume_a='pos'`` or ``'sym'`` reads one triangle of ``a`` (the upper
one unless ``lower=True``), so its gradient lies in that triangle.  ``expm``'s rules are
Fréchet derivatives (the corner of ``expm`` of a block matrix), of one 2-D matrix.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.core import getitem
from srcgrad.runtime.rules.decompositions import cholesky_grad, cholesky_tangent, triangle_grad
from srcgrad.runtime.rules.primitives import (
    NotCompiled,
    defjvp,
    defvjp,
    defvjp_argnum,
    helper,
    lookup,
    primitive,
)
from srcgrad.runtime.rules.solvers import pinv_grad

__all__ = ["GENERAL", "TRIANGLE", "scipy_solve", "scipy_inv", "scipy_det", "scipy_cholesky",
           "scipy_norm", "scipy_pinv", "scipy_expm", "scipy_block_diag"]

GENERAL = (None, "gen", "general")
TRIANGLE = ("pos", "positive definite", "sym", "symmetric", "her", "hermitian")


def _matrix(name, a, b=None):
    """Refuse (NotCompiled: the safety net's signal) what srcgrad does not follow."""
    if np.ndim(a) != 2 or b is not None and np.ndim(b) not in (1, 2):
        raise NotCompiled(f"scipy.linalg.{name} is differentiated by srcgrad for one 2-D "
                          "matrix (and a 1-D or 2-D right-hand side), not stacks of them")


@primitive(nin=2, dtype_rule="float")
def scipy_solve(a, b, *, assume_a=None, lower=False):
    """``scipy.linalg.solve(a, b, lower, assume_a)``."""
    from scipy import linalg
    _matrix("solve", a, b)
    if assume_a is None:                         # SciPy's default (before 1.17: 'gen')
        return linalg.solve(a, b, lower=lower)
    return linalg.solve(a, b, lower=lower, assume_a=assume_a)


@primitive(dtype_rule="float")
def scipy_inv(a, *, assume_a=None, lower=False):
    """``scipy.linalg.inv(a, assume_a, lower)``."""
    from scipy import linalg
    _matrix("inv", a)
    if assume_a is None and not lower:           # SciPy before 1.17 takes neither keyword
        return linalg.inv(a)
    return linalg.inv(a, assume_a=assume_a, lower=lower)


def _fold(m, assume_a, lower):
    """The gradient for ``a`` of one with respect to the matrix SciPy reads: the whole of it,
    or the triangle it reads as a symmetric matrix."""
    return m if assume_a in GENERAL else triangle_grad(m, lower)


def _unfold(t, assume_a, lower):
    """The tangent of the matrix SciPy reads, from ``a``'s."""
    if assume_a in GENERAL:
        return t
    part = np.tril(t) if lower else np.triu(t)
    return part + np.swapaxes(part, -1, -2) - part * np.eye(np.shape(t)[-1], dtype=bool)


def _solve_adjoint(g, a, assume_a, lower):
    at = a if assume_a in TRIANGLE else np.swapaxes(a, -1, -2)
    return scipy_solve(at, g, assume_a=assume_a, lower=lower)


def _solve_vjp_a(g, ans, a, b, assume_a=None, lower=False):
    n = np.shape(a)[0]
    gb = np.reshape(_solve_adjoint(g, a, assume_a, lower), (n, -1))
    x = np.reshape(ans, (n, -1))
    return _fold(-np.matmul(gb, np.swapaxes(x, -1, -2)), assume_a, lower)


def _solve_vjp_b(g, ans, a, b, assume_a=None, lower=False):
    return _solve_adjoint(g, a, assume_a, lower)


def _solve_jvp(tangents, ans, a, b, assume_a=None, lower=False):
    ta, tb = tangents
    rhs = tb
    if ta is not None:
        n = np.shape(a)[0]
        moved = np.reshape(np.matmul(_unfold(ta, assume_a, lower), np.reshape(ans, (n, -1))),
                           np.shape(ans))
        rhs = -moved if rhs is None else rhs - moved
    return scipy_solve(a, rhs, assume_a=assume_a, lower=lower)


defvjp(scipy_solve, _solve_vjp_a, _solve_vjp_b)
defjvp(scipy_solve, _solve_jvp)
defvjp(scipy_inv, lambda g, ans, a, assume_a=None, lower=False: _fold(-np.matmul(
    np.swapaxes(ans, -1, -2), np.matmul(g, np.swapaxes(ans, -1, -2))), assume_a, lower))
defjvp(scipy_inv, lambda tangents, ans, a, assume_a=None, lower=False: -np.matmul(
    ans, np.matmul(_unfold(tangents[0], assume_a, lower), ans)))


@primitive(dtype_rule="float")
def scipy_det(x):
    """``scipy.linalg.det(x)``."""
    from scipy import linalg
    return linalg.det(x)


@primitive(dtype_rule="float")
def scipy_cholesky(a, *, upper=True):
    """``scipy.linalg.cholesky(a, lower=not upper)``: the upper factor by default."""
    from scipy import linalg
    _matrix("cholesky", a)
    return linalg.cholesky(a, lower=not upper)


@primitive(dtype_rule="float")
def scipy_norm(x, *, ord=None, axis=None, keepdims=False):
    """``scipy.linalg.norm(x, ord, axis, keepdims)``."""
    from scipy import linalg
    return linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


@primitive(dtype_rule="float")
def scipy_pinv(a, *, atol=None, rtol=None):
    """``scipy.linalg.pinv(a, atol=, rtol=)``."""
    from scipy import linalg
    return linalg.pinv(a, atol=atol, rtol=rtol)


defvjp(scipy_det, *lookup(np.linalg.det).vjps)
defjvp(scipy_det, lookup(np.linalg.det).jvp_rule)
defvjp(scipy_cholesky, lambda g, ans, a, upper=True: cholesky_grad(g, ans, upper))
defjvp(scipy_cholesky, lambda tangents, ans, a, upper=True:
       cholesky_tangent(tangents[0], ans, upper))
defvjp(scipy_norm, *lookup(np.linalg.norm).vjps)
defjvp(scipy_norm, lookup(np.linalg.norm).jvp_rule)
defvjp(scipy_pinv, lambda g, ans, a, atol=None, rtol=None: pinv_grad(g, ans, a))
defjvp(scipy_pinv, lambda tangents, ans, a, atol=None, rtol=None:
       lookup(np.linalg.pinv).jvp_rule(tangents, ans, a))


@primitive(dtype_rule="float")
def scipy_expm(a):
    """``scipy.linalg.expm(a)``."""
    from scipy import linalg
    _matrix("expm", a)
    return linalg.expm(a)


def _frechet(a, e):
    """The Fréchet derivative of ``expm`` at ``a`` in the direction ``e``: the top right block
    of ``expm([[a, e], [0, a]])``, written with primitives so that it is differentiated
    again."""
    n = np.shape(a)[-1]
    block = np.concatenate([np.concatenate([a, e], axis=-1),
                            np.concatenate([0.0 * a, a], axis=-1)], axis=-2)
    return scipy_expm(block)[..., :n, n:]


defvjp(scipy_expm, lambda g, ans, a: _frechet(np.swapaxes(a, -1, -2), g))
defjvp(scipy_expm, lambda tangents, ans, a: _frechet(a, tangents[0]))


@primitive(nin=None, dtype_rule="promote")
def scipy_block_diag(*arrs):
    """``scipy.linalg.block_diag(*arrs)``."""
    from scipy import linalg
    return linalg.block_diag(*arrs)


@helper
def block_index(argnum, *shapes):
    """Where block ``argnum`` lies in ``block_diag``'s result (each shape taken as 2-D)."""
    rows = cols = 0
    for k, shape in enumerate(shapes):
        m, n = (tuple(shape) if len(shape) == 2 else (1,) + tuple(shape) if len(shape) == 1
                else (1, 1))
        if k == argnum:
            return (slice(rows, rows + m), slice(cols, cols + n))
        rows, cols = rows + m, cols + n
    raise IndexError(argnum)


defvjp_argnum(scipy_block_diag, lambda argnum, g, ans, *arrs: np.reshape(getitem(
    g, index=block_index(argnum, *[np.shape(x) for x in arrs])), np.shape(arrs[argnum])),
    reads={"arrs": "meta"})
defjvp(scipy_block_diag, linear=True)
