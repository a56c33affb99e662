"""Linear algebra: products, contractions, solves, inverses, determinants, norms."""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.primitives import (
    bind_numpy,
    defvjp,
    defvjp_argnum,
    helper,
    lookup,
    primitive,
)
from srcgrad.runtime.rules.core import (
    inverse_permutation,
    matmul_lhs_grad,
    matmul_rhs_grad,
    unreduce,
)


def _tensordot_axes(axes, a_ndim, b_ndim):
    if isinstance(axes, int):
        return list(range(a_ndim - axes, a_ndim)), list(range(axes))
    a_axes, b_axes = ([ax] if isinstance(ax, int) else list(ax) for ax in axes)
    return [a % a_ndim for a in a_axes], [b % b_ndim for b in b_axes]


@helper
def tensordot_lhs_grad(g, a_ndim, b, axes):
    a_axes, b_axes = _tensordot_axes(axes, a_ndim, b.ndim)
    a_free = [i for i in range(a_ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    out = np.tensordot(g, b, axes=(list(range(len(a_free), g.ndim)), b_free))
    order = a_free + [a_axes[b_axes.index(j)] for j in sorted(b_axes)]
    return np.transpose(out, inverse_permutation(tuple(order)))


@helper
def tensordot_rhs_grad(g, a, b_ndim, axes):
    a_axes, b_axes = _tensordot_axes(axes, a.ndim, b_ndim)
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b_ndim) if i not in b_axes]
    out = np.tensordot(a, g, axes=(a_free, list(range(len(a_free)))))
    order = [b_axes[a_axes.index(j)] for j in sorted(a_axes)] + b_free
    return np.transpose(out, inverse_permutation(tuple(order)))


@helper
def einsum_grad(argnum, g, ans, *ops, subscripts):
    ins, out = _parse_einsum(subscripts, [op.ndim for op in ops])
    target = ins[argnum]
    if len(set(target)) != len(target):
        raise NotImplementedError(f"einsum gradient with a repeated index in {target!r}")
    others = [s for j, s in enumerate(ins) if j != argnum]
    known = set(out).union(*others)
    kept = "".join(c for c in target if c in known)
    grad = np.einsum(",".join([out] + others) + "->" + kept, g,
                     *[op for j, op in enumerate(ops) if j != argnum])
    missing = tuple(i for i, c in enumerate(target) if c not in known)
    if missing:
        grad = np.broadcast_to(np.expand_dims(grad, missing), ops[argnum].shape)
    return grad


def _parse_einsum(subscripts, ndims):
    spec = subscripts.replace(" ", "")
    lhs, arrow, out = spec.partition("->")
    ins = lhs.split(",")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in spec]
    width = max((n - len(s.replace("...", "")) for s, n in zip(ins, ndims) if "..." in s),
                default=0)
    ell = "".join(spare[:width])
    ins = [s.replace("...", ell[len(ell) - (n - len(s.replace("...", ""))):] if width else "")
           for s, n in zip(ins, ndims)]
    if arrow:
        out = out.replace("...", ell)
    else:
        letters = "".join(ins)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1
                                   and c not in ell))
    return ins, out


def _matrices(a_ndim, b_ndim) -> bool:
    """Both operands known to be matrices (an unknown rank, as in generic code, is not)."""
    return isinstance(a_ndim, int) and isinstance(b_ndim, int) and a_ndim == 2 and b_ndim == 2


def _matmul_lhs(g, ans, a, b):
    if _matrices(a.ndim, b.ndim):
        return g @ b.T
    return matmul_lhs_grad(g, b, a_shape=a.shape)


def _matmul_rhs(g, ans, a, b):
    if _matrices(a.ndim, b.ndim):
        return a.T @ g
    return matmul_rhs_grad(g, a, b_shape=b.shape)


defvjp(np.matmul, _matmul_lhs, _matmul_rhs, broadcasts=False)
defvjp(np.dot, _matmul_lhs, _matmul_rhs, nin=2)
defvjp(np.tensordot, lambda g, ans, a, b, axes=2: tensordot_lhs_grad(g, a.ndim, b, axes),
       lambda g, ans, a, b, axes=2: tensordot_rhs_grad(g, a, b.ndim, axes), nin=2)
defvjp(np.outer, lambda g, ans, a, b: np.reshape(np.matmul(g, np.ravel(b)), a.shape),
       lambda g, ans, a, b: np.reshape(np.matmul(np.ravel(a), g), b.shape), nin=2)


@helper
def trace_grad(g, shape):
    """Gradient of the trace of a matrix of ``shape``: ``g`` on the diagonal."""
    return g * np.eye(shape[0], shape[1], dtype=g.dtype)


defvjp(np.trace, lambda g, ans, x: trace_grad(g, x.shape), nin=1)


@primitive(nin=None)
def einsum(*operands, subscripts):
    return np.einsum(subscripts, *operands)


defvjp_argnum(einsum, einsum_grad)
bind_numpy(np.einsum, einsum, lambda subscripts, *operands: einsum(*operands,
                                                                    subscripts=subscripts))
defvjp(np.linalg.solve,
       lambda g, ans, A, b: -matmul_lhs_grad(np.linalg.solve(np.swapaxes(A, -1, -2), g), ans,
                                             a_shape=A.shape),
       lambda g, ans, A, b: np.linalg.solve(np.swapaxes(A, -1, -2), g), nin=2,
       dtype_rule="float")
defvjp(np.linalg.inv, lambda g, ans, x: -np.matmul(
    np.swapaxes(ans, -1, -2), np.matmul(g, np.swapaxes(ans, -1, -2))), nin=1, dtype_rule="float")
defvjp(np.linalg.det, lambda g, ans, x: np.expand_dims(g * ans, (-2, -1))
       * np.swapaxes(np.linalg.inv(x), -1, -2), nin=1, dtype_rule="float")


@primitive(dtype_rule="float")
def norm(x, *, ord=None, axis=None, keepdims=False):
    """The Euclidean (Frobenius) norm; other orders are refused rather than mis-differentiated."""
    matrix = (axis is None and x.ndim == 2) or (isinstance(axis, tuple) and len(axis) == 2)
    if not (ord is None or ord == "fro" and matrix or ord == 2 and not matrix):
        raise NotImplementedError(f"srcgrad differentiates norm with ord=None, 'fro' or 2 "
                                  f"(vectors) only, not ord={ord!r}")
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


defvjp(norm, lambda g, ans, x, ord=None, axis=None, keepdims=False:
       unreduce(np.where(ans == 0, 0, g / ans), shape=x.shape, axis=axis, keepdims=keepdims) * x)
bind_numpy(np.linalg.norm, norm)


def _dot_adapter(a, b, out=None):
    """``np.dot``: a product for scalars, matmul up to 2-D, a tensordot beyond."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.multiply(a, b)
    if np.ndim(a) <= 2 and np.ndim(b) <= 2:
        return lookup(np.dot)(a, b)
    return lookup(np.tensordot)(a, b, axes=([np.ndim(a) - 1], [max(np.ndim(b) - 2, 0)]))


def _inner_adapter(a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.multiply(a, b)
    return lookup(np.tensordot)(a, b, axes=([np.ndim(a) - 1], [np.ndim(b) - 1]))


bind_numpy(np.dot, lookup(np.dot), _dot_adapter)
bind_numpy(np.inner, lookup(np.tensordot), _inner_adapter)
