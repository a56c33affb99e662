"""Linear algebra: ``matmul``, ``einsum`` in every form, solves, inverses, determinants, and
NumPy 2's array-API spellings in ``np.linalg``.

Products of other kinds are in :mod:`.products`, diagonals, traces and norms in
:mod:`.matrices`, factorizations in :mod:`.decompositions` and :mod:`.solvers`.
"""

from __future__ import annotations

import ast

import numpy as np

from srcgrad.runtime.rules.core import matmul_lhs_grad, matmul_rhs_grad
from srcgrad.runtime.rules.matrices import norm_direction, norm_grad, trace_grad, undiagonal
from srcgrad.runtime.rules.primitives import (
    bind_numpy,
    defjvp,
    defvjp,
    defvjp_argnum,
    helper,
    lookup,
    primitive,
    sum_to,
)
from srcgrad.runtime.rules.products import (
    cross_grad,
    known_matrices,
    tensordot_lhs_grad,
    tensordot_rhs_grad,
)

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@helper
def einsum_grad(argnum, g, ans, *ops, subscripts):
    """Gradient of ``np.einsum(subscripts, *ops)`` for operand ``argnum``.

    The contraction of ``g`` with the other operands, written out with an identity matrix
    for each repeated index of the operand (``'ii'``: its diagonal) and a vector of ones for
    each index summed in that operand alone; size-1 axes NumPy broadcast are summed back.
    """
    ins, out = einsum_parse(subscripts, [np.ndim(op) for op in ops])
    target = ins[argnum]
    sizes = {}
    for spec, op in zip(ins, ops):
        for c, n in zip(spec, np.shape(op)):
            sizes[c] = max(sizes.get(c, 1), n)
    spare = (c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in sizes)
    terms = [out] + [s for j, s in enumerate(ins) if j != argnum]
    operands = [g] + [op for j, op in enumerate(ops) if j != argnum]
    known = set("".join(terms))
    result = ""
    for c in target:
        if c in result:
            twin = next(spare)
            terms.append(c + twin)
            operands.append(np.eye(sizes[c], dtype=bool))
            result += twin
        else:
            if c not in known:
                terms.append(c)
                operands.append(np.ones(sizes[c], dtype=bool))
            result += c
    grad = np.einsum(",".join(terms) + "->" + result, *operands)
    shape = np.shape(ops[argnum])
    spread = tuple(i for i, n in enumerate(shape) if n == 1 and sizes[target[i]] != 1)
    return np.sum(grad, axis=spread, keepdims=True) if spread else grad


@helper
def einsum_parse(subscripts, ndims):
    """Subscripts with ``...`` spelled out in spare letters, and the output NumPy implies."""
    spec = subscripts.replace(" ", "")
    lhs, arrow, out = spec.partition("->")
    ins = lhs.split(",")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
             if c not in spec]
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


def _matmul_lhs(g, ans, a, b):
    if known_matrices(a, b):
        return g @ b.T
    return matmul_lhs_grad(g, b, a_shape=a.shape)


def _matmul_rhs(g, ans, a, b):
    if known_matrices(a, b):
        return a.T @ g
    return matmul_rhs_grad(g, a, b_shape=b.shape)


defvjp(np.matmul, _matmul_lhs, _matmul_rhs, broadcasts=False)
lookup(np.matmul).spelling = ("operator", "@")          # hints: see rules/__init__.py
lookup(np.matmul).operator = ast.MatMult


@primitive(nin=None)
def einsum(*operands, subscripts):
    return np.einsum(subscripts, *operands)


defvjp_argnum(einsum, einsum_grad)
einsum.spelling = ("leading", np.einsum, "subscripts")   # np.einsum(subscripts, *operands)


def sublist_subscripts(args: tuple) -> tuple[str, list]:
    """``np.einsum``'s two spellings as (subscripts, operands): ``('ij,jk->ik', a, b)`` or
    the sublist form ``(a, [0, 1], b, [1, 2], [0, 2])`` (0–25 are A–Z, 26–51 a–z)."""
    if isinstance(args[0], str):
        return args[0], list(args[1:])

    def letters(sub: list) -> str:
        return "".join("..." if k is Ellipsis else _LETTERS[k] for k in sub)
    operands, subs = list(args[0::2]), [letters(sub) for sub in args[1::2]]
    if len(args) % 2:                                    # an output sublist ends the call
        operands = operands[:-1]
        return ",".join(subs[:len(operands)]) + "->" + letters(args[-1]), operands
    return ",".join(subs), operands


def _einsum(*args, optimize=False, **kwargs):
    """``np.einsum`` on Tensors: ``optimize`` changes the order of work, never the value."""
    unknown = sorted(k for k, v in kwargs.items() if v is not None)
    if unknown:
        raise TypeError(f"einsum() arguments {unknown} are not supported on srcgrad Tensors")
    subscripts, operands = sublist_subscripts(args)
    return einsum(*operands, subscripts=subscripts)


