"""Solvers and products of many factors: ``pinv``, ``lstsq``, ``matrix_power``,
``multi_dot``; and the lowering of NumPy's tuple-returning factorizations to one primitive
per element (:func:`result_parts`), for both the compiler and the eager engine.

``pinv`` and ``lstsq`` are differentiated at constant rank (the rank cut-off ``rcond`` is
a threshold: the gradient does not move across it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcgrad.runtime.rules.decompositions import (
    eigh_values,
    eigh_vectors,
    eye_of,
    qr_q,
    qr_r,
    slogdet_logabsdet,
    slogdet_sign,
    svd_grad,
    svd_s,
    svd_tangent,
    svd_u,
    svd_vh,
)
from srcgrad.runtime.rules.primitives import (
    Primitive,
    bind_numpy,
    defjvp,
    defvjp,
    defvjp_argnum,
    helper,
    primitive,
)

__all__ = ["pinv_grad", "lstsq_grad", "lstsq_solution", "lstsq_residuals", "lstsq_rank",
           "lstsq_sv", "matrix_power_grad", "multi_dot", "multi_dot_grad", "result_parts",
           "TUPLE_RESULTS"]


@helper
def pinv_grad(g, x, a):
    """Gradient of ``x = pinv(a)`` (constant rank): ``-x^T g x^T`` plus the two terms that
    move the row and column spaces."""
    xt = np.swapaxes(x, -1, -2)
    gt = np.swapaxes(g, -1, -2)
    rows = np.eye(np.shape(a)[-2]) - np.matmul(a, x)                  # I - A A+
    cols = np.eye(np.shape(a)[-1]) - np.matmul(x, a)                  # I - A+ A
    return (-np.matmul(xt, np.matmul(g, xt))
            + np.matmul(rows, np.matmul(gt, np.matmul(x, xt)))
            + np.matmul(np.matmul(xt, x), np.matmul(gt, cols)))


defvjp(np.linalg.pinv, lambda g, ans, a, rcond=None, hermitian=False, rtol=None:
       pinv_grad(g, ans, a), nin=1, dtype_rule="float")


@helper
def lstsq_grad(g, a, b, rcond, part, lhs):
    """Gradient of element ``part`` (0: the solution, 1: the residuals, 3: the singular
    values) of ``np.linalg.lstsq(a, b, rcond)`` for ``a`` (``lhs``) or ``b``."""
    if part == 3:
        return svd_grad(a, None, g, None) if lhs else 0.0 * b
    x_plus = np.linalg.pinv(a, rcond=rcond)
    x = np.matmul(x_plus, b)
    vector = np.ndim(b) == 1
    if part == 0:
        if not lhs:
            return np.matmul(np.swapaxes(x_plus, -1, -2), g)
        g_plus = (np.expand_dims(g, -1) * b if vector
                  else np.matmul(g, np.swapaxes(b, -1, -2)))
        return pinv_grad(g_plus, x_plus, a)
    if np.size(g) == 0:                                 # no residuals were returned
        return 0.0 * (a if lhs else b)
    r = b - np.matmul(a, x)
    weighted = 2.0 * r * (g[0] if vector else g)
    if not lhs:
        return weighted
    return -(np.expand_dims(weighted, -1) * x if vector
             else np.matmul(weighted, np.swapaxes(x, -1, -2)))


@primitive(nin=2, dtype_rule="float")
def lstsq_solution(a, b, *, rcond=None):
    """The least-squares solution of ``np.linalg.lstsq(a, b, rcond)``."""
    return np.linalg.lstsq(a, b, rcond=rcond)[0]


@primitive(nin=2, dtype_rule="float")
def lstsq_residuals(a, b, *, rcond=None):
    """The sums of squared residuals of ``np.linalg.lstsq`` (empty unless full rank, m > n)."""
    return np.linalg.lstsq(a, b, rcond=rcond)[1]


@primitive(nin=2, dtype_rule="index")
def lstsq_rank(a, b, *, rcond=None):
    """The rank of ``a`` that ``np.linalg.lstsq`` found: an integer, no gradient."""
    return np.linalg.lstsq(a, b, rcond=rcond)[2]


@primitive(nin=2, dtype_rule="float")
def lstsq_sv(a, b, *, rcond=None):
    """The singular values of ``a`` that ``np.linalg.lstsq`` returns."""
    return np.linalg.lstsq(a, b, rcond=rcond)[3]


defvjp(lstsq_solution, lambda g, ans, a, b, rcond=None: lstsq_grad(g, a, b, rcond, 0, True),
       lambda g, ans, a, b, rcond=None: lstsq_grad(g, a, b, rcond, 0, False))
defvjp(lstsq_residuals, lambda g, ans, a, b, rcond=None: lstsq_grad(g, a, b, rcond, 1, True),
       lambda g, ans, a, b, rcond=None: lstsq_grad(g, a, b, rcond, 1, False))
defvjp(lstsq_rank, None, None)
defvjp(lstsq_sv, lambda g, ans, a, b, rcond=None: lstsq_grad(g, a, b, rcond, 3, True),
       lambda g, ans, a, b, rcond=None: lstsq_grad(g, a, b, rcond, 3, False))


@helper
def matrix_power_grad(g, a, n):
    """Gradient of ``np.linalg.matrix_power(a, n)``: the sum over the ``|n|`` factors (of
    ``inv(a)`` for negative ``n``)."""
    base = a if n >= 0 else np.linalg.inv(a)
    eye = np.eye(np.shape(a)[-1])
    powers = [eye + 0.0 * base]
    for _ in range(abs(n) - 1):
        powers.append(np.matmul(powers[-1], base))
    out = 0.0 * base
    for k in range(abs(n)):                      # d(B^n) = sum_k B^k dB B^(n-1-k)
        out = out + np.matmul(np.swapaxes(powers[k], -1, -2),
                              np.matmul(g, np.swapaxes(powers[abs(n) - 1 - k], -1, -2)))
    if n >= 0:
        return out
    return -np.matmul(np.swapaxes(base, -1, -2), np.matmul(out, np.swapaxes(base, -1, -2)))


defvjp(np.linalg.matrix_power, lambda g, ans, a, n: matrix_power_grad(g, a, n), nin=1)


@primitive(nin=None)
def multi_dot(*arrays):
    """``np.linalg.multi_dot`` of the arrays given one by one."""
    return np.linalg.multi_dot(arrays)


@helper
def multi_dot_grad(argnum, g, ans, *arrays):
    """Gradient of ``multi_dot`` for array ``argnum``: the product of those before it,
    transposed, times ``g``, times the product of those after it, transposed.  A 1-D first
    (last) array is a row (column)."""
    mats = list(arrays)
    if np.ndim(mats[0]) == 1:
        mats[0] = np.expand_dims(mats[0], 0)
    if np.ndim(mats[-1]) == 1:
        mats[-1] = np.expand_dims(mats[-1], 1)
    g = np.reshape(g, (np.shape(mats[0])[0], np.shape(mats[-1])[1]))
    left = np.eye(np.shape(mats[0])[0])
    for m in mats[:argnum]:
        left = np.matmul(left, m)
    right = np.eye(np.shape(mats[-1])[1])
    for m in mats[:argnum:-1]:
        right = np.matmul(m, right)
    out = np.matmul(np.swapaxes(left, -1, -2), np.matmul(g, np.swapaxes(right, -1, -2)))
    return np.reshape(out, np.shape(arrays[argnum]))


defvjp_argnum(multi_dot, multi_dot_grad)


# ---------------------------------------------------------------------------------------------
# Forward mode (constant rank, as the vjp rules): plain code on primitives (helpers only for
# sizes), so that second order differentiates the printed rule again.

def pinv_tangent(t, x, a):
    """Tangent of ``x = pinv(a)``: ``-x t x + x x^T t^T (I - a x) + (I - x a) t^T x^T x``."""
    xt = np.swapaxes(x, -1, -2)
    tt = np.swapaxes(t, -1, -2)
    rows = eye_of(np.shape(a), -2) - np.matmul(a, x)
    cols = eye_of(np.shape(a), -1) - np.matmul(x, a)
    return (-np.matmul(x, np.matmul(t, x)) + np.matmul(np.matmul(x, xt), np.matmul(tt, rows))
            + np.matmul(cols, np.matmul(tt, np.matmul(xt, x))))


def lstsq_tangent(ans, a, b, ta, tb, rcond, part):
    """Tangent of element ``part`` (0: the solution, 1: the residuals, 3: the singular
    values) of ``np.linalg.lstsq(a, b, rcond)`` (None: a zero tangent), ``ans`` that
    element."""
    if part == 3:
        return 0.0 * ans if ta is None else svd_tangent(a, ta, 1)
    x_plus = np.linalg.pinv(a, rcond=rcond)
    x = np.matmul(x_plus, b)
    if part == 0:                                     # x = pinv(a) b
        out = 0.0 if tb is None else np.matmul(x_plus, tb)
        if ta is not None:
            out = out + np.matmul(pinv_tangent(ta, x_plus, a), b)
        return out
    moved = 0.0 if tb is None else tb                 # d(b) - d(a) x
    if ta is not None:
        moved = moved - np.matmul(ta, x)
    r = b - np.matmul(a, x)              # a^T r = 0: a's own move adds no first-order term
    # the residuals: one per column of b, or none (rank-deficient or not tall)
    return np.reshape(2.0 * np.sum(r * moved, axis=0), (-1,))[:np.size(ans)]


def matrix_power_tangent(t, a, n):
    """Tangent of ``matrix_power(a, n)``: the top right block of ``[[a, t], [0, a]] ** n``."""
    size = np.shape(a)[-1]
    block = np.concatenate([np.concatenate([a, t], axis=-1),
                            np.concatenate([0.0 * a, a], axis=-1)], axis=-2)
    return np.linalg.matrix_power(block, n)[..., :size, size:]


defjvp(np.linalg.pinv, lambda tangents, ans, a, rcond=None, hermitian=False, rtol=None:
       pinv_tangent(tangents[0], ans, a))
defjvp(lstsq_solution, lambda tangents, ans, a, b, rcond=None:
       lstsq_tangent(ans, a, b, *tangents, rcond, 0))
defjvp(lstsq_residuals, lambda tangents, ans, a, b, rcond=None:
       lstsq_tangent(ans, a, b, *tangents, rcond, 1))
defjvp(lstsq_sv, lambda tangents, ans, a, b, rcond=None:
       lstsq_tangent(ans, a, b, *tangents, rcond, 3))
defjvp(np.linalg.matrix_power, lambda tangents, ans, a, n: matrix_power_tangent(tangents[0], a, n))
defjvp(multi_dot, multilinear=True)


def _full_matrices_refused(params: dict) -> str | None:
    if params.get("compute_uv", True) and params.get("full_matrices", True):
        return ("np.linalg.svd(..., full_matrices=True) has no gradient (its extra singular "
                "vectors are arbitrary); pass full_matrices=False")
    return None


def result_parts(fun: Any, params: dict) -> tuple[list[Primitive], dict, bool]:
    """The primitives that compute what ``fun(..., **params)`` returns, one per element, the
    parameters they take, and whether the result is a tuple.  Raises ValueError (with the
    reason) for a call that has no gradient."""
    if fun is np.linalg.eigh:
        return [eigh_values, eigh_vectors], params, True
    if fun is np.linalg.slogdet:
        return [slogdet_sign, slogdet_logabsdet], params, True
    if fun is np.linalg.lstsq:
        return [lstsq_solution, lstsq_residuals, lstsq_rank, lstsq_sv], params, True
    if fun is np.linalg.svd:
        if params.get("hermitian", False):
            raise ValueError("np.linalg.svd(..., hermitian=True) is not differentiated; "
                             "use np.linalg.eigh")
        if not params.get("compute_uv", True):
            return [svd_s], {}, False
        reason = _full_matrices_refused(params)
        if reason:
            raise ValueError(reason)
        return [svd_u, svd_s, svd_vh], {}, True
    if fun is np.linalg.qr:
        mode = params.get("mode", "reduced")
        if mode == "r":
            return [qr_r], {}, False
        if mode != "reduced":
            raise ValueError(f"np.linalg.qr(..., mode={mode!r}) is not differentiated; "
                             "use mode='reduced'")
        return [qr_q, qr_r], {}, True
    raise KeyError(fun)


TUPLE_RESULTS = {np.linalg.eigh: type(np.linalg.eigh(np.eye(1))),
                 np.linalg.slogdet: type(np.linalg.slogdet(np.eye(1))),
                 np.linalg.lstsq: tuple, np.linalg.svd: type(np.linalg.svd(np.eye(1))),
                 np.linalg.qr: type(np.linalg.qr(np.eye(1)))}
"""NumPy functions lowered by :func:`result_parts`, and the type of what they return."""


def _eager(fun: Any) -> Any:
    import inspect
    signature = inspect.signature(fun)

    def call(*args: Any, **kwargs: Any) -> Any:
        bound = list(signature.bind(*args, **kwargs).arguments.items())
        nin = 2 if fun is np.linalg.lstsq else 1
        inputs = [v for _, v in bound[:nin]]
        params = dict(bound[nin:])
        if fun is np.linalg.svd and params.get("compute_uv", True) and params.get(
                "full_matrices", True) and np.shape(inputs[0])[-1] == np.shape(inputs[0])[-2]:
            params["full_matrices"] = False              # square: the same factors
        try:
            parts, params, is_tuple = result_parts(fun, params)
        except ValueError as exc:
            raise NotImplementedError(str(exc)) from None
        values = [p(*inputs, **params) for p in parts]
        return TUPLE_RESULTS[fun](*values) if is_tuple and TUPLE_RESULTS[fun] is not tuple \
            else tuple(values) if is_tuple else values[0]
    return call


for _fun in TUPLE_RESULTS:
    bind_numpy(_fun, Primitive(_fun.__name__ + "_result", _fun, None), _eager(_fun))


def _multi_dot(arrays, *, out=None):
    if out is not None:
        raise TypeError("multi_dot() argument 'out' is not supported on srcgrad Tensors")
    return multi_dot(*arrays)


bind_numpy(np.linalg.multi_dot, Primitive("multi_dot_call", np.linalg.multi_dot, None),
           _multi_dot)
