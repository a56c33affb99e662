"""Factorizations: ``cholesky``, ``eigh``, ``svd``, ``qr``, ``slogdet``.

A NumPy function that returns a tuple (``eigh``, ``svd``, ``qr``, ``slogdet``, ``lstsq``) is
one primitive per element (``eigh_values``, ``eigh_vectors`` …), each with its own rule:
a vjp is linear in the cotangents, so the gradients of the elements simply add up.
``solvers.result_parts`` says which primitives make up a call; the compiler lowers the call
to a tuple of them, the eager engine to NumPy's own result type.

``cholesky`` and ``eigh`` read one triangle of their argument (the lower one, or the one
``UPLO`` names), so the gradient is the exact one of that function: it lies in that
triangle.  For a symmetric argument built by the program (``A + A.T``, ``X @ X.T``) the chain
rule gives the same result as the symmetrized convention of JAX and autograd.  Gradients of
eigenvectors and singular vectors assume distinct eigenvalues and singular values.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.linalg import cofactors
from srcgrad.runtime.rules.primitives import defjvp, defvjp, helper, primitive

__all__ = ["triangle_grad", "cholesky_grad", "eigh_grad", "svd_grad", "qr_grad", "eigh_values",
           "eigh_vectors", "svd_u", "svd_s", "svd_vh", "qr_q", "qr_r", "slogdet_sign",
           "slogdet_logabsdet", "logdet_grad", "logdet_gradient", "eye_of"]


@helper
def triangle_grad(m, lower):
    """The gradient of ``F(A)``, where ``F`` reads the lower (or upper) triangle of ``A`` as a
    symmetric matrix, from ``m``, the gradient of ``F`` at that symmetric matrix."""
    both = m + np.swapaxes(m, -1, -2)
    eye = np.eye(np.shape(m)[-1], dtype=bool)
    return (np.tril(both) if lower else np.triu(both)) - m * eye


@helper
def cholesky_grad(g, ans, upper=False):
    """Gradient of ``L = cholesky(A)``: ``phi(L^T g)`` moved through ``L^-T . L^-1`` (with
    ``upper``, of ``L^T``, computed from the upper triangle)."""
    if upper:
        g, ans = np.swapaxes(g, -1, -2), np.swapaxes(ans, -1, -2)
    n = np.shape(ans)[-1]
    inner = np.tril(np.matmul(np.swapaxes(ans, -1, -2), g))
    inner = inner - 0.5 * inner * np.eye(n, dtype=bool)
    left = np.linalg.solve(np.swapaxes(ans, -1, -2), inner)            # L^-T P
    m = np.swapaxes(np.linalg.solve(np.swapaxes(ans, -1, -2), np.swapaxes(left, -1, -2)),
                    -1, -2)                                           # ... L^-1
    return triangle_grad(m, not upper)


defvjp(np.linalg.cholesky, lambda g, ans, a, upper=False: cholesky_grad(g, ans, upper), nin=1,
       dtype_rule="float")


@helper
def eigh_grad(a, UPLO, g_values, g_vectors):
    """Gradient of ``np.linalg.eigh(a, UPLO)`` for the cotangents given (None: zero)."""
    w, v = np.linalg.eigh(a, UPLO)
    inner = 0.0 * a
    if g_values is not None:
        inner = inner + np.expand_dims(g_values, -2) * np.eye(np.shape(w)[-1], dtype=bool)
    if g_vectors is not None:
        gap = np.expand_dims(w, -2) - np.expand_dims(w, -1)            # w_j - w_i
        off = 1.0 - np.eye(np.shape(w)[-1])
        f = off / (gap + (1.0 - off))
        inner = inner + f * np.matmul(np.swapaxes(v, -1, -2), g_vectors)
    m = np.matmul(v, np.matmul(inner, np.swapaxes(v, -1, -2)))
    return triangle_grad(m, UPLO.upper() == "L")


@primitive(dtype_rule="float")
def eigh_values(a, *, UPLO="L"):
    """The eigenvalues of ``np.linalg.eigh(a, UPLO)``."""
    return np.linalg.eigh(a, UPLO)[0]


@primitive(dtype_rule="float")
def eigh_vectors(a, *, UPLO="L"):
    """The eigenvectors of ``np.linalg.eigh(a, UPLO)``."""
    return np.linalg.eigh(a, UPLO)[1]


defvjp(eigh_values, lambda g, ans, a, UPLO="L": eigh_grad(a, UPLO, g, None))
defvjp(eigh_vectors, lambda g, ans, a, UPLO="L": eigh_grad(a, UPLO, None, g))


@helper
def svd_grad(a, g_u, g_s, g_vh):
    """Gradient of the reduced ``np.linalg.svd(a)`` for the cotangents given (None: zero)."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    out = 0.0 * a
    if g_s is not None:
        out = out + np.matmul(u * np.expand_dims(g_s, -2), vh)
    if g_u is None and g_vh is None:
        return out
    s2 = s * s
    off = 1.0 - np.eye(np.shape(s)[-1])
    f = off / (np.expand_dims(s2, -2) - np.expand_dims(s2, -1) + (1.0 - off))   # s_j² - s_i²
    if g_u is not None:
        j = np.matmul(np.swapaxes(u, -1, -2), g_u)
        core = f * (j - np.swapaxes(j, -1, -2)) * np.expand_dims(s, -2)
        rest = (g_u - np.matmul(u, j)) / np.expand_dims(s, -2)
        out = out + np.matmul(np.matmul(u, core) + rest, vh)
    if g_vh is not None:
        k = np.matmul(vh, np.swapaxes(g_vh, -1, -2))
        core = np.expand_dims(s, -1) * (f * (k - np.swapaxes(k, -1, -2)))
        rest = (g_vh - np.matmul(np.matmul(g_vh, np.swapaxes(vh, -1, -2)), vh))
        out = out + np.matmul(u, np.matmul(core, vh) + rest / np.expand_dims(s, -1))
    return out