bind_numpy(np.einsum, einsum, _einsum)
defjvp(np.matmul, multilinear=True)
defjvp(einsum, multilinear=True)
@helper
def solve_grad(g, x, a, b, lhs):
    """Gradient of ``x = np.linalg.solve(a, b)`` for ``a`` (``lhs``) or ``b``; a 1-D ``b`` is
    one vector for every matrix of a stack, as NumPy 2 reads it."""
    at = np.swapaxes(a, -1, -2)
    if np.ndim(b) == 1:
        gb = np.linalg.solve(at, np.expand_dims(g, -1))[..., 0]
        if not lhs:
            return sum_to(gb, shape=np.shape(b))
        return -np.expand_dims(gb, -1) * np.expand_dims(x, -2)
    gb = np.linalg.solve(at, g)
    if not lhs:
        return sum_to(gb, shape=np.shape(b))
    return sum_to(-np.matmul(gb, np.swapaxes(x, -1, -2)), shape=np.shape(a))


defvjp(np.linalg.solve, lambda g, ans, a, b: solve_grad(g, ans, a, b, True),
       lambda g, ans, a, b: solve_grad(g, ans, a, b, False), nin=2, dtype_rule="float")
defvjp(np.linalg.inv, lambda g, ans, x: -np.matmul(
    np.swapaxes(ans, -1, -2), np.matmul(g, np.swapaxes(ans, -1, -2))), nin=1, dtype_rule="float")


@primitive(nin=2, dtype_rule="same")
def as_columns(v, b):
    """``v`` laid out as ``np.linalg.solve(a, b)`` reads ``b``: a stack of matrices (a 1-D
    ``b`` is one vector for every matrix: ``v[..., None]``)."""
    return v[..., None] if np.ndim(b) == 1 else v


@primitive(nin=2, dtype_rule="same")
def from_columns(v, b):
    """The inverse of :func:`as_columns`: a solution in the layout of ``np.linalg.solve(a,
    b)``'s."""
    return v[..., 0] if np.ndim(b) == 1 else v


defvjp(as_columns, lambda g, ans, v, b: sum_to(from_columns(g, b), shape=np.shape(v)), None)
defvjp(from_columns, lambda g, ans, v, b: sum_to(as_columns(g, b), shape=np.shape(v)), None)
defjvp(as_columns, linear=True)
defjvp(from_columns, linear=True)


def _solve_jvp(tangents, ans, a, b):
    """``solve(a, tb - ta x)``, as matrices (:func:`as_columns`), written with primitives so
    that it is differentiated again."""
    ta, tb = tangents
    rhs = 0.0 if tb is None else as_columns(tb, b)
    if ta is not None:
        rhs = rhs - np.matmul(ta, as_columns(ans, b))
    return from_columns(np.linalg.solve(a, rhs), b)


defjvp(np.linalg.solve, _solve_jvp)
defjvp(np.linalg.inv, lambda tangents, ans, x: -np.matmul(ans, np.matmul(tangents[0], ans)))
@helper
def cofactors(x):
    """The cofactor matrix of ``x`` (of each matrix of a stack): ``adj(x)^T``, the gradient of
    ``det(x)``.  From the SVD ``x = U diag(s) Vh``: ``det(U) det(Vh) U diag(p) Vh`` with
    ``p_i`` the product of the other singular values, so a singular matrix has one too."""
    u, s, vh = np.linalg.svd(x)
    ones = np.ones_like(s[..., :1])
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = np.flip(np.cumprod(np.concatenate([ones, np.flip(s[..., 1:], axis=-1)], axis=-1),
                               axis=-1), axis=-1)
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return sign[..., None, None] * np.matmul(u * (before * after)[..., None, :], vh)


@helper
def det_grad(x, ans):
    """``det(x) inv(x)^T``, the gradient of ``det(x)``; the cofactors where ``x`` is singular
    (NumPy's det is 0 there, and its gradient the adjugate's transpose)."""
    try:
        inverse = np.linalg.inv(x)
    except np.linalg.LinAlgError:
        return cofactors(x)
    return np.expand_dims(ans, (-2, -1)) * np.swapaxes(inverse, -1, -2)


_det = defvjp(np.linalg.det, lambda g, ans, x: np.expand_dims(g, (-2, -1)) * det_grad(x, ans),
              nin=1, dtype_rule="float")


@primitive(dtype_rule="float")
def det_gradient(x):
    """``det(x) inv(x)^T`` (the cofactors where ``x`` is singular): the gradient of ``det``,
    as a primitive, so that det's forward rule is differentiated again."""
    return det_grad(x, np.linalg.det(x))


def _det_gradient_jvp(tangents, ans, x):
    """``tr(S) C - C S^T`` with ``C = ans``, ``S = x^-1 t`` (``x`` invertible)."""
    s = np.linalg.solve(x, tangents[0])
    return (np.expand_dims(np.trace(s, axis1=-2, axis2=-1), (-2, -1)) * ans
            - np.matmul(ans, np.swapaxes(s, -1, -2)))


