"""The vocabulary of a loop kernel's statements
(:mod:`~srcgrad.codegen.backends.numba.loop_shapes`), and
the generated code's gradient helpers spelled for numba at the shapes they are called with.

The helpers of the generic code (``unbroadcast``, ``unreduce``, ``matmul_lhs_grad``,
``dot_rhs_grad``, ...) decide by the shapes of their arguments at run time, which numba does
not compile; a loop kernel knows those shapes, so each call becomes the one branch it would
take: ``unbroadcast`` an explicit sum over the broadcast axes, ``unreduce`` an addition to
zeros, a matrix product's gradient of two matrices as the product's own rule writes it
(``g @ b.T``, ``a.T @ g``), of a vector an outer product or a matrix-vector product.  A call
whose shapes fall outside what is spelled raises :class:`Refused`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

import numpy as np

from srcgrad.codegen.backends.numba.loop_sites import Fact
from srcgrad.codegen.common.support import match_input
from srcgrad.runtime.rules.core import matmul_lhs_grad, matmul_rhs_grad, numel, unreduce
from srcgrad.runtime.rules.operators import OPERATORS
from srcgrad.runtime.rules.primitives import Primitive, lookup, unbroadcast
from srcgrad.runtime.rules.products import dot_lhs_grad, dot_rhs_grad
from srcgrad.runtime.rules.reductions import numel_or_one

__all__ = ["Refused", "F8", "BOOL", "I8", "scalar", "of", "np_call", "np_", "full",
           "transposed", "reduce_axis", "helper"]

F8, BOOL, I8 = np.dtype(np.float64), np.dtype(bool), np.dtype(np.int64)

_UNBROADCAST, _MATCH = unbroadcast.__name__, match_input.__name__
_LHS, _RHS = matmul_lhs_grad.fn.__name__, matmul_rhs_grad.fn.__name__   # primitives
_DOT_LHS, _DOT_RHS = dot_lhs_grad.__name__, dot_rhs_grad.__name__
_SUM = np.sum.__name__
_UNREDUCE, _NUMEL, _NUMEL_OR_ONE = unreduce.fn.__name__, numel.__name__, numel_or_one.__name__


class Refused(Exception):
    """The loop cannot become a kernel (the reason is the message)."""


def scalar(dtype: np.dtype) -> Fact:
    return (), dtype, "int" if dtype == I8 else "scalar"


def of(shape: tuple[int, ...], dtype: np.dtype) -> Fact:
    return (shape, dtype, "array") if shape else scalar(dtype)


def np_call(node: ast.expr) -> object | None:
    """NumPy's function ``np.name`` for a call ``np.name(...)``."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "np"):
        return getattr(np, node.func.attr, None)
    return None


def np_(name: str, *args: ast.expr, **keywords: ast.expr) -> ast.expr:
    """The expression ``np.name(*args, **keywords)``."""
    return ast.Call(ast.Attribute(ast.Name("np", ast.Load()), name, ast.Load()), list(args),
                    [ast.keyword(k, v) for k, v in keywords.items()])


def full(shape: tuple[int, ...], value: ast.expr) -> ast.expr:
    """A new float64 array of ``shape`` holding the scalar ``value`` (``value`` for ())."""
    return np_("full", ast.Constant(shape), value) if shape else value


def _t(e: ast.expr) -> ast.expr:
    return ast.Attribute(e, "T", ast.Load())


def transposed(value: ast.expr, fact: Fact) -> tuple[ast.expr, Fact]:
    """``np.transpose(x)`` of a vector (itself) or a matrix (``x.T``)."""
    if fact[2] != "array" or len(fact[0]) > 2:
        raise Refused("a transpose of other than a vector or a matrix")
    return (_t(value) if len(fact[0]) == 2 else value), (fact[0][::-1], fact[1], "array")


def _axis(node: ast.expr | None, ndim: int) -> int:
    """A constant axis of an array of ``ndim`` dimensions, made non-negative."""
    if not (isinstance(node, ast.Constant) and type(node.value) is int
            and -ndim <= node.value < ndim):
        raise Refused(f"an axis other than a constant int: {node and ast.unparse(node)}")
    return node.value % ndim