@primitive(dtype_rule="float")
def svd_u(a):
    """``U`` of ``np.linalg.svd(a, full_matrices=False)``."""
    return np.linalg.svd(a, full_matrices=False)[0]


@primitive(dtype_rule="float")
def svd_s(a):
    """The singular values of ``a``."""
    return np.linalg.svd(a, compute_uv=False)


@primitive(dtype_rule="float")
def svd_vh(a):
    """``Vh`` of ``np.linalg.svd(a, full_matrices=False)``."""
    return np.linalg.svd(a, full_matrices=False)[2]


defvjp(svd_u, lambda g, ans, a: svd_grad(a, g, None, None))
defvjp(svd_s, lambda g, ans, a: svd_grad(a, None, g, None))
defvjp(svd_vh, lambda g, ans, a: svd_grad(a, None, None, g))


def _qr_square(q, r, g_q, g_r):
    """The QR gradient for ``r`` square (``m >= n``): ``(g_q + q copyltu(M)) r^-T``."""
    m = np.matmul(r, np.swapaxes(g_r, -1, -2)) - np.matmul(np.swapaxes(g_q, -1, -2), q)
    lower = np.tril(m, -1)
    sym = lower + np.swapaxes(lower, -1, -2) + m * np.eye(np.shape(m)[-1])
    rhs = g_q + np.matmul(q, sym)
    return np.swapaxes(np.linalg.solve(r, np.swapaxes(rhs, -1, -2)), -1, -2)


@helper
def qr_grad(a, g_q, g_r):
    """Gradient of the reduced ``np.linalg.qr(a)`` for the cotangents given (None: zero)."""
    q, r = np.linalg.qr(a)
    g_q = 0.0 * q if g_q is None else g_q
    g_r = 0.0 * r if g_r is None else g_r
    rows, cols = np.shape(a)[-2:]
    if rows >= cols:
        return _qr_square(q, r, g_q, g_r)
    # a = [x | y], r = [u | v] with u square: x = q u, y = q v
    y, g_u, g_v = a[..., rows:], g_r[..., :rows], g_r[..., rows:]
    g_x = _qr_square(q, r[..., :rows], g_q + np.matmul(y, np.swapaxes(g_v, -1, -2)), g_u)
    return np.concatenate([g_x, np.matmul(q, g_v)], axis=-1)


@primitive(dtype_rule="float")
def qr_q(a):
    """``Q`` of ``np.linalg.qr(a)`` (mode 'reduced')."""
    return np.linalg.qr(a)[0]


@primitive(dtype_rule="float")
def qr_r(a):
    """``R`` of ``np.linalg.qr(a)`` (mode 'reduced', and mode 'r')."""
    return np.linalg.qr(a)[1]