def _det_gradient_vjp(g, ans, x):
    """``<g, C> x^-T - x^-T g^T C`` with ``C = ans`` (``x`` invertible)."""
    inverse_t = np.swapaxes(np.linalg.inv(x), -1, -2)
    return (np.sum(g * ans, axis=(-2, -1), keepdims=True) * inverse_t
            - np.matmul(inverse_t, np.matmul(np.swapaxes(g, -1, -2), ans)))


defvjp(det_gradient, _det_gradient_vjp)
defjvp(det_gradient, _det_gradient_jvp)
defjvp(_det, lambda tangents, ans, x: np.sum(tangents[0] * det_gradient(x), axis=(-2, -1)))


# NumPy 2's array-API spellings: ``np.linalg.matmul``, ``tensordot``, ``outer``, ``vecdot``,
# ``cross``, ``trace``, ``diagonal``, ``matrix_transpose``, ``matrix_norm``, ``vector_norm``,
# and ``np.vecdot``/``np.matrix_transpose``.  They are functions of their own, with the
# stricter checks of that standard (matrices in the last two axes, 3-vectors for ``cross``,
# 1-D for ``outer``), so each is its own primitive, printed as the function the program
# called, with the rules of its relative.

def _spelling(fun, nin, *rules, broadcasts=False, dtype_rule="promote", prefix="linalg_"):
    """``np.linalg.<name>`` as the primitive ``linalg_<name>`` with ``rules``."""
    prim = primitive(fun, name=prefix + fun.__name__, nin=nin, broadcasts=broadcasts,
                     dtype_rule=dtype_rule)
    defvjp(prim, *rules)
    bind_numpy(fun, prim)
    return prim


_spelling(np.linalg.matmul, 2, _matmul_lhs, _matmul_rhs)
_spelling(np.linalg.tensordot, 2,
          lambda g, ans, a, b, axes=2: tensordot_lhs_grad(g, a.ndim, b, axes),
          lambda g, ans, a, b, axes=2: tensordot_rhs_grad(g, a, b.ndim, axes))
_spelling(np.linalg.outer, 2, lambda g, ans, a, b: np.matmul(g, b),
          lambda g, ans, a, b: np.matmul(a, g))
def _vecdot_lhs(g, ans, a, b, axis=-1):
    return np.expand_dims(g, axis) * b


def _vecdot_rhs(g, ans, a, b, axis=-1):
    return np.expand_dims(g, axis) * a


def _transpose_last(g, ans, x):
    return np.swapaxes(g, -1, -2)


_spelling(np.linalg.vecdot, 2, _vecdot_lhs, _vecdot_rhs, broadcasts=True)
_spelling(np.linalg.cross, 2,
          lambda g, ans, a, b, axis=-1: cross_grad(g, a, b, axis=axis, lhs=True),
          lambda g, ans, a, b, axis=-1: cross_grad(g, a, b, axis=axis, lhs=False))
_spelling(np.linalg.trace, 1,
          lambda g, ans, x, offset=0: trace_grad(g, x.shape, offset, -2, -1))
_spelling(np.linalg.diagonal, 1,
          lambda g, ans, x, offset=0: undiagonal(g, x.shape, offset, -2, -1))
_spelling(np.linalg.matrix_transpose, 1, _transpose_last)
_spelling(np.linalg.matrix_norm, 1, lambda g, ans, x, keepdims=False, ord="fro":
          norm_grad(g, ans, x, ord, (-2, -1), keepdims), dtype_rule="float")
_spelling(np.linalg.vector_norm, 1, lambda g, ans, x, axis=None, keepdims=False, ord=2:
          norm_grad(g, ans, x, ord, axis, keepdims, True), dtype_rule="float")

# The same two at the top level: np.vecdot is a generalized ufunc (compiled without keywords),
# np.matrix_transpose a function.
_spelling(np.vecdot, 2, _vecdot_lhs, _vecdot_rhs, broadcasts=True, prefix="")
_spelling(np.matrix_transpose, 1, _transpose_last, prefix="")

# Forward mode of the spellings: products are multilinear, the views linear, norms reductions.
for _name in ("linalg_matmul", "linalg_tensordot", "linalg_outer", "linalg_vecdot",
              "linalg_cross", "vecdot"):
    defjvp(lookup(_name), multilinear=True)
for _name in ("linalg_trace", "linalg_diagonal", "linalg_matrix_transpose", "matrix_transpose"):
    defjvp(lookup(_name), linear=True)
defjvp(lookup("linalg_matrix_norm"), lambda tangents, ans, x, keepdims=False, ord="fro": np.sum(
    tangents[0] * norm_direction(x, ord=ord, axis=(-2, -1)), axis=(-2, -1), keepdims=keepdims))
defjvp(lookup("linalg_vector_norm"), lambda tangents, ans, x, axis=None, keepdims=False, ord=2:
       np.sum(tangents[0] * norm_direction(x, ord=ord, axis=axis, vector=True), axis=axis,
              keepdims=keepdims))