def reduce_axis(mean: bool, value: ast.expr, fact: Fact, axis: ast.expr
                ) -> tuple[ast.expr, Fact]:
    """``np.sum(x, axis=k)`` or ``np.mean(x, axis=k)`` (numba's ``mean`` takes no axis: a
    sum divided by the count); a vector's is its full reduction, a scalar."""
    if fact[2] != "array" or fact[1] != F8:
        raise Refused("a reduction of other than a float64 array")
    shape = fact[0]
    k = _axis(axis, len(shape))
    rest = shape[:k] + shape[k + 1:]
    out = np_(_SUM, value, axis=ast.Constant(k)) if rest else np_(_SUM, value)
    if mean:
        out = ast.BinOp(out, ast.Div(), ast.Constant(float(shape[k])))
    return out, of(rest, F8)


def _unbroadcast(value: ast.expr, fact: Fact, shape: tuple[int, ...]
                 ) -> tuple[ast.expr, Fact]:
    """``value`` summed down to ``shape`` over the axes it was broadcast along."""
    have = fact[0]
    if have == shape:
        return value, fact
    if fact[1] != F8 or len(have) < len(shape) or np.broadcast_shapes(have, shape) != have:
        raise Refused(f"an unbroadcast of {have} to {shape}")
    if all(n == 1 for n in shape):
        return full(shape, np_(_SUM, value)), of(shape, F8)
    for _ in range(len(have) - len(shape)):
        value, have = np_(_SUM, value, axis=ast.Constant(0)), have[1:]
    kept = [i for i, n in enumerate(shape) if n == 1 and have[i] != 1]
    for i in reversed(kept):
        value = np_(_SUM, value, axis=ast.Constant(i))
    if kept:
        value = ast.Call(ast.Attribute(value, np.reshape.__name__, ast.Load()),
                         [ast.Constant(shape)], [])
    return value, of(shape, F8)


def _unreduce(g: ast.expr, gf: Fact, shape: tuple[int, ...], kw: dict[str, ast.expr]
              ) -> tuple[ast.expr, Fact]:
    """``unreduce(g, shape=s, axis=k)``: ``g`` spread back over the axis it was reduced on,
    as a new array (never a broadcast view the adjoint might add into)."""
    axis = kw.get("axis")
    if set(kw) - {"shape", "axis", "keepdims"} or gf[1] != F8 or (
            "keepdims" in kw and not (isinstance(kw["keepdims"], ast.Constant)
                                      and kw["keepdims"].value is False)):
        raise Refused("an unreduce with keepdims")
    if not gf[0]:
        return np_("full", ast.Constant(shape), g), of(shape, F8)
    if axis is None or not shape:
        raise Refused("an unreduce of an array over every axis")
    k = _axis(axis, len(shape))
    if gf[0] != shape[:k] + shape[k + 1:]:
        raise Refused(f"an unreduce of {gf[0]} to {shape}")
    spread = g if k == 0 else np_(np.expand_dims.__name__, g, ast.Constant(k))
    zeros = np_("zeros", ast.Constant(shape))
    return ast.BinOp(zeros, ast.Add(), spread), of(shape, F8)


def helper(node: ast.Call, expr: Callable[[ast.expr], tuple[ast.expr, Fact]],
           shape_of: Callable[[ast.expr], tuple[int, ...]]) -> tuple[ast.expr, Fact]:
    """A call of the generated code's helpers, spelled for the shapes it is called with
    (``expr`` and ``shape_of``: the kernel's respelling of an argument and of a shape)."""
    func = node.func.id if isinstance(node.func, ast.Name) else None
    kw = {k.arg: k.value for k in node.keywords}
    if func in (_NUMEL, _NUMEL_OR_ONE) and len(node.args) == 1 and not kw:
        count = int(np.prod(shape_of(node.args[0]), dtype=np.int64))
        return ast.Constant(max(count, 1) if func == _NUMEL_OR_ONE else count), scalar(I8)
    if func == _UNBROADCAST and len(node.args) == 2 and not kw:
        value, fact = expr(node.args[0])
        return _unbroadcast(value, fact, shape_of(node.args[1]))
    if func == _UNREDUCE and len(node.args) == 1 and "shape" in kw:
        g, gf = expr(node.args[0])
        return _unreduce(g, gf, shape_of(kw["shape"]), kw)
    if func == _MATCH and len(node.args) == 2 and not kw:
        (g, gf), (_, xf) = expr(node.args[0]), expr(node.args[1])
        if xf[1] != F8 or gf[1] != F8:
            raise Refused("a gradient of other than a float64")
        if gf[0] == xf[0]:
            return g, xf
        if not gf[0]:
            return full(xf[0], g), xf
        raise Refused("a gradient of another shape than its input")
    if func in (_LHS, _RHS) and len(node.args) == 2 \
            and set(kw) == {"a_shape" if func == _LHS else "b_shape"}:
        shape = shape_of(next(iter(kw.values())))
        (g, gf), (other, of_) = expr(node.args[0]), expr(node.args[1])
        return matmul_grad(OPERATORS[ast.MatMult], func == _LHS, g, gf, other, of_, shape)
    if func in (_DOT_LHS, _DOT_RHS) and len(node.args) == 3 and not kw:
        (g, gf), (a, af), (b, bf) = (expr(e) for e in node.args)
        if not (1 <= len(af[0]) <= 2 and 1 <= len(bf[0]) <= 2):
            raise Refused("np.dot's gradient of other than vectors and matrices")
        # np.dot is a matrix product for these ranks: its gradients are too
        if func == _DOT_LHS:
            return matmul_grad(lookup(np.dot), True, g, gf, b, bf, af[0])
        return matmul_grad(lookup(np.dot), False, g, gf, a, af, bf[0])
    raise Refused(f"a call a loop kernel does not run: {ast.unparse(node)}")