defvjp(qr_q, lambda g, ans, a: qr_grad(a, g, None))
defvjp(qr_r, lambda g, ans, a: qr_grad(a, None, g))


@primitive(dtype_rule="float")
def slogdet_sign(a):
    """The sign of ``np.linalg.slogdet(a)``: piecewise constant, no gradient."""
    return np.linalg.slogdet(a)[0]


@primitive(dtype_rule="float")
def slogdet_logabsdet(a):
    """``log|det(a)|``."""
    return np.linalg.slogdet(a)[1]


defvjp(slogdet_sign, None)
@helper
def logdet_grad(a):
    """``inv(a)^T``, the gradient of ``log|det(a)|``.  Of a singular matrix (whose log|det| is
    -inf) the cofactors over ``det(a) = 0``: infinite (or nan), as the gradient of log at 0."""
    try:
        return np.swapaxes(np.linalg.inv(a), -1, -2)
    except np.linalg.LinAlgError:
        with np.errstate(divide="ignore", invalid="ignore"):
            return cofactors(a) / np.expand_dims(np.linalg.det(a), (-2, -1))


defvjp(slogdet_logabsdet, lambda g, ans, a: np.expand_dims(g, (-2, -1)) * logdet_grad(a))


# The value-only spellings: one primitive each, the rules of the tuple-returning ones.
defvjp(np.linalg.eigvalsh, lambda g, ans, a, UPLO="L": eigh_grad(a, UPLO, g, None), nin=1,
       dtype_rule="float")
defvjp(np.linalg.svdvals, lambda g, ans, x: svd_grad(x, None, g, None), nin=1,
       dtype_rule="float")


# ---------------------------------------------------------------------------------------------
# Forward mode: the classical perturbation formulas, for the triangle a function reads
# (``cholesky``, ``eigh``) and the reduced factors (``svd``, ``qr``); distinct eigenvalues
# and singular values assumed, as in the vjp rules.  Plain code on the factors' primitives
# (helpers only for sizes), so that second order differentiates the printed rule again.

@helper
def eye_of(shape, axis=-1):
    """The boolean identity matrix of size ``shape[axis]``."""
    return np.eye(shape[axis], dtype=bool)


def _transposed(m):
    return np.swapaxes(m, -1, -2)


def triangle_tangent(t, lower):
    """The symmetric tangent that a function reading the lower (or upper) triangle of its
    argument sees: that triangle of ``t``, mirrored."""
    part = np.tril(t) if lower else np.triu(t)
    return part + _transposed(part) - part * eye_of(np.shape(t))


def cholesky_tangent(t, ans, upper=False):
    """``dL = L phi(L^-1 dA L^-T)``, ``phi`` the lower triangle with half the diagonal."""
    low = _transposed(ans) if upper else ans
    left = np.linalg.solve(low, triangle_tangent(t, not upper))               # L^-1 dA
    inner = _transposed(np.linalg.solve(low, _transposed(left)))
    phi = np.tril(inner) - 0.5 * inner * eye_of(np.shape(t))
    out = np.matmul(low, phi)
    return _transposed(out) if upper else out


def _gaps(w):
    """``F_ij = 1 / (w_j - w_i)`` off the diagonal, 0 on it."""
    off = 1.0 - eye_of(np.shape(w))
    return off / (np.expand_dims(w, -2) - np.expand_dims(w, -1) + (1.0 - off))


def eigh_tangent(a, UPLO, t, vectors):
    """``dw = diag(V^T dA V)`` or ``dV = V (F o (V^T dA V))``, ``F_ij = 1 / (w_j - w_i)``."""
    v = eigh_vectors(a, UPLO=UPLO)
    inner = np.matmul(_transposed(v), np.matmul(triangle_tangent(t, UPLO.upper() == "L"), v))
    if not vectors:
        return np.diagonal(inner, 0, -2, -1)
    return np.matmul(v, _gaps(eigh_values(a, UPLO=UPLO)) * inner)


def svd_tangent(a, t, part):
    """The tangent of ``u`` (``part`` 0), ``s`` (1) or ``vh`` (2) of the reduced SVD.  The
    terms of a tall ``u`` (or a wide ``vh``) outside the span of the square one are written
    for every shape: for a square factor they are zero."""
    u, vh = svd_u(a), svd_vh(a)
    v = _transposed(vh)
    ds = np.matmul(_transposed(u), np.matmul(t, v))
    if part == 1:
        return np.diagonal(ds, 0, -2, -1)
    s = svd_s(a)
    s_row = np.expand_dims(s, -2)
    off = 1.0 - eye_of(np.shape(s))
    f = off / ((s_row - _transposed(s_row)) * (s_row + _transposed(s_row)) + (1.0 - off))
    if part == 0:                                                    # f_ij = 1 / (s_j² - s_i²)
        scaled = ds * s_row
        moved = np.matmul(t, v)
        return (np.matmul(u, f * (scaled + _transposed(scaled)))
                + (moved - np.matmul(u, np.matmul(_transposed(u), moved))) / s_row)
    scaled = _transposed(s_row) * ds
    moved = np.matmul(_transposed(t), u)
    return _transposed(np.matmul(v, f * (scaled + _transposed(scaled)))
                       + (moved - np.matmul(v, np.matmul(vh, moved))) / s_row)


def _qr_square_tangent(q, r, t):
    """(dq, dr) of ``a = q r`` with ``r`` square: ``dq = q (do - C) + t r^-1``,
    ``dr = (C - do) r``, where ``C = q^T t r^-1`` and ``do`` its skew part."""
    moved = _transposed(np.linalg.solve(_transposed(r), _transposed(t)))
    c = np.matmul(_transposed(q), moved)
    lower = np.tril(c, -1)
    skew = lower - _transposed(lower)
    return np.matmul(q, skew - c) + moved, np.matmul(c - skew, r)


def qr_tangent(a, t, part):
    """The tangent of ``q`` (``part`` 0) or ``r`` (1) of the reduced QR: of ``a = [x | y]``
    with ``x`` its first ``rows`` columns, ``x = q u`` (``u`` square) and ``v = q^T y``.  For
    a tall ``a``, ``x`` is all of it and ``y`` empty."""
    q, r = qr_q(a), qr_r(a)
    rows = np.shape(a)[-2]
    dq, du = _qr_square_tangent(q, r[..., :rows], t[..., :rows])
    if part == 0:
        return dq
    dv = np.matmul(_transposed(dq), a[..., rows:]) + np.matmul(_transposed(q), t[..., rows:])
    return np.concatenate([du, dv], axis=-1)


defjvp(np.linalg.cholesky, lambda tangents, ans, a, upper=False:
       cholesky_tangent(tangents[0], ans, upper))
defjvp(eigh_values, lambda tangents, ans, a, UPLO="L": eigh_tangent(a, UPLO, tangents[0], False))
defjvp(np.linalg.eigvalsh, lambda tangents, ans, a, UPLO="L":
       eigh_tangent(a, UPLO, tangents[0], False))
defjvp(eigh_vectors, lambda tangents, ans, a, UPLO="L": eigh_tangent(a, UPLO, tangents[0], True))
defjvp(svd_u, lambda tangents, ans, a: svd_tangent(a, tangents[0], 0))
defjvp(svd_s, lambda tangents, ans, a: svd_tangent(a, tangents[0], 1))
defjvp(np.linalg.svdvals, lambda tangents, ans, x: svd_tangent(x, tangents[0], 1))
defjvp(svd_vh, lambda tangents, ans, a: svd_tangent(a, tangents[0], 2))
defjvp(qr_q, lambda tangents, ans, a: qr_tangent(a, tangents[0], 0))
defjvp(qr_r, lambda tangents, ans, a: qr_tangent(a, tangents[0], 1))


@primitive(dtype_rule="float")
def logdet_gradient(a):
    """``inv(a)^T``, the gradient of ``log|det(a)|`` (infinite where ``a`` is singular), as a
    primitive, so that slogdet's forward rule is differentiated again."""
    return logdet_grad(a)


def _logdet_gradient_jvp(tangents, ans, a):
    """``-C t^T C`` with ``C = ans = a^-T``."""
    return -np.matmul(ans, np.matmul(np.swapaxes(tangents[0], -1, -2), ans))


defvjp(logdet_gradient, lambda g, ans, a: -np.matmul(ans, np.matmul(np.swapaxes(g, -1, -2),
                                                                    ans)))
defjvp(logdet_gradient, _logdet_gradient_jvp)
defjvp(slogdet_logabsdet, lambda tangents, ans, a:
       np.sum(tangents[0] * logdet_gradient(a), axis=(-2, -1)))