def matmul_grad(product: Primitive, lhs: bool, g: ast.expr, gf: Fact, other: ast.expr,
                of_: Fact, shape: tuple[int, ...]) -> tuple[ast.expr, Fact]:
    """The gradient of ``product(a, b)`` (``a @ b``, or ``np.dot`` of matrices and vectors)
    with respect to ``a`` (``lhs``; ``other`` is ``b``) or to ``b`` (``other`` is ``a``), of
    ``shape``.  Of two matrices it is the product's own rule (``g @ b.T``); the rules hand a
    vector's on to a helper numba does not compile, so those are spelled here."""
    dims = (len(shape), len(of_[0]), len(gf[0]))
    if gf[1] != F8 or of_[1] != F8:
        raise Refused("a matrix product of other than float64")
    if lhs:       # a @ b: d_a from g and b
        spelled = {(2, 1, 1): lambda: np_(np.outer.__name__, g, other),
                   (1, 2, 1): lambda: ast.BinOp(other, ast.MatMult(), g)}
        result = {(2, 1, 1): gf[0] + of_[0], (2, 2, 2): gf[0][:1] + of_[0][:1],
                  (1, 2, 1): of_[0][:1]}
    else:         # a @ b: d_b from g and a
        spelled = {(1, 2, 1): lambda: ast.BinOp(g, ast.MatMult(), other),
                   (2, 1, 1): lambda: np_(np.outer.__name__, other, g)}
        result = {(1, 2, 1): of_[0][1:], (2, 2, 2): of_[0][1:] + gf[0][1:],
                  (2, 1, 1): of_[0] + gf[0]}
    if dims not in result or result[dims] != shape:
        raise Refused(f"a matrix product's gradient of shape {shape}")
    if dims == (2, 2, 2):
        operands = (_Operand(None), _Operand(other)) if lhs else (_Operand(other), _Operand(None))
        try:
            out = product.vjp(0 if lhs else 1)(_Operand(g), None, *operands)
        except Exception as exc:                 # the rule asked what the kernel has not
            raise Refused(f"{product.name}'s rule of matrices: {exc}") from None
        if not isinstance(out, _Operand):
            raise Refused(f"{product.name}'s rule gives no matrix product")
        return out.node, (shape, F8, "array")
    return spelled[dims](), (shape, F8, "array")


class _Operand:
    """A matrix of a kernel's code, for a product's rule to be called on: ``@`` and ``.T`` of
    it are spelled; anything else fails, and the loop keeps its generic code.  ``node`` is
    None for an operand the helper's call does not pass."""

    ndim = 2
    __array_ufunc__ = None                    # NumPy's functions refuse it

    def __init__(self, node: ast.expr | None) -> None:
        self.node = node

    def _written(self) -> ast.expr:
        if self.node is None:
            raise Refused("a product's rule reads an operand the helper is not given")
        return self.node

    @property
    def T(self) -> _Operand:
        return _Operand(_t(self._written()))

    def __matmul__(self, other: object) -> _Operand:
        if not isinstance(other, _Operand):
            raise Refused("a product's rule multiplies by other than a matrix")
        return _Operand(ast.BinOp(self._written(), ast.MatMult(), other._written()))

    @staticmethod
    def __srcgrad_primitive__(prim: Primitive, args: tuple, params: dict) -> None:
        raise Refused(f"a product's rule calls {prim.name}")

    @staticmethod
    def __srcgrad_helper__(helper: Callable, args: tuple, kwargs: dict) -> None:
        raise Refused("a product's rule calls a helper")
